"""Compile as named steps: history -> volatile tail -> options -> payload -> request.

Each step is a pure function of its inputs (the session's data, the frozen view, the
target's adapter and profile, the chosen strategy); nothing here mutates the caller's
history or tools, and nothing compares target or strategy names: the profile and the
strategy carry what differs.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextchef._errors import UsageError
from contextchef.deferred._view import SessionView
from contextchef.history._messages import Message
from contextchef.history._normalize import Normalized, normalize
from contextchef.providers import Adapter, RequestOptions
from contextchef.session._memory import with_memories
from contextchef.session._request import CompiledRequest, prefix_fingerprint
from contextchef.session._state import SessionState
from contextchef.session._strategies import Strategy
from contextchef.session._volatile import VolatileState, VolatileTail, check_prefill

__all__ = ["CompileInput", "compile_request"]


@dataclass(frozen=True, kw_only=True)
class CompileInput:
    """Everything one compile reads."""

    adapter: Adapter
    strategy: Strategy
    view: SessionView
    state: SessionState
    volatile: VolatileState
    memory_block: str
    model: str
    max_tokens: int | None
    prefill: str | None


def check_options(model: object, max_tokens: object) -> None:
    """Reject request options the provider would refuse.

    Raises:
        UsageError: `model` is not a non-empty string, or `max_tokens` not a positive int.
    """
    if not isinstance(model, str) or not model:
        raise UsageError(f"model must be a non-empty string, got {model!r:.80}")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise UsageError(f"max_tokens must be a positive integer or None, got {max_tokens!r:.80}")


def history_for(inp: CompileInput) -> tuple[Normalized, tuple[Message, ...]]:
    """The history normalized for the target's rules, with the ``<memories>`` block."""
    history = normalize(
        inp.state.history, profile=inp.adapter.profile.history, keeps=inp.adapter.keeps
    )
    return history, with_memories(history.messages, inp.memory_block)


def volatile_tail(inp: CompileInput, messages: tuple[Message, ...]) -> VolatileTail:
    """The user tail and positional system text for this target (see `VolatileState`)."""
    state = inp.state
    return inp.volatile.tail(
        messages,
        auto_channel=inp.adapter.profile.announcement_channel,
        announcements=state.announcements,
        dynamic_state=state.dynamic_state,
        anchor=state.anchor,
    )


def request_options(inp: CompileInput, tail: VolatileTail) -> RequestOptions:
    """Per-request settings for the adapter."""
    return RequestOptions(
        model=inp.model,
        max_tokens=inp.max_tokens,
        native_tool_search=inp.strategy.native is not None,
        positional_system=tail.system,
        positional_cache=inp.state.system_breakpoint,
        prefill=check_prefill(inp.prefill, tail.messages),
    )


def compile_request(inp: CompileInput) -> CompiledRequest:
    """Render one request (see the module docstring for the steps).

    The caller checks the options first (`check_options`), before anything runs.

    Raises:
        UsageError: A bad prefill, or a failing implicit-context hook.
        MalformedArgumentsError: A history tool call cannot be sent to this target.
    """
    history, messages = history_for(inp)
    tail = volatile_tail(inp, messages)
    options = request_options(inp, tail)
    payload = inp.adapter.render_request(
        system=inp.state.system,
        tools=inp.strategy.tools(inp.view),
        messages=tail.messages,
        options=options,
    )
    inp.volatile.warn_hoist(inp.adapter, payload, tail)
    segments = inp.adapter.segments(payload)
    return CompiledRequest(
        target=inp.adapter.profile.target,
        payload=payload,
        segments=segments,
        changes=history.changes,
        prefix_fingerprint=prefix_fingerprint(segments["system"], payload.get("tools")),
        audit=inp.volatile.audit(inp.adapter, payload, tail),
    )
