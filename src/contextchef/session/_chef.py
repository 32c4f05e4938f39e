"""`ContextChef`: the session facade, a thin coordinator (session layer).

It owns three things and delegates the rest:

* `SessionState` — the session's data; its JSON form is the snapshot;
* `SessionTools` — registration and the frozen `SessionView`;
* `VolatileState` — the hooks behind the volatile tail (implicit context, events).

Compile is `contextchef.session._compile.compile_request` over those, with the target's
adapter (its `Profile` carries every provider rule) and a strategy from the
`contextchef.session._strategies` table. Every tool call, library-owned ones included,
passes the one gate of `contextchef.dispatch`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from contextchef._errors import UsageError, shown
from contextchef._json import is_unicode
from contextchef.deferred._groups import GroupLike, Namespace, Toolkit
from contextchef.deferred._meta import DeferredConfig
from contextchef.dispatch._types import AfterHook, BeforeHook
from contextchef.exposure._policy import Mode, as_patterns, named_modes
from contextchef.history._messages import Message, check_message
from contextchef.history._offload import OffloadStore
from contextchef.providers import ResponseNotice, get_adapter
from contextchef.session._accounting import CacheCostModel, PlanReport, plan_report
from contextchef.session._compiling import CompileMixin
from contextchef.session._dispatching import DispatchMixin
from contextchef.session._library import MemoryTools, library_tools
from contextchef.session._linting import LintMode, VolatileLint, watch_schemas
from contextchef.session._maintenance import MaintenanceMixin
from contextchef.session._memory import MemoryStore, OverflowHandoff, Summarizer
from contextchef.session._pruner import Pruner
from contextchef.session._request import CompiledRequest
from contextchef.session._skills import SkillsMixin
from contextchef.session._state import SessionState, checked_history
from contextchef.session._toolset import SessionTools, ToolLike
from contextchef.session._volatile import DEFAULT_ANCHOR, VolatileState
from contextchef.session._volatile_methods import VolatileStateMixin
from contextchef.tools._catalogs import Catalog
from contextchef.tools._lint import VolatileValue
from contextchef.tools._registry import Handler
from contextchef.tools._tool import Tool

__all__ = ["CompiledRequest", "ContextChef", "ToolLike"]


class ContextChef(DispatchMixin, MaintenanceMixin, VolatileStateMixin, CompileMixin, SkillsMixin):
    """An agent session: tools, system prompt, history; compiles payloads per turn.

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
        template_vars: Variables that templated descriptions may use (the declared
            whitelist is exactly these keys).
        template_fragments: Named text fragments for templates' ``fragment(name)``.
        offload_dir: Directory for large tool results (content-addressed files). When
            set, results over `max_inline_chars` are stored whole at write time, the
            model gets head and tail, and a ``read_offloaded`` tool is registered.
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
            `OverflowHandoff`; the next compile after ``new_context`` or
            `request_new_context` replaces the history with a summary.
        anchor: The line closing a user tail that carries system state (dynamic state
            or announcements); None or ``""``: no anchor line.
        cache_audit: List every edit of something already sent (each one restarts the
            prompt cache there) in `CompiledRequest.audit`, and log it.
        volatile_lint: What to do with a value in the system prompt or a tool that looks
            per-request (a date near today, a timestamp, a UUID, a long hex id, a
            ``Date:`` line; `contextchef.tools._lint`): ``"warn"`` logs it and lists it
            in `volatile_values`, ``"raise"`` refuses the prompt or the tools with
            `VolatileValueError`, ``"off"`` skips the check.
        unmatched_patterns: What `compile` does when a `defer` or `pin` pattern matches
            no registered tool (a typo such as ``github_*`` for ``github__*`` would
            otherwise change nothing, silently): ``"raise"`` a `UsageError` naming the
            pattern and the closest names, or ``"warn"`` (a `UserWarning`, once per
            pattern). Blocklist patterns are checked when set, always strictly.

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
        offload_dir: str | Path | None = None,
        max_inline_chars: int | None = 20_000,
        memory: MemoryStore | None = None,
        memory_tools: MemoryTools = "legacy",
        on_overflow: Summarizer | OverflowHandoff | None = None,
        anchor: str | None = DEFAULT_ANCHOR,
        cache_audit: bool = False,
        volatile_lint: LintMode = "warn",
        unmatched_patterns: Literal["raise", "warn"] = "raise",
    ) -> None:
        for option, flag in (
            ("default_defer", default_defer),
            ("qualify", qualify),
            ("cache_audit", cache_audit),
        ):
            if not isinstance(flag, bool):
                raise UsageError(f"{option} must be True or False, got {shown(flag, 80)}")
        if unmatched_patterns not in ("raise", "warn"):
            raise UsageError(
                f"unmatched_patterns must be 'raise' or 'warn', got {shown(unmatched_patterns)}"
            )
        self._unmatched = unmatched_patterns
        self._warned: set[str] = set()
        self._checked: tuple[object, ...] = ()  # the last (view, defer, pin) checked
        if anchor is not None and (not isinstance(anchor, str) or not is_unicode(anchor)):
            raise UsageError(f"anchor must be Unicode text or None, got {type(anchor).__name__}")
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
        self._notices: tuple[ResponseNotice, ...] = ()
        self._ingested: set[str] = set()
        self._before: list[BeforeHook] = []
        self._after: list[AfterHook] = []
        self._pruner = Pruner(self)
        self._memory = memory
        self._handoff = (
            on_overflow
            if on_overflow is None or isinstance(on_overflow, OverflowHandoff)
            else OverflowHandoff(summarize=on_overflow)
        )
        owned, handlers = library_tools(
            store=memory,
            mode=memory_tools,
            handoff=self._handoff,
            on_new_context=self.request_new_context,
        )
        self._tools.register_library(owned, handlers)
        self._store = OffloadStore(Path(offload_dir)) if offload_dir is not None else None
        self._max_inline = max_inline_chars
        if self._store is not None:
            self._tools.register_offload_reader(self._store)
        if mode is not None:
            self.set_mode(mode)

    # -- tools (see SessionTools) --------------------------------------------------------

    def register_tools(
        self,
        tools: Iterable[ToolLike],
        *,
        server: str | None = None,
        server_description: str | None = None,
        handlers: Mapping[str, Handler] | None = None,
    ) -> tuple[Tool, ...]:
        """Register tools atomically (all or nothing): see `SessionTools.register_tools`."""
        self._lint.text(f"server {server!r} description", server_description)
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

    def register_catalog(self, catalog: Catalog | str | Path) -> tuple[Tool, ...]:
        """Register every tool of a catalog (a `Catalog` or a catalog file path)."""
        return self._tools.register_catalog(catalog)

    def register_mcp_tools(
        self, result: Mapping[str, Any] | Sequence[Any], *, server: str, description: str = ""
    ) -> tuple[Tool, ...]:
        """Register an MCP server's ``tools/list`` result under `server`.

        Raises:
            UsageError: `server` is not a non-empty string or `description` not a string;
                the errors of `SessionTools.register_mcp_tools`.
        """
        if not (isinstance(server, str) and server and isinstance(description, str)) or not (
            is_unicode(server) and is_unicode(description)
        ):
            raise UsageError(
                "register_mcp_tools needs server= a non-empty string and description= a "
                f"string, both valid Unicode; got {shown(server, 80)} and {shown(description, 80)}"
            )
        return self._tools.register_mcp_tools(result, server=server, description=description)

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
        """Add a before-hook (a decorator): it may deny a call by returning a reason."""
        self._before.append(hook)
        return hook

    def after_tool_call(self, hook: AfterHook) -> AfterHook:
        """Add an after-hook (a decorator): returning a `ToolResult` replaces the result."""
        self._after.append(hook)
        return hook

    def wire_name(self, name: str, *, server: str | None = None) -> str:
        """The wire name of a registered tool, by own name (and server when grouped)."""
        return self._tools.wire_name(name, server=server)

    # -- conversation state --------------------------------------------------------------

    def set_system_prompt(self, text: str) -> None:
        """Set the system prompt (the first, cached segment of every request)."""
        if not isinstance(text, str) or not is_unicode(text):
            what = type(text).__name__ if not isinstance(text, str) else "a lone surrogate"
            raise UsageError(f"the system prompt must be valid Unicode text, got {what}")
        self._lint.system(text)
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
        self._state.history = checked_history(messages)

    def append(self, *messages: Message) -> None:
        """Append messages to the history (each checked as in `set_history`)."""
        for i, msg in enumerate(messages, start=len(self._state.history)):
            check_message(msg, i)
        self._state.history = self._state.history + tuple(messages)

    @property
    def history(self) -> tuple[Message, ...]:
        """The history, oldest first."""
        return self._state.history

    @property
    def loaded_tools(self) -> tuple[str, ...]:
        """Wire names of deferred tools whose schemas the model has fetched, sorted."""
        return tuple(sorted(self._state.loaded))

    # -- compile -------------------------------------------------------------------------

    def plan(self, target: str = "anthropic", *, cache: CacheCostModel | None = None) -> PlanReport:
        """What the tool catalog costs per turn for `target` (see `PlanReport`).

        Raises:
            UnknownTargetError: Unknown target.
        """
        registry = self._tools.registry
        return plan_report(
            self.view,
            get_adapter(target),
            self._tools.config,
            servers=registry.servers,
            cache=cache,
        )
