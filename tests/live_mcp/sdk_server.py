"""An MCP server written with the SDK's `MCPServer` (FastMCP style), over stdio.

Run: ``python sdk_server.py [NAME [DESCRIPTION]]``. Its tools return what Python MCP
servers usually return (a ``str``, an ``int``, a ``list``: the SDK wraps each in
``{"result": ...}`` structured content next to its text). ``grow`` adds a tool that
returns ``made`` and sends ``notifications/tools/list_changed``; given NAME, the server
has that tool from the start (DESCRIPTION: another description than ``grow`` gives).
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk", instructions="An MCPServer fixture.")


def made(x: str = "") -> str:
    """Say made."""
    return "made" + x


@server.tool()
def text(n: int) -> str:
    """Return n characters."""
    return "y" * n


@server.tool()
def number(n: int) -> int:
    """Return n squared."""
    return n * n


@server.tool()
def numbers(n: int) -> list[int]:
    """Return 0 .. n-1."""
    return list(range(n))


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called `name`."""
    server.add_tool(made, name=name, description=f"The {name} tool.")
    await ctx.session.send_tool_list_changed()
    return "added " + name


if len(sys.argv) > 1:
    name = sys.argv[1]
    described = sys.argv[2] if len(sys.argv) > 2 else f"The {name} tool."
    server.add_tool(made, name=name, description=described)

if __name__ == "__main__":
    server.run("stdio")
