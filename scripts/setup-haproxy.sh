#!/usr/bin/env bash
# Installs HAProxy from Debian's packages when it is missing: the replica tests
# (tests/scale_out) run `host mcp --http` replicas behind it. Needs root (or sudo).
set -euo pipefail

if command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]]; then
  exit 0
fi
log() { printf '[setup-haproxy] %s\n' "$*" >&2; }
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  log "haproxy is missing and this user cannot install it: run \`apt-get install -y haproxy\` as root"
  exit 1
fi
log "installing haproxy (apt-get)"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq haproxy >/dev/null
