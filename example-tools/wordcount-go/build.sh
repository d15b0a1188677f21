#!/usr/bin/env bash
# Builds the word-count tools (Go) into a component:   ./build.sh OUT.wasm
#
#   1. `xtask bindgen go`: a Go module (`wit_component`) with the bindings of the WIT world and
#      a local copy of go.bytecodealliance.org/pkg; this directory's .go files go into its
#      package export_toolhost_tool_tools, where the bindings look for Describe and Call
#   2. `go build` (GOOS=wasip1, c-shared: a reactor module), offline
#   3. `xtask embed` + `xtask new`: add the world's type, adapt WASI preview1 -> a component
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(realpath -m "${1:?usage: build.sh OUT.wasm}")
toolchains=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/toolchains
build=${CARGO_TARGET_DIR:-$repo/target}/polyglot/wordcount-go

[[ -x $toolchains/venv/bin/go ]] || "$repo/scripts/setup-toolchains.sh"
go=$toolchains/venv/bin/go
# gofmt (beside go in GOROOT) lets the bindings generator format what it writes.
PATH=$("$go" env GOROOT)/bin:$PATH
# From the repo root: example-tools/.cargo/config.toml would make cargo build xtask for wasm.
xtask() { (cd "$repo" && cargo run -q -p xtask -- "$@"); }

rm -rf "$build" && mkdir -p "$build"
xtask bindgen go --wit "$repo/wit" --world toolbox --out "$build/module"
mkdir -p "$build/module/export_toolhost_tool_tools"
cp "$here"/*.go "$build/module/export_toolhost_tool_tools/"
(
  cd "$build/module"
  # The Go module proxy is out of reach, and nothing else is needed: stay offline.
  export GOPROXY=off GOFLAGS=-mod=mod GOOS=wasip1 GOARCH=wasm GOTOOLCHAIN=local
  # -trimpath, no VCS stamp and no build id: the same source gives the same bytes.
  # -checklinkname=0: the bindings' runtime package links to Go runtime internals.
  "$go" build -buildmode=c-shared -trimpath -buildvcs=false \
    -ldflags='-s -buildid= -checklinkname=0' -o "$build/core.wasm" .
)
xtask embed --wit "$repo/wit" --world toolbox "$build/core.wasm" -o "$build/core-wit.wasm"
mkdir -p "$(dirname "$out")"
xtask new "$build/core-wit.wasm" -o "$out"
