"""Reasoning bound to what precedes it: drop what a repair in front of it invalidates.

On Anthropic's preserved-thinking models every ``thinking`` / ``redacted_thinking`` block
sent back is checked against everything sent before it: ``system``, ``tools`` and each
earlier message, whose values must be unchanged ("A serializer that drops unknown block
types, drops empty fields, or reorders blocks edits the prefix"); an edit invalidates
only the thinking after it, and removing a trailing run of thinking is allowed
(../shared/research/anthropic-preserved-thinking.md R6, R8, R9, R11;
https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks).

`normalize` keeps what the provider accepts as it was given, so a valid history comes
back unchanged. Where a repair is needed (a result for no call, a reused call id, a blank
text the API refuses, a result outside its batch...), the parts from the first repaired
one on differ from what the reasoning after them was produced after: `drop_invalidated`
finds that point, normalizes again without every reasoning part from there on, and
reports each message that lost its reasoning (``dropped_thinking``), as a host edit does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from contextchef.history._messages import Message, Part, ProviderPart, ReasoningPart
from contextchef.history._refused import Keeps

__all__ = ["drop_invalidated"]


def _never_sent(part: Part, keeps: Keeps | None) -> bool:
    """Another provider's reasoning or block: never sent to this target, so no prefix."""
    return isinstance(part, ReasoningPart | ProviderPart) and keeps is not None and not keeps(part)


def _stream(messages: Sequence[Message], keeps: Keeps | None) -> list[tuple[object, int, int]]:
    """The messages as one sequence: (role or part, message index, part index or -1).

    A role is listed where it changes: the API combines consecutive turns of one role
    into one ("Consecutive ``user`` or ``assistant`` turns in your request will be
    combined into a single turn", Messages API ``messages``), so merging them is no edit
    (an on-demand compaction block in its own assistant message stays valid, R22).
    """
    out: list[tuple[object, int, int]] = []
    for i, message in enumerate(messages):
        if not i or messages[i - 1].role != message.role:
            out.append((message.role, i, -1))
        out.extend((p, i, j) for j, p in enumerate(message.parts) if not _never_sent(p, keeps))
    return out


def _first_difference(given: list[tuple[object, int, int]], sent: list[object]) -> int:
    for k, ((a, _, _), b) in enumerate(zip(given, sent, strict=False)):
        if a is not b and (type(a) is not type(b) or a != b):
            return k
    return min(len(given), len(sent))


def drop_invalidated(
    history: tuple[Message, ...],
    messages: tuple[Message, ...],
    keeps: Keeps | None,
) -> tuple[tuple[Message, ...], list[int]] | None:
    """`history` without the reasoning a repair in front of it invalidates.

    Args:
        history: The messages as given.
        messages: `normalize`'s repaired messages for them.
        keeps: The target's test for the parts it receives (None: every part).

    Returns:
        None when no reasoning the target receives comes after the first part that
        differs; else `history` without the reasoning from that part on (to normalize
        again) and the indices in `history` of the messages that lost reasoning.
    """
    given = _stream(history, keeps)
    sent = [x for x, _, _ in _stream(messages, keeps)]
    k = _first_difference(given, sent)
    if k >= len(given):
        return None
    _, at, pos = given[k]
    lost: list[int] = []
    stripped = list(history)
    for i in range(at, len(history)):
        parts = history[i].parts
        kept = tuple(
            p
            for j, p in enumerate(parts)
            if not isinstance(p, ReasoningPart) or (i == at and j < pos) or _never_sent(p, keeps)
        )
        if len(kept) != len(parts):
            lost.append(i)
            stripped[i] = replace(history[i], parts=kept)
    return (tuple(stripped), lost) if lost else None
