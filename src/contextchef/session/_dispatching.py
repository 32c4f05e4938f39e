"""`Dispatcher`: the session's part that gates and runs tool calls (session layer).

Calls arrive in any `CallLike` shape and are normalized once (`as_tool_call`); the gate
(`contextchef.dispatch._gate`) applies exposure, modes, the blocklist, schema validation
and hooks under the real tool's name, whether the tool is the user's, a namespace action,
a deferred tool reached through ``defer_execute`` or a library-owned tool (memory,
``new_context``). The strategy of the last compile says what the request offered: under
``flat`` and provider-native search, deferred tools may be called by name.

A decision is a value: `check` returns the gate's `Allowed` / `Denied`, carrying the call,
and `execute` / `run_tools` take it as it is. While the session has not changed since
(`contextchef.dispatch._gate.holds`) it is not gated again, so before-hooks run once per
call. Every allowed call then runs through `contextchef.dispatch._execute.run_allowed`
(or its async form): one execution path for `execute` and `run_tools`.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from contextchef._errors import UnknownToolError, UsageError, shown
from contextchef.deferred._meta import TOOL_SEARCH
from contextchef.deferred._view import SessionView
from contextchef.dispatch._calls import CallLike, as_tool_call, has_own_id
from contextchef.dispatch._execute import (
    afinish_allowed,
    arun_allowed,
    astart_allowed,
    denied_execution,
    run_allowed,
)
from contextchef.dispatch._gate import acheck_tool_call, check_tool_call, holds, is_meta
from contextchef.dispatch._hooks import refuse_async_in_loop
from contextchef.dispatch._types import (
    AfterHook,
    Allowed,
    BeforeHook,
    CheckResult,
    Denied,
    Execution,
    Fallback,
    GateContext,
)
from contextchef.history._answered import refuse_answered
from contextchef.history._archive import ARCHIVE_TOOL
from contextchef.history._messages import ToolCall, ToolResult
from contextchef.history._offload import (
    OFFLOAD_READ_TOOL,
    OffloadStore,
    offload_result,
    truncate_result,
)
from contextchef.providers import get_adapter
from contextchef.providers._revealed import revealed_by
from contextchef.session._state import SessionState
from contextchef.session._strategies import get_strategy
from contextchef.session._toolset import SessionTools

if TYPE_CHECKING:
    import asyncio

__all__ = ["CallOrDecision", "Dispatcher"]

logger = logging.getLogger("contextchef")

CallOrDecision = CallLike | Allowed | Denied
"""A model's tool call in any accepted shape, or the decision `check_tool_call` returned."""
Given = CheckResult | None
_ONE_ITEM = (str, bytes, Mapping, ToolCall, Allowed, Denied)  # not a list of calls
_NOT_STORED = (TOOL_SEARCH, OFFLOAD_READ_TOOL, ARCHIVE_TOOL)  # capped already: never offloaded


class Dispatcher:
    """Gate, execution, offload and hooks of one session.

    Args:
        state: The session's data (loaded schemas, skills, blocklist, last strategy).
        tools: The session's tools (view, registry, handlers, toolkit loads).
        offload_store: Where results over `max_inline` characters are kept, or None.
        max_inline: Largest result text kept inline, in characters (None: no limit).
    """

    def __init__(
        self,
        *,
        state: SessionState,
        tools: SessionTools,
        offload_store: OffloadStore | None,
        max_inline: int | None,
    ) -> None:
        self._state = state
        self._tools = tools
        self.store = offload_store
        self._max_inline = max_inline
        self.before: list[BeforeHook] = []
        self.after: list[AfterHook] = []
        self._made: tuple[object, GateContext] = (None, GateContext())
        self._running: set[str] = set()  # ids of the calls an `arun_tools` is running

    # -- the gate ------------------------------------------------------------------------

    def context(self) -> GateContext:
        """What the gate reads from the session now: the last one while its inputs are equal."""
        state, hooks = self._state, ((*self.before,), (*self.after,))
        loaded, withdrawn = frozenset(state.loaded), tuple(sorted(state.withdrawn.items()))
        names = (state.strategy, state.target, state.model, state.blocked, state.loaded_skills)
        ledger = state.ledgers.get(state.target or "")
        top = None if ledger is None else (ledger.pending or ledger.marks[-1]).tools
        made_from = (names, hooks, loaded, withdrawn, state.history, top)
        if self._made[0] == made_from:
            return self._made[1]
        strategy = get_strategy(state.strategy)
        reveal_loaded = False
        if state.target is not None:
            adapter = get_adapter(state.target)
            if strategy.native is not None:  # callable by name once a request revealed it
                loaded = revealed_by(adapter, state.history, top)
            reveal_loaded = adapter.model_rules(state.model or "").tool_changes
        ctx = GateContext(
            blocked=state.blocked,
            loaded=loaded,
            before=hooks[0],
            after=hooks[1],
            direct_calls=strategy.direct_calls,
            all_loaded=strategy.all_loaded,
            reveal_by_reference=strategy.reveal_by_reference,
            search_direct=strategy.search_direct,
            reveal_loaded=reveal_loaded,
            reveal_first=strategy.native is not None,
            result_references=strategy.reveal_by_reference and strategy.search is None,
            meta_tools=strategy.meta_tools,
            skills=frozenset(state.loaded_skills),
            withdrawn=withdrawn,
        )
        self._made = (made_from, ctx)
        return ctx

    def _given(self, item: CallOrDecision, default_id: str = "call") -> tuple[ToolCall, Given]:
        """The call, and the decision when one was given (it carries its call)."""
        if isinstance(item, (Allowed, Denied)):
            if item.call is None:
                raise UsageError(
                    "this decision carries no call; pass the decision check_tool_call "
                    "returned (or the call itself)"
                )
            return item.call, item
        return as_tool_call(item, default_id=default_id), None

    def decide(self, item: CallOrDecision) -> tuple[CheckResult, SessionView, GateContext]:
        """The gate's decision on a call, or a given decision while it still holds."""
        call, given = self._given(item)
        view, ctx = self._tools.view(), self.context()
        if given is not None and holds(given, view, ctx):
            return given, view, ctx
        return check_tool_call(view, call, ctx), view, ctx

    async def adecide(self, item: CallOrDecision) -> tuple[CheckResult, SessionView, GateContext]:
        """Async `decide` (awaits async before-hooks)."""
        call, given = self._given(item)
        view, ctx = self._tools.view(), self.context()
        if given is not None and holds(given, view, ctx):
            return given, view, ctx
        return await acheck_tool_call(view, call, ctx), view, ctx

    def withdraw(self, wire: str, reason: str | None) -> None:
        """Refuse the tool `wire` with `reason`, or admit it again (None)."""
        self._state.withdrawn.pop(wire, None)
        if reason is not None:
            self._state.withdrawn[wire] = reason

    def reveal(self, names: Sequence[str]) -> tuple[str, ...]:
        """Count tools as loaded from the host; see `ContextChef.reveal_tools`."""
        view, skills = self._tools.view(), frozenset(self._state.loaded_skills)
        wires: set[str] = set()
        for name in names:
            if not isinstance(name, str):
                raise UsageError(f"reveal_tools takes tool names, got {type(name).__name__}")
            tool = view.lookup(name)
            if tool is None:
                raise UnknownToolError(
                    f"no registered tool is named {shown(name, 80)}", name=name[:200]
                )
            wire = view.wire_names[tool.key]
            reason = view.unavailable_reason(name) or view.skill_lock(wire, skills)
            if reason is not None:
                raise UsageError(f"cannot reveal {shown(name, 80)}: {reason}")
            wires.add(wire)
        self._state.loaded.update(wires)
        return tuple(sorted(wires))

    # -- one call --------------------------------------------------------------------------

    def execute(self, item: CallOrDecision) -> Execution:
        """Gate (unless the given decision holds) and run one call; see `ContextChef.execute`."""
        self._parsed([item])  # a call answered already is refused (`refuse_answered`)
        check, view, ctx = self.decide(item)
        if isinstance(check, Denied):
            return denied_execution(self._given(item)[0], check)
        return self.record(run_allowed(view, check, ctx, self._tools.registry.handler))

    async def aexecute(self, item: CallOrDecision) -> Execution:
        """Async `execute`."""
        self._parsed([item])
        check, view, ctx = await self.adecide(item)
        if isinstance(check, Denied):
            return denied_execution(self._given(item)[0], check)
        done = await arun_allowed(view, check, ctx, self._tools.registry.handler)
        return self.record(done)

    def record(self, done: Execution) -> Execution:
        """Session bookkeeping after a call: loaded schemas, toolkits and skills, offload."""
        state = self._state
        state.loaded.update(done.loaded)  # the schemas shown, or the tools a skill opens
        if done.skill is not None:
            state.loaded_skills = tuple(sorted({*state.loaded_skills, done.skill}))
            return done
        if done.toolkit is not None:
            # the model loaded it (only the schemas it was shown count as loaded, above)
            self._tools.load_toolkit(done.toolkit)
            state.loaded_toolkits = self._tools.loaded_toolkits
            return done
        if done.result.name in _NOT_STORED or done.check.decision == "denied":
            return done  # search text is capped; stored output and denials are never stored
        return Execution(result=self.offload(done.result), check=done.check, loaded=done.loaded)

    def offload(self, result: ToolResult) -> ToolResult:
        """Offload one large result; see `ContextChef.offload`."""
        if not isinstance(result, ToolResult):
            raise UsageError(f"offload takes a ToolResult, got {type(result).__name__}")
        if self._max_inline is None or len(result.content) <= self._max_inline:
            return result
        if self.store is None:  # nowhere to keep it: head and tail, said in the text
            logger.warning(
                "contextchef: a %d-character result of %s was cut to head and tail; set "
                "offload_dir to keep large results",
                len(result.content),
                result.name,
            )
            return truncate_result(result, max_inline_chars=self._max_inline)
        try:
            return offload_result(result, self.store, max_inline_chars=self._max_inline)
        except OSError as exc:
            logger.warning(
                "contextchef: offload to %s failed (%s); the %d-character result of %s was "
                "cut to head and tail instead",
                self.store.root,
                exc,
                len(result.content),
                result.name,
            )
            return truncate_result(result, max_inline_chars=self._max_inline)

    # -- a whole turn ----------------------------------------------------------------------

    def _parsed(self, calls: Iterable[CallOrDecision]) -> list[tuple[ToolCall, CallOrDecision]]:
        """(call, what was given) per item, in order; ids must be unique."""
        if isinstance(calls, _ONE_ITEM) or not isinstance(calls, Iterable):
            raise UsageError(
                f"run_tools takes the list of calls chef.ingest(response) returned (put one "
                f"call in a list), got {type(calls).__name__}"
            )
        parsed: list[tuple[ToolCall, CallOrDecision]] = []
        seen: set[str] = set()
        named = []  # calls whose id the model gave (not one made up here): each runs once
        for i, item in enumerate(calls):
            call, given = self._given(item, f"call_{i}")
            parsed.append((call, given or call))
            if given is not None or has_own_id(item):
                named.append(call)
            if call.id in seen:
                raise UsageError(
                    f"two calls share the id {shown(call.id, 80)}; each result must answer "
                    "exactly one call (pass the calls chef.ingest returned)"
                )
            seen.add(call.id)
        refuse_answered(named, self._state.history, self._running)
        return parsed

    def run_tools(
        self, calls: Iterable[CallOrDecision], fallback: Fallback | None
    ) -> tuple[ToolResult, ...]:
        """Answer every call in order; see `ContextChef.run_tools` (nothing is appended)."""
        parsed, registry = self._parsed(calls), self._tools.registry
        if parsed:  # no call: nothing runs, whatever loop is running
            hooks = (*self.before, *self.after, fallback)
            refuse_async_in_loop(lambda: [*hooks, *map(registry.handler, registry)])
        done = []
        for call, item in parsed:
            check, view, ctx = self.decide(item)
            if isinstance(check, Denied):
                done.append(denied_execution(call, check))
                continue
            handlers = self._tools.registry.handler
            ran = run_allowed(view, check, ctx, handlers, fallback=fallback, answer_missing=True)
            done.append(self.record(ran))
        return tuple(d.result for d in done)

    async def arun_tools(
        self, calls: Iterable[CallOrDecision], fallback: Fallback | None
    ) -> tuple[ToolResult, ...]:
        """Async `run_tools`; see `ContextChef.arun_tools` (nothing is appended)."""
        parsed = self._parsed(calls)
        ids = {call.id for call, _ in parsed}  # running until the caller appends them
        self._running |= ids  # (no await between this return and that append)
        try:
            return await self._arun(parsed, fallback)
        finally:
            self._running -= ids

    async def _arun(
        self, parsed: list[tuple[ToolCall, CallOrDecision]], fallback: Fallback | None
    ) -> tuple[ToolResult, ...]:
        import asyncio  # local: ``import contextchef`` does not pay for asyncio

        handlers = self._tools.registry.handler
        slots: list[Execution | None] = []
        jobs: list[tuple[int, GateContext, Coroutine[Any, Any, Execution]]] = []
        for call, item in parsed:
            check, view, ctx = await self.adecide(item)
            if isinstance(check, Denied):
                slots.append(denied_execution(call, check))
                continue
            # meta-tools and contextchef's own tools change session state: in call order
            inline = is_meta(view, check.tool) or check.tool.source == "library"
            start = astart_allowed(
                view, check, ctx, handlers, fallback=fallback, answer_missing=True, inline=inline
            )
            if inline:
                slots.append(self.record(await afinish_allowed(await start, ctx)))
                continue
            jobs.append((len(slots), ctx, start))
            slots.append(None)
        tasks: list[asyncio.Task[Execution]] = [asyncio.ensure_future(j[2]) for j in jobs]
        try:
            started = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            raise
        for (index, ctx, _), done in zip(jobs, started, strict=True):
            slots[index] = self.record(await afinish_allowed(done, ctx))
        return tuple(s.result for s in slots if s is not None)
