#!/usr/bin/env bash
# Builds the tool into a WebAssembly component:   ./build.sh   ->   dist/{{name}}.wasm
#
# componentize-js bundles the StarlingMonkey JavaScript engine with tool.js and the modules it
# imports, and pre-initializes it. It is installed by toolhost's `just setup` (into
# ~/.cache/toolhost/toolchains), or: npm install @bytecodealliance/componentize-js@0.23.0
# @bytecodealliance/preview2-shim@0.25.0
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
toolchains=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/toolchains
componentize=$toolchains/node/node_modules/.bin/componentize-js
[[ -x $componentize ]] || componentize=node_modules/.bin/componentize-js
[[ -x $componentize ]] || {
  echo "error: componentize-js not found; run \`just setup\` in toolhost, or npm install @bytecodealliance/componentize-js@0.23.0 @bytecodealliance/preview2-shim@0.25.0" >&2
  exit 1
}
mkdir -p dist
# The world exports no HTTP handler (`fetch-event`), and this tool fetches nothing (`http`).
"$componentize" tool.js --wit wit --world-name toolbox --disable fetch-event --disable http \
  --out dist/{{name}}.wasm
echo "built dist/{{name}}.wasm"
