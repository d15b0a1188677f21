"""An MCP server whose tools change while it runs (Python `mcp` SDK, stdio), for toolhost's
tests of tool-list changes reaching `host mcp`'s clients:

    python changing_server.py

Tools:
  test_trigger_tool_change   adds the tool `added_N` (N = 1, 2, ...: each call changes the list)
                             and sends notifications/tools/list_changed (to the session, and to
                             `subscriptions/listen` streams at 2026-07-28); answers `added added_N`
  added_N {text}             answers `added_N: TEXT`
  remove_tool {name}         removes that tool and sends notifications/tools/list_changed

The name is the hook of the official conformance suite's scenario
`server-stateless:sep-2575-server-sends-tools-list-changed-on-subscription`.
"""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing-tools", version="1.0.0")
added = 0


@server.tool(description="Adds a tool (added_1, then added_2, ...) and says the tools changed.")
async def test_trigger_tool_change(ctx: Context) -> str:
    global added
    added += 1
    name = f"added_{added}"

    def tool(text: str) -> str:
        return f"{name}: {text}"

    server.add_tool(tool, name=name, description=f"Echoes the text; added by call {added} of test_trigger_tool_change.")
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return f"added {name}"


@server.tool(description="Removes a tool and says the tools changed.")
async def remove_tool(name: str, ctx: Context) -> str:
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return f"removed {name}"


if __name__ == "__main__":
    server.run("stdio")
