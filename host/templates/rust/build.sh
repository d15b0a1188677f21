#!/usr/bin/env bash
# Builds the tool into a WebAssembly component:   ./build.sh   ->   dist/{{name}}.wasm
#
# Needs Rust with the wasm32-wasip2 target (`rustup target add wasm32-wasip2`); cargo makes a
# component directly, no other tool is needed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# Reproducible: the same source and toolchain give the same bytes, in any directory and for
# any user (cargo names this crate's files by relative paths; the dependencies' are under $HOME).
export RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$HOME=~"
# One target directory for every tool project on this machine, in toolhost's cache (where
# `just setup` builds the dependencies once): a new project compiles only its own crate. Set
# CARGO_TARGET_DIR to build elsewhere.
cache=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/rust-tools}
cargo build --release --target wasm32-wasip2 --quiet
mkdir -p dist
cp "$CARGO_TARGET_DIR/wasm32-wasip2/release/{{crate}}.wasm" dist/{{name}}.wasm
echo "built dist/{{name}}.wasm"
