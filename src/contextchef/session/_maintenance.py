"""`Maintenance`: a session's responses in, snapshots, compaction and the handoff.

Snapshots are `SessionState.to_dict` plus a tool record (`contextchef.session._snapshot`);
restore checks the signature and everything else before it changes anything, and keeps the
host's policy. Compaction, clearing and the overflow handoff replace the stored history
explicitly (see `contextchef.deferred._compaction`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from contextchef._errors import UsageError, check_int, shown
from contextchef._signing import SnapshotKeys, sign, verify
from contextchef.deferred._compaction import compact_history
from contextchef.deferred._groups import LOAD_TOOLKIT
from contextchef.deferred._shape import limit_differences
from contextchef.exposure._policy import Mode
from contextchef.exposure._restore import (
    PolicyDifference,
    PolicyValues,
    allowed_loads,
    loadable_toolkits,
    restore_policy,
)
from contextchef.history._archive import Archive, clear_tool_results_archived
from contextchef.history._archive import ArchiveReason as Reason
from contextchef.history._compaction import Cleared, Compacted
from contextchef.history._compaction import loaded_tool_names as searched
from contextchef.history._forms import digest
from contextchef.history._lazy import call_ids
from contextchef.history._messages import ToolCall, check_message
from contextchef.history._turns import placed_reply
from contextchef.history._unique_ids import unique_call_ids
from contextchef.providers import ResponseNotice, get_adapter, read_response, synthetic_offset
from contextchef.providers._base import SchemaReport
from contextchef.providers._budget import Due, budget_notices, compaction_due, note_budget
from contextchef.providers._compacted import (
    foreign_compaction,
    newly_compacted,
    provider_cleared,
    swap_in,
    switch_summarizer,
    without_compaction,
)
from contextchef.providers._reading import fresh_turn, renamed_ids
from contextchef.providers._schema_reports import schema_reports
from contextchef.providers._targets import reply_target
from contextchef.providers._usage import CacheReport, SentRequest, compared
from contextchef.session._ledger import Ledger, pending_answered
from contextchef.session._memory import OverflowHandoff, Summarizer, handoff_keep_turns
from contextchef.session._skills import Skills
from contextchef.session._snapshot import (
    checked,
    read_skills,
    read_snapshot,
    runtime_tools,
    snapshot_of_text,
    take_snapshot,
)
from contextchef.session._state import SessionState
from contextchef.session._toolset import SessionTools
from contextchef.session._volatile import CompileEvent, VolatileState
from contextchef.tools._recorded import recorded_withdrawn

__all__ = ["Maintenance"]

logger = logging.getLogger("contextchef")


class Maintenance:
    """Responses in, snapshots, compaction, clearing and the overflow handoff.

    Args:
        state: The session's data (history, ledgers); a restore changes it in place.
        tools: The session's tools (snapshots record them; restore checks them).
        volatile: The event handlers (``response:notice``, ``response:cache``).
        skills: The session's skills (a compaction restates the loaded ones).
        modes: The session's named modes (a snapshot names its mode).
        handoff: The overflow handoff, or None.
        archive: Where compaction and clearing put what they remove, or None.
    """

    def __init__(
        self,
        *,
        state: SessionState,
        tools: SessionTools,
        volatile: VolatileState,
        skills: Skills,
        modes: Mapping[str, Mode],
        handoff: OverflowHandoff | None,
        archive: Archive | None,
        never_clear: tuple[str, ...] = (),
    ) -> None:
        self._state = state
        self._tools = tools
        self._volatile = volatile
        self._skills = skills
        self._modes = modes
        self.handoff, self.archive, self._never_clear = handoff, archive, never_clear
        self._archived: set[str] = set()  # call ids whose results a provider cleared
        self.notices: tuple[ResponseNotice, ...] = ()
        self.cache_reports: tuple[CacheReport, ...] = ()
        self._ingested: dict[str, tuple[str, ...] | None] = {}  # id -> turn digests
        self.summarized: dict[str, int] = {}  # wire -> what its on-demand compaction sent

    def ingest(self, response: object) -> tuple[ToolCall, ...]:
        """Append the model's turn of a response; see `ContextChef.ingest`."""
        history = self._state.history
        ids = call_ids(history)  # a lazy message's from its form
        read = read_response(response, id_offset=synthetic_offset(ids, len(history)))
        turn = tuple(digest(m) for m in read.turn.messages)
        if read.id in self._ingested and self._ingested[read.id] in (turn, None):  # None: restored
            raise UsageError(
                f"response {shown(read.id, 80)} was ingested already (its turn is in the history); "
                "ingest each response once"
            )
        messages = tuple(unique_call_ids(m, ids, len(history)) for m in read.turn.messages)
        read = replace(read, notices=(*read.notices, *renamed_ids(read.turn.messages, messages)))
        messages = fresh_turn(history, messages)
        for i, message in enumerate(messages, start=len(history)):
            check_message(message, i)
        target, read = reply_target(read, self._state.compiled, self._state.ledgers)
        ledger = self._state.ledgers.get(target)
        asked = ledger.sent if ledger else SentRequest()
        joined, messages = asked.join(history, messages, read.refused)  # a refusal: as is
        placed = None  # the reply goes right after what its request sent (`placed_reply`)
        if ledger and ledger.pending and not ledger.answered and joined is history:
            placed = placed_reply(history, ledger.history, ledger.pending.history, messages)
        self._state.history = placed or swap_in(joined, messages, self.summarized)
        first, away = newly_compacted(self._state.history, messages)
        if away and self.archive is not None:  # the provider compacted them out of view
            self.archive.add(away, reason="compaction", first=first)
        for n in read.notices:  # ... or cleared them
            if n.cleared_tool_uses and self.archive is not None:
                wire = get_adapter(target).profile.wire
                at, cleared, ids = provider_cleared(
                    history, wire, n.cleared_tool_uses, self._never_clear, self._archived
                )
                self.archive.add(cleared, reason="clear_tool_results", first=at)
                self._archived |= ids
        if read.id:  # "" names no response: a reply without an id is never "the same"
            self._ingested[read.id] = turn
        if ledger is not None:
            ledger.answered = True
            ledger.response_id = read.id or None  # a reply without an id chains to none
            ledger.sent = ledger.sent.answered_by(read, compacted=bool(away))
            if pending_answered(ledger, self._state.history):
                ledger.undo = None  # the edit was answered: it stays (as compile would say)
        self.notices = (*self.notices, *read.notices)
        report = compared(read.cache, target, replace(asked, rebased=asked.rebased or bool(away)))
        self.cache_reports = (*self.cache_reports, report)
        for notice in read.notices:
            logger.log(notice.level, "contextchef: %s", notice.detail)
            self._volatile.emit(CompileEvent(name="response:notice", target=target, notice=notice))
        self._volatile.emit(CompileEvent(name="response:cache", target=target, cache=report))
        return tuple(p for m in messages for p in m.parts if isinstance(p, ToolCall))

    # -- snapshots -----------------------------------------------------------------------

    def snapshot(
        self, keys: SnapshotKeys | None = None, session_id: str | None = None, base: Any = None
    ) -> dict[str, Any]:
        """The session's data as a snapshot, signed with `keys`; see `ContextChef.snapshot`."""
        taken = take_snapshot(self._state, self._tools, base)
        return sign(taken, keys, session_id=session_id, finite=True)  # state holds no NaN

    def restore(
        self,
        snapshot: Mapping[str, Any] | str | bytes,
        *,
        narrow: bool = False,
        signed: bool = False,
        owned: bool = False,
        **trust: Any,
    ) -> tuple[PolicyDifference, ...]:
        """Restore a snapshot, checked before anything changes; see `ContextChef.restore`.

        `owned`: the snapshot is the restore's (`SessionState.from_dict`), never changed;
        so is one given as JSON text, read here.
        """
        floats: list[str] | None = None if isinstance(snapshot, Mapping) else []  # read here
        if isinstance(snapshot, (str, bytes, bytearray)):
            snapshot, owned = snapshot_of_text(snapshot, floats), True
        signed = signed or (  # an owned snapshot was read by `strict_loads`: no NaN in it
            isinstance(snapshot, Mapping)
            and verify(snapshot, finite=owned, floats=floats != [], **trust)
        )
        snapshot = checked(snapshot)  # once, against the snapshot's declared form
        coming, withdrawn = runtime_tools(snapshot, self._tools), snapshot["tools"].get("withdrawn")
        gone = recorded_withdrawn(withdrawn or (), self._tools.registry, coming)  # none callable
        state = read_snapshot(
            snapshot, tools=self._tools, coming=coming.tools, gone=gone, signed=signed, owned=owned
        )
        skills = read_skills(snapshot, tools=self._tools)
        host = PolicyValues.of(self._state)
        policy, notes = restore_policy(host, snapshot, modes=self._modes, narrow=narrow)
        policy.apply_to(state)  # the host's policy (narrowed by the snapshot if asked)
        state.loaded_toolkits, dropped = loadable_toolkits(
            state.loaded_toolkits, state.blocked, LOAD_TOOLKIT
        )
        state.new_context_pending = state.new_context_pending and self.handoff is not None
        pending = len(self._tools.pending_additions)
        if coming.new:  # the runtime tools the conversation made (no handlers: the host's)
            self._tools._add_runtime(list(coming.new), {})
        coming.adopt(self._tools.registry)  # those a server lists now (the view is rebuilt)
        if gone.new:  # declared as they were sent, refused (the view: `set_policy` below)
            self._tools.registry.add(gone.new)
        state.withdrawn = dict(gone.reasons)
        for kit in state.loaded_toolkits:
            self._tools.load_toolkit(kit)
        self._tools.drop_additions(pending)  # loads made by restore are not news to announce
        self._tools.set_skills(skills)
        self._state.adopt(state)
        self._tools.set_policy(state.policy())
        find, exposed = self._tools.registry.by_wire_name, self._tools.view().exposure
        found = None if signed or not self._tools.config.require_search else self._found()
        self._state.loaded, loads = allowed_loads(state.loaded, find, exposed, state.blocked, found)
        notes += dropped + loads + limit_differences(snapshot["tools"].get("shape"), self._tools)
        left = self._tools.view() if all(n.field == "strategy" for n in notes) else None
        for ledger in self._state.ledgers.values():  # sent tools kept if only reworded
            ledger.reworded = left  # (a policy difference may change the tools itself)
        if notes:  # a strategy alone is the last compile's: the next compile sets it anyway
            level = logging.INFO if {n.field for n in notes} == {"strategy"} else logging.WARNING
            logger.log(
                level, "contextchef: restore: snapshot differs: %s", "; ".join(map(str, notes))
            )
        # the last answer each target got is in the history: ingesting it again is refused
        self._ingested = dict.fromkeys(
            lg.response_id for lg in state.ledgers.values() if lg.response_id
        )
        return notes

    def _found(self) -> set[str]:
        """Wire names the history shows found: by a search, a loaded skill or toolkit."""
        kits = (t for t in self._tools.registry.tools if self._tools.is_kit_tool(t))
        kit_names = {self._tools.registry.wire_name_for(t) for t in kits}
        return {*searched(self._state.history), *self._skills.loaded_tools(), *kit_names}

    def schema_reports(self) -> tuple[SchemaReport, ...]:
        """What each target's schema dialect changes; see `ContextChef.schema_reports`."""
        return tuple(r for tool in self._tools.all() for r in schema_reports(tool))

    # -- history maintenance -------------------------------------------------------------

    def compact(
        self, summarize: Summarizer, keep_recent_turns: int = 2, why: Reason = "compaction"
    ) -> Compacted:
        """Replace old turns with a summary at a safe point; see `ContextChef.compact`."""
        keep, state = check_int("keep_recent_turns", keep_recent_turns), self._state
        self._no_cut_reply("compact")
        note, archived = self._skills.reminder, (self.archive, why)
        done, loaded = compact_history(
            state.history, state.loaded, summarize, keep, note, archived, state.budget
        )
        state.loaded = loaded | state.loaded & self._skills.loaded_tools()  # skills' stay
        state.history = done.messages
        return done

    def clear_tool_results(self, **options: Any) -> Cleared:
        """Replace old tool results with a placeholder; see `ContextChef.clear_tool_results`."""
        self._no_cut_reply("clear_tool_results")
        done = clear_tool_results_archived(self._state.history, self.archive, **options)
        self._state.history = tuple(done.messages)
        return done

    def _awaits_continuation(self) -> bool:
        """Whether the last reply was cut at the decode cap and nothing was added since."""
        ledger = self._state.ledgers.get(self._state.compiled or "") or Ledger()
        mark = ledger.pending if ledger.answered and ledger.sent.continuation is not None else None
        return mark is not None and len(self._state.history) <= mark.history + 1

    def _no_cut_reply(self, what: str) -> None:
        """Refuse to rewrite the history while the last reply awaits its continuation."""
        if self._awaits_continuation():  # the handoff waits for it (`handoff_if_due`)
            raise UsageError(
                f"{what}: the last reply was cut at the decode cap (requires_continuation); "
                "compile again to resume it first (CompiledRequest.resumes), or append a "
                "message to give the continuation up"
            )

    def request_new_context(self) -> None:
        """Make the next compile apply the handoff; see `ContextChef.request_new_context`."""
        if self.handoff is None:
            raise UsageError(
                "request_new_context needs an overflow handoff; create the session with "
                "ContextChef(on_overflow=<summarizer>)"
            )
        self._state.new_context_pending = True

    def handoff_if_due(self, request: Due | None = None, wire: str = "") -> None:
        """At compile start: the handoff if asked, due (`compaction_due`) or at a switch."""
        state, handoff = self._state, self.handoff
        state.budget = note_budget(request) or state.budget  # bounds the summary's notes
        limit = None if handoff is None else handoff.max_history_tokens
        due, over = compaction_due(state.history, request, limit)
        own = None if handoff is None else handoff.summarize
        summarize = switch_summarizer(state.history, wire, own)
        reason: Reason = "compaction"  # a provider switch: the foreign part summarized
        foreign = foreign_compaction(state.history, wire) if summarize else None
        if summarize is None and (state.new_context_pending or due or over):
            summarize, reason = own, "handoff"
        if summarize is not None and state.history and not self._awaits_continuation():
            run = partial(self.compact, summarize, handoff_keep_turns(state.history), reason)
            said = state.retry.run(run, len(state.history), forced=reason == "compaction")
            if said is None:  # a kept pending turn may hold it: the summary stands for it now
                state.history = without_compaction(state.history, foreign)
                state.new_context_pending = False
            self.notices += said or ()  # a failure said and waited out (`SummaryRetry`)
        elif due and handoff is None:  # nothing to summarize with: never a silent no-op
            logger.warning("contextchef: past compact_at with no on_overflow; call chef.compact()")
        self.notices += budget_notices(state.history, request, limit, state.noticed)
