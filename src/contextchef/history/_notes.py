"""How many tokens a compaction's own notes may take: headroom below the trigger (history layer).

A local compaction runs when the next request passes the compaction trigger (`NoteBudget`
``trigger``: `ContextPolicy.compact_at` of the budget, tokens). What the request holds after
it is the fixed part (system prompt and tools, which no compaction removes), the summary
message and the kept messages. The summary message is the summarizer's text plus the notes
the library adds to it (tools to load again, the skills still loaded, what was archived
with the user's words: `contextchef.history._archive.dropped_note`). When all that leaves
less than a turn of room under the trigger, the next turn is past it again and the
summarizer is paid on every turn: at a 1,200-token budget (a 960-token trigger) with turns
of about half of it, the notes (~180 tokens) beside the archive tool the session declares
(~300) made it 38 summarizer calls in 40 turns.

Of those parts only the notes are the library's to size: the fixed part is the host's, the
summary the summarizer's (an oversized one is reported: `providers._budget.summary_notice`),
and the kept messages are what the host asked to keep verbatim (``keep_recent_turns``; the
overflow handoff keeps only the user's current request). So the notes give way, not the
kept turns: a compaction's notes take at most what leaves 1/`HEADROOM_SHARE` of the trigger
free after it (`notes_room`), and the next compaction is due only once the conversation has
grown by about that much: one summarizer call per half trigger of new conversation at
worst, as a compaction that had nothing to add. Cutting the kept turns instead would
summarize away the request the model is about to answer, which the note could only quote.

Nothing is lost by a shorter note: every removed message is in the archive, and the
shortest note still names its entry (the locator is how a restored session finds the
entries again: `Archive.recover`). At ordinary budgets the room is far larger than the
notes, which are then bounded by their own caps only (`contextchef.history._quotes`), so
they read as before. Tokens are `estimate_tokens` over each message's canonical JSON form,
as `contextchef.providers.request_tokens` counts a request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextchef._json import canonical_dumps
from contextchef._tokens import estimate_tokens
from contextchef.history._messages import Message

__all__ = ["HEADROOM_SHARE", "NoteBudget", "messages_tokens", "notes_room"]

HEADROOM_SHARE = 2
"""After a compaction, at least 1/`HEADROOM_SHARE` of the trigger is left for new turns."""


@dataclass(frozen=True, kw_only=True)
class NoteBudget:
    """The figures a compaction sizes its notes by (the last compile's, in tokens).

    Attributes:
        trigger: The compaction trigger: input tokens of a request past which the
            session compacts (`ContextBudget.compact_trigger`).
        fixed: Our estimate of the system prompt and the tools the request declares
            (`ContextUsage.fixed`): what no compaction removes.
    """

    trigger: int
    fixed: int = 0

    @classmethod
    def read(cls, form: Sequence[int] | None) -> NoteBudget | None:
        """The budget of a snapshot's ``[trigger, fixed]`` (None: none recorded)."""
        return None if form is None else cls(trigger=form[0], fixed=form[1])


def messages_tokens(messages: Sequence[Message]) -> int:
    """Estimated tokens of `messages`: `estimate_tokens` of each one's canonical JSON form."""
    return sum(estimate_tokens(canonical_dumps(m.to_dict())) for m in messages)


def notes_room(budget: NoteBudget | None, result: Sequence[Message], notes: str = "") -> int | None:
    """Tokens the archive note of a compaction may take (None: no budget known, no bound).

    Args:
        budget: The session's figures, or None.
        result: The history the compaction leaves, without the archive note: the summary
            message, then the kept messages.
        notes: The other notes added to the summary (tools to load again, skills), kept
            whole and counted first.

    Returns:
        ``trigger // HEADROOM_SHARE - fixed - tokens(result) - tokens(notes)``; may be
        negative (the archive note then takes its shortest form).
    """
    if budget is None:
        return None
    taken = budget.fixed + messages_tokens(result) + estimate_tokens(notes)
    return budget.trigger // HEADROOM_SHARE - taken
