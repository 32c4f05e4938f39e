"""Connections to MCP servers on one background event loop (MCP spec revision 2025-11-25).

Every connection of a `contextchef.mcp.McpHub` lives on one event loop run by a daemon
thread, so sync and async hosts share one code path: a sync caller blocks on the call's
future, an async caller awaits it (`asyncio.wrap_future`), from any event loop.

The SDK's `mcp.Client` is used with ``mode="legacy"`` by default: the initialize
handshake of revision 2025-11-25, whose ``notifications/tools/list_changed`` is how a
server says its tools changed (2026-07-28 servers answer the handshake too). With
``McpServer(protocol="auto")`` the SDK probes ``server/discover`` first; on a 2026-07-28
connection the same change arrives as a ``ToolsListChanged`` event of a
``subscriptions/listen`` stream, which the connection keeps open when the server
declares ``tools.listChanged``.
Transport failures and timeouts never escape a call: they come back as the text of an
error result naming the server.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import shlex
import sys
import threading
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from contextchef._errors import (
    McpListingTooLarge,
    McpServerError,
    MissingExtraError,
    UsageError,
    shown,
)
from contextchef.mcp._stdio import LISTING_TOO_LARGE, bounded_stdio_client, sdk_has_helpers
from contextchef.tools._mcp import McpRules, check_listing_size
from contextchef.tools._names import server_name

__all__ = [
    "McpConnection",
    "McpListingTooLarge",
    "McpServer",
    "McpServerError",
    "ServerLoop",
    "ToolsListing",
]

T = TypeVar("T")

logger = logging.getLogger("contextchef")

_CONNECTION_CLOSED = -32000
"""The SDK's JSON-RPC error code for a closed transport (``mcp_types.CONNECTION_CLOSED``)."""

ENVELOPE_BYTES = 65_536
"""Bytes a stdio ``tools/list`` line may hold beyond ``max_listing_bytes`` (the JSON-RPC
envelope, the cursor) before `contextchef.mcp._stdio` gives it up unread."""

MAX_PAGES = 1000
"""Most ``tools/list`` pages read from one server (a guard against a cursor loop)."""


def _sdk() -> Any:
    try:
        import mcp
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise MissingExtraError(
            'contextchef.mcp needs the MCP SDK: pip install "contextchef[mcp]"',
            extra="mcp",
            missing=("mcp",),
        ) from exc
    return mcp


@dataclass(frozen=True, kw_only=True)
class McpServer:
    """How to reach one MCP server: a command (stdio) or a URL (streamable HTTP).

    Attributes:
        command: The program to start (stdio transport).
        args: Its arguments.
        env: Extra environment variables for it (added to the SDK's safe defaults).
        url: A streamable HTTP endpoint, e.g. ``http://127.0.0.1:8000/mcp``.
        name: The server's group name in the session; default: the name the server
            gives in its ``serverInfo``. Either must be visible text on one line
            (`contextchef.tools._names.server_name`, kept NFKC-normalized): a given name
            that is not raises `UsageError`, a reported one `McpServerError` when
            connecting (name the server yourself then).
        protocol: ``"legacy"`` (the 2025-11-25 handshake) or ``"auto"`` (2026-07-28
            when the server speaks it, else the handshake).
        timeout: Seconds one request may take before it becomes an error result.
        connect_timeout: Seconds to start (or reach) the server and finish the handshake.
        trust_annotations: Whether the server's tool annotations (read-only,
            destructive) are believed; see `McpRules`.
        max_tools: Most tools one listing may hold; see `McpRules`.
        max_listing_bytes: Largest listing accepted, in bytes; see `McpRules`.
        instructions_chars: Server instructions kept, in chars; see `McpRules`.
        description_chars: One tool description kept, in chars. These five are the
            rules every MCP listing goes through (`McpServer.rules` gives them as one
            `McpRules`), also a listing a host registers itself
            (`ContextChef.register_mcp_tools`).
    """

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    name: str | None = None
    protocol: Literal["legacy", "auto"] = "legacy"
    timeout: float = 30.0
    connect_timeout: float = 30.0
    trust_annotations: bool = False
    max_tools: int = 1_000
    max_listing_bytes: int = 5_000_000
    instructions_chars: int = 2_000
    description_chars: int = 2_000

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise UsageError("McpServer needs exactly one of command= (stdio) or url= (HTTP)")
        for label, value in (("command", self.command), ("url", self.url), ("name", self.name)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise UsageError(
                    f"McpServer {label} must be a non-empty string, got {shown(value)}"
                )
        if self.url is not None and not self.url.lower().startswith(("http://", "https://")):
            raise UsageError(
                f"McpServer url must be an http:// or https:// URL (streamable HTTP), got "
                f"{shown(self.url, 200)}; a stdio server is command= (and args=)"
            )
        if self.name is not None:
            object.__setattr__(self, "name", server_name(self.name, "McpServer name"))
        object.__setattr__(self, "args", tuple(str(a) for a in self.args))
        if self.protocol not in ("legacy", "auto"):
            raise UsageError(
                f"McpServer protocol is 'legacy' or 'auto', got {shown(self.protocol)}"
            )
        for label, seconds in (
            ("timeout", self.timeout),
            ("connect_timeout", self.connect_timeout),
        ):
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, (int, float))
                or not seconds > 0
            ):
                raise UsageError(f"McpServer {label} is seconds above 0, got {shown(seconds)}")
        self.rules  # noqa: B018 - checks the limits and the trust flag

    @classmethod
    def parse(cls, text: str, *, name: str | None = None) -> McpServer:
        """``"CMD ARGS"`` (shell-quoted; stdio) or an ``http(s)://`` URL.

        Raises:
            UsageError: An empty command line or unbalanced quotes.
        """
        if not isinstance(text, str):
            raise UsageError(f"an MCP server is a command line or URL, got {shown(text)}")
        if text.lower().startswith(("http://", "https://")):
            return cls(url=text, name=name)
        try:
            words = shlex.split(text)
        except ValueError as exc:
            raise UsageError(f"cannot split MCP command {shown(text, 200)}: {exc}") from exc
        if not words:
            raise UsageError("an MCP server command line is empty")
        return cls(command=words[0], args=tuple(words[1:]), name=name)

    @property
    def rules(self) -> McpRules:
        """What the session takes from this server (`McpRules`: trust, caps)."""
        return McpRules(
            trust_annotations=self.trust_annotations,
            max_tools=self.max_tools,
            max_listing_bytes=self.max_listing_bytes,
            instructions_chars=self.instructions_chars,
            description_chars=self.description_chars,
        )

    @property
    def label(self) -> str:
        """The name if given, else the command line or URL (for messages)."""
        return self.name or self.url or shlex.join([str(self.command), *self.args])


class ServerLoop:
    """An event loop on a daemon thread; coroutines are submitted from any thread."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="contextchef-mcp", daemon=True
        )
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the loop and wait for it (never call from the loop itself)."""
        return self.submit(coro).result()

    def call_soon(self, fn: Callable[[], object]) -> None:
        """Run `fn` on the loop thread."""
        self._loop.call_soon_threadsafe(fn)

    def stop(self) -> None:
        """Stop the loop and join its thread."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()


@dataclass(frozen=True, kw_only=True)
class ToolsListing:
    """One complete ``tools/list`` of a server (every page).

    Attributes:
        server: The server's group name.
        instructions: Its ``instructions`` (``""`` if none): the group's description.
        tools: The raw MCP tool definitions (camelCase JSON), in the server's order.
        pages: How many pages the listing took.
    """

    server: str
    instructions: str
    tools: tuple[Mapping[str, Any], ...]
    pages: int = 1


class McpConnection:
    """One live server connection; its methods run on the `ServerLoop`'s thread.

    Args:
        spec: The server.
        on_change: Called (on the loop thread) when the server reports that its tools
            changed, or when the connection ends (then with ``alive`` False).
    """

    def __init__(self, spec: McpServer, on_change: Callable[[McpConnection], None]) -> None:
        self.spec = spec
        self.name = spec.name or ""
        self.instructions = ""
        self.alive = False
        self._client: Any = None
        self._on_change = on_change
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._failure = ""
        self._refused_at = 0  # bytes of a tools/list line the transport gave up

    async def open(self) -> None:
        """Start the server (stdio) or connect (HTTP) and run the handshake.

        Raises:
            McpServerError: The server did not start or answer within its timeout.
        """
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # always retrieved
        self._stop = asyncio.Event()
        self._task = asyncio.ensure_future(self._hold(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.spec.connect_timeout)
        except Exception as exc:
            await self.close()
            raise McpServerError(
                f"MCP server {shown(self.spec.label, 200)} could not be connected: "
                f"{_describe(exc)}",
                server=self.spec.label,
            ) from None

    def _transport(self) -> Any:
        mcp = _sdk()
        if self.spec.url is not None:
            return self.spec.url
        from mcp.client.stdio import get_default_environment, stdio_client

        env = {**get_default_environment(), **dict(self.spec.env)}
        params = mcp.StdioServerParameters(
            command=self.spec.command or sys.executable, args=list(self.spec.args), env=env
        )
        if not sdk_has_helpers():
            return stdio_client(params, errlog=_errlog())
        limit = self.spec.max_listing_bytes + ENVELOPE_BYTES
        return bounded_stdio_client(
            params, errlog=_errlog(), limit=limit, on_refused=self._listing_refused
        )

    def _listing_refused(self, size: int) -> None:
        self._refused_at = size

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        """Own the SDK client for the connection's lifetime (enter and exit in one task)."""
        mcp = _sdk()

        async def handler(message: Any) -> None:
            if isinstance(message, mcp.types.ToolListChangedNotification):
                self._on_change(self)

        try:
            client = mcp.Client(
                self._transport(),
                mode=self.spec.protocol,
                message_handler=handler,
                cache=None,
            )
            async with client:
                self._client = client
                self.name = self.spec.name or _reported_name(client.server_info)
                self.instructions = client.instructions or ""
                self.alive = True
                ready.set_result(None)
                assert self._stop is not None
                listener = _listener(client, lambda: self._on_change(self))
                try:
                    await self._stop.wait()
                finally:
                    if listener is not None:
                        listener.cancel()
                        await asyncio.gather(listener, return_exceptions=True)
        except BaseException as exc:  # the server died, or never started
            self._failure = _describe(exc)
            if not ready.done():
                ready.set_exception(McpServerError(self._failure, server=self.spec.label))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            was_alive, self.alive, self._client = self.alive, False, None
            if was_alive:
                self._on_change(self)

    async def list_tools(self) -> ToolsListing:
        """Every page of ``tools/list``, as raw MCP definitions.

        Raises:
            McpServerError: The server is gone, failed, or did not answer in time.
        """
        tools: list[Mapping[str, Any]] = []
        cursor: str | None = None
        pages = size = 0
        rules = self.spec.rules
        try:
            while pages < MAX_PAGES:
                page = await asyncio.wait_for(
                    self._live().list_tools(cursor=cursor), self.spec.timeout
                )
                pages += 1
                for tool in page.tools:
                    tools.append(tool.model_dump(by_alias=True, exclude_none=True))
                    size += len(tool.model_dump_json(by_alias=True, exclude_none=True))
                    check_listing_size(len(tools), size, server=self.name, rules=rules)
                cursor = page.next_cursor
                if not cursor:
                    break
        except McpServerError:
            raise
        except Exception as exc:
            self._check_closed(exc)
            self._check_refused(exc)
            raise McpServerError(
                f"MCP server {shown(self.name)}: tools/list failed: {_describe(exc)}",
                server=self.name,
            ) from None
        return ToolsListing(
            server=self.name, instructions=self.instructions, tools=tuple(tools), pages=pages
        )

    def _check_refused(self, exc: BaseException) -> None:
        """Raise `McpListingTooLarge` if the stdio transport gave the listing up while reading.

        Raises:
            McpListingTooLarge: Naming the server, the limit and the bytes read.
        """
        size, self._refused_at = self._refused_at, 0
        if size and getattr(exc, "code", None) == LISTING_TOO_LARGE:
            raise McpListingTooLarge(
                f"MCP server {shown(self.name)}: tools/list holds more than "
                f"{self.spec.max_listing_bytes} bytes of tools (max_listing_bytes; one stdio "
                f"line passed {size} bytes and was dropped unread); the listing is refused. "
                "Raise the limit with McpServer(..., max_listing_bytes=...) if you trust "
                "this server.",
                server=self.name,
            ) from None

    def _live(self) -> Any:
        if self._client is None or not self.alive:
            why = f" ({self._failure})" if self._failure else ""
            raise McpServerError(
                f"MCP server {shown(self.name)} is not connected{why}", server=self.name
            )
        return self._client

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Call a tool by its MCP name; the result as JSON (camelCase keys).

        Never raises: a lost connection, a protocol error or a timeout comes back as
        ``{"content": [text naming the server], "isError": true}``.
        """
        try:
            result = await asyncio.wait_for(
                self._live().call_tool(name, dict(arguments)), self.spec.timeout
            )
            out: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True)
            return out
        except McpServerError as exc:
            text = f"{exc} (tool {shown(name)} was not run)"
        except (asyncio.TimeoutError, TimeoutError):
            text = (
                f"MCP server {shown(self.name)} did not answer {shown(name)} within "
                f"{self.spec.timeout:g} s"
            )
        except Exception as exc:
            self._check_closed(exc)
            text = f"MCP server {shown(self.name)} failed on {shown(name)}: {_describe(exc)}"
        return {"content": [{"type": "text", "text": text}], "isError": True}

    def _check_closed(self, exc: BaseException) -> None:
        """End the connection when `exc` says the transport closed (the server is gone).

        The SDK reports a dead stdio process or a dropped HTTP session on the next
        request (``MCPError`` "Connection closed"); the connection then ends, and the
        hub learns that the server disconnected.
        """
        closed = getattr(exc, "code", None) == _CONNECTION_CLOSED or type(exc).__name__ in (
            "ClosedResourceError",
            "BrokenResourceError",
            "EndOfStream",
        )
        if closed and self._stop is not None:
            self._failure = _describe(exc)
            self._stop.set()
            if self.alive:  # reported now, before the caller sees the error result
                self.alive = False
                self._on_change(self)

    async def close(self) -> None:
        """End the connection (stops a stdio server process)."""
        if self._stop is not None:
            self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                await asyncio.wait_for(task, 10)
            except BaseException:  # a dead transport may fail on exit; it is closed either way
                task.cancel()


def _listener(client: Any, changed: Callable[[], None]) -> asyncio.Task[None] | None:
    """On a 2026-07-28 connection, a task reporting the server's tool-list changes."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    tools = client.server_capabilities.tools
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (
        tools and tools.list_changed
    ):
        return None

    async def listen() -> None:
        try:
            async with client.listen(tools_list_changed=True) as events:
                async for _ in events:
                    changed()
        except Exception as exc:  # the stream ended with the connection: calls report it
            logger.debug("contextchef: MCP subscriptions/listen ended: %s", _describe(exc))

    return asyncio.ensure_future(listen())


def _errlog() -> Any:
    """Where a stdio server's stderr goes: ours, or the process's when ours has no file."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__
    return sys.stderr


def _reported_name(info: Any) -> str:
    """The group name a server reports (``serverInfo.name``), by `server_name`'s rule.

    A server that reports none is ``"mcp"``.

    Raises:
        McpServerError: The name is not visible text on one line (a zero-width or
            bidirectional character, a newline); the host can name the server itself.
    """
    reported = getattr(info, "name", None) if info is not None else None
    if reported is None or reported == "":
        return "mcp"
    try:
        return server_name(reported, "the name the MCP server reports (serverInfo.name)")
    except UsageError as exc:
        raise McpServerError(
            f"{exc}; the server is refused: give it a name of your own with "
            "McpServer(..., name='...')",
            server=reported if isinstance(reported, str) else shown(reported),
        ) from None


def _describe(exc: BaseException) -> str:
    """A one-line description of a (possibly grouped) exception."""
    while getattr(exc, "exceptions", None):  # an exception group: its first member
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
