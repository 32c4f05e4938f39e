"""`ContextChef.run_tools` / `arun_tools`: answer a turn's tool calls in one call.

Each call passes the gate once (its before-hooks run once), then runs: a meta-tool
(``tool_search``, ``load_toolkit``, ``load_skill``) is answered by the session, any other
allowed tool by its registered handler (user functions, library tools such as memory and
``read_offloaded``, MCP tools registered with a forwarding handler) or the host's
`fallback`; its after-hooks run once. Results come back in call order and are appended to
the history as one tool-results message, which every target renders in its own shape
(Anthropic ``tool_result`` blocks in one user message, Chat ``tool`` messages, Responses
``function_call_output`` items, Gemini ``functionResponse`` parts).

The gate's decisions are also remembered per call id for the host that checks a call
first (`check_tool_call`, e.g. to ask for approval) and runs it afterwards (`execute`,
`run_tools`): a call already checked under the same tools, modes, blocklist and hooks is
not gated again, so its before-hooks never run twice.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from contextchef._errors import UsageError, shown
from contextchef.deferred._view import SessionView
from contextchef.dispatch._calls import CallLike, as_tool_call
from contextchef.dispatch._execute import denied_execution, handler_result, meta_execution
from contextchef.dispatch._gate import acheck_tool_call, check_tool_call
from contextchef.dispatch._hooks import (
    LoopRunning,
    arun_after_hooks,
    is_failure,
    run_after_hooks,
    run_sync,
)
from contextchef.dispatch._types import Allowed, CheckResult, Denied, Execution, GateContext
from contextchef.history._messages import Message, ToolCall, ToolResult, tool_results
from contextchef.tools._registry import Registry

if TYPE_CHECKING:
    import asyncio

__all__ = ["Fallback", "RunToolsMixin"]

logger = logging.getLogger("contextchef")

Fallback = Callable[[ToolCall, Allowed], Any]
"""Runs an allowed call whose tool has no registered handler: ``fallback(call, allowed)``
gets the model's call and the gate's decision (`Allowed.tool` with its ``server`` and
original ``name``, the validated `Allowed.arguments`) and returns the output (text, JSON
data or a `ToolResult`), or an awaitable of it in `arun_tools`."""

_KEEP = 256  # gate decisions remembered for a later execute; the oldest go first
_HOOKED = ("hook", "hook_error")  # denials a before-hook made: the hooks ran


@dataclasses.dataclass(frozen=True)
class _Decision:
    call: tuple[str, str, str]
    check: CheckResult
    view: SessionView
    ctx: GateContext


def _key(call: ToolCall) -> tuple[str, str, str]:
    return (call.id, call.name, call.arguments)


def _same_gate(old: GateContext, new: GateContext) -> bool:
    """The decision still holds: same state, except schemas loaded since (they only add)."""
    empty: frozenset[str] = frozenset()
    same = dataclasses.replace(old, loaded=empty) == dataclasses.replace(new, loaded=empty)
    return same and old.loaded <= new.loaded


def _no_handler(call: ToolCall, check: Allowed) -> ToolResult:
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


class RunToolsMixin:
    """`run_tools` / `arun_tools` and the remembered gate decisions for `ContextChef`."""

    if TYPE_CHECKING:  # provided by DispatchMixin and ContextChef

        @property
        def view(self) -> SessionView: ...

        @property
        def registry(self) -> Registry: ...

        def _gate(self) -> GateContext: ...

        def _record(self, done: Execution) -> Execution: ...

        def append(self, *messages: Message) -> None: ...

    # -- the gate, once per call ---------------------------------------------------------

    def _decisions(self) -> dict[tuple[str, str, str], _Decision]:
        found: dict[tuple[str, str, str], _Decision] = vars(self).setdefault("_gate_decided", {})
        return found

    def _remember(
        self, call: ToolCall, check: CheckResult, view: SessionView, ctx: GateContext
    ) -> None:
        """Keep a decision the before-hooks took part in, for a later execute of the call."""
        if not ctx.before or (isinstance(check, Denied) and check.code not in _HOOKED):
            return  # no hook ran: gating again costs nothing and sees the newest state
        decided = self._decisions()
        decided.pop(_key(call), None)
        decided[_key(call)] = _Decision(call=_key(call), check=check, view=view, ctx=ctx)
        while len(decided) > _KEEP:
            del decided[next(iter(decided))]

    def _recall(self, call: ToolCall, view: SessionView, ctx: GateContext) -> CheckResult | None:
        """The remembered decision on `call` (used up), if the session has not changed."""
        found = self._decisions().pop(_key(call), None)
        if found is None or found.view is not view or not _same_gate(found.ctx, ctx):
            return None
        return found.check

    def _decide(self, call: ToolCall) -> tuple[CheckResult, SessionView, GateContext]:
        view, ctx = self.view, self._gate()
        check = self._recall(call, view, ctx)
        return (check or check_tool_call(view, call, ctx)), view, ctx

    async def _adecide(self, call: ToolCall) -> tuple[CheckResult, SessionView, GateContext]:
        view, ctx = self.view, self._gate()
        check = self._recall(call, view, ctx)
        return (check or await acheck_tool_call(view, call, ctx)), view, ctx

    # -- run_tools -------------------------------------------------------------------------

    def _parsed(self, calls: Iterable[CallLike]) -> list[ToolCall]:
        if isinstance(calls, (str, bytes)) or not isinstance(calls, Iterable):
            raise UsageError(
                f"run_tools takes the list of calls chef.ingest(response) returned, got "
                f"{type(calls).__name__}"
            )
        parsed = [as_tool_call(c, default_id=f"call_{i}") for i, c in enumerate(calls)]
        seen: set[str] = set()
        for call in parsed:
            if call.id in seen:
                raise UsageError(
                    f"two calls share the id {shown(call.id, 80)}; each result must answer "
                    "exactly one call (pass the calls chef.ingest returned)"
                )
            seen.add(call.id)
        return parsed

    def _finish(self, done: list[Execution], append: bool) -> tuple[ToolResult, ...]:
        """Results of the recorded executions, appended as one tool-results message."""
        results = tuple(d.result for d in done)
        if append and results:
            self.append(tool_results(results))
        return results

    def _refuse_async_in_loop(self, fallback: Fallback | None) -> None:
        """Sync run_tools inside a running event loop cannot run async hooks or handlers."""
        import asyncio  # local: ``import contextchef`` does not pay for asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        ctx = self._gate()
        hooks: list[object] = [*ctx.before, *ctx.after, fallback]
        handlers = [self.registry.handler(t) for t in self.registry]
        if any(inspect.iscoroutinefunction(f) for f in (*hooks, *handlers) if f is not None):
            raise UsageError(
                "run_tools was called inside a running event loop and this session has async "
                "hooks or handlers (an MCP server's tools, for one); use "
                "`await chef.arun_tools(calls)`"
            )

    def run_tools(
        self,
        calls: Iterable[CallLike],
        *,
        fallback: Fallback | None = None,
        append: bool = True,
    ) -> tuple[ToolResult, ...]:
        """Answer every call of a model turn, in order, and append the results.

        Each call passes the gate once (before-hooks once), then runs: meta-tools
        (``tool_search``, ``load_toolkit``, ``load_skill``, through ``defer_execute`` and
        namespaces too), registered handlers (library tools and MCP tools included), and
        after-hooks once. A call the gate refuses (unknown, blocked, invalid arguments,
        outside the mode, denied by a hook) is answered with the gate's error result; a
        handler that raises, with an error result naming the tool; an allowed tool with no
        handler is given to `fallback`, or without one answered with an error result
        telling the model it cannot run here (and a logged warning). Large results go
        through the offload path. Calls run one after another here; coroutine handlers
        with `asyncio.run` when no event loop is running (`arun_tools` runs them
        concurrently).

        Args:
            calls: The calls `ingest` returned (or any `CallLike` values), in order.
            fallback: Runs allowed calls of tools that have no handler (see `Fallback`).
            append: Append the results to the history as one tool-results message
                (False: only return them).

        Returns:
            One `ToolResult` per call, in call order.

        Raises:
            UsageError: `calls` is not a list of calls, two calls share an id, or an event
                loop is running while the session has async hooks or handlers (use
                `arun_tools`); nothing has run then. Also, as `execute` does, when a hook
                or handler that is not declared ``async`` returns an awaitable inside a
                running event loop.
        """
        parsed = self._parsed(calls)
        self._refuse_async_in_loop(fallback)
        done = [self._run_one(call, fallback) for call in parsed]
        return self._finish(done, append)

    def _run_one(self, call: ToolCall, fallback: Fallback | None) -> Execution:
        check, view, ctx = self._decide(call)
        if isinstance(check, Denied):
            return denied_execution(call, check)
        meta = meta_execution(view, call, check, ctx)
        if meta is not None:
            result = run_after_hooks(call, check, meta.result, ctx)
            return self._record(dataclasses.replace(meta, result=result))
        handler = self.registry.handler(check.tool)
        if handler is None and fallback is None:
            result = _no_handler(call, check)
        else:
            try:
                if handler is not None:
                    value = run_sync(handler(**check.arguments), "the handler")
                else:
                    assert fallback is not None
                    value = run_sync(fallback(call, check), "the fallback")
                result = handler_result(call, check, value)
            except LoopRunning:
                raise
            except BaseException as exc:  # whatever the tool raises is the model's to see
                if not is_failure(exc):
                    raise
                result = handler_result(call, check, error=exc)
        return self._record(
            Execution(result=run_after_hooks(call, check, result, ctx), check=check)
        )

    async def arun_tools(
        self,
        calls: Iterable[CallLike],
        *,
        fallback: Fallback | None = None,
        append: bool = True,
    ) -> tuple[ToolResult, ...]:
        """Async `run_tools`: the handlers of one turn run concurrently.

        The gate runs on each call in call order (async hooks awaited), and meta-tools
        and contextchef's own tools (memory, ``new_context``, ``read_offloaded``) are
        answered then, on the loop's thread, so a later call of the same turn sees what an
        earlier one loaded or wrote. The handlers (and `fallback`) then run together:
        coroutine handlers on the running loop, sync ones in worker threads
        (`asyncio.to_thread`). After-hooks run in call order once every handler is done;
        results come back in call order whatever order the handlers finished in.
        Cancelling the task cancels the handlers still running (CancelledError and other
        BaseExceptions are not turned into results).

        Args:
            calls: The calls `ingest` returned (or any `CallLike` values), in order.
            fallback: Runs allowed calls of tools that have no handler (see `Fallback`).
            append: Append the results as one tool-results message (False: only return).

        Returns:
            One `ToolResult` per call, in call order.

        Raises:
            UsageError: `calls` is not a list of calls, or two calls share an id.
        """
        import asyncio  # local: ``import contextchef`` does not pay for asyncio

        parsed = self._parsed(calls)
        slots: list[Execution | None] = []
        jobs: list[tuple[int, ToolCall, Allowed, GateContext, Awaitable[ToolResult]]] = []
        for call in parsed:
            check, view, ctx = await self._adecide(call)
            if isinstance(check, Denied):
                slots.append(denied_execution(call, check))
                continue
            meta = meta_execution(view, call, check, ctx)
            if meta is not None:
                result = await arun_after_hooks(call, check, meta.result, ctx)
                slots.append(self._record(dataclasses.replace(meta, result=result)))
                continue
            if check.tool.source == "library":  # memory, new_context: session state, in order
                result = await self._job(call, check, fallback, inline=True)
                result = await arun_after_hooks(call, check, result, ctx)
                slots.append(self._record(Execution(result=result, check=check)))
                continue
            jobs.append((len(slots), call, check, ctx, self._job(call, check, fallback)))
            slots.append(None)
        tasks: list[asyncio.Task[ToolResult]] = [asyncio.ensure_future(j[4]) for j in jobs]
        try:
            outputs = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            raise
        for (index, call, check, ctx, _), result in zip(jobs, outputs, strict=True):
            result = await arun_after_hooks(call, check, result, ctx)
            slots[index] = self._record(Execution(result=result, check=check))
        return self._finish([s for s in slots if s is not None], append)

    async def _job(
        self, call: ToolCall, check: Allowed, fallback: Fallback | None, *, inline: bool = False
    ) -> ToolResult:
        """Run one allowed call's handler (or `fallback`); never raises an Exception.

        A sync handler runs in a worker thread, or on the loop's thread when `inline`.
        """
        import asyncio

        handler = self.registry.handler(check.tool)
        if handler is None and fallback is None:
            return _no_handler(call, check)
        func: Any = handler if handler is not None else fallback
        try:
            if handler is not None:
                value = await _call(asyncio, handler, (), dict(check.arguments), inline=inline)
            else:
                assert fallback is not None
                value = await _call(asyncio, fallback, (call, check), {})
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
