r"""A stdio transport that refuses an oversized ``tools/list`` answer while reading it.

MCP's stdio transport is newline-delimited JSON-RPC (spec revision 2025-11-25, "Transports",
stdio: messages are delimited by newlines and must not contain embedded newlines). The
SDK's ``mcp.client.stdio.stdio_client`` (2.3) reads a message line by re-joining and
re-splitting its whole pending text on every 64 KiB chunk, so a 50 MB line costs time
quadratic in its length (minutes of CPU; the request times out first) and holds the
line several times over before anything can be measured (benchmarks/RESULTS.md, "MCP
stdio: a 50 MB tools/list").

`bounded_stdio_client` is the same transport (it starts and stops the server with the
SDK's own helpers) with another reader: bytes split at ``\\n`` in linear time, and a line
that answers one of our ``tools/list`` requests is given up as soon as it passes
``limit`` bytes: the rest of the line is read and dropped, never kept, and the request is
answered at once by a JSON-RPC error that `contextchef.mcp._client.McpConnection` turns
into `McpListingTooLarge` naming the server. The request is recognised by the ``"id"``
in the line's first bytes (before its ``"result"``); a line that puts its id last is
read whole as before, and the count of tools and bytes is checked after parsing.
Every other message is read whole, as by the SDK.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any, NamedTuple, TextIO

__all__ = [
    "LISTING_TOO_LARGE",
    "LineSplitter",
    "Refusal",
    "bounded_stdio_client",
    "sdk_has_helpers",
]

LISTING_TOO_LARGE = -32099
"""The JSON-RPC error code of the answer the transport makes up for a refused line
(in the range JSON-RPC 2.0 leaves to implementations)."""

_HEAD = 4096
"""Bytes of a line searched for its ``"id"``."""
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,30}|"(?:[^"\\]|\\.){0,200}")')


_SDK_HELPERS = (
    "_aclose_all",
    "_create_platform_compatible_process",
    "_drain_stdout",
    "_get_executable_command",
    "_parse_line",
    "_stop_server_process",
    "_WRITER_FLUSH_TIMEOUT",
    "get_default_environment",
    "logger",
)


def sdk_has_helpers() -> bool:
    """True if the installed SDK's stdio module has the helpers the transport reuses.

    They are the SDK's private functions (``mcp`` 2.3); an SDK without them gets the
    SDK's own transport, whose listing is checked after it is read.
    """
    from mcp.client import stdio

    return all(hasattr(stdio, name) for name in _SDK_HELPERS)


def _head_id(parts: list[bytes]) -> object:
    """The JSON-RPC id at the start of a line (before ``"result"``), or None."""
    head = b""
    for part in parts:
        head += part[: _HEAD - len(head)]
        if len(head) >= _HEAD:
            break
    for key in (b'"result"', b'"error"'):
        cut = head.find(key)
        head = head if cut < 0 else head[:cut]
    found = _ID.search(head)
    if found is None:
        return None
    try:
        return json.loads(found.group(1))
    except ValueError:
        return None


class Refusal(NamedTuple):
    """A line given up: the ``tools/list`` request it answered and the bytes read of it."""

    request: object
    size: int


class LineSplitter:
    """Newline-delimited messages from byte chunks, in time linear in the bytes.

    A line longer than `limit` bytes whose first bytes carry the id of a request in
    `listing` is given up: `feed` reports a `Refusal` once and drops the rest of the
    line as it arrives.
    """

    def __init__(self, limit: int, listing: set[object]) -> None:
        self.limit, self.listing = limit, listing
        self._parts: list[bytes] = []
        self._size = 0
        self._judged = self._skipping = False

    def feed(self, chunk: bytes) -> list[bytes | Refusal]:
        """The complete lines (and refusals) `chunk` ends."""
        out: list[bytes | Refusal] = []
        pos = 0
        while pos < len(chunk):
            end = chunk.find(b"\n", pos)
            stop = len(chunk) if end < 0 else end
            if not self._skipping:
                self._parts.append(chunk[pos:stop])
                self._size += stop - pos
                if self._size > self.limit and not self._judged:
                    self._judged = True
                    request = _head_id(self._parts)
                    if request is not None and request in self.listing:
                        out.append(Refusal(request, self._size))
                        self._parts, self._skipping = [], True
            if end < 0:
                break
            pos = end + 1
            if not self._skipping:
                out.append(b"".join(self._parts))
            self._parts, self._size, self._judged, self._skipping = [], 0, False, False
        return out


@asynccontextmanager
async def bounded_stdio_client(
    server: Any, *, errlog: TextIO, limit: int, on_refused: Callable[[int], None]
) -> AsyncGenerator[Any, None]:
    """The SDK's stdio transport, refusing a ``tools/list`` answer over `limit` bytes.

    Args:
        server: ``mcp.StdioServerParameters``.
        errlog: Where the server's stderr goes.
        limit: Most bytes of one line that answers a ``tools/list`` request.
        on_refused: Called (on the loop) with the size read so far when a line is refused.
    """
    import anyio
    import anyio.lowlevel
    from mcp.client import stdio as sdk
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse

    process = await sdk._create_platform_compatible_process(
        command=await sdk._get_executable_command(server.command),
        args=server.args,
        env=sdk.get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, write_reader = anyio.create_memory_object_stream[Any](0)
    listing: set[object] = set()  # ids of our tools/list requests not answered yet
    writer_done = anyio.Event()

    def refused(request: object, size: int) -> Any:
        listing.discard(request)
        on_refused(size)
        error = ErrorData(
            code=LISTING_TOO_LARGE,
            message=f"tools/list answer refused after {size} bytes (limit {limit})",
        )
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request, error=error))  # type: ignore[arg-type]

    def line_message(data: bytes) -> Any:
        message = sdk._parse_line(data.decode(server.encoding, server.encoding_error_handler))
        answer = getattr(message, "message", None)
        if isinstance(answer, (JSONRPCResponse, JSONRPCError)):  # not a server's request
            listing.discard(answer.id)
        return message

    async def stdout_reader() -> None:
        assert process.stdout is not None
        lines = LineSplitter(limit, listing)
        try:
            async with read_writer:
                try:
                    while True:
                        for item in lines.feed(await process.stdout.receive()):
                            await read_writer.send(
                                line_message(item) if isinstance(item, bytes) else refused(*item)
                            )
                finally:
                    await sdk._drain_stdout(process)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the server ended, or our own shutdown closed the streams
        except (ConnectionError, OSError):
            sdk.logger.debug("contextchef: reading an MCP server's stdout failed", exc_info=True)

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for session_message in write_reader:
                    message = session_message.message
                    if isinstance(message, JSONRPCRequest) and message.method == "tools/list":
                        listing.add(message.id)
                    text = message.model_dump_json(by_alias=True, exclude_unset=True)
                    data = (text + "\n").encode(server.encoding, server.encoding_error_handler)
                    await process.stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # as the SDK: the server never leaks
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT):
                    await writer_done.wait()
                await sdk._stop_server_process(process)
                await sdk._aclose_all(read_stream, write_stream, read_writer, write_reader)
                await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()
