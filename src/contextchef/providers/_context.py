"""`native_context`: a `ContextPolicy` compiled for one target and model.

Each wire that has server-side context management compiles the policy into its request
fields (`Adapter.context_fields`: Anthropic ``context_management.edits``, its
``anthropic._context``; Responses ``context_management``, its ``responses._context``);
every other wire (Chat
Completions, DeepSeek, Gemini) gets no field and the whole policy on the local path. The
host passes the result to compile: ``chef.compile(target, model=m, extra=native.extra,
betas=native.betas)`` (compile's ``extra`` path: fields passed through unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from contextchef._errors import UsageError, check_str
from contextchef._json import freeze
from contextchef.history._context_policy import ContextPolicy
from contextchef.providers._budget import ContextBudget, context_budget
from contextchef.providers._targets import get_adapter

__all__ = ["NativeContext", "native_context"]


@dataclass(frozen=True, kw_only=True)
class NativeContext:
    """A context policy compiled for one target and model.

    Attributes:
        target: The target.
        model: The model.
        extra: Request fields to send (``context_management``), for compile's ``extra``;
            empty where the provider manages nothing for this model.
        betas: ``anthropic-beta`` values those fields need, for compile's ``betas``.
        local: What the local path must do because the provider will not: ``clear``
            (old tool results) and/or ``compact``.
        budget: The policy's figures for this model (`ContextBudget`).
    """

    target: str
    model: str
    extra: Mapping[str, Any]
    betas: tuple[str, ...]
    local: tuple[str, ...]
    budget: ContextBudget


def native_context(target: str, *, model: str, policy: ContextPolicy) -> NativeContext:
    """Compile `policy` for `target` and `model` (see the module docstring).

    The model's window and native features are profile data (`Adapter.model_rules`:
    `ModelRules.context_window`, `ModelRules.native_context`); the cache prices size
    ``clear_at_least`` (`Adapter.cache_rules`).

    Args:
        target: One of `contextchef.TARGETS`.
        model: The model name, as given to compile.
        policy: The host's `ContextPolicy`.

    Returns:
        The fields, betas and what is left to the local path.

    Raises:
        UnknownTargetError: Unknown target.
        UsageError: `model` is not a string or `policy` not a `ContextPolicy`.
    """
    adapter = get_adapter(target)
    check_str("model", model, empty=False)
    if not isinstance(policy, ContextPolicy):
        raise UsageError(f"policy must be a ContextPolicy, got {type(policy).__name__}")
    rules = adapter.model_rules(model)
    cache = adapter.cache_rules(model)
    budget = context_budget(policy, rules.context_window, rules.max_output, cache)
    fields, betas, local = adapter.context_fields(policy, budget, rules)
    extra = cast("Mapping[str, Any]", freeze(fields))
    return NativeContext(
        target=target, model=model, extra=extra, betas=betas, local=local, budget=budget
    )
