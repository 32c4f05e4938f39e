"""Live MCP servers as a session's tools (extra ``mcp``: ``pip install "contextchef[mcp]"``).

Follows MCP specification revision 2025-11-25 (``tools/list`` with cursor paging, tool
annotations, ``tools/call`` content and ``isError``, ``notifications/tools/list_changed``)
through the official Python SDK (``mcp`` 2.x), over stdio or streamable HTTP::

    chef = ContextChef(default_defer=True)
    with McpHub(chef, ["uvx mcp-server-time", "http://127.0.0.1:8000/mcp"]) as hub:
        req = chef.compile("anthropic")          # applies server changes first
        ...                                      # call the model, ingest its turn
        done = chef.execute(call)                # an MCP tool's call goes to its server

`McpHub` registers each server's tools under its name, with its ``instructions`` as the
group description, and a handler per tool, so ``chef.execute`` / ``chef.aexecute`` reach
MCP tools through the session's one gate. See `contextchef.mcp._hub` for how changing
servers are applied and `contextchef.mcp._content` for how results map onto `ToolResult`.
Importing this package does not import the SDK; connecting does.
"""

from __future__ import annotations

from contextchef.mcp._cli import list_servers
from contextchef.mcp._client import McpListingTooLarge, McpServer, McpServerError, ToolsListing
from contextchef.mcp._content import result_from_mcp
from contextchef.mcp._hub import McpChanges, McpHub
from contextchef.tools._mcp import McpRules

__all__ = [
    "McpChanges",
    "McpHub",
    "McpListingTooLarge",
    "McpRules",
    "McpServer",
    "McpServerError",
    "ToolsListing",
    "list_servers",
    "result_from_mcp",
]
