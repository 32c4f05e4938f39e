"""`ContextChef`: the session facade (state, registration, compile, dispatch, plan).

Compile is a pipeline of named steps, each pure over session state:
take the frozen `SessionView` (rebuilt only when tools or exposure change) -> choose the
resident tools -> render for the target adapter. Nothing in a compile mutates the
caller's history or tool definitions.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextchef._errors import ToolNameConflictError, UnknownToolkitError, UsageError
from contextchef._json import canonical_dumps
from contextchef.deferred._groups import LOAD_TOOLKIT, Namespace, Toolkit
from contextchef.deferred._meta import TOOL_SEARCH, DeferredConfig
from contextchef.deferred._view import (
    META_TOOLS,
    CompiledTool,
    SessionView,
    build_view,
    extend_view,
)
from contextchef.dispatch._gate import (
    AfterHook,
    Allowed,
    BeforeHook,
    CheckResult,
    Denied,
    Execution,
    GateContext,
    acheck_tool_call,
    aexecute,
    arun_after_hooks,
    arun_before_hooks,
    check_tool_call,
    execute,
    run_after_hooks,
    run_before_hooks,
)
from contextchef.exposure._policy import READ_ONLY, ExposurePolicy, Mode
from contextchef.history._compaction import (
    Cleared,
    Compacted,
    clear_tool_results,
    compact,
    loaded_tool_names,
)
from contextchef.history._messages import (
    Message,
    TextPart,
    ToolCall,
    ToolResult,
    check_message,
    message_from_dict,
)
from contextchef.history._normalize import PORTABLE, PRESETS, Change, normalize
from contextchef.history._offload import (
    OFFLOAD_READ_TOOL,
    OffloadStore,
    execute_offload_read,
    offload_read_tool,
    offload_result,
)
from contextchef.providers import RequestOptions, get_adapter
from contextchef.session._accounting import CacheCostModel, PlanReport, plan_report
from contextchef.session._memory import (
    MemoryStore,
    MemoryTools,
    OverflowHandoff,
    OwnedTools,
    Summarizer,
    handoff_keep_turns,
    history_tokens,
    with_memories,
)
from contextchef.session._pruner import GroupLike, Pruner, parse_group
from contextchef.session._snapshot import restore_snapshot, take_snapshot
from contextchef.session._volatile import (
    DEFAULT_ANCHOR,
    CacheAuditFinding,
    CompileEvent,
    VolatileState,
    VolatileStateMixin,
    check_prefill,
)
from contextchef.tools._catalogs import (
    Catalog,
    expand_tool_dicts,
    load_catalog,
    tool_from_dict,
    tools_from_mcp,
)
from contextchef.tools._names import WIRE_NAME_RE, wire_name
from contextchef.tools._registry import Handler, Registry
from contextchef.tools._schema import schema_from_callable
from contextchef.tools._template import render_template
from contextchef.tools._tool import Tool

__all__ = ["CompiledRequest", "ContextChef", "ToolLike"]

ToolLike = Tool | Mapping[str, Any] | Callable[..., Any]
"""Accepted tool inputs: a `Tool`, a provider/MCP tool dict, or a Python function."""


@dataclass(frozen=True, kw_only=True)
class CompiledRequest:
    """One compiled request.

    Attributes:
        target: The adapter used.
        payload: Keyword arguments for the SDK call (a fresh dict; safe to mutate).
        segments: Canonical JSON text of the ``system``, ``tools`` and ``messages``
            segments, for cache-stability checks.
        changes: What the history normalizer repaired for this target (synthesized
            results, dropped orphans, moved results, merged roles...); ``()`` when the
            stored history was already valid. The stored history itself is unchanged.
        prefix_fingerprint: SHA-256 (hex) of the cached prefix: the system segment and
            every ``tools`` entry except those marked ``defer_loading: true`` (the
            provider strips deferred definitions before computing its cache key, so
            adding one never changes this value).
    """

    target: str
    payload: dict[str, Any]
    segments: Mapping[str, str]
    changes: tuple[Change, ...] = ()
    prefix_fingerprint: str = ""
    audit: tuple[CacheAuditFinding, ...] = ()
    """With ``ContextChef(cache_audit=True)``: volatile blocks (announcements, dynamic
    state...) found at or before the last ``cache_control`` breakpoint; also logged."""

    def to_json(self) -> str:
        """The whole payload as canonical JSON."""
        return canonical_dumps(self.payload)


STRATEGIES = ("client", "flat", "anthropic-native")
"""Compile strategies (see `ContextChef.compile`)."""


def prefix_fingerprint(system_segment: str, tools: object) -> str:
    """SHA-256 (hex) of the system segment and the non-deferred ``tools`` entries."""
    kept = [
        t
        for t in (tools if isinstance(tools, list) else [])
        if not (isinstance(t, Mapping) and t.get("defer_loading") is True)
    ]
    text = canonical_dumps({"system": system_segment, "tools": kept})
    return hashlib.sha256(text.encode()).hexdigest()


CallLike = ToolCall | Mapping[str, Any]
"""A tool call: a `ToolCall`, or a dict ``{"id"?, "name", "arguments"}`` whose arguments are
a JSON string or an object."""


def _as_call(call: CallLike) -> ToolCall:
    """Normalize the accepted call shapes to a `ToolCall`."""
    if isinstance(call, ToolCall):
        return call
    if isinstance(call, Mapping) and isinstance(call.get("name"), str):
        arguments = call.get("arguments", call.get("input", "{}"))
        return ToolCall(id=str(call.get("id", "call")), name=call["name"], arguments=arguments)
    raise UsageError(f"expected a ToolCall or a dict with 'name' and 'arguments', got {call!r:.80}")


def _patterns(field: str, value: str | Sequence[str]) -> tuple[str, ...]:
    """One pattern or a sequence of them, as a tuple (a bare string is one pattern)."""
    if value is None or not isinstance(value, (str, Sequence)):
        raise UsageError(f"{field} must be a pattern string or a list of them, got {value!r}")
    items = (value,) if isinstance(value, str) else tuple(value)
    bad = [p for p in items if not isinstance(p, str) or not p]
    if bad:
        raise UsageError(f"{field} patterns must be non-empty strings, got {bad!r}")
    return items


class ContextChef(VolatileStateMixin):
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
        max_inline_chars: Largest result text kept inline, in characters.
        memory: A memory store (`InMemoryStore`, `FileMemoryStore` or your own): adds
            the library-owned memory tools and shows stored memories to the model in
            the last user message (see `contextchef.session._memory`).
        memory_tools: ``"legacy"`` (``create_memory`` / ``modify_memory``) or
            ``"unified"`` (one ``context`` tool, plus ``new_context`` when `on_overflow`
            is set). The two sets never appear together.
        on_overflow: The overflow handoff: a summarizer (your model call) or an
            `OverflowHandoff`; the next compile after ``new_context`` or
            `request_new_context` replaces the history with a summary.
        anchor: The line closing a user tail that carries system state (dynamic state
            or announcements); None or ``""``: no anchor line.
        cache_audit: Flag volatile blocks at or before the last ``cache_control``
            breakpoint in `CompiledRequest.audit` and the ``contextchef`` log.
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
        max_inline_chars: int = 20_000,
        memory: MemoryStore | None = None,
        memory_tools: MemoryTools = "legacy",
        on_overflow: Summarizer | OverflowHandoff | None = None,
        anchor: str | None = DEFAULT_ANCHOR,
        cache_audit: bool = False,
    ) -> None:
        self._registry = Registry(qualify=qualify)
        self._modes: dict[str, Mode] = {READ_ONLY.name: READ_ONLY}
        for name, spec in (modes or {}).items():
            self._modes[name] = (
                spec if isinstance(spec, Mode) else Mode(name=name, include=_patterns(name, spec))
            )
        self._policy = ExposurePolicy(
            default_defer=default_defer, defer=_patterns("defer", defer), pin=_patterns("pin", pin)
        )
        self._config = deferred or DeferredConfig()
        self._template_vars = dict(template_vars or {})
        self._fragments = dict(template_fragments or {})
        if self._template_vars or self._fragments:  # reject bad names/values now, not at compile
            render_template(
                "", tool="(session)", variables=self._template_vars, fragments=self._fragments
            )
        self._system = ""
        self._history: tuple[Message, ...] = ()
        self._view: SessionView | None = None
        self._last_view: SessionView | None = None
        self._prefix_dirty = True
        self._loaded: set[str] = set()
        self._blocked: tuple[str, ...] = ()
        self._before: list[BeforeHook] = []
        self._after: list[AfterHook] = []
        self._additions: list[Tool] = []
        self._namespaces: dict[str, Namespace] = {}
        self._toolkits: dict[str, Toolkit] = {}
        self._kit_handlers: dict[str, dict[str, Handler]] = {}
        self._kits_loaded: dict[str, tuple[Tool, ...]] = {}
        self._base_mode: Mode | None = None
        self._native = False
        self._pruner = Pruner(self)
        self._store = OffloadStore(Path(offload_dir)) if offload_dir is not None else None
        self._max_inline = max_inline_chars
        self._init_owned_tools(memory, memory_tools, on_overflow)
        self._volatile = VolatileState(anchor=anchor, cache_audit=cache_audit)
        if self._store is not None:
            store = self._store
            self.register_tools(
                [tool_from_dict(offload_read_tool())],
                handlers={OFFLOAD_READ_TOOL: lambda **args: execute_offload_read(store, args)},
            )
        if mode is not None:
            self.set_mode(mode)

    # -- tools ---------------------------------------------------------------------------

    def register_tools(
        self,
        tools: Iterable[ToolLike],
        *,
        server: str | None = None,
        server_description: str | None = None,
        handlers: Mapping[str, Handler] | None = None,
    ) -> tuple[Tool, ...]:
        """Register tools atomically (all or nothing).

        Args:
            tools: `Tool` values, tool dicts in any supported shape (Anthropic, OpenAI
                Chat, Responses, MCP, Gemini), or Python functions (schema from the
                signature, description from the docstring; the function becomes the
                handler).
            server: Group/MCP server for dicts and functions (a `Tool` keeps its own).
            server_description: Shown in the deferred directory's group header.
            handlers: Python callables by tool name (own name), run by `execute`.

        Returns:
            The registered tools, in registry order.

        Raises:
            ToolNameConflictError: A name clashes with a registered tool, a meta-tool
                name, or another tool of the batch; nothing is registered.
            InvalidToolError, InvalidSchemaError, CatalogFormatError: A bad definition.
        """
        built, funcs = self._build(tools, server=server)
        funcs = {**funcs, **(handlers or {})}
        self._check_reserved(built)
        by_name = {t.name: t for t in built}
        unknown = sorted(set(funcs) - set(by_name))
        if unknown:
            raise UsageError(
                f"handlers given for tools not in this batch: {unknown}; "
                f"tools in the batch: {sorted(by_name)[:10]}"
            )
        not_callable = sorted(n for n, f in funcs.items() if not callable(f))
        if not_callable:
            raise UsageError(f"handlers for {not_callable} are not callable")
        added = self._registry.add(built, handlers={by_name[n].key: f for n, f in funcs.items()})
        if server is not None and server_description is not None:
            self._registry.set_server_description(server, server_description)
        self._invalidate()
        return added

    @staticmethod
    def _build(
        tools: Iterable[Any], *, server: str | None = None
    ) -> tuple[list[Tool], dict[str, Handler]]:
        """Tool inputs -> tools, and the handlers of those given as functions."""
        built: list[Tool] = []
        funcs: dict[str, Handler] = {}
        for item in expand_tool_dicts(tools):
            if isinstance(item, Tool):
                built.append(item)
            elif isinstance(item, Mapping):
                built.append(tool_from_dict(item, server=server))
            elif callable(item):
                name, description, schema, runner = schema_from_callable(item)
                built.append(
                    Tool(
                        name=name,
                        description=description,
                        input_schema=schema,
                        source="mcp" if server else "builtin",
                        server=server,
                    )
                )
                funcs.setdefault(name, runner)
            else:
                raise UsageError(
                    f"cannot register {type(item).__name__}: expected a Tool, a tool dict "
                    "or a function"
                )
        return built, funcs

    def _reserved_names(self) -> set[str]:
        """Names the model sees that are not registry tools (meta, namespaces, loader)."""
        names = set(META_TOOLS) | set(self._namespaces) | set(self._owned.names)
        return names | {LOAD_TOOLKIT} if self._toolkits else names

    def _check_reserved(self, tools: Sequence[Tool]) -> None:
        taken = self._reserved_names()
        reserved = [
            (t.name, ("contextchef tool", t.origin))
            for t in tools
            if self._registry.wire_name_for(t) in taken
        ]
        if reserved:
            raise ToolNameConflictError(
                "tool names clash with contextchef's own tools: "
                + ", ".join(repr(n) for n, _ in reserved)
                + f"; rename them (reserved in this session: {sorted(taken)})",
                conflicts=reserved,
            )

    # -- namespaces and toolkits ---------------------------------------------------------

    def register_namespaces(
        self, namespaces: Iterable[GroupLike], *, handlers: Mapping[str, Handler] | None = None
    ) -> tuple[Namespace, ...]:
        """Register namespaces: each compiles to ONE stable tool (atomic, all or nothing).

        A namespace is ``{"name", "description", "tools": [...]}`` (or a `Namespace`);
        its tools take any `register_tools` shape, plus ``"parameters"`` as a bare
        properties map (every listed property required). The sub-tools are registered as
        builtin tools reachable only through ``<namespace>({"action": <sub-tool>,
        "args": {...}})``; the gate checks, validates and hooks them under their own name.

        Args:
            namespaces: The groups; a namespace inside a namespace is rejected.
            handlers: Python callables by sub-tool name (functions carry their own).

        Returns:
            The registered namespaces, sorted by name.

        Raises:
            NestedNamespaceError: A namespace holds a namespace (one level only).
            ToolNameConflictError: A namespace name is not free, or a sub-tool clashes.
            UsageError: A malformed group or an illegal namespace name.
        """
        parsed = [parse_group(ns, kind="namespace", build=self._build) for ns in namespaces]
        groups: list[Namespace] = [g for g, _ in parsed]
        self._check_group_names([g.name for g in groups], [t for g in groups for t in g.tools])
        funcs: dict[str, Handler] = {k: v for _, h in parsed for k, v in h.items()}
        self.register_tools(
            [t for g in groups for t in g.tools], handlers={**funcs, **(handlers or {})}
        )
        self._namespaces.update({g.name: g for g in groups})
        self._invalidate()
        return tuple(sorted(groups, key=lambda g: g.name))

    def _check_group_names(self, names: Sequence[str], tools: Sequence[Tool]) -> None:
        bad = [n for n in names if not WIRE_NAME_RE.match(n)]
        if bad:
            raise UsageError(
                f"namespace names {bad} are not provider-legal tool names "
                f"(pattern {WIRE_NAME_RE.pattern})"
            )
        taken = self._reserved_names() | {w for w, _ in self._wires()}
        taken |= {self._registry.wire_name_for(t) for t in tools}
        clashes = sorted({n for n in names if n in taken or names.count(n) > 1})
        if clashes:
            raise ToolNameConflictError(
                f"namespace names {clashes} are already taken by a tool, a namespace or "
                "contextchef's own tools; pick other names",
                conflicts=[(n, ("namespace",)) for n in clashes],
            )

    def _wires(self) -> list[tuple[str, Tool]]:
        return [(self._registry.wire_name_for(t), t) for t in self._registry.tools]

    def register_toolkits(
        self, toolkits: Iterable[GroupLike], *, handlers: Mapping[str, Handler] | None = None
    ) -> tuple[Toolkit, ...]:
        """Register lazily loaded toolkits (atomic, all or nothing).

        Adds the ``load_toolkit`` tool (static schema) and, so that a loaded toolkit's
        tools are reachable without rewriting the tools array, the meta-tools. Put
        ``chef.pruner.compile().directory_xml`` in the system prompt so the model knows
        which toolkits exist. Nothing of a toolkit is registered until it is loaded.

        Args:
            toolkits: ``{"name", "description", "tools": [...]}`` dicts or `Toolkit`.
            handlers: Python callables by tool name (functions carry their own).

        Returns:
            The registered toolkits, sorted by name.

        Raises:
            ToolNameConflictError: A toolkit name is taken, or a toolkit tool's name
                clashes with a registered tool or another toolkit's tool.
            NestedNamespaceError: A toolkit holds a group.
        """
        parsed = [parse_group(kit, kind="toolkit", build=self._build) for kit in toolkits]
        kits: list[Toolkit] = [g for g, _ in parsed]
        self._check_toolkit_names(kits)
        if not self._toolkits and self._registry.by_wire_name(LOAD_TOOLKIT) is not None:
            raise ToolNameConflictError(
                "a registered tool is named 'load_toolkit', which toolkits need; rename it",
                conflicts=[(LOAD_TOOLKIT, ("builtin", "contextchef tool"))],
            )
        extra = dict(handlers or {})
        for kit, funcs in parsed:
            self._toolkits[kit.name] = kit
            names = {t.name for t in kit.tools}
            self._kit_handlers[kit.name] = {
                **funcs,
                **{k: v for k, v in extra.items() if k in names},
            }
        self._invalidate()
        return tuple(sorted(kits, key=lambda k: k.name))

    def _check_toolkit_names(self, kits: Sequence[Toolkit]) -> None:
        names = [k.name for k in kits]
        dup = sorted({n for n in names if n in self._toolkits or names.count(n) > 1})
        if dup:
            raise ToolNameConflictError(
                f"toolkit names {dup} are registered twice",
                conflicts=[(n, ("toolkit",)) for n in dup],
            )
        seen = {w for w, _ in self._wires()} | self._reserved_names() | {LOAD_TOOLKIT}
        seen |= {
            wire_name("runtime", t.name, server=None)
            for k in self._toolkits.values()
            for t in k.tools
        }
        clashes: list[str] = []
        for kit in kits:
            for tool in kit.tools:
                wire = wire_name("runtime", tool.name, server=None)
                if wire in seen:
                    clashes.append(wire)
                seen.add(wire)
        if clashes:
            raise ToolNameConflictError(
                f"toolkit tools {sorted(set(clashes))} clash with registered tools, "
                "contextchef's own tools or other toolkits' tools; rename them",
                conflicts=[(n, ("toolkit",)) for n in sorted(set(clashes))],
            )

    def load_toolkit(self, name: str) -> tuple[Tool, ...]:
        """Load a toolkit: register its tools as runtime (deferred) tools; idempotent.

        The tools array does not change (under the ``client`` strategy they are reached
        through ``defer_execute``; under ``anthropic-native`` they are sent with
        ``defer_loading: true``). Their wire names count as loaded for
        ``require_search``, and the additions show up in `take_tool_additions`.

        Returns:
            The toolkit's tools as registered (source ``runtime``).

        Raises:
            UnknownToolkitError: No toolkit has this name.
        """
        kit = self._toolkits.get(name)
        if kit is None:
            raise UnknownToolkitError(
                f"unknown toolkit {name!r}; available toolkits: {sorted(self._toolkits)}",
                name=str(name),
                available=sorted(self._toolkits),
            )
        if name not in self._kits_loaded:
            funcs = self._kit_handlers[name]
            added = tuple(
                self.register_runtime_tool(t, handler=funcs.get(t.name)) for t in kit.tools
            )
            self._kits_loaded[name] = added
            self._loaded.update(self._registry.wire_name_for(t) for t in added)
        return self._kits_loaded[name]

    @property
    def loaded_toolkits(self) -> tuple[str, ...]:
        """Names of the toolkits loaded in this session, sorted."""
        return tuple(sorted(self._kits_loaded))

    @property
    def namespaces(self) -> tuple[Namespace, ...]:
        """The registered namespaces, sorted by name."""
        return tuple(self._namespaces[n] for n in sorted(self._namespaces))

    @property
    def toolkits(self) -> tuple[Toolkit, ...]:
        """The registered toolkits, sorted by name."""
        return tuple(self._toolkits[n] for n in sorted(self._toolkits))

    @property
    def pruner(self) -> Pruner:
        """Pruning, blocklist, namespace routing and toolkit loading (see `Pruner`)."""
        return self._pruner

    def register_catalog(self, catalog: Catalog | str | Path) -> tuple[Tool, ...]:
        """Register every tool of a catalog (a `Catalog` or a catalog file path).

        Raises:
            CatalogFormatError, ToolNameConflictError, InvalidToolError: As for
                `load_catalog` and `register_tools`.
        """
        cat = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
        added = self.register_tools(cat.tools)
        for server, description in cat.server_descriptions.items():
            self._registry.set_server_description(server, description)
        self._invalidate()
        return added

    def register_mcp_tools(
        self, result: Mapping[str, Any] | Sequence[Any], *, server: str, description: str = ""
    ) -> tuple[Tool, ...]:
        """Register an MCP server's ``tools/list`` result under `server`."""
        added = self.register_tools(tools_from_mcp(result, server=server))
        self._registry.set_server_description(server, description)
        self._invalidate()
        return added

    @property
    def tools(self) -> tuple[Tool, ...]:
        """Every registered tool, in registry order."""
        return self._registry.tools

    @property
    def registry(self) -> Registry:
        """The tool registry (read it; register through this facade)."""
        return self._registry

    def register_runtime_tool(self, tool: ToolLike, *, handler: Handler | None = None) -> Tool:
        """Register a tool made at run time (e.g. written by the model).

        It is always deferred, searchable at once, and changes neither the ``tools``
        array nor the directory (its free-text description never enters the cached
        prefix). If nothing was deferred before, the meta-tools must be added once so it
        can be reached; pass ``DeferredConfig(always_meta_tools=True)`` to avoid even
        that. The addition is reported by `take_tool_additions` for the host to announce.

        Raises:
            ToolNameConflictError, InvalidToolError, InvalidSchemaError: As for
                `register_tools`.
        """
        if isinstance(tool, Tool):
            built = tool.replace(source="runtime", server=None)
        elif isinstance(tool, Mapping):
            built = tool_from_dict(tool, source="runtime")
        else:
            name, description, schema, runner = schema_from_callable(tool)
            built = Tool(name=name, description=description, input_schema=schema, source="runtime")
            handler = handler or runner
        self._check_reserved([built])
        handlers = {built.key: handler} if handler is not None else None
        (added,) = self._registry.add([built], handlers=handlers)
        self._additions.append(added)
        if self._view is not None and not self._prefix_dirty:
            self._view = extend_view(
                self._view,
                self._registry,
                self._policy,
                [added],
                render=self._render,
                namespaces=tuple(self._namespaces.values()),
            )
            self._last_view = self._view
        else:
            self._view = None  # rebuilt on next use; the prefix is carried over
        return added

    def take_tool_additions(self) -> tuple[tuple[str, Tool], ...]:
        """Runtime tools added since the last call, as (wire name, tool); clears the list."""
        out = tuple((self._registry.wire_name_for(t), t) for t in self._additions)
        self._additions.clear()
        return out

    # -- modes, blocklist, hooks ---------------------------------------------------------

    def set_mode(self, name: str | None) -> None:
        """Switch to a named mode (None: no mode). Changes the tools array by design.

        Raises:
            UsageError: Unknown mode name.
        """
        if name is not None and name not in self._modes:
            raise UsageError(f"unknown mode {name!r}; defined modes: {sorted(self._modes)}")
        self._base_mode = self._modes[name] if name is not None else None
        self.set_whitelist(None)

    def set_whitelist(self, mode: Mode | None) -> None:
        """Apply a structural whitelist over the session's own mode (None drops it).

        Used by `Pruner.apply`; `set_mode` drops it. Changes the tools array by design.
        """
        self._policy = dataclasses.replace(self._policy, mode=mode or self._base_mode)
        self._invalidate()

    @property
    def base_mode(self) -> Mode | None:
        """The mode chosen with `set_mode` (a pruning whitelist may be applied over it)."""
        return self._base_mode

    @property
    def mode(self) -> str | None:
        """The active mode's name (``pruned`` while a prune result is applied)."""
        return self._policy.mode.name if self._policy.mode else None

    def set_blocked_tools(self, patterns: str | Sequence[str]) -> None:
        """Replace the blocklist (``[]`` clears it). Patterns as for pin/defer.

        Blocked tools stay in the payload (the cached prefix does not change); the gate
        denies their calls with ``Tool "<name>" is currently blocked.``
        """
        self._blocked = _patterns("blocked", patterns)

    @property
    def blocked_tools(self) -> tuple[str, ...]:
        """The current blocklist patterns."""
        return self._blocked

    def before_tool_call(self, hook: BeforeHook) -> BeforeHook:
        """Add a before-hook (usable as a decorator).

        It sees the real tool's name and validated arguments; returning a string denies
        the call with that reason.
        """
        self._before.append(hook)
        return hook

    def after_tool_call(self, hook: AfterHook) -> AfterHook:
        """Add an after-hook (usable as a decorator).

        Returning a `ToolResult` replaces the result, e.g. to add guidance that only
        makes sense after the tool ran.
        """
        self._after.append(hook)
        return hook

    def _gate(self) -> GateContext:
        return GateContext(
            blocked=self._blocked,
            loaded=frozenset(self._loaded),
            before=tuple(self._before),
            after=tuple(self._after),
            native_search=self._native,
        )

    def _invalidate(self) -> None:
        """Tools or exposure changed: the next view rebuilds its prefix."""
        self._view = None
        self._prefix_dirty = True

    def _render(self, tool: Tool) -> str:
        return render_template(
            tool.description,
            tool=tool.name,
            variables=self._template_vars,
            fragments=self._fragments,
        )

    @property
    def view(self) -> SessionView:
        """The frozen tool view, rebuilt only after registration changes.

        Descriptions that are templates are rendered once and kept; after runtime-only
        additions the cached prefix (tools array, directory) is carried over unchanged.
        """
        if self._view is None:
            frozen = None if self._prefix_dirty else self._last_view
            self._view = build_view(
                self._registry,
                self._policy,
                self._config,
                render=self._render,
                frozen=frozen,
                namespaces=tuple(self._namespaces.values()),
                toolkits=tuple(self._toolkits.values()),
            )
            self._last_view = self._view
            self._prefix_dirty = False
        return self._view

    def wire_name(self, name: str, *, server: str | None = None) -> str:
        """The wire name of a registered tool, by own name (and server when grouped).

        Raises:
            UnknownToolError: No such tool.
        """
        if not isinstance(name, str):
            raise UsageError(f"wire_name takes a tool's own name (str), got {type(name).__name__}")
        tool = self._registry.get((server or "builtin", name))
        return self._registry.wire_name_for(tool)

    # -- conversation state --------------------------------------------------------------

    def set_system_prompt(self, text: str) -> None:
        """Set the system prompt (the first, cached segment of every request)."""
        if not isinstance(text, str):
            raise UsageError(f"system prompt must be a string, got {type(text).__name__}")
        self._system = text

    def set_history(self, messages: Iterable[Message | Mapping[str, Any]]) -> None:
        """Replace the history (copied; the caller's list is never modified).

        Args:
            messages: `Message` values or their `Message.to_dict` form.

        Raises:
            CorruptHistoryError: An entry is neither, has a role other than user /
                assistant, or holds a part its role may not (tool calls belong to
                assistant messages, tool results to user messages).
        """
        if messages is None or isinstance(messages, (str, bytes, Mapping)):
            raise UsageError(
                f"set_history takes a list of Message values, got {type(messages).__name__}"
            )
        out: list[Message] = []
        for i, m in enumerate(messages):
            msg = message_from_dict(m, index=i) if isinstance(m, Mapping) else m
            check_message(msg, i)
            out.append(msg)
        self._history = tuple(out)

    def append(self, *messages: Message) -> None:
        """Append messages to the history.

        Raises:
            CorruptHistoryError: A message is malformed (see `set_history`).
        """
        for i, msg in enumerate(messages, start=len(self._history)):
            check_message(msg, i)
        self._history = self._history + tuple(messages)

    @property
    def history(self) -> tuple[Message, ...]:
        """The history, oldest first."""
        return self._history

    @property
    def loaded_tools(self) -> tuple[str, ...]:
        """Wire names of deferred tools whose schemas the model has fetched, sorted."""
        return tuple(sorted(self._loaded))

    # -- compile -------------------------------------------------------------------------

    def compile(
        self,
        target: str = "anthropic",
        *,
        model: str = "model",
        max_tokens: int | None = None,
        strategy: str = "client",
        prefill: str | None = None,
    ) -> CompiledRequest:
        """Compile the session into a request payload for `target`.

        Args:
            target: ``anthropic``, ``openai`` (Chat Completions), ``responses`` or
                ``gemini``.
            model: Model name written into the payload.
            max_tokens: Output cap in tokens; None sends the provider's own default,
                except on Anthropic, which requires one (4,096 is sent).
            strategy: ``client`` (direct tools, namespaces, ``load_toolkit``, then the
                meta-tools), ``flat`` (every tool resident; the no-disclosure baseline) or
                ``anthropic-native`` (Anthropic only: the client tools without the
                meta-tools, then every deferred tool with ``defer_loading: true``, then
                Anthropic's server tool-search tool). The gate follows the last compile:
                after an ``anthropic-native`` compile, deferred tools may be called
                directly by name (the provider expanded them).
            prefill: Start of the assistant's answer, sent as a trailing assistant turn
                (Gemini: ``model``) after everything else; the history must end with a
                user turn, and the text must not end with whitespace.

        Volatile state renders after the cached prefix (see `contextchef.session._volatile`): the
        user tail (dynamic state, implicit context, ``user_tail`` announcements, anchor
        line) joins the last user message, and ``system`` announcements form one
        positional system message after the conversation, before the prefill.
        ``compile:start`` handlers run first; ``compile:done`` handlers get the result.

        Returns:
            A `CompiledRequest`; its payload goes to the SDK call as ``**payload``.

        Raises:
            UnknownTargetError: Unknown target.
            UsageError: Unknown strategy, or ``anthropic-native`` for another target.
            MalformedArgumentsError: A history tool call's arguments are not a JSON
                object and the target needs them parsed (Anthropic, Gemini).
        """
        adapter = get_adapter(target)
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise UsageError(f"max_tokens must be a positive integer or None, got {max_tokens!r}")
        native = strategy == "anthropic-native"
        if native and adapter.profile.target != "anthropic":
            raise UsageError(
                f"strategy 'anthropic-native' needs the anthropic target, not {target!r}; "
                "use strategy='client' (or 'flat') for it"
            )
        self._volatile.emit(CompileEvent(name="compile:start", target=target))
        self._handoff_if_due()
        tools = self._strategy_tools(strategy) + self._owned.compiled
        history = normalize(
            self._history, profile=PRESETS.get(target, PORTABLE), keeps=adapter.keeps
        )
        messages = with_memories(history.messages, self._owned.memory_block())
        tail = self._volatile.tail(adapter.profile.target, messages)
        options = RequestOptions(
            model=model,
            max_tokens=max_tokens,
            native_tool_search=native,
            positional_system=tail.system,
            positional_cache=self._volatile.system_breakpoint,
            prefill=check_prefill(prefill, tail.messages),
        )
        payload = adapter.render_request(
            system=self._system, tools=tools, messages=tail.messages, options=options
        )
        self._volatile.warn_hoist(adapter.profile.target, payload, tail)
        self._native = native
        segments = adapter.segments(payload)
        result = CompiledRequest(
            target=target,
            payload=payload,
            segments=segments,
            changes=history.changes,
            prefix_fingerprint=prefix_fingerprint(segments["system"], payload.get("tools")),
            audit=self._volatile.audit(adapter.profile.target, payload, tail),
        )
        self._volatile.emit(CompileEvent(name="compile:done", target=target, request=result))
        return result

    def _strategy_tools(self, strategy: str) -> tuple[CompiledTool, ...]:
        view = self.view
        if strategy == "client":
            return view.resident
        if strategy == "flat":
            return view.flat
        if strategy == "anthropic-native":
            deferred = {view.wire_names[t.key] for t in view.deferred}
            head = tuple(t for t in view.resident if t.name not in view.meta_tools)
            tail = tuple(
                dataclasses.replace(t, defer_loading=True) for t in view.flat if t.name in deferred
            )
            return head + tail
        raise UsageError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")

    # -- snapshots -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """A versioned, JSON-serializable dict of the session's data.

        System prompt, history, exposure, mode, blocklist, loaded tools and toolkits,
        announcements, dynamic state... Tools, handlers and hooks are code and are not
        included: see `contextchef.session._snapshot`.
        """
        return take_snapshot(self)

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Restore a `snapshot` (register the same tools first); compiles then match.

        Raises:
            SnapshotMismatchError: The registered tools, toolkits or modes differ from the
                snapshot's, or its version is unsupported; nothing is changed.
        """
        restore_snapshot(self, snapshot)

    # -- history maintenance -------------------------------------------------------------

    def compact(self, summarize: Callable[[str], str], *, keep_recent_turns: int = 2) -> Compacted:
        """Replace old turns with a summary, cutting only at a safe point.

        The history is normalized first; `summarize` (your model call — the library never
        calls a model) gets the old turns as readable text and returns the summary. The
        new history is a user message wrapping the summary, then the recent turns
        verbatim. Deferred tools whose schemas were loaded in the summarized part are
        named in the summary message (so the model knows to load them again) and leave
        `loaded_tools`.

        Returns:
            The compaction result (``messages`` is the new history).
        """
        history = normalize(self._history).messages
        done = compact(history, summarize, keep_recent_turns=keep_recent_turns)
        messages = list(done.messages)
        if done.reactivate and done.plan.to_summarize:
            note = (
                "\n\nTools you loaded earlier with tool_search (load them again before "
                "calling them): " + ", ".join(done.reactivate)
            )
            first = messages[0]
            text = first.parts[0]
            if isinstance(text, TextPart):
                messages[0] = dataclasses.replace(
                    first, parts=(TextPart(text=text.text + note), *first.parts[1:])
                )
            kept = loaded_tool_names(done.plan.to_keep, search_tool=TOOL_SEARCH)
            self._loaded = {w for w in self._loaded if w not in done.reactivate or w in kept}
        if len(messages) > 1 and messages[1].role == "user":
            # one user turn: the summary first, then what the user said (keeps the
            # alternation every provider wants without a merge at each compile)
            messages[:2] = [Message(role="user", parts=(*messages[0].parts, *messages[1].parts))]
        self._history = tuple(messages)
        return dataclasses.replace(done, messages=self._history)

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
        """
        done = clear_tool_results(
            self._history,
            keep_recent=keep_recent,
            exclude_tools=exclude_tools,
            clear_inputs=clear_inputs,
            clear_at_least=clear_at_least,
        )
        self._history = tuple(done.messages)
        return done

    # -- dispatch ------------------------------------------------------------------------

    def check_tool_call(self, call: CallLike) -> CheckResult:
        """Run the gate on a model's call.

        In order: known? in the mode? reachable? blocked? schema-valid? before-hooks?
        (see `contextchef.dispatch._gate`).

        Raises:
            UsageError: An async before-hook inside a running event loop (use
                `acheck_tool_call`).
        """
        call = _as_call(call)
        if self.owns_tool(call.name):
            owned = self._owned.check(call.name, call.arguments, self._blocked)
            if isinstance(owned, Denied):
                return owned
            return run_before_hooks(call, owned, self._gate())
        return check_tool_call(self.view, call, self._gate())

    async def acheck_tool_call(self, call: CallLike) -> CheckResult:
        """Async `check_tool_call` (awaits async before-hooks)."""
        call = _as_call(call)
        if self.owns_tool(call.name):
            owned = self._owned.check(call.name, call.arguments, self._blocked)
            if isinstance(owned, Denied):
                return owned
            return await arun_before_hooks(call, owned, self._gate())
        return await acheck_tool_call(self.view, call, self._gate())

    def execute(self, call: CallLike) -> Execution:
        """Gate and run a call; records schemas fetched through ``tool_search``.

        A ``load_toolkit`` call loads the toolkit (see `load_toolkit`) and returns its
        tools' schemas. A namespace call runs the sub-tool's handler.

        With ``offload_dir`` set, a result over ``max_inline_chars`` characters is stored
        whole and replaced by a head/tail stub at once (see `offload_result`).

        Raises:
            UsageError: Allowed call to a tool without a registered handler (MCP tools:
                forward them yourself after `check_tool_call`, then `offload` the result).
        """
        call = _as_call(call)
        if self.owns_tool(call.name):
            done = self._owned.run(call, self.check_tool_call(call))
            if isinstance(done.check, Allowed):
                result = run_after_hooks(call, done.check, done.result, self._gate())
                done = dataclasses.replace(done, result=result)
            return done
        done = execute(self.view, call, self._registry.handler, self._gate())
        return self._record(done)

    async def aexecute(self, call: CallLike) -> Execution:
        """Async `execute`."""
        call = _as_call(call)
        if self.owns_tool(call.name):
            done = self._owned.run(call, await self.acheck_tool_call(call))
            if isinstance(done.check, Allowed):
                result = await arun_after_hooks(call, done.check, done.result, self._gate())
                done = dataclasses.replace(done, result=result)
            return done
        done = await aexecute(self.view, call, self._registry.handler, self._gate())
        return self._record(done)

    def _record(self, done: Execution) -> Execution:
        """Session bookkeeping after a call: loaded schemas and toolkits, offload."""
        if done.toolkit is not None:
            self.load_toolkit(done.toolkit)
            return done
        self._loaded.update(done.loaded)
        return self._offloaded(done)

    def offload(self, result: ToolResult) -> ToolResult:
        """Offload one result you produced yourself (e.g. from an MCP server), if large.

        Returns the result unchanged when offloading is off or it is small enough.
        """
        if self._store is None:
            return result
        return offload_result(result, self._store, max_inline_chars=self._max_inline)

    def _offloaded(self, done: Execution) -> Execution:
        if self._store is None or done.result.name == TOOL_SEARCH:
            return done
        return dataclasses.replace(done, result=self.offload(done.result))

    # -- library-owned tools: memory and new_context (see contextchef.session._memory) -----------

    def _init_owned_tools(
        self,
        memory: MemoryStore | None,
        memory_tools: str,
        on_overflow: Summarizer | OverflowHandoff | None,
    ) -> None:
        handoff = (
            on_overflow
            if on_overflow is None or isinstance(on_overflow, OverflowHandoff)
            else OverflowHandoff(summarize=on_overflow)
        )
        self._new_context_pending = False
        self._owned = OwnedTools(
            store=memory,
            mode=memory_tools,
            handoff=handoff,
            on_new_context=self.request_new_context,
        )

    @property
    def memory(self) -> MemoryStore | None:
        """The memory store given at construction, or None."""
        return self._owned.store

    @property
    def owned_tool_names(self) -> tuple[str, ...]:
        """The library-owned tools of this session, in the order they are appended."""
        return self._owned.names

    def owns_tool(self, name: str) -> bool:
        """Whether `name` is a library-owned tool here (dispatch it with `handle_tool`)."""
        return self._owned.owns(name)

    def handle_tool(self, call: ToolCall | Mapping[str, Any]) -> str:
        """Run a call to a library-owned tool and return the result text for the model.

        Args:
            call: A `ToolCall`, or a dict with ``name`` and ``arguments`` (JSON text or
                an object; a Chat Completions ``{"function": {...}}`` entry works too).

        Returns:
            The result text; bad arguments give an error text naming the field.

        Raises:
            UsageError: The tool is not library-owned in this session (see `owns_tool`).
        """
        return self._owned.handle(call, self._blocked)

    def request_new_context(self) -> None:
        """Make the next compile apply the overflow handoff whatever the budget says.

        Raises:
            UsageError: No overflow handoff is configured (pass ``on_overflow=``).
        """
        if self._owned.handoff is None:
            raise UsageError(
                "request_new_context needs an overflow handoff; create the session with "
                "ContextChef(on_overflow=<summarizer>)"
            )
        self._new_context_pending = True

    @property
    def new_context_pending(self) -> bool:
        """A handoff is due at the next compile (requested, not yet applied)."""
        return self._new_context_pending

    def _handoff_if_due(self) -> None:
        """Apply the overflow handoff when requested or over its history budget."""
        handoff = self._owned.handoff
        if handoff is None or not self._history:
            return
        limit = handoff.max_history_tokens
        over = limit is not None and history_tokens(self._history) > limit
        if not (self._new_context_pending or over):
            return
        self.compact(handoff.summarize, keep_recent_turns=handoff_keep_turns(self._history))
        self._new_context_pending = False

    # -- accounting ----------------------------------------------------------------------

    def plan(self, target: str = "anthropic", *, cache: CacheCostModel | None = None) -> PlanReport:
        """What the tool catalog costs per turn for `target`.

        Flat vs deferred sizes, and the prompt-cache cost of adding a tool mid-session
        (see `contextchef.session._accounting`).

        Raises:
            UnknownTargetError: Unknown target.
        """
        return plan_report(
            self.view,
            get_adapter(target),
            self._config,
            servers=self._registry.servers,
            cache=cache,
        )
