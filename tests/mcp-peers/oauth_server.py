"""An MCP server that asks for OAuth, and its own authorization server, from the Python `mcp`
SDK's parts (MCPServer with an `auth_server_provider`: protected resource metadata, RFC 8414
metadata, dynamic registration, PKCE, refresh, bearer checks). For toolhost's login tests.

    python oauth_server.py [--lifetime SECONDS] [--client ID:SECRET]

It listens on 127.0.0.1, on a free port it prints first; the MCP endpoint is /mcp. The
authorization endpoint approves at once (the person said yes) and sends the browser back to
the client's redirect URI. Access tokens last --lifetime seconds (default 3600); every token
it issues is numbered, and the tool says which one it was called with. --client registers a
confidential client beforehand (any redirect to 127.0.0.1 allowed, as RFC 8252 asks). What it
issues (codes and tokens) it prints, one line each, for tests that look for them elsewhere.

Tools:
  count_notes {folder?}   "3 notes (token #N)"
"""

import argparse
import asyncio
import secrets
import socket
import sys
import time

import uvicorn
from starlette.responses import JSONResponse
from starlette.routing import Route
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

SCOPE = "notes"


class LoopbackClient(OAuthClientInformationFull):
    """A client registered beforehand, redirected to 127.0.0.1 on any port (RFC 8252 7.3)."""

    def validate_redirect_uri(self, redirect_uri):
        if redirect_uri is not None and str(redirect_uri).startswith("http://127.0.0.1:"):
            return redirect_uri
        return super().validate_redirect_uri(redirect_uri)


class Provider:
    def __init__(self, lifetime):
        self.lifetime = lifetime
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}
        self.serial = {}
        self.issued = 0

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams):
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [SCOPE], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        print(f"issued code {code}", flush=True)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, code):
        return self.codes.get(code)

    def _issue(self, client_id, scopes, resource):
        self.issued += 1
        token = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        self.access[token] = AccessToken(
            token=token, client_id=client_id, scopes=scopes,
            expires_at=int(time.time()) + self.lifetime, resource=resource,
        )
        self.serial[token] = self.issued
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource,
        )
        print(f"issued token #{self.issued} {token} {refresh}", flush=True)
        return OAuthToken(access_token=token, expires_in=self.lifetime,
                          scope=" ".join(scopes), refresh_token=refresh)

    async def exchange_authorization_code(self, client, code):
        self.codes.pop(code.code, None)
        return self._issue(client.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError(error="invalid_grant", error_description="unknown refresh token")
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lifetime", type=int, default=3600)
    parser.add_argument("--client")
    args = parser.parse_args()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn takes the socket
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"

    provider = Provider(args.lifetime)
    if args.client:
        client_id, secret = args.client.split(":", 1)
        provider.clients[client_id] = LoopbackClient(
            client_id=client_id, client_secret=secret,
            redirect_uris=["http://127.0.0.1/callback"], scope=SCOPE,
            token_endpoint_auth_method="client_secret_post",
            grant_types=["authorization_code", "refresh_token"],
        )
    server = MCPServer(
        "notes",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=False,
            required_scopes=[SCOPE],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]),
        ),
        log_level="WARNING",
    )

    @server.tool()
    def count_notes(folder: str = "inbox") -> str:
        """How many notes there are in a folder."""
        token = get_access_token()
        serial = provider.serial.get(token.token) if token else None
        return f"3 notes (token #{serial})"

    app = server.streamable_http_app()
    # The SDK's token endpoint wants `client_id` in the form even with HTTP Basic, which
    # RFC 6749 2.3.1 clients do not send: the metadata advertises the form only.
    async def metadata(request):
        return JSONResponse({
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "scopes_supported": [SCOPE],
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "none"],
            "code_challenge_methods_supported": ["S256"],
        })

    app.router.routes.insert(0, Route("/.well-known/oauth-authorization-server", metadata))
    print(port, flush=True)
    config = uvicorn.Config(app, log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
