"""An MCP server written with the SDK's `MCPServer` that removes its own tools, over stdio.

Run: ``python shrink_server.py [-NAME ...] [+NAME ...]``. ``shrink`` removes a tool and
``regrow`` adds a removed one back with its first definition (both send
``notifications/tools/list_changed``); ``grow`` adds a new tool that returns ``made``.
``-NAME`` starts the server without its tool NAME (as it is once NAME was removed);
``+NAME`` starts it with the tool ``grow`` would add.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("shr", instructions="A server whose tools come and go.")
first: dict[str, Callable[..., Any]] = {}


def made(x: str = "") -> str:
    """Say made."""
    return "made" + x


@server.tool()
def lookup(q: str) -> str:
    """Look a word up."""
    return "found " + q


@server.tool()
def dig(q: str) -> str:
    """Dig for a word."""
    return "dug " + q


@server.tool()
async def shrink(name: str, ctx: Context) -> str:
    """Remove the tool called `name`."""
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return "removed " + name


@server.tool()
async def regrow(name: str, ctx: Context) -> str:
    """Add the removed tool `name` back."""
    server.add_tool(first[name], name=name)
    await ctx.session.send_tool_list_changed()
    return "back " + name


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called `name`."""
    server.add_tool(made, name=name, description=f"The {name} tool.")
    await ctx.session.send_tool_list_changed()
    return "added " + name


first.update(lookup=lookup, dig=dig)
for arg in sys.argv[1:]:
    if arg.startswith("-"):
        server.remove_tool(arg[1:])
    elif arg.startswith("+"):
        server.add_tool(made, name=arg[1:], description=f"The {arg[1:]} tool.")

if __name__ == "__main__":
    server.run("stdio")
