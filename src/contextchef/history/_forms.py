"""A history's JSON forms (history layer): checked on the way in, written against itself.

`checked_history` reads a history given as `Message` values or their `Message.to_dict`
form; `messages_form` writes a list of messages derived from a history (a ledger's
normalized messages) as indices of the history messages they equal, so a snapshot holds
the conversation once, and `messages_of_form` reads it back.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from contextchef._errors import UsageError
from contextchef.history._messages import Message, check_message, message_from_dict

__all__ = ["checked_history", "forms_over", "leading", "messages_form", "messages_of_form"]


def checked_history(messages: object) -> tuple[Message, ...]:
    """A history given as `Message` values or their `Message.to_dict` form, checked.

    Raises:
        UsageError: `messages` is not a list (or other iterable), or iterating it raised.
        CorruptHistoryError: An entry is malformed (its index is named).
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        hint = ""
        if type(messages).__name__ == "ParsedHistory":  # from_anthropic(...) and the like
            hint = (
                ": pass its .messages (and its .system, if any, to set_system_prompt), e.g. "
                "set_history(from_anthropic(stored).messages)"
            )
        raise UsageError(
            f"a history is a list of Message values, got {type(messages).__name__}{hint}"
        )
    try:
        given = list(messages)
    except Exception as exc:  # the caller's iterable raised: nothing is replaced
        raise UsageError(f"reading the history raised {type(exc).__name__}: {exc}") from exc
    out = []
    for i, item in enumerate(given):
        if isinstance(item, Mapping):
            out.append(message_from_dict(item, index=i))  # checked as it is built
        else:
            check_message(item, i)
            out.append(item)
    return tuple(out)


def forms_over(
    messages: Sequence[Message], before: Sequence[Message], forms: Sequence[Any]
) -> list[Any]:
    """`Message.to_dict` of each of `messages`; ``forms[i]`` itself where it is ``before[i]``.

    `forms` is an earlier list of these forms and `before` the messages it was written
    from (or built from): an unchanged message shares its form (`SessionSync` then
    compares the two lists by identity, and writes no message twice).
    """
    n = min(len(before), len(forms))
    return [forms[i] if i < n and m is before[i] else m.to_dict() for i, m in enumerate(messages)]


def leading(messages: Sequence[Message], history: Sequence[Message]) -> int:
    """How many of `messages` lead `history` (the same or equal messages, in order)."""
    pairs = zip(messages, history, strict=False)
    return sum(1 for _ in itertools.takewhile(lambda p: p[0] is p[1] or p[0] == p[1], pairs))


def messages_form(messages: Sequence[Message], history: Sequence[Message]) -> list[Any]:
    """`messages` as plain JSON written against `history`, which holds most of them.

    A message that is (or equals) a history message is that message's index; any other
    is its `Message.to_dict` form (`messages_of_form` reads it back). So a list of
    messages derived from a history (a ledger's normalized messages) holds no copy of it.
    """
    index = {id(m): i for i, m in enumerate(history)}
    out: list[Any] = []
    at = 0  # where the next message most likely is (a few later if some were changed)
    for message in messages:
        i = index.get(id(message))
        if i is None:
            near = range(at, min(at + 4, len(history)))
            i = next((k for k in near if history[k] == message), None)
        out.append(message.to_dict() if i is None else i)
        at = at if i is None else i + 1
    return out


def messages_of_form(form: Sequence[Any], history: Sequence[Message], where: str) -> list[Message]:
    """The messages of a `messages_form` list (an index is that history message).

    Raises:
        UsageError: An index past `history` (`where` names the list).
        CorruptHistoryError: A malformed message.
    """
    bad = next((i for i, m in enumerate(form) if type(m) is int and m >= len(history)), None)
    if bad is not None:
        raise UsageError(
            f"{where} entry {bad} refers to history message {form[bad]}, which the snapshot "
            f"lacks (it holds {len(history)}); nothing was restored"
        )
    return [
        history[m] if type(m) is int else message_from_dict(m, index=i) for i, m in enumerate(form)
    ]
