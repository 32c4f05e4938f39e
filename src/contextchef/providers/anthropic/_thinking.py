"""A tool turn without its thinking, on a request that enables thinking (providers layer).

With ``thinking`` enabled, Anthropic requires the final ``assistant`` message of a tool
loop under way to start with its ``thinking`` (or ``redacted_thinking``) block and
answers 400 otherwise, advising to disable thinking (extended thinking, "Preserving
thinking blocks": https://platform.claude.com/docs/en/build-with-claude/extended-thinking).
A store that kept only a turn's text and calls loses that block; `check_tool_turn_thinking`
follows the API's advice for that request, or raises `MissingThinkingError`. The session
also leaves a turn's thinking out itself, after an edit of what was sent before it on a
model with the prefix check (its signature no longer matches); that request always
follows the API's advice, and the log names the edit instead of the store.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._errors import MissingThinkingError, UsageError, shown

__all__ = [
    "THINKING_NEEDS",
    "check_tool_turn_thinking",
    "thinking_enabled",
    "tool_turn_without_thinking",
]

logger = logging.getLogger("contextchef")


_THINKING_BLOCKS = ("thinking", "redacted_thinking")

THINKING_NEEDS = (
    "its recorded 'thinking' block and the 'signature' the API verifies it by "
    "('redacted_thinking': its 'data')"
)
"""What Anthropic needs to take reasoning back (`providers._keeps.reasoning_refused`): a
block is verified when sent back, so one without its seal, or another provider's
reasoning, is left out (https://platform.claude.com/docs/en/build-with-claude/extended-thinking)."""


def thinking_enabled(value: object) -> bool:
    """Whether a request's ``thinking`` field turns thinking on (any type but disabled)."""
    return isinstance(value, Mapping) and value.get("type") not in (None, "disabled")


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _has(message: Mapping[str, Any], kind: str) -> bool:
    return any(isinstance(b, Mapping) and b.get("type") == kind for b in _blocks(message))


def tool_turn_without_thinking(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The final assistant turn's index when thinking would need to lead it and does not.

    With ``thinking`` enabled, the final ``assistant`` message of a tool loop under way (its
    ``tool_use`` blocks answered by ``tool_result`` blocks after it) must start with a
    ``thinking`` or ``redacted_thinking`` block; otherwise Anthropic answers 400 ``Expected
    `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a
    final `assistant` message must start with a thinking block ... To avoid this
    requirement, disable `thinking`.`` (extended thinking, "Preserving thinking blocks":
    https://platform.claude.com/docs/en/build-with-claude/extended-thinking). Such a turn
    is one whose thinking was lost (a store that kept only text and calls).

    Returns:
        The ``messages`` index of that assistant turn, or None when the rule holds.
    """
    last = next(  # from the end: only the final assistant turn matters
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"),
        None,
    )
    if last is None or not _has(messages[last], "tool_use"):
        return None
    if not any(m.get("role") == "user" and _has(m, "tool_result") for m in messages[last + 1 :]):
        return None
    first = _blocks(messages[last])[0]
    return None if isinstance(first, Mapping) and first.get("type") in _THINKING_BLOCKS else last


def check_tool_turn_thinking(
    payload: dict[str, Any], choice: str, *, stripped: bool = False
) -> None:
    """Apply the rule to an Anthropic `payload` (its ``messages`` and ``thinking``).

    Args:
        payload: The request body; its ``thinking`` field is removed when `choice` is
            ``drop`` (or `stripped`) and the rule does not hold (a warning is logged).
        choice: ``drop`` or ``raise`` (`RequestOptions.missing_thinking`).
        stripped: The session left out that turn's thinking itself, after an edit
            (`RequestOptions.thinking_stripped`): dropped whatever `choice` says.

    Raises:
        MissingThinkingError: `choice` is ``raise``, the rule does not hold and the
            thinking was missing from the history (not `stripped`).
        UsageError: `choice` is neither.
    """
    if choice not in ("drop", "raise"):
        raise UsageError(f"missing_thinking must be 'drop' or 'raise', got {shown(choice)}")
    if thinking_enabled(payload.get("thinking")):
        index = tool_turn_without_thinking(payload["messages"])
        if index is not None:
            _without_thinking(payload, index, choice, stripped)


def _without_thinking(payload: dict[str, Any], index: int, choice: str, stripped: bool) -> None:
    """Send this request without ``thinking`` (the API's own advice), or raise."""
    late = any(_has(payload["messages"][index], kind) for kind in _THINKING_BLOCKS)
    cause = (
        ": the session left it out after an edit of what was sent before it (see the "
        "request's edits), and Anthropic refuses such a turn (400)"
        if stripped
        else " (the turn came from another provider, whose reasoning Anthropic cannot take, "
        "or its thinking was lost before it was stored), and Anthropic refuses such a turn (400)"
    )
    if late and not stripped:  # the reply put it after a block: sent as it came, never moved
        cause = (
            " first: it has one after another block (as the reply came), and Anthropic "
            "refuses a turn that does not start with it (400 'Expected `thinking` or "
            "`redacted_thinking`, but found ...')"
        )
    why = (
        f"thinking is enabled but the final assistant tool turn (messages[{index}]) has no "
        f"thinking block{cause}"
    )
    if choice == "raise" and not stripped:
        raise MissingThinkingError(
            f"{why}; send it without thinking (compile(..., missing_thinking='drop')) or "
            "keep the turn's thinking blocks in the history",
            message_index=index,
        )
    logger.warning("contextchef: %s: this request is sent without 'thinking'", why)
    del payload["thinking"]
