"""`native_context`: a `ContextPolicy` compiled for one target and model.

Each wire that has server-side context management compiles the policy into its request
fields (`Adapter.context_fields`: Anthropic ``context_management.edits``, its
``anthropic._context``; Responses ``context_management``, its ``responses._context``);
every other wire (Chat
Completions, DeepSeek, Gemini) gets no field and the whole policy on the local path. A
session made with ``ContextChef(context_policy=...)`` adds the result to every compile
(`with_native`); by hand, pass it as ``chef.compile(target, model=m, extra=native.extra,
betas=native.betas)`` (compile's ``extra`` path: fields passed through unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from contextchef._cache import lru_cache
from contextchef._errors import UsageError, check_str
from contextchef._json import freeze
from contextchef.history._context_policy import ContextPolicy
from contextchef.history._messages import Message
from contextchef.providers._budget import (
    ContextBudget,
    ContextUsage,
    context_budget,
    request_tokens,
)
from contextchef.providers._compacted import COMPACTION, on_demand_fields
from contextchef.providers._targets import get_adapter
from contextchef.tools._tool import CompiledTool

__all__ = ["NativeContext", "context_usage", "native_context", "with_native"]


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
        on_demand: The ``extra`` of an on-demand compaction request on this model
            (`on_demand_fields` with the policy's ``summary_instructions``): on Anthropic
            the ``compaction`` field itself, on Responses it makes the payload
            ``client.responses.compact``'s arguments; empty where the model has no
            ``compact_on_demand``.
    """

    target: str
    model: str
    extra: Mapping[str, Any]
    betas: tuple[str, ...]
    local: tuple[str, ...]
    budget: ContextBudget
    on_demand: Mapping[str, Any] = field(default_factory=dict)


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
    get_adapter(target)
    check_str("model", model, empty=False)
    if not isinstance(policy, ContextPolicy):
        raise UsageError(f"policy must be a ContextPolicy, got {type(policy).__name__}")
    return _compiled(target, model, policy)


@lru_cache(maxsize=512)
def _compiled(target: str, model: str, policy: ContextPolicy) -> NativeContext:
    """`native_context` of checked arguments, made once per (target, model, policy).

    Compile asks on every turn; the answer is a pure function of its (hashable, frozen)
    arguments and its fields are frozen, so one value is shared.
    """
    adapter = get_adapter(target)
    rules = adapter.model_rules(model)
    cache = adapter.cache_rules(model)
    budget = context_budget(policy, rules.context_window, rules.max_output, cache)
    fields, betas, local = adapter.context_fields(policy, budget, rules)
    extra = cast("Mapping[str, Any]", freeze(fields))
    takes = policy.native and "compact_on_demand" in rules.native_context
    on_demand = freeze(on_demand_fields(policy.summary_instructions)) if takes else {}
    return NativeContext(
        target=target,
        model=model,
        extra=extra,
        betas=betas,
        local=local,
        budget=budget,
        on_demand=cast("Mapping[str, Any]", on_demand),
    )


def with_native(
    native: NativeContext, extra: Mapping[str, Any], betas: Sequence[str]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Compile's `extra` and `betas` with `native`'s fields and betas added.

    The native fields are the same mapping on every compile for one policy, target and
    model, so the request stays byte-stable from turn to turn (its prompt cache).

    An on-demand compaction request (`extra` holding ``compaction``, e.g.
    `NativeContext.on_demand`) gets none of them: it "cannot be combined with
    `context_management`" (research 2.1).

    Raises:
        UsageError: `extra` sets a field the policy writes (named), which the host would
            otherwise silently override or lose; or asks for an on-demand compaction on a
            model without it.
    """
    if COMPACTION in extra:
        if not native.on_demand:
            raise UsageError(
                f"{native.target} model {native.model!r} has no on-demand compaction (extra "
                "field 'compaction'): only models with compact_on_demand in "
                "ModelRules.native_context have it (Claude API, GPT-5); use chef.compact()"
            )
        return dict(extra), tuple(betas)
    for key in sorted(native.extra.keys() & extra.keys()):
        raise UsageError(
            f"extra field {key!r} is written by the session's context_policy for "
            f"{native.target} model {native.model!r}; drop it from extra, or make the session "
            "without context_policy (or with ContextPolicy(native=False)) to send your own"
        )
    return {**extra, **native.extra}, tuple(dict.fromkeys((*betas, *native.betas)))


def context_usage(
    native: NativeContext,
    reported: int | None,
    messages: Sequence[Message],
    system: str = "",
    tools: Sequence[CompiledTool] = (),
) -> ContextUsage:
    """`ContextUsage` against `native`'s budget.

    Args:
        native: The policy compiled for the target and model.
        reported: The provider's input tokens for the last request (None or 0: unknown).
        messages: With `reported`, the messages added since that request; else the whole
            history.
        system: The system prompt (estimated with `request_tokens`; counted in ``used``
            only without `reported`, which holds it already).
        tools: The tools the request declares (likewise).

    ``fixed`` is our estimate of `system` and `tools` either way: the part of the
    request a compaction cannot remove (`compaction_due`).
    """
    fixed = request_tokens(system, tools, ())
    used = request_tokens("", (), messages) + (reported or fixed)
    return ContextUsage(
        target=native.target,
        model=native.model,
        used=used,
        budget=native.budget.budget,
        source="usage" if reported else "estimate",
        fixed=fixed,
    )
