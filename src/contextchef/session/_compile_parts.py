"""The inputs of a compile and the helpers of its steps (`contextchef.session._compile`).

`CompileInput` is what one compile reads and `Step` what a successful one appends to the
ledger; the functions here are the parts of the pipeline's steps that need no more than
the input: normalizing after a mark, the volatile update, rendering with a clear error,
the prefix and how it changed, request options and headers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from contextchef._errors import CorruptHistoryError
from contextchef.deferred._view import SessionView
from contextchef.history._messages import Message, TextPart, ToolCall, ToolResult
from contextchef.history._normalize import Change, Continuation, normalize
from contextchef.providers import Adapter, Chain, ModelRules, RequestOptions
from contextchef.providers._headers import body_extra, request_headers
from contextchef.providers._model_rules import check_prefill, history_rules, thinks
from contextchef.providers._tool_order import AtStart, tools_edited
from contextchef.session._ledger import Ledger, Mark, strip_reasoning
from contextchef.session._prefixes import RenderedPrefix, rendered_prefix
from contextchef.session._request import EditKind, LedgerEdit
from contextchef.session._reveal import ToolState
from contextchef.session._state import SessionState
from contextchef.session._strategies import Strategy
from contextchef.session._volatile import Stated, Update, VolatileState, plan_update

__all__ = [
    "MEMORY_CALL_PREFIX",
    "CompileInput",
    "Step",
    "beta_headers",
    "normalized_after",
    "prefix_change",
    "previous_mark",
    "rebase_edit",
    "render_checked",
    "request_options",
    "session_prefix",
    "volatile_now",
    "volatile_update",
    "with_update",
]

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
    turn_gap: float | None = None
    missing_thinking: Literal["drop", "raise"] = "drop"


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
        """Record this step in `ledger` (its fields are `Ledger.apply`'s arguments)."""
        ledger.apply(**{f.name: getattr(self, f.name) for f in fields(self)})


def rebase_edit(kind: EditKind) -> LedgerEdit:
    """``system`` or ``tools`` changed where nothing is bound to them: messages kept."""
    return LedgerEdit(
        kind=kind,
        history_index=0,
        wire_index=0,
        detail=f"the {kind} sent before every message changed; the messages "
        "already sent are kept, and the prompt cache restarts at the start",
    )


def normalized_after(
    inp: CompileInput, base: Mark, strip: tuple[int, int] | None
) -> tuple[tuple[Message, ...], tuple[Change, ...]]:
    ledger, history, held = inp.ledger, inp.state.history, inp.ledger.calls
    calls = held if base.ir >= len(ledger.ir) else {k for k, v in held.items() if v < base.ir}
    new = history[base.history :]
    if ledger.strip or strip is not None:
        cut = [*ledger.strip, *([strip] if strip else [])]
        new = tuple(
            strip_reasoning(m) if any(lo <= i < hi for lo, hi in cut) else m
            for i, m in enumerate(new, start=base.history)
        )
    done = normalize(
        new,
        profile=history_rules(inp.adapter.profile.history, inp.adapter.model_rules(inp.model)),
        keeps=inp.adapter.keeps,
        after=Continuation(offset=base.history, calls=calls, sent=ledger.ir[: base.ir])
        if base.history or base.ir
        else None,
    )
    return done.messages, done.changes


def previous_mark(ledger: Ledger, base: Mark) -> Mark:
    at = next(i for i, m in enumerate(ledger.marks) if m is base)
    return ledger.marks[max(at - 1, 0)]


def with_update(
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


def volatile_now(inp: CompileInput) -> Stated:
    """Every volatile block as it renders now (the implicit-context hook runs here, once)."""
    return inp.volatile.current(
        auto_channel=inp.adapter.profile.announcement_channel,
        announcements=inp.state.announcements,
        dynamic_state=inp.state.dynamic_state,
        memories=inp.memories,
    )


def made_turns_taken(inp: CompileInput) -> bool:
    """Whether this request may end with a turn the session makes (`Profile.takes_made_turns`)."""
    takes = inp.adapter.profile.takes_made_turns
    return takes is None or takes(inp.extra)


def volatile_update(inp: CompileInput, base: Mark, rules: ModelRules, now: Stated) -> Update:
    """What a request from `base` states to bring the model to `now` (`plan_update`)."""
    return plan_update(
        base.stated,
        now,
        system_entries=rules.system_messages,
        memory_results=inp.memory_tool is not None and made_turns_taken(inp),
        anchor=inp.state.anchor,
    )


def render_checked(
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


def session_prefix(inp: CompileInput, entries: list[Any] | None = None) -> RenderedPrefix:
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


def prefix_change(ledger: Ledger, system: str, tools: list[Any], at: AtStart) -> EditKind | None:
    """``system`` or ``tools`` when what comes before every message changed, else None.

    Entries the model does not see appended to the ``tools`` sent are no change
    (`providers._tool_order.tools_edited`; `at`: `Profile.tools_at_start`).
    """
    if ledger.system is not None and ledger.system != system:
        return "system"
    return "tools" if tools_edited(ledger.tools, tools, at) else None


def request_options(
    inp: CompileInput,
    rules: ModelRules,
    ends_with_user: bool,
    strip: tuple[int, int] | None,
    chain: Chain | None,
) -> RequestOptions:
    """`strip`: this request's own thinking cut (history indices); `chain`: see its option."""
    history, cuts = inp.state.history, (*inp.ledger.strip, *((strip,) if strip else ()))
    turns = (i for i in range(len(history) - 1, -1, -1) if history[i].role == "assistant")
    last = next(turns, -1) if cuts else -1  # the last assistant turn, only when it matters
    return RequestOptions(
        model=inp.model,
        max_tokens=inp.max_tokens,
        search=inp.strategy.search,
        prefill=check_prefill(
            inp.prefill,
            ends_with_user,
            rules,
            inp.adapter.profile.history.alternate_roles
            and thinks(inp.extra),  # Anthropic: no prefill with thinking (Gemini: none at all)
        ),
        cache_last=inp.adapter.profile.cache_breakpoints > 0,
        extra=body_extra(inp.extra, inp.adapter.profile),  # headers: `request_headers`
        diagnose=inp.diagnostics,
        previous_response=inp.ledger.response_id,
        turn_gap=inp.turn_gap,
        missing_thinking=inp.missing_thinking,
        thinking_stripped=any(lo <= last < hi for lo, hi in cuts),
        chain=chain,
    )


def beta_headers(inp: CompileInput, rules: ModelRules, tools: ToolState, payload: Any) -> Any:
    """The request's headers (`providers._headers.request_headers`).

    The caller's betas, ``extra``'s, and those the request needs: its fields' and its
    content's, and a history carrying tool changes needs their beta on every request.
    """
    needed = [rules.tool_change_beta] if tools.sent and rules.tool_change_beta else []
    betas = (*inp.betas, *needed)
    return request_headers(inp.adapter.profile, inp.extra, betas, payload, inp.ledger.cache)
