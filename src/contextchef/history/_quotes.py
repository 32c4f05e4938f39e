"""The user's own words in a compaction note, bounded and carried once (history layer).

A compaction note (`contextchef.history._archive.dropped_note`) quotes what the user said
in the removed turns: a summary may drop a standing instruction, the user's words may
not. Each later compaction summarizes the earlier summary too, so its quotes are carried
into the new note. What the library adds this way must not grow with every compaction
(break-it round 20: a 3-token summary became a 984-token message, nine identical
``> (more in the archive)`` lines, and the session compacted on 38 of 40 turns):

* an earlier note's quotes are carried once (the same quote twice is kept once) and its
  ``> (more in the archive)`` marker is never carried: a note has at most one, last;
* the quotes are kept oldest first (the task and standing instructions come first) within
  `QUOTES_TOTAL_CHARS` characters and, when the session's compaction trigger is known,
  within 1/`QUOTES_SHARE` of it in tokens (`estimate_tokens`), and within the room the
  compaction leaves its notes (`contextchef.history._notes`); the rest are in the archive.

Since the quotes kept are the oldest, a full note stays the same from one compaction to
the next instead of growing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from contextchef._tokens import estimate_tokens
from contextchef.history._compaction import SUMMARY_TAG
from contextchef.history._messages import Message, TextPart
from contextchef.history._normalize import is_user_turn

__all__ = ["MORE", "QUOTES_SHARE", "QUOTES_TOTAL_CHARS", "QUOTE_CHARS", "quote_lines"]

QUOTE_CHARS = 300
"""Most characters of one user message quoted in a compaction note."""
QUOTES_TOTAL_CHARS = 2_000
"""Most characters of all quotes in one compaction note."""
QUOTES_SHARE = 8
"""The quotes take at most 1/`QUOTES_SHARE` of the compaction trigger (tokens), if known."""
MORE = "> (more in the archive)"
"""The line after the quotes when some did not fit."""


def _quotes(messages: Sequence[Message]) -> list[str]:
    """The user's words as JSON strings: each user text turn, and an older note's quotes."""
    quotes: list[str] = []
    for message in messages if messages else ():
        for part in message.parts if is_user_turn(message) else ():
            if not isinstance(part, TextPart):
                continue
            if part.text.startswith(f"<{SUMMARY_TAG}>"):  # an older summary: its quotes only
                quotes += [x[2:] for x in part.text.splitlines() if x.startswith('> "')]
            elif part.text.strip():
                text = " ".join(part.text.split())
                cut = text[:QUOTE_CHARS] + ("…" if len(text) > QUOTE_CHARS else "")
                quotes.append(json.dumps(cut, ensure_ascii=False))
    return list(dict.fromkeys(quotes))  # carried once


def quote_lines(
    messages: Sequence[Message], *, trigger: int | None = None, room: int | None = None
) -> list[str]:
    """The note's ``> "…"`` lines (JSON strings) for the removed `messages`, then `MORE`.

    Oldest first, within `QUOTES_TOTAL_CHARS` characters and, with `trigger` (the
    compaction trigger, tokens), within ``trigger // QUOTES_SHARE`` estimated tokens, and
    within `room` estimated tokens if given (`contextchef.history._notes.notes_room`);
    `MORE` follows once when some were left out. ``[]`` when the user said nothing.
    """
    shares = [
        x for x in (None if trigger is None else trigger // QUOTES_SHARE, room) if x is not None
    ]
    chars, tokens = QUOTES_TOTAL_CHARS, min(shares, default=None)
    lines: list[str] = []
    for quote in _quotes(messages):
        cost = estimate_tokens(quote) + 1
        if len(quote) > chars or (tokens is not None and cost > tokens):
            return [*lines, MORE]
        lines.append(f"> {quote}")
        chars -= len(quote)
        tokens = None if tokens is None else tokens - cost
    return lines
