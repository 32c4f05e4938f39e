"""`ModelRules`: what one model of a target requires and offers, as data.

Each wire's adapter decides it from the model name (`Adapter.model_rules`); it lives apart
from `contextchef.providers._base` (which re-exports it) to keep that module small. The
checks of a request that ends on the model's turn read it: `check_prefill` (a ``prefill=``)
and `check_turn` (a history ending with the model's message).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextchef._errors import UsageError, shown
from contextchef._json import is_unicode
from contextchef.history._messages import Message, ReasoningPart
from contextchef.history._normalize import HistoryRules

__all__ = [
    "ModelRules",
    "check_prefill",
    "check_turn",
    "history_rules",
    "thinks",
    "warn_unrecorded_thinking",
]

logger = logging.getLogger("contextchef")


@dataclass(frozen=True, kw_only=True)
class ModelRules:
    """What one model of a target requires, decided by the model name (`Adapter.model_rules`).

    An unknown model gets the safe defaults: no mid-conversation system messages, prefill
    left to the provider. Every model gets the append-only ledger.

    Attributes:
        model: The model name.
        known: The name matched the adapter's table.
        prefix_check: A thinking block sent back is checked against everything sent
            before it (Anthropic's preserved thinking): an edit there is a 400 or drops
            the block, so the session strips the thinking an edit invalidates.
        system_messages: The model takes mid-conversation system messages (volatile
            ``system``-channel text goes there; otherwise into the user turn).
        prefill: The model continues a trailing assistant message; False: ``prefill=``
            raises `UsageError` naming the model.
        tool_search: The model honours the provider's deferred tools (``defer_loading``)
            and can have them revealed (Anthropic tool search, ``tool_reference``;
            Responses ``tool_search``). False: a deferral flag would hide a tool for good.
        tool_changes: The model takes mid-conversation tool changes: ``tool_addition``
            / ``tool_removal`` blocks in system messages (Anthropic), ``additional_tools``
            input items (Responses, `Profile.tool_changes_by_definition`).
        inline_tools: The platform also takes tool definitions in those blocks (the
            ``inline-tools-2026-09-15`` beta: Claude API only, not Bedrock or Vertex).
        tool_change_beta: The beta value every request needs once its history carries
            a tool change (None: no beta, or no tool changes).
        prompt_cache: The model takes explicit prompt-cache breakpoints on content parts
            and request-level cache options (OpenAI ``gpt-5.6`` and later): compile marks
            the end of each request's new entries (`Adapter.cache_marked`).
        context_window: The model's context window in tokens (input and output
            together), or None when the adapter's table does not know it (a
            `contextchef.ContextPolicy` then assumes `DEFAULT_CONTEXT_WINDOW`).
        max_output: The most output tokens one request may ask for, or None if unknown.
        native_context: The server-side context management the model takes:
            ``clear_tool_uses``, ``clear_thinking``, ``compact`` (compaction at a
            threshold) and ``compact_on_demand`` (Anthropic); ``compact`` (Responses
            ``context_management``) and ``compact_on_demand`` (``/responses/compact``).
            Empty: the local path only.
        signed_calls: A function call of the current turn must carry a thought signature
            (Gemini 3 and later: "you must pass back thought signatures during function
            calling, or you will get a validation error"; Gemini 2.5 does not validate
            them: https://ai.google.dev/gemini-api/docs/thought-signatures). An unsigned
            call there is sent with Gemini's placeholder (`GeminiAdapter.fit_references`).
    """

    model: str
    known: bool = False
    prefix_check: bool = False
    system_messages: bool = False
    prefill: bool = True
    tool_search: bool = False
    tool_changes: bool = False
    inline_tools: bool = False
    tool_change_beta: str | None = None
    prompt_cache: bool = False
    context_window: int | None = None
    max_output: int | None = None
    native_context: frozenset[str] = frozenset()
    signed_calls: bool = False


def history_rules(profile: HistoryRules, rules: ModelRules) -> HistoryRules:
    """The target's `profile` for one model: reasoning bound where it runs the prefix check.

    `HistoryRules.bound_reasoning` follows `ModelRules.prefix_check`: a repair the
    normalizer makes in front of a thinking block drops that thinking (and all later),
    reported (research anthropic-preserved-thinking.md R9, R11).
    """
    return _bound(profile) if rules.prefix_check and not profile.bound_reasoning else profile


@functools.cache
def _bound(profile: HistoryRules) -> HistoryRules:
    return replace(profile, bound_reasoning=True)


def warn_unrecorded_thinking(rules: ModelRules, history: Sequence[Message], target: str) -> None:
    """Log when the target's own thinking (no other is sent) meets the prefix check unrecorded."""
    mine = (isinstance(p, ReasoningPart) and p.provider == target for m in history for p in m.parts)
    if rules.prefix_check and any(mine):
        logger.warning(
            "contextchef: thinking blocks with no record of what was sent to this target "
            "(history set by hand, or compiled for another provider until now): if requests "
            "to it carried state updates, announcements or memories, model %r will refuse "
            "that thinking; resume from the session's snapshot instead",
            rules.model,
        )


def check_turn(
    history: Sequence[Message],
    rules: ModelRules,
    last_role: str,
    dropped: Sequence[str],
    *,
    alternate: bool,
    extra: Mapping[str, Any],
) -> None:
    """Refuse a request ending with the model's turn unless the model takes it, and its reply.

    Such a request is a prefill: the model continues its turn, and the reply is stored
    joined to it (`history.continue_turn`), unless it opens with reasoning. `last_role` is
    the role the request ends with; `dropped` the repairs' details (named when what made
    it the model's turn was dropped); `alternate` the target's
    `HistoryRules.alternate_roles`; `extra` the request's extra fields. Rules followed:

    * `ModelRules.prefill` False: the model refuses a trailing assistant message (Anthropic
      R18, anthropic-preserved-thinking.md; Gemini ``generateContent``: "Please ensure
      that multiturn requests ends with a user role or a function response", a 400).
    * On a target with alternating roles, a request with thinking (the turn it would
      continue holds reasoning, or ``extra`` turns ``thinking`` on): Anthropic's
      extended-thinking docs take no prefill with thinking on, and the reply's thinking
      must open its own turn, so the normalizer cannot merge it into the turn it
      continues; the next request would send two assistant turns in a row (the
      alternation the API and `contextchef.testing` fakes enforce).

    Raises:
        UsageError: Either case, naming the model and what to append first.
    """
    if last_role != "assistant":
        return
    if history and history[-1].role == "user":
        raise UsageError(  # what made it the model's turn was dropped: never a prefill
            f"the last history message ({history[-1].role}) has nothing this target can "
            f"send ({'; '.join(dropped[-3:]) or 'it was dropped'}), so the request would "
            "end with the model's turn; append the next user message"
        )
    if not rules.prefill:
        raise UsageError(
            f"the history ends with the model's turn, and model {rules.model!r} rejects a "
            "trailing assistant message (prefill); append the next user message or the "
            "tool results first"
        )
    on = thinks(extra)
    last = history[-1] if history else None
    if (
        alternate
        and last is not None
        and (on or any(isinstance(p, ReasoningPart) for p in last.parts))
    ):
        raise UsageError(
            f"the history ends with the model's turn, and model {rules.model!r} thinks: "
            "thinking is not compatible with a prefilled reply (Anthropic's extended "
            "thinking docs), and a reply continuing that turn would put thinking after its "
            "text; append the next user message or the tool results first"
        )


def thinks(extra: Mapping[str, Any]) -> bool:
    """Whether a request's `extra` fields turn Anthropic's thinking on.

    That is a ``thinking`` object whose ``type`` is not ``disabled``; with it on, Anthropic
    takes no prefill (its extended-thinking docs).
    """
    thinking = extra.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled")


def check_prefill(
    prefill: object, ends_with_user: bool, rules: ModelRules, thinking: bool = False
) -> str:
    """The prefill to send (``""`` for none); `thinking`: the request turns thinking on.

    Raises:
        UsageError: Not valid Unicode text, ending in whitespace (Anthropic rejects a
            final assistant turn that does; refused on every target alike), a model that
            rejects prefill (`ModelRules.prefill`) or a request with thinking on
            (Anthropic takes no prefill then), or the history does not end with a user
            turn.
    """
    if prefill is None or prefill == "":
        return ""
    if not isinstance(prefill, str) or not is_unicode(prefill):
        what = type(prefill).__name__ if not isinstance(prefill, str) else "a lone surrogate"
        raise UsageError(f"prefill must be a string of valid Unicode, got {what}")
    if thinking:
        raise UsageError(
            "prefill cannot be combined with thinking (the provider rejects a prefilled "
            "answer when thinking is on); steer the answer in the user turn instead"
        )
    if not rules.prefill:
        raise UsageError(
            f"model {shown(rules.model)} rejects prefill (a trailing assistant message is a 400 "
            "there); steer the answer with an instruction in the user turn instead"
        )
    if prefill != prefill.rstrip():
        raise UsageError(
            "prefill must not end with whitespace (Anthropic rejects it; refused everywhere)"
        )
    if not ends_with_user:
        raise UsageError(
            "prefill needs a history that ends with a user turn; it already ends with an "
            "assistant message"
        )
    return prefill
