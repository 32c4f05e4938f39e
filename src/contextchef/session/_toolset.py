"""`SessionTools`: what a session can call, and the frozen view of it (session layer).

Registration of tools, namespaces, toolkits, skills and runtime tools (all or nothing),
the reserved names of contextchef's own tools, templated descriptions rendered once, and
the `SessionView` that every compile and the gate read: rebuilt only when the tool set
or the exposure policy changes, extended in place for runtime tools so the cached prefix
never moves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from contextchef._errors import ToolNameConflictError, UnknownToolkitError, UsageError, shown
from contextchef.deferred._groups import LOAD_TOOLKIT, GroupLike, Namespace, Toolkit, parse_group
from contextchef.deferred._meta import DeferredConfig
from contextchef.deferred._prefix_lint import PrefixItem, Rendered
from contextchef.deferred._skills import LOAD_SKILL, Skill
from contextchef.deferred._view import META_TOOLS, SessionView, build_view, extend_view
from contextchef.exposure._policy import ExposurePolicy, as_patterns, closest_names, unmatched
from contextchef.history._call_names import MALFORMED_CALL
from contextchef.providers._server_names import SERVER_TOOL_NAMES
from contextchef.session._batches import Check, ToolBatch, build_tools, tool_batch
from contextchef.tools._callable import schema_from_callable
from contextchef.tools._catalogs import Catalog, join_catalogs, load_catalog, tool_from_dict
from contextchef.tools._mcp import McpRules, as_rules, checked_instructions, tools_from_mcp
from contextchef.tools._names import WIRE_NAME_RE, wire_name
from contextchef.tools._registry import Handler, Registry
from contextchef.tools._template import render_template
from contextchef.tools._tool import Tool, described_server

__all__ = ["CatalogLike", "SessionTools", "ToolLike"]

ToolLike = Tool | Mapping[str, Any] | Callable[..., Any]
"""Accepted tool inputs: a `Tool`, a provider/MCP tool dict, or a Python function."""
CatalogLike = Catalog | str | Path
"""A loaded `Catalog` or the path of a catalog file (`load_catalog`)."""


def _items(value: object, what: str) -> list[Any]:
    """A list of `what` given as any iterable (not a string or a single mapping)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise UsageError(f"{what} must be a list, got {type(value).__name__}")
    return list(value)


def _handlers(value: object) -> dict[str, Handler]:
    """Handlers by tool name (None: none)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise UsageError(f"handlers must map tool names to callables, got {type(value).__name__}")
    return dict(value)


class SessionTools:
    """The tools of one session: registry, namespaces, toolkits, runtime tools, view.

    Args:
        qualify: Prefix grouped/MCP tools' wire names with their server.
        policy: The exposure policy the view is built under (see `set_policy`).
        config: Deferred-loading limits.
        template_vars: Variables templated descriptions may use.
        template_fragments: Named fragments for templates' ``fragment(name)``.

    Raises:
        TemplateError: A template variable or fragment is not allowed.
    """

    def __init__(
        self,
        *,
        qualify: bool,
        policy: ExposurePolicy,
        config: DeferredConfig,
        template_vars: Mapping[str, Any] | None = None,
        template_fragments: Mapping[str, str] | None = None,
    ) -> None:
        self.registry = Registry(qualify=qualify)
        self.policy = policy
        self.config = config
        for label, given in (
            ("template_vars", template_vars),
            ("template_fragments", template_fragments),
        ):
            if given is not None and not isinstance(given, Mapping):
                raise UsageError(f"{label} must be a mapping of names, got {type(given).__name__}")
        self._template_vars = dict(template_vars or {})
        self._fragments = dict(template_fragments or {})
        if self._template_vars or self._fragments:  # reject bad names/values now, not at compile
            render_template(
                "", tool="(session)", variables=self._template_vars, fragments=self._fragments
            )
        self._view: SessionView | None = None
        self._last_view: SessionView | None = None
        self.lint: Check = lambda tools, batch: None  # see ContextChef
        self.lint_prefix: Callable[[Sequence[PrefixItem]], None] = lambda items: None
        self._prefix_dirty = True
        self._additions: list[Tool] = []
        self._namespaces: dict[str, Namespace] = {}
        self._toolkits: dict[str, Toolkit] = {}
        self._kit_handlers: dict[str, dict[str, Handler]] = {}
        self._kits_loaded: dict[str, tuple[Tool, ...]] = {}
        self._skills: dict[str, Skill] = {}
        self._library_names: tuple[str, ...] = ()

    def register_library(self, tools: Sequence[Tool], handlers: Mapping[str, Handler]) -> None:
        """Register contextchef's own tools (source ``library``) with their handlers."""
        self._library_names += tuple(t.name for t in tools)
        keyed = {t.key: handlers[t.name] for t in tools if t.name in handlers}
        self.registry.add(list(tools), handlers=keyed)
        self.refresh_view(prefix=True)

    @property
    def library_names(self) -> tuple[str, ...]:
        """Names of the library-owned tools, in payload order."""
        return self._library_names

    def is_kit_tool(self, tool: Tool) -> bool:
        """Whether `tool` was registered by loading a toolkit."""
        return any(tool in tools for tools in self._kits_loaded.values())

    def register_tools(
        self,
        tools: Iterable[ToolLike],
        *,
        server: str | None = None,
        server_description: str | None = None,
        handlers: Mapping[str, Handler] | None = None,
    ) -> tuple[Tool, ...]:
        """Register tools atomically: see `ContextChef.register_tools`."""
        batch = tool_batch(tools)  # a tuple registered before (a shared catalog): checked
        built, funcs = (batch.tools, {}) if batch else self._build(tools, server=server)
        funcs = {**funcs, **_handlers(handlers)}
        self._check_reserved(built, wires=batch.wires(self.registry.qualify) if batch else None)
        self._check_templates(built, batch)
        self.lint_prefix(described := described_server(server, server_description, built))
        by_name = {t.name: t for t in built} if funcs else {}
        if unknown := sorted(set(funcs) - set(by_name)):
            raise UsageError(
                f"handlers given for tools not in this batch: {unknown}; "
                f"tools in the batch: {sorted(by_name)[:10]}"
            )
        if not_callable := sorted(n for n, f in funcs.items() if not callable(f)):
            raise UsageError(f"handlers for {not_callable} are not callable")
        added = self.registry.add(built, handlers={by_name[n].key: f for n, f in funcs.items()})
        for name, text in described:
            self.registry.set_server_description(name, text)
        self.refresh_view(prefix=True)
        return added

    _build = staticmethod(build_tools)

    def known_names(self) -> set[str]:
        """Every name a call or a pattern can mean.

        Registered tools (wire and own names), namespaces, contextchef's own tools and the
        tools of toolkits not loaded yet.
        """
        names = self.registry.wire_names | {t.name for t in self.registry.tools}
        return names | self._reserved_names()

    def checked_blocklist(self, patterns: str | Sequence[str]) -> tuple[str, ...]:
        """A blocklist whose every pattern matches some tool (see `known_names`).

        Raises:
            UsageError: A pattern matches no tool (the closest names are listed), or is not
                a pattern (see `as_patterns`).
        """
        items = as_patterns("blocked", patterns)
        known = sorted(self.known_names())
        missing = unmatched(items, known)
        if missing:
            raise UsageError(
                f"blocked pattern {shown(missing[0], 80)} matches no tool; "
                f"{closest_names(missing[0], known)} (patterns take * wildcards and ^/$ "
                "anchors)"
            )
        return items

    def _check_templates(self, tools: Sequence[Tool], batch: ToolBatch | None = None) -> None:
        """`lint` (`batch`: the tools' `tool_batch`), then render templated descriptions, linted.

        Raises:
            TemplateError, NondeterminismError: A template that cannot render.
            VolatileValueError: `lint` refuses a per-request-looking value.
        """
        self.lint(tools, batch)
        vs, frags = self._template_vars, self._fragments
        todo = [t for t in tools if t.template] if batch is None or batch.templated else []
        self.lint_prefix([Rendered(t.name, self._render(t), vs, frags) for t in todo])

    def _reserved_names(self, *, loading: str | None = None) -> set[str]:
        """Names taken by what is not (yet) a registry tool.

        The meta-tools, the provider tools a strategy declares (`SERVER_TOOL_NAMES`),
        ``malformed_tool_call`` (what a call no tool can answer is recorded
        as), namespaces, library-owned tools, ``load_toolkit``, skills and
        ``load_skill``, and the tools of every toolkit not loaded yet (other than `loading`,
        the one being loaded), so that a later load can never clash.
        """
        names = {*META_TOOLS, *SERVER_TOOL_NAMES, MALFORMED_CALL, *self._library_names}
        names.update(self._namespaces)
        names |= {
            wire_name("runtime", t.name, server=None)
            for kit in self._toolkits.values()
            if kit.name not in self._kits_loaded and kit.name != loading
            for t in kit.tools
        }
        names |= {*self._skills, LOAD_SKILL} if self._skills else set()
        return names | {LOAD_TOOLKIT} if self._toolkits else names

    def _check_reserved(
        self,
        tools: Sequence[Tool],
        *,
        loading: str | None = None,
        wires: frozenset[str] | None = None,
    ) -> None:
        taken = self._reserved_names(loading=loading)
        if wires is not None and wires.isdisjoint(taken):
            return
        reserved = [
            (t.name, ("contextchef tool", t.origin))
            for t in tools
            if self.registry.wire_name_for(t) in taken
        ]
        if reserved:
            raise ToolNameConflictError(
                "tool names clash with contextchef's own tools (or a provider's it declares): "
                + ", ".join(repr(n) for n, _ in reserved)
                + f"; rename them (reserved in this session: {sorted(taken)})",
                conflicts=reserved,
            )

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
        parsed = [
            parse_group(ns, kind="namespace", build=self._build)
            for ns in _items(namespaces, "namespaces")
        ]
        groups: list[Namespace] = [g for g, _ in parsed]
        self._check_group_names([g.name for g in groups], [t for g in groups for t in g.tools])
        self.lint_prefix(groups)
        funcs: dict[str, Handler] = {k: v for _, h in parsed for k, v in h.items()}
        self.register_tools(
            [t for g in groups for t in g.tools], handlers={**funcs, **_handlers(handlers)}
        )
        self._namespaces.update({g.name: g for g in groups})
        self.refresh_view(prefix=True)
        return tuple(sorted(groups, key=lambda g: g.name))

    def _check_group_names(self, names: Sequence[str], tools: Sequence[Tool]) -> None:
        bad = [n for n in names if not WIRE_NAME_RE.match(n)]
        if bad:
            raise UsageError(
                f"namespace names {bad} are not provider-legal tool names "
                f"(pattern {WIRE_NAME_RE.pattern})"
            )
        taken = self._reserved_names() | self.registry.wire_names
        taken |= {self.registry.wire_name_for(t) for t in tools}
        clashes = sorted({n for n in names if n in taken or names.count(n) > 1})
        if clashes:
            raise ToolNameConflictError(
                f"namespace names {clashes} are already taken by a tool, a namespace or "
                "contextchef's own tools; pick other names",
                conflicts=[(n, ("namespace",)) for n in clashes],
            )

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
        parsed = [
            parse_group(kit, kind="toolkit", build=self._build)
            for kit in _items(toolkits, "toolkits")
        ]
        kits: list[Toolkit] = [g for g, _ in parsed]
        self._check_toolkit_names(kits)
        if not self._toolkits and (
            self.registry.by_wire_name(LOAD_TOOLKIT) is not None or LOAD_TOOLKIT in self._namespaces
        ):
            raise ToolNameConflictError(
                "a registered tool or namespace is named 'load_toolkit', which toolkits need; "
                "rename it",
                conflicts=[(LOAD_TOOLKIT, ("builtin", "contextchef tool"))],
            )
        self.lint([t for kit in kits for t in kit.tools], None)
        self.lint_prefix(kits)
        extra = _handlers(handlers)
        for kit, funcs in parsed:
            self._toolkits[kit.name] = kit
            names = {t.name for t in kit.tools}
            self._kit_handlers[kit.name] = funcs | {k: v for k, v in extra.items() if k in names}
        self.refresh_view(prefix=True)
        return tuple(sorted(kits, key=lambda k: k.name))

    def _check_toolkit_names(self, kits: Sequence[Toolkit]) -> None:
        names = [k.name for k in kits]
        dup = sorted({n for n in names if n in self._toolkits or names.count(n) > 1})
        if dup:
            raise ToolNameConflictError(
                f"toolkit names {dup} are registered twice",
                conflicts=[(n, ("toolkit",)) for n in dup],
            )
        # a loaded toolkit's tools are registry tools; the others' are reserved names
        seen = self.registry.wire_names | self._reserved_names() | {LOAD_TOOLKIT}
        wires = [wire_name("runtime", t.name, server=None) for kit in kits for t in kit.tools]
        clashes = sorted({w for i, w in enumerate(wires) if w in seen or w in wires[:i]})
        if clashes:
            raise ToolNameConflictError(
                f"toolkit tools {clashes} clash with registered tools, "
                "contextchef's own tools or other toolkits' tools; rename them",
                conflicts=[(n, ("toolkit",)) for n in clashes],
            )

    def load_toolkit(self, name: str) -> tuple[Tool, ...]:
        """Load a toolkit: register its tools as runtime (deferred) tools; idempotent.

        The tools array does not change (under the ``client`` strategy they are reached
        through ``defer_execute``; under ``anthropic-native`` they are sent with
        ``defer_loading: true``). Their wire names count as loaded for
        ``require_search`` (the session records them), and the additions show up in
        `take_tool_additions`.

        Returns:
            The toolkit's tools as registered (source ``runtime``).

        Raises:
            UnknownToolkitError: No toolkit has this name.
        """
        kit = self._toolkits.get(name) if isinstance(name, str) else None
        if kit is None:
            raise UnknownToolkitError(
                f"unknown toolkit {shown(name)}; available toolkits: {sorted(self._toolkits)}",
                name=name if isinstance(name, str) else shown(name),
                available=sorted(self._toolkits),
            )
        if name not in self._kits_loaded:
            built = [t.replace(source="runtime", server=None) for t in kit.tools]
            added = self._add_runtime(built, self._kit_handlers[name], kit=name)
            self._kits_loaded[name] = added
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
    def skills(self) -> tuple[Skill, ...]:
        """The registered skills (their tools as wire names), sorted by name."""
        return tuple(self._skills[n] for n in sorted(self._skills))

    def set_skills(self, skills: Sequence[Skill]) -> None:
        """Replace the skills with `skills`, already checked (`contextchef.session._skills`)."""
        self._skills = {s.name: s for s in skills}
        self.refresh_view(prefix=True)

    @property
    def toolkits(self) -> tuple[Toolkit, ...]:
        """The registered toolkits, sorted by name."""
        return tuple(self._toolkits[n] for n in sorted(self._toolkits))

    def register_catalog(self, catalog: CatalogLike | Sequence[CatalogLike]) -> tuple[Tool, ...]:
        """Register every tool of a catalog, or of a list of catalogs, as one batch.

        A list is registered as `register_tools` of all its catalogs' tools in turn would
        be (all or nothing, the same errors), with every catalog's server descriptions (a
        later one's wins); the same catalogs are joined once per process (`join_catalogs`).

        Raises:
            CatalogFormatError, ToolNameConflictError, InvalidToolError: As for
                `load_catalog` and `register_tools`.
            UsageError: Neither a catalog, a path nor a list of them.
        """
        items: Sequence[Any] = catalog if isinstance(catalog, (list, tuple)) else [catalog]
        cat = join_catalogs([c if isinstance(c, Catalog) else load_catalog(c) for c in items])
        self.lint_prefix(list(cat.server_descriptions.items()))
        added = self.register_tools(cat.tools)  # the view is refreshed: the directory too
        for server, description in cat.server_descriptions.items():
            self.registry.set_server_description(server, description)
        return added

    def register_mcp_tools(
        self, result: Any, server: str, description: str, rules: McpRules | None
    ) -> tuple[Tool, ...]:
        """Register an MCP server's ``tools/list`` under `server` as `McpHub` would.

        The same rules (`contextchef.tools._mcp`; `rules` default `McpRules()`); all or nothing.

        Raises:
            UsageError: `server` or `description` not a string, `rules` not `McpRules`.
            CatalogFormatError, McpListingTooLarge, InvalidToolError: As for
                `tools_from_mcp`; ToolNameConflictError as for `register_tools`.
        """
        text = checked_instructions(description, as_rules(rules))
        tools = tools_from_mcp(result, server=server, rules=rules)
        return self.register_tools(tools, server=server, server_description=text)

    def all(self) -> tuple[Tool, ...]:
        """Every registered tool, in registry order."""
        return self.registry.tools

    def register_runtime_tool(self, tool: ToolLike, *, handler: Handler | None = None) -> Tool:
        """Register a tool made at run time (e.g. written by the model).

        It is always deferred, searchable at once, and under the ``client`` strategy
        changes neither the ``tools`` array nor the directory (its free-text description
        never enters the cached prefix); native strategies declare it deferred (see
        docs/guides/tools.md, runtime tools). If nothing was deferred before, the meta-tools must be
        added once so it can be reached; ``DeferredConfig(always_meta_tools=True)``
        avoids even that. `take_tool_additions` reports the addition for the host. A
        `Tool` keeps its ``server`` (an MCP server's tool keeps its group and wire name).

        Raises:
            ToolNameConflictError, InvalidToolError, InvalidSchemaError: As for `register_tools`.
        """
        if isinstance(tool, Tool):
            built = tool.replace(source="runtime")  # keeps its server (an MCP server's tool)
        elif isinstance(tool, Mapping):
            built = tool_from_dict(tool, source="runtime")
        else:
            name, description, schema, runner = schema_from_callable(tool)
            built = Tool(name=name, description=description, input_schema=schema, source="runtime")
            handler = handler or runner
        (added,) = self._add_runtime([built], {built.name: handler} if handler else {})
        return added

    def _add_runtime(
        self, built: Sequence[Tool], handlers: Mapping[str, Handler], *, kit: str | None = None
    ) -> tuple[Tool, ...]:
        """Register runtime tools as one batch (all or nothing); the view is extended."""
        self._check_reserved(built, loading=kit)
        self._check_templates(built)
        keyed = {t.key: handlers[t.name] for t in built if handlers.get(t.name) is not None}
        added = self.registry.add(list(built), handlers=keyed)
        self._additions.extend(added)
        if self._view is not None and not self._prefix_dirty:
            self._view = extend_view(
                self._view,
                self.registry,
                self.policy,
                list(added),
                render=self._render,
                namespaces=tuple(self._namespaces.values()),
            )
            self._last_view = self._view
        else:
            self._view = None  # rebuilt on next use; the prefix is carried over
        return added

    @property
    def pending_additions(self) -> tuple[Tool, ...]:
        """Runtime tools added and not yet taken with `take_tool_additions`."""
        return tuple(self._additions)

    def drop_additions(self, keep: int) -> None:
        """Forget the additions after the first `keep` (loads the host need not announce)."""
        del self._additions[keep:]

    def take_tool_additions(self) -> tuple[tuple[str, Tool], ...]:
        """Runtime tools added since the last call, as (wire name, tool); clears the list."""
        out = tuple((self.registry.wire_name_for(t), t) for t in self._additions)
        self._additions.clear()
        return out

    def set_policy(self, policy: ExposurePolicy) -> None:
        """Apply a new exposure policy (the next view rebuilds its prefix)."""
        self.policy = policy
        self.refresh_view(prefix=True)

    def refresh_view(self, *, prefix: bool) -> None:
        """Tools or exposure changed: rebuild the view on next use, the prefix if `prefix`."""
        self._view = None
        self._prefix_dirty = self._prefix_dirty or prefix

    def _render(self, tool: Tool) -> str:
        return render_template(
            tool.description,
            tool=tool.name,
            variables=self._template_vars,
            fragments=self._fragments,
        )

    def view(self) -> SessionView:
        """The frozen tool view, rebuilt only after registration changes.

        Descriptions that are templates are rendered once and kept; after runtime-only
        additions the cached prefix (tools array, directory) is carried over unchanged.
        """
        if self._view is None:
            frozen = None if self._prefix_dirty else self._last_view
            self._view = build_view(
                self.registry,
                self.policy,
                self.config,
                render=self._render,
                frozen=frozen,
                namespaces=tuple(self._namespaces.values()),
                toolkits=tuple(self._toolkits.values()),
                skills=tuple(self._skills.values()),
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
        tool = self.registry.get((server or "builtin", name))
        return self.registry.wire_name_for(tool)
