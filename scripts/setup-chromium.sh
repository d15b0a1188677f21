#!/usr/bin/env bash
# Installs Chromium from Debian's packages when it is missing: the status page test
# (tests/mcp_server/status.rs) loads `/status` of `host mcp --http` in headless Chromium.
# Needs root (or sudo).
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || [[ -x /usr/bin/chromium ]]; then
  exit 0
fi
log() { printf '[setup-chromium] %s\n' "$*" >&2; }
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  log "chromium is missing and this user cannot install it: run \`apt-get install -y --no-install-recommends chromium\` as root"
  exit 1
fi
log "installing chromium (apt-get)"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
