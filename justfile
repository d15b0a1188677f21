# toolhost: run LLM tools as sandboxed WebAssembly components.
# `just setup` sets everything up and runs the demo; `just test` runs the tests.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Caches outside the clone: toolchains, llama-server and its model, compiled components.
export TOOLHOST_CACHE := env_var_or_default("TOOLHOST_CACHE", env_var_or_default("XDG_CACHE_HOME", env_var("HOME") / ".cache") / "toolhost")

# List the recipes.
default:
    @just --list

# Install what is missing (wasm target, tool toolchains, llama-server, model), build everything, run the demo.
setup:
    #!/usr/bin/env bash
    set -euo pipefail
    rustup target add wasm32-wasip2
    scripts/setup-toolchains.sh
    scripts/setup-registry.sh
    # llama-server (C++) builds while the host and the tools do: each leaves the cores idle
    # at times (linking, downloads), so together they finish sooner than one after the other.
    scripts/setup-local-llm.sh &
    llm=$!
    just build tools
    wait "$llm"
    just demo

# Build the host (`target/debug/host`), the guest SDK and the examples.
build:
    cargo build --locked --workspace --bins --examples

# Install the `host` command (a release build) into ~/.cargo/bin, where MCP clients can start it.
install:
    cargo install --locked --path host

# Build every example tool (Rust, Python, JavaScript, C, Go) into example-tools/dist/.
tools:
    scripts/build-tools.sh

# The demo: the local model answers the square-root question through the calculator tool.
# (The binary `just build` made: `cargo run -p toolhost` would build wasmtime again, with the
# features of that one package instead of the workspace's.)
demo:
    "${CARGO_TARGET_DIR:-target}/debug/host" run --manifest example-tools/toolhost.toml --tools add,multiply,square_root "What is the square root of 475695037565?"

# Run every test: unit, integration (real components), conformance, end-to-end with the local model;
# and the benchmark's smoke run (every section a few times on the debug build, figures not judged),
# so that a change cannot break `just bench` unseen.
test: build tools
    scripts/setup-local-llm.sh
    scripts/setup-mcp-peers.sh
    scripts/setup-services.sh
    scripts/setup-registry.sh
    scripts/test-guests.sh
    cargo test --locked --workspace
    # Every benchmark section, a few iterations on the debug build: a change cannot break the
    # bench unseen (no figure is judged).
    BENCH_SMOKE=1 cargo test --locked -p toolhost-tests --bench calls

# The eval: 70 everyday requests (tests/eval/suite.toml) asked of the local model with every
# example tool; prints each run, the score per category of the development and the held-out
# half side by side, the median time per request, and the scores recorded before and after
# changes (tests/eval/scores.toml). Flags go to the eval:
# `just eval --half dev`, `just eval --only time,weather`, `just eval --tool-limit all`, `just eval --rank`.
eval *FLAGS: build tools
    scripts/setup-local-llm.sh
    "${CARGO_TARGET_DIR:-target}/debug/eval" {{FLAGS}}

# Formatting, clippy, the library's structure (docs/architecture.md) and its cargo features,
# as CI checks them.
lint:
    cargo fmt --all -- --check
    python3 scripts/check-structure.py --self-test
    python3 scripts/check-structure.py
    cargo clippy --locked --workspace --all-targets -- -D warnings
    just features

# The library with no optional feature, with each alone, and with the fuzz targets' set,
# through clippy (a check, not a build): a `#[cfg(feature = ...)]` that is missing or wrong
# fails here, not in an embedder's build. (`lint` checks the default set.)
features:
    #!/usr/bin/env bash
    set -euo pipefail
    for features in "" cli mcp-server mcp-client oci local-model redis-tasks code-mode fuzzing,mcp-client,mcp-server,oci; do
      echo "toolhost with features [$features]"
      cargo clippy --locked --quiet -p toolhost --all-targets --no-default-features \
        --features "$features" -- -D warnings
    done

# Fuzz every decoder of outside data (manifest, component bytes, tool arguments, model streams
# and bodies, MCP messages both ways, saved run state) for SECONDS each, with nightly's
# cargo-fuzz (installed when missing); prints executions, corpus and findings per target.
# `just fuzz 60 manifest arguments` runs only those. Components seed from example-tools/dist.
fuzz SECONDS="300" *TARGETS:
    fuzz/run.sh {{SECONDS}} {{TARGETS}}

# Benchmarks (release build): per-call cost vs a raw wasm call vs a process per call, start time,
# every example component, parallel calls, memory, and `host mcp` against a minimal MCP server
# (`BENCH=mcp just bench`, or `BENCH=calls,start`, for those sections alone; docs/performance.md).
bench: tools
    cargo build --locked --release -p toolhost --bin host
    cargo bench --locked -p toolhost-tests --bench calls

# Every answer is checked; the soak fails on a wrong answer or on memory that grows from the
# middle to the end (tests/soak/main.rs says why that margin). Flags go to the driver:
# `just soak --calls 20000 --stateless`. SOAK_HOST=path soaks that binary instead of a release build.
# Needs the example tools (`just tools`); they are compiled first, as a deployment would
# (docs/deploy.md), so the server under test starts from the compile cache.
# The soak: 16 clients, 100,000 calls to `host mcp --http` (release), calls/s, p50/p99, memory.
soak *FLAGS:
    #!/usr/bin/env bash
    set -euo pipefail
    target=${CARGO_TARGET_DIR:-target}
    host=${SOAK_HOST:-}
    if [[ -z $host ]]; then
      cargo build --locked --release -p toolhost --bin host
      host=$target/release/host
    fi
    cargo build --locked -p toolhost-tests --bin soak
    "$host" tools example-tools/toolhost.toml > /dev/null
    "$target/debug/soak" --host "$host" {{FLAGS}}

# Three replicas of `host mcp --http` behind HAProxy, one killed mid-load (also in `just test`).
scale-out:
    cargo build --locked -p toolhost --bin host
    cargo test --locked -p toolhost-tests --test scale_out
