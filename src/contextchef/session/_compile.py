"""Compile as named steps over the target's ledger: replay what was sent, append the new turn.

1. **Base**: the ledger mark to continue from (`choose_base`): the pending mark when the
   model answered it, else the last committed one; an edit of anything already sent
   rolls back to the mark before it and is reported (`LedgerEdit`).
2. **Normalize** only the history after the base (`normalize` with a `Continuation`).
3. **Update**: the volatile blocks that changed since the base (`plan_update`), placed
   at the end: a text part of the user message being sent, a ``read_memories`` call and
   result after it, a system entry last where the model takes one.
4. **Render** the new messages (`Adapter.render_messages`, with the sent ones as
   context) and serialize each once; **assemble** the payload around the recorded
   entries, which are never rendered again.

Nothing here mutates the session or the ledger: `compile_request` returns the request
and a `Step`, which the session applies once the compile succeeded. No target or
strategy name is compared: the profile, the model rules and the strategy carry what
differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from contextchef._errors import CorruptHistoryError, UsageError
from contextchef._json import canonical_dumps
from contextchef._records import record
from contextchef.deferred._view import SessionView
from contextchef.history._compaction import tool_use_as_text
from contextchef.history._messages import Message, TextPart, ToolCall, ToolResult
from contextchef.history._normalize import Change, Continuation, normalize
from contextchef.providers import Adapter, ModelRules, RequestOptions
from contextchef.session._binding import answer_bindings, first_unbound, strip_from
from contextchef.session._ledger import (
    Ledger,
    Mark,
    pending_answered,
    same_message,
    strip_reasoning,
)
from contextchef.session._prefixes import RenderedPrefix, rendered_prefix
from contextchef.session._request import (
    CompiledRequest,
    EditKind,
    LedgerEdit,
    Segments,
)
from contextchef.session._reveal import (
    ToolState,
    changes_after,
    defined_entries,
    stale,
)
from contextchef.session._state import SessionState
from contextchef.session._strategies import Strategy
from contextchef.session._tool_mode import PROVIDER_SEARCH, tool_mode, tool_units, units_now
from contextchef.session._volatile import Update, VolatileState, check_prefill, plan_update

__all__ = ["CompileInput", "Step", "compile_request"]

MEMORY_CALL_PREFIX = "contextchef_memories_"
"""Ids of the synthetic ``read_memories`` calls: this prefix and a session counter."""


@dataclass(frozen=True, kw_only=True)
class CompileInput:
    """Everything one compile reads."""

    adapter: Adapter
    strategy: Strategy
    view: SessionView
    state: SessionState
    volatile: VolatileState
    ledger: Ledger
    memories: str
    """The current ``<memories>`` block (``""``: none)."""
    memory_tool: str | None
    """Wire name of ``read_memories`` when the session has a memory store."""
    model: str
    max_tokens: int | None
    prefill: object
    extra: Mapping[str, Any] = field(default_factory=dict)
    betas: tuple[str, ...] = ()
    diagnostics: bool = False


@dataclass(frozen=True, kw_only=True)
class Step:
    """What a successful compile appends to its ledger (see `Ledger.apply`)."""

    base: Mark
    history: tuple[Message, ...]
    ir: tuple[Message, ...]
    wire: tuple[dict[str, Any], ...]
    mark: Mark
    strip: tuple[int, int] | None
    system: str
    tools: list[Any]
    strategy: str | None = None
    system_entry: bool = False
    rebased: bool = False
    bindings: Mapping[str, str] = field(default_factory=dict)

    def apply(self, ledger: Ledger) -> None:
        """Record this step in `ledger`."""
        ledger.apply(
            base=self.base,
            history=self.history,
            ir=self.ir,
            wire=self.wire,
            mark=self.mark,
            strip=self.strip,
            system=self.system,
            tools=self.tools,
            strategy=self.strategy,
            system_entry=self.system_entry,
            rebased=self.rebased,
            bindings=self.bindings,
        )


# -- 1. base --------------------------------------------------------------------------------


def _first_difference(a: Sequence[Message], b: Sequence[Message]) -> int:
    """The first index where history `a` leaves the consumed `b` (`same_message`)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if not same_message(x, y):
            return i
    return min(len(a), len(b))


def choose_base(ledger: Ledger, history: tuple[Message, ...]) -> tuple[Mark, int | None]:
    """The mark to continue from, and the history index of an edit (None: no edit).

    The pending mark was answered when a response was ingested after it, or when the
    history holds an assistant turn right after what it consumed. An unchanged history
    continues from it (the caller confirms after normalizing, `compile_request`); a
    change before its end is then an edit of what the answer was produced from. A
    change after the last committed mark of a pending mark nobody answered is not an
    edit: that request bound nothing.
    """
    consumed, pending = ledger.history, ledger.pending
    answered = pending_answered(ledger, history)
    n = len(consumed)
    whole = len(history) >= n and history[:n] == consumed  # the common case, fast
    first = n if whole else _first_difference(history, consumed)
    if first >= n:
        return (pending if pending is not None and answered else ledger.marks[-1]), None
    bound = pending.history if pending is not None and answered else ledger.marks[-1].history
    if first >= bound:
        return ledger.marks[-1], None  # only the unanswered tail changed: not an edit
    return _mark_before(ledger, first), first


def _mark_before(ledger: Ledger, index: int) -> Mark:
    return next(m for m in reversed(ledger.marks) if m.history <= index)


# -- 2. normalize -----------------------------------------------------------------------------


def _calls_before(ledger: Ledger, base: Mark) -> Mapping[str, int] | set[str]:
    if base.ir >= len(ledger.ir):
        return ledger.calls
    return {k for k, v in ledger.calls.items() if v < base.ir}


def _normalized(
    inp: CompileInput, base: Mark, strip: tuple[int, int] | None
) -> tuple[tuple[Message, ...], tuple[Change, ...]]:
    ledger, history = inp.ledger, inp.state.history
    new = history[base.history :]
    if ledger.strip or strip is not None:
        cut = [*ledger.strip, *([strip] if strip else [])]
        new = tuple(
            strip_reasoning(m) if any(lo <= i < hi for lo, hi in cut) else m
            for i, m in enumerate(new, start=base.history)
        )
    done = normalize(
        new,
        profile=inp.adapter.profile.history,
        keeps=inp.adapter.keeps,
        after=Continuation(offset=base.history, calls=_calls_before(ledger, base))
        if base.history or base.ir
        else None,
    )
    return done.messages, done.changes


# -- 3. update --------------------------------------------------------------------------------


def _with_update(
    inp: CompileInput,
    messages: tuple[Message, ...],
    update: Update,
    rules: ModelRules,
    base: Mark,
) -> tuple[tuple[Message, ...], str]:
    """`messages` with the update's user text and memory exchange; the system text left."""
    last = messages[-1] if messages else None
    if last is not None and last.role != "user":
        return messages, ""  # no user turn to attach to: stated at the next one
    out = list(messages)
    if update.user_text:
        text = TextPart(text=update.user_text)
        out[-1:] = [replace(last, parts=(*last.parts, text))] if last else []
        if last is None:
            out.append(Message(role="user", parts=(text,)))
    if update.memories and inp.memory_tool:
        call_id = f"{MEMORY_CALL_PREFIX}{base.injected + 1:04d}"
        call = inp.adapter.injected_call(ToolCall(id=call_id, name=inp.memory_tool))
        result = ToolResult(call_id=call_id, name=inp.memory_tool, content=update.memories)
        if not out:
            out.append(Message(role="user", parts=(TextPart(text="(memories follow)"),)))
        out += [Message(role="assistant", parts=(call,)), Message(role="user", parts=(result,))]
    return tuple(out), update.system_text if rules.system_messages else ""


def _update(inp: CompileInput, base: Mark, rules: ModelRules) -> Update:
    state, profile = inp.state, inp.adapter.profile
    now = inp.volatile.current(
        auto_channel=profile.announcement_channel,
        announcements=state.announcements,
        dynamic_state=state.dynamic_state,
        memories=inp.memories,
    )
    system_entries = rules.system_messages and inp.adapter.system_message("") is not None
    return plan_update(
        base.stated,
        now,
        system_entries=system_entries,
        memory_results=inp.memory_tool is not None,
        anchor=state.anchor,
    )


# -- 4. render --------------------------------------------------------------------------------


def _prefix(inp: CompileInput, entries: list[Any] | None = None) -> RenderedPrefix:
    """The rendered prefix (see `rendered_prefix`); `entries` replace the strategy's."""
    loaded_skills = frozenset(inp.state.loaded_skills)

    def make_tools() -> list[Any]:
        tools = inp.strategy.tools(inp.view, inp.view.locked(loaded_skills))
        return inp.adapter.tool_entries(tools, search=inp.strategy.search)

    return rendered_prefix(
        adapter=inp.adapter,
        strategy_name=inp.strategy.name,
        make_tools=make_tools,
        view=inp.view,
        system=inp.state.system,
        loaded_skills=loaded_skills,
        cache=inp.ledger.cache,
        entries=entries,
    )


def _tools_edit(sent: list[Any] | None, now: list[Any]) -> bool:
    """Whether `now` changes `sent` beyond deferred declarations (not prefix).

    Entries with ``defer_loading`` that nothing referenced are outside Anthropic's cache
    key and prefix check (research note R7; ``tool-search-tool``, deferred loading and
    caching): declaring more of them, wherever they sit, is not an edit. Every entry
    sent must still be there, and the others keep their order.
    """
    if sent is None or sent is now or sent == now:
        return False
    if now[: len(sent)] == sent:  # declarations appended after what was sent
        return any(not _deferred(t) for t in now[len(sent) :])
    before, after = [canonical_dumps(t) for t in sent], [canonical_dumps(t) for t in now]
    kept = set(after)
    if any(t not in kept for t in before):
        return True
    was = set(before)
    if any(a not in was and not _deferred(t) for a, t in zip(after, now, strict=True)):
        return True
    return [t for t in sent if not _deferred(t)] != [t for t in now if not _deferred(t)]


def _deferred(entry: object) -> bool:
    return isinstance(entry, Mapping) and entry.get("defer_loading") is True


def _render(
    adapter: Adapter, ir: Sequence[Message], before: Sequence[Message], base: Mark
) -> list[dict[str, Any]]:
    """`Adapter.render_messages`, with a clear error for unreadable provider data.

    A part whose recorded provider data the renderer cannot read (a corrupt snapshot or
    a hand-made history) is a `CorruptHistoryError` naming its message.
    """
    try:
        return adapter.render_messages(ir, before=before)
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as exc:
        for i, message in enumerate(ir):
            try:
                adapter.render_messages([message], before=before)
            except (TypeError, AttributeError, KeyError, ValueError, IndexError):
                raise CorruptHistoryError(
                    f"message {base.history + i} (sent as entry {base.wire + i} or later) "
                    f"cannot be rendered for {adapter.profile.target}: {type(exc).__name__}: "
                    f"{exc!s:.200}; its provider_data is not what the provider recorded",
                    index=base.history + i,
                ) from exc
        raise CorruptHistoryError(
            f"the history cannot be rendered for {adapter.profile.target}: {exc!s:.200}",
            index=base.history,
        ) from exc


def _previous(ledger: Ledger, base: Mark) -> Mark:
    at = next(i for i, m in enumerate(ledger.marks) if m is base)
    return ledger.marks[max(at - 1, 0)]


def _options(inp: CompileInput, rules: ModelRules, ends_with_user: bool) -> RequestOptions:
    extra = dict(inp.extra)
    if inp.diagnostics:
        extra.setdefault("diagnostics", {"previous_message_id": inp.ledger.response_id})
    return RequestOptions(
        model=inp.model,
        max_tokens=inp.max_tokens,
        search=inp.strategy.search,
        prefill=check_prefill(inp.prefill, ends_with_user, rules),
        cache_last=inp.adapter.profile.cache_breakpoints > 0,
        extra=extra,
    )


def _headers(inp: CompileInput, rules: ModelRules, tools: ToolState) -> dict[str, str]:
    """The beta header: the caller's values plus those the request needs.

    The request's fields may need one, and a history carrying tool changes needs their
    beta on every request.
    """
    profile = inp.adapter.profile
    betas = set(inp.betas)
    if tools.sent and rules.tool_change_beta is not None:
        betas.add(rules.tool_change_beta)
    for path, beta in profile.field_betas.items():
        value: Any = inp.extra
        for key in path.split("."):
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is not None:
            betas.add(beta)
    if not betas:
        return {}
    if profile.beta_header is None:
        raise UsageError(
            f"betas {sorted(betas)} were given, but target {profile.target!r} has no beta header"
        )
    return {profile.beta_header: ",".join(sorted(betas))}


def _prefix_change(ledger: Ledger, system: str, tools: list[Any]) -> EditKind | None:
    """``system`` or ``tools`` when what comes before every message changed, else None."""
    if ledger.system is not None and ledger.system != system:
        return "system"
    return "tools" if _tools_edit(ledger.tools, tools) else None


def _edit(kind: EditKind, at: int, base: Mark, stripped: int) -> LedgerEdit:
    note = f", without the thinking of {stripped} message(s)" if stripped else ""
    return LedgerEdit(
        kind=kind,
        history_index=at,
        wire_index=base.wire,
        thinking_stripped=stripped,
        detail=f"already-sent {kind} changed (history message {at}); the conversation is "
        f"sent again from wire entry {base.wire}{note}",
    )


# -- tool changes -----------------------------------------------------------------------------


def compile_request(inp: CompileInput) -> tuple[CompiledRequest, Step]:
    """Render one request over the target's ledger (see the module docstring).

    On a model with the prefix check, every thinking block with a recorded binding must
    come after the prefix it was produced after (`contextchef.session._binding`): if one
    does not (a model or strategy switch re-rendered what came before it), the compile is
    made again from before that block, without its thinking and all later thinking, and
    reports the edit (kind ``model``).

    Raises:
        UsageError: A bad prefill, a history ending with the model's turn where the
            model refuses that, or a failing implicit-context hook.
        CorruptHistoryError: A message's recorded provider data cannot be rendered.
    """
    ledger, history = inp.ledger, inp.state.history
    wire = inp.adapter.profile.wire
    bindings = answer_bindings(ledger, history, pending_answered(ledger, history), wire)
    known = {**ledger.bindings, **bindings} if bindings else ledger.bindings
    force: int | None = None
    while True:
        request, step, sent, tools = _compile(inp, force)
        if not inp.adapter.model_rules(inp.model).prefix_check:
            break
        at = first_unbound(
            ledger.binding_cache, known, system=inp.state.system, tools=tools, entries=sent
        )
        if at is None or force == 0:
            break
        force = 0 if force is not None else strip_from(ledger, step.base, at)
    return request, dataclasses.replace(step, bindings=bindings)


def _compile(
    inp: CompileInput, force: int | None
) -> tuple[CompiledRequest, Step, list[dict[str, Any]], list[Any]]:
    """One compile; `force`: a history index whose thinking and all later is not sent."""
    adapter, ledger, history = inp.adapter, inp.ledger, inp.state.history
    rules = adapter.model_rules(inp.model)
    prefix = _prefix(inp)
    fresh = prefix.pristine
    base, edited_at = choose_base(ledger, history)
    bound = ledger.bound(pending_answered(ledger, history))  # else no prefix is kept
    top = ledger.pending or ledger.marks[-1]
    # thinking sent to a model without the prefix check across a system/tools change is
    # bound to the older prefix; inline definitions need a platform that takes them
    resend = bound and (
        (ledger.rebased and rules.prefix_check)
        or (bool(top.tools.defined) and not rules.inline_tools)
    )
    if resend:
        base = ledger.marks[0]
    planned = tool_mode(inp, rules, fresh, base.tools, bound=bound)
    if planned is not None and planned[0] is not fresh:  # the strategy's own: rendered
        prefix = _prefix(inp, planned[0])
    tools = prefix.pristine
    edits: list[LedgerEdit] = []
    kind: EditKind = "history"
    if force is not None and (edited_at is None or force < edited_at):
        kind, edited_at = "model", force
        if force < base.history or base is ledger.pending:
            base = _mark_before(ledger, force)
    rebased = ledger.rebased and not resend
    changed = _prefix_change(ledger, inp.state.system, tools) if bound else None
    changed_all = resend or (
        changed is not None
        and not rules.prefix_check
        and stale(adapter, ledger.ir[: top.ir], top.tools, tools)
    )  # sent references to tools no longer declared: send it all again
    if resend and changed is None:
        changed = "model"
    if changed is not None and (rules.prefix_check or changed_all):
        kind, base, edited_at = changed, ledger.marks[0], 0  # every thinking block is bound
    elif changed is not None:  # nothing is bound to it: the messages stay, the cache restarts
        rebased = True
        edits.append(
            LedgerEdit(
                kind=changed,
                history_index=0,
                wire_index=0,
                detail=f"the {changed} sent before every message changed; the messages "
                "already sent are kept, and the prompt cache restarts at the start",
            )
        )
    if base.tools.sent and (not rules.tool_changes or adapter.tool_change_message("") is None):
        # this model takes no tool changes: go back to before the first one sent
        kind, at = "model", next((i for i, m in enumerate(ledger.marks) if m.tools.sent), None)
        base = ledger.marks[max((len(ledger.marks) if at is None else at) - 1, 0)]
        edited_at = base.history if edited_at is None else min(edited_at, base.history)
    sent = [i for i in ledger.system_entries if i < base.wire]
    if sent and not (rules.system_messages and adapter.system_message("") is not None):
        # this model takes no system entries: go back to before the first one sent
        kind = "model"
        base = next(m for m in reversed(ledger.marks) if m.wire <= sent[0])
        edited_at = base.history if edited_at is None else min(edited_at, base.history)
    strip: tuple[int, int] | None = None
    messages, changes = _normalized(inp, base, None)
    if base is ledger.pending and (not messages or messages[0].role != "assistant"):
        base = ledger.marks[-1]  # its answer left nothing to send: render it again
        messages, changes = _normalized(inp, base, None)
    if edited_at is not None:
        while base.ir and messages and ledger.ir[base.ir - 1].role == messages[0].role:
            base = _previous(ledger, base)  # keep roles alternating across the edit
            messages, changes = _normalized(inp, base, None)
        if rules.prefix_check:
            strip = (base.history, len(history))
            messages, changes = _normalized(inp, base, strip)
        stripped = sum(1 for m in history[base.history :] if strip and strip_reasoning(m) is not m)
        edits.append(_edit(kind, edited_at, base, stripped))
    sent_ir = ledger.ir if base.ir == len(ledger.ir) else ledger.ir[: base.ir]
    messages, fitted = adapter.fit_references(
        messages, tools, offset=base.history, before=sent_ir, defined=defined_entries(base.tools)
    )
    if not tools and adapter.profile.tool_blocks_need_tools:  # tool-using history as text
        messages, texts = tool_use_as_text(messages, offset=base.history)
        fitted = (*fitted, *texts)
    changes = (*changes, *fitted)
    update = _update(inp, base, rules)
    ir, system_text = _with_update(inp, messages, update, rules, base)
    attached = bool(ir) and ir[-1].role == "user"
    before = ledger.ir if base.ir == len(ledger.ir) else ledger.ir[: base.ir]
    wire = _render(adapter, ir, before, base)
    revealed = base.tools.revealed | adapter.revealed_tools(messages)
    tool_state = dataclasses.replace(base.tools, revealed=revealed)
    entry: dict[str, Any] | list[dict[str, Any]] | None = None
    if planned is not None and attached:
        tool_changes, tool_state = changes_after(
            sent=tool_units(inp, planned[0]),
            now=units_now(inp, fresh),
            state=tool_state,
            loaded=frozenset(inp.state.loaded),
            inline=rules.inline_tools,
            stable=inp.view.wrapper_names,
            cache=ledger.cache,
            by_definition=adapter.profile.tool_changes_by_definition,
            provider_search=inp.strategy.search in PROVIDER_SEARCH,
        )
        if not tool_changes.empty:
            entry = adapter.tool_change_message(
                system_text,
                add=tool_changes.add,
                define=tool_changes.define,
                remove=tool_changes.remove,
            )
    if not entry and system_text and attached:
        entry = adapter.system_message(system_text)
    if isinstance(entry, list):
        wire += entry
    elif entry is not None:
        wire.append(entry)
    # recorded read-only once (a steady compile pays for the new turn only): a payload
    # shares these entries with the ledger, and an edit of one must not reach later requests
    wire = [record(w) for w in wire]
    recorded = ledger.wire if base.wire == len(ledger.wire) else ledger.wire[: base.wire]
    all_messages = [*recorded, *wire]
    if not all_messages:
        raise UsageError(
            "the conversation is empty, and every provider refuses a request without "
            "messages; add the user's first message (chef.append(user(...)) or "
            "chef.set_history([...])) before compiling"
        )
    last_role = ir[-1].role if ir else (ledger.ir[base.ir - 1].role if base.ir else "user")
    if last_role == "assistant" and history and history[-1].role == "user":
        raise UsageError(  # what made it the model's turn was dropped: never a prefill
            f"the last history message ({history[-1].role}) has nothing this target can "
            f"send ({'; '.join(c.detail for c in changes[-3:]) or 'it was dropped'}), so "
            "the request would end with the model's turn; append the next user message"
        )
    if last_role == "assistant" and not rules.prefill:
        raise UsageError(
            f"the history ends with the model's turn, and model {rules.model!r} rejects a "
            "trailing assistant message (prefill); append the next user message or the "
            "tool results first"
        )
    options = _options(inp, rules, ends_with_user=last_role == "user")
    payload = adapter.assemble(
        system=inp.state.system, tools=prefix.tools, messages=all_messages, options=options
    )
    request = CompiledRequest(
        target=adapter.profile.target,
        payload=payload,
        segments=Segments(
            system=prefix.system_json,
            tools=prefix.tools_json,
            messages=lambda: ledger.entries_json(all_messages),
        ),
        changes=changes,
        edits=tuple(edits),
        prefix_fingerprint=prefix.fingerprint,
        headers=_headers(inp, rules, tool_state),
        model_rules=rules,
        appended=len(wire),
        strategy=inp.strategy.name,
    )
    step = Step(
        base=base,
        history=history,
        ir=ir,
        wire=tuple(wire),
        mark=Mark(
            history=len(history),
            ir=base.ir + len(ir),
            wire=base.wire + len(wire),
            stated=update.stated if attached else base.stated,
            injected=base.injected + (1 if update.memories and inp.memory_tool and attached else 0),
            tools=tool_state,
        ),
        strip=strip,
        system=inp.state.system,
        tools=tools,
        strategy=inp.strategy.name,
        system_entry=bool(entry),
        rebased=rebased and base is not ledger.marks[0],
    )
    return request, step, all_messages, tools
