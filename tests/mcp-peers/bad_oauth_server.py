"""An MCP server that asks for OAuth and whose authorization server misbehaves in one chosen
way (standard library only), for toolhost's tests of what a login must refuse:

    python3 bad_oauth_server.py MODE

It listens on 127.0.0.1, on a free port it prints first; the MCP endpoint is /mcp.

MODE:
  issuer     the authorization server metadata names another issuer
  resource   the protected resource metadata names another resource
  garbage    the token endpoint answers HTML
  huge       the token endpoint answers 10 MB of JSON
  state      the authorization endpoint redirects with another `state`

Every request to /token is counted on stdout ("token request"), so a test can tell whether
one was made.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

MODE = sys.argv[1]
BASE = ""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="application/json", headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self):
        path = urlparse(self.path).path
        body = self.body()
        if path == "/mcp":
            challenge = (f'Bearer error="invalid_token", resource_metadata='
                         f'"{BASE}/.well-known/oauth-protected-resource/mcp", scope="notes"')
            self.send(401, {"error": "invalid_token"}, headers=[("WWW-Authenticate", challenge)])
        elif path == "/register":
            request = json.loads(body)
            self.send(201, {"client_id": "bad-client", "redirect_uris": request["redirect_uris"],
                            "token_endpoint_auth_method": "none"})
        elif path == "/token":
            print("token request", flush=True)
            if MODE == "garbage":
                self.send(200, b"<html><body>Sign in again</body></html>", "text/html")
            elif MODE == "huge":
                padding = "x" * (10 * 1024 * 1024)
                self.send(200, {"access_token": "huge-token", "token_type": "Bearer",
                                "padding": padding})
            else:
                self.send(200, {"access_token": "fine-token", "token_type": "Bearer",
                                "expires_in": 3600, "scope": "notes"})
        else:
            self.send(404, {"error": "not found"})

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            resource = "http://elsewhere.example/mcp" if MODE == "resource" else f"{BASE}/mcp"
            self.send(200, {"resource": resource, "authorization_servers": [BASE],
                            "scopes_supported": ["notes"]})
        elif url.path == "/.well-known/oauth-authorization-server":
            issuer = "http://evil.example" if MODE == "issuer" else BASE
            self.send(200, {
                "issuer": issuer,
                "authorization_endpoint": f"{BASE}/authorize",
                "token_endpoint": f"{BASE}/token",
                "registration_endpoint": f"{BASE}/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            })
        elif url.path == "/authorize":
            query = parse_qs(url.query)
            state = "not-the-login-s-state" if MODE == "state" else query["state"][0]
            target = query["redirect_uri"][0] + "?" + urlencode(
                {"code": "the-code", "state": state, "iss": BASE})
            self.send(302, b"", "text/plain", headers=[("Location", target)])
        else:
            self.send(404, {"error": "not found"})


def main():
    global BASE
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    BASE = f"http://127.0.0.1:{server.server_address[1]}"
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
