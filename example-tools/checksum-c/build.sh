#!/usr/bin/env bash
# Builds the checksum tools (C) into a component:   ./build.sh OUT.wasm [--contract 0.1]
#
# By default against tool contract 0.2 (wit/, structured results); `--contract 0.1` builds the
# same tools against wit/0.1.0 (a result is one text), which the host still loads: the tests keep
# such a component to prove it (scripts/build-tools.sh builds both).
#
#   1. `xtask bindgen c`: C bindings of the WIT world: toolbox.h, toolbox.c, and an object file
#      that carries the world's component type into the module
#   2. `zig cc`: C -> a wasm32-wasi (WASI preview1) core module, built as a reactor (no main)
#   3. `xtask new`: core module + the preview1 reactor adapter -> a WASI 0.2 component
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(realpath -m "${1:?usage: build.sh OUT.wasm [--contract 0.1]}")
toolchains=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/toolchains
build=${CARGO_TARGET_DIR:-$repo/target}/polyglot/checksum-c
wit=$repo/wit
defines=()
case "${2:-}${3:-}" in
  "") ;;
  --contract0.1) wit=$repo/wit/0.1.0 build=$build-0.1 defines=(-DTOOLHOST_CONTRACT_0_1) ;;
  *) echo "usage: build.sh OUT.wasm [--contract 0.1] (0.2, the default, or 0.1)" >&2; exit 2 ;;
esac

[[ -x $toolchains/venv/bin/python-zig ]] || "$repo/scripts/setup-toolchains.sh"
# From the repo root: example-tools/.cargo/config.toml would make cargo build xtask for wasm.
xtask() { (cd "$repo" && cargo run -q -p xtask -- "$@"); }

rm -rf "$build" && mkdir -p "$build"
xtask bindgen c --wit "$wit" --world toolbox --out "$build/gen"
"$toolchains/venv/bin/python" -m ziglang cc --target=wasm32-wasi -mexec-model=reactor \
  -std=c11 -O2 -s -Wall -Wextra -Werror "${defines[@]}" -I "$build/gen" -o "$build/core.wasm" \
  "$here"/tool.c "$here"/json.c "$here"/checksums.c \
  "$build/gen/toolbox.c" "$build/gen/toolbox_component_type.o"
mkdir -p "$(dirname "$out")"
xtask new "$build/core.wasm" -o "$out"
