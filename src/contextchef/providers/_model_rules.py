"""`ModelRules`: what one model of a target requires and offers, as data.

Each wire's adapter decides it from the model name (`Adapter.model_rules`); it lives apart
from `contextchef.providers._base` (which re-exports it) to keep that module small.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from contextchef.history._messages import Message, ReasoningPart

__all__ = ["ModelRules", "warn_unrecorded_thinking"]

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
