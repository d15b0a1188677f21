#!/usr/bin/env bash
# Builds the JavaScript code runner into a component:   ./build.sh OUT.wasm
#
# componentize-js bundles the StarlingMonkey JavaScript engine with runner.js and
# pre-initializes it. Everything the runner could reach besides the host's interfaces is
# turned off: `http` and `fetch-event` (no wasi:http import at all), `random` and `clocks`
# (StarlingMonkey then imports no random source or clock of WASI beyond its defaults), and
# `stdio` (the program prints through the host's `output` interface instead).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(realpath -m "${1:?usage: build.sh OUT.wasm}")
toolchains=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/toolchains
componentize=$toolchains/node/node_modules/.bin/componentize-js

[[ -x $componentize ]] || "$repo/scripts/setup-toolchains.sh"

mkdir -p "$(dirname "$out")"
cd "$here"
"$componentize" runner.js --wit "$repo/wit/code" --world-name code-runner \
  --disable http fetch-event random clocks stdio --out "$out"
# The language, for the host to tell the model (code-runners/language.py).
python3 "$here/../language.py" "$out" javascript
