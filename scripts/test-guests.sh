#!/usr/bin/env bash
# Runs the native unit tests of the example tools written in C and Go (the Rust, Python and
# JavaScript tools are tested through the host: tests/conformance). Expects `just tools` to have
# generated the Go module.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
toolchains=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/toolchains
mkdir -p "$target/polyglot"

echo "[test-guests] checksum-c: the JSON reader, under AddressSanitizer and UBSan" >&2
cc -std=c11 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
  -o "$target/polyglot/json_test" \
  "$repo/example-tools/checksum-c/json_test.c" "$repo/example-tools/checksum-c/json.c"
"$target/polyglot/json_test"

echo "[test-guests] wordcount-go: go test" >&2
module=$target/polyglot/wordcount-go/module
if [[ ! -d $module ]]; then
  echo "error: $module does not exist; run \`just tools\` first" >&2
  exit 1
fi
(cd "$module" && GOPROXY=off GOTOOLCHAIN=local \
  WORDCOUNT_TESTDATA="$repo/example-tools/wordcount-go/testdata" \
  "$toolchains/venv/bin/go" test ./...)
