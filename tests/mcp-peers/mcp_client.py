"""A small MCP client (Python `mcp` SDK 2.3.0) for driving a server from tests.

    mcp_client.py [--mode auto|legacy|2026-07-28] [--call TOOL [--args JSON]] [--elicit JSON] -- COMMAND [ARG ...]
    mcp_client.py [--mode ...] [--call TOOL [--args JSON]] [--elicit JSON] http://127.0.0.1:PORT/mcp

Spawns COMMAND as a stdio server (or connects to a Streamable HTTP URL), lists its tools, calls
TOOL when asked, and prints one JSON object on stdout: protocolVersion, server, tools, result,
the call's progress notifications (progress) and the elicitation requests it got (elicitations).
With --elicit the client declares elicitation and accepts each request with that content.
A JSON-RPC error (unknown tool, bad request) prints {"error": ...} and exits 2.
"""

import argparse, asyncio, json, sys
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True) if model else None


async def main(opts):
    target = opts.target[0] if opts.target[0].startswith("http") else StdioServerParameters(command=opts.target[0], args=opts.target[1:])
    progress, elicitations = [], []

    async def on_progress(done, total, message):
        progress.append({"progress": done, "total": total, "message": message})

    async def on_elicit(context, params):
        elicitations.append(dump(params))
        return types.ElicitResult(action="accept", content=json.loads(opts.elicit))

    callbacks = {"elicitation_callback": on_elicit} if opts.elicit else {}
    async with Client(target, mode=opts.mode, read_timeout_seconds=opts.timeout, **callbacks) as client:
        out = {"protocolVersion": client.protocol_version, "server": dump(client.server_info)}
        out["tools"] = [dump(tool) for tool in (await client.list_tools()).tools]
        out["progress"], out["elicitations"] = progress, elicitations
        if opts.call:
            try:
                out["result"] = dump(await client.call_tool(opts.call, json.loads(opts.args), progress_callback=on_progress))
            except MCPError as err:
                print(json.dumps({**out, "error": {"code": err.error.code, "message": err.error.message}}))
                return 2
        print(json.dumps(out))
        return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="List an MCP server's tools and call one.")
    parser.add_argument("--mode", default="auto", help="auto (discover, else initialize), legacy, or 2026-07-28")
    parser.add_argument("--call", metavar="TOOL", help="the tool to call after listing")
    parser.add_argument("--args", default="{}", metavar="JSON", help="the call's arguments, a JSON object")
    parser.add_argument("--elicit", metavar="JSON", help="declare elicitation; accept each request with this content")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each answer")
    parser.add_argument("target", nargs="+", help="a URL, or -- then the server command and its arguments")
    sys.exit(asyncio.run(main(parser.parse_args())))
