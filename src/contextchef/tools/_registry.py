"""`Registry`: every tool the agent can reach, in a deterministic order (tools layer)."""

from __future__ import annotations

import bisect
import hashlib
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextchef._cache import LruMap
from contextchef._errors import ToolNameConflictError, UnknownToolError, shown
from contextchef._json import canonical_dumps
from contextchef._overlay import Overlay
from contextchef.tools._names import RESERVED_NAMES, server_name, wire_name
from contextchef.tools._tool import Tool

__all__ = ["Handler", "Registry", "ToolKey", "tool_digest"]

ToolKey = tuple[str, str]
"""A tool's identity: (origin, name)."""

Handler = Callable[..., Any]
"""A Python callable that runs a tool: called with the arguments as keyword arguments;
may be a coroutine function."""

_ORIGIN_RANK = {"builtin": 0, "runtime": 2, "library": 3}

_INSERT_LIMIT = 64
"""Batches up to this size are inserted in place (bisect); larger ones re-sort."""


SHARED_STATES = 64
"""How many registry states of declared-tool sets are kept for other sessions."""

SHARED_SETS = 1024
"""How many checked sets of declared-tool batches are kept (small: no containers)."""


@dataclass(frozen=True, eq=False)
class _Set:
    """Batches of declared tools registered in turn on an empty registry, checked.

    A session registering the same tool objects in the same batches (and naming rule)
    walks these instead of checking each batch again: each batch is one lookup, and
    nothing is built per batch. The registry state of a set is built at its first use
    and kept in `_states`, one per set (issue 27: 57 catalogs were a chain of 57 states).
    """

    parent: _Set | None
    batch: tuple[Tool, ...]
    added: tuple[Tool, ...]
    """The batch's tools in registry order (what `Registry.add` returns)."""
    templated: bool
    """Whether any tool of the set has a template description."""

    def batches(self, since: _Set | None) -> list[tuple[Tool, ...]]:
        """The batches after `since` (an ancestor, or None: all), first first."""
        out: list[tuple[Tool, ...]] = []
        node: _Set | None = self
        while node is not None and node is not since:
            out.append(node.batch)
            node = node.parent
        return out[::-1]


@dataclass(frozen=True, eq=False)
class _State:
    """Registry contents of a `_Set`, shared read-only between sessions.

    A session whose tools are that set adopts this state instead of building its own
    dicts and order (issue 14: shared catalog state). The containers are never changed
    in place while shared: a registry copies them before its first own change.
    """

    of: _Set
    tools: MutableMapping[ToolKey, Tool]
    wire: MutableMapping[str, ToolKey]
    wire_of: MutableMapping[ToolKey, str]
    digest: MutableMapping[ToolKey, bytes]
    order: list[Tool]
    order_keys: list[tuple[int, str, str]]
    order_digests: list[bytes]
    ordered: tuple[Tool, ...]
    fingerprint: str
    hashers: dict[int, Any] = field(default_factory=dict)
    """SHA-256 states over the first N digests (for fingerprints with runtime tools)."""

    def hasher(self, count: int) -> Any:
        """A SHA-256 state that has seen the first `count` tool digests (copy before use)."""
        found = self.hashers.get(count)
        if found is None:
            found = hashlib.sha256(b"".join(self.order_digests[:count]))
            self.hashers[count] = found
        return found


_SetKey = tuple[bool, int, "int | tuple[int, ...]"]
"""(naming rule, id of the parent set, id of the batch tuple or the ids of its tools)."""

_sets: LruMap[_SetKey, _Set] = LruMap(SHARED_SETS)
_states: LruMap[tuple[bool, int], _State] = LruMap(SHARED_STATES)
"""Keyed by (naming rule, id of the set); a hit is checked by identity (``of``)."""


def _same(a: Sequence[Tool], b: Sequence[Tool]) -> bool:
    """Whether two batches hold the same tool objects in the same order."""
    return a is b or (len(a) == len(b) and all(map(operator.is_, a, b)))


def _sort_key(tool: Tool) -> tuple[int, str, str]:
    return (_ORIGIN_RANK.get(tool.origin, 1), tool.origin, tool.name)


def tool_digest(tool: Tool, wire: str) -> bytes:
    """SHA-256 of a tool's definition under `wire` (computed once per tool and wire)."""

    def make() -> bytes:
        text = canonical_dumps(
            [wire, tool.origin, tool.description, tool.input_schema, list(tool.tags)]
        )
        return hashlib.sha256(text.encode()).digest()

    digest: bytes = tool._derive("registry digest", wire, make)
    return digest


class Registry:
    """The set of registered tools, their wire names and optional handlers.

    Order never depends on insertion order: tools are sorted builtin first, then grouped
    (MCP) tools by server and name, then runtime tools, then library-owned tools.
    Registration is atomic: a batch
    with any conflict raises and leaves the registry unchanged.

    Args:
        qualify: Give grouped/MCP tools wire names prefixed with their server (see
            `contextchef.wire_name`). With False, equal bare names from different origins
            are an error instead.
    """

    def __init__(self, *, qualify: bool = True) -> None:
        self._qualify = qualify
        self._tools: MutableMapping[ToolKey, Tool] = {}
        self._wire: MutableMapping[str, ToolKey] = {}
        self._handlers: dict[ToolKey, Handler] = {}
        self._server_descriptions: dict[str, str] = {}
        self._ordered: tuple[Tool, ...] = ()
        # registry order, kept in place so that adding a few tools (runtime tools) costs
        # O(log N) comparisons plus a memory move, not a re-sort of every tool
        self._order: list[Tool] = []
        self._order_keys: list[tuple[int, str, str]] = []
        self._order_digests: list[bytes] = []
        self._full_fingerprint: str | None = None
        self._wire_of: MutableMapping[ToolKey, str] = {}
        self._digest: MutableMapping[ToolKey, bytes] = {}
        # the set of declared batches this registry's tools are (None: empty, or changed
        # otherwise), the set the containers below hold so far, and whether they lag
        # behind `_set` or are not yet its shared state (settled at the first read)
        self._set: _Set | None = None
        self._applied: _Set | None = None
        self._unsettled = False
        # the shared state the containers above alias (None: they are this registry's own)
        self._state: _State | None = None
        # runtime tools over a shared state: overlays on its maps, and their own order
        # (they sort after every declared tool, before library tools: at index `_cut`)
        self._layered = False
        self._cut = 0
        self._rt_tools: list[Tool] = []
        self._rt_keys: list[tuple[int, str, str]] = []
        self._rt_digests: list[bytes] = []

    # -- registration --------------------------------------------------------------------

    @property
    def qualify(self) -> bool:
        """Whether grouped/MCP tools' wire names carry their server."""
        return self._qualify

    def wire_name_for(self, tool: Tool) -> str:
        """The provider-legal name of `tool` under this registry's naming rule."""
        if self._unsettled:
            self._settle()
        return self._wire_name(tool)

    def _wire_name(self, tool: Tool) -> str:
        known = self._wire_of.get(tool.key)
        if known is not None and self._tools.get(tool.key) is tool:
            return known
        return wire_name(tool.origin, tool.name, server=tool.server, qualify=self._qualify)

    def add(
        self,
        tools: Iterable[Tool],
        *,
        handlers: Mapping[ToolKey, Handler] | None = None,
    ) -> tuple[Tool, ...]:
        """Register tools atomically.

        A batch of declared tools on a registry holding nothing but such batches is
        checked once per process for the same tool objects after the same batches: a
        session registering 57 shared catalogs looks each one up, and adopts the
        registry state of the whole set at its first read (issue 27, item 3).

        Args:
            tools: Tools to add.
            handlers: Optional Python callables keyed by (origin, name).

        Returns:
            The added tools, in registry order.

        Raises:
            ToolNameConflictError: Two tools share (origin, name), or two would get the
                same wire name; the message lists every clash with both origins.
        """
        batch = tools if isinstance(tools, tuple) else list(tools)
        parent, share_key = self._share_key(batch)
        hit = None if share_key is None else _sets.get(share_key)
        if hit is not None and hit.parent is parent and _same(hit.batch, batch):
            self._set, self._unsettled = hit, True  # nothing of them is checked again
            self._handlers.update(handlers or {})
            return hit.added
        if any(t.source == "runtime" for t in batch):
            share_key = None  # runtime tools are private to their session
        if self._unsettled:  # a private change starts from the set's shared state
            self._catch_up() if share_key is not None else self._settle()
        clashes: dict[str, set[str]] = {}
        names: dict[str, set[str]] = {}  # wire name -> the clashing tools' own names
        keys: dict[ToolKey, Tool] = {}
        wires: dict[str, ToolKey] = {}
        for tool in batch:
            if tool.key in self._tools or tool.key in keys:
                clashes.setdefault(tool.name, set()).add(f"{tool.origin} (registered twice)")
                continue
            keys[tool.key] = tool
            wire = self._wire_name(tool)
            if wire in RESERVED_NAMES and tool.server is not None and tool.source != "library":
                clashes.setdefault(wire, set()).update({"contextchef (reserved)", tool.origin})
            other = self._wire.get(wire) or wires.get(wire)
            if other is not None:
                clashes.setdefault(wire, set()).update({other[0], tool.origin})
                names.setdefault(wire, set()).update({other[1], tool.name})
            wires[wire] = tool.key
        if clashes:
            self._raise_conflicts(clashes, names)
        # runtime tools without a server sort after every declared tool: an overlay holds
        # them; anything else (a runtime tool of an MCP server sorts among its server's
        # tools) needs this registry's own copy
        if self._state is not None and all(t.origin == "runtime" for t in keys.values()):
            self._layer()
        else:
            self._own()
        added = self._insert(keys, wires)
        self._handlers.update(handlers or {})
        if share_key is None:
            self._set = self._applied = None  # tools of its own: never shared from here
        else:
            templated = any(t.template for t in added) or bool(parent and parent.templated)
            made = _Set(parent, tuple(batch), tuple(added), templated)
            self._set = self._applied = _sets.setdefault(share_key, made)
            self._unsettled = True
        return tuple(added)

    def _insert(self, keys: Mapping[ToolKey, Tool], wires: Mapping[str, ToolKey]) -> list[Tool]:
        """Put checked tools (by key; wire name -> key) into the containers."""
        self._tools.update(keys)
        self._wire.update(wires)
        for wire, key in wires.items():
            self._wire_of[key] = wire
            self._digest[key] = self._tool_digest(keys[key], wire)
        added = sorted(keys.values(), key=_sort_key)
        self._place(added)
        return added

    # -- sharing between sessions ----------------------------------------------------------

    def _share_key(self, batch: Sequence[Tool]) -> tuple[_Set | None, _SetKey | None]:
        """(parent set, cache key) for a batch that may be shared, else (None, None).

        Batches of declared tools are shared, only on an empty registry or one holding a
        set (`_Set`). Keys hold object ids: a tuple's own (a loaded `Catalog`'s ``tools``,
        so a session registering it again pays nothing per tool: issue 27), a list's
        tools' ids; the kept set holds those objects alive and a hit is checked by identity.
        """
        if not batch or (self._set is None and self._tools):
            return None, None
        ids = id(batch) if isinstance(batch, tuple) else tuple(map(id, batch))
        return self._set, (self._qualify, id(self._set), ids)

    def _settle(self) -> None:
        """The containers hold `_set`'s tools, as the state every session of it shares."""
        self._unsettled = False
        self._catch_up()
        if self._set is not None and (self._state is None or self._state.of is not self._set):
            state = _State(
                of=self._set,
                tools=self._tools,
                wire=self._wire,
                wire_of=self._wire_of,
                digest=self._digest,
                order=self._order,
                order_keys=self._order_keys,
                order_digests=self._order_digests,
                ordered=self._ordered,
                fingerprint=self.fingerprint(),
            )
            self._adopt(_states.setdefault((self._qualify, id(self._set)), state))

    def _catch_up(self) -> None:
        """Bring the containers up to `_set` (its kept state, else its batches added)."""
        if self._applied is self._set or self._set is None:
            return
        kept = _states.get((self._qualify, id(self._set)))
        if kept is not None and kept.of is self._set:
            self._adopt(kept)
            return
        tools = [t for batch in self._set.batches(self._applied) for t in batch]
        self._own()  # checked when the set was made: no clash to look for
        self._insert({t.key: t for t in tools}, {self._wire_name(t): t.key for t in tools})
        self._applied = self._set

    def _adopt(self, state: _State) -> None:
        self._state = state
        self._set = self._applied = state.of
        self._tools, self._wire = state.tools, state.wire
        self._wire_of, self._digest = state.wire_of, state.digest
        self._order, self._order_keys = state.order, state.order_keys
        self._order_digests, self._ordered = state.order_digests, state.ordered
        self._full_fingerprint = state.fingerprint

    def _layer(self) -> None:
        """Runtime tools over a shared state: private top layers, nothing copied."""
        state = self._state
        if self._layered or state is None:
            return
        self._layered = True
        self._tools, self._wire = Overlay(state.tools), Overlay(state.wire)
        self._wire_of, self._digest = Overlay(state.wire_of), Overlay(state.digest)
        self._cut = bisect.bisect_left(state.order_keys, (_ORIGIN_RANK["runtime"], "", ""))
        self._rt_tools, self._rt_keys, self._rt_digests = [], [], []

    def _own(self) -> None:
        """Copy shared containers before changing them (copy-on-write)."""
        if self._state is None:
            return
        self._state = None
        if self._layered:  # materialize the overlays and the merged order
            self._layered = False
            self._order = list(self._ordered)
            self._order_keys = [_sort_key(t) for t in self._order]
            self._order_digests = [self._digest[t.key] for t in self._order]
            self._rt_tools, self._rt_keys, self._rt_digests = [], [], []
        else:
            self._order, self._order_keys = list(self._order), list(self._order_keys)
            self._order_digests = list(self._order_digests)
        self._tools, self._wire = dict(self._tools), dict(self._wire)
        self._wire_of, self._digest = dict(self._wire_of), dict(self._digest)

    def _place(self, added: list[Tool]) -> None:
        """Put newly registered tools (sorted) into registry order."""
        if self._layered and self._state is not None:
            for tool in added:
                sort_key = _sort_key(tool)
                at = bisect.bisect_left(self._rt_keys, sort_key)
                self._rt_tools.insert(at, tool)
                self._rt_keys.insert(at, sort_key)
                self._rt_digests.insert(at, self._digest[tool.key])
            base, cut = self._state.ordered, self._cut
            self._ordered = base[:cut] + tuple(self._rt_tools) + base[cut:]
            self._full_fingerprint = None
            return
        if len(added) <= _INSERT_LIMIT:
            for tool in added:
                sort_key = _sort_key(tool)
                at = bisect.bisect_left(self._order_keys, sort_key)
                self._order.insert(at, tool)
                self._order_keys.insert(at, sort_key)
                self._order_digests.insert(at, self._digest[tool.key])
        else:
            self._order = sorted(self._tools.values(), key=_sort_key)
            self._order_keys = [_sort_key(t) for t in self._order]
            self._order_digests = [self._digest[t.key] for t in self._order]
        self._ordered = tuple(self._order)
        self._full_fingerprint = None

    def _raise_conflicts(
        self, clashes: Mapping[str, set[str]], names: Mapping[str, set[str]]
    ) -> None:
        conflicts = [(name, tuple(sorted(origins))) for name, origins in sorted(clashes.items())]
        first = conflicts[:5]

        def tools(wire: str) -> str:  # own names that differ from the wire name they share
            own = sorted(names.get(wire, ()))
            return f" (tools {' and '.join(map(shown, own))})" if own != [wire] and own else ""

        listed = "; ".join(
            f"{shown(name)} from {' and '.join(origins)}{tools(name)}" for name, origins in first
        )
        if len(conflicts) > len(first):
            listed += f"; and {len(conflicts) - len(first)} more"
        servers = sorted({o for _, origins in conflicts for o in origins if o in self._servers()})
        if not self._qualify:
            hint = (
                "rename one of each pair, or keep server qualification on "
                "(ContextChef(qualify=True), the default)"
            )
        elif servers:
            hint = (
                f"server(s) {', '.join(map(repr, servers))} already have tools with these "
                "names; register the new tools under another server name (e.g. "
                "load_catalog(path, server='other-name')) or rename them"
            )
        else:
            hint = "rename one of each pair or register them under different server names"
        raise ToolNameConflictError(
            f"{len(conflicts)} tool name clash(es): {listed}. Nothing was registered; {hint}.",
            conflicts=conflicts,
        )

    def replace(self, tool: Tool) -> Tool:
        """Replace the definition registered under `tool.key`; returns the old one.

        The wire name, the handler and the registry position stay (same key).

        Raises:
            UnknownToolError: No tool has that (origin, name).
        """
        old = self.get(tool.key)
        self._own()  # never write through to a state other sessions share
        self._set = self._applied = None
        digest = self._tool_digest(tool, self._wire_of[tool.key])
        self._tools[tool.key] = tool
        self._digest[tool.key] = digest
        at = self._order.index(old)
        self._order[at] = tool
        self._order_digests[at] = digest
        self._ordered = tuple(self._order)
        self._full_fingerprint = None
        return old

    def set_server_description(self, server: str, description: str) -> None:
        """Record a server's description (shown in the deferred directory).

        Raises:
            UsageError: `server` is not visible text on one line (`server_name`; it is
                kept NFKC-normalized, as a `Tool`'s ``server`` is).
        """
        self._server_descriptions[server_name(server)] = description

    @property
    def shared_state(self) -> object | None:
        """The state shared with other sessions that this registry holds unchanged, or None.

        Two registries with the same (identical) shared state and server descriptions
        hold the same tools in the same order; caches keyed by it may share derived values.
        """
        if self._unsettled:
            self._settle()
        return None if self._layered else self._state

    @property
    def shared_templated(self) -> bool:
        """Whether the shared state (`shared_state`) holds a template description."""
        if self._unsettled:
            self._settle()
        return self._state is not None and self._state.of.templated

    @property
    def server_descriptions(self) -> tuple[tuple[str, str], ...]:
        """Every recorded ``(server, description)``, sorted by server."""
        return tuple(sorted(self._server_descriptions.items()))

    def server_description(self, server: str) -> str:
        """A server's recorded description, ``""`` if none."""
        return self._server_descriptions.get(server, "")

    @property
    def servers(self) -> tuple[str, ...]:
        """Every server/group name known, with or without tools, sorted."""
        if self._unsettled:
            self._settle()
        return self._servers()

    def _servers(self) -> tuple[str, ...]:
        names = {t.server for t in self._tools.values() if t.server}
        return tuple(sorted(names | set(self._server_descriptions)))

    # -- lookup --------------------------------------------------------------------------

    @property
    def tools(self) -> tuple[Tool, ...]:
        """All tools in registry order."""
        if self._unsettled:
            self._settle()
        return self._ordered

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def get(self, key: ToolKey) -> Tool:
        """The tool with this (origin, name).

        Raises:
            UnknownToolError: No such tool.
        """
        if self._unsettled:
            self._settle()
        try:
            return self._tools[key]
        except KeyError:
            raise UnknownToolError(
                f"no tool {shown(key[1])} from {shown(key[0])} is registered",
                name=key[1],
                available=self._near(key[1]),
            ) from None

    def by_wire_name(self, wire: str) -> Tool | None:
        """The tool the model means by `wire`, or None (never a guess)."""
        if self._unsettled:
            self._settle()
        key = self._wire.get(wire)
        return self._tools[key] if key else None

    @property
    def wire_names(self) -> set[str]:
        """The wire name of every registered tool (a new set)."""
        if self._unsettled:
            self._settle()
        return set(self._wire)

    def attach(self, key: ToolKey, handler: Handler) -> None:
        """Set the handler of the registered tool `key` (one restored without its code)."""
        self.get(key)  # UnknownToolError when none
        self._handlers[key] = handler

    def handler(self, tool: Tool) -> Handler | None:
        """The Python callable registered for `tool`, if any."""
        return self._handlers.get(tool.key)

    def _near(self, name: str) -> tuple[str, ...]:
        import difflib

        return tuple(difflib.get_close_matches(name, list(self._wire), n=5))

    # -- identity ------------------------------------------------------------------------

    @staticmethod
    def _tool_digest(tool: Tool, wire: str) -> bytes:
        return tool_digest(tool, wire)

    def fingerprint(self, tools: Iterable[Tool] | None = None) -> str:
        """SHA-256 (hex) over the definitions of `tools` (default: all), in order.

        Per-tool digests are computed once at registration; the fingerprint of all tools is
        kept until the next registration.
        """
        if self._unsettled:
            self._settle()
        if tools is None:
            if self._full_fingerprint is None and self._layered and self._state is not None:
                # the shared digests before the runtime tools are hashed once per state
                h = self._state.hasher(self._cut).copy()
                h.update(b"".join(self._rt_digests))
                h.update(b"".join(self._state.order_digests[self._cut :]))
                self._full_fingerprint = h.hexdigest()
            elif self._full_fingerprint is None:
                # same value as updating with each digest in turn, in one C call
                joined = b"".join(self._order_digests)
                self._full_fingerprint = hashlib.sha256(joined).hexdigest()
            return self._full_fingerprint
        h = hashlib.sha256()
        for tool in tools if tools is not None else self._ordered:
            digest = self._digest.get(tool.key)
            if digest is None or self._tools.get(tool.key) is not tool:
                digest = self._tool_digest(tool, self.wire_name_for(tool))
            h.update(digest)
        return h.hexdigest()
