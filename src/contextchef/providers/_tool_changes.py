"""Mid-conversation tool changes, provider-neutral: the state they leave and the shared planning.

Where a provider takes tool changes (`ModelRules.tool_changes`), its adapter plans them
(`Adapter.plan_tool_changes`: Anthropic states additions by reference or definition and
withdrawals by reference, in `contextchef.providers.anthropic._tool_changes`; Responses
states every addition by definition and withdrawals in words, in
`contextchef.providers.responses._tool_changes`). What both share lives here: the
`ToolState` a ledger's changes leave at each mark, the `ToolChanges` one request states,
the withdrawal of tools the view no longer offers (`withdraw`), and the accumulator the
planners fill (`Plan`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextchef._errors import UsageError
from contextchef._json import canonical_dumps

__all__ = [
    "Plan",
    "ToolChanges",
    "ToolState",
    "deferred",
    "definition",
    "offered",
    "placed",
    "tool_names",
    "withdraw",
]


def tool_names(entries: Sequence[Any]) -> list[str]:
    """The ``name`` of each tool entry that has one, in order."""
    return [e["name"] for e in entries if isinstance(e, Mapping) and isinstance(e.get("name"), str)]


def deferred(entry: Mapping[str, Any]) -> bool:
    """The entry is declared with ``defer_loading``."""
    return entry.get("defer_loading") is True


_NOT_DEFINITION = ("defer_loading", "namespace")
"""Keys of a tool unit that say where and how it is declared, not what it is."""


def definition(entry: Mapping[str, Any]) -> str:
    """Canonical JSON of a tool entry, whether deferred or not, wherever declared."""
    return canonical_dumps({k: v for k, v in entry.items() if k not in _NOT_DEFINITION})


def offered(entry: Mapping[str, Any]) -> dict[str, Any]:
    """`entry` as a definition that offers the tool (no ``defer_loading``)."""
    return {k: v for k, v in entry.items() if k != "defer_loading"}


def placed(entry: Mapping[str, Any], where: Mapping[str, Any]) -> dict[str, Any]:
    """`entry` offered, in the namespace `where` was declared in (none: none)."""
    unit = {k: v for k, v in offered(entry).items() if k != "namespace"}
    if "namespace" in where:
        unit["namespace"] = where["namespace"]
    return unit


@dataclass(frozen=True, kw_only=True)
class ToolState:
    """What a ledger's tool changes (and the provider's reveals) left, at one mark.

    Attributes:
        added: Declared tools added by a ``tool_addition`` (by reference).
        removed: Tools withdrawn by a ``tool_removal`` and not added again.
        defined: Tools added by definition -> canonical JSON of that definition.
        revealed: Tools a ``tool_reference`` in the messages sent revealed (provider
            search results, custom search results).
        sent: Some tool change was sent up to here (the request needs the beta).
    """

    added: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()
    defined: Mapping[str, str] = field(default_factory=dict)
    revealed: frozenset[str] = frozenset()
    sent: bool = False

    def offered(self, name: str, base_visible: bool) -> bool:
        """Whether the model currently has `name` (declared non-deferred: `base_visible`)."""
        if name in self.removed:
            return False
        return base_visible or name in self.added or name in self.revealed or name in self.defined

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (sorted lists); empty fields left out."""
        out: dict[str, Any] = {}
        for key in ("added", "removed", "revealed"):
            values = getattr(self, key)
            if values:
                out[key] = sorted(values)
        if self.defined:
            out["defined"] = dict(sorted(self.defined.items()))
        if self.sent:
            out["sent"] = True
        return out

    @classmethod
    def from_dict(cls, data: object) -> ToolState:
        """From `to_dict` output.

        Raises:
            UsageError: A malformed tool state.
        """
        if not isinstance(data, Mapping) or set(data) - {
            "added",
            "removed",
            "revealed",
            "defined",
            "sent",
        }:
            raise UsageError("snapshot ledger: a mark's 'tools' must be a tool-state object")
        sets: dict[str, frozenset[str]] = {}
        for key in ("added", "removed", "revealed"):
            values = data.get(key, [])
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise UsageError(f"snapshot ledger: tool state {key!r} must be a list of names")
            sets[key] = frozenset(values)
        defined = data.get("defined", {})
        if not isinstance(defined, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in defined.items()
        ):
            raise UsageError("snapshot ledger: tool state 'defined' must map names to text")
        for name, text in defined.items():
            try:
                entry = json.loads(text)
            except ValueError:
                entry = None
            if not isinstance(entry, dict) or entry.get("name") != name:
                raise UsageError(
                    f"snapshot ledger: tool state 'defined' for {name[:80]!r} must be the JSON "
                    "object of that tool's definition"
                )
        sent = data.get("sent", False)
        if not isinstance(sent, bool):
            raise UsageError("snapshot ledger: tool state 'sent' must be a boolean")
        return cls(defined=dict(defined), sent=sent, **sets)


@dataclass(frozen=True, kw_only=True)
class ToolChanges:
    """The tool changes one request states (all empty: none)."""

    add: tuple[str, ...] = ()
    """Declared tools to add by reference, sorted."""
    define: tuple[dict[str, Any], ...] = ()
    """Tool entries to add by definition, sorted by name."""
    remove: tuple[str, ...] = ()
    """Tools to withdraw by reference, sorted."""

    @property
    def empty(self) -> bool:
        """Nothing to state."""
        return not (self.add or self.define or self.remove)


@dataclass(kw_only=True)
class Plan:
    """What a planner collects for one request (see `Plan.result`)."""

    state: ToolState
    """The tool state before this request (this request's reveals included)."""
    declared: dict[str, Mapping[str, Any]]
    """Tool name -> its entry as ``tools`` declares it (entries appended here too)."""
    current: dict[str, Mapping[str, Any]]
    """Tool name -> its entry in the view now (hidden tools absent)."""
    add: list[str] = field(default_factory=list)
    define: list[dict[str, Any]] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    appended: list[Any] = field(default_factory=list)
    defined: dict[str, str] = field(default_factory=dict)
    """Tool name -> canonical JSON of the definition in force (starts as the state's)."""

    @classmethod
    def start(cls, sent: Sequence[Any], now: Sequence[Any], state: ToolState) -> Plan:
        """An empty plan from the entries `sent`, the entries `now` and the `state`."""
        return cls(
            state=state,
            declared={e["name"]: e for e in sent if isinstance(e, Mapping) and "name" in e},
            current={e["name"]: e for e in now if isinstance(e, Mapping) and "name" in e},
            defined=dict(state.defined),
        )

    def define_unit(self, name: str, unit: dict[str, Any]) -> None:
        """Add `unit` by definition (it replaces any earlier definition of `name`)."""
        self.define.append(unit)
        self.defined[name] = canonical_dumps(unit)

    def result(self, sent: list[Any]) -> tuple[list[Any], ToolChanges, ToolState]:
        """``(tools, changes, state)`` once planned.

        `sent` plus the appended entries (the same list when nothing was appended), the
        changes sorted, and the tool state once they are sent.
        """
        tools = [*sent, *self.appended] if self.appended else sent
        changes = ToolChanges(
            add=tuple(sorted(set(self.add))),
            define=tuple(sorted(self.define, key=lambda e: str(e.get("name")))),
            remove=tuple(sorted(set(self.remove))),
        )
        state = self.state
        after = ToolState(
            added=(state.added | set(changes.add)) - set(changes.remove),
            removed=(state.removed - set(changes.add) - {str(e["name"]) for e in changes.define})
            | set(changes.remove),
            defined=self.defined,
            revealed=state.revealed,
            sent=state.sent or not changes.empty,
        )
        return tools, changes, after


def withdraw(plan: Plan, loaded: frozenset[str], *, provider_search: bool) -> None:
    """Plan, for every tool ``tools`` declares, its withdrawal or its return.

    A tool the view no longer offers is withdrawn (still declared: history may name it);
    a deferred one the model was never offered only where the provider's own search
    could surface it (`provider_search`): with our ranker searching, the gate refuses
    it and a withdrawal could only be undone by offering it. A tool a withdrawal hid is
    added again once the view offers it; a deferred tool once loaded or revealed.
    """
    state = plan.state
    for name, entry in plan.declared.items():
        if name in plan.add:
            continue
        fresh = plan.current.get(name)
        if fresh is None:  # hidden by the mode (or gone): withdrawn, still declared
            unseen = deferred(entry) and not (
                state.offered(name, False) or name in loaded or name in state.revealed
            )
            if name not in state.removed and (provider_search or not unseen):
                plan.remove.append(name)  # deferred ones too: the provider's search must
            continue  # not find them
        if name in state.removed:
            plan.add.append(name)  # the mode that withdrew it is gone: offered again
            continue
        was = state.offered(name, not deferred(entry))
        # a deferred tool is offered once revealed (provider search) or loaded
        want = not deferred(fresh) or was or name in loaded or name in state.revealed
        if want and not was:
            plan.add.append(name)
