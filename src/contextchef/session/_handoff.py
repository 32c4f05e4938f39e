"""History maintenance on a session: compaction with tool re-announcement, the handoff.

`compact_history` wraps `contextchef.compact` for a session: deferred tools whose schemas
were loaded in the summarized part are named in the summary message (so the model knows
to load them again) and leave the loaded set; the session may add a note of its own (the
skills still loaded); a summary followed by a user turn becomes one user message (the
alternation every provider wants). `handoff_due` says when the
overflow handoff applies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from contextchef.deferred._meta import TOOL_SEARCH
from contextchef.history._compaction import Compacted, compact, loaded_tool_names
from contextchef.history._messages import Message, TextPart
from contextchef.history._normalize import normalize
from contextchef.session._memory import OverflowHandoff, history_tokens

__all__ = ["compact_history", "handoff_due"]


def compact_history(
    history: Sequence[Message],
    loaded: set[str],
    summarize: Callable[[str], str],
    *,
    keep_recent_turns: int,
    note: Callable[[Sequence[Message]], str] | None = None,
) -> tuple[Compacted, set[str]]:
    """Compact `history`; returns the result and the wire names still loaded.

    Args:
        history: The history.
        loaded: Wire names loaded now.
        summarize: The summarizer.
        keep_recent_turns: User turns kept verbatim.
        note: Given the kept messages, text to add to the summary (``""``: none).

    Raises:
        UsageError: `summarize` failed or returned no text (see `contextchef.compact`).
    """
    done = compact(normalize(history).messages, summarize, keep_recent_turns=keep_recent_turns)
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
    if extra:
        notes.append(extra)
    first = messages[0] if notes else None
    if first is not None and isinstance(first.parts[0], TextPart):
        text = first.parts[0].text + "".join(f"\n\n{n}" for n in notes)
        messages[0] = dataclasses.replace(first, parts=(TextPart(text=text), *first.parts[1:]))
    if len(messages) > 1 and messages[1].role == "user":
        # one user turn: the summary first, then what the user said (keeps the
        # alternation every provider wants without a merge at each compile)
        messages[:2] = [Message(role="user", parts=(*messages[0].parts, *messages[1].parts))]
    return dataclasses.replace(done, messages=tuple(messages)), loaded


def handoff_due(
    handoff: OverflowHandoff | None, history: Sequence[Message], *, requested: bool
) -> bool:
    """Whether the overflow handoff applies now: requested, or over its history budget."""
    if handoff is None or not history:
        return False
    limit = handoff.max_history_tokens
    return requested or (limit is not None and history_tokens(history) > limit)
