"""A tool result that arrives after a request told the model its call did not run.

A compile answers a call the history leaves unanswered with an error result saying it was
interrupted and not run (`history._normalize.interrupted_result`). Once the model answered
that request, the answer is part of what was sent and stays (append-only). If the host
then runs the call after all (a late run, or a session shared by threads whose compile
came first), its result can no longer be the call's: a second result of one call is
refused by every provider. Left out, the model would never learn that the call ran, and
might run it again. So the result goes in the same place as text instead (a user
message's text part, which every target takes), saying that the call did run after all,
followed by the result's media as the user message's (each target's media rules then
apply), reported as ``late_result_as_text``. A second result of a call the history had
answered itself is a plain duplicate, left to the pairing step
(``dropped_duplicate_result``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from operator import is_not

from contextchef._errors import shown
from contextchef.history._messages import Message, Part, TextPart, ToolResult

__all__ = ["late_results_as_text"]

LATE = (
    "[Late result of {name} (call id {id}): an earlier message said this call was not run, "
    "but it ran after all. Its {what}:]\n{content}"
)
"""The text a late result is sent as (`late_results_as_text`)."""


def _told_interrupted(sent: Sequence[Message], call_id: str, interrupted: str) -> bool:
    """Whether the last result `sent` holds for `call_id` is the interrupted one."""
    for message in reversed(sent):
        for part in message.parts:
            if isinstance(part, ToolResult) and part.call_id == call_id:
                return part.is_error and part.content == interrupted
    return False


def late_results_as_text(
    messages: list[Message],
    earlier: Collection[str],
    sent: Sequence[Message],
    interrupted: Callable[[str, str], str],
    add: Callable[[int, str, str], None],
    offset: int = 0,
) -> list[Message]:
    """`messages` with each late result (see the module doc) as a text part in its place.

    Args:
        messages: The messages not sent yet (history indices from `offset`).
        earlier: Ids of the calls the sent messages hold (each answered there).
        sent: The messages sent before them, as sent (their results included).
        interrupted: The interrupted text sent for a call (of its name and id).
        add: Called with (history index, detail, call id) for each result turned to text.
        offset: The history index of ``messages[0]``.
    """
    if not earlier or not sent:
        return messages
    out, done, called = list(messages), set[str](), set[str]()
    for i, message in enumerate(messages):
        if message.role != "user":  # a call reusing a sent id: what follows answers it
            called.update(c.id for c in message.tool_calls)
            continue
        parts: list[Part] = []
        for part in message.parts:
            cid = part.call_id if isinstance(part, ToolResult) else None
            if (
                not isinstance(part, ToolResult)
                or cid not in earlier
                or cid in done
                or cid in called
                or not _told_interrupted(sent, part.call_id, interrupted(part.name, part.call_id))
            ):
                parts.append(part)
                continue
            done.add(part.call_id)
            what = "error" if part.is_error else "result"
            text = LATE.format(
                name=part.name or "a tool", id=part.call_id, what=what, content=part.content
            )
            parts.extend((TextPart(text=text), *part.media))  # its media as a user's media
            add(
                i + offset,
                f"message {i + offset}: the result of call {shown(part.call_id)}, which a "
                "request already sent answered as not run, is sent as text",
                part.call_id,
            )
        if len(parts) != len(message.parts) or any(map(is_not, parts, message.parts)):
            out[i] = replace(message, parts=tuple(parts))
    return out
