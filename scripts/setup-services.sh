#!/usr/bin/env bash
# Installs, from Debian's packages, the servers the tests start themselves on 127.0.0.1 and
# stop by their PID (none is run as a service):
#   haproxy        the replica tests (tests/scale_out), replicas of `host mcp --http` behind it
#   redis-server   the task store's tests (tests/mcp_server/task_store.rs, tests/scale_out)
#   prometheus     the metrics test (tests/mcp_server/metrics.rs), scraping `host mcp --http`
#   chromium       the status page test (tests/mcp_server/status.rs), headless
# Only what is missing is installed, in one apt-get run. Needs root (or sudo).
set -euo pipefail

log() { printf '[setup-services] %s\n' "$*" >&2; }

# command, its usual path (for a PATH without /usr/sbin), Debian package
wanted=(
  "haproxy /usr/sbin/haproxy haproxy"
  "redis-server /usr/bin/redis-server redis-server"
  "prometheus /usr/bin/prometheus prometheus"
  "chromium /usr/bin/chromium chromium"
)
missing=()
for entry in "${wanted[@]}"; do
  read -r command path package <<<"$entry"
  if ! command -v "$command" >/dev/null 2>&1 && [[ ! -x $path ]]; then
    missing+=("$package")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  log "missing: ${missing[*]}, and this user cannot install them: run \`apt-get install -y --no-install-recommends ${missing[*]}\` as root"
  exit 1
fi
log "installing ${missing[*]} (apt-get)"
"${sudo[@]}" apt-get update -qq
# Without the recommended packages: Prometheus would bring 41 (node-exporter among them).
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
