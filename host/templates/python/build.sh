#!/usr/bin/env bash
# Builds the tool into a WebAssembly component:   ./build.sh   ->   dist/{{name}}.wasm
#
# componentize-py generates the bindings of the WIT world (the `wit_world` package app.py
# imports), bundles CPython, app.py and the modules it imports, and pre-initializes the
# interpreter. It is installed by toolhost's `just setup` (into ~/.cache/toolhost/toolchains),
# or: pip install componentize-py==0.25.1
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
toolchains=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/toolchains
componentize=$toolchains/venv/bin/componentize-py
[[ -x $componentize ]] || componentize=$(command -v componentize-py) || {
  echo "error: componentize-py not found; run \`just setup\` in toolhost, or pip install componentize-py==0.25.1" >&2
  exit 1
}
mkdir -p dist
# Only this directory is searched for modules (not an active virtualenv's site-packages).
env -u VIRTUAL_ENV PYTHONHASHSEED=0 SOURCE_DATE_EPOCH=0 "$componentize" --quiet --wit-path wit \
  --world toolbox componentize app --python-path . --output dist/{{name}}.wasm
echo "built dist/{{name}}.wasm"
