"""Tool call ids made unique, so a reused id never costs an exchange (history layer).

Some OpenAI-compatible servers send ``""`` or the same id (``call_0``) on every turn, and
histories stored by such hosts carry those ids. Providers pair a result with its call by
id, so two calls sharing one cannot both be sent; dropping the later one would lose a
whole exchange the model made. Both entry points give the later call a new id instead:

- `unique_call_ids`: a model reply as it arrives (``ingest``), before the host runs it,
  so the host sees and answers the new id.
- `renamed_duplicates`: a history given whole (``set_history``, `normalize`), where the
  results are already there: each result goes to the open call with its id in the newest
  batch that wrote it (by tool name, else in order), and takes that call's new id.
"""

from __future__ import annotations

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
    A result answers an open call with its id from the newest assistant message that
    wrote that id (a call left open by an older one was abandoned: it is answered as
    interrupted), the one with the result's tool name if any, else the first in call
    order; so a reused id pairs as the exchange was made in sequential turns and within
    one parallel batch, whatever order the results come in. A result no call is waiting
    for keeps its id (the pairing step drops it as a second result or an orphan, as
    before).

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
    waiting: dict[str, list[ToolCall]] = {}  # an id as written -> its open calls, newest batch
    out: list[Message] = []
    for i, message in enumerate(messages, start=offset):
        parts: list[Part] = []
        batch: set[str] = set()  # ids written in this message: an older open call is closed
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
                if written not in batch:
                    batch.add(written)
                    waiting[written] = []
                waiting[written].append(part)
            elif isinstance(part, ToolResult) and waiting.get(part.call_id):
                open_calls = waiting[part.call_id]
                call = next((c for c in open_calls if c.name == part.name), open_calls[0])
                open_calls.remove(call)
                if call.id != part.call_id:
                    part = replace(part, call_id=call.id)
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
