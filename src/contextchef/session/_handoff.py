"""History maintenance on a session: compaction with tool re-announcement, the handoff.

`compact_history` wraps `contextchef.compact` for a session: deferred tools whose schemas
were loaded in the summarized part are named in the summary message (so the model knows
to load them again) and leave the loaded set; a summary followed by a user turn becomes
one user message (the alternation every provider wants). `handoff_due` says when the
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
) -> tuple[Compacted, set[str]]:
    """Compact `history`; returns the result and the wire names still loaded.

    Raises:
        UsageError: `summarize` failed or returned no text (see `contextchef.compact`).
    """
    done = compact(normalize(history).messages, summarize, keep_recent_turns=keep_recent_turns)
    messages = list(done.messages)
    if done.reactivate and done.plan.to_summarize:
        note = (
            "\n\nTools you loaded earlier with tool_search (load them again before "
            "calling them): " + ", ".join(done.reactivate)
        )
        first = messages[0]
        text = first.parts[0]
        if isinstance(text, TextPart):
            messages[0] = dataclasses.replace(
                first, parts=(TextPart(text=text.text + note), *first.parts[1:])
            )
        kept = loaded_tool_names(done.plan.to_keep, search_tool=TOOL_SEARCH)
        loaded = {w for w in loaded if w not in done.reactivate or w in kept}
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
