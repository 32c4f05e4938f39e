"""Tool call ids made unique, so a reused id never costs an exchange (history layer).

Some OpenAI-compatible servers send ``""`` or the same id (``call_0``) on every turn, and
histories stored by such hosts carry those ids. Providers pair a result with its call by
id, so two calls sharing one cannot both be sent; dropping the later one would lose a
whole exchange the model made. Both entry points give the later call a new id instead:

- `unique_call_ids`: a model reply as it arrives (``ingest``), before the host runs it,
  so the host sees and answers the new id.
- `renamed_duplicates`: a history given whole (``set_history``, `normalize`), where the
  results are already there: each result goes, in order, to the oldest call with its id
  that has none yet, and takes that call's new id.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

from contextchef._errors import shown
from contextchef.history._messages import Message, Part, ToolCall, ToolResult

__all__ = ["renamed_duplicates", "unique_call_ids"]


def unique_call_ids(message: Message, taken: set[str], turn: int) -> Message:
    """`message` with each call id that is empty or already in `taken` replaced.

    The new id (``call_<turn>_<n>``) is what the session and the provider see from then
    on. `taken` gets every call id of the result.
    """
    parts: list[Part] = []
    for k, part in enumerate(message.parts):
        if isinstance(part, ToolCall) and (not part.id or part.id in taken):
            n = k
            while f"call_{turn}_{n}" in taken:
                n += 1
            part = replace(part, id=f"call_{turn}_{n}")
        if isinstance(part, ToolCall):
            taken.add(part.id)
        parts.append(part)
    return replace(message, parts=tuple(parts))


def renamed_duplicates(
    messages: Sequence[Message],
    earlier: Collection[str],
    report: Callable[[int, str, str], None],
    offset: int = 0,
) -> list[Message]:
    """`messages` with each call whose id an earlier call holds given a new id.

    The new id is the old one with the first free ``_<n>`` suffix (n >= 2; free of every
    id in `messages` and `earlier`), so it is stable: the same history gives the same ids.
    Results are matched to calls in order (first in, first out per id), so a reused id in
    sequential exchanges and within one parallel batch both pair as they were made. A
    result no call is waiting for keeps its id (the pairing step drops it as a second
    result or an orphan, as before).

    Args:
        messages: The history, oldest first; not mutated.
        earlier: Ids of calls already sent (a `Continuation`'s); a call reusing one is
            renamed too.
        report: Called as ``report(index, old_id, detail)`` for each renamed call; index
            counts from `offset`.
        offset: Index of ``messages[0]`` in the history, for reports.
    """
    if not _reuses(messages, earlier):
        return list(messages)
    taken = set(earlier) | {
        p.id if isinstance(p, ToolCall) else p.call_id
        for m in messages
        for p in m.parts
        if isinstance(p, (ToolCall, ToolResult))
    }
    seen = set(earlier)
    waiting: dict[str, deque[str]] = {}  # an id as written -> calls with it not yet answered
    out: list[Message] = []
    for i, message in enumerate(messages, start=offset):
        parts: list[Part] = []
        for part in message.parts:
            if isinstance(part, ToolCall):
                written = part.id
                if written in seen:
                    n = 2
                    while f"{written}_{n}" in taken:
                        n += 1
                    part = replace(part, id=f"{written}_{n}")
                    taken.add(part.id)
                    report(
                        i,
                        written,
                        f"message {i}: a second call with id {shown(written)} to "
                        f"{shown(part.name)} was given the id {shown(part.id)} (the first "
                        "keeps its own); its result follows it",
                    )
                seen.add(written)
                waiting.setdefault(written, deque()).append(part.id)
            elif isinstance(part, ToolResult) and waiting.get(part.call_id):
                new = waiting[part.call_id].popleft()
                if new != part.call_id:
                    part = replace(part, call_id=new)
            parts.append(part)
        same = all(a is b for a, b in zip(parts, message.parts, strict=True))
        out.append(message if same else replace(message, parts=tuple(parts)))
    return out


def _reuses(messages: Sequence[Message], earlier: Collection[str]) -> bool:
    """Whether a call in `messages` has the id of a call before it (or in `earlier`)."""
    seen = set(earlier)
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCall):
                if part.id in seen:
                    return True
                seen.add(part.id)
    return False
