"""Running an allowed call: ``tool_search``, ``load_toolkit``, ``load_skill`` or a handler.

The one execution path: every allowed decision the gate returns (it carries its call)
runs through `run_allowed`, or `arun_allowed` in async code (`astart_allowed` then
`afinish_allowed`, so a batch can run its handlers together and its after-hooks in
order); `execute` and the session's ``run_tools`` differ only in what they do for a tool
with no handler. Exceptions a handler raises become error results (the model's to see);
after-hooks may replace the result. Coroutine handlers are awaited (async) or run with
`asyncio.run` when no loop is running (sync).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from contextchef._echo import printed
from contextchef._errors import MalformedArgumentsError, UsageError, shown
from contextchef._json import to_unicode
from contextchef.deferred._groups import render_toolkit_load
from contextchef.deferred._meta import TOOL_SEARCH, run_tool_search
from contextchef.deferred._skills import SkillReveal, SkillStatus, render_skill_load
from contextchef.deferred._view import SessionView
from contextchef.dispatch._gate import acheck_tool_call, check_tool_call, is_meta, kit_tools
from contextchef.dispatch._hooks import (
    LoopRunning,
    arun_after_hooks,
    is_failure,
    run_after_hooks,
    run_sync,
)
from contextchef.dispatch._types import (
    Allowed,
    CheckResult,
    Denied,
    Execution,
    Fallback,
    GateContext,
    HandlerLookup,
)
from contextchef.exposure._policy import matches
from contextchef.history._messages import ToolCall, ToolResult
from contextchef.tools._tool import Tool

__all__ = [
    "aexecute",
    "afinish_allowed",
    "arun_allowed",
    "astart_allowed",
    "denied_execution",
    "execute",
    "handler_result",
    "meta_execution",
    "run_allowed",
    "skill_reveal",
    "skill_text",
]

logger = logging.getLogger("contextchef")


class _NoJsonForm(Exception):
    """A handler's return value cannot become result text; the message says why."""


def _json_default(value: Any) -> Any:
    """The documented conversions of values json cannot write by itself."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise _NoJsonForm(f"{len(value)} bytes that are not UTF-8 text") from None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(type(value), "model_dump", None)  # pydantic models
    if callable(dump):
        return dump(value, mode="json")
    raise _NoJsonForm(f"a value of type {type(value).__name__}, which has no JSON form")


def _render_output(value: Any) -> str:
    """A handler's return value as result text that can always be sent (valid Unicode).

    Text is kept; a `ToolResult` keeps its content; UTF-8 bytes are decoded; anything
    else is written as canonical JSON, with dataclasses (``asdict``) and pydantic models
    (``model_dump(mode="json")``) converted and bytes inside decoded as UTF-8.

    Raises:
        _NoJsonForm: The value (or a value inside it) has no JSON form: another type,
            bytes that are not UTF-8, NaN or an infinity, a value that contains itself.
    """
    if isinstance(value, str):
        return to_unicode(value)
    if isinstance(value, ToolResult):
        return value.content
    if isinstance(value, (bytes, bytearray, memoryview)):
        return to_unicode(_json_default(value))
    try:
        return to_unicode(
            json.dumps(
                value,
                ensure_ascii=False,
                separators=(",", ":"),
                allow_nan=False,
                default=_json_default,
            )
        )
    except ValueError as exc:
        if "Circular" in str(exc):
            raise _NoJsonForm("a value that contains itself") from None
        if "float" in str(exc):
            raise _NoJsonForm("NaN or an infinity, which JSON cannot carry") from None
        raise _NoJsonForm(f"a value json cannot write ({exc})") from None
    except RecursionError:
        raise _NoJsonForm("a value nested too deeply to write as JSON") from None
    except TypeError as exc:  # e.g. a dict key that is not a str/number/bool/None
        raise _NoJsonForm(f"a value json cannot write ({exc})") from None


def denied_execution(call: ToolCall, check: Denied) -> Execution:
    """A denied call's `Execution`: the gate's reason as an error result."""
    reason = to_unicode(check.reason)
    result = ToolResult(call_id=call.id, name=call.name, content=reason, is_error=True)
    return Execution(result=result, check=check)


def _loader_result(
    view: SessionView, call: ToolCall, check: Allowed, ctx: GateContext
) -> Execution:
    kit = view.toolkits[str(check.arguments["toolkit_name"])]
    shown = kit_tools(view, kit, ctx)  # only the tools the model may call now are shown
    wires = tuple(w for w, _ in shown)
    visible = dataclasses.replace(kit, tools=tuple(t for _, t in shown))
    reveal = skill_reveal(ctx)
    by_reference = reveal == "tool_search" and ctx.result_references and bool(wires)
    text = render_toolkit_load(visible, wires, reveal="available" if by_reference else reveal)
    references = wires if by_reference else ()
    result = ToolResult(call_id=call.id, name=call.name, content=text, references=references)
    return Execution(result=result, check=check, loaded=wires, toolkit=kit.name)


def skill_reveal(ctx: GateContext) -> SkillReveal:
    """How tools a load makes callable reach the model under the last compile's strategy.

    One answer for every loader (``load_toolkit``, ``load_skill``): ``available`` when
    every schema is sent (``flat``) or the next request reveals them by a tool change;
    ``tool_search`` when our ``tool_search`` reveals them (by reference, or as a
    Responses ``tool_search_output``); ``provider_search`` when only the provider's own
    search does (a deferred tool "is only loaded when returned via tool_reference from
    tool search": research note provider-native-disclosure.md §1.1, §2.1); else
    ``defer_execute``. A ``load_toolkit`` result reveals its tools itself where any
    result may carry references (`GateContext.result_references`).
    """
    if ctx.all_loaded or (ctx.direct_calls and ctx.reveal_loaded):
        return "available"  # every schema is sent, or the next request reveals them
    if ctx.search_direct:
        return "tool_search"  # our tool_search reveals them by reference
    return "provider_search" if ctx.direct_calls else "defer_execute"


def _refusal(ctx: GateContext, wire: str, own: str) -> str | None:
    """Why the gate refuses the tool whatever the arguments (withdrawn, blocked), or None.

    The same reasons `_gate._policy` gives; shared by `tool_search` and the loads.
    """
    gone = next((why for w, why in ctx.withdrawn if w == wire), None)
    if gone is not None:
        return gone
    if ctx.blocked and matches(ctx.blocked, (wire, own)):
        return f'Tool "{wire}" is currently blocked.'
    return None


def _barred(ctx: GateContext, wire: str, own: str) -> bool:
    return _refusal(ctx, wire, own) is not None


def _reachable(view: SessionView, name: str, ctx: GateContext) -> list[tuple[str, Tool]]:
    """(wire name, tool) of the skill's tools the model may reach now, in order.

    Tools the modes hide are left out, and so are those the gate refuses whatever the
    arguments (blocked, withdrawn): a load must not offer what the next call is refused.
    """
    out = []
    for wire in view.skills[name].tools:
        tool = view.by_wire_name[wire]
        if view.exposure.get(tool.key) == "hidden" or _barred(ctx, wire, tool.name):
            continue
        if tool.template:  # as the model is shown it: rendered once per session
            tool = tool.replace(description=view.descriptions[tool.key], template=False)
        out.append((wire, tool))
    return out


def skill_text(view: SessionView, name: str, ctx: GateContext, *, reminder: bool = False) -> str:
    """What loading the skill `name` tells the model (the tools its modes let it reach).

    Args:
        view: The session's tool view.
        name: A registered skill.
        ctx: The gate context (loaded skills; how loaded tools are revealed).
        reminder: Word it as a reminder of a skill loaded earlier (after a compaction).
    """
    status: SkillStatus = "still" if reminder else "again" if name in ctx.skills else "loaded"
    return render_skill_load(
        view.skills[name],
        _reachable(view, name, ctx),
        reveal=skill_reveal(ctx),
        config=view.config,
        status=status,
    )


def _skill_result(view: SessionView, call: ToolCall, check: Allowed, ctx: GateContext) -> Execution:
    name = str(check.arguments["name"])
    wires = tuple(w for w, _ in _reachable(view, name, ctx))
    result = ToolResult(call_id=call.id, name=call.name, content=skill_text(view, name, ctx))
    return Execution(result=result, check=check, loaded=wires, skill=name)


def meta_execution(
    view: SessionView, call: ToolCall, check: Allowed, ctx: GateContext
) -> Execution | None:
    """Answer an allowed meta-tool call (after-hooks not run yet); None for other tools.

    The meta-tools are ``tool_search``, ``load_toolkit`` and ``load_skill``.
    """
    if view.toolkit_loader is not None and check.tool is view.toolkit_loader:
        return _loader_result(view, call, check, ctx)
    if view.skill_loader is not None and check.tool is view.skill_loader:
        return _skill_result(view, call, check, ctx)
    if not is_meta(view, check.tool) or check.tool.name != TOOL_SEARCH:
        return None

    refused = _Refused(view, ctx)

    def explain(name: str) -> str | None:
        tool = view.lookup(name)
        if tool is None:
            return view.unavailable_reason(name)
        wire = view.wire_names[tool.key]
        return view.unavailable_reason(name) or refused.reason(wire)

    outcome = run_tool_search(
        check.arguments,
        view.index,
        view.config,
        explain_missing=explain,
        direct=ctx.search_direct,
        exclude=refused if refused.any else frozenset(),
    )
    references = outcome.loaded if ctx.reveal_by_reference else ()
    result = ToolResult(
        call_id=call.id,
        name=call.name,
        content=outcome.text,
        is_error=outcome.is_error,
        references=references,
    )
    return Execution(result=result, check=check, loaded=outcome.loaded)


class _Refused:
    """Wire names the gate refuses whatever the arguments, decided per name on demand.

    The tools of skills not loaded, those their source withdrew, and blocked ones.
    ``tool_search`` leaves them out (an exact name is answered with the reason), so the
    model is not sent to a tool it cannot call. Lazy: a blocklist is matched only
    against the names a search actually meets, not every tool of a large catalog.
    """

    def __init__(self, view: SessionView, ctx: GateContext) -> None:
        self._view, self._ctx = view, ctx
        self.any = bool(ctx.withdrawn or ctx.blocked or view.skill_of)

    def reason(self, wire: str) -> str | None:
        """Why the tool `wire` cannot be called now, or None."""
        locked = self._view.skill_lock(wire, self._ctx.skills)
        if locked is not None:
            return locked
        tool = self._view.by_wire_name.get(wire)
        return _refusal(self._ctx, wire, tool.name if tool else wire)

    def __contains__(self, wire: object) -> bool:
        return isinstance(wire, str) and self.reason(wire) is not None


def handler_result(
    call: ToolCall, check: Allowed, value: Any = None, error: BaseException | None = None
) -> ToolResult:
    """The result of running `check`'s tool: its return `value`, or the `error` it raised.

    A raised exception becomes an error result naming the tool (its wire name) and the
    exception, for the model to act on; a `MalformedArgumentsError` (arguments the
    handler's parameter types refuse, e.g. ``1e20`` for an ``int``) reads as invalid
    arguments instead, like the gate's schema refusals. A returned `ToolResult` keeps its content,
    ``is_error`` and media parts, answering this call (its id and name are replaced).
    Text is kept; other values become canonical JSON (UTF-8 bytes decoded, dataclasses
    and pydantic models converted); a value with no JSON form (another type, bytes that
    are not UTF-8, NaN or an infinity) becomes an error result naming the tool and the
    type, never a Python repr.
    """
    if isinstance(error, MalformedArgumentsError):  # the handler's types refused them
        content = f'Invalid arguments for tool "{check.wire_name}": {to_unicode(printed(error))}'
        return ToolResult(call_id=call.id, name=call.name, content=content, is_error=True)
    if error is not None:
        content = (
            f'Tool "{check.wire_name}" raised {type(error).__name__}: {to_unicode(printed(error))}'
        )
        return ToolResult(call_id=call.id, name=call.name, content=content, is_error=True)
    if isinstance(value, ToolResult):  # its text, error flag and media (MCP images) stay
        return ToolResult(
            call_id=call.id,
            name=call.name,
            content=_render_output(value),
            is_error=value.is_error,
            media=value.media,
        )
    try:
        content = _render_output(value)
    except _NoJsonForm as why:  # never a repr (with a per-run address) in the history
        content = (
            f'Tool "{check.wire_name}" returned {why}; a tool returns text, JSON data '
            "(dict, list, str, int, float, bool, None) or a ToolResult"
        )
        return ToolResult(call_id=call.id, name=call.name, content=content, is_error=True)
    return ToolResult(call_id=call.id, name=call.name, content=content)


def _no_handler(call: ToolCall, check: Allowed, *, answer: bool) -> ToolResult:
    """An allowed call of a tool with no handler: answered (`run_tools`) or refused."""
    if not answer:
        raise UsageError(
            f'no Python handler is registered for tool "{check.wire_name}" '
            f"(origin {shown(check.tool.origin)}); register one with handlers=..., or use "
            "run_tools(calls, fallback=...) to run such tools yourself"
        )
    logger.warning(
        "contextchef: no handler is registered for tool %s; run_tools answered it with an "
        "error result (register a handler, or pass fallback= to run it yourself)",
        check.wire_name,
    )
    text = (
        f'Tool "{check.wire_name}" cannot be run here: the application has no way to run it. '
        "Do not call it again; use another tool or answer without it."
    )
    return ToolResult(call_id=call.id, name=call.name, content=text, is_error=True)


def _decided_call(check: CheckResult) -> ToolCall:
    if check.call is None:
        raise UsageError(
            "this decision carries no call; pass the decision check_tool_call returned "
            "(or the call itself)"
        )
    return check.call


def _run_tool(
    call: ToolCall, check: Allowed, handlers: HandlerLookup, fallback: Fallback | None, answer: bool
) -> ToolResult:
    """Run the tool's handler (or `fallback`) and turn what it returns or raises into a result."""
    handler = handlers(check.tool)
    if handler is None and fallback is None:
        return _no_handler(call, check, answer=answer)
    try:
        if handler is not None:
            value = run_sync(handler(**check.arguments), "the handler")
        else:
            assert fallback is not None
            value = run_sync(fallback(call, check), "the fallback")
        return handler_result(call, check, value)
    except LoopRunning:
        raise
    except BaseException as exc:  # whatever the tool raises is the model's to see
        if not is_failure(exc):
            raise
        return handler_result(call, check, error=exc)


def run_allowed(
    view: SessionView,
    check: Allowed,
    ctx: GateContext,
    handlers: HandlerLookup,
    *,
    fallback: Fallback | None = None,
    answer_missing: bool = False,
) -> Execution:
    """Run a call the gate has allowed: the one execution path (sync).

    The gate and its before-hooks are not run again. A meta-tool is answered here; any
    other tool runs its handler (a coroutine handler with `asyncio.run` when no event
    loop is running), or `fallback` when it has none; then the after-hooks, once.

    Args:
        view: The tool view the call runs under.
        check: The gate's decision (it carries the call).
        ctx: The gate context (after-hooks, loaded skills).
        handlers: Looks up a tool's registered handler.
        fallback: Runs allowed calls of tools that have no handler.
        answer_missing: With no handler and no fallback, answer with an error result
            (and a logged warning) instead of raising.

    Raises:
        UsageError: No handler is registered for the tool (unless `answer_missing`), an
            async handler/hook is reached from inside a running event loop, or the
            decision carries no call.
    """
    call = _decided_call(check)
    done = meta_execution(view, call, check, ctx)
    if done is None:
        result = _run_tool(call, check, handlers, fallback, answer_missing)
        done = Execution(result=result, check=check)
    result = run_after_hooks(call, check, done.result, ctx)
    return done if result is done.result else dataclasses.replace(done, result=result)


async def astart_allowed(
    view: SessionView,
    check: Allowed,
    ctx: GateContext,
    handlers: HandlerLookup,
    *,
    fallback: Fallback | None = None,
    answer_missing: bool = False,
    inline: bool = True,
) -> Execution:
    """`arun_allowed` without the after-hooks (`afinish_allowed` runs them).

    `arun_tools` starts several calls' handlers this way and runs them concurrently.
    A sync handler runs on the loop's thread when `inline`, else in a worker thread.
    """
    call = _decided_call(check)
    done = meta_execution(view, call, check, ctx)
    if done is not None:
        return done
    handler = handlers(check.tool)
    if handler is None and fallback is None:
        return Execution(result=_no_handler(call, check, answer=answer_missing), check=check)
    result = await _ajob(call, check, handler, fallback, inline=inline)
    return Execution(result=result, check=check)


async def afinish_allowed(done: Execution, ctx: GateContext) -> Execution:
    """Run the after-hooks on a started `Execution` of an allowed call."""
    check = done.check
    assert isinstance(check, Allowed) and check.call is not None
    result = await arun_after_hooks(check.call, check, done.result, ctx)
    return dataclasses.replace(done, result=result)


async def arun_allowed(
    view: SessionView,
    check: Allowed,
    ctx: GateContext,
    handlers: HandlerLookup,
    *,
    fallback: Fallback | None = None,
    answer_missing: bool = False,
    inline: bool = True,
) -> Execution:
    """Async `run_allowed`: awaits coroutine handlers and hooks.

    Raises:
        UsageError: No handler is registered for the tool (unless `answer_missing`), or
            the decision carries no call.
    """
    started = await astart_allowed(
        view,
        check,
        ctx,
        handlers,
        fallback=fallback,
        answer_missing=answer_missing,
        inline=inline,
    )
    return await afinish_allowed(started, ctx)


async def _ajob(
    call: ToolCall,
    check: Allowed,
    handler: Callable[..., Any] | None,
    fallback: Fallback | None,
    *,
    inline: bool,
) -> ToolResult:
    """Run one allowed call's handler (or `fallback`); never raises an Exception."""
    import asyncio  # local: ``import contextchef`` does not pay for asyncio

    func: Any = handler if handler is not None else fallback
    try:
        if handler is not None:
            value = await _call(asyncio, handler, (), dict(check.arguments), inline=inline)
        else:
            assert fallback is not None
            value = await _call(asyncio, fallback, (call, check), {}, inline=inline)
    except BaseException as exc:  # whatever the tool raises is the model's to see
        if not is_failure(exc, on_loop=inspect.iscoroutinefunction(func)):
            raise
        return handler_result(call, check, error=exc)
    if isinstance(value, _Raised):  # a sync handler's exception, carried out unraised
        return handler_result(call, check, error=value.exc)
    try:
        return handler_result(call, check, value)
    except Exception as exc:
        return handler_result(call, check, error=exc)


@dataclasses.dataclass(frozen=True)
class _Raised:
    """What a sync handler raised, returned rather than raised.

    asyncio cannot carry a StopIteration through a Future (the task would never finish),
    and a coroutine turns one into RuntimeError, losing the handler's own exception.
    """

    exc: BaseException


def _boxed(func: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """Call sync `func`; an exception it raises comes back as `_Raised`.

    Stop signals such as KeyboardInterrupt still propagate.
    """
    try:
        return func(*args, **kwargs)
    except BaseException as exc:
        if not is_failure(exc):
            raise
        return _Raised(exc)


async def _call(
    asyncio: Any,
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    inline: bool = False,
) -> Any:
    """Call `func`: on the loop if a coroutine function or `inline`, else in a thread.

    A sync `func`'s exception is returned as `_Raised`, not raised.
    """
    if inspect.iscoroutinefunction(func):
        value = func(*args, **kwargs)
    elif inline:
        value = _boxed(func, args, kwargs)
    else:
        value = await asyncio.to_thread(_boxed, func, args, kwargs)
    if inspect.isawaitable(value):
        value = await value
    return value


def execute(
    view: SessionView, call: ToolCall, handlers: HandlerLookup, ctx: GateContext | None = None
) -> Execution:
    """Check a call and, if allowed, run it (``tool_search`` or a registered handler).

    Coroutine handlers and hooks are run with `asyncio.run` when no event loop is
    running; inside a loop use `aexecute`. Exceptions raised by a handler become error
    results; after-hooks may replace the result.

    Raises:
        UsageError: The call is allowed but no handler is registered for its tool, or an
            async handler/hook is reached from inside a running event loop.
    """
    ctx = ctx or GateContext()
    check = check_tool_call(view, call, ctx)
    if isinstance(check, Denied):
        return denied_execution(call, check)
    return run_allowed(view, check, ctx, handlers)


async def aexecute(
    view: SessionView, call: ToolCall, handlers: HandlerLookup, ctx: GateContext | None = None
) -> Execution:
    """Async `execute`: awaits coroutine handlers and hooks.

    Raises:
        UsageError: The call is allowed but no handler is registered for its tool.
    """
    ctx = ctx or GateContext()
    check = await acheck_tool_call(view, call, ctx)
    if isinstance(check, Denied):
        return denied_execution(call, check)
    return await arun_allowed(view, check, ctx, handlers)
