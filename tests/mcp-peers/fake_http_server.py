"""A minimal MCP server over Streamable HTTP (stateless, standard library only) for toolhost's
tests of answers too large to keep. It listens on 127.0.0.1, on a free port it prints first:

    python3 fake_http_server.py json|sse

json  answers every request with an application/json body
sse   answers tools/call with a text/event-stream holding one event

Tools:
  echo {text}     the text back
  big {bytes}     a text result of that many bytes (written in pieces: 200 MB is fine)
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1] if len(sys.argv) > 1 else "json"
TOOLS = [
    {"name": "echo", "description": "Echoes the text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "big", "description": "A long text.",
     "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]}},
]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, id = message.get("method"), message.get("id")
        if id is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "initialize":
            self.reply(id, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "fake-http", "version": "1.0"}})
        elif method == "tools/list":
            self.reply(id, {"tools": TOOLS})
        elif method == "tools/call":
            params = message["params"]
            args = params.get("arguments") or {}
            if params["name"] == "echo":
                self.reply(id, {"content": [{"type": "text", "text": args["text"]}]}, stream=MODE == "sse")
            else:
                self.big(id, int(args["bytes"]))
        elif method == "ping":
            self.reply(id, {})
        else:
            # As JSON-RPC has it (a server of the dated revisions answers 2026-07-28's
            # `server/discover` so, and the client falls back to `initialize`).
            self.error(id, -32601, f"method not found: {method}")

    def error(self, id, code, message):
        body = json.dumps({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def reply(self, id, result, stream=False):
        body = json.dumps({"jsonrpc": "2.0", "id": id, "result": result}).encode()
        if stream:
            body = b"event: message\ndata: " + body + b"\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def big(self, id, n):
        head = b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(id).encode()
        tail = b'"}]}}'
        if MODE == "sse":
            head, tail = b"event: message\ndata: " + head, tail + b"\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if MODE == "sse" else "application/json")
        self.send_header("Content-Length", str(len(head) + n + len(tail)))
        self.end_headers()
        try:
            self.wfile.write(head)
            chunk = b"x" * (1 << 20)
            while n > 0:
                self.wfile.write(chunk[: min(n, len(chunk))])
                n -= len(chunk)
            self.wfile.write(tail)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading, as it should

    def do_GET(self):
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
