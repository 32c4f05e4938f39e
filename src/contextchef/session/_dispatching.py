"""`ContextChef`'s dispatch methods: the one gate for every call, library tools included.

Calls arrive in any `CallLike` shape and are normalized once (`as_tool_call`); the gate
(`contextchef.dispatch._gate`) applies exposure, modes, the blocklist, schema validation
and hooks under the real tool's name, whether the tool is the user's, a namespace action,
a deferred tool reached through ``defer_execute`` or a library-owned tool (memory,
``new_context``). The strategy of the last compile says what the request offered: under
``flat`` and provider-native search, deferred tools may be called by name.
"""

from __future__ import annotations

import logging

from contextchef._errors import UnknownToolError, UsageError, shown
from contextchef.deferred._meta import TOOL_SEARCH
from contextchef.deferred._view import SessionView
from contextchef.dispatch._calls import CallLike, as_tool_call
from contextchef.dispatch._execute import arun_allowed, denied_execution, run_allowed
from contextchef.dispatch._types import (
    AfterHook,
    BeforeHook,
    CheckResult,
    Denied,
    Execution,
    GateContext,
)
from contextchef.history._messages import ToolResult
from contextchef.history._offload import (
    OFFLOAD_READ_TOOL,
    OffloadStore,
    offload_result,
    truncate_result,
)
from contextchef.providers import get_adapter
from contextchef.session._memory import MemoryStore, OverflowHandoff
from contextchef.session._run_tools import RunToolsMixin
from contextchef.session._state import SessionState
from contextchef.session._strategies import get_strategy
from contextchef.session._toolset import SessionTools
from contextchef.tools._registry import Registry
from contextchef.tools._tool import Tool

__all__ = ["DispatchMixin"]

logger = logging.getLogger("contextchef")


class DispatchMixin(RunToolsMixin):
    """Gate, execution, offload and library-owned tools for `ContextChef`."""

    _state: SessionState
    _tools: SessionTools
    _before: list[BeforeHook]
    _after: list[AfterHook]
    _store: OffloadStore | None
    _max_inline: int | None
    _memory: MemoryStore | None
    _handoff: OverflowHandoff | None

    @property
    def view(self) -> SessionView:
        """The frozen tool view, rebuilt only after registration or exposure changes."""
        return self._tools.view()

    @property
    def registry(self) -> Registry:
        """The tool registry (read it; register through this facade)."""
        return self._tools.registry

    def load_toolkit(self, name: str) -> tuple[Tool, ...]:
        """Load a toolkit (idempotent): see `SessionTools.load_toolkit`."""
        added = self._tools.load_toolkit(name)
        self._state.loaded.update(self._tools.registry.wire_name_for(t) for t in added)
        self._state.loaded_toolkits = self._tools.loaded_toolkits
        return added

    def reveal_tools(self, *names: str) -> tuple[str, ...]:
        """Make deferred tools callable, from the host (the model did not search for them).

        Each name (a wire name, or a tool's own name when unique) counts as loaded from
        now on: the gate admits it under ``require_search``, and on a model that takes
        mid-conversation tool changes the next native-strategy request adds it with a
        ``tool_addition`` block (by reference), which stays in the history. Elsewhere the
        model does not see it until it searches, or until you say so (`announce`).

        Returns:
            The wire names revealed, sorted.

        Raises:
            UnknownToolError: A name no registered tool has.
            UsageError: A name that is not a string, a tool the mode hides, or a tool of
                a skill not loaded (load the skill: `load_skill`).
        """
        view = self.view
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
            reason = view.unavailable_reason(name) or view.skill_lock(
                wire, frozenset(self._state.loaded_skills)
            )
            if reason is not None:
                raise UsageError(f"cannot reveal {shown(name, 80)}: {reason}")
            wires.add(wire)
        self._state.loaded.update(wires)
        return tuple(sorted(wires))

    def replace_tool(self, tool: Tool) -> Tool:
        """Replace a registered tool's definition from now on (its source changed it).

        For a tool whose definition changed at its source (an MCP server's changed
        schema): same key (origin and name), so the same wire name and handler; the gate
        validates against the new schema from the next call on. A deferred tool is
        replaced in the search index, and the cached prefix (``tools``, directory) is kept;
        a resident tool's new definition changes ``tools`` at the next compile, which the
        ledger records as an edit (the cache restarts there).

        Returns:
            The definition replaced.

        Raises:
            UsageError: `tool` is not a `Tool`.
            UnknownToolError: No tool with its origin and name is registered.
        """
        if not isinstance(tool, Tool):
            raise UsageError(f"replace_tool takes a Tool, got {type(tool).__name__}")
        resident = self.view.exposure.get(tool.key) != "deferred"
        old = self._tools.registry.replace(tool)
        self._tools.refresh_view(prefix=resident)
        return old

    def _gate(self) -> GateContext:
        strategy = get_strategy(self._state.strategy)
        loaded = frozenset(self._state.loaded)
        needs = self._tools.config.require_search and strategy.native is not None
        reveal_loaded = False
        if self._state.target is not None:
            adapter = get_adapter(self._state.target)
            if needs:
                # the provider's own search results count as loading (a history scan, so
                # only when require_search asks for it), and so do our tool additions
                loaded |= adapter.revealed_tools(self._state.history)
                ledger = self._state.ledgers.get(self._state.target)
                if ledger is not None:
                    top = (ledger.pending or ledger.marks[-1]).tools
                    loaded |= top.added | frozenset(top.defined)
            reveal_loaded = adapter.model_rules(self._state.model or "").tool_changes
        return GateContext(
            blocked=self._state.blocked,
            loaded=loaded,
            before=tuple(self._before),
            after=tuple(self._after),
            direct_calls=strategy.direct_calls,
            all_loaded=strategy.all_loaded,
            reveal_by_reference=strategy.reveal_by_reference,
            search_direct=strategy.search_direct,
            reveal_loaded=reveal_loaded,
            meta_tools=strategy.meta_tools,
            skills=frozenset(self._state.loaded_skills),
            withdrawn=tuple(sorted(self._state.withdrawn.items())),
        )

    def _withdraw_tool(self, wire: str, reason: str | None) -> None:
        """Refuse the tool `wire` with `reason`, or admit it again (None).

        For a tool its source took back (`contextchef.mcp.McpHub`: removed by its server,
        or the server disconnected). It stays declared, so no byte sent changes;
        ``tool_search`` no longer finds it.
        """
        if reason is None:
            self._state.withdrawn.pop(wire, None)
        else:
            self._state.withdrawn[wire] = reason

    def check_tool_call(self, call: CallLike) -> CheckResult:
        """Run the gate on a model's call (any `CallLike` shape).

        In order: known? in the modes? reachable? blocked? schema-valid? before-hooks?
        (see `contextchef.dispatch._gate`). The decision is remembered for the call (by
        id, name and arguments): a later `execute` or `run_tools` of it under the same
        tools, modes, blocklist and hooks does not gate it again, so before-hooks run once.

        Raises:
            UsageError: Not a tool call, or an async before-hook inside a running event
                loop (use `acheck_tool_call`).
        """
        parsed = as_tool_call(call)
        check, view, ctx = self._decide(parsed)
        self._remember(parsed, check, view, ctx)
        return check

    async def acheck_tool_call(self, call: CallLike) -> CheckResult:
        """Async `check_tool_call` (awaits async before-hooks)."""
        parsed = as_tool_call(call)
        check, view, ctx = await self._adecide(parsed)
        self._remember(parsed, check, view, ctx)
        return check

    def execute(self, call: CallLike) -> Execution:
        """Gate and run a call (``tool_search``, ``load_toolkit``, ``load_skill``, a handler).

        Records schemas fetched through ``tool_search``, toolkit and skill loads; with
        ``offload_dir`` set, a result over ``max_inline_chars`` characters is stored whole
        and replaced by a head/tail stub. A call `check_tool_call` already decided (and
        nothing changed since) is not gated again: its before-hooks run once. To answer a
        whole turn, use `run_tools`.

        Raises:
            UsageError: Allowed call to a tool without a registered handler (`run_tools`
                answers those, or hands them to its ``fallback``).
        """
        parsed = as_tool_call(call)
        check, view, ctx = self._decide(parsed)
        if isinstance(check, Denied):
            return denied_execution(parsed, check)
        return self._record(run_allowed(view, parsed, check, self.registry.handler, ctx))

    async def aexecute(self, call: CallLike) -> Execution:
        """Async `execute`."""
        parsed = as_tool_call(call)
        check, view, ctx = await self._adecide(parsed)
        if isinstance(check, Denied):
            return denied_execution(parsed, check)
        done = await arun_allowed(view, parsed, check, self.registry.handler, ctx)
        return self._record(done)

    def _record(self, done: Execution) -> Execution:
        """Session bookkeeping after a call: loaded schemas, toolkits and skills, offload."""
        if done.skill is not None:  # the skill's tools the model may reach count as loaded
            self._state.loaded.update(done.loaded)
            self._state.loaded_skills = tuple(sorted({*self._state.loaded_skills, done.skill}))
            return done
        if done.toolkit is not None:
            # the model loaded it: only the schemas it was shown count as loaded
            self._tools.load_toolkit(done.toolkit)
            self._state.loaded.update(done.loaded)
            self._state.loaded_toolkits = self._tools.loaded_toolkits
            return done
        self._state.loaded.update(done.loaded)
        if done.result.name in (TOOL_SEARCH, OFFLOAD_READ_TOOL) or done.check.decision == "denied":
            return done  # search text is capped; stored output and denials are never stored
        return Execution(result=self.offload(done.result), check=done.check, loaded=done.loaded)

    def offload(self, result: ToolResult) -> ToolResult:
        """Offload one result you produced yourself (e.g. from an MCP server), if large.

        Over ``max_inline_chars``: with ``offload_dir`` it is stored whole and replaced by
        a head/tail stub; without one it is cut to head and tail (logged). When the
        offload directory cannot be written, it is cut the same way and a warning names the
        directory and the error: a result over the budget never enters the history whole
        (a million characters kept there would go with every later request).
        """
        if not isinstance(result, ToolResult):
            raise UsageError(f"offload takes a ToolResult, got {type(result).__name__}")
        if self._max_inline is None or len(result.content) <= self._max_inline:
            return result
        if self._store is None:  # nowhere to keep it: head and tail, said in the text
            logger.warning(
                "contextchef: a %d-character result of %s was cut to head and tail; set "
                "offload_dir to keep large results",
                len(result.content),
                result.name,
            )
            return truncate_result(result, max_inline_chars=self._max_inline)
        try:
            return offload_result(result, self._store, max_inline_chars=self._max_inline)
        except OSError as exc:
            logger.warning(
                "contextchef: offload to %s failed (%s); the %d-character result of %s was "
                "cut to head and tail instead",
                self._store.root,
                exc,
                len(result.content),
                result.name,
            )
            return truncate_result(result, max_inline_chars=self._max_inline)

    # -- library-owned tools: memory and new_context -------------------------------------

    @property
    def memory(self) -> MemoryStore | None:
        """The memory store given at construction, or None."""
        return self._memory

    @property
    def owned_tool_names(self) -> tuple[str, ...]:
        """The library-owned tools of this session, in the order they are appended."""
        return self._tools.library_names

    def owns_tool(self, name: str) -> bool:
        """Whether `name` is a library-owned tool here."""
        return isinstance(name, str) and name in self._tools.library_names

    def handle_tool(self, call: CallLike) -> str:
        """Run a call to a library-owned tool through the gate; returns the result text.

        Raises:
            UsageError: The tool is not library-owned in this session (see `owns_tool`).
        """
        parsed = as_tool_call(call)
        if not self.owns_tool(parsed.name):
            raise UsageError(
                f"{shown(parsed.name, 80)} is not a contextchef-owned tool in this session; owned "
                f"tools: {list(self.owned_tool_names)} (check with owns_tool before handle_tool)"
            )
        return self.execute(parsed).result.content
