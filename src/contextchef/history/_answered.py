"""Calls answered already: a call runs once (history layer).

Each tool call is answered by exactly one result. Running a call whose result the history
holds already (a host's retry of ``run_tools``, or ``execute`` of a call run before) would
run its side effects a second time, and the second result would reach the model nowhere:
a second result of one call is left out of every later request
(``dropped_duplicate_result``). `refuse_answered` refuses it before anything runs.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from contextchef._errors import UsageError, shown
from contextchef.history._lazy import parts_or_forms
from contextchef.history._messages import Message, ToolCall

__all__ = ["refuse_answered"]


def _answered(messages: Sequence[Message], ids: set[str]) -> dict[str, int]:
    """Each of `ids` answered after the last message calling it -> that answer's index.

    A call id a provider reused (the host's own messages may repeat one) counts from its
    last call; an id no message calls is not judged (a call run before it is appended).
    """
    out: dict[str, int] = {}
    results: dict[str, int] = {}
    for i in range(len(messages) - 1, -1, -1):
        if not ids:
            break
        for part in parts_or_forms(messages[i]):  # a lazy message's part forms, unbuilt
            kind = part.get("kind") if type(part) is dict else getattr(part, "kind", None)
            if kind == "tool_result":
                key = part["call_id"] if type(part) is dict else part.call_id
                results.setdefault(key, i)
            elif kind == "tool_call":
                key = part["id"] if type(part) is dict else part.id
                if key in ids:
                    ids.discard(key)
                    if key in results:
                        out[key] = results[key]
    return out


def refuse_answered(
    calls: Sequence[ToolCall], history: Sequence[Message], running: Collection[str] = ()
) -> None:
    """Refuse to run any of `calls` whose result `history` holds after its call.

    Args:
        calls: The calls about to run (their ids given by the model, via ``ingest``).
        history: The session's history.
        running: Ids of calls running now (an ``arun_tools`` awaiting its handlers),
            whose results are not in the history yet.

    Raises:
        UsageError: Naming each such call and the message answering it (or that it is
            running); nothing has run.
    """
    if not calls:
        return
    found = _answered(history, {c.id for c in calls})
    problems = [
        f"{shown(c.name, 80)} (call id {shown(c.id, 80)}) is answered in history message "
        f"{found[c.id]}"
        if c.id in found
        else f"{shown(c.name, 80)} (call id {shown(c.id, 80)}) is running now, in another "
        "arun_tools"
        for c in calls
        if c.id in found or c.id in running
    ]
    if problems:
        raise UsageError(
            "a call runs once, and these are answered or running already: "
            + "; ".join(problems)
            + "; nothing was run (to run a tool again, give it a call of a new id)"
        )
