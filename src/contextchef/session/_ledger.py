"""The ledger: what one target was sent, replayed unchanged; each compile only appends.

On Anthropic's newest models a thinking block sent back is checked against everything
sent before it (``system``, ``tools``, earlier messages), and any change there is a 400 or
silently drops the reasoning
(https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks);
on every provider a change there restarts the prompt cache. So a session keeps, per
target, the exact wire entries it sent, and the next compile for that target replays
them by value (and byte for byte in canonical JSON) and appends the new turn.

**Marks.** After each compile the ledger records a `Mark`: how many history messages,
normalized messages and wire entries it holds, and what volatile state it stated. The
last compile's mark is *pending* until the model's answer shows it was used: it is kept
when the history has grown by an assistant turn after it; otherwise (a second compile of
the same turn, a retry, a user message added without an answer) its entries are rendered
again, which no provider has bound anything to.

**Edits.** When something already sent and answered must change — the host replaced or
cut the history (`set_history`, compaction, clearing, the overflow handoff), or the
system prompt or a non-deferred tool changed — the ledger rolls back to the last mark
before the change, renders from there, and reports a `LedgerEdit`. On models with the
prefix check (`ModelRules.prefix_check`) the thinking produced before the edit, which
the edit invalidates, is no longer sent from there on; a removed trailing run of thinking
is accepted where a gap is not (same page, "Removing thinking").
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from contextchef._errors import UsageError
from contextchef._json import canonical_dumps, thaw
from contextchef.history._as_is import index_calls
from contextchef.history._blocks import seed_blocks
from contextchef.history._forms import (
    check_ledger_fields,
    consumed,
    consumed_digests,
    ir_form,
    ir_of_form,
    leading,
    ledger_where,
    seed_digests,
    stored_wire,
    wire_forms,
)
from contextchef.history._lazy import call_index
from contextchef.history._messages import Message, ReasoningPart
from contextchef.history._reordered import check_record, record_digest, reordered
from contextchef.history._wire_forms import seed_stored
from contextchef.providers._chain import chain_form, restore_chain
from contextchef.providers._sent_form import read_sent, sent_form
from contextchef.providers._usage import SentRequest
from contextchef.session._reveal import ToolState
from contextchef.session._volatile import Stated

if TYPE_CHECKING:
    from contextchef.session._snapshot_form import LedgerForm, MarkForm

__all__ = [
    "HOST_CALL_PREFIX",
    "Ledger",
    "Mark",
    "pending_answered",
    "strip_reasoning",
]


@dataclass(frozen=True, kw_only=True)
class Mark:
    """The ledger's size after one compile, and what it had stated."""

    history: int = 0
    """History messages consumed."""
    ir: int = 0
    """Normalized messages (the renderers' context)."""
    wire: int = 0
    """Wire entries."""
    stated: Stated = field(default_factory=Stated)
    """The volatile blocks stated up to here."""
    injected: int = 0
    """Synthetic calls (``read_memories``) made up to here; the next id counts on."""
    tools: ToolState = field(default_factory=ToolState)
    """The tool changes stated and the tools revealed up to here."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        out = {
            "history": self.history,
            "ir": self.ir,
            "wire": self.wire,
            "stated": self.stated.to_dict(),
            "injected": self.injected,
        }
        tools = self.tools.to_dict()
        if tools:
            out["tools"] = tools
        return out

    @classmethod
    def from_dict(cls, data: MarkForm) -> Mark:
        """From checked `to_dict` output (`MarkForm`).

        Raises:
            UsageError: A tool state whose definitions are not the tools' JSON.
        """
        return cls(
            history=data["history"],
            ir=data["ir"],
            wire=data["wire"],
            stated=Stated.from_dict(data["stated"]),
            injected=data["injected"],
            tools=ToolState.from_dict(data.get("tools", {})),
        )


def strip_reasoning(message: Message) -> Message:
    """`message` without its reasoning parts (itself when it has none)."""
    if not any(isinstance(p, ReasoningPart) for p in message.parts):
        return message
    return Message(
        role=message.role, parts=tuple(p for p in message.parts if not isinstance(p, ReasoningPart))
    )


@dataclass(kw_only=True)
class Ledger:
    """What one target was sent (see the module docstring). Mutated only by `apply`."""

    history: tuple[Message, ...] = ()
    """The history messages consumed (by reference), committed and pending."""
    ir: list[Message] = field(default_factory=list)
    """The normalized messages sent, injected updates included."""
    wire: list[dict[str, Any]] = field(default_factory=list)
    """The wire entries sent, as recorded (no per-request cache marks)."""
    jsons: list[str | None] = field(default_factory=list)
    """Canonical JSON of each wire entry, made when first asked for (`entries_json`)."""
    digests: list[str | None] = field(default_factory=list)
    """Each wire entry's snapshot digest (`history._forms.wire_digest`), made on a save."""
    marks: list[Mark] = field(default_factory=lambda: [Mark()])
    """Committed marks, oldest first; the last one is the commit point."""
    pending: Mark | None = None
    """The last compile's mark, until an answer after it commits it."""
    calls: dict[str, int] = field(default_factory=dict)
    """Tool-call id -> index in `ir` where it was sent."""
    strip: list[tuple[int, int]] = field(default_factory=list)
    """History index ranges [lo, hi) whose thinking is no longer sent."""
    system: str | None = None
    """The system segment as sent (None: nothing sent yet)."""
    tools: list[Any] | None = None
    """The tool entries as sent (None: nothing sent yet)."""
    strategy: str | None = None
    """The strategy `tools` was sent under (None: nothing sent yet)."""
    rebased: bool = False
    """Messages were kept across a change of ``system`` or ``tools`` (on a model without
    the prefix check): their thinking is bound to an older prefix, so a prefix-check
    model gets the conversation sent again without it."""
    response_id: str | None = None
    """Id of the last response ingested after a compile for this target."""
    answered: bool = False
    """A response was ingested after the last compile (its pending mark was answered)."""
    system_entries: list[int] = field(default_factory=list)
    """Wire indices of the mid-conversation system entries sent."""
    bindings: dict[str, str] = field(default_factory=dict)
    """Thinking block key -> fingerprint of the prefix it was produced after
    (`contextchef.session._binding`): what a prefix-check compile checks each block by."""
    undo: Ledger | None = field(default=None, repr=False, compare=False)
    """The ledger before the last compile's edit, while that compile is unanswered (a
    retry decides the edit again, and taking the change back undoes it). In snapshots
    (``undo``, one level deep), so a restored session decides it again too."""
    sent: SentRequest = field(default_factory=SentRequest, repr=False, compare=False)
    """The last compile's model, edits, turn gap, cache rules: how `ingest` explains a miss."""
    cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    """Rendered tool entries and prefix segments, per view (not part of the record)."""
    binding_cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    """Digests of the entries and tools checked for bindings (not part of the record)."""
    reworded: Any = field(default=None, repr=False, compare=False)
    """After a restore, the view it left; then the tools rendered now whose wording alone
    differs from `tools`, which are sent instead (`providers._wording`; not recorded)."""

    def copy(self) -> Ledger:
        """A copy whose lists are not shared (the entries in them are)."""
        return dataclasses.replace(
            self,
            ir=list(self.ir),
            wire=list(self.wire),
            jsons=list(self.jsons),
            digests=list(self.digests),
            marks=list(self.marks),
            calls=dict(self.calls),
            strip=list(self.strip),
            system_entries=list(self.system_entries),
            bindings=dict(self.bindings),
            undo=None,
        )

    def bound(self, answered: bool) -> bool:
        """Whether the model answered a request of this ledger (`answered`: its pending one).

        Until then nothing is bound to what was sent: the ``system`` and ``tools`` the
        last compile recorded are only what it would have sent, so the next compile
        neither keeps them nor reports changing them as an edit. A committed mark past
        the empty one, or thinking no longer sent (`strip`: an edit of something
        answered), says a request was answered.
        """
        return answered or len(self.marks) > 1 or bool(self.strip)

    def entries_json(self, entries: Sequence[Mapping[str, Any]]) -> str:
        """Canonical JSON of `entries` as one list, each recorded entry serialized once.

        An entry still held by this ledger (the same object at the same place) reuses
        its cached text; any other entry is serialized now.
        """
        out: list[str] = []
        held = self.wire
        for i, entry in enumerate(entries):
            cached = self.jsons[i] if i < len(held) and held[i] is entry else None
            if cached is None:
                cached = canonical_dumps(entry)
                if i < len(held) and held[i] is entry:
                    self.jsons[i] = cached
            out.append(cached)
        return "[" + ",".join(out) + "]"

    def apply(
        self,
        *,
        base: Mark,
        history: tuple[Message, ...],
        ir: Sequence[Message],
        wire: Sequence[dict[str, Any]],
        mark: Mark,
        strip: tuple[int, int] | None = None,
        system: str,
        tools: list[Any],
        strategy: str | None = None,
        system_entry: bool = False,
        rebased: bool = False,
        bindings: Mapping[str, str] | None = None,
    ) -> None:
        """Keep everything up to `base`, append the new entries, make `mark` pending.

        `base` is a committed mark, or the pending one (which this commits).
        """
        if base is self.pending:
            self.marks.append(base)
        else:
            keep = next(i for i, m in enumerate(self.marks) if m is base)
            del self.marks[keep + 1 :]
        if len(self.ir) > base.ir:
            self.calls = {k: v for k, v in self.calls.items() if v < base.ir}
        del self.ir[base.ir :], self.wire[base.wire :], self.jsons[base.wire :]
        del self.digests[base.wire :]
        index_calls(self.calls, ir, base.ir)
        self.ir.extend(ir)
        self.wire.extend(wire)
        self.jsons.extend([None] * len(wire))
        self.digests.extend([None] * len(wire))
        self.system_entries = [i for i in self.system_entries if i < base.wire]
        if system_entry:
            self.system_entries.append(len(self.wire) - 1)
        self.pending = mark
        self.history = history
        if strip is not None:
            lo, hi = strip
            self.strip = [(a, min(b, lo)) for a, b in self.strip if a < lo] + [(lo, hi)]
        self.system, self.tools, self.answered = system, tools, False
        self.strategy, self.rebased = strategy, rebased
        if bindings:
            self.bindings.update(bindings)

    # -- snapshots -----------------------------------------------------------------------

    def to_dict(
        self, history: Sequence[Message], forms: Sequence[Any], base: Any = None
    ) -> dict[str, Any]:
        """Plain JSON holding no copy of `history` (the session's; `forms` its JSON forms).

        Consumed messages leading `history` are counted (``shared``), others recorded by
        digest; normalized ones are history indices where they can be (`messages_form`),
        wire entries' long texts references to `forms` (``texts``, `wire_forms`); the
        binding check's state ``chain`` (`chain_form`), an unanswered edit's ledger ``undo``.
        Wire entries `base` (an earlier form of it) holds at their place are shared.
        """
        shared, consumed = (
            leading(self.history, history),
            consumed_digests(self.history, self.binding_cache),
        )
        marks = [*self.marks, self.pending]
        wire, texts, blocks = wire_forms(
            self.wire, self.digests, forms, base or {}, marks, consumed[:shared], self.binding_cache
        )
        out: dict[str, Any] = {
            "shared": shared,
            "consumed": consumed,
            **ir_form(self.ir, history),  # and its digest
            "wire": wire,
            "texts": texts,
            "marks": [m.to_dict() for m in self.marks],
            "pending": self.pending.to_dict() if self.pending else None,
            "strip": [list(r) for r in self.strip],
            "system": self.system,
            "tools": thaw(self.tools),  # a copy: the entries are the sent prefix's record
            "strategy": self.strategy,
            "rebased": self.rebased,
            "response_id": self.response_id,
            "answered": self.answered,
            "system_entries": list(self.system_entries),
            "wire_digests": list(self.digests),
            "blocks": blocks,
        }
        if self.bindings:
            out["bindings"] = dict(sorted(self.bindings.items()))
        out.update(
            chain_form(self.binding_cache, self.wire, self.digests, self.tools),
            **sent_form(self.sent),
        )
        out["record_digest"] = record_digest(out)
        if self.undo is not None:
            out["undo"] = self.undo.to_dict(history, forms)
        return out

    @classmethod
    def from_dict(
        cls,
        data: LedgerForm,
        history: tuple[Message, ...],
        forms: Sequence[Any],
        *,
        name: str = "",
        made: dict[Any, Any] | None = None,
        version: int = 4,
        owned: bool = False,
    ) -> Ledger:
        """From checked `to_dict` output (`LedgerForm`), checked against itself and `history`.

        `forms` are the snapshot's history forms, whose texts ``texts`` refers to;
        `owned`: `data` is the restore's own (`seed_stored` keeps its stored entries).

        Each recorded wire entry is replayed byte for byte on the next compile, so it must
        be what was sent: text that is valid Unicode (a lone surrogate cannot be encoded
        for any request) matching its recorded digest; and what the ledger replays
        besides (tools, system, marks, pending, thinking bindings) must match its record
        digest. An entry changed after the snapshot was taken would be bound to thinking
        the provider then refuses; so must its consumed history (`consumed`; `made`: digests
        shared by the snapshot's ledgers, from ``{}``; None: signed, its HMAC just verified,
        by value: its JSON keys may come in another order, `history._reordered`, and then
        the digests recorded over the writer's bytes are made again by the next save).

        Raises:
            UsageError: An inconsistent ledger, or a wire entry or consumed message that
                is not valid Unicode or does not match its digest; the message names the
                ledger (`name`) and the entry. Nothing is restored.
            CorruptHistoryError: A malformed recorded message.
        """
        ir = ir_of_form(data, history, name, made, version)
        marks = [Mark.from_dict(m) for m in data["marks"]]
        pending = Mark.from_dict(data["pending"]) if data["pending"] is not None else None
        _check_marks(marks, pending, ir=len(ir), wire=len(data["wire"]))
        check_ledger_fields(data, ledger_where(name))
        entries = stored_wire(data, forms, ledger_where(name), made, version)
        check_record(data, forms, ledger_where(name), signed=made is None)  # signed: by value
        ledger = cls(
            history=consumed(data, (pending or marks[-1]).history, history, forms, made, name),
            ir=ir,
            wire=entries,  # a copy: the snapshot stays the caller's
            jsons=[None] * len(entries),
            digests=list(data["wire_digests"]) if version >= 4 else [None] * len(entries),
            marks=marks,
            pending=pending,
            strip=[(lo, hi) for lo, hi in data["strip"]],
            system=data["system"],
            tools=thaw(data["tools"]),  # a copy: the snapshot stays the caller's
            strategy=data["strategy"],
            rebased=data["rebased"],
            response_id=data["response_id"],
            answered=data["answered"],
            system_entries=list(data["system_entries"]),
            bindings=dict(data.get("bindings", {})),
            sent=read_sent(data.get("sent"), name),
        )
        ledger.calls = call_index(ir)  # a lazy message's parts are not built for it
        restore_chain(
            ledger.binding_cache, entries, ledger.digests, data.get("chain"), name, ledger.tools
        )
        if made is None and reordered(forms[-8:], data["wire"][-1:]):  # signed, keys moved:
            ledger.digests = [None] * len(entries)  # the next save digests what it holds
        else:
            seed_digests(ledger.binding_cache, ledger.history, data["consumed"])
            seed_blocks(ledger.binding_cache, made, ledger_where(name))
            if owned and version >= 4:
                seed_stored(ledger.binding_cache, ledger.digests, entries, data)
        undo = cast("LedgerForm | None", data.get("undo"))
        if undo is not None:
            ledger.undo = cls.from_dict(
                undo, history, forms, name=name, made=made, version=version, owned=owned
            )
        return ledger


def _check_marks(marks: Iterable[Mark], pending: Mark | None, *, ir: int, wire: int) -> None:
    """Marks start at zero, never shrink, and end at the recorded sizes.

    The history may be shorter than what the ledger consumed (cut or compacted after
    the last compile): the next compile reports that edit.
    """
    chain = [*marks, *([pending] if pending else [])]
    if not chain or chain[0] != Mark():
        raise UsageError("snapshot ledger marks must start with the empty mark")
    for a, b in itertools.pairwise(chain):
        if b.history < a.history or b.ir < a.ir or b.wire < a.wire:
            raise UsageError("snapshot ledger marks must not shrink")
    top = chain[-1]
    if top.ir != ir or top.wire != wire:
        raise UsageError(
            "snapshot ledger marks do not match its recorded entries; nothing was restored"
        )


# -- answers ---------------------------------------------------------------------------------


def pending_answered(ledger: Ledger, history: Sequence[Message]) -> bool:
    """Whether the model answered the last compile.

    It did when a response was ingested after it, or when the history holds an
    assistant turn right after what it consumed that the host did not make itself (a
    ``load_skill`` exchange `ContextChef.load_skill` appends is not the model's answer).
    """
    pending = ledger.pending
    if pending is None or not _ends_with_user(ledger, pending):
        return False
    follows = len(history) > pending.history and history[pending.history].role == "assistant"
    if follows and _host_made(history[pending.history]):
        follows = False
    return follows or ledger.answered


HOST_CALL_PREFIX = "contextchef_skill_"
"""Ids of the calls the host's `load_skill` appends (`_skills.SKILL_CALL_PREFIX`): not
the model's answer to a compile."""


def _host_made(message: Message) -> bool:
    calls = message.tool_calls
    return (
        bool(calls)
        and len(calls) == len(message.parts)
        and all(c.id.startswith(HOST_CALL_PREFIX) for c in calls)
    )


def _ends_with_user(ledger: Ledger, mark: Mark) -> bool:
    return mark.ir > 0 and ledger.ir[mark.ir - 1].role == "user"
