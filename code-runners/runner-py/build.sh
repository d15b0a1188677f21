#!/usr/bin/env bash
# Builds the Python code runner into a component:   ./build.sh OUT.wasm
#
# componentize-py generates the bindings of the runner's world (wit/code), bundles CPython,
# runner.py and the standard library modules it imports, and pre-initializes the interpreter,
# so a program starts with them imported.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(realpath -m "${1:?usage: build.sh OUT.wasm}")
toolchains=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/toolchains

[[ -x $toolchains/venv/bin/componentize-py ]] || "$repo/scripts/setup-toolchains.sh"

mkdir -p "$(dirname "$out")"
cd "$here"
# An active virtualenv's site-packages would be searched too; only this directory should be.
env -u VIRTUAL_ENV "$toolchains/venv/bin/componentize-py" --quiet --wit-path "$repo/wit/code" \
  --world code-runner componentize runner --python-path "$here" --output "$out"
# The language, for the host to tell the model (code-runners/language.py).
python3 "$here/../language.py" "$out" python
