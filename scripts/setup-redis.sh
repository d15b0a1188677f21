#!/usr/bin/env bash
# Installs Redis from Debian's packages when it is missing: the task-store tests
# (tests/mcp_server/task_store.rs) start `redis-server` on 127.0.0.1 themselves. Needs root
# (or sudo). The package's own service is not what the tests use; it is left as Debian sets it.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1 || [[ -x /usr/bin/redis-server ]]; then
  exit 0
fi
log() { printf '[setup-redis] %s\n' "$*" >&2; }
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  log "redis-server is missing and this user cannot install it: run \`apt-get install -y redis-server\` as root"
  exit 1
fi
log "installing redis-server (apt-get)"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq redis-server >/dev/null
