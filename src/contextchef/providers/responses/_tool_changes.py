"""Responses' mid-conversation tool changes: every addition by definition.

Responses states new tools only by definition, in an ``additional_tools`` input item
(`Adapter.tool_change_message`; research note rule 25), and has no withdrawal: a
withdrawn tool is named in a developer message and the gate refuses it. So the ``tools``
first sent are kept as they are (nothing is appended), and every tool the model should
now have, declared or not, is added by its definition, in the namespace ``tools``
declares it in (tool units: `Adapter.tool_units`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from contextchef._json import canonical_dumps
from contextchef.providers._base import ModelRules
from contextchef.providers._tool_changes import (
    Plan,
    ToolChanges,
    ToolState,
    definition,
    offered,
    placed,
    withdraw,
)

__all__ = ["plan_tool_changes"]


def plan_tool_changes(
    *,
    sent: list[Any],
    now: Sequence[Any],
    state: ToolState,
    loaded: frozenset[str],
    rules: ModelRules,
    stable: frozenset[str] = frozenset(),
    provider_search: bool = True,
) -> tuple[list[Any], ToolChanges, ToolState] | None:
    """The tool units kept (`sent`), the changes to state, and the tool state after them.

    The arguments are those of Anthropic's planner (``providers/anthropic/_tool_changes``);
    `sent` and `now` are tool units. None when a declared tool changed its definition
    and the model takes no definitions.
    """
    plan = Plan.start(sent, now, state)
    if not _new_and_changed(plan, stable, inline=rules.inline_tools):
        return None
    withdraw(plan, loaded, provider_search=provider_search)
    _redefined(plan)
    _added_by_definition(plan)
    return plan.result(sent)


def _new_and_changed(plan: Plan, stable: frozenset[str], *, inline: bool) -> bool:
    """Define every tool of the view that ``tools`` lacks or declares differently."""
    for name, entry in plan.current.items():
        was = plan.declared.get(name)
        if was is not None and name not in stable and entry != was:
            if definition(entry) == definition(was):
                continue
            if not inline:
                return False
            unit = placed(entry, was)
            if plan.defined.get(name) != canonical_dumps(unit):
                plan.define_unit(name, unit)  # replaces the declared one from here on
            continue
        if was is None and name not in plan.defined:
            plan.define_unit(name, offered(entry))  # new here: offered from now on
    return True


def _redefined(plan: Plan) -> None:
    """Plan the tools earlier changes defined: withdrawn, redefined in place, or back."""
    state = plan.state
    for name, text in state.defined.items():
        fresh = plan.current.get(name)
        if fresh is None:
            if name not in state.removed:
                plan.remove.append(name)
        elif definition(fresh) != definition(json.loads(text)):
            plan.define_unit(name, placed(fresh, json.loads(text)))  # a new definition
        elif name in state.removed:
            plan.add.append(name)


def _added_by_definition(plan: Plan) -> None:
    """Every addition by reference becomes one by the definition as declared, in place."""
    named = {str(e.get("name")) for e in plan.define}
    for name in plan.add:
        if name not in named:
            where = plan.declared.get(name) or json.loads(plan.state.defined[name])
            plan.define_unit(name, placed(plan.current.get(name) or where, where))
            named.add(name)
    plan.add = []
