#!/usr/bin/env bash
# Installs Prometheus from Debian's packages when it is missing: the metrics test
# (tests/mcp_server/metrics.rs) starts one that scrapes `host mcp --http`. Only the binary is
# used: the test starts its own on 127.0.0.1 with its own configuration and data directory
# (the package's service, if the machine runs services, is not needed). Needs root (or sudo).
set -euo pipefail

if command -v prometheus >/dev/null 2>&1 || [[ -x /usr/bin/prometheus ]]; then
  exit 0
fi
log() { printf '[setup-prometheus] %s\n' "$*" >&2; }
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  log "prometheus is missing and this user cannot install it: run \`apt-get install -y --no-install-recommends prometheus\` as root"
  exit 1
fi
log "installing prometheus (apt-get)"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends prometheus >/dev/null
