"""`Pruner`: per-task tool pruning, namespaces and lazy toolkits (facade layer).

Registration and routing are decoupled: tools are registered once, and the pruner
decides which of them the model sees for a task, routes namespace calls to their real
sub-tool and loads toolkits on demand.

Pruning (`Pruner.prune_by_task`, `Pruner.allow_only`,
`Pruner.prune_by_task_and_allowlist`) is a pure query over the registered tools
(runtime tools excluded; namespace sub-tools included; only tools visible in the
session's own mode). Its `PruneResult` changes nothing until you pass it to
`Pruner.apply`, which installs it as a structural whitelist — a `Mode` named
``pruned`` that keeps the result's tools plus any runtime tool (such as a loaded
toolkit's): every other tool leaves the payload, the directory and search, and the gate
rejects it with ``Tool "x" is not available in mode "pruned".``. Applying changes the
``tools`` array by design (like `ContextChef.set_mode`); `Pruner.clear` restores the
mode that was active before. Blocking (`Pruner.set_blocked_tools`) is the cache-safe
alternative: the array stays byte-identical and only the gate refuses.

Task matching is case-insensitive (Unicode case folding) on a tool's own name or any of
its tags. A name or tag is split into words on every character that is not a letter or
digit (so ``read_file`` is the words ``read``, ``file``); it matches when those words
occur in the task in order, separated only by non-letter/digit characters, and the match
is on word boundaries. A **word boundary** is the start or end of the task, or a
character that is not a letter or digit — except that CJK ideographs, kana and hangul
never extend a word (those scripts do not separate words with spaces). So the tag
``file`` matches "Read the auth.ts file", "file:" and "read_file" but not "files" or
"profile"; the name ``read_file`` matches "read file", "Read-File" and "read_file"; the
tag ``文件`` matches "读取文件". Tools with no tags are always kept by task matching.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from contextchef._errors import (
    MalformedArgumentsError,
    NestedNamespaceError,
    UnknownActionError,
    UnknownToolError,
    UsageError,
)
from contextchef._json import JsonValue
from contextchef.deferred._groups import LOAD_TOOLKIT, Namespace, Toolkit, render_toolkit_directory
from contextchef.exposure._policy import Mode
from contextchef.history._messages import ToolCall
from contextchef.tools._registry import Handler
from contextchef.tools._tool import CompiledTool, Tool

if TYPE_CHECKING:
    from contextchef.session._chef import ContextChef

__all__ = [
    "CallLike",
    "CompiledGroups",
    "GroupLike",
    "PruneResult",
    "Pruner",
    "ResolvedAction",
    "parse_group",
    "task_matches",
]

PRUNED_MODE = "pruned"
"""Name of the mode `Pruner.apply` installs (shown in the gate's denials)."""

CallLike = ToolCall | Mapping[str, Any]
"""A model's tool call: a `ToolCall`, a Chat Completions ``tool_calls`` entry
(``{"function": {"name", "arguments"}}``), or ``{"name", "arguments" | "input"}``."""

GroupLike = Namespace | Toolkit | Mapping[str, Any]
"""A namespace or toolkit: the dataclass, or ``{"name", "description", "tools": [...]}``."""


@dataclass(frozen=True, kw_only=True)
class PruneResult:
    """Which registered tools a pruning query keeps.

    Attributes:
        tools: The kept tools, in registry order.
        removed: Wire names of the candidates not kept, in registry order.
        kept: ``len(tools)``.
        total: How many tools were candidates (registered, not runtime, visible in the
            session's own mode).
    """

    tools: tuple[Tool, ...]
    removed: tuple[str, ...]
    kept: int
    total: int


class ResolvedAction(NamedTuple):
    """A namespace call routed to its sub-tool.

    Attributes:
        namespace: The namespace called.
        tool_name: The sub-tool's wire name (its own name when that is provider-legal).
        args: The sub-tool's arguments (not yet validated: use `check_tool_call`).
    """

    namespace: str
    tool_name: str
    args: dict[str, JsonValue]


class CompiledGroups(NamedTuple):
    """The two-layer tools and the toolkit directory.

    Attributes:
        tools: One tool per namespace (sorted by name), then ``load_toolkit`` when any
            toolkit is registered. Stable across turns and blocklist changes.
        directory_xml: The ``<available_toolkits>`` block for the system prompt (``""``
            without toolkits).
    """

    tools: tuple[CompiledTool, ...]
    directory_xml: str


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_SPLIT = re.compile(r"[\W_]+")


def _word_char(ch: str) -> bool:
    return ch.isalnum() and not _CJK.match(ch)


def _phrase(text: str) -> re.Pattern[str] | None:
    """A name or tag as a pattern: its words in order, any separators between them."""
    words = [w for w in _SPLIT.split(text.casefold()) if w]
    return re.compile(r"[\W_]+".join(map(re.escape, words))) if words else None


def _occurs(pattern: re.Pattern[str], task: str) -> bool:
    for found in pattern.finditer(task):
        start, end = found.span()
        before = task[start - 1] if start else ""
        after = task[end] if end < len(task) else ""
        if not (before and _word_char(before)) and not (after and _word_char(after)):
            return True
    return False


def task_matches(tool: Tool, task: str) -> bool:
    """Whether pruning by `task` keeps `tool` (see the module docstring for the rules)."""
    if not tool.tags:
        return True
    text = task.casefold()
    for phrase in (tool.name, *tool.tags):
        pattern = _phrase(phrase)
        if pattern is not None and _occurs(pattern, text):
            return True
    return False


# -- input normalization ---------------------------------------------------------------------

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
        raise UsageError(f"a {kind} needs a non-empty string 'name' and a string 'description'")
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence) or not raw:
        raise UsageError(f"{kind} {name!r} needs a non-empty list of 'tools'")
    for entry in raw:
        if _is_group(entry):
            inner = entry.name if isinstance(entry, (Namespace, Toolkit)) else entry.get("name")
            raise NestedNamespaceError(
                f"{kind} {name!r} contains the group {inner!r}; groups nest one level only "
                f"(a {kind} holds tools). Register {inner!r} as its own {kind} instead.",
                tool=str(inner),
                namespace=name,
            )
    tools, handlers = build(
        [_properties_shorthand(e) if isinstance(e, Mapping) else e for e in raw]
    )
    group_type = Namespace if kind == "namespace" else Toolkit
    return group_type(name=name, description=description, tools=tuple(tools)), handlers


def _call_parts(call: CallLike) -> tuple[str, Any]:
    """(name, raw arguments) of a call in any accepted shape."""
    if isinstance(call, ToolCall):
        return call.name, call.arguments
    if isinstance(call, Mapping):
        inner = call.get("function")
        body: Mapping[str, Any] = inner if isinstance(inner, Mapping) else call
        name = body.get("name")
        if isinstance(name, str):
            for key in ("arguments", "input", "args"):
                if key in body:
                    return name, body[key]
            return name, {}
    raise UsageError(
        f"expected a ToolCall or a tool-call dict with a 'name', got {type(call).__name__}"
    )


def _json_object(raw: Any, what: str) -> dict[str, JsonValue]:
    """A JSON-text or mapping argument as a dict."""
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw.strip() or "{}")
        except json.JSONDecodeError as exc:
            raise MalformedArgumentsError(
                f"{what} are not valid JSON ({exc.msg}); expected a JSON object", raw=raw
            ) from exc
    if not isinstance(value, Mapping):
        raise MalformedArgumentsError(
            f"{what} must be a JSON object, got {type(value).__name__}", raw=str(raw)
        )
    return dict(value)


# -- the pruner ------------------------------------------------------------------------------


class Pruner:
    """Tool management for one session (``chef.pruner``).

    See the module docstring for pruning semantics and word boundaries.
    """

    def __init__(self, chef: ContextChef) -> None:
        self._chef = chef

    # -- pruning -----------------------------------------------------------------------------

    def _candidates(self) -> list[Tool]:
        base = self._chef.base_mode
        registry = self._chef.registry
        return [
            t
            for t in registry.tools
            if t.source != "runtime" and (base is None or base.allows(t, registry.wire_name_for(t)))
        ]

    def _result(self, candidates: Sequence[Tool], keep: Callable[[Tool], bool]) -> PruneResult:
        kept = tuple(t for t in candidates if keep(t))
        wire = self._chef.registry.wire_name_for
        removed = tuple(wire(t) for t in candidates if not keep(t))
        return PruneResult(tools=kept, removed=removed, kept=len(kept), total=len(candidates))

    def _allowed(self, candidates: Sequence[Tool], names: Iterable[str]) -> set[tuple[str, str]]:
        if isinstance(names, str):
            raise UsageError("names must be a list of tool names, not one string")
        wanted = set(names)
        wire = self._chef.registry.wire_name_for
        keys = {t.key for t in candidates if wire(t) in wanted or t.name in wanted}
        known = {n for t in candidates for n in (wire(t), t.name)}
        unknown = sorted(wanted - known)
        if unknown:
            raise UnknownToolError(
                f"allowlist names no candidate tool: {unknown}; candidates include "
                f"{sorted(wire(t) for t in candidates)[:10]}",
                name=unknown[0],
                available=sorted(wire(t) for t in candidates),
            )
        return keys

    def prune_by_task(self, task: str) -> PruneResult:
        """Keep the tools whose name or a tag occurs in `task`, plus every untagged tool.

        Raises:
            UsageError: `task` is not a string.
        """
        if not isinstance(task, str):
            raise UsageError(f"task must be a string, got {type(task).__name__}")
        return self._result(self._candidates(), lambda t: task_matches(t, task))

    def allow_only(self, names: Iterable[str]) -> PruneResult:
        """Keep exactly the named tools.

        Names are wire names or own names; an own name shared by several servers keeps
        all of them.

        Raises:
            UnknownToolError: A name matches no candidate tool (nothing is kept silently).
        """
        candidates = self._candidates()
        keys = self._allowed(candidates, names)
        return self._result(candidates, lambda t: t.key in keys)

    def prune_by_task_and_allowlist(
        self,
        task: str,
        names: Iterable[str],
        *,
        strategy: Literal["union", "intersection"] = "union",
    ) -> PruneResult:
        """Combine task matching with an allowlist.

        Args:
            task: The task text (see `prune_by_task`).
            names: The allowlist (see `allow_only`).
            strategy: ``union`` keeps a tool either keeps; ``intersection`` keeps a tool
                both keep (so an untagged tool survives only when allowlisted).

        Raises:
            UsageError: Unknown strategy or a non-string task.
            UnknownToolError: An allowlisted name matches no candidate.
        """
        if strategy not in ("union", "intersection"):
            raise UsageError(f"unknown strategy {strategy!r}; valid: 'union', 'intersection'")
        if not isinstance(task, str):
            raise UsageError(f"task must be a string, got {type(task).__name__}")
        candidates = self._candidates()
        keys = self._allowed(candidates, names)
        if strategy == "union":
            return self._result(candidates, lambda t: t.key in keys or task_matches(t, task))
        return self._result(candidates, lambda t: t.key in keys and task_matches(t, task))

    def apply(self, result: PruneResult) -> None:
        """Make `result` the structural whitelist for the next compiles (mode ``pruned``).

        Runtime tools (e.g. a loaded toolkit's) stay reachable. Changes the tools array.

        Raises:
            UsageError: `result` is not a `PruneResult`.
        """
        if not isinstance(result, PruneResult):
            raise UsageError(
                f"apply takes the PruneResult of a prune_* call, got {type(result).__name__}"
            )
        wire = self._chef.registry.wire_name_for
        include = tuple(f"^{wire(t)}$" for t in result.tools)
        self._chef.set_whitelist(Mode(name=PRUNED_MODE, include=include, runtime=True))

    def clear(self) -> None:
        """Drop the applied whitelist; the session's own mode applies again."""
        self._chef.set_whitelist(None)

    def set_blocked_tools(self, names: str | Sequence[str]) -> None:
        """Replace the blocklist (``[]`` clears; ``*`` patterns).

        See `ContextChef.set_blocked_tools`; the compiled bytes never change.
        """
        self._chef.set_blocked_tools(names)

    # -- namespaces --------------------------------------------------------------------------

    def is_namespace_call(self, call: CallLike) -> bool:
        """Whether `call` targets a namespace tool of the current view."""
        name, _ = _call_parts(call)
        return name in self._chef.view.namespaces

    def resolve_namespace(self, call: CallLike) -> ResolvedAction:
        """Route a namespace call to its sub-tool (no policy check: use the gate for that).

        Args:
            call: The call; its arguments may be JSON text or a dict, and ``args`` may
                itself be JSON text. A missing ``args`` means ``{}``.

        Raises:
            UsageError: `call` is not a namespace call.
            MalformedArgumentsError: Arguments or ``args`` are not a JSON object, or
                ``action`` is missing.
            UnknownActionError: The action is not one of the namespace's (lists them).
        """
        name, raw = _call_parts(call)
        ns = self._chef.view.namespaces.get(name)
        if ns is None:
            known = sorted(self._chef.view.namespaces)
            raise UsageError(f"{name!r} is not a namespace tool; namespaces: {known}")
        arguments = _json_object(raw, f"arguments of the call to {name!r}")
        action = arguments.get("action")
        if not isinstance(action, str):
            raise MalformedArgumentsError(
                f"the call to {name!r} has no string 'action'; expected one of {list(ns.actions)}",
                raw=json.dumps(arguments),
            )
        if action not in ns.members:
            raise UnknownActionError(
                f"namespace {name!r} has no action {action!r}; available actions: "
                f"{', '.join(ns.actions)}",
                name=action,
                namespace=name,
                available=ns.actions,
            )
        args = _json_object(arguments.get("args", {}), f"'args' of the call to {name!r}")
        return ResolvedAction(namespace=name, tool_name=action, args=args)

    # -- toolkits ----------------------------------------------------------------------------

    def is_toolkit_loader(self, call: CallLike) -> bool:
        """Whether `call` is a ``load_toolkit`` call (and toolkits are registered)."""
        name, _ = _call_parts(call)
        return name == LOAD_TOOLKIT and self._chef.view.toolkit_loader is not None

    def extract_toolkit(self, name: str) -> tuple[Tool, ...]:
        """Load a toolkit into the session and return its tools (idempotent).

        Its tools become runtime (deferred) tools: callable through ``defer_execute``
        (or directly under ``anthropic-native``) without rewriting the tools array, and
        the load is recorded in `ContextChef.loaded_toolkits`.

        Raises:
            UnknownToolkitError: No toolkit has this name (lists the registered ones).
        """
        return self._chef.load_toolkit(name)

    def compile(self) -> CompiledGroups:
        """The namespace tools + ``load_toolkit`` and the toolkit directory."""
        view = self._chef.view
        loader = view.toolkit_loader is not None
        tools = tuple(
            t
            for t in view.resident
            if t.name in view.namespaces or (loader and t.name == LOAD_TOOLKIT)
        )
        return CompiledGroups(tools, render_toolkit_directory(view.toolkits.values()))
