"""A `ContextPolicy` as Anthropic ``context_management.edits`` (and the betas they need).

Wire shapes: ../shared/research/provider-context-management.md section 2.1 (anthropic 2.16
``beta_clear_tool_uses_20250919_edit_param.py``, ``beta_clear_thinking_20251015_edit_param.py``,
``beta_compact_20260112_edit_param.py``): ``clear_thinking_20251015`` keeps the thinking of
the latest turns; ``clear_tool_uses_20250919`` clears old tool results past an
``input_tokens`` trigger, keeping the latest ``keep`` uses and ``exclude_tools``, only when
``clear_at_least`` tokens go; ``compact_20260112`` compacts past its trigger, which must be
at least 50,000 input tokens (compaction-threshold.md). Edits need the
``context-management-2025-06-27`` beta, compaction ``compact-2026-01-12``. What the model
does not take (`ModelRules.native_context`), or a compaction trigger under 50,000, is left
to the local path (`NativeContext.local`).
"""

from __future__ import annotations

from typing import Any

from contextchef.history._context_policy import ContextPolicy
from contextchef.providers._base import ModelRules
from contextchef.providers._budget import ContextBudget

__all__ = [
    "COMPACT_BETA",
    "COMPACT_MIN_TRIGGER",
    "CONTEXT_MANAGEMENT_BETA",
    "anthropic_context",
]

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
"""The ``anthropic-beta`` value for ``clear_tool_uses`` / ``clear_thinking`` edits."""
COMPACT_BETA = "compact-2026-01-12"
"""The ``anthropic-beta`` value for threshold compaction (``compact_20260112``)."""
COMPACT_MIN_TRIGGER = 50_000
"""The lowest ``compact_20260112`` trigger the API takes, in input tokens."""


def _tokens(value: int) -> dict[str, Any]:
    return {"type": "input_tokens", "value": value}


def anthropic_context(
    policy: ContextPolicy, budget: ContextBudget, rules: ModelRules
) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]:
    """``(request fields, betas, left to the local path)`` for `policy` on this model.

    The local path's parts are ``clear`` and ``compact``. Edits come in the order
    thinking, tool uses, compaction (Anthropic lists ``clear_thinking`` first).
    """
    native = rules.native_context if policy.native else frozenset()
    edits: list[dict[str, Any]] = []
    betas: set[str] = set()
    local: list[str] = []
    if policy.keep_thinking_turns is not None and "clear_thinking" in native:
        keep = {"type": "thinking_turns", "value": policy.keep_thinking_turns}
        edits.append({"type": "clear_thinking_20251015", "keep": keep})
        betas.add(CONTEXT_MANAGEMENT_BETA)
    if "clear_tool_uses" in native:
        edit: dict[str, Any] = {
            "type": "clear_tool_uses_20250919",
            "trigger": _tokens(budget.clear_trigger),
            "keep": {"type": "tool_uses", "value": policy.keep_tool_uses},
            "clear_at_least": _tokens(budget.clear_at_least),
        }
        if policy.never_clear:
            edit["exclude_tools"] = list(policy.never_clear)
        if policy.clear_tool_inputs:
            edit["clear_tool_inputs"] = True
        edits.append(edit)
        betas.add(CONTEXT_MANAGEMENT_BETA)
    else:
        local.append("clear")
    if "compact" in native and budget.compact_trigger >= COMPACT_MIN_TRIGGER:
        compact: dict[str, Any] = {
            "type": "compact_20260112",
            "trigger": _tokens(budget.compact_trigger),
        }
        if policy.summary_instructions:
            compact["instructions"] = policy.summary_instructions
        edits.append(compact)
        betas.add(COMPACT_BETA)
    else:
        local.append("compact")
    fields = {"context_management": {"edits": edits}} if edits else {}
    return fields, tuple(sorted(betas)), tuple(local)
