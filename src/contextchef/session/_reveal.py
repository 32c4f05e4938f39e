"""Tool changes mid-conversation: reveal and withdraw tools without editing ``tools``.

On models that take them (`ModelRules.tool_changes`), a provider-native strategy keeps
the ``tools`` array it first sent (from the first request answered: `Ledger.bound`) and
states every later change to what the model may
call as blocks of a mid-conversation system message appended at the end
(https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages,
"Mid-conversation tool changes"; the research notes' rules 3, 11, 13, 19 and 20):

* a declared tool the model should now have (a deferred tool the host or a skill loaded,
  or our ``tool_search`` found under ``anthropic-inline``; a tool a mode brings back) is
  added **by reference**;
* a tool the mode now hides is **withdrawn** by reference, deferred ones included (so
  the provider's own search cannot surface it); its definition stays declared (history
  may still name it) and the gate refuses it. When the mode goes, every tool it withdrew
  is added again (offered, no longer merely searchable: there is no way back to
  "deferred");
* a tool that was not declared in the first request and is now offered directly (a mode
  bringing in a tool that was hidden at the start, a tool registered later) is added
  **by definition** where the platform takes inline definitions
  (`ModelRules.inline_tools`), else declared deferred at the end of ``tools`` — which
  neither the prompt cache nor the thinking check counts until it is referenced
  (``agents-and-tools/tool-use/tool-search-tool``, deferred loading and caching;
  research note R7, R20) — and added by reference;
* a deferred tool registered later (a runtime tool, a server that connected) is declared
  deferred at the end of ``tools`` the same way, where the provider's search finds it.

`ToolState` is what the ledger's changes left, per mark, so a rolled-back edit rolls it
back too. Which tools the provider already revealed (``tool_reference`` blocks) is read
from the new messages of each compile (`Adapter.revealed_tools`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextchef._errors import UsageError
from contextchef._json import canonical_dumps
from contextchef.history._messages import Message
from contextchef.providers import Adapter

__all__ = [
    "ToolChanges",
    "ToolState",
    "changes_after",
    "dangling",
    "defined_entries",
    "plan_cached",
    "plan_tools",
    "stale",
    "tool_names",
]


def tool_names(entries: Sequence[Any]) -> list[str]:
    """The ``name`` of each tool entry that has one, in order."""
    return [e["name"] for e in entries if isinstance(e, Mapping) and isinstance(e.get("name"), str)]


def _deferred(entry: Mapping[str, Any]) -> bool:
    return entry.get("defer_loading") is True


_NOT_DEFINITION = ("defer_loading", "namespace")
"""Keys of a tool unit that say where and how it is declared, not what it is."""


def _definition(entry: Mapping[str, Any]) -> str:
    """Canonical JSON of a tool entry, whether deferred or not, wherever declared."""
    return canonical_dumps({k: v for k, v in entry.items() if k not in _NOT_DEFINITION})


def _offered(entry: Mapping[str, Any]) -> dict[str, Any]:
    """`entry` as a definition that offers the tool (no ``defer_loading``)."""
    return {k: v for k, v in entry.items() if k != "defer_loading"}


def _placed(entry: Mapping[str, Any], where: Mapping[str, Any]) -> dict[str, Any]:
    """`entry` offered, in the namespace `where` was declared in (none: none)."""
    unit = {k: v for k, v in _offered(entry).items() if k != "namespace"}
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


def plan_tools(
    *,
    sent: list[Any],
    now: Sequence[Any],
    state: ToolState,
    loaded: frozenset[str],
    inline: bool,
    stable: frozenset[str] = frozenset(),
    by_definition: bool = False,
    provider_search: bool = True,
) -> tuple[list[Any], ToolChanges, ToolState] | None:
    """The ``tools`` to send, the changes to state, and the tool state after them.

    Args:
        sent: The tool entries this ledger sent (kept, in order).
        now: The entries the strategy would send for the current view (tools the modes
            hide are not in it).
        state: The tool state before this request, with this request's new provider
            reveals already in `ToolState.revealed`.
        loaded: Tools the host, a skill, a toolkit or our ``tool_search`` loaded.
        inline: The platform takes definitions in tool changes.
        stable: Tools whose definition is kept as first sent even when it changed (our
            meta-tools: ``tool_search``'s directory follows the mode, but its results
            and the gate already do, so redefining it would only cost input).
        by_definition: The platform states tool changes by definition only
            (`Profile.tool_changes_by_definition`): every addition is a definition (of
            the entry as declared, wherever it is declared), nothing is appended to
            ``tools``; withdrawals are planned as usual (the adapter states them).
        provider_search: The provider's own search runs (Anthropic's server search,
            OpenAI's hosted one), so a hidden deferred tool must be withdrawn or that
            search could surface it. With our ranker searching (False), a deferred tool
            the model was never offered is not withdrawn: our search leaves it out and
            the gate refuses it, and when the mode goes it is simply still deferred
            (a withdrawal cannot be undone but by adding the tool, which would offer
            every such tool after one mode round trip).

    Returns:
        ``(tools, changes, state)``: `sent` plus any newly declared deferred entries at
        the end; what to add and withdraw; the state once this request is sent. None
        when a tool sent in ``tools`` changed its definition and the platform takes no
        inline definitions: only an edit of ``tools`` can say that.
    """
    appended: list[Any] = []
    declared = {e["name"]: e for e in sent if isinstance(e, Mapping) and "name" in e}
    current = {e["name"]: e for e in now if isinstance(e, Mapping) and "name" in e}
    add: list[str] = []
    define: list[dict[str, Any]] = []
    remove: list[str] = []
    defined = dict(state.defined)
    for name, entry in current.items():
        if (
            name in declared
            and name not in stable
            and entry != declared[name]
            and _definition(entry) != _definition(declared[name])
        ):
            if not inline:
                return None
            unit = _placed(entry, declared[name]) if by_definition else dict(entry)
            if name not in defined or defined[name] != canonical_dumps(unit):
                define.append(unit)  # replaces the declared one from here on
                defined[name] = canonical_dumps(unit)
            continue
        if name in declared or name in defined:
            continue
        if by_definition:
            define.append(_offered(entry))  # new here: offered from now on
            defined[name] = canonical_dumps(_offered(entry))
        elif _deferred(entry):
            appended.append(entry)  # searchable from now on; revealed when loaded
            declared[name] = entry
        elif inline:
            define.append(dict(entry))
            defined[name] = canonical_dumps(entry)
        else:
            hidden = {**entry, "defer_loading": True}
            appended.append(hidden)
            declared[name] = hidden
            add.append(name)
    for name, entry in declared.items():
        if name in add:
            continue
        fresh = current.get(name)
        if fresh is None:  # hidden by the mode (or gone): withdrawn, still declared
            unseen = _deferred(entry) and not (
                state.offered(name, False) or name in loaded or name in state.revealed
            )
            if name not in state.removed and (provider_search or not unseen):
                remove.append(name)  # deferred ones too: the provider's search must not
            continue  # find them
        if name in state.removed:
            add.append(name)  # the mode that withdrew it is gone: offered again
            continue
        offered = state.offered(name, not _deferred(entry))
        # a deferred tool is offered once revealed (provider search) or loaded
        want = not _deferred(fresh) or offered or name in loaded or name in state.revealed
        if want and not offered:
            add.append(name)
    for name, text in state.defined.items():
        fresh = current.get(name)
        if fresh is None:
            if name not in state.removed:
                remove.append(name)
        elif by_definition and _definition(fresh) != _definition(json.loads(text)):
            unit = _placed(fresh, json.loads(text))  # a new definition, where it was
            define.append(unit)
            defined[name] = canonical_dumps(unit)
        elif not by_definition and canonical_dumps(fresh) != text and inline:
            define.append(dict(fresh))  # the same name, a new definition from here on
            defined[name] = canonical_dumps(fresh)
        elif name in state.removed:
            add.append(name)
    if by_definition:  # declared ones too: by the definition as declared, in its place
        named = {str(e.get("name")) for e in define}
        for name in add:
            if name not in named:
                where = declared.get(name) or json.loads(state.defined[name])
                unit = _placed(current.get(name) or where, where)
                define.append(unit)
                defined[name] = canonical_dumps(unit)
                named.add(name)
        add = []
    tools = [*sent, *appended] if appended else sent  # the same list when nothing is new
    changes = ToolChanges(
        add=tuple(sorted(set(add))),
        define=tuple(sorted(define, key=lambda e: str(e.get("name")))),
        remove=tuple(sorted(set(remove))),
    )
    after = ToolState(
        added=(state.added | set(changes.add)) - set(changes.remove),
        removed=(state.removed - set(changes.add) - {str(e["name"]) for e in changes.define})
        | set(changes.remove),
        defined=defined,
        revealed=state.revealed,
        sent=state.sent or not changes.empty,
    )
    return tools, changes, after


def changes_after(
    *,
    sent: list[Any],
    now: list[Any],
    state: ToolState,
    loaded: frozenset[str],
    inline: bool,
    stable: frozenset[str],
    cache: dict[Any, Any],
    by_definition: bool = False,
    provider_search: bool = True,
) -> tuple[ToolChanges, ToolState]:
    """The tool changes one request states, and the tool state after them.

    Like `plan_tools`, with a fast path for the common turn: the view sent is the view
    now (`now` is `sent`), so only a deferred tool loaded since can be added; the
    deferred names of `sent` are indexed once in `cache`.
    """
    if now is sent and not (state.defined or state.removed or by_definition):
        key = ("deferred-names", id(sent))
        hit = cache.get(key)
        if hit is None or hit[0] is not sent:
            names = frozenset(
                t["name"] for t in sent if isinstance(t, Mapping) and _deferred(t) and "name" in t
            )
            hit = cache[key] = (sent, names)
        add = tuple(sorted(n for n in loaded if n in hit[1] and not state.offered(n, False)))
        if not add:
            return ToolChanges(), state
        after = ToolState(
            added=state.added | set(add),
            removed=state.removed,
            defined=state.defined,
            revealed=state.revealed,
            sent=True,
        )
        return ToolChanges(add=add), after
    planned = plan_cached(
        cache,
        sent=sent,
        now=now,
        state=state,
        loaded=loaded,
        inline=inline,
        stable=stable,
        by_definition=by_definition,
        provider_search=provider_search,
    )
    if planned is None:
        return ToolChanges(), state
    return planned[1], planned[2]


def plan_cached(
    cache: dict[Any, Any],
    *,
    sent: list[Any],
    now: list[Any],
    state: ToolState,
    loaded: frozenset[str],
    inline: bool,
    stable: frozenset[str],
    by_definition: bool = False,
    provider_search: bool = True,
) -> tuple[list[Any], ToolChanges, ToolState] | None:
    """`plan_tools`, remembered for the same lists (by identity) and the same inputs.

    A compile asks twice (for the tools, then for the changes) and the next turns ask
    again with nothing changed; the answer is computed once.
    """
    key = ("plan", id(sent), id(now))
    hit = cache.get(key)
    args = (state, loaded, inline, stable, by_definition, provider_search)
    if hit is not None and hit[0] is sent and hit[1] is now and hit[2] == args:
        result: tuple[list[Any], ToolChanges, ToolState] | None = hit[3]
        return result
    result = plan_tools(
        sent=sent,
        now=now,
        state=state,
        loaded=loaded,
        inline=inline,
        stable=stable,
        by_definition=by_definition,
        provider_search=provider_search,
    )
    cache[key] = (sent, now, args, result)
    return result


def stale(adapter: Adapter, sent: Sequence[Message], state: ToolState, tools: list[Any]) -> bool:
    """Whether the messages `sent` name a tool (or namespace) `tools` no longer declares.

    Tool changes by reference and ``tool_reference`` blocks (`dangling`), and whatever
    the adapter would rewrite in them (`Adapter.fit_references`: a call replayed in a
    namespace that no longer holds it, the tools tool changes defined not counted: a
    call sent before the change would name what nothing before it declares). Read only
    when ``tools`` changed.
    """
    if dangling(state, tools):
        return True
    # the tools tool changes defined are left out: they declare only what comes after
    # them, and a call sent before one (a mode round trip) needs `tools` to declare it
    _, refits = adapter.fit_references(sent, tools)
    return bool(refits)


def dangling(state: ToolState, tools: Sequence[Any]) -> bool:
    """Whether what was sent names by reference a tool `tools` no longer declares.

    A ``tool_reference`` (search results, custom search) or a tool change by reference
    must resolve on every later request (research note rule 3); a tool defined inline
    resolves a tool change by its definition. Whether a target's result references may
    name one is the adapter's to say (`stale` asks its `Adapter.fit_references`).
    """
    named = state.revealed | state.added | state.removed
    return bool(named) and not named <= set(tool_names(tools)) | set(state.defined)


def defined_entries(state: ToolState) -> list[dict[str, Any]]:
    """The tools `state` defined by tool changes, as declarations references resolve to.

    Marked ``defer_loading`` (declared, revealed by their definition): a Responses call
    to a flat function an ``additional_tools`` item defined comes back in a namespace
    named like it, as for a flat deferred function; one defined in a namespace keeps it.
    """
    return [{**json.loads(text), "defer_loading": True} for text in state.defined.values()]
