"""Disclosure strategies: which tools a compile sends, and how deferred tools are reached.

A strategy is a small value in the `STRATEGIES` table, chosen per compile; the session
never compares strategy or target names. Each says:

* which tools go in the ``tools`` array (from the frozen `SessionView`);
* whether the model may call a deferred tool by its own name (`Strategy.direct_calls`:
  its definition is in the request) and whether every schema is in the request
  (`Strategy.all_loaded`, which meets ``require_search``);
* which provider-side search it needs (`Strategy.native`, matched against
  `Profile.native_tool_search`).

Library-owned tools (memory, ``new_context``) visible in the session's modes are appended
after the strategy's tools by every strategy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from contextchef._errors import UsageError
from contextchef.deferred._view import SessionView
from contextchef.providers import Profile
from contextchef.tools._tool import CompiledTool

__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "Strategy", "get_strategy"]


def _client(view: SessionView) -> tuple[CompiledTool, ...]:
    return view.resident


def _flat(view: SessionView) -> tuple[CompiledTool, ...]:
    return view.flat


def _anthropic_native(view: SessionView) -> tuple[CompiledTool, ...]:
    """Resident tools without our meta-tools, then deferred tools with ``defer_loading``.

    https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool
    """
    deferred = {view.wire_names[t.key] for t in view.deferred}
    head = tuple(t for t in view.resident if t.name not in view.meta_tools)
    tail = tuple(
        dataclasses.replace(t, defer_loading=True) for t in view.flat if t.name in deferred
    )
    return head + tail


@dataclass(frozen=True, kw_only=True)
class Strategy:
    """One way of disclosing deferred tools.

    Attributes:
        name: The name `ContextChef.compile` takes.
        select: The tools to send, from the view (library-owned tools are added after).
        direct_calls: Deferred tools' definitions are sent, so the model may call them by
            name (the gate then allows a direct call).
        all_loaded: Every schema is in the request, which satisfies ``require_search``.
        native: The provider-side search this strategy needs (`Profile.native_tool_search`),
            or None.
    """

    name: str
    select: Callable[[SessionView], tuple[CompiledTool, ...]]
    direct_calls: bool = False
    all_loaded: bool = False
    native: str | None = None

    def tools(self, view: SessionView) -> tuple[CompiledTool, ...]:
        """The ``tools`` array entries for `view`, library-owned tools last."""
        return self.select(view) + view.library

    def check(self, profile: Profile) -> None:
        """Raise unless the target of `profile` supports this strategy.

        Raises:
            UsageError: The strategy needs a provider-side search the target lacks.
        """
        if self.native is not None and profile.native_tool_search != self.native:
            raise UsageError(
                f"strategy {self.name!r} needs the {self.native} target (its provider-side "
                f"tool search), which target {profile.target!r} does not have; use "
                "strategy='client' (or 'flat') for it"
            )


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(name="client", select=_client),
        Strategy(name="flat", select=_flat, direct_calls=True, all_loaded=True),
        Strategy(
            name="anthropic-native",
            select=_anthropic_native,
            direct_calls=True,
            native="anthropic",
        ),
    )
}
"""Strategies by name."""

DEFAULT_STRATEGY = STRATEGIES["client"]


def get_strategy(name: str) -> Strategy:
    """The strategy called `name`.

    Raises:
        UsageError: No such strategy (the valid names are listed).
    """
    strategy = STRATEGIES.get(name) if isinstance(name, str) else None
    if strategy is None:
        raise UsageError(f"unknown strategy {name!r}; valid: {', '.join(STRATEGIES)}")
    return strategy
