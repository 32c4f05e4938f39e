"""A `ContextPolicy` as Responses ``context_management``, and GPT context windows.

Wire shape: ../shared/research/provider-context-management.md section 2.2 (openai 3.60
``response_create_params.ContextManagement``): ``context_management: [{"type":
"compaction", "compact_threshold": N}]`` ("currently only 'compaction'"); the response
then carries a ``compaction`` item once the input passes ``N`` tokens. Responses has no
server-side clearing of tool results, so clearing stays on the local path.

On demand (`compact_body`): ``POST /responses/compact`` (openai 3.60
``client.responses.compact``, ``response_compact_params.py``) takes ``model``, ``input``,
``instructions``, ``previous_response_id``, the prompt-cache fields, ``safety_identifier``,
``service_tier`` and ``image``, and answers a ``response.compaction`` window: "a list of all
user messages, followed by a single compaction item", the next request's input.

Windows (`gpt_window`): GPT-5 models have a 400,000-token window with at most 128,000
output tokens (OpenAI's model pages), which is the 272K usable input the research's Codex
row computes its 95% from ("Provider limits and defaults"). Other names: unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextchef.history._context_policy import ContextPolicy
from contextchef.providers._base import ModelRules
from contextchef.providers._budget import ContextBudget
from contextchef.providers._extra_fields import CALL_OPTIONS
from contextchef.providers.responses._cache import gpt_version

__all__ = [
    "COMPACT_FIELDS",
    "GPT5_MAX_OUTPUT",
    "GPT5_WINDOW",
    "compact_body",
    "gpt_window",
    "responses_context",
]

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


COMPACT_FIELDS = (
    "image",
    "input",
    "instructions",
    "model",
    "previous_response_id",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "safety_identifier",
    "service_tier",
)
"""The parameters of ``POST /responses/compact`` (SDK ``ResponseCompactParams``)."""
_COMPACT_CACHE = ("mode", "ttl")
"""Its ``prompt_cache_options`` keys; ``ttl`` is ``"30m"`` only there."""


def compact_body(payload: Mapping[str, Any]) -> dict[str, Any]:
    """`payload` (a ``/responses`` body) as ``client.responses.compact`` keyword arguments.

    The fields the endpoint does not take (``tools``, ``context_management``,
    ``max_output_tokens``, ``reasoning``, ...) are left out; the SDK call's own options
    (``timeout``, ``extra_headers``... `CALL_OPTIONS`, which ``compact`` takes too) are
    kept; ``prompt_cache_options`` keeps ``mode`` and a ``"30m"`` ``ttl`` (the only
    lifetime its type allows).
    """
    body = {k: payload[k] for k in (*COMPACT_FIELDS, *CALL_OPTIONS) if k in payload}
    options = body.get("prompt_cache_options")
    if isinstance(options, Mapping):
        kept = {k: options[k] for k in _COMPACT_CACHE if k in options}
        if kept.get("ttl", "30m") != "30m":
            del kept["ttl"]
        body["prompt_cache_options"] = kept
    return body
