"""`Pruner`: per-task tool pruning, namespaces and lazy toolkits (session layer).

Registration and routing are decoupled: tools are registered once, and the pruner
decides which of them the model sees for a task, routes namespace calls to their real
sub-tool and loads toolkits on demand.

Pruning (`Pruner.prune_by_task`, `Pruner.allow_only`,
`Pruner.prune_by_task_and_allowlist`) is a pure query over the registered tools
(runtime tools excluded; namespace sub-tools included; only tools visible in the
session's own mode). Its `PruneResult` changes nothing until you pass it to
`Pruner.apply`, which installs it as a structural whitelist — a `Mode` named
``pruned`` that keeps the result's tools plus any runtime tool (such as a loaded
toolkit's) and the library-owned tools: every other tool leaves the payload, the
directory and search, and the gate rejects it with ``Tool "x" is not available in mode
"pruned".``. The whitelist narrows the session's own mode, never replaces it: a tool is
reachable only if both allow it, in whatever order they were set. Applying changes the
``tools`` array by design (like `ContextChef.set_mode`); `Pruner.clear` drops it.
Blocking (`Pruner.set_blocked_tools`) is the cache-safe
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

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

from contextchef._errors import (
    MalformedArgumentsError,
    UnknownActionError,
    UnknownToolError,
    UsageError,
    check_str,
    check_strings,
    shown,
)
from contextchef._json import JsonValue
from contextchef.deferred._groups import LOAD_TOOLKIT
from contextchef.deferred._view import SessionView
from contextchef.dispatch._calls import CallLike, as_tool_call
from contextchef.dispatch._gate import ActionProblem, resolve_action
from contextchef.exposure._policy import Mode
from contextchef.history._arguments import parse_json_object
from contextchef.search._cjk import CJK
from contextchef.tools._registry import Registry
from contextchef.tools._tool import CompiledTool, Tool


class PrunerHost(Protocol):
    """What the pruner needs from its session (implemented by `ContextChef`)."""

    @property
    def base_mode(self) -> Mode | None:
        """The mode chosen with ``set_mode``."""

    @property
    def view(self) -> SessionView:
        """The frozen tool view."""

    @property
    def registry(self) -> Registry:
        """The tool registry."""

    def set_whitelist(self, mode: Mode | None) -> None:
        """Apply (None: drop) a structural whitelist narrowing the session's mode."""

    def set_blocked_tools(self, patterns: str | Sequence[str]) -> None:
        """Replace the blocklist."""

    def load_toolkit(self, name: str) -> tuple[Tool, ...]:
        """Load a toolkit."""


__all__ = [
    "CompiledGroups",
    "PruneResult",
    "Pruner",
    "PrunerHost",
    "ResolvedAction",
    "task_matches",
]

PRUNED_MODE = "pruned"
"""Name of the mode `Pruner.apply` installs (shown in the gate's denials)."""


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
        directory_xml: The ``<available_toolkits>`` block for the system prompt: the
            toolkits with a tool the mode allows (``""`` without any).
    """

    tools: tuple[CompiledTool, ...]
    directory_xml: str


_SPLIT = re.compile(r"[\W_]+")


def _word_char(ch: str) -> bool:
    return ch.isalnum() and not CJK.match(ch)


def _phrase(text: str) -> re.Pattern[str] | None:
    """A name or tag as a pattern: its words in order, any separators between them."""
    words = [w for w in _SPLIT.split(text.casefold()) if w]
    return re.compile(r"[\W_]+".join(map(re.escape, words))) if words else None


def _occurs(pattern: re.Pattern[str], task: str) -> bool:
    """Whether `pattern` matches `task` with no word character right before or after it."""
    padded = f" {task} "  # a space at each end: no word character there
    spans = (found.span() for found in pattern.finditer(task))
    return any(not _word_char(padded[a]) and not _word_char(padded[b + 1]) for a, b in spans)


def task_matches(tool: Tool, task: str) -> bool:
    """Whether pruning by `task` keeps `tool` (see the module docstring for the rules)."""
    text, patterns = task.casefold(), (_phrase(p) for p in (tool.name, *tool.tags))
    return not tool.tags or any(p is not None and _occurs(p, text) for p in patterns)


# -- the pruner ------------------------------------------------------------------------------


class Pruner:
    """Tool management for one session (``chef.pruner``).

    See the module docstring for pruning semantics and word boundaries.
    """

    def __init__(self, host: PrunerHost) -> None:
        self._host = host

    # -- pruning -----------------------------------------------------------------------------

    def _candidates(self) -> list[Tool]:
        base = self._host.base_mode
        registry = self._host.registry
        return [
            t
            for t in registry.tools
            if t.source not in ("runtime", "library")
            and (base is None or base.allows(t, registry.wire_name_for(t)))
        ]

    def _result(self, candidates: Sequence[Tool], keep: Callable[[Tool], bool]) -> PruneResult:
        kept = tuple(t for t in candidates if keep(t))
        wire = self._host.registry.wire_name_for
        removed = tuple(wire(t) for t in candidates if not keep(t))
        return PruneResult(tools=kept, removed=removed, kept=len(kept), total=len(candidates))

    def _allowed(self, candidates: Sequence[Tool], names: Iterable[str]) -> set[tuple[str, str]]:
        if isinstance(names, str) or not isinstance(names, Iterable):
            raise UsageError(f"names must be a list of tool names, got {type(names).__name__}")
        wanted = set(check_strings("names", names))
        wire = self._host.registry.wire_name_for
        keys = {t.key for t in candidates if wire(t) in wanted or t.name in wanted}
        known = {n for t in candidates for n in (wire(t), t.name)}
        unknown = sorted(wanted - known)
        if unknown:
            raise UnknownToolError(
                f"allowlist names no candidate tool: {shown(unknown)}; candidates include "
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
        check_str("task", task)
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
            raise UsageError(f"unknown strategy {shown(strategy)}; valid: 'union', 'intersection'")
        check_str("task", task)
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
        wire = self._host.registry.wire_name_for
        include = tuple(f"^{wire(t)}$" for t in result.tools)
        self._host.set_whitelist(
            Mode(name=PRUNED_MODE, include=include, runtime=True, library=True)
        )

    def clear(self) -> None:
        """Drop the applied whitelist; the session's own mode applies again."""
        self._host.set_whitelist(None)

    def set_blocked_tools(self, names: str | Sequence[str]) -> None:
        """Replace the blocklist (``[]`` clears; ``*`` patterns).

        See `ContextChef.set_blocked_tools`; the compiled bytes never change.
        """
        self._host.set_blocked_tools(names)

    # -- namespaces --------------------------------------------------------------------------

    def is_namespace_call(self, call: CallLike) -> bool:
        """Whether `call` targets a namespace tool of the current view."""
        return as_tool_call(call).name in self._host.view.namespaces

    def resolve_namespace(self, call: CallLike) -> ResolvedAction:
        """Route a namespace call to its sub-tool (no policy check: use the gate for that).

        Args:
            call: The call in any `CallLike` shape; its arguments may be JSON text or a
                dict, and ``args`` may itself be JSON text. A missing ``args`` means ``{}``.

        Raises:
            UsageError: `call` is not a namespace call.
            MalformedArgumentsError: Arguments or ``args`` are not a JSON object, or
                ``action`` is missing.
            UnknownActionError: The action is not one of the namespace's (lists them).
        """
        parsed = as_tool_call(call)
        name = parsed.name
        ns = self._host.view.namespaces.get(name)
        if ns is None:
            known = sorted(self._host.view.namespaces)
            raise UsageError(f"{shown(name)} is not a namespace tool; namespaces: {known}")
        arguments = parse_json_object(parsed.arguments)
        if isinstance(arguments, str):
            raise MalformedArgumentsError(
                f"arguments of the call to {shown(name)}: {arguments}; expected a JSON object "
                f"with an 'action' (one of {list(ns.actions)})",
                raw=parsed.arguments,
            )
        resolved = resolve_action(ns, arguments)
        if isinstance(resolved, ActionProblem) and resolved.code == "unknown_tool":
            action = str(arguments.get("action"))
            raise UnknownActionError(
                f"namespace {shown(name)} has no action {shown(action)}; available actions: "
                f"{', '.join(ns.actions)}",
                name=action,
                namespace=name,
                available=ns.actions,
            )
        if isinstance(resolved, ActionProblem):
            raise MalformedArgumentsError(
                f"the call to {shown(name)} is malformed: {'; '.join(resolved.problems)}; expected "
                f'{{"action": one of {list(ns.actions)}, "args": {{...}}}}',
                raw=parsed.arguments,
            )
        member, args = resolved
        return ResolvedAction(
            namespace=name, tool_name=self._host.view.wire_names[member.key], args=args
        )

    # -- toolkits ----------------------------------------------------------------------------

    def is_toolkit_loader(self, call: CallLike) -> bool:
        """Whether `call` is a ``load_toolkit`` call (and toolkits are registered)."""
        return (
            as_tool_call(call).name == LOAD_TOOLKIT and self._host.view.toolkit_loader is not None
        )

    def extract_toolkit(self, name: str) -> tuple[Tool, ...]:
        """Load a toolkit into the session and return its tools (idempotent).

        Its tools become runtime (deferred) tools: callable through ``defer_execute``
        (or directly under ``anthropic-native``) without rewriting the tools array, and
        the load is recorded in `ContextChef.loaded_toolkits`.

        Raises:
            UnknownToolkitError: No toolkit has this name (lists the registered ones).
        """
        return self._host.load_toolkit(name)

    def compile(self) -> CompiledGroups:
        """The namespace tools + ``load_toolkit`` and the toolkit directory."""
        view = self._host.view
        loader = view.toolkit_loader is not None
        tools = tuple(
            t
            for t in view.resident
            if t.name in view.namespaces or (loader and t.name == LOAD_TOOLKIT)
        )
        return CompiledGroups(tools, view.toolkit_directory)
