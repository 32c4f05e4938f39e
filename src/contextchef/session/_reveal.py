"""Tool changes mid-conversation, the session's side: when to ask, remembered answers.

On models that take them (`ModelRules.tool_changes`), a provider-native strategy keeps
the ``tools`` array it first sent (from the first request answered: `Ledger.bound`) and
states every later change to what the model may call at the end of the request. The
adapter plans them for its wire (`Adapter.plan_tool_changes`: Anthropic's
``tool_addition`` / ``tool_removal`` blocks, Responses' ``additional_tools`` items; the
rules are in those modules, the shared parts in
`contextchef.providers._tool_changes`). This module asks it once per view and state
(`plan_cached`), takes a fast path on the common turn (`changes_after`), and says when
what was sent names tools ``tools`` no longer declares (`stale`, in the providers layer).

`ToolState` is what the ledger's changes left, per mark, so a rolled-back edit rolls it
back too. Which tools the provider already revealed (``tool_reference`` blocks) is read
from the new messages of each compile (`Adapter.revealed_tools`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from contextchef.providers import Adapter, ModelRules
from contextchef.providers._stale import dangling, stale
from contextchef.providers._tool_changes import ToolChanges, ToolState, deferred, tool_names

__all__ = [
    "ToolChanges",
    "ToolState",
    "changes_after",
    "dangling",
    "defined_entries",
    "plan_cached",
    "stale",
    "tool_names",
]


def changes_after(
    adapter: Adapter,
    cache: dict[Any, Any],
    *,
    sent: list[Any],
    now: list[Any],
    state: ToolState,
    loaded: frozenset[str],
    rules: ModelRules,
    stable: frozenset[str],
    provider_search: bool = True,
) -> tuple[ToolChanges, ToolState]:
    """The tool changes one request states, and the tool state after them.

    `Adapter.plan_tool_changes` (through `plan_cached`), with a fast path for the common
    turn on a wire that adds declared tools by reference: the view sent is the view now
    (`now` is `sent`), so only a deferred tool loaded since can be added; the deferred
    names of `sent` are indexed once in `cache`.
    """
    by_reference = not adapter.profile.tool_changes_by_definition
    if now is sent and by_reference and not (state.defined or state.removed):
        return _loads_only(cache, sent, state, loaded)
    planned = plan_cached(
        adapter,
        cache,
        sent=sent,
        now=now,
        state=state,
        loaded=loaded,
        rules=rules,
        stable=stable,
        provider_search=provider_search,
    )
    return (ToolChanges(), state) if planned is None else (planned[1], planned[2])


def _loads_only(
    cache: dict[Any, Any], sent: list[Any], state: ToolState, loaded: frozenset[str]
) -> tuple[ToolChanges, ToolState]:
    """The additions by reference of the deferred tools of `sent` loaded since `state`."""
    key = ("deferred-names", id(sent))
    hit = cache.get(key)
    if hit is None or hit[0] is not sent:
        names = frozenset(
            t["name"] for t in sent if isinstance(t, Mapping) and deferred(t) and "name" in t
        )
        hit = cache[key] = (sent, names)
    add = tuple(sorted(n for n in loaded if n in hit[1] and not state.offered(n, False)))
    if not add:
        return ToolChanges(), state
    after = ToolState(
        added=state.added | set(add),
        removed=state.removed,
        defined=state.defined,
        revealed=state.revealed,
        sent=True,
    )
    return ToolChanges(add=add), after


def plan_cached(
    adapter: Adapter,
    cache: dict[Any, Any],
    *,
    sent: list[Any],
    now: list[Any],
    state: ToolState,
    loaded: frozenset[str],
    rules: ModelRules,
    stable: frozenset[str],
    provider_search: bool = True,
) -> tuple[list[Any], ToolChanges, ToolState] | None:
    """`Adapter.plan_tool_changes`, remembered for the same lists (by identity) and inputs.

    A compile asks twice (for the tools, then for the changes) and the next turns ask
    again with nothing changed; the answer is computed once.
    """
    key = ("plan", id(sent), id(now))
    hit = cache.get(key)
    args = (id(adapter), state, loaded, rules.inline_tools, stable, provider_search)
    if hit is not None and hit[0] is sent and hit[1] is now and hit[2] == args:
        result: tuple[list[Any], ToolChanges, ToolState] | None = hit[3]
        return result
    result = adapter.plan_tool_changes(
        sent=sent,
        now=now,
        state=state,
        loaded=loaded,
        rules=rules,
        stable=stable,
        provider_search=provider_search,
    )
    cache[key] = (sent, now, args, result)
    return result


def defined_entries(state: ToolState) -> list[dict[str, Any]]:
    """The tools `state` defined by tool changes, as declarations references resolve to.

    Marked ``defer_loading`` (declared, revealed by their definition): a Responses call
    to a flat function an ``additional_tools`` item defined comes back in a namespace
    named like it, as for a flat deferred function; one defined in a namespace keeps it.
    """
    return [{**json.loads(text), "defer_loading": True} for text in state.defined.values()]
