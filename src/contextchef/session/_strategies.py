"""Disclosure strategies: which tools a compile sends, and how deferred tools are reached.

A strategy is a small value in the `STRATEGIES` table, chosen per compile; the session
never compares strategy or target names. Each says:

* which tools go in the ``tools`` array (from the frozen `SessionView`);
* whether the model may call a deferred tool by its own name (`Strategy.direct_calls`:
  its definition is in the request) and whether every schema is in the request
  (`Strategy.all_loaded`, which meets ``require_search``);
* which provider-side deferral it needs (`Strategy.native`, matched against
  `Profile.native_tool_search`), which search tool the adapter adds (`Strategy.search`),
  and how a tool our ``tool_search`` finds is revealed (by reference, by a tool change,
  or as text for ``defer_execute``);
* whether the model can honour it (`Strategy.fits`: a deferral flag a model cannot
  reveal would hide the tool for good); ``auto`` picks the first native strategy that
  fits (`resolve`).

Library-owned tools (memory, ``new_context``) visible in the session's modes are appended
after the strategy's tools by every strategy.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass

from contextchef._errors import UsageError, shown
from contextchef.deferred._meta import DEFER_EXECUTE, TOOL_SEARCH, tool_search_tool
from contextchef.deferred._view import SessionView
from contextchef.providers import ModelRules, Profile
from contextchef.tools._tool import CompiledTool

__all__ = ["AUTO", "DEFAULT_STRATEGY", "STRATEGIES", "Strategy", "get_strategy", "resolve"]

_LOG = logging.getLogger("contextchef")


def _client(view: SessionView, locked: frozenset[str]) -> tuple[CompiledTool, ...]:
    return view.resident


def _flat(view: SessionView, locked: frozenset[str]) -> tuple[CompiledTool, ...]:
    return view.flat


def _deferred(view: SessionView, locked: frozenset[str]) -> tuple[CompiledTool, ...]:
    """Every deferred tool (runtime tools included), marked ``defer_loading``, grouped.

    Not the `locked` ones (tools of skills not loaded): declared, the provider's own
    search could surface a tool the gate then refuses; they are declared once loaded.
    """
    deferred = {view.wire_names[t.key] for t in view.deferred} - locked
    return tuple(
        dataclasses.replace(t, defer_loading=True, group=view.by_wire_name[t.name].server)
        for t in view.flat
        if t.name in deferred
    )


def _native_server(view: SessionView, locked: frozenset[str]) -> tuple[CompiledTool, ...]:
    """Resident tools without our meta-tools, then the deferred tools (server search)."""
    head = tuple(t for t in view.resident if t.name not in view.meta_tools)
    return head + _deferred(view, locked)


def _native_client(view: SessionView, locked: frozenset[str]) -> tuple[CompiledTool, ...]:
    """Resident tools, then the deferred ones; ``tool_search`` stays, ``defer_execute`` goes.

    The tools the search finds are revealed and called by name.
    """
    head: list[CompiledTool] = []
    for tool in view.resident:
        if tool.name == DEFER_EXECUTE and tool.name in view.meta_tools:
            continue
        if tool.name == TOOL_SEARCH and tool.name in view.meta_tools:
            search = tool_search_tool(view.directory, direct=True)
            tool = dataclasses.replace(tool, description=search.description)
        head.append(tool)
    return tuple(head) + _deferred(view, locked)


@dataclass(frozen=True, kw_only=True)
class Strategy:
    """One way of disclosing deferred tools.

    Attributes:
        name: The name `ContextChef.compile` takes.
        select: The tools to send, from the view and the tools of skills not loaded
            (library-owned tools are added after).
        direct_calls: Deferred tools' definitions are sent, so the model may call them by
            name (the gate then allows a direct call).
        all_loaded: Every schema is in the request, which satisfies ``require_search``.
        native: The provider-side deferral this strategy needs
            (`Profile.native_tool_search`), or None.
        search: The provider search tool the adapter adds (`Adapter.tool_entries`):
            ``"bm25"`` / ``"regex"`` (Anthropic's server search), ``"hosted"`` (OpenAI's),
            ``"client"`` (OpenAI's client-executed search, answered by our ranker), or
            None.
        reveal_by_reference: Our ``tool_search`` answers with the tools' references
            (`ToolResult.references`), which the provider expands (Anthropic
            ``tool_reference`` blocks; a Responses ``tool_search_output`` listing them).
        reveal_by_addition: What our ``tool_search`` (or the host) loads is revealed by a
            ``tool_addition`` block in a mid-conversation system message; the model must
            take tool changes (`ModelRules.tool_changes`).
        meta_tools: Which of our meta-tools the strategy sends (when anything is
            deferred); the gate refuses a call to the others.
        declare_locked: Declare the tools of skills not loaded too. Where declaring a
            deferred tool later is free (Anthropic: outside the cache key and the prefix
            check) they wait for their skill, so the provider's search cannot surface
            them first; on Responses a later declaration changes the namespaces, which
            restarts the cache, so they are declared from the start and the gate refuses
            them until their skill loads.
        summary: One line for listings (`contextchef plan`, README).
    """

    name: str
    select: Callable[[SessionView, frozenset[str]], tuple[CompiledTool, ...]]
    direct_calls: bool = False
    all_loaded: bool = False
    native: str | None = None
    search: str | None = None
    reveal_by_reference: bool = False
    reveal_by_addition: bool = False
    meta_tools: frozenset[str] = frozenset({TOOL_SEARCH, DEFER_EXECUTE})
    declare_locked: bool = False
    summary: str = ""

    def tools(
        self, view: SessionView, locked: frozenset[str] = frozenset()
    ) -> tuple[CompiledTool, ...]:
        """The ``tools`` array entries for `view`, library-owned tools last.

        `locked`: wire names of tools whose skill is not loaded (not declared by native
        strategies).
        """
        return self.select(view, frozenset() if self.declare_locked else locked) + view.library

    @property
    def search_direct(self) -> bool:
        """Tools our ``tool_search`` finds are called by name (no ``defer_execute``)."""
        return self.native is not None and self.search in (None, "client")

    def fits(self, profile: Profile, rules: ModelRules, *, declared: int = 0) -> str | None:
        """Why this strategy cannot serve `rules.model` on `profile`'s target, or None.

        A provider-native strategy needs the target's deferral mechanism, and a model
        known to lack it is refused: a ``defer_loading`` flag the model cannot reveal
        would hide the tool for good (Anthropic's tool-search model table; OpenAI's
        ``gpt-5.4`` and later). An unknown model name is the caller's call, except for a
        strategy that reveals by tool changes: only a model known to take them gets those.
        It also cannot declare more tools than the target allows with deferral
        (`Profile.max_deferred_tools`): `declared` counts the session's tools (an upper
        bound on the deferred ones; Anthropic's tool-search page gives "10,000 tools" in
        the catalog, read here as tools with ``defer_loading``).
        """
        if self.native is None:
            return None
        if profile.native_tool_search != self.native:
            return (
                f"strategy {self.name!r} needs the {self.native} target's own tool deferral, "
                f"which target {profile.target!r} does not have"
            )
        limit = profile.max_deferred_tools
        if limit is not None and declared > limit:
            return (
                f"strategy {self.name!r} would declare up to {declared:,} tools with "
                f"defer_loading, more than the {limit:,} one {profile.target!r} request may "
                "carry (tool search limits); the client strategies send only resident tools"
            )
        if rules.known and not rules.tool_search:
            return (
                f"model {rules.model!r} cannot reveal deferred tools (no provider tool "
                f"search), so strategy {self.name!r} would hide them for good"
            )
        if self.reveal_by_addition and not rules.tool_changes:  # unknown names too
            return (
                f"model {rules.model!r} does not take mid-conversation tool changes, which "
                f"strategy {self.name!r} reveals tools with"
            )
        return None

    def check(self, profile: Profile, rules: ModelRules, *, declared: int = 0) -> None:
        """Raise unless this strategy serves `rules.model` on `profile`'s target.

        Raises:
            UsageError: See `fits`; the message names the strategies that would work.
        """
        problem = self.fits(profile, rules, declared=declared)
        if problem is not None:
            fitting = [
                s.name
                for s in STRATEGIES.values()
                if s.fits(profile, rules, declared=declared) is None
            ]
            raise UsageError(f"{problem}; use one of {fitting} (or 'auto')")


def _server(name: str, native: str, search: str, what: str, **more: bool) -> Strategy:
    """A strategy where the provider's own search, `search`, reveals the deferred tools."""
    return Strategy(
        name=name,
        meta_tools=frozenset(),
        select=_native_server,
        direct_calls=True,
        native=native,
        search=search,
        summary=f"defer_loading + {what}",
        **more,
    )


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(
            name="client",
            select=_client,
            summary="direct tools + tool_search + defer_execute (every target)",
        ),
        Strategy(
            name="flat",
            meta_tools=frozenset(),
            select=_flat,
            direct_calls=True,
            all_loaded=True,
            summary="every tool in the tools array (the no-disclosure baseline)",
        ),
        _server("anthropic-native", "anthropic", "bm25", "Anthropic's server BM25 tool search"),
        _server(
            "anthropic-native-regex", "anthropic", "regex", "Anthropic's server regex tool search"
        ),
        Strategy(
            name="anthropic-native-client",
            meta_tools=frozenset({TOOL_SEARCH}),
            select=_native_client,
            direct_calls=True,
            native="anthropic",
            reveal_by_reference=True,
            summary="defer_loading + our tool_search answering with tool_reference blocks",
        ),
        Strategy(
            name="anthropic-inline",
            meta_tools=frozenset({TOOL_SEARCH}),
            select=_native_client,
            direct_calls=True,
            native="anthropic",
            reveal_by_addition=True,
            summary="defer_loading + our tool_search; found tools revealed by tool_addition",
        ),
        Strategy(
            name="openai-native-client",
            meta_tools=frozenset({TOOL_SEARCH}),
            declare_locked=True,
            select=_native_client,
            direct_calls=True,
            native="responses",
            search="client",
            reveal_by_reference=True,
            summary="defer_loading in namespaces + our ranker as a client-executed "
            "tool_search (Responses)",
        ),
        _server(
            "openai-native",
            "responses",
            "hosted",
            "OpenAI's hosted tool_search, in namespaces (Responses)",
            declare_locked=True,
        ),
        _server(
            "gemini-interactions-native",
            "gemini-interactions",
            "server",
            "the Interactions server's tool_search (UNVERIFIED: no public doc)",
        ),
    )
}
"""Strategies by name (``auto`` picks one of them per target and model: `resolve`)."""

AUTO = "auto"
"""The strategy name that picks the best strategy for the target and model."""

_PREFERENCE = ("anthropic-native-client", "openai-native")
"""What ``auto`` tries first, in order; ``client`` when none fits."""

DEFAULT_STRATEGY = STRATEGIES["client"]


def get_strategy(name: str) -> Strategy:
    """The strategy called `name` (not ``auto``: see `resolve`).

    Raises:
        UsageError: No such strategy (the valid names are listed).
    """
    strategy = STRATEGIES.get(name) if isinstance(name, str) else None
    if strategy is None:
        raise UsageError(
            f"unknown strategy {shown(name, 80)}; valid: {', '.join([AUTO, *STRATEGIES])}"
        )
    return strategy


def resolve(name: str, profile: Profile, rules: ModelRules, *, declared: int = 0) -> Strategy:
    """The strategy `name` means for `rules.model` on `profile`'s target, checked.

    ``auto`` picks the provider's own deferral where the model has it (Anthropic: our
    ranker answering with ``tool_reference`` blocks, which keeps the deferred-name
    directory and our search quality; Responses: hosted ``tool_search`` with namespaces),
    else ``client``. An unknown model name gets ``client`` under ``auto``. `declared`:
    how many tools the session has; past the target's deferral limit
    (`Profile.max_deferred_tools`) ``auto`` takes ``client`` and logs why (a warning on
    the ``contextchef`` logger; `CompiledRequest.strategy` names what was used).

    Raises:
        UsageError: Unknown name, or a strategy this target or model cannot serve (too
            many tools for its deferral included); the message names those that can.
    """
    if name == AUTO:
        for candidate in _PREFERENCE:
            strategy = STRATEGIES[candidate]
            if not rules.known or strategy.fits(profile, rules) is not None:
                continue
            problem = strategy.fits(profile, rules, declared=declared)
            if problem is None:
                return strategy
            _LOG.warning("contextchef: auto uses %r: %s", DEFAULT_STRATEGY.name, problem)
        return DEFAULT_STRATEGY
    strategy = get_strategy(name)
    strategy.check(profile, rules, declared=declared)
    return strategy
