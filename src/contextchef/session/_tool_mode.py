"""Which ``tools`` a compile keeps, and the tool changes it plans (`tool_mode`).

Split from `contextchef.session._compile`: the planning itself is
`contextchef.session._reveal`; this module decides when it applies and feeds it one
entry per tool (`tool_units`).
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


__all__ = ["tool_mode", "tool_units"]


def tool_mode(
    inp: CompileInput,
    rules: ModelRules,
    fresh: list[Any],
    state: ToolState,
    *,
    bound: bool,
) -> tuple[list[Any], ToolChanges, ToolState] | None:
    """The planned tools when this compile states tool changes (`contextchef.session._reveal`).

    That is when the strategy is provider-native and the model takes tool changes;
    otherwise None (the tools are the strategy's, and a difference from what was sent is
    an edit). The ``tools`` kept are those this ledger sent under the same strategy once
    a request of it was answered (`bound`, `Ledger.bound`); before that, the strategy's
    own for the view now (which may already reveal loaded tools): a request nobody
    answered binds nothing, so a mode set before the first answer shapes ``tools``
    directly rather than through ``tool_removal``.
    """
    ledger = inp.ledger
    if (
        inp.strategy.native is None
        or not rules.tool_changes
        or inp.adapter.tool_change_message("") is None
    ):
        return None
    same = bound and ledger.tools is not None and ledger.strategy == inp.strategy.name
    sent = ledger.tools if same and ledger.tools is not None else fresh
    if fresh is sent and not state.defined:
        return sent, ToolChanges(), state  # same view: only loads can change
    by_definition = inp.adapter.profile.tool_changes_by_definition
    planned = plan_cached(
        ledger.cache,
        sent=tool_units(inp, sent),
        now=tool_units(inp, fresh),
        state=state,
        loaded=frozenset(inp.state.loaded),
        inline=rules.inline_tools,
        stable=inp.view.wrapper_names,
        by_definition=by_definition,
    )
    if planned is None or not by_definition:
        return planned
    return sent, planned[1], planned[2]  # nothing is appended: the tools sent stay


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
