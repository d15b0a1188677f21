"""The Python MCP SDK's OAuth client (mcp 2.3.0) logging in to a protected MCP server and
calling a tool: it reads the server's resource metadata from its 401, registers itself at the
authorization server (dynamic registration), and gets a token with the authorization code and
PKCE. The person's part (the login and consent pages of oidc-provider's dev interactions) is
played here with an HTTP client and a cookie jar: login `alice`, any password.

    oauth_client.py URL [--call TOOL --args JSON]

Prints one JSON object: the tools (names) and the call's result.
"""

import argparse, asyncio, json, sys
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2 as httpx
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:1/callback"


class Memory:
    def __init__(self):
        self.tokens, self.client = None, None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Person:
    """Plays the browser: follows the authorization URL through login and consent."""

    def __init__(self):
        self.result = None

    async def visit(self, url: str) -> None:
        async with httpx.AsyncClient(follow_redirects=False) as browser:
            for _ in range(20):
                response = await browser.get(url)
                if response.status_code in (302, 303):
                    url = urljoin(url, response.headers["location"])
                    if url.startswith(REDIRECT):
                        query = parse_qs(urlparse(url).query)
                        self.result = AuthorizationCodeResult(
                            code=query["code"][0], state=query.get("state", [None])[0],
                            iss=query.get("iss", [None])[0])
                        return
                    continue
                # An interaction page: log in, or consent.
                prompt = "login" if 'name="login"' in response.text else "consent"
                form = {"prompt": prompt}
                if prompt == "login":
                    form.update(login="alice", password="x")
                posted = await browser.post(url, data=form)
                url = urljoin(url, posted.headers["location"])
            raise RuntimeError("the login never came back to the redirect URI")

    async def callback(self) -> AuthorizationCodeResult:
        return self.result


async def main(opts):
    person = Person()
    auth = OAuthClientProvider(
        server_url=opts.url,
        client_metadata=OAuthClientMetadata(
            client_name="python-sdk-test", redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method="none"),
        storage=Memory(), redirect_handler=person.visit, callback_handler=person.callback)
    async with create_mcp_http_client(auth=auth) as http:
        async with Client(streamable_http_client(opts.url, http_client=http), mode="legacy") as client:
            out = {"tools": [tool.name for tool in (await client.list_tools()).tools]}
            if opts.call:
                result = await client.call_tool(opts.call, json.loads(opts.args))
                out["result"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Log in to a protected MCP server and call a tool.")
    parser.add_argument("url")
    parser.add_argument("--call", metavar="TOOL")
    parser.add_argument("--args", default="{}", metavar="JSON")
    sys.exit(asyncio.run(main(parser.parse_args())))
