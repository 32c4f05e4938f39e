"""A real MCP server for the tests, written with the official SDK (low-level `Server`).

Run: ``python fixture_server.py stdio [PAGE_SIZE]`` or ``python fixture_server.py http PORT
[PAGE_SIZE]`` (streamable HTTP on 127.0.0.1:PORT/mcp). `tools/list` pages by
PAGE_SIZE tools (cursor = the next offset). The ``admin`` tool adds, removes and changes
tools on command and sends ``notifications/tools/list_changed``; the other tools return
one content kind each, an ``isError`` result, a large text, their process id, or sleep.
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
WAV = base64.b64encode(b"RIFF....WAVEfake").decode()

ANNOTATED = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def _schema(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": v} for k, v in props.items()},
        "required": sorted(props),
    }


TOOLS: dict[str, types.Tool] = {
    t.name: t
    for t in [
        types.Tool(
            name="echo",
            description="Echo the text back.",
            input_schema=_schema(text="string"),
            annotations=ANNOTATED,
        ),
        types.Tool(
            name="kinds",
            description="One content block of each kind.",
            input_schema={"type": "object"},
        ),
        types.Tool(
            name="structured",
            description="Structured content only.",
            input_schema={"type": "object"},
        ),
        types.Tool(name="fail", description="Always fails.", input_schema={"type": "object"}),
        types.Tool(name="big", description="A large text.", input_schema=_schema(size="integer")),
        types.Tool(
            name="pid", description="The server's process id.", input_schema={"type": "object"}
        ),
        types.Tool(name="sleep", description="Sleep.", input_schema=_schema(seconds="number")),
        types.Tool(
            name="admin",
            description="Add, remove or change a tool: op is add, remove or change.",
            input_schema={
                "type": "object",
                "properties": {
                    "op": {"type": "string"},
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "field": {"type": "string"},
                },
                "required": ["op", "name"],
            },
            annotations=types.ToolAnnotations(destructive_hint=True),
        ),
    ]
}


def _content(name: str, args: dict[str, Any]) -> types.CallToolResult:
    text = types.TextContent(type="text", text=f"{name}: {args}")
    if name == "echo":
        return types.CallToolResult(content=[types.TextContent(type="text", text=args["text"])])
    if name == "kinds":
        blocks: list[Any] = [
            types.TextContent(type="text", text="plain text"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="file:///notes.txt", mime_type="text/plain", text="embedded notes"
                ),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///logo.png", mime_type="image/png", blob=PNG
                ),
            ),
            types.ResourceLink(
                type="resource_link", uri="file:///big.csv", name="big.csv", mime_type="text/csv"
            ),
        ]
        return types.CallToolResult(content=blocks, structured_content={"count": 6})
    if name == "structured":
        return types.CallToolResult(content=[], structured_content={"temperature": 21.5})
    if name == "fail":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="the disk is full")], is_error=True
        )
    if name == "big":
        line = "0123456789" * 9 + "\n"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=line * int(args["size"]))]
        )
    if name == "pid":
        return types.CallToolResult(content=[types.TextContent(type="text", text=str(os.getpid()))])
    return types.CallToolResult(content=[text])


def build(page_size: int) -> Server[Any]:
    tools = dict(TOOLS)

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        ordered = sorted(tools.values(), key=lambda t: t.name)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page_size
        cursor = str(end) if end < len(ordered) else None
        return types.ListToolsResult(tools=ordered[start:end], next_cursor=cursor)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})
        if params.name not in tools:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"unknown tool {params.name}")],
                is_error=True,
            )
        if params.name == "sleep":
            await anyio.sleep(float(args["seconds"]))
        if params.name == "admin":
            name = args["name"]
            if args["op"] == "remove":
                tools.pop(name, None)
            elif args["op"] == "add-invalid":  # a schema JSON Schema rejects
                bogus = {"type": "object", "properties": {"x": {"type": "bogus"}}}
                tools[name] = types.Tool(name=name, input_schema=bogus)
            else:
                schema = _schema(**{args.get("field", "text"): "string"})
                tools[name] = types.Tool(
                    name=name,
                    description=args.get("description", f"The {name} tool."),
                    input_schema=schema,
                )
            await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=[types.TextContent(type="text", text="done")])
        return _content(params.name, args)

    return Server(
        "fixture",
        version="1.0",
        instructions="Test fixture tools: echo, content kinds, failures.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def main() -> None:
    transport = sys.argv[1]
    if transport == "stdio":
        server = build(int(sys.argv[2]) if len(sys.argv) > 2 else 100)
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, options)

        anyio.run(run)
        return
    import uvicorn

    port = int(sys.argv[2])
    server = build(int(sys.argv[3]) if len(sys.argv) > 3 else 100)
    app = server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
