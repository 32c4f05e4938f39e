"""The rendered prefix (system and tools) of one view, strategy and system prompt.

Rendering the tool entries, their canonical text and the prefix fingerprint depends only
on the view, the adapter, the strategy, the system prompt and the loaded skills, so it
is kept in two places: per ledger (what this session sent), and in a small process-wide
LRU shared by every session with the same view object (sessions over one catalog share
their view; issue 14: fast start). A session never receives another's entry lists: each
gets its own copy of the rendered entries, since payloads hand them to the caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contextchef._cache import LruMap
from contextchef._json import shared_text
from contextchef._records import copier, plain
from contextchef.deferred._view import SessionView
from contextchef.providers import Adapter, RequestOptions
from contextchef.session._request import prefix_fingerprint

__all__ = ["RenderedPrefix", "rendered_prefix"]

SHARED_PREFIXES = 32
"""Rendered prefixes kept for other sessions with the same view (LRU)."""


@dataclass(frozen=True)
class RenderedPrefix:
    """The rendered prefix of one view, strategy and system prompt."""

    view: SessionView
    tools: list[Any]
    """The tool entries handed to every payload (checked against `pristine` each time)."""
    pristine: list[Any]
    """A private copy: what was rendered, for the ledger and to undo a caller's edit."""
    system_json: str
    tools_json: str
    fingerprint: str
    copy: Callable[[], list[Any]]  # a new copy of `pristine` for each session (`copier`)


_shared: LruMap[tuple[Any, ...], RenderedPrefix] = LruMap(SHARED_PREFIXES)


def rendered_prefix(
    *,
    adapter: Adapter,
    strategy_name: str,
    make_tools: Callable[[], list[Any]],
    view: SessionView,
    system: str,
    loaded_skills: frozenset[str],
    cache: dict[Any, Any],
    entries: list[Any] | None = None,
) -> RenderedPrefix:
    """The rendered prefix, from the ledger's `cache` when the view has not changed.

    Args:
        adapter: The target's adapter (a process-wide singleton).
        strategy_name: The strategy whose tool entries `make_tools` renders.
        make_tools: Renders the strategy's tool entries (called on a miss only).
        view: The session's tool view (shared by sessions over one catalog).
        system: The system prompt.
        loaded_skills: Skills loaded in the session (they unlock tools).
        cache: The ledger's own cache (cleared when it passes 8 entries).
        entries: Tool entries to send instead of the strategy's (tool-change mode keeps
            the ones first sent); cached by identity, never shared between sessions.
    """
    key: tuple[Any, ...] = (id(view), strategy_name, system, loaded_skills)
    if entries is not None:
        key = (*key, "entries", id(entries))
    hit = cache.get(key)
    if hit is None or hit.view is not view or (entries is not None and hit.pristine is not entries):
        shared_key = (id(adapter), *key) if entries is None else None
        hit = _lookup(shared_key, view) if shared_key is not None else None
        if hit is not None:
            hit = dataclasses.replace(hit, tools=hit.copy())
        else:
            hit = _render(adapter, make_tools, view, system, entries)
            if shared_key is not None:
                _keep(shared_key, hit)
        if len(cache) > 8:
            cache.clear()
        cache[key] = hit
    assert isinstance(hit, RenderedPrefix)
    if hit.tools != hit.pristine:  # a caller edited a payload's tools: not ours to send
        hit = cache[key] = dataclasses.replace(hit, tools=hit.copy())
    return hit


def _render(
    adapter: Adapter,
    make_tools: Callable[[], list[Any]],
    view: SessionView,
    system: str,
    entries: list[Any] | None,
) -> RenderedPrefix:
    if entries is None:
        entries = make_tools()
        pristine = plain(entries)
    else:
        pristine, entries = entries, plain(entries)
    bare = adapter.assemble(
        system=system, tools=entries, messages=[], options=RequestOptions(model="")
    )
    segments = adapter.segments(bare)
    return RenderedPrefix(
        view,
        entries,
        pristine,
        shared_text(segments["system"]),
        shared_text(segments["tools"]),
        prefix_fingerprint(segments["system"], entries),
        copier(pristine),
    )


def _lookup(key: tuple[Any, ...], view: SessionView) -> RenderedPrefix | None:
    hit = _shared.get(key)
    return hit if hit is not None and hit.view is view else None


def _keep(key: tuple[Any, ...], prefix: RenderedPrefix) -> None:
    # stored with its own copy of the entries: the first session's list is its own
    _shared.put(key, dataclasses.replace(prefix, tools=prefix.pristine))
