#!/usr/bin/env bash
# Builds the tool into a WebAssembly component:   ./build.sh   ->   dist/{{name}}.wasm
#
#   1. helper/ (`helper bindgen c`): the C bindings of the WIT world: toolbox.h, toolbox.c, and
#      an object file that carries the world's type into the module
#   2. `zig cc`: C -> a wasm32-wasi (WASI preview1) core module, built as a reactor (no main)
#   3. `helper new`: core module + the preview1 reactor adapter -> a WASI 0.2 component
# zig comes from PyPI (`pip install ziglang==0.17.1`), which toolhost's `just setup` installs
# into ~/.cache/toolhost/toolchains; the helper needs Rust (cargo).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
cache=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}
python=$cache/toolchains/venv/bin/python
"$python" -c 'import ziglang' 2>/dev/null || python=python3
"$python" -c 'import ziglang' 2>/dev/null || {
  echo "error: zig not found; run \`just setup\` in toolhost, or pip install ziglang==0.17.1" >&2
  exit 1
}
{{helper}}
rm -rf build && mkdir -p build dist
helper bindgen c --wit wit --world toolbox --out build/gen
# Relative paths only, and no build id: the same source gives the same bytes.
"$python" -m ziglang cc --target=wasm32-wasi -mexec-model=reactor -std=c11 -O2 -s \
  -Wall -Wextra -Werror -I build/gen -o build/core.wasm \
  tool.c words.c json.c build/gen/toolbox.c build/gen/toolbox_component_type.o
helper new build/core.wasm -o dist/{{name}}.wasm
echo "built dist/{{name}}.wasm"
