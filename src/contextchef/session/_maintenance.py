"""`ContextChef`'s snapshot and history-maintenance methods.

Snapshots are `SessionState.to_dict` plus a tool record (`contextchef.session._snapshot`);
restore checks everything before it changes anything. Compaction, clearing and the
overflow handoff replace the stored history explicitly (see `contextchef.session._handoff`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from contextchef._errors import UsageError, shown
from contextchef.exposure._policy import Mode, unmatched_message
from contextchef.history._compaction import Cleared, Compacted, clear_tool_results
from contextchef.history._messages import Message, Part, ToolCall, check_message
from contextchef.providers import ResponseNotice, read_response, synthetic_index
from contextchef.providers._base import SchemaReport
from contextchef.session._handoff import compact_history, handoff_due
from contextchef.session._ledger import pending_answered
from contextchef.session._linting import schema_reports
from contextchef.session._memory import OverflowHandoff, handoff_keep_turns
from contextchef.session._snapshot import (
    checked,
    read_skills,
    read_snapshot,
    runtime_tools,
    take_snapshot,
)
from contextchef.session._state import SessionState
from contextchef.session._toolset import SessionTools
from contextchef.session._volatile import CompileEvent, VolatileState

__all__ = ["MaintenanceMixin"]

logger = logging.getLogger("contextchef")


class MaintenanceMixin:
    """Responses in, snapshots, compaction, clearing and the handoff for `ContextChef`."""

    _state: SessionState
    _tools: SessionTools
    _modes: dict[str, Mode]
    _handoff: OverflowHandoff | None
    _notices: tuple[ResponseNotice, ...]
    _ingested: set[str]
    _volatile: VolatileState
    _unmatched: str

    if TYPE_CHECKING:  # provided by SkillsMixin

        def _skill_tools(self) -> set[str]: ...

        def _skills_reminder(self, kept: Sequence[Message]) -> str: ...

    def ingest(self, response: object) -> tuple[ToolCall, ...]:
        """Append the model's turn of a provider response to the history; return its calls.

        Args:
            response: The response object of an official SDK (Anthropic ``Message``,
                OpenAI ``ChatCompletion`` or Responses ``Response``, google-genai
                ``GenerateContentResponse``) or its JSON dict. Every block is kept as
                returned (thinking and signatures, encrypted reasoning, item ids, server
                tool blocks); see `contextchef.providers.parse_response`.

        What the response reports about the request (Anthropic's dropped thinking,
        cache-miss reasons) and a turn that did not end normally (kind ``incomplete``:
        cut off at a token limit, refused, filtered; the turn is still appended) is
        logged, kept in `notices` and sent to ``response:notice`` handlers (`on`);
        its id is remembered for ``compile(diagnostics=True)``.

        Returns:
            The tool calls of the turn, in order, for `execute` / `check_tool_call`; their
            ids are unique in the session (Gemini calls sent without an id get one here,
            never sent back to Gemini).

        Raises:
            CorruptHistoryError: Not a supported response, a malformed one, or one that
                failed (Responses ``status: "failed"`` naming its error code and message,
                an error body); the history is unchanged.
            UsageError: This response (by id) was ingested already.
        """
        history = self._state.history
        ids = {p.id for m in history for p in m.parts if isinstance(p, ToolCall)}
        made = [synthetic_index(i) for i in ids]
        offset = max([len(history), *(i + 1 for i in made if i is not None)])
        read = read_response(response, id_offset=offset)
        if read.id is not None and read.id in self._ingested:
            raise UsageError(
                f"response {shown(read.id, 80)} was ingested already (its turn is in the history); "
                "ingest each response once"
            )
        messages = tuple(_unique_ids(m, ids, len(history)) for m in read.turn.messages)
        for i, message in enumerate(messages, start=len(history)):
            check_message(message, i)
        self._state.history = history + messages
        if read.id is not None:
            self._ingested.add(read.id)
        ledger = self._state.ledgers.get(self._state.compiled or "")
        if ledger is not None:
            ledger.answered = True
            ledger.response_id = read.id or ledger.response_id
            if pending_answered(ledger, self._state.history):
                ledger.undo = None  # the edit was answered: it stays (as compile would say)
        self._notices = (*self._notices, *read.notices)
        for notice in read.notices:
            logger.warning("contextchef: %s", notice.detail)
            event = CompileEvent(
                name="response:notice", target=self._state.compiled or "", notice=notice
            )
            self._volatile.emit(event)
        return tuple(p for m in messages for p in m.parts if isinstance(p, ToolCall))

    @property
    def notices(self) -> tuple[ResponseNotice, ...]:
        """What ingested responses reported about their requests, oldest first."""
        return self._notices

    # -- snapshots -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """A versioned, JSON-serializable dict of the session's data (`SessionState`).

        Tools, handlers and hooks are code and are not included (see
        `contextchef.session._snapshot`).
        """
        return take_snapshot(self._state, self._tools)

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Restore a `snapshot` (register the same tools first); compiles then match.

        The snapshot's skills are registered when the session has none, and so are the
        runtime tools it recorded (from their definitions; attach handlers with
        `register_runtime_tool` beforehand, or answer their calls yourself).

        Raises:
            SnapshotMismatchError: Different tools, toolkits, skills or modes, or an
                unsupported version; UsageError / CorruptHistoryError: a malformed field.
                In every case nothing is changed.
        """
        snapshot = checked(snapshot)  # once, against the snapshot's declared form
        coming = runtime_tools(snapshot, self._tools)
        state = read_snapshot(snapshot, tools=self._tools, modes=self._modes, coming=coming)
        skills = read_skills(snapshot, tools=self._tools)
        if self._unmatched == "raise":  # else every later compile would raise it
            known = self._tools.known_names() | {t.name for t in coming}
            for field, patterns in (("defer", state.defer), ("pin", state.pin)):
                problem = unmatched_message(field, patterns, known)
                if problem:
                    raise UsageError(f"the snapshot's {problem}; nothing was restored")
        state.new_context_pending = state.new_context_pending and self._handoff is not None
        pending = len(self._tools.pending_additions)
        if coming:  # the runtime tools the conversation made (no handlers: the host's)
            self._tools._add_runtime(list(coming), {})
        for kit in state.loaded_toolkits:
            self._tools.load_toolkit(kit)
        self._tools.drop_additions(pending)  # loads made by restore are not news to announce
        self._tools.set_skills(skills)
        self._state = state
        self._tools.set_policy(state.policy())
        # the last answer each target got is in the history: ingesting it again is refused
        self._ingested = {lg.response_id for lg in state.ledgers.values() if lg.response_id}

    @property
    def schema_reports(self) -> tuple[SchemaReport, ...]:
        """What each target's narrower schema dialect changes in the registered tools.

        One `SchemaReport` per tool and target whose schema that target's renderer
        rewrites (today Gemini's subset: keywords rewritten or dropped, local ``$ref``
        inlined), in registry order; computed when each tool was registered (and logged
        then at INFO), so reading it costs nothing. Tools sent unchanged are left out.
        """
        return tuple(r for tool in self._tools.all() for r in schema_reports(tool))

    # -- history maintenance -------------------------------------------------------------

    def compact(self, summarize: Callable[[str], str], *, keep_recent_turns: int = 2) -> Compacted:
        """Replace old turns with a summary, cutting only at a safe point.

        `summarize` is your model call (the library never calls one). Deferred tools
        loaded in the summarized part are named in the summary and leave `loaded_tools`;
        loaded skills whose load was summarized stay loaded, and the summary restates
        their instructions and tools.

        Returns:
            The compaction result (``messages`` is the new history).
        """
        if not isinstance(keep_recent_turns, int) or isinstance(keep_recent_turns, bool):
            raise UsageError(
                f"keep_recent_turns must be a whole number, got {type(keep_recent_turns).__name__}"
            )
        done, loaded = compact_history(
            self._state.history,
            self._state.loaded,
            summarize,
            keep_recent_turns=keep_recent_turns,
            note=self._skills_reminder,
        )
        skill_tools = self._state.loaded & self._skill_tools()
        self._state.history, self._state.loaded = tuple(done.messages), loaded | skill_tools
        return done

    def clear_tool_results(
        self,
        *,
        keep_recent: int,
        exclude_tools: Collection[str] = (),
        clear_inputs: bool = False,
        clear_at_least: int = 0,
    ) -> Cleared:
        """Replace old tool results with a placeholder, keeping ids and pairing.

        See `contextchef.history._compaction.clear_tool_results`; the history is replaced.
        """
        done = clear_tool_results(
            self._state.history,
            keep_recent=keep_recent,
            exclude_tools=exclude_tools,
            clear_inputs=clear_inputs,
            clear_at_least=clear_at_least,
        )
        self._state.history = tuple(done.messages)
        return done

    def request_new_context(self) -> None:
        """Make the next compile apply the overflow handoff whatever the budget says.

        Raises:
            UsageError: No overflow handoff is configured (pass ``on_overflow=``).
        """
        if self._handoff is None:
            raise UsageError(
                "request_new_context needs an overflow handoff; create the session with "
                "ContextChef(on_overflow=<summarizer>)"
            )
        self._state.new_context_pending = True

    @property
    def new_context_pending(self) -> bool:
        """A handoff is due at the next compile (requested, not yet applied)."""
        return self._state.new_context_pending

    def _handoff_if_due(self) -> None:
        state = self._state
        if handoff_due(self._handoff, state.history, requested=state.new_context_pending):
            assert self._handoff is not None
            keep = handoff_keep_turns(state.history)
            self.compact(self._handoff.summarize, keep_recent_turns=keep)
            state.new_context_pending = False


def _unique_ids(message: Message, taken: set[str], turn: int) -> Message:
    """`message` with each call id that is empty or already used in the session replaced.

    Some OpenAI-compatible servers send ``""`` or the same id (``call_0``) every turn;
    kept, the normalizer would drop every later exchange as a duplicate. The new id
    (``call_<turn>_<n>``) is what the session and the provider see from then on.
    """
    parts: list[Part] = []
    for k, part in enumerate(message.parts):
        if isinstance(part, ToolCall) and (not part.id or part.id in taken):
            n = k
            while f"call_{turn}_{n}" in taken:
                n += 1
            part = dataclasses.replace(part, id=f"call_{turn}_{n}")
        if isinstance(part, ToolCall):
            taken.add(part.id)
        parts.append(part)
    return dataclasses.replace(message, parts=tuple(parts))
