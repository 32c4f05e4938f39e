"""Compaction over deferred tools: the tools a summary drops are named in it (deferred layer).

`compact_history` wraps `contextchef.compact` for a session (its `compact` and the
overflow handoff): deferred tools whose schemas were loaded in the summarized part are
named in the summary message (so the model knows to load them again) and leave the loaded
set; the session may add a note of its own (the skills still loaded); a summary followed
by a user turn becomes one user message (the alternation every provider wants). With an
archive, the summarized messages are archived and the summary lists what was dropped
(`contextchef.history._archive.compaction_note`), in the room the compaction leaves it
below half the trigger (`contextchef.history._notes`: the notes give way, not the kept turns).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from contextchef.deferred._meta import TOOL_SEARCH
from contextchef.history._archive import Archive, ArchiveReason, compaction_note
from contextchef.history._compaction import Compacted, compact, loaded_tool_names, pending_tail
from contextchef.history._messages import Message, TextPart
from contextchef.history._normalize import normalize
from contextchef.history._notes import NoteBudget, notes_room

__all__ = ["compact_history"]


def compact_history(
    history: Sequence[Message],
    loaded: set[str],
    summarize: Callable[[str], str],
    keep: int,
    note: Callable[[Sequence[Message]], str] | None = None,
    archive: tuple[Archive | None, ArchiveReason] = (None, "compaction"),
    budget: NoteBudget | None = None,
) -> tuple[Compacted, set[str]]:
    """Compact `history`; returns the result and the wire names still loaded.

    Args:
        history: The history.
        loaded: Wire names loaded now.
        summarize: The summarizer.
        keep: User turns kept verbatim (`compact`'s ``keep_recent_turns``).
        note: Given the kept messages, text to add to the summary (``""``: none).
        archive: Where the summarized messages go, and why (None: nowhere).
        budget: The session's compaction trigger and fixed part in tokens, if known: the
            archive note takes at most what leaves half the trigger free after the
            compaction, its quotes at most a share of the trigger (`notes_room`,
            `contextchef.history._quotes`).

    Raises:
        UsageError: `summarize` failed or returned no text (see `contextchef.compact`).
    """
    cut = pending_tail(history)  # a pending call's run stays after the summary, as it is
    done = compact(normalize(history[:cut]).messages, summarize, keep_recent_turns=keep)
    messages = list(done.messages)
    notes: list[str] = []
    if done.reactivate and done.plan.to_summarize:
        notes.append(
            "Tools you loaded earlier with tool_search (load them again before "
            "calling them): " + ", ".join(done.reactivate)
        )
        kept = loaded_tool_names(done.plan.to_keep, search_tool=TOOL_SEARCH)
        loaded = {w for w in loaded if w not in done.reactivate or w in kept}
    extra = note(done.plan.to_keep) if note is not None and done.plan.to_summarize else ""
    removed, trigger = done.plan.to_summarize, None if budget is None else budget.trigger
    room = notes_room(budget, [*messages, *history[cut:]], "\n\n".join([*notes, extra]))
    dropped = compaction_note(archive[0], removed, reason=archive[1], trigger=trigger, room=room)
    notes += [n for n in (extra, dropped) if n]
    first = messages[0] if notes else None
    if first is not None and isinstance(first.parts[0], TextPart):
        text = first.parts[0].text + "".join(f"\n\n{n}" for n in notes)
        messages[0] = dataclasses.replace(first, parts=(TextPart(text=text), *first.parts[1:]))
    if len(messages) > 1 and messages[1].role == "user":
        # one user turn: the summary first, then what the user said (keeps the
        # alternation every provider wants without a merge at each compile)
        messages[:2] = [Message(role="user", parts=(*messages[0].parts, *messages[1].parts))]
    return dataclasses.replace(done, messages=(*messages, *history[cut:])), loaded
