#!/usr/bin/env bash
# Tests the tool: its unit tests, then the component as toolhost runs it.   ./test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
cache=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/rust-tools} cargo test --quiet
./build.sh
{{check}}
