#!/usr/bin/env bash
# Builds the Python conformance guest into a component:   ./build.sh OUT.wasm
# (tests/build.rs runs it for the tests, into <target>/guests/mcp-conformance-py.wasm.)
#
# componentize-py generates the bindings of wit/tool.wit's world
# `toolbox-with-resources-and-prompts` (the `wit_world` package app.py imports), bundles
# CPython, app.py, asking.py and the standard library modules they use, and pre-initializes the
# interpreter. Needs componentize-py from scripts/setup-toolchains.sh (`just setup`).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=$(realpath -m "${1:?usage: build.sh OUT.wasm}")
toolchains=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/toolchains
componentize=$toolchains/venv/bin/componentize-py

if [[ ! -x $componentize ]]; then
  echo "error: $componentize is missing: run scripts/setup-toolchains.sh (or \`just setup\`)" >&2
  exit 1
fi

# The interpreter that pre-initializes the component writes __pycache__ next to the modules it
# imports: build from a copy, so the sources stay as they are (tests/build.rs watches them).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here"/*.py "$work/"
mkdir -p "$(dirname "$out")"
cd "$work"
# An active virtualenv's site-packages would be searched too; only the copy should be.
env -u VIRTUAL_ENV "$componentize" --quiet --wit-path "$repo/wit" \
  --world toolbox-with-resources-and-prompts componentize app --python-path "$work" \
  --output "$out"
