"""Where a compile's replay starts: a pure fold over a list of rollback rules.

A compile replays the ledger's entries up to a `Mark` and renders what comes after it.
Without a reason to go back, that mark is the pending one when the model answered it,
else the last committed one (`continue_from`). Each rule in `ROLLBACK_RULES` reads the
same `BaseFacts` and may name an earlier mark to start from, with the kind of edit that
reports it (`Rollback`); `decide_base` keeps the earliest. Adding a rule is adding one
function to the list.

Ties (two rules naming the same mark) are settled by `Rollback.rank`: a rollback to the
first mark that resends everything (``system`` / ``tools`` changed, or thinking bound to
an older prefix) reports its own kind; then the edit of the earliest history message
(the host's edit, or a thinking block the prefix no longer matches); then continuing
without an edit; a rollback because the model refuses what was sent (tool changes,
system entries) counts only where it is strictly earlier than every other.

Three adjustments need the normalized messages and so come after this fold, in
`contextchef.session._compile`: a pending mark whose answer left nothing to send is
replaced by the last committed one; an update with nothing to follow but the user turn
a cut went back to goes back one more mark, to join that turn; and an edit goes back one
more mark while the roles on both sides of it would not alternate.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contextchef.history._forms import same_message
from contextchef.history._messages import Message
from contextchef.providers import ModelRules
from contextchef.session._binding import unbound_cause
from contextchef.session._ledger import Ledger, Mark
from contextchef.session._request import EditKind

__all__ = [
    "ROLLBACK_RULES",
    "BaseFacts",
    "Rollback",
    "continue_from",
    "decide_base",
    "mark_before",
]


@dataclass(kw_only=True, slots=True)
class Rollback:
    """A mark to start the replay from, and the edit that takes it there (if any)."""

    mark: Mark
    kind: EditKind | None = None
    """The edit reported (None: no edit, the replay simply continues)."""
    at: int | None = None
    """The first history message the edit concerns (None: no edit)."""
    rank: int = 2
    """Order between rollbacks to the same mark (lowest wins; see the module docstring)."""
    cause: str = ""
    """Why, for the edit's detail (``""``: the edit kind says it)."""


@dataclass(kw_only=True, slots=True)
class BaseFacts:
    """Everything the rollback rules read; nothing in it is changed by them."""

    ledger: Ledger
    rules: ModelRules
    start: Mark
    """Where the replay continues without an edit (`continue_from`)."""
    edited_at: int | None
    """The first history message that differs from one sent and answered (None: none)."""
    prefix_change: EditKind | None
    """``system`` or ``tools`` when what precedes every message changed since it was
    sent and answered; ``model`` when everything is resent for another reason."""
    resend: bool
    """Thinking was sent across a rebase to a prefix-check model, or inline tool
    definitions to a platform without them: everything is sent again."""
    stale: bool
    """The messages sent name tools the new ``tools`` no longer declares."""
    force: int | None = None
    """A history index whose thinking (and all later) the prefix no longer binds."""
    marked: tuple[int, str] | None = None
    """The first wire entry the model refuses, and what it is (`Adapter.refused_at`)."""


Rule = Callable[[BaseFacts], Rollback | None]


def mark_before(ledger: Ledger, index: int) -> Mark:
    """The last committed mark at or before history index `index`."""
    return next(m for m in reversed(ledger.marks) if m.history <= index)


def _first_difference(a: Sequence[Message], b: Sequence[Message]) -> int:
    """The first index where history `a` leaves the consumed `b` (`same_message`)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if not same_message(x, y):
            return i
    return min(len(a), len(b))


def continue_from(
    ledger: Ledger, history: Sequence[Message], answered: bool
) -> tuple[Mark, int | None]:
    """The mark to continue from without an edit, and the history index of an edit.

    The pending mark when it was `answered` (a response was ingested after it, or the
    history holds an assistant turn right after what it consumed), else the last
    committed one. A change before the end of what was answered is an edit (its index
    is returned); a change after the last committed mark of a pending mark nobody
    answered is not: that request bound nothing.
    """
    consumed, pending = ledger.history, ledger.pending
    start = pending if pending is not None and answered else ledger.marks[-1]
    n = len(consumed)
    whole = len(history) >= n and history[:n] == consumed  # the common case, fast
    first = n if whole else _first_difference(history, consumed)
    if first >= n:
        return start, None
    if first >= start.history:
        return ledger.marks[-1], None  # only the unanswered tail changed: not an edit
    return ledger.marks[-1], first


# -- the rules ------------------------------------------------------------------------------


def history_edited(f: BaseFacts) -> Rollback | None:
    """The host changed a message already sent and answered: from the mark before it."""
    if f.edited_at is None:
        return None
    return Rollback(mark=mark_before(f.ledger, f.edited_at), kind="history", at=f.edited_at, rank=1)


def resend_all(f: BaseFacts) -> Rollback | None:
    """Thinking bound to an older prefix, or definitions the platform refuses: resend."""
    if not f.resend:
        return None
    return Rollback(mark=f.ledger.marks[0], kind=f.prefix_change or "model", at=0, rank=0)


def prefix_changed(f: BaseFacts) -> Rollback | None:
    """``system`` / ``tools`` changed where every message is bound to them.

    On a prefix-check model every thinking block is bound to the prefix; elsewhere the
    messages stay (the session reports a rebase) unless they name tools no longer
    declared.
    """
    if f.prefix_change is None or not (f.rules.prefix_check or f.stale):
        return None
    return Rollback(mark=f.ledger.marks[0], kind=f.prefix_change, at=0, rank=0)


def thinking_unbound(f: BaseFacts) -> Rollback | None:
    """A thinking block would follow another prefix than its own (`force`)."""
    if f.force is None:
        return None
    at, why = f.force, unbound_cause(f.ledger.binding_cache)  # a repeated block, if that is why
    return Rollback(mark=mark_before(f.ledger, at), kind="model", at=at, rank=1, cause=why)


def tool_changes_refused(f: BaseFacts) -> Rollback | None:
    """The model takes no tool changes and some were sent: before the first of them."""
    ledger = f.ledger
    top = ledger.pending or ledger.marks[-1]
    if f.rules.tool_changes or not top.tools.sent:  # `sent` never goes back along marks
        return None
    at = next((i for i, m in enumerate(ledger.marks) if m.tools.sent), len(ledger.marks))
    mark = ledger.marks[max(at - 1, 0)]
    return Rollback(mark=mark, kind="model", at=mark.history, rank=3)


def entries_refused(f: BaseFacts) -> Rollback | None:
    """The model refuses entries that were sent: system entries, what `marked` names."""
    system = [] if f.rules.system_messages else f.ledger.system_entries[:1]
    first = min([*system, *([] if f.marked is None else [f.marked[0]])], default=None)
    if first is None:
        return None
    mark = next(m for m in reversed(f.ledger.marks) if m.wire <= first)
    what = "system entries" if first in system or f.marked is None else f.marked[1]
    why = f"model {f.rules.model!r} takes no {what}, and requests before carried them"
    return Rollback(mark=mark, kind="model", at=mark.history, rank=4, cause=why)


ROLLBACK_RULES: tuple[Rule, ...] = (
    history_edited,
    resend_all,
    prefix_changed,
    thinking_unbound,
    tool_changes_refused,
    entries_refused,
)
"""Every reason to replay from an earlier mark; `decide_base` keeps the earliest."""


def decide_base(facts: BaseFacts, rules: Sequence[Rule] = ROLLBACK_RULES) -> Rollback:
    """The earliest of `facts.start` and what `rules` name (ties by `Rollback.rank`).

    Pure: reads `facts`, changes nothing.
    """
    found = [r for rule in rules if (r := rule(facts)) is not None]
    start = Rollback(mark=facts.start)
    if not found:
        return start
    marks = facts.ledger.marks
    position = {id(m): i for i, m in enumerate(marks)}

    def key(r: Rollback) -> tuple[int, int, int]:
        where = position.get(id(r.mark), len(marks))  # the pending mark comes last
        return where, r.rank, sys.maxsize if r.at is None else r.at

    return min([start, *found], key=key)  # min keeps the first of equal keys
