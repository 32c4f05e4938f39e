"""A `ContextPolicy` as Responses ``context_management``, and GPT context windows.

Wire shape: ../shared/research/provider-context-management.md section 2.2 (openai 3.60
``response_create_params.ContextManagement``): ``context_management: [{"type":
"compaction", "compact_threshold": N}]`` ("currently only 'compaction'"); the response
then carries a ``compaction`` item once the input passes ``N`` tokens. Responses has no
server-side clearing of tool results, so clearing stays on the local path.

Windows (`gpt_window`): GPT-5 models have a 400,000-token window with at most 128,000
output tokens (OpenAI's model pages), which is the 272K usable input the research's Codex
row computes its 95% from ("Provider limits and defaults"). Other names: unknown.
"""

from __future__ import annotations

from typing import Any

from contextchef.history._context_policy import ContextPolicy
from contextchef.providers._base import ModelRules
from contextchef.providers._budget import ContextBudget
from contextchef.providers.responses._cache import gpt_version

__all__ = ["GPT5_MAX_OUTPUT", "GPT5_WINDOW", "gpt_window", "responses_context"]

GPT5_WINDOW = 400_000
"""Tokens in a GPT-5 model's context window (input and output)."""
GPT5_MAX_OUTPUT = 128_000
"""The most output tokens a GPT-5 request may ask for."""


def gpt_window(model: str) -> tuple[int | None, int | None]:
    """``(context_window, max_output)`` of `model` for `ModelRules` (None: unknown)."""
    version = gpt_version(model)
    if version is None or version[0] < 5:
        return None, None
    return GPT5_WINDOW, GPT5_MAX_OUTPUT


def responses_context(
    policy: ContextPolicy, budget: ContextBudget, rules: ModelRules
) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]:
    """``(request fields, betas (none), left to the local path)`` for `policy`."""
    if policy.native and "compact" in rules.native_context:
        entry = {"type": "compaction", "compact_threshold": budget.compact_trigger}
        return {"context_management": [entry]}, (), ("clear",)
    return {}, (), ("clear", "compact")
