"""A 2026-07-28 MCP server for the tests (the SDK's `MCPServer`), over stdio.

Its ``grow`` tool adds a tool and publishes a tools-list change to
``subscriptions/listen`` streams (the 2026-07-28 way; no ``notifications/tools/
list_changed`` is sent).
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("modern", instructions="A 2026-07-28 fixture.")


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called `name`."""

    def made() -> str:
        return "made"

    server.add_tool(made, name=name, description=f"The {name} tool.")
    await ctx.notify_tools_changed()
    return "done"


if __name__ == "__main__":
    server.run("stdio")
