#!/usr/bin/env bash
# Builds the text tools (Python) into a component:   ./build.sh OUT.wasm
#
# componentize-py generates the bindings of the WIT world (the `wit_world` package app.py
# imports), bundles CPython, app.py, textkit.py and the standard library modules they use, and
# pre-initializes the interpreter, so a call starts with the modules already imported.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(realpath -m "${1:?usage: build.sh OUT.wasm}")
toolchains=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/toolchains

[[ -x $toolchains/venv/bin/componentize-py ]] || "$repo/scripts/setup-toolchains.sh"

mkdir -p "$(dirname "$out")"
cd "$here"
# An active virtualenv's site-packages would be searched too; only this directory should be.
env -u VIRTUAL_ENV "$toolchains/venv/bin/componentize-py" --quiet --wit-path "$repo/wit" \
  --world toolbox componentize app --python-path "$here" --output "$out"
