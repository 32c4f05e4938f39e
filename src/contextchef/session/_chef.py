"""`ContextChef`: the session facade (session layer). It holds its parts and delegates.

Each part is a plain class with one responsibility and the parts it needs passed in:

* `SessionState` — the session's data; its JSON form is the snapshot. One object for the
  session's life: a restore or a failed compile changes it in place (`SessionState.adopt`);
* `SessionTools` — registration and the frozen `SessionView`;
* `VolatileState` — the hooks behind the volatile tail (implicit context, events);
* `Dispatcher` — the gate, the one execution path, offload and hooks (`execute`,
  `run_tools`);
* `Skills` — skills' registration, host loads, compaction reminders;
* `Maintenance` — responses in, snapshots, compaction, the overflow handoff;
* `Compiler` — `compile` over the target's ledger (`contextchef.session._compile`).

Every tool call, library-owned ones included, passes the one gate of
`contextchef.dispatch`; the gate's decision is a value that `execute` and `run_tools`
accept as it is.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Literal

from contextchef._errors import UsageError, check_flag, check_instance, check_str, shown
from contextchef._locking import synchronized

if TYPE_CHECKING:  # the parts load with the first session (`__init__`), not at import
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
    from pathlib import Path

    from pydantic import BaseModel

    from contextchef._signing import SnapshotKeys
    from contextchef.deferred._groups import GroupLike, Namespace, Toolkit
    from contextchef.deferred._meta import DeferredConfig
    from contextchef.deferred._skills import Skill, SkillLike
    from contextchef.deferred._view import SessionView
    from contextchef.dispatch._calls import CallLike
    from contextchef.dispatch._types import AfterHook, BeforeHook, CheckResult, Execution, Fallback
    from contextchef.exposure._policy import Mode
    from contextchef.exposure._restore import PolicyDifference
    from contextchef.history._compaction import Cleared, Compacted
    from contextchef.history._context_policy import ContextPolicy
    from contextchef.history._messages import Message, ToolCall, ToolResult
    from contextchef.history._offload import OffloadStore
    from contextchef.providers import CacheReport, ResponseNotice
    from contextchef.providers._base import SchemaReport
    from contextchef.providers._budget import ContextUsage
    from contextchef.session._dispatching import CallOrDecision
    from contextchef.session._library import MemoryTools
    from contextchef.session._linting import LintMode
    from contextchef.session._memory import MemoryStore, OverflowHandoff, Summarizer
    from contextchef.session._pruner import Pruner
    from contextchef.session._request import CompiledRequest
    from contextchef.session._toolset import CatalogLike, ToolLike
    from contextchef.session._volatile import Announcement, Channel, EventHandler, EventName
    from contextchef.tools._lint import VolatileValue
    from contextchef.tools._mcp import McpRules
    from contextchef.tools._registry import Handler, Registry
    from contextchef.tools._tool import Tool

__all__ = ["DEFAULT_ANCHOR", "ContextChef"]

DEFAULT_ANCHOR = "Above is the current system state, not part of the user's message."
"""The line closing a user tail that carries system state (`ContextChef`'s ``anchor``)."""


@synchronized
class ContextChef:
    """An agent session: tools, system prompt, history; compiles payloads per turn.

    Thread-safe: every method runs whole under one re-entrant lock (`contextchef._locking`;
    docs/guides/stores.md says what that guarantees, tool functions included).

    Args:
        default_defer: Exposure for tools that declare no ``defer_loading`` and match no
            pattern (False: resident).
        defer: Patterns of tools to defer (``*`` wildcard, ``^``/``$`` anchors).
        pin: Patterns of tools to keep resident; beats ``defer``.
        qualify: Prefix grouped/MCP tools' wire names with their server (default True).
            With False, equal names from two origins raise `ToolNameConflictError`.
        deferred: Limits and policies for deferred loading (result counts, character
            caps, ``require_search``, ``always_meta_tools``).
        modes: Named modes: a `Mode`, or a list of patterns of the tools to keep. The
            built-in ``read_only`` mode keeps tools annotated read-only.
        mode: The mode to start in (None: every tool).
        template_vars: Variables templated descriptions may use (exactly these keys are
            declared); what they render is linted at registration (``volatile_lint``).
        template_fragments: Named text fragments for templates' ``fragment(name)``.
        offload_dir: Directory, or `OffloadStore` (its ``scope``: who may read), for
            large tool results: those over `max_inline_chars` are stored whole, the model
            gets head and tail and a ``read_offloaded`` tool (this session's entries only).
        max_inline_chars: Largest result text kept inline, in characters (None: no
            limit). Without ``offload_dir`` a larger result is cut to its head and tail
            with a line saying so (and a logged warning).
        memory: A memory store (`InMemoryStore`, `FileMemoryStore` or your own): adds
            the library-owned memory tools (with ``read_memories``) and, whenever the
            memories change, shows them to the model as a ``read_memories`` result
            appended after the user's message.
        memory_tools: ``"legacy"`` (``create_memory`` / ``modify_memory``) or
            ``"unified"`` (one ``context`` tool, plus ``new_context`` when `on_overflow`
            is set). The two sets never appear together.
        on_overflow: The overflow handoff: a summarizer (your model call) or an
            `OverflowHandoff`; the next compile after ``new_context`` or `request_new_context`
            replaces the history with a summary (a failure: a `summary_failed` notice).
        anchor: The line closing a user tail that carries system state (dynamic state
            or announcements); None or ``""``: no anchor line.
        cache_audit: List every edit of something already sent (each one restarts the
            prompt cache there) in `CompiledRequest.audit`, and log it.
        volatile_lint: What to do with a per-request-looking value (`contextchef.tools._lint`)
            in the prompt, a tool, group, skill or server description (all that reaches
            the cached prefix; `contextchef.deferred._prefix_lint`): ``"warn"`` logs it
            and lists it in `volatile_values`, ``"raise"`` refuses what holds it with
            `VolatileValueError`, ``"off"`` skips the check.
        unmatched_patterns: What `compile` does when a `defer` or `pin` pattern matches
            no registered tool (a typo such as ``github_*`` for ``github__*`` would
            otherwise change nothing, silently): ``"raise"`` a `UsageError` naming the
            pattern and the closest names, or ``"warn"`` (a `UserWarning`, once per
            pattern). Blocklist patterns are checked when set, always strictly.
        context_policy: A `ContextPolicy`: compile adds the provider's context management
            where the model has it, else applies `on_overflow` past the policy's compaction
            point (docs/guides/history.md). None: neither. With it (or `offload_dir`),
            what compaction and clearing remove is archived (in the offload store, else
            in memory) and the ``search_archive`` tool searches and reads it.

    Raises:
        UsageError: An option of the wrong type or value.
    """

    def __init__(
        self,
        *,
        default_defer: bool = False,
        defer: str | Sequence[str] = (),
        pin: str | Sequence[str] = (),
        qualify: bool = True,
        deferred: DeferredConfig | None = None,
        modes: Mapping[str, Mode | Sequence[str]] | None = None,
        mode: str | None = None,
        template_vars: Mapping[str, Any] | None = None,
        template_fragments: Mapping[str, str] | None = None,
        offload_dir: str | Path | OffloadStore | None = None,
        max_inline_chars: int | None = 20_000,
        memory: MemoryStore | None = None,
        memory_tools: MemoryTools = "legacy",
        on_overflow: Summarizer | OverflowHandoff | None = None,
        anchor: str | None = DEFAULT_ANCHOR,
        cache_audit: bool = False,
        volatile_lint: LintMode = "warn",
        unmatched_patterns: Literal["raise", "warn"] = "raise",
        context_policy: ContextPolicy | None = None,
    ) -> None:
        from contextchef.deferred._meta import DeferredConfig
        from contextchef.deferred._recall import reader_tools
        from contextchef.exposure._policy import as_patterns, named_modes
        from contextchef.history._context_policy import ContextPolicy
        from contextchef.history._offload import as_offload_store
        from contextchef.providers._compacted import compaction_archive
        from contextchef.session._compiling import Compiler
        from contextchef.session._dispatching import Dispatcher
        from contextchef.session._library import library_tools
        from contextchef.session._linting import VolatileLint, watch_schemas
        from contextchef.session._maintenance import Maintenance
        from contextchef.session._memory import OverflowHandoff
        from contextchef.session._pruner import Pruner
        from contextchef.session._skills import Skills
        from contextchef.session._state import SessionState
        from contextchef.session._toolset import SessionTools
        from contextchef.session._volatile import VolatileState

        self._lock = threading.RLock()  # every method holds it (`contextchef._locking`)
        check_flag("default_defer", default_defer)
        check_flag("qualify", qualify)
        check_flag("cache_audit", cache_audit)
        if unmatched_patterns not in ("raise", "warn"):
            raise UsageError(
                f"unmatched_patterns must be 'raise' or 'warn', got {shown(unmatched_patterns)}"
            )
        if anchor is not None:
            check_str("anchor", anchor)
        self._modes = named_modes(modes)
        self._state = SessionState(
            default_defer=default_defer,
            defer=as_patterns("defer", defer),
            pin=as_patterns("pin", pin),
            anchor=anchor or "",
        )
        self._tools = SessionTools(
            qualify=qualify,
            policy=self._state.policy(),
            config=deferred or DeferredConfig(),
            template_vars=template_vars,
            template_fragments=template_fragments,
        )
        self._volatile = VolatileState(cache_audit=cache_audit)
        self._lint = VolatileLint(volatile_lint)
        self._tools.lint = watch_schemas(self._lint.tools)
        self._tools.lint_prefix = self._lint.prefix
        store = as_offload_store(offload_dir)
        self._dispatcher = Dispatcher(
            state=self._state, tools=self._tools, offload_store=store, max_inline=max_inline_chars
        )
        self._skills = Skills(state=self._state, tools=self._tools, dispatcher=self._dispatcher)
        handoff = (
            on_overflow
            if on_overflow is None or isinstance(on_overflow, OverflowHandoff)
            else OverflowHandoff(summarize=on_overflow)
        )
        policy = check_instance("context_policy", context_policy, ContextPolicy, none=True)
        self._maintenance = Maintenance(
            state=self._state,
            tools=self._tools,
            volatile=self._volatile,
            skills=self._skills,
            modes=self._modes,
            handoff=handoff,
            archive=compaction_archive(store, lambda: self._state.history)
            if store is not None or policy is not None
            else None,
            never_clear=policy.never_clear if policy is not None else (),
        )
        self._compiler = Compiler(
            state=self._state,
            tools=self._tools,
            volatile=self._volatile,
            memory=memory,
            maintenance=self._maintenance,
            unmatched=unmatched_patterns,
            policy=policy,
        )
        self._pruner = Pruner(self)
        self._memory = memory
        owned, handlers = library_tools(
            store=memory,
            mode=memory_tools,
            handoff=handoff,
            on_new_context=self._maintenance.request_new_context,
        )
        readers, reading = reader_tools(store, self._maintenance.archive)
        self._tools.register_library([*owned, *readers], {**handlers, **reading})
        if mode is not None:
            self.set_mode(mode)

    # -- tools (SessionTools) ------------------------------------------------------------

    def register_tools(
        self,
        tools: Iterable[ToolLike],
        *,
        server: str | None = None,
        server_description: str | None = None,
        handlers: Mapping[str, Handler] | None = None,
    ) -> tuple[Tool, ...]:
        """Register tools atomically (all or nothing); returns them in registry order.

        Args:
            tools: `Tool` values, tool dicts in any supported shape (Anthropic, OpenAI Chat,
                Responses, MCP, Gemini), or Python functions (schema from the signature,
                description from the docstring; the function is the handler).
            server: Group/MCP server for dicts and functions (a `Tool` keeps its own).
            server_description: Shown in the deferred directory's group header, for
                `server`, or without it for the one server all the tools share.
            handlers: Python callables by tool name (own name), run by `execute`.

        Raises:
            ToolNameConflictError: A name clashes with a registered tool, a meta-tool
                name, or another tool of the batch; nothing is registered.
            InvalidToolError, InvalidSchemaError, CatalogFormatError: A bad definition.
            UsageError: `server_description` for no one server (see above); bad `handlers`.
            VolatileValueError: As ``volatile_lint="raise"`` says (rendered templates too).
        """
        return self._tools.register_tools(
            tools, server=server, server_description=server_description, handlers=handlers
        )

    def register_namespaces(
        self, namespaces: Iterable[GroupLike], *, handlers: Mapping[str, Handler] | None = None
    ) -> tuple[Namespace, ...]:
        """Register namespaces, each one stable tool: see `SessionTools.register_namespaces`."""
        return self._tools.register_namespaces(namespaces, handlers=handlers)

    def register_toolkits(
        self, toolkits: Iterable[GroupLike], *, handlers: Mapping[str, Handler] | None = None
    ) -> tuple[Toolkit, ...]:
        """Register lazily loaded toolkits: see `SessionTools.register_toolkits`."""
        return self._tools.register_toolkits(toolkits, handlers=handlers)

    def register_catalog(self, catalog: CatalogLike | Sequence[CatalogLike]) -> tuple[Tool, ...]:
        """Register a catalog or a list of them, one batch: see `SessionTools.register_catalog`."""
        return self._tools.register_catalog(catalog)

    def register_mcp_tools(
        self,
        result: Mapping[str, Any] | Sequence[Any],
        *,
        server: str,
        description: str = "",
        rules: McpRules | None = None,
    ) -> tuple[Tool, ...]:
        """Register an MCP server's ``tools/list`` result: see `SessionTools.register_mcp_tools`."""
        return self._tools.register_mcp_tools(result, server, description, rules)

    def register_runtime_tool(self, tool: ToolLike, *, handler: Handler | None = None) -> Tool:
        """Register a tool made at run time: see `SessionTools.register_runtime_tool`."""
        return self._tools.register_runtime_tool(tool, handler=handler)

    @property
    def tools(self) -> tuple[Tool, ...]:
        """Every registered tool, in registry order."""
        return self._tools.all()

    @property
    def namespaces(self) -> tuple[Namespace, ...]:
        """The registered namespaces, sorted by name."""
        return self._tools.namespaces

    @property
    def toolkits(self) -> tuple[Toolkit, ...]:
        """The registered toolkits, sorted by name."""
        return self._tools.toolkits

    @property
    def loaded_toolkits(self) -> tuple[str, ...]:
        """Names of the toolkits loaded in this session, sorted."""
        return self._tools.loaded_toolkits

    def take_tool_additions(self) -> tuple[tuple[str, Tool], ...]:
        """Runtime tools added since the last call, as (wire name, tool); clears the list."""
        return self._tools.take_tool_additions()

    @property
    def pruner(self) -> Pruner:
        """Pruning, blocklist, namespace routing and toolkit loading (see `Pruner`)."""
        return self._pruner

    @property
    def view(self) -> SessionView:
        """The frozen tool view, rebuilt only after registration or exposure changes."""
        return self._tools.view()

    @property
    def registry(self) -> Registry:
        """The tool registry (read it; register through this facade)."""
        return self._tools.registry

    def wire_name(self, name: str, *, server: str | None = None) -> str:
        """The wire name of a registered tool, by own name (and server when grouped)."""
        return self._tools.wire_name(name, server=server)

    def load_toolkit(self, name: str) -> tuple[Tool, ...]:
        """Load a toolkit (idempotent): see `SessionTools.load_toolkit`."""
        added = self._tools.load_toolkit(name)
        self._state.loaded.update(self._tools.registry.wire_name_for(t) for t in added)
        self._state.loaded_toolkits = self._tools.loaded_toolkits
        return added

    def reveal_tools(self, *names: str) -> tuple[str, ...]:
        """Make deferred tools callable, from the host (the model did not search for them).

        Each name (a wire name, or a tool's own name when unique) counts as loaded from
        now on: the gate admits it under ``require_search`` (``client``); on a model that
        takes tool changes the next native-strategy request adds it with a
        ``tool_addition`` block (by reference), kept in the history, and the gate admits it
        from then on. Elsewhere it waits for the model's search (tell it: `announce`).

        Returns:
            The wire names revealed, sorted.

        Raises:
            UnknownToolError: A name no registered tool has.
            UsageError: A name that is not a string, a tool the mode hides, or a tool of
                a skill not loaded (load the skill: `load_skill`).
        """
        return self._dispatcher.reveal(names)

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
        from contextchef.tools._tool import Tool

        if not isinstance(tool, Tool):
            raise UsageError(f"replace_tool takes a Tool, got {type(tool).__name__}")
        resident = self.view.exposure.get(tool.key) != "deferred"
        old = self._tools.registry.replace(tool)
        self._tools.refresh_view(prefix=resident)
        return old

    @property
    def schema_reports(self) -> tuple[SchemaReport, ...]:
        """What each target's narrower schema dialect changes in the registered tools.

        One `SchemaReport` per tool and target whose schema that target's renderer
        rewrites (today Gemini's subset: keywords rewritten or dropped, local ``$ref``
        inlined), in registry order; computed when each tool was registered (and logged
        then at INFO), so reading it costs nothing. Tools sent unchanged are left out.
        """
        return self._maintenance.schema_reports()

    # -- modes, blocklist, hooks ---------------------------------------------------------

    def set_mode(self, name: str | None) -> None:
        """Switch to a named mode (None: no mode). Changes the tools array by design.

        An applied pruning whitelist stays and keeps narrowing the new mode
        (`Pruner.clear` drops it).

        Raises:
            UsageError: Unknown mode name.
        """
        if name is not None and (not isinstance(name, str) or name not in self._modes):
            raise UsageError(
                f"unknown mode {shown(name, 80)}; defined modes: {sorted(self._modes)}"
            )
        self._state.mode = self._modes[name] if name is not None else None
        self._tools.set_policy(self._state.policy())

    def set_whitelist(self, mode: Mode | None) -> None:
        """Apply a structural whitelist that narrows the session's mode (None drops it)."""
        from contextchef.exposure._policy import Mode

        if mode is not None and not isinstance(mode, Mode):
            raise UsageError(f"a whitelist is a Mode, got {type(mode).__name__}")
        self._state.whitelist = mode
        self._tools.set_policy(self._state.policy())

    @property
    def base_mode(self) -> Mode | None:
        """The mode chosen with `set_mode` (a pruning whitelist may narrow it)."""
        return self._state.mode

    @property
    def mode(self) -> str | None:
        """The active mode's name (``pruned`` while a prune result is applied)."""
        active = self._state.whitelist or self._state.mode
        return active.name if active else None

    def set_blocked_tools(self, patterns: str | Sequence[str]) -> None:
        """Replace the blocklist (``[]`` clears it); the payload does not change.

        Blocked calls are denied with ``Tool "<name>" is currently blocked.``
        """
        self._state.blocked = self._tools.checked_blocklist(patterns)

    @property
    def blocked_tools(self) -> tuple[str, ...]:
        """The current blocklist patterns."""
        return self._state.blocked

    def before_tool_call(self, hook: BeforeHook) -> BeforeHook:
        """Add a before-hook (a decorator) that may deny a call (UsageError: not callable)."""
        from contextchef.dispatch._hooks import checked_hook

        self._dispatcher.before.append(checked_hook(hook, "before_tool_call"))
        return hook

    def after_tool_call(self, hook: AfterHook) -> AfterHook:
        """Add an after-hook (a decorator) that may replace a result (UsageError: not callable)."""
        from contextchef.dispatch._hooks import checked_hook

        self._dispatcher.after.append(checked_hook(hook, "after_tool_call"))
        return hook

    # -- the gate and the one execution path (Dispatcher) ---------------------------------

    def check_tool_call(self, call: CallLike) -> CheckResult:
        """Run the gate on a model's call (any `CallLike` shape); returns its decision.

        In order: known? in the modes? reachable? blocked? schema-valid? before-hooks?
        (see `contextchef.dispatch._gate`). The decision (`Allowed` or `Denied`) is a
        value carrying the call: pass it to `execute` or `run_tools` (instead of the
        call) to run it without gating it again, so before-hooks run once. While the
        tools, modes, blocklist and hooks are unchanged it is used as it is; otherwise
        the call is gated again. Passing the call itself always gates it.

        Raises:
            UsageError: Not a tool call, or an async before-hook inside a running event
                loop (use `acheck_tool_call`).
        """
        from contextchef.dispatch._calls import as_tool_call

        return self._dispatcher.decide(as_tool_call(call))[0]

    async def acheck_tool_call(self, call: CallLike) -> CheckResult:
        """Async `check_tool_call` (awaits async before-hooks)."""
        from contextchef.dispatch._calls import as_tool_call

        return (await self._dispatcher.adecide(as_tool_call(call)))[0]

    def execute(self, call: CallOrDecision) -> Execution:
        """Gate and run a call (``tool_search``, ``load_toolkit``, ``load_skill``, a handler).

        Records schemas fetched through ``tool_search``, toolkit and skill loads; with
        ``offload_dir`` set, a result over ``max_inline_chars`` characters is stored whole
        and replaced by a head/tail stub. Given the decision `check_tool_call` returned
        (and nothing changed since), the call is not gated again: its before-hooks run
        once. To answer a whole turn, use `run_tools`.

        Args:
            call: A call in any `CallLike` shape, or a decision of `check_tool_call`.

        Raises:
            UsageError: Allowed call to a tool without a registered handler (`run_tools`
                answers those, or hands them to its ``fallback``), a decision that
                carries no call, or a call the history holds the result of (never run twice).
        """
        return self._dispatcher.execute(call)

    async def aexecute(self, call: CallOrDecision) -> Execution:
        """Async `execute`."""
        return await self._dispatcher.aexecute(call)

    def run_tools(
        self,
        calls: Iterable[CallOrDecision],
        *,
        fallback: Fallback | None = None,
        append: bool = True,
    ) -> tuple[ToolResult, ...]:
        """Answer every call of a model turn, in order, and append the results.

        Each call passes the gate once (before-hooks once; a decision `check_tool_call`
        returned is taken as it is), then runs: meta-tools
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
            calls: The calls `ingest` returned (or any `CallLike` values, or the
                decisions `check_tool_call` returned), in order.
            fallback: Runs allowed calls of tools that have no handler (see `Fallback`).
            append: Append the results to the history as one tool-results message
                (False: only return them).

        Returns:
            One `ToolResult` per call, in call order.

        Raises:
            UsageError: `calls` is not a list of calls, two calls share an id, one's result
                is in the history (a call runs once), or an event loop is running while the
                session has async hooks or handlers (use `arun_tools`); nothing has run
                then. Also, as `execute` does, when a hook or handler that is not declared
                ``async`` returns an awaitable inside a running event loop.
        """
        return self._answered(self._dispatcher.run_tools(calls, fallback), append)

    async def arun_tools(
        self,
        calls: Iterable[CallOrDecision],
        *,
        fallback: Fallback | None = None,
        append: bool = True,
    ) -> tuple[ToolResult, ...]:
        """Async `run_tools`: the handlers of one turn run concurrently.

        The gate runs on each call in call order (async hooks awaited; a decision
        `check_tool_call` returned is taken as it is), and meta-tools
        and contextchef's own tools (memory, ``new_context``, ``read_offloaded``) are
        answered then, on the loop's thread, so a later call of the same turn sees what an
        earlier one loaded or wrote. The handlers (and `fallback`) then run together:
        coroutine handlers on the running loop, sync ones in worker threads
        (`asyncio.to_thread`). After-hooks run in call order once every handler is done;
        results come back in call order whatever order the handlers finished in.
        Cancelling the task cancels the handlers still running (CancelledError and other
        BaseExceptions are not turned into results).

        Args and Returns as `run_tools`. Raises: UsageError: `calls` is not a list of
        calls, or two calls share an id.
        """
        return self._answered(await self._dispatcher.arun_tools(calls, fallback), append)

    def _answered(self, results: tuple[ToolResult, ...], append: bool) -> tuple[ToolResult, ...]:
        if append and results:
            from contextchef.history._messages import tool_results

            self.append(tool_results(results))
        return results

    def offload(self, result: ToolResult) -> ToolResult:
        """Offload one result you produced yourself (e.g. from an MCP server), if large.

        Over ``max_inline_chars``: with ``offload_dir`` it is stored whole and replaced by
        a head/tail stub; without one it is cut to head and tail (logged). When the
        offload directory cannot be written, it is cut the same way and a warning names the
        directory and the error: a result over the budget never enters the history whole
        (a million characters kept there would go with every later request).
        """
        return self._dispatcher.offload(result)

    def _withdraw_tool(self, wire: str, reason: str | None) -> None:
        """Refuse the tool `wire` with `reason`, or admit it again (None).

        For a tool its source took back (`contextchef.mcp.McpHub`: removed by its server,
        or the server disconnected). It stays declared, so no byte sent changes;
        ``tool_search`` no longer finds it.
        """
        self._dispatcher.withdraw(wire, reason)

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
        from contextchef.dispatch._calls import as_tool_call

        parsed = as_tool_call(call)
        if not self.owns_tool(parsed.name):
            raise UsageError(
                f"{shown(parsed.name, 80)} is not a contextchef-owned tool in this session; owned "
                f"tools: {list(self.owned_tool_names)} (check with owns_tool before handle_tool)"
            )
        return self.execute(parsed).result.content

    # -- skills (Skills) -------------------------------------------------------------------

    def register_skills(self, skills: Iterable[SkillLike]) -> tuple[Skill, ...]:
        """Register skills: named instructions that bring tools (all or nothing).

        A skill is a `Skill` or ``{"name", "description", "instructions", "tools"}``;
        ``tools`` names tools registered in the session (wire names, or own names when
        unique), resolved to wire names now. Those tools become reachable only through
        their skill: they leave the deferred-name directory and ``tool_search`` results,
        and the gate refuses them (code ``skill_not_loaded``), until the skill is loaded.
        The first skills add the ``load_skill`` tool (resident, like ``load_toolkit``):
        its description lists the skills (``name: description``, sorted, within
        ``DeferredConfig.skill_directory_chars``) and its schema's ``name`` enum holds
        them all. Register skills before the first compile: ``load_skill`` changes with
        them, which edits the ``tools`` already sent.

        Returns:
            The registered skills (tools as wire names), sorted by name.

        Raises:
            UsageError, ToolNameConflictError, UnknownToolError: See `resolve_skills`;
                nothing is registered.
        """
        return self._skills.register(skills)

    @property
    def skills(self) -> tuple[Skill, ...]:
        """The registered skills (their tools as wire names), sorted by name."""
        return self._tools.skills

    @property
    def loaded_skills(self) -> tuple[str, ...]:
        """Names of the skills loaded in this session, sorted."""
        return self._state.loaded_skills

    def load_skill(self, name: str) -> ToolResult:
        """Load a skill for the model, as if it had called ``load_skill`` itself.

        Appends one exchange to the history: an assistant message holding a
        ``load_skill`` call (id ``contextchef_skill_<name>_<n>``) and a user message
        holding its result, so the model sees the instructions once; the skill and its
        tools count as loaded (see `execute`). The call passes the gate (blocklist,
        hooks). The text says how to reach the tools under the strategy of the last
        compile, so on a provider-native strategy load after the first compile. A skill
        already loaded appends nothing and returns the "already loaded" result.

        Returns:
            The ``load_skill`` result (its text is the instructions, then the tools).

        Raises:
            UsageError: Unknown skill; the history ends with the model's turn or with
                unanswered calls; or the gate refused the call (blocked, a hook).
        """
        return self._skills.load(name)

    # -- conversation state --------------------------------------------------------------

    def set_system_prompt(self, text: str) -> None:
        """Set the system prompt (the first, cached segment of every request)."""
        self._lint.system(check_str("the system prompt", text))
        self._state.system = text

    @property
    def volatile_values(self) -> tuple[VolatileValue, ...]:
        """Per-request-looking values in the system prompt and the tools (see ``volatile_lint``)."""
        return self._lint.values

    def set_history(self, messages: Iterable[Message | Mapping[str, Any]]) -> None:
        """Replace the history (copied; the caller's list is never modified).

        Args:
            messages: `Message` values or their `Message.to_dict` form.

        Raises:
            CorruptHistoryError: An entry is malformed (its index is named).
        """
        from contextchef.history._forms import checked_history

        self._state.history = checked_history(messages)

    def append(self, *messages: Message) -> None:
        """Append messages to the history (each checked as in `set_history`)."""
        from contextchef.history._messages import check_message

        for i, msg in enumerate(messages, start=len(self._state.history)):
            check_message(msg, i)
        self._state.history = self._state.history + tuple(messages)

    @property
    def history(self) -> tuple[Message, ...]:
        """The history, oldest first (messages a restore made lazily are built first)."""
        from contextchef.history._lazy import built_all  # loaded with the session's parts

        return built_all(self._state.history)

    def clear_history(self) -> None:
        """Start a fresh conversation: empty the history.

        Announcements, dynamic state, tools, modes and the blocklist stay: they describe
        the current session, which a fresh conversation still needs.
        """
        self._state.history = ()

    @property
    def loaded_tools(self) -> tuple[str, ...]:
        """Wire names of deferred tools whose schemas the model has fetched, sorted."""
        return tuple(sorted(self._state.loaded))

    # -- volatile state (announcements, dynamic state, implicit context, events) ----------

    def announce(self, id: str, content: str, channel: Channel = "auto") -> Announcement:
        """State a capability change until it is retracted (upsert by `id`).

        Re-announcing an id replaces its content and channel and keeps its original
        position. Every standing announcement of a channel renders into one
        ``<announcements>`` block, in insertion order, stated again at the end of the
        next request whenever the set changed (a retraction included); nothing is
        written into the history.

        Args:
            id: The announcement's key.
            content: The statement (e.g. ``"Tools newly available: read_file, grep"``).
            channel: ``user_tail``, ``system`` or ``auto`` (``system`` on Anthropic,
                ``user_tail`` elsewhere).

        Returns:
            The stored announcement.

        Raises:
            UsageError: An empty id, non-string content, or an unknown channel.
        """
        from contextchef.session._volatile import new_announcement

        item = new_announcement(id, content, channel)
        self._state.announcements[id] = item  # an existing key keeps its position
        return item

    def retract_announcement(self, id: str) -> bool:
        """Remove an announcement; True if one was standing under `id`."""
        return self._state.announcements.pop(id, None) is not None

    def get_announcements(self) -> tuple[Announcement, ...]:
        """The standing announcements, in insertion order."""
        return tuple(self._state.announcements.values())

    def set_dynamic_state(self, state: BaseModel | None) -> None:
        """Set (None: clear) the dynamic state, rendered as ``<dynamic_state>`` JSON.

        The model is dumped at every compile (``model_dump(mode="json")``, keys sorted);
        when the dump differs from what the target was last told, the next request
        states it again at its end (clearing it states ``null``).

        Raises:
            UsageError: `state` is not a pydantic model.
        """
        from contextchef.session._volatile import check_dynamic_state

        check_dynamic_state(state)
        self._state.dynamic_state = state

    @property
    def dynamic_state(self) -> BaseModel | Mapping[str, Any] | None:
        """The dynamic state (a mapping after `restore`), or None."""
        return self._state.dynamic_state

    def set_implicit_context(self, hook: Callable[[], str | None] | None) -> None:
        """Set (None: remove) the hook whose text renders as ``<implicit_context>``.

        It is called once per compile; its text is stated at the end of the request
        when it differs from what the target was last told (``None`` or blank after
        text states that there is none). Implicit context alone does not add the
        anchor line.
        """
        self._volatile.set_implicit(hook)

    def set_system_channel_breakpoint(self, enabled: bool) -> None:
        """Kept for compatibility; it changes nothing now.

        Every Anthropic request marks its last block as a ``cache_control`` breakpoint
        (the system entry when it is last), and an update, once sent, never changes
        again, so no separate breakpoint for the system channel is needed. Nothing is
        recorded.
        """
        del enabled

    def on(self, event: EventName, handler: EventHandler) -> EventHandler:
        """Call `handler` with a `CompileEvent` on a session event (see `EventName`).

        ``compile:start`` runs before anything is rendered (an announcement made there
        lands in this compile); ``compile:done`` after (one made there lands in the next);
        per ingested response, ``response:notice`` per notice, ``response:cache`` once.

        Returns:
            `handler` (so ``on`` can be used as a decorator factory's body).

        Raises:
            UsageError: Unknown event or a handler that is not callable.
        """
        return self._volatile.subscribe(event, handler)

    def off(self, event: EventName, handler: EventHandler) -> bool:
        """Remove a handler; True if it was registered."""
        return self._volatile.unsubscribe(event, handler)

    # -- compile (Compiler) --------------------------------------------------------------

    def compile(
        self,
        target: str = "anthropic",
        *,
        model: str = "model",
        max_tokens: int | None = None,
        strategy: str = "client",
        prefill: str | None = None,
        extra: Mapping[str, Any] | None = None,
        betas: Sequence[str] = (),
        diagnostics: bool = False,
        turn_gap: float | None = None,
        missing_thinking: Literal["drop", "raise"] = "drop",
    ) -> CompiledRequest:
        """Compile the session into a request payload for `target`, append-only.

        The target's ledger replays what earlier compiles sent, unchanged, and appends
        the new turn; volatile state that changed is stated at the end (see
        `contextchef.session._ledger` and `contextchef.session._volatile`). Compile as
        you send: once per model call, after appending the tool results.

        Args:
            target: One of `contextchef.TARGETS`.
            model: Model name written into the payload; it also selects the model's
                rules (`ModelRules`: prefix check, system messages, prefill).
            max_tokens: Output cap in tokens; None sends the provider's default, except
                where the API requires one (`Profile.default_max_tokens`: Anthropic 4,096).
            strategy: ``auto`` (the provider's own deferral where the model has it,
                else ``client``: `contextchef.session._strategies.resolve`), ``client``
                (direct tools, namespaces, loaders, then ``tool_search`` and
                ``defer_execute``), ``flat`` (every tool resident; the no-disclosure
                baseline), ``anthropic-native`` / ``anthropic-native-regex`` (deferred
                tools with ``defer_loading: true`` and Anthropic's server search),
                ``anthropic-native-client`` (our ``tool_search`` answering with
                ``tool_reference`` blocks), ``anthropic-inline`` (found tools revealed
                by ``tool_addition``), ``openai-native`` (Responses' hosted search) or
                ``gemini-interactions-native`` (unverified). On models with tool changes
                the native strategies keep the ``tools`` first sent (once a request
                was answered: before that, nothing is bound and the next compile sends
                the current view's) and state reveals and withdrawals as
                ``tool_addition`` / ``tool_removal``. The gate follows
                the last compile: after ``flat`` or a native strategy, deferred tools may
                be called by name (``require_search`` still applies: the provider's
                search results and our additions count as loading).
                `CompiledRequest.strategy` says which one was used.
            prefill: Start of the assistant's answer, sent as a trailing assistant turn;
                the history must end with a user turn, the text must not end with
                whitespace, and the model must accept prefill.
            extra: Request fields passed through unchanged (``thinking``, ``diagnostics``,
                ``context_management``...); fields compile writes, and names the target's
                SDK call does not take (docs/guides/payloads.md, "Pass-through"), are refused.
            betas: ``anthropic-beta`` values to send (`CompiledRequest.headers`); those
                the `extra` fields need are added.
            diagnostics: Ask why the prompt cache missed, against the last response
                ingested for this target: Anthropic ``diagnostics.previous_message_id``,
                Responses ``prompt_cache_options.comparison_response_id`` (gpt-5.6+).
            turn_gap: Expected seconds between requests; OpenAI gpt-5.6+ (explicit
                breakpoints; docs/guides/payloads.md) asks for the ``12h`` TTL past 30 minutes.
            missing_thinking: Anthropic, thinking enabled, the final tool turn without its
                thinking block (a 400): ``drop`` sends it without ``thinking`` (logged,
                `CompiledRequest.dropped`), ``raise`` raises `MissingThinkingError`.

        ``compile:start`` handlers run first, ``compile:done`` handlers get the result.

        Returns:
            A `CompiledRequest`: ``client.messages.create(**req.payload,
            extra_headers=req.headers)``.

        Raises:
            UnknownTargetError: Unknown target.
            UsageError: Unknown strategy or one the target or model cannot serve (a
                native one past the target's limit of deferred tools), bad options, a prefill
                (or a history ending with the model's turn) the model rejects, an empty
                conversation, a ``defer`` / ``pin`` pattern that matches no tool (unless
                the session was made with ``unmatched_patterns="warn"``).
            CorruptHistoryError: A message's recorded provider data cannot be rendered.
        """
        return self._compiler.compile(
            target,
            model=model,
            max_tokens=max_tokens,
            strategy=strategy,
            prefill=prefill,
            extra=extra,
            betas=betas,
            diagnostics=diagnostics,
            turn_gap=turn_gap,
            missing_thinking=missing_thinking,
        )

    # -- responses in, snapshots, history maintenance (Maintenance) ----------------------

    def ingest(self, response: object) -> tuple[ToolCall, ...]:
        """Append the model's turn of a provider response to the history; return its calls.

        Args:
            response: The response object of an official SDK (Anthropic ``Message``,
                OpenAI ``ChatCompletion`` or Responses ``Response``, google-genai
                ``GenerateContentResponse``) or its JSON dict as the API sent it (the HTTP
                body, or the SDK object's ``to_dict()``; ``model_dump()`` adds fields the
                API never sent, ``None`` defaults and Python names such as ``async_``,
                which would be replayed). Every block is kept as returned (thinking and
                signatures, encrypted reasoning, item ids, server tool blocks; not empty
                text); see `contextchef.providers.parse_response`.

        What the response reports about the request (dropped thinking, cache-miss reasons)
        and a turn that did not end normally (kind ``incomplete``: cut off, refused,
        filtered; the turn is still appended) is logged, kept in `notices` and sent to
        ``response:notice`` handlers (`on`); its usage becomes a `CacheReport` (in
        `cache_reports`, to ``response:cache``; a miss no edit explains is logged).
        User messages (text, media) appended after the compile this answers (a line
        typed meanwhile) stay after the turn, which goes right after what its request
        sent (also after `clear_tool_results`; not after a `compact` or `set_history`).

        Returns:
            The tool calls of the turn, in order, for `execute` / `check_tool_call`; their
            ids are unique in the session (Gemini calls sent without an id get one here,
            never sent back to Gemini).

        Raises:
            CorruptHistoryError: Not a supported response, a malformed one, or one that
                failed (Responses ``status: "failed"`` naming its error code and message,
                an error body); the history is unchanged.
            UsageError: This response (same id, same turn) was ingested already.
        """
        return self._maintenance.ingest(response)

    def context_usage(self, target: str = "anthropic", *, model: str = "model") -> ContextUsage:
        """How full the next request to `target` is, in tokens, against the policy's budget.

        ``used``: the provider's input tokens for the last answered request to `target`
        plus our estimate of the messages added since, else our estimate of the whole
        request; ``budget``: the `ContextPolicy`'s (the default one without a policy).

        Raises:
            UnknownTargetError: Unknown target. UsageError: `model` is not a string.
        """
        return self._compiler.usage(target, model)

    @property
    def notices(self) -> tuple[ResponseNotice, ...]:
        """What responses reported about their requests (and local compactions), oldest first."""
        return self._maintenance.notices

    @property
    def cache_reports(self) -> tuple[CacheReport, ...]:
        """One `CacheReport` per ingested response, oldest first (tokens read, written, missed)."""
        return self._maintenance.cache_reports

    def snapshot(
        self, *, keys: SnapshotKeys | None = None, session_id: str | None = None
    ) -> dict[str, Any]:
        """A versioned, JSON-serializable dict of the session's data (`SessionState`).

        Tools, handlers and hooks are code and are not included (see
        `contextchef.session._snapshot`). With `keys` it is signed with ``keys.current``
        (HMAC-SHA256, bound to `session_id`, a non-empty str, if given: restore must name
        it).

        Raises:
            UsageError: Bad `keys` or `session_id`, or a `session_id` without keys.
        """
        return self._maintenance.snapshot(keys, session_id)

    def restore(
        self,
        snapshot: Mapping[str, Any] | str | bytes,
        *,
        keys: SnapshotKeys | None = None,
        allow_unsigned: bool = False,
        session_id: str | None = None,
        narrow: bool = False,
    ) -> tuple[PolicyDifference, ...]:
        """Restore a `snapshot` or its JSON text (same tools registered first); compiles match.

        Text (as stored) is read here and kept: the history messages the snapshot vouches
        for build their parts when first read. A signature is always checked against
        `keys`, and `session_id` must be the one it was signed for (None: signed without
        one); ``allow_unsigned=True`` admits only a snapshot with no signature, whose
        deferred loads ``require_search`` governs must show a search in its history.

        The policy (blocklist, modes, ``defer`` / ``pin``, strategy) stays this session's;
        ``narrow=True`` adds the snapshot's blocklist and takes its mode and whitelist
        where this session has none (`contextchef.exposure._restore`). Loads the policy
        closes are dropped. The snapshot's skills (linted as by `register_skills`) and
        runtime tools are registered (attach handlers with `register_runtime_tool` first).

        Returns:
            Where the snapshot's policy, loads or system prompt differed (also logged).

        Raises:
            SnapshotSignatureError: No keys (for a signature, or unsigned input not
                allowed), no signature, an unknown key id, altered content, another
                session id. SnapshotMismatchError: other tools, toolkits, skills or an
                unsupported version, a ledger not in its target's wire form; UsageError /
                CorruptHistoryError: text not JSON, a malformed field, a non-bool flag;
                VolatileValueError: as `register_skills` says. Nothing is changed.
        """
        trust: dict[str, Any] = {"keys": keys, "allow_unsigned": allow_unsigned}
        return self._maintenance.restore(snapshot, narrow=narrow, session_id=session_id, **trust)

    def _restore_stored(self, stored: Any, keys: Any, session_id: Any) -> Any:
        """(`restore` of a store's `StoredSession`, checked unless it says it was; history)."""
        trust = {"keys": keys, "allow_unsigned": keys is None, "session_id": session_id}
        notes = self._maintenance.restore(
            stored.snapshot, owned=True, signed=stored.verified, **trust
        )
        return notes, self._state.history

    def _snapshot_over(self, base: Any, keys: Any, session_id: Any) -> Any:
        """(`snapshot` sharing `base`'s unchanged parts, `SessionState.to_dict`; its history)."""
        return self._maintenance.snapshot(keys, session_id, base), self._state.history

    def compact(self, summarize: Callable[[str], str], *, keep_recent_turns: int = 2) -> Compacted:
        """Replace old turns with a summary, cutting only at a safe point.

        `summarize` is your model call (the library never calls one). Deferred tools
        loaded in the summarized part are named in the summary and leave `loaded_tools`;
        loaded skills whose load was summarized stay loaded, and the summary restates
        their instructions and tools; one long task keeps model steps (`plan_compaction`).

        With an archive (``context_policy`` or ``offload_dir``) the summarized messages
        are archived and the summary lists what was dropped: the handle, tools called,
        files touched, the user's words verbatim (docs/guides/history.md).

        Returns:
            The compaction result (``messages`` is the new history).
        """
        return self._maintenance.compact(summarize, keep_recent_turns=keep_recent_turns)

    def clear_tool_results(
        self,
        *,
        keep_recent: int,
        exclude_tools: Collection[str] = (),
        clear_inputs: bool = False,
        clear_at_least: int = 0,
    ) -> Cleared:
        """Replace old tool results with a placeholder, keeping ids and pairing.

        See `contextchef.history._compaction.clear_tool_results`; the history is replaced.
        With an archive, the cleared results are archived first and each placeholder names
        its handle and byte offset (``search_archive`` reads it back).
        """
        return self._maintenance.clear_tool_results(
            keep_recent=keep_recent,
            exclude_tools=exclude_tools,
            clear_inputs=clear_inputs,
            clear_at_least=clear_at_least,
        )

    def request_new_context(self) -> None:
        """Make the next compile apply the overflow handoff whatever the budget says.

        Raises:
            UsageError: No overflow handoff is configured (pass ``on_overflow=``).
        """
        self._maintenance.request_new_context()

    @property
    def new_context_pending(self) -> bool:
        """A handoff is due at the next compile (requested, not yet applied)."""
        return self._state.new_context_pending
