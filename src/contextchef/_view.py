"""`SessionView`: the frozen, per-tool-set view that every compile reads (deferred layer).

Built once per change of the tool set or exposure policy, never per turn: wire names,
exposure, rendered descriptions, the deferred directory, the meta-tools and the search
index. Compiling reads bytes from here, so two compiles of the same state are identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contextchef._deferred import (
    DEFER_EXECUTE,
    TOOL_SEARCH,
    DeferredConfig,
    DirectoryEntry,
    defer_execute_tool,
    render_directory,
    tool_search_tool,
)
from contextchef._exposure import Exposure, ExposurePolicy
from contextchef._json import JsonValue
from contextchef._search import ToolIndex
from contextchef._tool import Tool

if TYPE_CHECKING:
    from contextchef._registry import Registry

__all__ = ["META_TOOLS", "CompiledTool", "SessionView", "build_view", "model_description"]

META_TOOLS = (TOOL_SEARCH, DEFER_EXECUTE)


@dataclass(frozen=True, kw_only=True)
class CompiledTool:
    """A tool as the model sees it, ready for any adapter.

    Attributes:
        name: Provider-legal wire name.
        description: Model-facing description (origin shown for grouped tools).
        input_schema: Canonical JSON Schema of the arguments.
        strict: The author asked for strict mode (adapters send it only where the
            provider supports it and the schema can be made strict).
        defer_loading: The tool is deferred (only adapters with native tool search emit
            it; others never receive deferred tools).
    """

    name: str
    description: str
    input_schema: Mapping[str, JsonValue]
    strict: bool = False
    defer_loading: bool = False


def model_description(tool: Tool) -> str:
    """The description the model sees: grouped tools say which server they belong to."""
    if tool.server:
        return f"[{tool.server}] {tool.description}".rstrip()
    return tool.description


def _compiled(tool: Tool, wire: str, *, deferred: bool = False) -> CompiledTool:
    return CompiledTool(
        name=wire,
        description=model_description(tool),
        input_schema=tool.input_schema,
        strict=bool(tool.strict),
        defer_loading=deferred,
    )


@dataclass(frozen=True, kw_only=True)
class SessionView:
    """Everything a compile needs to know about tools, frozen.

    Attributes:
        resident: Tools in the ``tools`` array, in order: direct tools (registry order),
            then ``tool_search`` and ``defer_execute`` when anything is deferred.
        flat: Every registered tool as a direct tool (the no-disclosure baseline).
        direct: Registered tools that are resident.
        deferred: Registered tools reachable only through the meta-tools.
        exposure: (origin, name) -> exposure.
        wire_names: (origin, name) -> wire name.
        directory: The deferred-name directory text (``""`` when nothing is deferred).
        index: Search index over direct and deferred tools.
        fingerprint: Registry fingerprint the view was built from.
        meta_tools: Active meta-tools by name.
        by_wire_name: Wire name -> registered tool.
        by_own_name: A tool's own name -> every registered tool with it.
    """

    resident: tuple[CompiledTool, ...]
    flat: tuple[CompiledTool, ...]
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

    def is_meta(self, wire_name: str) -> bool:
        """True for ``tool_search`` / ``defer_execute`` when they are active."""
        return wire_name in self.meta_tools

    def lookup(self, name: str) -> Tool | None:
        """The registered tool a model-written name means, or None (never a guess).

        Accepts a wire name, or a tool's own name when exactly one tool has it.
        """
        tool = self.by_wire_name.get(name)
        if tool is not None:
            return tool
        own = self.by_own_name.get(name, ())
        return own[0] if len(own) == 1 else None


def build_view(registry: Registry, policy: ExposurePolicy, config: DeferredConfig) -> SessionView:
    """Build the frozen view of `registry` under `policy`."""
    tools = registry.tools
    wire = {t.key: registry.wire_name_for(t) for t in tools}
    exposure = {t.key: policy.exposure_of(t, wire[t.key]) for t in tools}
    direct = tuple(t for t in tools if exposure[t.key] == "direct")
    deferred = tuple(t for t in tools if exposure[t.key] == "deferred")
    resident = [_compiled(t, wire[t.key]) for t in direct]
    meta: dict[str, Tool] = {}
    directory = ""
    if deferred:
        entries = [DirectoryEntry(wire_name=wire[t.key], server=t.server) for t in deferred]
        # Servers with deferred tools, and servers with no tools at all (so the model
        # knows they exist); servers whose tools are all resident need no group.
        has_tools = {t.server for t in tools}
        has_deferred = {t.server for t in deferred}
        descriptions = {
            s: registry.server_description(s)
            for s in registry.servers
            if s in has_deferred or s not in has_tools
        }
        directory = render_directory(entries, descriptions, config)
        meta = {TOOL_SEARCH: tool_search_tool(directory), DEFER_EXECUTE: defer_execute_tool()}
        resident += [_compiled(t, t.name) for t in meta.values()]
    own: dict[str, list[Tool]] = {}
    for t in tools:
        own.setdefault(t.name, []).append(t)
    return SessionView(
        resident=tuple(resident),
        flat=tuple(_compiled(t, wire[t.key]) for t in tools),
        direct=direct,
        deferred=deferred,
        exposure=exposure,
        wire_names=wire,
        directory=directory,
        index=ToolIndex([(t, wire[t.key]) for t in tools]),
        config=config,
        fingerprint=registry.fingerprint(),
        meta_tools=meta,
        by_wire_name={wire[t.key]: t for t in tools},
        by_own_name={name: tuple(ts) for name, ts in own.items()},
    )
