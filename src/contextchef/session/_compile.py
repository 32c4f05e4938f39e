"""Compile as a pipeline of named steps over the target's ledger (`compile_request`).

Each step reads what the steps before it produced and changes nothing of the session:

1. **Context** (`_context`): the model's rules, whether the last request was answered,
   the bindings of its thinking, the ``tools`` to send (the strategy's, or those first
   sent plus tool-change planning, `tool_mode`) and whether ``system`` / ``tools``
   changed since they were sent.
2. **Base** (`contextchef.session._rollback.decide_base`): a pure fold over the
   rollback rules; the earliest mark named wins and its edit is reported.
3. **Normalize** (`_normalize`) the history after the base once (`normalize` with a
   `Continuation`); a pending mark whose answer left nothing, an update with nothing to
   follow but the user turn the base ends with (which it joins), or an edit whose two
   sides would not alternate roles, moves the base back and normalizes again.
4. **Update** (`volatile_update`, `with_update`): the volatile blocks changed since the
   base, at the end: a text part of the user message being sent, a ``read_memories``
   call and result after it, a system entry last where the model takes one.
5. **Tool changes** (`_tool_changes`) from the base's `ToolState` to the view now.
6. **Render** (`_render_new`) the new messages once (`Adapter.render_messages`, with the
   sent ones as context) and the system or tool-change entry, each recorded read-only.
7. **Assemble** (`_assemble`) the payload around the recorded entries, which are never
   rendered again; **headers** (`_headers`) name the betas it needs.

`compile_request` returns the request and a `Step`, which the session applies once the
compile succeeded. On a prefix-check model, steps 2-7 run again (at most twice, each
time from an earlier base) when a thinking block would be sent after another prefix
than the one it was produced after: only the entries rendered show that. No target or
strategy name is compared: the profile, the model rules and the strategy carry what
differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from contextchef._errors import UsageError
from contextchef._records import record
from contextchef.dispatch._gate import forced_refusal
from contextchef.history._compaction import tool_use_as_text
from contextchef.history._messages import Message
from contextchef.history._normalize import Change
from contextchef.providers import Chain, ModelRules, extra_left_out
from contextchef.providers._compacted import check_closed, from_base, swapped_in
from contextchef.providers._extra_fields import check_extra
from contextchef.providers._model_rules import check_turn
from contextchef.providers._reading import adapter_reader
from contextchef.providers._tool_order import kept_tools
from contextchef.providers._wording import wording_only
from contextchef.session._binding import answer_bindings, first_unbound, strip_from
from contextchef.session._compile_parts import (
    CompileInput,
    Step,
    beta_headers,
    normalized_after,
    prefix_change,
    previous_mark,
    rebase_edit,
    render_checked,
    request_options,
    session_prefix,
    volatile_now,
    volatile_update,
    with_update,
)
from contextchef.session._ledger import Ledger, Mark, pending_answered, strip_reasoning
from contextchef.session._prefixes import RenderedPrefix
from contextchef.session._request import (
    CompiledRequest,
    LedgerEdit,
    Segments,
)
from contextchef.session._reveal import (
    ToolChanges,
    ToolState,
    changes_after,
    defined_entries,
    stale,
)
from contextchef.session._rollback import (
    BaseFacts,
    Rollback,
    continue_from,
    decide_base,
    mark_before,
)
from contextchef.session._tool_mode import PROVIDER_SEARCH, tool_mode, tool_units, units_now
from contextchef.session._volatile import Stated, Update

__all__ = ["CompileInput", "Step", "compile_request"]

REBINDS = 2
"""Most extra passes of steps 2-7 when thinking would be sent after another prefix."""


# -- the pipeline ---------------------------------------------------------------------------


def compile_request(inp: CompileInput) -> tuple[CompiledRequest, Step]:
    """Render one request over the target's ledger (see the module docstring).

    On a model with the prefix check, every thinking block with a recorded binding must
    come after the prefix it was produced after (`contextchef.session._binding`): if one
    does not (a model or strategy switch re-rendered what came before it), the request
    is made again from before that block, without its thinking and all later thinking
    (the `thinking_unbound` rule), and reports the edit (kind ``model``); if even that
    does not hold, from the first mark.

    Raises:
        UsageError: A bad prefill, a history ending with the model's turn where the
            model refuses that, or a failing implicit-context hook.
        CorruptHistoryError: A message's recorded provider data cannot be rendered.
    """
    ctx = _context(inp)
    made = _make(ctx, force=None)
    force: int | None = None
    for _ in range(REBINDS):
        at = _first_unbound(ctx, made)
        if at is None or force == 0:
            break
        force = 0 if force is not None else strip_from(inp.ledger, made.step.base, at)
        made = _make(ctx, force=force)
    return made.request, dataclasses.replace(made.step, bindings=ctx.bindings)


@dataclass(kw_only=True, slots=True)
class _Context:
    """What every pass of one compile shares (step 1)."""

    inp: CompileInput
    rules: ModelRules
    bindings: dict[str, str]
    """Bindings of the thinking in the answer to the last request."""
    known: Mapping[str, str]
    """Every binding: the ledger's and `bindings`."""
    facts: BaseFacts
    """What the rollback rules read (without `BaseFacts.force`)."""
    prefix: RenderedPrefix
    """The ``system`` and ``tools`` this request sends."""
    planned: list[Any] | None
    """The tool entries tool changes are planned from (None: no tool changes)."""
    fresh: list[Any]
    """The strategy's own tool entries for the view now."""
    rebase: LedgerEdit | None
    """``system`` / ``tools`` changed, and the messages sent are kept (the cache restarts)."""
    rebased: bool
    """The messages kept were sent after an older prefix (`Ledger.rebased`)."""
    now: Stated
    """The volatile blocks as they render now."""


@dataclass(kw_only=True, slots=True)
class _Made:
    """One pass of steps 2-7."""

    request: CompiledRequest
    step: Step
    sent: list[dict[str, Any]]
    """Every message entry of the payload (replayed and new)."""


def _context(inp: CompileInput) -> _Context:
    """Step 1: the rules, the answer, the prefix to send and how it differs from the sent."""
    ledger, history = inp.ledger, inp.state.history
    rules = inp.adapter.model_rules(inp.model)
    answered = pending_answered(ledger, history)
    bindings = answer_bindings(ledger, history, answered, inp.adapter.profile.wire)
    start, edited_at = continue_from(ledger, history, answered)
    bound = ledger.bound(answered)  # else no prefix is kept, and changing it is no edit
    resend = bound and _must_resend(ledger, rules)
    planning = ledger.marks[0] if resend else _planning_base(ledger, start, edited_at)
    prefix, planned, fresh = _tools_to_send(inp, rules, planning.tools, bound=bound)
    at_start = inp.adapter.profile.tools_at_start
    change = prefix_change(ledger, inp.state.system, prefix.pristine, at_start) if bound else None
    top = ledger.pending or ledger.marks[-1]
    stale_refs = (
        change is not None
        and not rules.prefix_check
        and not resend
        and stale(
            inp.adapter,
            ledger.ir[: top.ir],
            top.tools,
            prefix.pristine,
            was=ledger.tools or [],
            rules=rules,
        )
    )  # sent references to tools no longer declared: send it all again
    kept = change is not None and not (rules.prefix_check or resend or stale_refs)
    facts = BaseFacts(
        ledger=ledger,
        rules=rules,
        start=start,
        edited_at=edited_at,
        prefix_change=change if change is not None or not resend else "model",
        resend=resend,
        stale=stale_refs,
        marked=inp.adapter.refused_at(ledger.wire, rules, ledger.cache, history[start.history :]),
    )
    return _Context(
        inp=inp,
        rules=rules,
        bindings=bindings,
        known={**ledger.bindings, **bindings} if bindings else ledger.bindings,
        facts=facts,
        prefix=prefix,
        planned=planned,
        fresh=fresh,
        rebase=rebase_edit(change) if kept and change is not None else None,
        rebased=kept or (ledger.rebased and not resend),
        now=volatile_now(inp),
    )


def _make(ctx: _Context, *, force: int | None) -> _Made:
    """Steps 2-7, from the base the rollback rules decide (`force`: see `BaseFacts`)."""
    inp = ctx.inp
    choice = decide_base(ctx.facts if force is None else replace(ctx.facts, force=force))
    base, messages, changes, strip = _normalize(ctx, choice)
    update = volatile_update(inp, base, ctx.rules, ctx.now)
    ir, system_text = with_update(inp, messages, update, ctx.rules, base)
    attached = bool(ir) and ir[-1].role == "user"
    planned, tool_state = _tool_changes(ctx, base, messages, attached=attached)
    wire, entry = _render_new(ctx, base, ir, system_text, planned, attached=attached)
    sent, payload, resumes = _assemble(ctx, base, ir, wire, changes, strip)
    state = inp.state
    why = partial(forced_refusal, inp.view, state.blocked, state.loaded_skills, state.withdrawn)
    reader = adapter_reader(type(inp.adapter), inp.adapter.profile.wire)
    check_extra(reader.choice, reader.fields, inp.extra, payload, tool_state, why)
    edits = _edits(ctx, choice, base, strip)
    request = CompiledRequest(
        target=inp.adapter.profile.target,
        payload=payload,
        segments=Segments(
            system=ctx.prefix.system_json,
            tools=ctx.prefix.tools_json,
            messages=lambda: inp.ledger.entries_json(from_base(sent, inp.extra)),
        ),
        changes=changes,
        edits=edits,
        prefix_fingerprint=ctx.prefix.fingerprint,
        headers=beta_headers(inp, ctx.rules, tool_state, payload),
        model_rules=ctx.rules,
        appended=len(wire),
        strategy=inp.strategy.name,
        dropped=extra_left_out(inp.extra, payload),
        resumes=resumes,
    )
    mark = _mark(inp, base, ir, wire, update, tool_state, attached=attached)
    step = _step(ctx, base, ir, wire, mark, strip, system_entry=entry)
    return _Made(request=request, step=step, sent=sent)


# -- 1. context -----------------------------------------------------------------------------


def _must_resend(ledger: Ledger, rules: ModelRules) -> bool:
    """Everything must be sent again (`BaseFacts.resend`).

    Thinking sent to a model without the prefix check across a ``system`` / ``tools``
    change is bound to the older prefix; inline definitions need a platform that takes
    them.
    """
    top = ledger.pending or ledger.marks[-1]
    return (ledger.rebased and rules.prefix_check) or (
        bool(top.tools.defined) and not rules.inline_tools
    )


def _planning_base(ledger: Ledger, start: Mark, edited_at: int | None) -> Mark:
    """The mark whose `ToolState` the kept ``tools`` are planned from.

    That is the base before the rules that read those ``tools`` (a prefix change, a
    refused tool change) move it.
    """
    return start if edited_at is None else mark_before(ledger, edited_at)


def _tools_to_send(
    inp: CompileInput, rules: ModelRules, state: ToolState, *, bound: bool
) -> tuple[RenderedPrefix, list[Any] | None, list[Any]]:
    """The prefix to send, the entries tool changes start from, the strategy's entries.

    With tool changes (`tool_mode`) the ``tools`` first sent are kept; otherwise the
    strategy's for the view now, but for tools it adds that the model does not see (they
    go after those sent: `kept_tools`); a difference from what was sent is then an edit.
    """
    prefix = session_prefix(inp)
    fresh, ledger = prefix.pristine, inp.ledger
    planned = tool_mode(inp, rules, fresh, state, bound=bound)
    if planned is None:
        same = bound and ledger.tools is not None and ledger.strategy == inp.strategy.name
        sent = ledger.tools if same and _reworded(inp, fresh) else None
        if same and sent is None and ledger.tools is not None:
            sent = kept_tools(ledger.tools, fresh, inp.adapter.profile.tools_at_start, ledger.cache)
        return (prefix if sent is None else session_prefix(inp, sent)), None, fresh
    if planned[0] is not fresh:  # the strategy's own entries are rendered already
        prefix = session_prefix(inp, planned[0])
    return prefix, planned[0], fresh


def _reworded(inp: CompileInput, fresh: list[Any]) -> bool:
    """Whether the tools sent go out again instead of `fresh` (`Ledger.reworded`).

    So on the first compile after a restore, with the view the restore left, when
    `fresh` differs from them in wording alone (`wording_only`: another release's texts),
    and after that while the strategy renders the same `fresh`.
    """
    ledger = inp.ledger
    was, sent = ledger.reworded, ledger.tools
    if was is None or sent is None or ledger.strategy != inp.strategy.name:
        return False
    ledger.reworded = fresh if was is fresh or was == fresh else None
    if was is inp.view and wording_only(sent, fresh):
        ledger.reworded = fresh
    return ledger.reworded is not None


# -- 3. normalize -----------------------------------------------------------------------------


def _normalize(
    ctx: _Context, choice: Rollback
) -> tuple[Mark, tuple[Message, ...], tuple[Change, ...], tuple[int, int] | None]:
    """The base settled, the new messages normalized and fitted, the repairs, the strip.

    Normalized once at the decided base; again only when the base moves back (a pending
    mark whose answer left nothing to send; after a cut, an update that would follow a
    user turn, which it joins (research R14); an edit whose two sides would not alternate
    roles) or an edit strips thinking (prefix-check models: from the base on).
    """
    inp, ledger = ctx.inp, ctx.inp.ledger
    base = choice.mark
    messages, changes = normalized_after(inp, base, None)
    if base is ledger.pending and (not messages or messages[0].role != "assistant"):
        base = ledger.marks[-1]  # its answer left nothing to send: render it again
        messages, changes = normalized_after(inp, base, None)
    while not messages and base.ir and ledger.ir[base.ir - 1].role == "user":
        if volatile_update(inp, base, ctx.rules, ctx.now).empty:
            break  # back to the end of a request (a cut, a retry): sent again as it was
        base = previous_mark(ledger, base)  # a retry of it, the update joined to its user turn
        messages, changes = normalized_after(inp, base, None)
    strip: tuple[int, int] | None = None
    if choice.at is not None:
        while base.ir and messages and ledger.ir[base.ir - 1].role == messages[0].role:
            base = previous_mark(ledger, base)  # keep roles alternating across the edit
            messages, changes = normalized_after(inp, base, None)
        kept = swapped_in(inp.state.history, ledger.history, inp.adapter.profile.wire)  # R22
        if ctx.rules.prefix_check and not kept:
            strip = (base.history, len(inp.state.history))
            messages, changes = normalized_after(inp, base, strip)
    messages, fitted = _fit(ctx, base, messages)
    return base, messages, (*changes, *fitted), strip


def _fit(
    ctx: _Context, base: Mark, messages: tuple[Message, ...]
) -> tuple[tuple[Message, ...], tuple[Change, ...]]:
    """`messages` referring only to tools the request declares (`Adapter.fit_references`).

    Without declared tools, a target that needs them for tool blocks gets the tool-using
    history as text.
    """
    adapter, ledger, tools = ctx.inp.adapter, ctx.inp.ledger, ctx.prefix.pristine
    sent_ir = ledger.ir if base.ir == len(ledger.ir) else ledger.ir[: base.ir]
    defined = defined_entries(base.tools)
    messages, fitted = adapter.fit_references(
        messages,
        tools,
        offset=base.history,
        before=sent_ir,
        defined=defined,
        rules=ctx.rules,
        cache=ledger.cache,
    )
    if not tools and adapter.profile.tool_blocks_need_tools:
        messages, texts = tool_use_as_text(messages, offset=base.history)
        fitted = (*fitted, *texts)
    return messages, fitted


def _edits(
    ctx: _Context, choice: Rollback, base: Mark, strip: tuple[int, int] | None
) -> tuple[LedgerEdit, ...]:
    """The rebase (messages kept), then the chosen rollback's edit: its cause, entry, byte."""
    edits = [ctx.rebase] if ctx.rebase is not None else []
    if choice.kind is not None and choice.at is not None:
        history, ledger = ctx.inp.state.history, ctx.inp.ledger
        stripped = sum(1 for m in history[base.history :] if strip and strip_reasoning(m) is not m)
        note = f", without the thinking of {stripped} message(s)" if stripped else ""
        byte = len(ledger.entries_json(ledger.wire[: base.wire]).encode()) - (not base.wire)
        edits.append(
            LedgerEdit(
                kind=choice.kind,
                history_index=choice.at,
                wire_index=base.wire,
                thinking_stripped=stripped,
                detail=f"{choice.cause or f'already-sent {choice.kind} changed'} (history "
                f"message {choice.at}); the conversation is sent again from wire entry "
                f"{base.wire}, byte {byte:,} of the messages segment{note}",
            )
        )
    return tuple(edits)


# -- 5. tool changes --------------------------------------------------------------------------


def _tool_changes(
    ctx: _Context, base: Mark, messages: tuple[Message, ...], *, attached: bool
) -> tuple[ToolChanges | None, ToolState]:
    """The tool changes this request states (None: none planned) and the state after.

    The state starts from the base's, with the tools the new messages reveal; changes
    are stated only with a user turn to follow (`attached`).
    """
    inp = ctx.inp
    revealed = base.tools.revealed | inp.adapter.revealed_tools(messages)
    state = dataclasses.replace(base.tools, revealed=revealed)
    if ctx.planned is None or not attached:
        return None, state
    return changes_after(
        inp.adapter,
        inp.ledger.cache,
        sent=tool_units(inp, ctx.planned),
        now=units_now(inp, ctx.fresh),
        state=state,
        loaded=frozenset(inp.state.loaded),
        rules=ctx.rules,
        stable=inp.view.wrapper_names,
        provider_search=inp.strategy.search in PROVIDER_SEARCH,
    )


# -- 6. render --------------------------------------------------------------------------------


def _render_new(
    ctx: _Context,
    base: Mark,
    ir: tuple[Message, ...],
    system_text: str,
    changes: ToolChanges | None,
    *,
    attached: bool,
) -> tuple[list[dict[str, Any]], bool]:
    """The new wire entries, recorded read-only, and whether a system entry ends them.

    Recorded once (a steady compile pays for the new turn only): a payload shares these
    entries with the ledger, and an edit of one must not reach later requests.
    """
    adapter, ledger = ctx.inp.adapter, ctx.inp.ledger
    before = ledger.ir if base.ir == len(ledger.ir) else ledger.ir[: base.ir]
    wire = render_checked(adapter, ir, before, base)
    entry: dict[str, Any] | list[dict[str, Any]] | None = None
    if changes is not None and not changes.empty:
        entry = adapter.tool_change_message(
            system_text, add=changes.add, define=changes.define, remove=changes.remove
        )
    if not entry and system_text and attached:
        entry = adapter.system_message(system_text)
    if isinstance(entry, list):
        wire += entry
    elif entry is not None:
        wire.append(entry)
    return list(map(record, adapter.cache_marked(wire, ctx.rules))), bool(entry)


# -- 7. assemble ------------------------------------------------------------------------------


def _assemble(
    ctx: _Context,
    base: Mark,
    ir: tuple[Message, ...],
    wire: list[dict[str, Any]],
    changes: tuple[Change, ...],
    strip: tuple[int, int] | None,
) -> tuple[list[dict[str, Any]], dict[str, Any], bool]:
    """Every message entry sent (replayed, then new), the payload, whether it resumes."""
    inp, ledger = ctx.inp, ctx.inp.ledger
    recorded = ledger.wire if base.wire == len(ledger.wire) else ledger.wire[: base.wire]
    sent = [*recorded, *wire]
    if not sent:
        raise UsageError(
            "the conversation is empty, and every provider refuses a request without "
            "messages; add the user's first message (chef.append(user(...)) or "
            "chef.set_history([...])) before compiling"
        )
    last_role = ir[-1].role if ir else (ledger.ir[base.ir - 1].role if base.ir else "user")
    answered = base is ledger.pending and ledger.answered
    added = len(inp.state.history) > base.history + 1  # after the answer
    chain = Chain.after(ledger.sent, base.wire, sent, added=added) if answered else None
    if (chain is None or chain.token is None) and not check_closed(inp.state.history, inp.extra):
        dropped = [c.detail for c in changes]
        check_turn(
            inp.state.history,
            ctx.rules,
            last_role,
            dropped,
            alternate=inp.adapter.profile.history.alternate_roles,
            extra=inp.extra,
        )
    options = request_options(inp, ctx.rules, last_role == "user", strip, chain)
    payload = inp.adapter.assemble(
        system=inp.state.system, tools=ctx.prefix.tools, messages=sent, options=options
    )
    return sent, payload, chain is not None and chain.token is not None


def _mark(
    inp: CompileInput,
    base: Mark,
    ir: tuple[Message, ...],
    wire: list[dict[str, Any]],
    update: Update,
    tools: ToolState,
    *,
    attached: bool,
) -> Mark:
    """The ledger's mark once this request is sent."""
    injected = 1 if update.memories and inp.memory_tool and attached else 0
    return Mark(
        history=len(inp.state.history),
        ir=base.ir + len(ir),
        wire=base.wire + len(wire),
        stated=update.stated if attached else base.stated,
        injected=base.injected + injected,
        tools=tools,
    )


def _step(
    ctx: _Context,
    base: Mark,
    ir: tuple[Message, ...],
    wire: list[dict[str, Any]],
    mark: Mark,
    strip: tuple[int, int] | None,
    *,
    system_entry: bool,
) -> Step:
    """What the session appends to the ledger once the compile succeeded."""
    inp = ctx.inp
    return Step(
        base=base,
        history=inp.state.history,
        ir=ir,
        wire=tuple(wire),
        mark=mark,
        strip=strip,
        system=inp.state.system,
        tools=ctx.prefix.pristine,
        strategy=inp.strategy.name,
        system_entry=system_entry,
        rebased=ctx.rebased and base is not inp.ledger.marks[0],
    )


def _first_unbound(ctx: _Context, made: _Made) -> int | None:
    """The first entry sent whose thinking another prefix produced (prefix-check models)."""
    if not ctx.rules.prefix_check:
        return None
    inp = ctx.inp
    return first_unbound(
        inp.ledger.binding_cache,
        ctx.known,
        system=inp.state.system,
        tools=ctx.prefix.pristine,
        entries=made.sent,
    )
