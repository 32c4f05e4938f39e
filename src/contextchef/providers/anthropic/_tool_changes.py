"""Anthropic's mid-conversation tool changes: ``tool_addition`` / ``tool_removal`` blocks.

The ``tools`` first sent are kept, and every later change to what the model may call is
a block of a system message appended at the end
(https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages,
"Mid-conversation tool changes"; the research notes' rules 3, 11, 13, 19 and 20):

* a declared tool the model should now have (a deferred tool loaded or found; a tool a
  mode brings back) is added **by reference**;
* a tool the view no longer offers is **withdrawn** by reference (`withdraw`); its
  definition stays declared and the gate refuses it;
* a tool not declared in the first request and now offered directly is added **by
  definition** where the platform takes inline definitions (`ModelRules.inline_tools`),
  else declared deferred at the end of ``tools`` (which neither the prompt cache nor the
  thinking check counts until referenced: ``agents-and-tools/tool-use/tool-search-tool``,
  research note R7, R20) and added by reference;
* a deferred tool registered later is declared deferred at the end of ``tools``, where
  the provider's search finds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextchef._json import canonical_dumps
from contextchef.providers._base import ModelRules
from contextchef.providers._tool_changes import (
    Plan,
    ToolChanges,
    ToolState,
    deferred,
    definition,
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
    """The ``tools`` to send, the changes to state, and the tool state after them.

    Args:
        sent: The tool entries this ledger sent (kept, in order).
        now: The entries the strategy would send for the current view.
        state: The tool state before this request, this request's reveals included.
        loaded: Tools the host, a skill, a toolkit or our ``tool_search`` loaded.
        rules: The model's rules (`ModelRules.inline_tools`: definitions are taken).
        stable: Tools whose definition is kept as first sent even when it changed (our
            meta-tools).
        provider_search: The provider's own search runs (see `withdraw`).

    Returns:
        `sent` plus newly declared deferred entries at the end, the changes, the state
        once they are sent; None when a tool sent in ``tools`` changed its definition
        and the platform takes no inline definitions: only an edit of ``tools`` can
        say that.
    """
    plan = Plan.start(sent, now, state)
    if not _new_and_changed(plan, stable, inline=rules.inline_tools):
        return None
    withdraw(plan, loaded, provider_search=provider_search)
    _redefined(plan, inline=rules.inline_tools)
    return plan.result(sent)


def _new_and_changed(plan: Plan, stable: frozenset[str], *, inline: bool) -> bool:
    """Plan every tool of the view that ``tools`` lacks or declares differently.

    False when a declared tool changed and the platform takes no inline definitions.
    """
    for name, entry in plan.current.items():
        was = plan.declared.get(name)
        if was is not None and name not in stable and entry != was:
            if definition(entry) == definition(was):
                continue
            if not inline:
                return False
            if plan.defined.get(name) != canonical_dumps(entry):
                plan.define_unit(name, dict(entry))  # replaces the declared one from here on
            continue
        if was is not None or name in plan.defined:
            continue
        if deferred(entry):
            plan.appended.append(entry)  # searchable from now on; revealed when loaded
            plan.declared[name] = entry
        elif inline:
            plan.define_unit(name, dict(entry))
        else:
            hidden = {**entry, "defer_loading": True}
            plan.appended.append(hidden)
            plan.declared[name] = hidden
            plan.add.append(name)
    return True


def _redefined(plan: Plan, *, inline: bool) -> None:
    """Plan the tools earlier changes defined: withdrawn, redefined or offered again."""
    state = plan.state
    for name, text in state.defined.items():
        fresh = plan.current.get(name)
        if fresh is None:
            if name not in state.removed:
                plan.remove.append(name)
        elif canonical_dumps(fresh) != text and inline:
            plan.define_unit(name, dict(fresh))  # the same name, a new definition
        elif name in state.removed:
            plan.add.append(name)
