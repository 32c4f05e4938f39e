"""Before- and after-hooks around an allowed call (sync and async).

A before-hook sees the real tool and validated (read-only) arguments and may deny the call
with a reason; one that raises denies it (fails closed). An after-hook may replace the
result; one that raises, or returns anything but None or a `ToolResult` for the same call,
leaves it with a note (and, for a wrong return, a WARNING on the ``contextchef`` logger):
the handler has already run by then, so raising would lose the result of a call whose
side effects happened, and the model would retry it. A sync entry point that meets an async
hook inside a running event loop raises `UsageError` (use the async API).
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from contextchef._echo import printed
from contextchef._errors import UsageError, shown
from contextchef._json import freeze
from contextchef.dispatch._types import (
    Allowed,
    CheckResult,
    Denied,
    GateContext,
    ToolCallEvent,
)
from contextchef.history._messages import ToolCall, ToolResult

__all__ = [
    "LoopRunning",
    "arun_after_hooks",
    "arun_before_hooks",
    "checked_hook",
    "is_failure",
    "refuse_async_in_loop",
    "run_after_hooks",
    "run_before_hooks",
    "run_sync",
]


_LOG = logging.getLogger("contextchef")
_H = TypeVar("_H")


def checked_hook(hook: _H, method: str) -> _H:
    """`hook` itself, once it is known to be callable.

    Raises:
        UsageError: Not callable (found here, not as a denial of every later call).
    """
    if not callable(hook):
        raise UsageError(
            f"{method} takes a function (call, tool, arguments...); got {type(hook).__name__} "
            f"{shown(hook, 40)}"
        )
    return hook


def _event(call: ToolCall, allowed: Allowed) -> ToolCallEvent:
    return ToolCallEvent(
        call=call,
        tool=allowed.tool,
        wire_name=allowed.wire_name,
        arguments=freeze(allowed.arguments),  # hooks read, never rewrite, arguments
        via=allowed.via,
    )


def _before_outcome(allowed: Allowed, hook: object, verdict: object) -> Denied | None:
    """Interpret a before-hook's return: None/False allow, a string denies.

    Any other return is a host bug; like a hook that raises, it fails closed: the call
    is denied (nothing has run yet) and a WARNING names the hook, so one bad return
    never aborts the other calls of a batch.
    """
    if verdict is None or verdict is False:
        return None
    if isinstance(verdict, str):
        reason = verdict.strip() or f'The call to "{allowed.wire_name}" was denied by a policy.'
        return Denied(reason=reason, code="hook", tool=allowed.tool)
    problem = (
        f"before-hook {shown(getattr(hook, '__name__', hook), 80)} returned {shown(verdict, 80)}; "
        "return None to allow the call or a reason string to deny it"
    )
    _LOG.warning("contextchef: %s; the call was denied", problem)
    return _hook_failed(allowed, hook, UsageError(problem))


def _hook_failed(allowed: Allowed, hook: object, exc: BaseException) -> Denied:
    """A before-hook that raises fails closed: the call is denied, the loop goes on."""
    return Denied(
        reason=(
            f'The call to "{allowed.wire_name}" was not run: a policy check failed '
            f"({type(exc).__name__}: {printed(exc)})."
        ),
        code="hook_error",
        tool=allowed.tool,
    )


def _after_outcome(call: ToolCall, result: ToolResult, hook: object, value: object) -> ToolResult:
    """Interpret an after-hook's return: None keeps the result, a ToolResult replaces it."""
    if value is None:
        return result
    if isinstance(value, ToolResult) and value.call_id == call.id:
        return value
    name = shown(getattr(hook, "__name__", hook), 80)
    if isinstance(value, ToolResult):
        problem = (
            f"returned a result for call {shown(value.call_id, 80)}, but it must answer call "
            f"{shown(call.id, 80)}"
        )
    else:
        problem = f"returned {shown(value, 80)}"
    _LOG.warning(
        "contextchef: after-hook %s %s; return None to keep the result or a ToolResult "
        "(same call_id) to replace it; the handler's result was kept",
        name,
        problem,
    )
    return _after_failed(result, hook, UsageError(problem))


def is_failure(exc: BaseException, *, on_loop: bool = False) -> bool:
    """Whether `exc`, raised by a handler/hook/fallback, is the model's to see as an error.

    Everything is, except the signals that stop the program (KeyboardInterrupt,
    SystemExit) and, for code awaited on the event loop (`on_loop`), the CancelledError
    of a task being cancelled (someone called ``cancel()`` on it: the cancellation goes
    on). A CancelledError the tool itself met (it awaited something cancelled elsewhere;
    told apart by ``Task.cancelling()``, Python 3.11+), StopIteration, GeneratorExit and
    a CancelledError raised by sync code are plain failures of the tool.
    """
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return False
    if on_loop:
        import asyncio  # local: already imported when a loop runs

        if not isinstance(exc, asyncio.CancelledError):
            return True
        task = asyncio.current_task()
        cancelling = getattr(task, "cancelling", None)  # Python 3.11+
        return callable(cancelling) and cancelling() == 0
    return True


def _after_failed(result: ToolResult, hook: object, exc: BaseException) -> ToolResult:
    """An after-hook that raises leaves the result, noting the failure."""
    note = f"\n[post-processing {getattr(hook, '__name__', 'hook')} failed: {printed(exc)}]"
    return dataclasses.replace(result, content=result.content + note)


def run_sync(value: Any, what: str) -> Any:
    """Resolve an awaitable returned by a hook/handler when called synchronously."""
    if not inspect.isawaitable(value):
        return value
    import asyncio  # local: ``import contextchef`` does not pay for asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:

        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    if inspect.iscoroutine(value):
        value.close()
    raise LoopRunning(f"{what} is async and an event loop is running; use the async API")


class LoopRunning(UsageError):
    """A sync entry point met an async hook/handler inside a running loop (host misuse)."""


def refuse_async_in_loop(functions: Callable[[], Iterable[object]]) -> None:
    """Refuse a sync ``run_tools`` inside a running event loop when it would run async code.

    `functions` gives the hooks, fallback and handlers the call may run (asked only when a
    loop is running): a coroutine function among them cannot run from sync code there.

    Raises:
        UsageError: A loop is running and one of them is a coroutine function.
    """
    import asyncio  # local: ``import contextchef`` does not pay for asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    if any(inspect.iscoroutinefunction(f) for f in functions() if f is not None):
        raise UsageError(
            "run_tools was called inside a running event loop and this session has async "
            "hooks or handlers (an MCP server's tools, for one); use "
            "`await chef.arun_tools(calls)`"
        )


def run_before_hooks(call: ToolCall, allowed: Allowed, ctx: GateContext) -> CheckResult:
    """Run the before-hooks on an allowed call; the first denial wins (sync entry)."""
    if not ctx.before:
        return allowed
    event = _event(call, allowed)
    for hook in ctx.before:
        try:
            verdict = run_sync(hook(event), "a before-hook")
        except LoopRunning:
            raise
        except BaseException as exc:
            if not is_failure(exc):
                raise
            return _hook_failed(allowed, hook, exc)
        denied = _before_outcome(allowed, hook, verdict)
        if denied is not None:
            return denied
    return allowed


async def arun_before_hooks(call: ToolCall, allowed: Allowed, ctx: GateContext) -> CheckResult:
    """Async `run_before_hooks` (awaits async hooks)."""
    event = _event(call, allowed)
    for hook in ctx.before:
        try:
            verdict = hook(event)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except BaseException as exc:
            if not is_failure(exc, on_loop=True):
                raise
            return _hook_failed(allowed, hook, exc)
        denied = _before_outcome(allowed, hook, verdict)
        if denied is not None:
            return denied
    return allowed


def run_after_hooks(
    call: ToolCall, check: Allowed, result: ToolResult, ctx: GateContext
) -> ToolResult:
    """Run the after-hooks on a result (sync entry); each may replace it."""
    if not ctx.after:
        return result
    event = _event(call, check)
    for hook in ctx.after:
        try:
            value = run_sync(hook(event, result), "an after-hook")
        except LoopRunning:
            raise
        except BaseException as exc:
            if not is_failure(exc):
                raise
            result = _after_failed(result, hook, exc)
            continue
        result = _after_outcome(call, result, hook, value)
    return result


async def arun_after_hooks(
    call: ToolCall, check: Allowed, result: ToolResult, ctx: GateContext
) -> ToolResult:
    """Async `run_after_hooks` (awaits async hooks)."""
    event = _event(call, check)
    for hook in ctx.after:
        try:
            value = hook(event, result)
            if inspect.isawaitable(value):
                value = await value
        except BaseException as exc:
            if not is_failure(exc, on_loop=True):
                raise
            result = _after_failed(result, hook, exc)
            continue
        result = _after_outcome(call, result, hook, value)
    return result
