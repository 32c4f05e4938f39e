"""Derived tool state shared read-only between sessions over the same catalog (issue 14).

Sessions that register the same catalog objects hold one shared registry state
(`Registry.shared_state`); everything derived from that state alone is built once and
kept here in small LRUs: the `SessionView` (for a given policy, config, namespaces,
toolkits and skills) and the search index. Entries are immutable once stored; a session
that changes its tools builds its own from then on. Thread-safe: each cache has a lock,
and a value built twice by racing threads is stored once (the first wins).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contextchef._cache import LruMap
from contextchef.deferred._groups import Namespace, Toolkit
from contextchef.deferred._meta import DeferredConfig
from contextchef.deferred._skills import Skill
from contextchef.exposure._policy import ExposurePolicy
from contextchef.tools._registry import Registry, tool_digest
from contextchef.tools._tool import Tool

if TYPE_CHECKING:  # the index module loads with the first index (issue 27, fast start)
    from contextchef.search._index import ToolIndex
    from contextchef.search._rankers import RankerConfig

__all__ = [
    "SHARED_INDEXES",
    "SHARED_VIEWS",
    "SharedView",
    "shared_index",
    "view_key",
    "views",
]


SHARED_VIEWS = 32
"""How many views of shared registry states are kept for other sessions."""


@dataclass(frozen=True, eq=False)
class SharedView:
    """A view built from a shared registry state, with the inputs it was built from."""

    state: object | None
    namespaces: tuple[Namespace, ...]
    toolkits: tuple[Toolkit, ...]
    skills: tuple[Skill, ...]
    view: Any
    """The `SessionView` (typed loosely: the view module imports this one)."""

    def matches(
        self,
        registry: Registry,
        namespaces: Sequence[Namespace],
        toolkits: Sequence[Toolkit],
        skills: Sequence[Skill],
    ) -> bool:
        pairs = [
            (self.namespaces, tuple(namespaces)),
            (self.toolkits, tuple(toolkits)),
            (self.skills, tuple(skills)),
        ]
        return registry.shared_state is self.state and all(
            len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True)) for a, b in pairs
        )


views: LruMap[tuple[object, ...], SharedView] = LruMap(SHARED_VIEWS)


def view_key(
    registry: Registry,
    policy: ExposurePolicy,
    config: DeferredConfig,
    namespaces: Sequence[Namespace],
    toolkits: Sequence[Toolkit],
    skills: Sequence[Skill],
) -> tuple[object, ...] | None:
    """A cache key when the view depends only on shared inputs, else None.

    A session whose registry still holds a shared catalog state (see
    `Registry.shared_state`) gets the view every such session gets: the view is a pure
    function of the tools, server descriptions, policy, config, namespaces, toolkits and
    skills, unless a description is a template (rendered with the session's variables).
    Unhashable parts are keyed by object id and checked by identity on a hit.
    """
    state = registry.shared_state
    if state is None or registry.shared_templated:  # known per state: no scan per session
        return None
    key = (
        id(state),
        registry.server_descriptions,
        policy,
        config,
        tuple(map(id, namespaces)),
        tuple(map(id, toolkits)),
        tuple(map(id, skills)),
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


SHARED_INDEXES = 16
"""Search indexes kept for reuse by sessions with the same searchable tools (LRU)."""

_shared: LruMap[str, ToolIndex] = LruMap(SHARED_INDEXES)


def shared_index(
    entries: list[tuple[Tool, str]],
    ranker: RankerConfig,
    groups: Mapping[str, str] | None = None,
) -> ToolIndex:
    """The index of `entries`, shared with every session that has exactly these entries.

    A `ToolIndex` is immutable (its lazily built corpus is built once, under a lock), so
    sessions over the same catalog share one instead of each building its own (issue
    14: shared catalog state). Keyed by each entry's name, wire name, definition digest
    and searched description, in order, by the ranker, and by the group descriptions of
    a two-level ranker (`groups`: server -> description).
    """
    h = hashlib.sha256(repr(ranker).encode())
    for server, description in sorted((groups or {}).items()):
        h.update(f"{server}\0{description}\0".encode())
    for tool, wire in entries:
        h.update(f"{tool.name}\0{wire}\0".encode())
        h.update(tool_digest(tool, wire))
    key = h.hexdigest()
    index = _shared.get(key)
    if index is None:
        from contextchef.search._index import ToolIndex

        index = _shared.setdefault(key, ToolIndex(entries, ranker=ranker, groups=groups))
    return index
