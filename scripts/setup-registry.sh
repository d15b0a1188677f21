#!/usr/bin/env bash
# Installs the real parts of the OCI tests (tests/oci) when they are missing: Debian's
# docker-registry (distribution 2.8) and htpasswd (apache2-utils, for a registry with bcrypt
# passwords), and oras from PyPI (pinned in tests/oci/requirements.txt) in a venv under the
# cache, as the second registry client. Idempotent. apt needs root (or sudo).
#
#   scripts/setup-registry.sh      # oras into $TOOLHOST_CACHE/oci-peers/py
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}
dir=$cache/oci-peers
log() { printf '[setup-registry] %s\n' "$*" >&2; }

if [[ ! -x /usr/bin/docker-registry ]] || ! command -v htpasswd >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    log "docker-registry or htpasswd is missing and this user cannot install them: run \`apt-get install -y docker-registry apache2-utils\` as root"
    exit 1
  fi
  log "installing docker-registry and apache2-utils (apt-get)"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq docker-registry apache2-utils >/dev/null
fi

stamp=$dir/.installed
want=$(sha256sum "$repo/tests/oci/requirements.txt" | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi
log "oras (PyPI) into $dir/py"
mkdir -p "$dir"
python3 -m venv "$dir/py"
"$dir/py/bin/pip" install --quiet --disable-pip-version-check -r "$repo/tests/oci/requirements.txt"
"$dir/py/bin/python" -c "import oras.client" >/dev/null
echo "$want" >"$stamp"
