"""`McpHub`: live MCP servers as a session's tools (MCP spec revision 2025-11-25).

The hub connects servers (`McpServer`: stdio or streamable HTTP), registers their tools
with a `ContextChef` and dispatches allowed calls to them. Each MCP tool is an ordinary
tool of the session with a handler, so ``chef.execute`` / ``chef.aexecute`` (and
anything built on them) reach it through the one gate with no MCP-specific code there.

**Registration.** The servers given when the hub starts are registered like a catalog
(``source="mcp"``, ``server`` = the server's name, the group description = the server's
``instructions``), part of the cached prefix. Tools that arrive later (a
``notifications/tools/list_changed``, or a server added with `McpHub.add_server`) are
registered as runtime tools that keep their server: always deferred, searchable at
once, their wire name the one a registered server tool gets (``<server>__<name>``).

**Changes are applied at one point**: when the session compiles (its ``compile:start``
event), or when you call `McpHub.apply_changes`. Notifications arrive on the hub's
background loop; there they only trigger a re-list, whose result waits under a lock.
Applying waits for re-lists already under way (at most each server's timeout), then
diffs each listing against what the session has:

* a new tool is registered (runtime, see above), revealed (`ContextChef.reveal_tools`)
  and announced;
* a removed tool (or every tool of a server that disconnected) stays registered, so
  ``tools`` and the history keep their bytes, but the gate refuses it with a reason
  naming the server, and the change is announced;
* a changed definition replaces the tool (`ContextChef.replace_tool`) from then on.

A session restored from a snapshot (the next worker) has the tools the conversation had:
a tool withdrawn there and not listed here is registered from the snapshot, still
withdrawn (`contextchef.tools._recorded`). When a server lists such a tool again, or a
runtime tool the snapshot brought, the hub takes it as its own: its handler calls the
server, and a withdrawn one is admitted again, as a removed tool that came back.

Announcements are one per server (id ``mcp:<server>``), restated when they change.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from contextchef._errors import ContextChefError, UsageError, shown
from contextchef._json import canonical_dumps
from contextchef.history._messages import ToolResult
from contextchef.mcp._client import (
    McpConnection,
    McpListingTooLarge,
    McpServer,
    McpServerError,
    ServerLoop,
)
from contextchef.mcp._content import result_from_mcp
from contextchef.tools._catalogs import tool_from_dict
from contextchef.tools._mcp import Listed, checked_instructions, checked_listing
from contextchef.tools._text import escape_tags

if TYPE_CHECKING:
    from contextchef.session._chef import ContextChef

__all__ = ["McpChanges", "McpHub"]

logger = logging.getLogger("contextchef")

ServerLike = McpServer | str

QUIET = 0.25
"""Seconds without a ``list_changed`` before a coalesced re-list starts."""
MAX_WAIT = 5.0
"""Most seconds a coalesced re-list waits for quiet: a server that never stops reporting
changes is re-listed at most once per listing plus this."""


@dataclass(frozen=True, kw_only=True)
class McpChanges:
    """What one `McpHub.apply_changes` did, as wire names (each sorted).

    Attributes:
        added: Tools registered (new servers' tools included).
        removed: Tools the gate now refuses (removed, or their server disconnected).
        changed: Tools whose definition was replaced.
        restored: Removed tools that came back unchanged.
    """

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    restored: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.restored)


def as_server(item: ServerLike) -> McpServer:
    """An `McpServer` from itself, a command line or a URL.

    Raises:
        UsageError: Anything else, or a command line that cannot be split.
    """
    return item if isinstance(item, McpServer) else McpServer.parse(item)


class McpHub:
    """Live MCP servers feeding one `ContextChef` (see the module docstring).

    Use it as a context manager (``with`` for sync hosts, ``async with`` for async
    ones), or call `start` / `close`. Handlers work from both: called where no event
    loop runs they block until the server answers; inside a running loop they return
    an awaitable (``chef.aexecute`` awaits it; ``chef.execute`` there raises
    `UsageError`, as for any async handler). After `close` the tools stay registered
    and their calls answer that the server is not connected.

    Args:
        chef: The session.
        servers: Servers to connect at `start` (`McpServer`, a command line or a URL).
        announce: Announce added and removed tools (``chef.announce``).
        reveal: Reveal added tools (``chef.reveal_tools``): the gate admits them under
            ``require_search``, and models that take tool changes get them added.

    Attributes:
        relists: How many ``tools/list`` re-lists the hub has started (changes, added
            servers), debounced as `_relist` says; for monitoring.

    Raises:
        UsageError: `chef` is not a `ContextChef`, or a server is given in a shape that is
            not a server.
    """

    def __init__(
        self,
        chef: ContextChef,
        servers: Iterable[ServerLike] = (),
        *,
        announce: bool = True,
        reveal: bool = True,
    ) -> None:
        from contextchef.session._chef import ContextChef  # no import circle at load

        if not isinstance(chef, ContextChef):
            raise UsageError(f"McpHub needs a ContextChef, got {type(chef).__name__}")
        if isinstance(servers, (str, McpServer)):
            servers = [servers]
        if isinstance(servers, Mapping) or not isinstance(servers, Iterable):
            raise UsageError("servers must be a list of McpServer values, command lines or URLs")
        self._chef = chef
        self._initial = [as_server(s) for s in servers]
        self._announce, self._reveal = announce, reveal
        self._loop: ServerLoop | None = None
        self._conns: dict[str, McpConnection] = {}
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[Mapping[str, Any], ...] | None] = {}
        self._inflight: dict[str, concurrent.futures.Future[None]] = {}  # one per server
        self._again: set[str] = set()  # servers that changed while being re-listed
        self._waiting: set[str] = set()  # servers whose next listing waits for quiet
        self._last_note: dict[str, float] = {}  # when each server last reported a change
        self.relists = 0
        self._live: dict[str, dict[str, Mapping[str, Any]]] = {}  # what each server lists
        self._defs: dict[tuple[str, str], Mapping[str, Any]] = {}  # what the session has
        self._removed: dict[str, str] = {}
        self._notes: dict[str, dict[str, list[str]]] = {}
        self._started = False

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> McpHub:
        """Connect the servers given at construction and register their tools.

        Raises:
            McpServerError: A server did not start, answer or list its tools (every
                server connected so far is closed again).
            ToolNameConflictError, InvalidToolError: As for ``chef.register_tools``.
        """
        if self._started:
            return self
        self._loop = ServerLoop()
        self._started = True
        try:
            for spec in self._initial:
                conn = self._connect(spec)
                listing = self._run(conn.list_tools())
                self._register_static(conn.name, listing.instructions, listing.tools)
        except BaseException:
            self.close()
            raise
        self._chef.on("compile:start", self._on_compile)
        return self

    def close(self) -> None:
        """Close every connection (stdio servers exit) and stop the background loop."""
        if self._loop is None:
            return
        loop, self._loop = self._loop, None
        for conn in list(self._conns.values()):
            with contextlib.suppress(Exception):  # best effort: the process may be gone
                loop.run(conn.close())
        loop.stop()
        self._chef.off("compile:start", self._on_compile)

    def __enter__(self) -> McpHub:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> McpHub:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.close)

    # -- servers -------------------------------------------------------------------------

    @property
    def servers(self) -> tuple[str, ...]:
        """Names of the servers connected now, sorted."""
        return tuple(sorted(n for n, c in self._conns.items() if c.alive))

    def instructions(self, server: str) -> str:
        """A connected server's ``instructions`` (``""`` if none or unknown)."""
        conn = self._conns.get(server)
        return conn.instructions if conn is not None else ""

    def definition(self, wire_name: str) -> Mapping[str, Any] | None:
        """The raw MCP definition behind a wire name, as the server last listed it."""
        tool = self._chef.view.by_wire_name.get(wire_name)
        if tool is None or tool.server is None:
            return None
        return self._live.get(tool.server, {}).get(tool.name)

    def add_server(self, server: ServerLike) -> str:
        """Connect a server mid-session; its tools arrive at the next compile.

        Returns:
            The server's name.

        Raises:
            McpServerError: It did not start or answer, or its name is taken.
        """
        conn = self._connect(as_server(server))
        self._relist(conn)
        return conn.name

    def remove_server(self, name: str) -> None:
        """Disconnect a server; from the next compile the gate refuses its tools.

        Raises:
            UsageError: No connected server has that name.
        """
        conn = self._conns.get(name) if isinstance(name, str) else None
        if conn is None:
            raise UsageError(f"no MCP server {shown(name)} is connected; have {list(self.servers)}")
        self._run(conn.close())

    def _connect(self, spec: McpServer) -> McpConnection:
        if self._loop is None:
            raise UsageError("the McpHub is not started: use `with McpHub(...)` or .start()")
        conn = McpConnection(spec, self._changed)
        self._run(conn.open())
        old = self._conns.get(conn.name)
        if old is not None and old.alive:
            self._run(conn.close())
            raise McpServerError(
                f"two MCP servers are named {shown(conn.name)}; give one a name "
                f"(McpServer(..., name=...))",
                server=conn.name,
            )
        self._conns[conn.name] = conn
        return conn

    def _run(self, coro: Any) -> Any:
        assert self._loop is not None
        return self._loop.run(coro)

    # -- changes (background loop) -------------------------------------------------------

    def _changed(self, conn: McpConnection) -> None:
        """On the loop thread: the server's tools changed, or it disconnected."""
        if not conn.alive:
            with self._lock:
                self._pending[conn.name] = None
            return
        self._relist(conn)

    def _relist(self, conn: McpConnection) -> None:
        """Re-list `conn`'s tools, debounced (see `QUIET`).

        One listing is in flight per server. Changes reported meanwhile are coalesced
        into one more listing, started once the server has been quiet for `QUIET`
        seconds (at most `MAX_WAIT` after the first listing ended); changes reported
        while that one waits are covered by it.
        """
        name = conn.name
        with self._lock:
            self._last_note[name] = time.monotonic()
            if name in self._waiting:
                return
            running = self._inflight.get(name)
            if running is not None and not running.done():
                self._again.add(name)
                return
            done = self._start(name)
        assert self._loop is not None
        self._loop.submit(self._fetch(conn, done))

    def _start(self, name: str) -> concurrent.futures.Future[None]:
        """(Under the lock.) A listing of server `name` begins."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._inflight[name] = done
        self.relists += 1
        return done

    async def _fetch(self, conn: McpConnection, done: concurrent.futures.Future[None]) -> None:
        name = conn.name
        keep, found = False, None
        try:
            found = (await conn.list_tools()).tools
        except McpServerError as exc:
            if keep := (conn.alive and isinstance(exc, McpListingTooLarge)):
                logger.warning("contextchef: %s; the server's tools stay as they were", exc)
        finally:
            with self._lock:
                if not keep:
                    self._pending[name] = found
                again = name in self._again
                self._again.discard(name)
                if again:
                    self._waiting.add(name)
                done.set_result(None)
        if not again:
            return
        ended = time.monotonic()
        while True:  # wait for the notifications to stop (or MAX_WAIT)
            now = time.monotonic()
            quiet = now - self._last_note.get(name, 0.0)
            if quiet >= QUIET or now - ended >= MAX_WAIT:
                break
            await asyncio.sleep(min(QUIET - quiet, MAX_WAIT - (now - ended)))
        with self._lock:
            self._waiting.discard(name)
            follow = self._start(name) if conn.alive and self._loop is not None else None
        if follow is not None:
            await self._fetch(conn, follow)

    # -- changes (the session's thread) --------------------------------------------------

    def _on_compile(self, event: object) -> None:
        self.apply_changes()

    def apply_changes(self) -> McpChanges:
        """Apply the tool changes servers reported (also runs at every compile).

        Waits for the re-list under way per server, if any (bounded by its server's
        timeout; never for a listing coalesced after it, which the next call applies),
        then registers new tools, refuses removed ones, replaces changed ones, and
        announces.

        Returns:
            What changed (wire names).
        """
        with self._lock:  # the listing under way per server, not those coalesced after it
            inflight = list(self._inflight.values())
        timeout = max((c.spec.timeout for c in self._conns.values()), default=30.0)
        concurrent.futures.wait(inflight, timeout=timeout)
        with self._lock:
            pending, self._pending = self._pending, {}
        out = McpChanges()
        for server in sorted(pending):
            out = _merged(out, self._apply(server, pending[server]))
        return out

    def _apply(self, server: str, tools: Sequence[Mapping[str, Any]] | None) -> McpChanges:
        old = self._live.get(server, {})
        try:
            new = self._checked(server, tools or ())
        except ContextChefError as exc:  # the session keeps what it has
            logger.warning("contextchef: MCP server %r: listing ignored: %s", server, exc)
            return McpChanges()
        registry = self._chef.registry
        added: list[str] = []
        removed: list[str] = []
        changed: list[str] = []
        restored: list[str] = []
        for name in sorted(set(old) - set(new)):
            wire = self._wire(server, name)
            if wire is not None and wire not in self._removed:
                why = "was removed by" if tools is not None else "is unavailable: disconnected"
                self._removed[wire] = f'Tool "{wire}" {why} MCP server "{server}".'
                self._chef._withdraw_tool(wire, self._removed[wire])
                removed.append(wire)
        kept: dict[str, Mapping[str, Any]] = {}
        for name, (checked, raw) in sorted(new.items()):
            wire = self._wire(server, name)
            try:
                if wire is None:
                    tool = tool_from_dict(checked, server=server, source="runtime")
                    handler = self._handler(server, str(raw["name"]))
                    self._chef.register_runtime_tool(tool, handler=handler)
                    added.append(registry.wire_name_for(registry.get(tool.key)))
                elif canonical_dumps(self._defs.get((server, name))) != canonical_dumps(checked):
                    current = registry.get((server, name))
                    if (server, name) not in self._defs:  # restored from a snapshot: no code
                        registry.attach(current.key, self._handler(server, str(raw["name"])))
                    self._chef.replace_tool(
                        tool_from_dict(checked, server=server, source=current.source)
                    )
                    changed.append(wire)
            except ContextChefError as exc:  # one bad definition never stops the compile
                logger.warning("contextchef: MCP server %r: tool %r ignored: %s", server, name, exc)
                if name in old:
                    kept[name] = old[name]  # the session keeps the last good definition
                continue
            kept[name] = raw
            self._defs[server, name] = checked
            back = self._removed.pop(wire, None) if wire is not None else None
            if wire is not None and (back is not None or wire in self._chef._state.withdrawn):
                self._chef._withdraw_tool(wire, None)
                restored.append(wire)
        self._live[server] = kept
        if added and self._reveal:
            with contextlib.suppress(ContextChefError):  # a mode hides some: still searchable
                self._chef.reveal_tools(*added)
        self._note(server, added, removed, restored)
        return McpChanges(
            added=tuple(added),
            removed=tuple(removed),
            changed=tuple(sorted(set(changed) - set(restored))),
            restored=tuple(restored),
        )

    def _wire(self, server: str, name: str) -> str | None:
        for tool in self._chef.view.by_own_name.get(name, ()):
            if tool.server == server:
                return self._chef.registry.wire_name_for(tool)
        return None

    def _checked(self, server: str, tools: Sequence[Mapping[str, Any]]) -> dict[str, Listed]:
        """The server's tools by the name the session keeps, each (checked, as listed).

        The one path every MCP listing takes (`contextchef.tools._mcp.checked_listing`),
        with the server's `McpServer.rules`.

        Raises:
            InvalidToolError, CatalogFormatError, McpListingTooLarge: As for
                `checked_listing`.
        """
        return checked_listing(tools, server=server, rules=self._conns[server].spec.rules)

    def _register_static(
        self, server: str, instructions: str, tools: Sequence[Mapping[str, Any]]
    ) -> None:
        listed = self._checked(server, tools)
        built = [tool_from_dict(c.tool, server=server, source="mcp") for c in listed.values()]
        handlers = {t.name: self._handler(server, str(listed[t.name].raw["name"])) for t in built}
        description = checked_instructions(instructions, self._conns[server].spec.rules)
        self._chef.register_tools(
            built, server=server, server_description=description, handlers=handlers
        )
        self._live[server] = {name: c.raw for name, c in listed.items()}
        self._defs.update({(server, name): c.tool for name, c in listed.items()})

    def _note(self, server: str, added: list[str], removed: list[str], back: list[str]) -> None:
        if not (added or removed or back) or not self._announce:
            return
        notes = self._notes.setdefault(server, {"added": [], "removed": []})
        notes["added"] = sorted({*notes["added"], *added, *back} - set(removed))
        notes["removed"] = sorted({*notes["removed"], *removed} - set(added) - set(back))
        parts = []
        if notes["added"]:
            parts.append("new tools: " + ", ".join(notes["added"]))
        if notes["removed"]:
            parts.append("removed (calls are refused): " + ", ".join(notes["removed"]))
        if parts:
            text = f'MCP server "{escape_tags(server)}": ' + "; ".join(parts)
            self._chef.announce(f"mcp:{server}", text)
        else:
            self._chef.retract_announcement(f"mcp:{server}")

    # -- dispatch ------------------------------------------------------------------------

    def _handler(self, server: str, name: str) -> Any:
        """The handler registered for the MCP tool `name` of `server`."""

        def run(**arguments: Any) -> ToolResult | Awaitable[ToolResult]:
            conn = self._conns.get(server)
            if conn is None or self._loop is None:
                return _error(f'MCP server "{server}" is not connected')
            future = self._loop.submit(conn.call_tool(name, arguments))
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return _mapped(future.result())
            return _awaited(asyncio.wrap_future(future))

        run.__name__ = f"mcp_{name}"
        return run


async def _awaited(future: Awaitable[dict[str, Any]]) -> ToolResult:
    return _mapped(await future)


def _mapped(raw: Mapping[str, Any]) -> ToolResult:
    # the call id and wire name are set by the session when it builds the result
    return result_from_mcp(raw, call_id="mcp", name="mcp")


def _error(text: str) -> ToolResult:
    return ToolResult(call_id="mcp", name="mcp", content=text, is_error=True)


def _merged(a: McpChanges, b: McpChanges) -> McpChanges:
    return McpChanges(
        added=tuple(sorted({*a.added, *b.added})),
        removed=tuple(sorted({*a.removed, *b.removed})),
        changed=tuple(sorted({*a.changed, *b.changed})),
        restored=tuple(sorted({*a.restored, *b.restored})),
    )
