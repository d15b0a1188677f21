#!/usr/bin/env bash
# Builds every example tool into example-tools/dist/<directory>.wasm:
#   - the Rust tools, members of the example-tools cargo workspace, with one `cargo build`;
#   - every other directory of example-tools/ that has a build.sh (Python, JavaScript, C, Go),
#     with `build.sh OUT.wasm`;
#   - and checksum-c once more, against tool contract 0.1, into dist/checksum-c-0.1.wasm;
#   - the code runners of code mode (code-runners/<name>/build.sh) into dist/<name>.wasm.
# Tool directories are discovered, not listed: a new directory with a Cargo.toml (added to the
# workspace) or a build.sh is built too. Prints one line per component, with its size.
#
#   scripts/build-tools.sh
#   CARGO_TARGET_DIR=/elsewhere scripts/build-tools.sh   # Rust guests go to $CARGO_TARGET_DIR/guests
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=$repo/example-tools
dist=$tools/dist
# The test build compiles the same guests into the same directory, so the two share the work.
guests=${CARGO_TARGET_DIR:-$repo/target}/guests

log() { printf '[build-tools] %s\n' "$*" >&2; }
built() {
  local size
  size=$(stat -c %s "$2")
  printf '%-44s %9s  %s\n' "${2#"$repo"/}" "$(numfmt --to=iec-i --suffix=B "$size")" "$1"
}

"$repo/scripts/setup-toolchains.sh"
mkdir -p "$dist"

log "building the Rust tools (cargo build --release, wasm32-wasip2)"
(cd "$tools" && CARGO_TARGET_DIR=$guests cargo build --locked --release --quiet)
for manifest in "$tools"/*/Cargo.toml; do
  dir=$(dirname "$manifest")
  crate=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$manifest" | head -n 1)
  wasm=$guests/wasm32-wasip2/release/${crate//-/_}.wasm
  if [[ ! -f $wasm ]]; then
    echo "error: $manifest built no $wasm: is it a cdylib member of $tools/Cargo.toml?" >&2
    exit 1
  fi
  cp "$wasm" "$dist/$(basename "$dir").wasm"
  built rust "$dist/$(basename "$dir").wasm"
done

for script in "$tools"/*/build.sh; do
  name=$(basename "$(dirname "$script")")
  log "building $name"
  start=$SECONDS
  "$script" "$dist/$name.wasm"
  built "$name/build.sh, $((SECONDS - start)) s" "$dist/$name.wasm"
done

# One example built for tool contract 0.1 as well (wit/0.1.0): the host still loads such
# components, and tests/components proves it with this one.
log "building checksum-c for contract 0.1"
"$tools/checksum-c/build.sh" "$dist/checksum-c-0.1.wasm" --contract 0.1
built "checksum-c/build.sh --contract 0.1" "$dist/checksum-c-0.1.wasm"

# The code runners (code mode, wit/code/runner.wit): not tools, so not in example-tools/, but
# built next to them.
for script in "$repo"/code-runners/*/build.sh; do
  name=$(basename "$(dirname "$script")")
  log "building the code runner $name"
  start=$SECONDS
  "$script" "$dist/$name.wasm"
  built "code-runners/$name/build.sh, $((SECONDS - start)) s" "$dist/$name.wasm"
done
