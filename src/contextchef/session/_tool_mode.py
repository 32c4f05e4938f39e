"""Which ``tools`` a compile keeps, and the tool changes it plans (`tool_mode`).

The planning itself is the adapter's (`Adapter.plan_tool_changes`, asked through
`contextchef.session._reveal.plan_cached`); this module decides when it applies and
feeds it one entry per tool (`tool_units`).
"""

from __future__ import annotations

from typing import Any, Protocol

from contextchef.deferred._view import SessionView
from contextchef.providers import Adapter, ModelRules
from contextchef.session._ledger import Ledger
from contextchef.session._reveal import ToolChanges, ToolState, plan_cached
from contextchef.session._state import SessionState
from contextchef.session._strategies import Strategy


class CompileInput(Protocol):
    """What planning reads of `contextchef.session._compile.CompileInput`."""

    @property
    def adapter(self) -> Adapter: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def strategy(self) -> Strategy: ...

    @property
    def state(self) -> SessionState: ...

    @property
    def view(self) -> SessionView: ...


__all__ = ["PROVIDER_SEARCH", "tool_mode", "tool_units", "units_now"]

PROVIDER_SEARCH = frozenset({"bm25", "regex", "hosted", "server"})
"""`Strategy.search` values where the provider's own search runs (not our ranker)."""


def tool_mode(
    inp: CompileInput,
    rules: ModelRules,
    fresh: list[Any],
    state: ToolState,
    *,
    bound: bool,
) -> tuple[list[Any], ToolChanges, ToolState] | None:
    """The planned tools when this compile states tool changes (`Adapter.plan_tool_changes`).

    That is when the strategy is provider-native and the model takes tool changes;
    otherwise None (the tools are the strategy's, and a difference from what was sent is
    an edit). The ``tools`` kept are those this ledger sent under the same strategy once
    a request of it was answered (`bound`, `Ledger.bound`); before that, the strategy's
    own for the view now (which may already reveal loaded tools): a request nobody
    answered binds nothing, so a mode set before the first answer shapes ``tools``
    directly rather than through ``tool_removal``.
    """
    ledger = inp.ledger
    if inp.strategy.native is None or not rules.tool_changes:
        return None
    same = bound and ledger.tools is not None and ledger.strategy == inp.strategy.name
    sent = ledger.tools if same and ledger.tools is not None else fresh
    withdrawn = inp.state.withdrawn
    if fresh is sent and not state.defined and not withdrawn and not state.removed:
        return sent, ToolChanges(), state  # same view: only loads can change
    units = tool_units(inp, sent)
    planned = plan_cached(
        inp.adapter,
        ledger.cache,
        sent=units,
        now=units_now(inp, fresh),
        state=state,
        loaded=frozenset(inp.state.loaded),
        rules=rules,
        stable=inp.view.wrapper_names,
        provider_search=inp.strategy.search in PROVIDER_SEARCH,
    )
    if planned is None or planned[0] is not units:
        return planned  # entries appended to the tools sent
    return sent, planned[1], planned[2]  # nothing appended: the entries sent stay


def units_now(inp: CompileInput, fresh: list[Any]) -> list[Any]:
    """`tool_units` of `fresh` less the tools their source withdrew: what may be called.

    Withdrawn tools (an MCP server removed them or disconnected) are then withdrawn by
    the planner like tools a mode hides, and added again when they return. The same
    list while nothing is withdrawn, and the same filtered list for the same withdrawals
    (remembered in the ledger's cache), so the planner's identity cache keeps hitting.
    """
    units = tool_units(inp, fresh)
    withdrawn = inp.state.withdrawn
    if not withdrawn:
        return units
    names = tuple(sorted(withdrawn))
    key = ("without", id(units))
    hit = inp.ledger.cache.get(key)
    if hit is None or hit[0] is not units or hit[1] != names:
        kept = [u for u in units if not (isinstance(u, dict) and u.get("name") in withdrawn)]
        hit = inp.ledger.cache[key] = (units, names, kept)
    out: list[Any] = hit[2]
    return out


def tool_units(inp: CompileInput, entries: list[Any]) -> list[Any]:
    """`Adapter.tool_units` of `entries`, the same list for the same `entries`.

    Remembered by identity in the ledger's cache, so the planner's own identity cache
    (`plan_cached`, the fast path of `changes_after`) keeps hitting turn after turn.
    """
    cache = inp.ledger.cache
    key = ("units", id(entries))
    hit = cache.get(key)
    if hit is None or hit[0] is not entries:
        hit = cache[key] = (entries, inp.adapter.tool_units(entries))
    units: list[Any] = hit[1]
    return units
