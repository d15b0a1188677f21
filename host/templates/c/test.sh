#!/usr/bin/env bash
# Tests the tool: its unit tests (natively), then the component as toolhost runs it.   ./test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
mkdir -p build
cc=${CC:-cc}
command -v "$cc" >/dev/null || cc="${TOOLHOST_CACHE:-$HOME/.cache/toolhost}/toolchains/venv/bin/python -m ziglang cc"
$cc -std=c11 -Wall -Wextra -Werror -o build/words_test words_test.c words.c
build/words_test
./build.sh
{{check}}
