"""`SessionView`: the frozen, per-tool-set view that every compile reads (deferred layer).

Built once per change of the tool set or exposure policy, never per turn: wire names,
exposure, rendered descriptions, the deferred directory, the meta-tools and the search
index. Compiling reads bytes from here, so two compiles of the same state are identical.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contextchef._errors import UsageError, shown
from contextchef._overlay import layered
from contextchef.deferred._groups import (
    LOAD_TOOLKIT,
    Namespace,
    NamespaceView,
    Toolkit,
    load_toolkit_tool,
    namespace_tool,
    render_toolkit_directory,
)
from contextchef.deferred._meta import (
    DEFER_EXECUTE,
    TOOL_SEARCH,
    DeferredConfig,
    DirectoryEntry,
    defer_execute_tool,
    directory_overflow,
    render_directory,
    tool_search_tool,
)
from contextchef.deferred._sharing import (
    SharedView,
    shared_index,
    view_key,
    views,
)
from contextchef.deferred._skills import LOAD_SKILL, Skill, load_skill_tool, skill_lock_reason
from contextchef.exposure._policy import Exposure, ExposurePolicy, Mode
from contextchef.search._rankers import RankerConfig
from contextchef.tools._names import RESERVED_NAMES, wire_name
from contextchef.tools._property_keys import wire_keys
from contextchef.tools._tool import CompiledTool, Tool

logger = logging.getLogger("contextchef")

if TYPE_CHECKING:
    from contextchef.search._index import ToolIndex
    from contextchef.tools._registry import Registry

__all__ = [
    "META_TOOLS",
    "CompiledTool",
    "Renderer",
    "SessionView",
    "build_view",
    "extend_view",
    "model_description",
]

META_TOOLS = (TOOL_SEARCH, DEFER_EXECUTE)


def model_description(tool: Tool, description: str | None = None, wire: str | None = None) -> str:
    """The description the model sees: grouped tools say which server they belong to.

    A tool whose wire name does not end with its own name (letters no provider takes,
    such as CJK or ``.``, became ``_``; a long name was cut and hashed: `tools._names`)
    leads with its own name, ``<name>: <description>``, so the model still knows what
    ``ace______________ca4e722c`` is (as a renamed property's description leads with its
    real key: `tools._property_keys`).

    Args:
        tool: The tool.
        description: Its rendered description, when it is a template.
        wire: Its wire name, when known.
    """
    text = tool.description if description is None else description
    if wire is not None and not wire.endswith(tool.name):
        text = f"{tool.name}: {text}".rstrip()
    if tool.server:
        return f"[{tool.server}] {text}".rstrip()
    return text


def _compiled(tool: Tool, wire: str, description: str) -> CompiledTool:
    """The tool's definition as compiled, shared by every session that has it (immutable)."""

    def make() -> CompiledTool:
        return CompiledTool(
            name=wire,
            description=model_description(tool, description, wire),
            input_schema=wire_keys(tool).schema,
            strict=bool(tool.strict),
        )

    compiled: CompiledTool = tool._derive("compiled", (wire, description), make)
    return compiled


def _no_handler(tool: Tool) -> None:
    """A view built without a registry's handlers has none."""


@dataclass(frozen=True, kw_only=True)
class SessionView:
    """Everything a compile needs to know about tools, frozen.

    Attributes:
        resident: Tools in the ``tools`` array, in order: direct tools (registry order),
            namespace tools, ``load_toolkit`` and ``load_skill``, then ``tool_search`` and
            ``defer_execute`` when anything is deferred (library-owned tools excluded:
            see `library`).
        flat: Every visible registered tool as a direct tool (the no-disclosure
            baseline; library-owned tools excluded).
        library: The library-owned tools visible in the modes (memory, ``new_context``),
            which every strategy appends after its own tools.
        direct: Registered tools that are resident.
        deferred: Registered tools reachable only through the meta-tools (runtime
            tools included; they are searchable but not listed in the directory; so are
            the tools of skills, whatever the exposure policy says).
        exposure: (origin, name) -> exposure (``hidden`` outside the mode).
        wire_names: (origin, name) -> wire name.
        directory: The deferred-name directory text (``""`` when nothing is deferred).
        toolkit_directory: The ``<available_toolkits>`` block (`render_toolkit_directory`)
            of the toolkits with a tool the modes allow, like the tools the view lists
            (``""`` when there is none).
        index: Search index over direct and deferred tools.
        fingerprint: Registry fingerprint the view was built from.
        meta_tools: Active meta-tools by name.
        by_wire_name: Wire name -> registered tool.
        by_own_name: A tool's own name -> every registered tool with it.
        descriptions: (origin, name) -> rendered description of templated tools.
        mode: Name of the active mode (the pruning whitelist's when one is applied), or None.
        hidden_by: (origin, name) of a hidden tool -> the name of the mode excluding it.
        modes: The active modes (a tool is visible when all allow it), for tools that
            are not registered yet (a toolkit's, before it loads).
        namespaces: Namespace tool name -> the namespace (only namespaces with at least
            one action visible in the mode).
        namespace_of: (origin, name) of a namespace sub-tool -> its namespace's name.
        toolkits: Toolkit name -> toolkit (loadable with ``load_toolkit``).
        toolkit_loader: The ``load_toolkit`` tool when any toolkit is registered.
        skills: Skill name -> skill (its ``tools`` are wire names).
        skill_of: Wire name of a skill's tool -> the skills holding it, sorted; such a
            tool is neither listed, nor found, nor callable until one of them is loaded.
        skill_loader: The ``load_skill`` tool when any skill is registered.
        handler: The registry's handler lookup (a tool -> its Python callable, or None),
            which the gate asks what a function's parameter types refuse.
    """

    resident: tuple[CompiledTool, ...]
    flat: tuple[CompiledTool, ...]
    library: tuple[CompiledTool, ...] = ()
    flat_runtime: int = 0
    """How many runtime tools `flat` holds (they sit just before the namespace tools)."""
    flat_tail: int = 0
    """How many namespace tools, ``load_toolkit`` and ``load_skill`` end `flat`."""
    direct: tuple[Tool, ...]
    deferred: tuple[Tool, ...]
    exposure: Mapping[tuple[str, str], Exposure]
    wire_names: Mapping[tuple[str, str], str]
    directory: str
    index: ToolIndex
    config: DeferredConfig
    fingerprint: str
    meta_tools: Mapping[str, Tool] = field(default_factory=dict)
    by_wire_name: Mapping[str, Tool] = field(default_factory=dict)
    by_own_name: Mapping[str, tuple[Tool, ...]] = field(default_factory=dict)
    descriptions: Mapping[tuple[str, str], str] = field(default_factory=dict)
    mode: str | None = None
    hidden_by: Mapping[tuple[str, str], str] = field(default_factory=dict)
    modes: tuple[Mode, ...] = ()
    namespaces: Mapping[str, NamespaceView] = field(default_factory=dict)
    namespace_of: Mapping[tuple[str, str], str] = field(default_factory=dict)
    toolkits: Mapping[str, Toolkit] = field(default_factory=dict)
    toolkit_loader: Tool | None = None
    skills: Mapping[str, Skill] = field(default_factory=dict)
    skill_of: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    skill_loader: Tool | None = None
    toolkit_directory: str = ""
    handler: Callable[[Tool], object] = field(default=_no_handler, compare=False, repr=False)

    def wrapper(self, name: str) -> Tool | None:
        """The library tool (meta-tool, namespace, ``load_toolkit``, ``load_skill``) `name`."""
        if name in self.meta_tools:
            return self.meta_tools[name]
        if name in self.namespaces:
            return self.namespaces[name].tool
        if name == LOAD_SKILL:
            return self.skill_loader
        return self.toolkit_loader if name == LOAD_TOOLKIT else None

    def locked(self, loaded: frozenset[str]) -> frozenset[str]:
        """Wire names of the tools whose skills are none of `loaded` (skill names)."""
        return frozenset(w for w, owners in self.skill_of.items() if loaded.isdisjoint(owners))

    def skill_lock(self, wire: str, loaded: frozenset[str]) -> str | None:
        """Why the tool `wire` is out of reach until a skill loads, or None."""
        owners = self.skill_of.get(wire, ())
        return skill_lock_reason(wire, owners) if owners and loaded.isdisjoint(owners) else None

    @property
    def declared(self) -> tuple[CompiledTool, ...]:
        """The tools every request declares at least: `resident`, then `library`."""
        return self.resident + self.library

    @property
    def wrapper_names(self) -> frozenset[str]:
        """Names of our own wrapper tools: meta-tools, namespaces, ``load_toolkit``."""
        names = {*self.meta_tools, *self.namespaces}
        if self.toolkit_loader is not None:
            names.add(LOAD_TOOLKIT)
        return frozenset(names)

    def unavailable_reason(self, name: str) -> str | None:
        """Why a registered tool is not searchable now (hidden by the mode), else None."""
        tool = self.lookup(name)
        if tool is None or self.exposure.get(tool.key) != "hidden":
            return None
        return self.hidden_reason(tool)

    def hidden_reason(self, tool: Tool) -> str:
        """The denial text for a tool hidden by a mode."""
        mode = self.hidden_by.get(tool.key, self.mode)
        return f'Tool "{self.wire_names[tool.key]}" is not available in mode "{mode}".'

    def lookup(self, name: str) -> Tool | None:
        """The registered tool a model-written name means, or None (never a guess).

        Accepts a wire name, or a tool's own name when exactly one tool has it and it is
        not one of contextchef's own (`RESERVED_NAMES`: a bare ``load_toolkit`` means ours
        or nothing, never a server's tool of that name).
        """
        tool = self.by_wire_name.get(name)
        if tool is not None or name in RESERVED_NAMES:
            return tool
        own = self.by_own_name.get(name, ())
        return own[0] if len(own) == 1 else None


Renderer = Callable[[Tool], str]
"""Renders a templated tool's description (see `contextchef.tools._template`)."""


def build_view(
    registry: Registry,
    policy: ExposurePolicy,
    config: DeferredConfig,
    *,
    render: Renderer | None = None,
    frozen: SessionView | None = None,
    namespaces: Sequence[Namespace] = (),
    toolkits: Sequence[Toolkit] = (),
    skills: Sequence[Skill] = (),
) -> SessionView:
    """Build the frozen view of `registry` under `policy`.

    Args:
        registry: The tools (namespace sub-tools included).
        policy: Exposure configuration (defaults, patterns, mode).
        config: Deferred-loading limits.
        render: Renders templated descriptions; called once per templated tool.
        frozen: A previous view whose prefix (``resident`` and ``directory``) must be
            kept because only runtime tools were added since.
        namespaces: Namespaces; their sub-tools leave the direct/deferred sets and are
            reached through one namespace tool each.
        toolkits: Toolkits; any adds ``load_toolkit`` and the meta-tools (a loaded
            toolkit's tools are reached through ``defer_execute``).
        skills: Skills (their ``tools`` as wire names); any adds ``load_skill``. Their
            tools are deferred and left out of the directory.
    """
    key = (
        None
        if frozen is not None
        else view_key(registry, policy, config, namespaces, toolkits, skills)
    )
    if key is not None:
        hit = views.get(key)
        if hit is not None and hit.matches(registry, namespaces, toolkits, skills):
            shared: SessionView = hit.view
            return shared
    view = _build_view(registry, policy, config, render, frozen, namespaces, toolkits, skills)
    if key is not None:
        entry = SharedView(
            state=registry.shared_state,
            namespaces=tuple(namespaces),
            toolkits=tuple(toolkits),
            skills=tuple(skills),
            view=view,
        )
        view = views.setdefault(key, entry).view
    return view


def _build_view(
    registry: Registry,
    policy: ExposurePolicy,
    config: DeferredConfig,
    render: Renderer | None,
    frozen: SessionView | None,
    namespaces: Sequence[Namespace],
    toolkits: Sequence[Toolkit],
    skills: Sequence[Skill],
) -> SessionView:
    tools = registry.tools
    wire = {t.key: registry.wire_name_for(t) for t in tools}
    member_of = {t.key: ns.name for ns in namespaces for t in ns.tools}
    owners: dict[str, list[str]] = {}
    for skill in sorted(skills, key=lambda s: s.name):
        for name in skill.tools:
            owners.setdefault(name, []).append(skill.name)
    exposure = {
        t.key: _exposure(policy, t, wire[t.key], t.key in member_of, wire[t.key] in owners)
        for t in tools
    }
    visible = [t for t in tools if exposure[t.key] != "hidden"]
    descriptions = dict(frozen.descriptions) if frozen is not None else {}
    for t in visible:
        if t.template and t.key not in descriptions:
            if render is None:
                raise UsageError(
                    f"tool {shown(t.name)} has a templated description but no renderer"
                )
            descriptions[t.key] = render(t)
    text = {t.key: descriptions.get(t.key, t.description) for t in visible}
    library = [t for t in visible if t.source == "library"]
    free = [t for t in visible if t.key not in member_of and t.source != "library"]
    direct = tuple(t for t in free if exposure[t.key] == "direct")
    deferred = tuple(t for t in free if exposure[t.key] == "deferred")
    listed = [t for t in deferred if t.source != "runtime" and wire[t.key] not in owners]
    groups = _namespace_views(namespaces, wire, text)
    loader = load_toolkit_tool() if toolkits else None
    skill_loader = load_skill_tool(skills, config) if skills else None
    extra = [_compiled(g.tool, g.name, g.tool.description) for g in groups.values()]
    for wrapper in (loader, skill_loader):
        if wrapper is not None:
            extra.append(_compiled(wrapper, wrapper.name, wrapper.description))
    if frozen is not None and (frozen.meta_tools or not deferred):
        resident, directory, meta = frozen.resident, frozen.directory, dict(frozen.meta_tools)
    else:
        # A runtime tool needs the meta-tools even though the directory does not list it.
        need_meta = bool(deferred) or config.always_meta_tools or loader is not None
        resident, directory, meta = _prefix(
            registry, direct, listed, wire, text, config, need_meta, extra
        )
        overflow = directory_overflow(directory, sum(t.server is None for t in listed), config)
        if overflow:  # said once per directory rendered (views are shared)
            logger.warning("contextchef: %s", overflow)
    own: dict[str, list[Tool]] = {}
    for t in tools:
        own.setdefault(t.name, []).append(t)
    return SessionView(
        resident=resident,
        flat=tuple(_compiled(t, wire[t.key], text[t.key]) for t in free) + tuple(extra),
        flat_runtime=sum(1 for t in free if t.source == "runtime"),
        flat_tail=len(extra),
        library=tuple(_compiled(t, wire[t.key], text[t.key]) for t in library),
        direct=direct,
        deferred=deferred,
        exposure=exposure,
        wire_names=wire,
        directory=directory,
        index=_index(free, wire, text, frozen, config, registry.server_descriptions),
        config=config,
        fingerprint=registry.fingerprint(),
        meta_tools=meta,
        by_wire_name={wire[t.key]: t for t in tools},
        by_own_name={name: tuple(ts) for name, ts in own.items()},
        descriptions=descriptions,
        mode=policy.modes[-1].name if policy.modes else None,
        modes=policy.modes,
        hidden_by={
            t.key: m.name
            for t in tools
            if exposure[t.key] == "hidden" and (m := policy.excluded_by(t, wire[t.key]))
        },
        namespaces=groups,
        namespace_of=member_of,
        toolkits={k.name: k for k in toolkits},
        toolkit_loader=loader,
        skills={s.name: s for s in sorted(skills, key=lambda s: s.name)},
        skill_of={name: tuple(names) for name, names in sorted(owners.items())},
        skill_loader=skill_loader,
        toolkit_directory=render_toolkit_directory(k for k in toolkits if kit_members(k, policy)),
        handler=registry.handler,
    )


def kit_members(kit: Toolkit, policy: ExposurePolicy | Sequence[Mode]) -> list[tuple[str, Tool]]:
    """(wire name once loaded, tool) of `kit`'s tools the modes allow, in the kit's order."""
    modes = policy.modes if isinstance(policy, ExposurePolicy) else policy
    named = [(wire_name("runtime", t.name, server=None), t) for t in kit.tools]
    return [
        (w, t)
        for w, t in named
        if all(m.allows(t.replace(source="runtime", server=None), w) for m in modes)
    ]


def _exposure(policy: ExposurePolicy, tool: Tool, wire: str, member: bool, skill: bool) -> Exposure:
    """A tool's exposure in the view.

    A namespace sub-tool is hidden (outside the mode) or direct (via its namespace); a
    skill's tool is hidden or deferred (reached once its skill is loaded).
    """
    exposure = policy.exposure_of(tool, wire)
    if exposure == "hidden" or not (member or skill):
        return exposure
    return "direct" if member else "deferred"


def _namespace_views(
    namespaces: Sequence[Namespace],
    wire: Mapping[tuple[str, str], str],
    text: Mapping[tuple[str, str], str],
) -> dict[str, NamespaceView]:
    """One view per namespace with a visible action, sorted by namespace name."""
    out: dict[str, NamespaceView] = {}
    for ns in sorted(namespaces, key=lambda n: n.name):
        actions = [(wire[t.key], t, text[t.key]) for t in ns.tools if t.key in text]
        if not actions:
            continue  # every action is outside the mode: the namespace disappears
        out[ns.name] = NamespaceView(
            name=ns.name,
            tool=namespace_tool(ns, actions),
            members={wire[t.key]: t for t in ns.tools},
            actions=tuple(sorted(a for a, _, _ in actions)),
        )
    return out


def extend_view(
    view: SessionView,
    registry: Registry,
    policy: ExposurePolicy,
    added: Sequence[Tool],
    *,
    render: Renderer | None = None,
    namespaces: Sequence[Namespace] = (),
) -> SessionView:
    """The view after runtime tools were added: same prefix, same index plus the new ones.

    Costs O(new tools) (the maps are overlays on the previous view's), so a runtime
    tool is searchable at once even in a session of thousands of tools. Falls back to
    `build_view` when the meta-tools are missing (nothing was deferred before) and so the
    prefix must change; `namespaces` are the session's namespaces, needed for that rebuild.
    """
    # overlays on the previous maps: O(new tools), never a copy of the shared ones
    wire = layered(view.wire_names, {})
    exposure = layered(view.exposure, {})
    descriptions = layered(view.descriptions, {})
    by_wire = layered(view.by_wire_name, {})
    own = layered(view.by_own_name, {})
    new_deferred: list[Tool] = []
    for tool in added:
        wire[tool.key] = registry.wire_name_for(tool)
        exposure[tool.key] = policy.exposure_of(tool, wire[tool.key])
        by_wire[wire[tool.key]] = tool
        own[tool.name] = (*own.get(tool.name, ()), tool)
        if exposure[tool.key] == "deferred":
            if tool.template:
                if render is None:
                    raise UsageError(f"tool {shown(tool.name)} has a templated description")
                descriptions[tool.key] = render(tool)
            new_deferred.append(tool)
    if new_deferred and not view.meta_tools:
        return build_view(
            registry,
            policy,
            view.config,
            render=render,
            namespaces=namespaces,
            toolkits=tuple(view.toolkits.values()),
            skills=tuple(view.skills.values()),
        )
    entries = [
        (_searchable(t, descriptions.get(t.key, t.description)), wire[t.key]) for t in new_deferred
    ]
    new = [_compiled(t, w, descriptions.get(t.key, t.description)) for t, w in entries]
    return dataclasses.replace(
        view,
        flat=_with_runtime(view, new, by_wire),
        flat_runtime=view.flat_runtime + len(new),
        deferred=view.deferred + tuple(new_deferred),
        exposure=exposure,
        wire_names=wire,
        index=view.index.extended(entries) if entries else view.index,
        fingerprint=registry.fingerprint(),
        by_wire_name=by_wire,
        by_own_name=own,
        descriptions=descriptions,
    )


def _with_runtime(
    view: SessionView, new: Sequence[CompiledTool], by_wire: Mapping[str, Tool]
) -> tuple[CompiledTool, ...]:
    """`view.flat` with `new` runtime tools where a rebuild would put them.

    Registry order: runtime tools by own name, after every other registered tool and
    before the namespace tools, so a snapshot restore or a rebuild gives the same bytes.
    """
    cut = len(view.flat) - view.flat_tail
    start = cut - view.flat_runtime
    runtime = sorted([*view.flat[start:cut], *new], key=lambda c: by_wire[c.name].name)
    return view.flat[:start] + tuple(runtime) + view.flat[cut:]


def _searchable(tool: Tool, description: str) -> Tool:
    """The tool as search sees it: templated descriptions already rendered."""
    return tool.replace(description=description, template=False) if tool.template else tool


def _index(
    visible: Sequence[Tool],
    wire: Mapping[tuple[str, str], str],
    text: Mapping[tuple[str, str], str],
    frozen: SessionView | None,
    config: DeferredConfig,
    servers: Sequence[tuple[str, str]],
) -> ToolIndex:
    """Search index; after runtime-only additions the previous index is extended.

    A tool whose definition was replaced (`Registry.replace`) makes a new index. A
    two-level ranker also reads the `servers`' descriptions (its group documents).
    """
    entries = [(_searchable(t, text[t.key]), wire[t.key]) for t in visible]
    ranker = RankerConfig.of(config.ranker)
    if frozen is None or frozen.index.ranker != ranker or _replaced(frozen.index, entries):
        return shared_index(entries, ranker, dict(servers) if ranker.group_weight > 0 else None)
    new = [(t, w) for t, w in entries if w not in frozen.index]
    return frozen.index.extended(new) if new else frozen.index


def _replaced(index: ToolIndex, entries: Sequence[tuple[Tool, str]]) -> bool:
    """Whether `index` holds another definition of one of `entries`' tools."""
    for tool, wire in entries:
        held = index.tool(wire)
        if held is not None and held is not tool and held != tool:
            return True
    return False


def _prefix(
    registry: Registry,
    direct: Sequence[Tool],
    listed: Sequence[Tool],
    wire: Mapping[tuple[str, str], str],
    text: Mapping[tuple[str, str], str],
    config: DeferredConfig,
    need_meta: bool,
    extra: Sequence[CompiledTool] = (),
) -> tuple[tuple[CompiledTool, ...], str, dict[str, Tool]]:
    """The cached part: resident tools, namespaces + loader, directory and meta-tools."""
    resident = [_compiled(t, wire[t.key], text[t.key]) for t in direct] + list(extra)
    if not need_meta:
        return tuple(resident), "", {}
    entries = [
        DirectoryEntry(
            wire_name=wire[t.key],
            server=t.server,
            name=None if wire[t.key].endswith(t.name) else t.name,
        )
        for t in listed
    ]
    # Servers with listed deferred tools, and servers with no tools at all (so the model
    # knows they exist); servers whose tools are all resident need no group.
    has_tools = {t.server for t in registry.tools}
    has_listed = {t.server for t in listed}
    headers = {
        s: registry.server_description(s)
        for s in registry.servers
        if s in has_listed or s not in has_tools
    }
    directory = render_directory(entries, headers, config)
    meta = {TOOL_SEARCH: tool_search_tool(directory), DEFER_EXECUTE: defer_execute_tool()}
    resident += [_compiled(t, t.name, t.description) for t in meta.values()]
    return tuple(resident), directory, meta
