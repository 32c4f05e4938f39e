"""A query that is a conversation: its open request counts twice (search layer).

Some callers rank tools for a whole conversation rather than for one request (ACEBench's
multi-turn items, an application that picks tools from the chat so far). Such a query
is a transcript, one turn per role-prefixed block::

    user: I need to restore the firmware to version 1.0.
    system: [Firmware_Restore_Tool(firmware_id="12345", ...)]
    system: Firmware restored.
    user: Now show me the device's current status.

Everything before the last tool call is already answered, yet its words (the called
tool's name and arguments above all) outweigh the new request, so the tool that was
just called ranks first (benchmarks/RESULTS.md, issue 28: 21 of 26 ACEBench-en dev
misses). `open_request` finds the user turns after the last tool call, and `weighted`
scores them again as a second query at `RankerConfig.open_request_weight` (0.75) of the
whole transcript's weight, both normalized to [0, 1] first.

Format read: a turn starts a line with ``user:``, ``assistant:`` or ``system:``
(lower case, ACEBench's and most chat logs' prefixes; the assistant is often written
``system``); a tool call is a non-user turn that starts with ``[name(`` (the bracketed
call list of ACEBench, BFCL and Gorilla transcripts). Any other query, a transcript
without a tool call, and one whose last turns hold no user text are ranked as before.
`conversation_query` writes a contextchef history in that form, for an application that ranks
tools for its conversation so far.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from contextchef._errors import UsageError, shown
from contextchef.history._arguments import parse_json_object
from contextchef.history._messages import (
    Message,
    TextPart,
    ToolCall,
    ToolResult,
    messages_arg,
)
from contextchef.search._rankers import normalized

if TYPE_CHECKING:
    import numpy as np

__all__ = ["conversation_query", "open_request", "weighted"]

PART_CHARS = 300
"""Characters `conversation_query` keeps of each text, call's arguments and result."""

MAX_CHARS = 8000
"""Characters of a `conversation_query` at most: its most recent lines."""

_TURN = re.compile(r"^(user|assistant|system):[ \t]*", re.M)
_CALL = re.compile(r"\[\s*[\w.\-]+\(")


def open_request(query: str) -> str | None:
    """The user turns of a transcript after its last tool call, joined by newlines.

    Returns:
        None when `query` is not a transcript (it does not start with a role prefix,
        or has one turn), holds no tool call, or no user turn follows the last call.
    """
    if ":" not in query:
        return None
    parts = _TURN.split(query)
    if len(parts) < 5 or parts[0].strip():  # ["", role, text, role, text, ...]
        return None
    turns = [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]
    calls = [i for i, (role, text) in enumerate(turns) if role != "user" and _CALL.match(text)]
    if not calls:
        return None
    asked = [text for role, text in turns[calls[-1] + 1 :] if role == "user" and text]
    return "\n".join(asked) or None


def unlabelled(query: str) -> str:
    """`query` without its turns' role labels, when it is a transcript (starts with one).

    ``user:`` / ``assistant:`` / ``system:`` say who spoke, not what is asked: scored as
    words they would rank tools about users or systems for every transcript, and match
    something for a query whose words match nothing (break-it round 11). Any other query
    is returned as it is.
    """
    if _TURN.match(query) is None:
        return query
    return _TURN.sub("", query)


def weighted(query: str, weight: float, scores: Callable[[str], np.ndarray]) -> np.ndarray:
    """One query's scores, its open request (`open_request`) counted again at `weight`.

    Args:
        query: The query text.
        weight: The open request's share, >= 0 (0: `scores` of `query` alone).
        scores: Scores of every entry for one text (the ranker's, BM25 or fused).

    Returns:
        ``scores(q)`` when there is no open request, ``q`` being `query` without its role
        labels (`unlabelled`); else ``normalized(scores(q)) + weight *
        normalized(scores(request))`` (each divided by its best), in ``[0, 1 + weight]``.
    """
    whole = scores(unlabelled(query))
    request = open_request(query) if weight > 0 else None
    if request is None:
        return whole
    return normalized(whole) + weight * normalized(scores(request))


def _cut(text: str, chars: int) -> str:
    """`text`'s first `chars` characters on one line, ``...`` when it was longer."""
    one = " ".join(text[:chars].split())
    return one + "..." if len(text) > chars else one


def _call_text(call: ToolCall, chars: int) -> str:
    """``name(key=value, ...)``, values as JSON, the arguments cut to `chars`."""
    arguments = parse_json_object(call.arguments)
    if isinstance(arguments, str):  # not a JSON object: its problem
        return f"{call.name}({_cut(call.arguments, chars)})"
    pairs = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    return f"{call.name}({_cut(pairs, chars)})"


def conversation_query(
    messages: Iterable[Message], *, part_chars: int = PART_CHARS, max_chars: int = MAX_CHARS
) -> str:
    """A history as a transcript query, the form `open_request` reads.

    One line per turn: a user text as ``user: <text>``, an assistant text as ``assistant:
    <text>``, an assistant message's tool calls as ``assistant: [name(key=value, ...)]``
    (values as JSON), a tool result as ``system: <text>``. Each text, each call's
    arguments and each result keep their first `part_chars` characters (``...`` marks a
    cut: a long result or file body would outweigh the request), line breaks inside them
    become spaces (no text starts a turn of its own), and only the most recent lines that
    fit in `max_chars` are kept (the open request is at the end). Reasoning, media and
    provider-specific parts are left out. Ranked with
    ``index.search([conversation_query(history)], ...)`` or a ``tool_search`` call, the
    user's words after the last tool call count again (`weighted`).

    Args:
        messages: The conversation, oldest first.
        part_chars: Characters kept of each text, arguments and result, >= 1.
        max_chars: Characters of the whole query at most, >= 1 (oldest lines dropped
            first; a last line longer than this is cut).

    Returns:
        The transcript text; ``""`` for a history with nothing to show.

    Raises:
        UsageError: `part_chars` or `max_chars` is not an int >= 1, or `messages` is not a
            list.
        CorruptHistoryError: An item of `messages` is not a `Message` (its index is given).
    """
    for name, value in (("part_chars", part_chars), ("max_chars", max_chars)):
        if type(value) is not int or value < 1:
            raise UsageError(f"{name} must be an int >= 1, got {shown(value)}")
    lines: list[str] = []
    for message in messages_arg(messages, "messages"):
        calls: list[str] = []
        for part in message.parts:
            if isinstance(part, TextPart) and part.text.strip():
                lines.append(f"{message.role}: {_cut(part.text, part_chars)}")
            elif isinstance(part, ToolCall):
                calls.append(_call_text(part, part_chars))
            elif isinstance(part, ToolResult) and part.content.strip():
                lines.append(f"system: {_cut(part.content, part_chars)}")
        if calls:
            lines.append(f"assistant: [{', '.join(calls)}]")
    size, start = -1, len(lines)
    while start > 0 and size + len(lines[start - 1]) + 1 <= max_chars:
        start -= 1
        size += len(lines[start]) + 1
    kept = lines[start:] if start < len(lines) else lines[-1:]
    return "\n".join(kept)[:max_chars]
