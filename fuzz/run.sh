#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 300), one after the other, and prints the
# executions, corpus size and findings of each. `just fuzz [SECONDS] [TARGET...]` runs this;
# `.ci/run` runs it for 20 s each as a smoke run.
#
# The corpora grow in fuzz/corpus/<target>/ (kept between runs, not committed), seeded from
# fuzz/seeds/ and the test fixtures; a crash is saved in fuzz/artifacts/<target>/ and makes
# the exit status 1. Reproduce one with `cargo +nightly fuzz run -s none <target> <file>`
# from fuzz/ (or the command printed below).
#
# Built with nightly (cargo-fuzz needs it; the product never is), without a sanitizer: the
# code under test has no `unsafe` of its own, and ASan would double the build of wasmtime and
# halve the executions. Coverage guidance, debug assertions and overflow checks stay on.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-300}"
shift || true
all=(manifest component arguments model_stream model_body mcp_server_stdio mcp_server_http mcp_client run_state tool_result access_token)
targets=("$@")
[ "$#" -gt 0 ] || targets=("${all[@]}")

# The fuzz build is nightly's and has its own target directory: it shares nothing with the
# product's build.
target_dir="${TOOLHOST_FUZZ_TARGET:-${TOOLHOST_CACHE:-$HOME/.cache/toolhost}/fuzz-target}"
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
build=(cargo +nightly fuzz build -s none --codegen-units 16 --target-dir "$target_dir")
[ "${#targets[@]}" -eq 1 ] && build+=("${targets[0]}")
started=$(date +%s)
mkdir -p artifacts
if ! "${build[@]}" >artifacts/build.log 2>&1; then
  tail -40 artifacts/build.log >&2
  echo "the fuzz build failed (fuzz/artifacts/build.log)" >&2
  exit 1
fi
echo "built in $(($(date +%s) - started)) s"

# Seeds: what the tests feed the same decoders. Components are built by `just tools`; those
# over 1 MB (the Python and JavaScript ones) would make every execution take seconds.
seeds() {
  case "$1" in
    manifest) echo seeds/manifest; ls ../example-tools/*.toml ../tests/eval/suite.toml 2>/dev/null ;;
    component) find ../example-tools/dist ../target/wasm32-wasip2 -maxdepth 3 -name '*.wasm' -size -1024k 2>/dev/null | head -20 ;;
    arguments) echo seeds/arguments ;;
    model_stream) ls ../tests/fixtures/wire/*.sse ;;
    model_body) ls ../tests/fixtures/wire/*.json | grep -v '\.request\.json$' ;;
    mcp_server_stdio | mcp_server_http) echo seeds/mcp_server ;;
    mcp_client) echo seeds/mcp_client ;;
    run_state) echo seeds/run_state ;;
    access_token) echo seeds/access_token ;;
    tool_result) ;;
  esac
}

failed=0
results=()
for target in "${targets[@]}"; do
  corpus="corpus/$target"
  # libFuzzer first runs the whole corpus, whatever the time limit; a component's corpus
  # (hundreds of components, each compiled in seconds) takes minutes. A smoke run (under a
  # minute) gives that target a fresh corpus and no seeds: random bytes into the validator.
  if [ "$target" = component ] && [ "$seconds" -lt 60 ]; then
    corpus="corpus/component-smoke"
    rm -rf "$corpus"
  fi
  mkdir -p "$corpus" "artifacts/$target"
  # A seed that is a file goes into the corpus; a directory is read as it is.
  inputs=()
  for seed in $([ "$corpus" = corpus/component-smoke ] || seeds "$target"); do
    if [ -d "$seed" ]; then inputs+=("$seed"); else cp -n "$seed" "$corpus/" 2>/dev/null || true; fi
  done
  # Findings are crashes, timeouts, leaks and out-of-memory inputs (not slow units).
  count() { find "artifacts/$target" -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' | wc -l; }
  before=$(count)
  log="artifacts/$target.log"
  echo "== $target: ${seconds}s"
  set +e
  # A component is compiled at every execution: seconds for the larger seeds, and several
  # times that on a busy machine, which is not a hang.
  timeout=30
  [ "$target" = component ] && timeout=180
  "$target_dir/x86_64-unknown-linux-gnu/release/$target" "$corpus" "${inputs[@]}" \
    -artifact_prefix="artifacts/$target/" -max_total_time="$seconds" -timeout="$timeout" \
    -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1
  status=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  found=$(($(count) - before))
  size=$(ls "$corpus" | wc -l)
  if [ "$status" -ne 0 ]; then
    failed=1
    echo "   FOUND (exit $status):"
    grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written to' "$log" | head -8 | sed 's/^/   /'
    echo "   log: fuzz/$log"
  fi
  results+=("$(printf '%-18s %12s %8s %9s' "$target" "${runs:-?}" "$size" "$found")")
done

echo
printf '%-18s %12s %8s %9s\n' target executions corpus findings
printf '%s\n' "${results[@]}"
echo "total: $(($(date +%s) - started)) s"
exit "$failed"
