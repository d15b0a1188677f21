#!/usr/bin/env bash
# Tests the tool: its unit tests, then the component as toolhost runs it.   ./test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
node --test
./build.sh
{{check}}
