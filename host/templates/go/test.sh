#!/usr/bin/env bash
# Tests the tool: builds it, runs its unit tests (natively, in the generated module), then the
# component as toolhost runs it.   ./test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
./build.sh
cache=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}
go=$cache/toolchains/venv/bin/go
[[ -x $go ]] || go=$(command -v go)
(cd build/module && GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local "$go" test ./...)
{{check}}
