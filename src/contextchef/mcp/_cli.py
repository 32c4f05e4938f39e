"""One-shot listings of live servers, for ``contextchef plan|search --mcp`` (CLI helper)."""

from __future__ import annotations

from collections.abc import Sequence

from contextchef.mcp._client import McpConnection, McpServer, ServerLoop, ToolsListing
from contextchef.tools._catalogs import Catalog, tool_from_dict

__all__ = ["catalog_of", "list_servers", "live_catalogs"]


def list_servers(servers: Sequence[McpServer | str]) -> list[ToolsListing]:
    """Connect each server in turn, read its whole ``tools/list``, and disconnect.

    Raises:
        McpServerError: A server did not start, answer or list its tools.
    """
    loop = ServerLoop()
    out: list[ToolsListing] = []
    try:
        for item in servers:
            spec = item if isinstance(item, McpServer) else McpServer.parse(item)
            conn = McpConnection(spec, lambda _c: None)
            loop.run(conn.open())
            try:
                out.append(loop.run(conn.list_tools()))
            finally:
                loop.run(conn.close())
    finally:
        loop.stop()
    return out


def catalog_of(listings: Sequence[ToolsListing]) -> Catalog:
    """The listings as one `Catalog` (each server's tools under its name).

    Raises:
        InvalidToolError, InvalidSchemaError: A server lists an invalid tool.
    """
    tools = tuple(
        tool_from_dict(raw, server=listing.server, source="mcp")
        for listing in listings
        for raw in listing.tools
    )
    descriptions = {listing.server: listing.instructions for listing in listings}
    return Catalog(tools=tools, server_descriptions=descriptions, source="<mcp>")


def live_catalogs(servers: Sequence[McpServer | str], urls: Sequence[str] = ()) -> list[Catalog]:
    """One `Catalog` per live server (``contextchef plan|search --mcp/--mcp-url``).

    `servers`: ``--mcp`` values (`McpServer.parse`: a command line, or an ``http(s)://``
    URL); `urls`: ``--mcp-url`` values, each only ever a URL (`McpServer(url=...)`), never
    started as a program.

    Raises:
        UsageError: A `urls` value that is not an ``http(s)://`` URL (nothing is started).
        McpServerError: A server did not start, answer or list its tools.
        InvalidToolError, InvalidSchemaError: A server lists an invalid tool.
    """
    given = [*servers, *(McpServer(url=url) for url in urls)]
    return [catalog_of([listing]) for listing in list_servers(given)]
