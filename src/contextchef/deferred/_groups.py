"""Namespaces and lazy toolkits: their model-facing tools and text (deferred layer).

Two ways to keep a large catalog out of the ``tools`` array while keeping the array
stable from turn to turn:

* a **namespace** groups core tools under ONE tool whose ``action`` enum lists the
  sub-tools (sorted wire names) and whose ``args`` object carries the sub-tool's
  arguments; the sub-tools' documentation is rendered into its description. One level
  only: a namespace never contains a namespace.
* a **toolkit** is a named bundle of long-tail tools, listed by name and description in
  a directory block (``<available_toolkits>``) the host puts into the system prompt. The
  model loads one with the ``load_toolkit`` tool, whose schema is static (no enum that
  follows the registered toolkits), so registering toolkits never touches its bytes.

Everything rendered here is a pure function of its inputs, sorted by name, so two
sessions with the same groups produce the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextchef._errors import CatalogFormatError, NestedNamespaceError, UsageError, shown
from contextchef._json import JsonValue, canonical_dumps, is_unicode
from contextchef.deferred._skills import SkillReveal, reveal_sentence
from contextchef.tools._property_keys import wire_keys
from contextchef.tools._registry import Handler
from contextchef.tools._schema import summarize_parameters
from contextchef.tools._tool import Tool, ToolAnnotations

__all__ = [
    "LOAD_TOOLKIT",
    "Builder",
    "GroupLike",
    "Namespace",
    "NamespaceView",
    "Toolkit",
    "load_toolkit_tool",
    "namespace_tool",
    "near_actions",
    "parse_group",
    "render_toolkit_directory",
    "render_toolkit_load",
]

LOAD_TOOLKIT = "load_toolkit"
"""Name of the tool the model calls to load a toolkit."""


@dataclass(frozen=True, kw_only=True)
class Namespace:
    """A group of core tools compiled into one stable tool.

    Attributes:
        name: The namespace tool's name (a provider-legal tool name, e.g. ``file_ops``).
        description: What the group is for; first line of the tool's description.
        tools: The sub-tools (registered as builtin tools, reachable only through the
            namespace).
    """

    name: str
    description: str = ""
    tools: tuple[Tool, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Toolkit:
    """A bundle of long-tail tools the model loads on demand with ``load_toolkit``.

    Attributes:
        name: The toolkit's name as listed in the directory (e.g. ``Weather``).
        description: One line shown in the directory.
        tools: Its tools; registered as runtime (deferred) tools when it is loaded.
    """

    name: str
    description: str = ""
    tools: tuple[Tool, ...] = ()


@dataclass(frozen=True, kw_only=True)
class NamespaceView:
    """A namespace as one compile sees it.

    Attributes:
        name: The namespace tool's name.
        tool: The compiled namespace tool (enum of the actions visible in the mode).
        members: Action (sub-tool wire name) -> sub-tool, including actions hidden by
            the mode (the gate reports those as outside the mode, not as unknown).
        actions: The actions visible in the current mode, sorted.
    """

    name: str
    tool: Tool
    members: Mapping[str, Tool] = field(default_factory=dict)
    actions: tuple[str, ...] = ()


def near_actions(
    namespaces: Mapping[str, NamespaceView], name: str, *, limit: int, cutoff: float = 0.8
) -> list[tuple[float, str, str]]:
    """(score, namespace, action) of the visible actions spelled almost like `name`.

    The rule of `contextchef.search.ToolIndex.near_names`, over the namespaces' actions
    (sub-tools are not in the index: they are reached only through their namespace): the
    action (the sub-tool's wire name) or the sub-tool's own name, lower-cased, scored by
    rapidfuzz's normalized Indel similarity (>= `cutoff`); best first, then by namespace
    and action name; at most `limit`.
    """
    from rapidfuzz import fuzz

    low, found = name.lower(), []
    for ns in namespaces.values():
        for action in ns.actions:
            spellings = {action.lower(), ns.members[action].name.lower()}
            score = max(fuzz.ratio(low, s) for s in spellings) / 100
            if score >= cutoff:
                found.append((-score, ns.name, action))
    return [(-neg, ns, action) for neg, ns, action in sorted(found)[:limit]]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _action_doc(action: str, tool: Tool, description: str) -> list[str]:
    head = f"- {action}: {_one_line(description)}".rstrip()
    return [
        head.rstrip(":"),
        *(f"  {line}" for line in summarize_parameters(wire_keys(tool).schema)),
    ]


def namespace_tool(namespace: Namespace, actions: Sequence[tuple[str, Tool, str]]) -> Tool:
    """The one tool a namespace compiles to.

    Args:
        namespace: The group.
        actions: (action name, sub-tool, rendered description) of the visible sub-tools.

    Returns:
        A tool named after the namespace with a required ``action`` (enum of the sorted
        action names) and ``args`` (object); the description lists every action with
        its parameters, sorted by action.
    """
    ordered = sorted(actions, key=lambda a: a[0])
    names: list[JsonValue] = [a for a, _, _ in ordered]
    lines = [_one_line(namespace.description), ""] if namespace.description.strip() else []
    lines += [
        'Call with {"action": <one of the actions below>, "args": {<that action\'s arguments>}}.',
        "",
        "Actions:",
    ]
    for action, tool, description in ordered:
        lines += _action_doc(action, tool, description)
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": names, "description": "The action to run."},
            "args": {
                "type": "object",
                "description": "Arguments of the chosen action, as listed in the description.",
            },
        },
        "required": ["action", "args"],
        "additionalProperties": False,
    }
    return Tool(name=namespace.name, description="\n".join(lines), input_schema=schema)


_LOADER_DESCRIPTION = (
    "Load a toolkit listed in <available_toolkits> in the system prompt. Pass its exact "
    "name; the result lists the toolkit's tools with their input schemas and says how to "
    "call them. Load a toolkit only when the task needs it."
)

_LOADER_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "toolkit_name": {
            "type": "string",
            "minLength": 1,
            "description": "Exact name of a toolkit from <available_toolkits>.",
        }
    },
    "required": ["toolkit_name"],
    "additionalProperties": False,
}


def load_toolkit_tool() -> Tool:
    """The ``load_toolkit`` tool: static description and schema (no live enum)."""
    return Tool(
        name=LOAD_TOOLKIT,
        description=_LOADER_DESCRIPTION,
        input_schema=_LOADER_SCHEMA,
        annotations=ToolAnnotations(read_only=True),
    )


def _xml_escape(text: str, *, attribute: bool = False) -> str:
    out = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return out.replace('"', "&quot;") if attribute else out


def render_toolkit_directory(toolkits: Iterable[Toolkit]) -> str:
    """The directory block for the system prompt.

    Layout: ``<available_toolkits>``, one line per toolkit sorted by name,
    ``<toolkit name="NAME">DESCRIPTION</toolkit>`` (description on one line; ``&``,
    ``<``, ``>`` and, in the name, ``"`` escaped), then ``</available_toolkits>``.
    ``""`` when there are no toolkits.
    """
    ordered = sorted(toolkits, key=lambda t: t.name)
    if not ordered:
        return ""
    lines = ["<available_toolkits>"]
    for kit in ordered:
        name = _xml_escape(kit.name, attribute=True)
        lines.append(f'<toolkit name="{name}">{_xml_escape(_one_line(kit.description))}</toolkit>')
    lines.append("</available_toolkits>")
    return "\n".join(lines)


def render_toolkit_load(
    toolkit: Toolkit, wire_names: Sequence[str], *, reveal: SkillReveal = "defer_execute"
) -> str:
    """The text ``load_toolkit`` returns: each tool's name, description and input schema.

    Args:
        toolkit: The loaded toolkit.
        wire_names: The wire names of its tools, in the order of ``toolkit.tools``.
        reveal: How its tools reach the model (`SkillReveal`, as for a skill's):
            ``available`` (call them by name: every schema is sent, the next request
            reveals them, or the result itself reveals them by reference),
            ``tool_search`` (reveal them with our ``tool_search`` first),
            ``provider_search`` (find them with the provider's search first) or
            ``defer_execute`` (call them through it).
    """
    how = {
        "available": "Call them directly by name.",
        "defer_execute": 'Call them with defer_execute({"tool_name": <name>, "params": {...}}).',
    }.get(reveal) or reveal_sentence(sorted(wire_names), reveal)
    count = f"{len(wire_names)} tool" + ("" if len(wire_names) == 1 else "s")
    lines = [f'Loaded toolkit "{toolkit.name}" ({count}). {how}']
    pairs = sorted(zip(wire_names, toolkit.tools, strict=True), key=lambda p: p[0])
    for wire, tool in pairs:
        lines += [
            "",
            f"## {wire}",
            _one_line(tool.description) or "(no description)",
            f"Input schema: {canonical_dumps(wire_keys(tool).schema)}",
        ]
    return "\n".join(lines)


GroupLike = Namespace | Toolkit | Mapping[str, Any]
"""A namespace or toolkit: the dataclass, or ``{"name", "description", "tools": [...]}``."""

# -- parsing group inputs -------------------------------------------------------------------

Builder = Callable[[Sequence[Any]], tuple[list[Tool], dict[str, Handler]]]
"""Turns tool inputs (dicts, `Tool` values, functions) into tools and their handlers."""


def _is_group(item: object) -> bool:
    return isinstance(item, (Namespace, Toolkit)) or (
        isinstance(item, Mapping) and "tools" in item and "input_schema" not in item
    )


def _properties_shorthand(item: Mapping[str, Any]) -> Mapping[str, Any]:
    """``{"parameters": {"path": {"type": "string"}}}`` -> a full object schema.

    A ``parameters`` mapping whose ``type`` is not ``"object"`` and whose values are all
    objects is a bare properties map; every property it lists is required.
    """
    params = item.get("parameters")
    if not isinstance(params, Mapping) or params.get("type") == "object":
        return item
    if not all(isinstance(v, Mapping) for v in params.values()):
        return item
    schema = {"type": "object", "properties": dict(params), "required": list(params)}
    return {**item, "parameters": schema}


def parse_group(item: GroupLike, *, kind: str, build: Builder) -> tuple[Any, dict[str, Handler]]:
    """Normalize one namespace or toolkit input.

    Args:
        item: The group, as a `Namespace` / `Toolkit` or a dict.
        kind: ``"namespace"`` or ``"toolkit"``.
        build: Builds the group's tools.

    Returns:
        The `Namespace` or `Toolkit` with built tools, and handlers by tool name.

    Raises:
        NestedNamespaceError: A tool of the group is itself a group (one level only).
        UsageError: Missing or empty name, or no tools.
    """
    name: Any
    description: Any
    raw: Any
    if isinstance(item, (Namespace, Toolkit)):
        name, description, raw = item.name, item.description, list(item.tools)
    elif isinstance(item, Mapping):
        name, description = item.get("name"), item.get("description", "")
        raw = item.get("tools")
    else:
        raise UsageError(f"a {kind} must be a dict or a {kind.title()}, got {type(item).__name__}")
    if not isinstance(name, str) or not name.strip() or not isinstance(description, str):
        raise UsageError(
            f"a {kind} needs a non-empty string 'name' and a string 'description'; got name "
            f"{shown(name, 80)} and a {type(description).__name__} description"
        )
    if not is_unicode(name) or not is_unicode(description):
        raise UsageError(
            f"{kind} {shown(name, 80)}: name and description must be valid Unicode text"
        )
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence) or not raw:
        raise UsageError(f"{kind} {shown(name)} needs a non-empty list of 'tools'")
    for entry in raw:
        if _is_group(entry):
            inner = entry.name if isinstance(entry, (Namespace, Toolkit)) else entry.get("name")
            raise NestedNamespaceError(
                f"{kind} {shown(name)} contains the group {shown(inner)}; groups nest one "
                f"level only "
                f"(a {kind} holds tools). Register {shown(inner)} as its own {kind} instead.",
                tool=inner if isinstance(inner, str) else shown(inner),
                namespace=name,
            )
    try:
        tools, handlers = build(
            [_properties_shorthand(e) if isinstance(e, Mapping) else e for e in raw]
        )
    except (CatalogFormatError, UsageError) as exc:
        if type(exc) not in (CatalogFormatError, UsageError):  # these name their tool
            raise
        raise type(exc)(f"{kind} {shown(name)}: {exc}") from exc  # an entry named by index
    group_type = Namespace if kind == "namespace" else Toolkit
    return group_type(name=name, description=description, tools=tuple(tools)), handlers
