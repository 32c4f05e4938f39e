"""A query that is a conversation: its open request counts twice (search layer).

Some callers rank tools for a whole conversation rather than for one request (ACEBench's
multi-turn items, an application that picks tools from the chat so far). Such a query
is a transcript, one turn per role-prefixed block::

    user: I need to restore the firmware to version 1.0.
    system: [Firmware_Restore_Tool(firmware_id="12345", ...)]
    system: Firmware restored.
    user: Now show me the device's current status.

Everything before the last tool call is already answered, yet its words (the called
tool's name and arguments above all) outweigh the new request, so the tool that was
just called ranks first (benchmarks/RESULTS.md, issue 28: 21 of 26 ACEBench-en dev
misses). `open_request` finds the user turns after the last tool call, and `weighted`
scores them again as a second query at `RankerConfig.open_request_weight` (0.75) of the
whole transcript's weight, both normalized to [0, 1] first.

Format read: a turn starts a line with ``user:``, ``assistant:`` or ``system:``
(lower case, ACEBench's and most chat logs' prefixes; the assistant is often written
``system``); a tool call is a non-user turn that starts with ``[name(`` (the bracketed
call list of ACEBench, BFCL and Gorilla transcripts). Any other query, a transcript
without a tool call, and one whose last turns hold no user text are ranked as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from contextchef.search._rankers import normalized

if TYPE_CHECKING:
    import numpy as np

__all__ = ["open_request", "weighted"]

_TURN = re.compile(r"^(user|assistant|system):[ \t]*", re.M)
_CALL = re.compile(r"\[\s*[\w.\-]+\(")


def open_request(query: str) -> str | None:
    """The user turns of a transcript after its last tool call, joined by newlines.

    Returns:
        None when `query` is not a transcript (it does not start with a role prefix,
        or has one turn), holds no tool call, or no user turn follows the last call.
    """
    if ":" not in query:
        return None
    parts = _TURN.split(query)
    if len(parts) < 5 or parts[0].strip():  # ["", role, text, role, text, ...]
        return None
    turns = [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]
    calls = [i for i, (role, text) in enumerate(turns) if role != "user" and _CALL.match(text)]
    if not calls:
        return None
    asked = [text for role, text in turns[calls[-1] + 1 :] if role == "user" and text]
    return "\n".join(asked) or None


def weighted(query: str, weight: float, scores: Callable[[str], np.ndarray]) -> np.ndarray:
    """One query's scores, its open request (`open_request`) counted again at `weight`.

    Args:
        query: The query text.
        weight: The open request's share, >= 0 (0: `scores` of `query` alone).
        scores: Scores of every entry for one text (the ranker's, BM25 or fused).

    Returns:
        ``scores(query)`` when there is no open request; else ``normalized(scores(query))
        + weight * normalized(scores(request))`` (each divided by its best), in
        ``[0, 1 + weight]``.
    """
    whole = scores(query)
    request = open_request(query) if weight > 0 else None
    if request is None:
        return whole
    return normalized(whole) + weight * normalized(scores(request))
