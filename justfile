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
    rustup target add wasm32-wasip2
    scripts/setup-toolchains.sh
    scripts/setup-local-llm.sh
    just build tools
    just demo

# Build the host (`target/debug/host`) and the guest SDK.
build:
    cargo build --workspace

# Build every example tool (Rust, Python, JavaScript, C, Go) into example-tools/dist/.
tools:
    scripts/build-tools.sh

# The demo: the local model answers the square-root question through the calculator tool.
demo:
    cargo run -q -p toolhost --bin host -- run --manifest example-tools/toolhost.toml --tools add,multiply,square_root "What is the square root of 475695037565?"

# Run every test: unit, integration (real components), conformance, end-to-end with the local model.
test: build tools
    scripts/setup-local-llm.sh
    scripts/test-guests.sh
    cargo test --workspace

# Formatting and clippy, as CI checks them.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings

# Benchmarks (release build): per-call cost vs a raw wasm call vs a process per call, start time.
bench:
    cargo bench -p toolhost-tests --bench calls
