#!/usr/bin/env bash
# Builds the JSON tools (JavaScript) into a component:   ./build.sh OUT.wasm
#
# componentize-js bundles the StarlingMonkey JavaScript engine (SpiderMonkey) with tool.js and
# the modules it imports, and pre-initializes it (Wizer), so a call starts with the module
# already evaluated. Its `http` feature (on by default) provides `fetch` over wasi:http.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(realpath -m "${1:?usage: build.sh OUT.wasm}")
toolchains=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/toolchains
componentize=$toolchains/node/node_modules/.bin/componentize-js

[[ -x $componentize ]] || "$repo/scripts/setup-toolchains.sh"

mkdir -p "$(dirname "$out")"
cd "$here"
# The world exports no HTTP handler: `fetch-event` (incoming requests) is of no use here.
"$componentize" tool.js --wit "$repo/wit" --world-name toolbox --disable fetch-event --out "$out"
