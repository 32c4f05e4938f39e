"""The target table: every compile target's adapter, and the order wires are detected in.

Adding a target on an existing wire is its adapter (a `Profile` with its history rules,
default model and API host, in ``providers/<wire>/``) plus one line in `_ADAPTERS`
below; a new wire adds its package and its reader to `WIRES`. Everything else
(`TARGETS`, `PRESETS`, `WIRES`, the recordings' targets) is derived from this table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from contextchef._errors import UnknownTargetError, shown
from contextchef.history._normalize import PORTABLE, HistoryRules
from contextchef.providers._base import Adapter
from contextchef.providers._reading import WireReader
from contextchef.providers.anthropic._parse import READER as _ANTHROPIC_READER
from contextchef.providers.anthropic._render import AnthropicAdapter
from contextchef.providers.gemini._parse import READER as _GEMINI_READER
from contextchef.providers.gemini._render import GeminiAdapter
from contextchef.providers.gemini_interactions._parse import READER as _INTERACTIONS_READER
from contextchef.providers.gemini_interactions._render import GeminiInteractionsAdapter
from contextchef.providers.openai_chat._parse import READER as _CHAT_READER
from contextchef.providers.openai_chat._render import DeepSeekAdapter, OpenAIChatAdapter
from contextchef.providers.responses._parse import READER as _RESPONSES_READER
from contextchef.providers.responses._render import ResponsesAdapter

__all__ = ["PRESETS", "TARGETS", "WIRES", "WRITTEN_FIELDS", "adapters", "get_adapter", "target_of"]

_ADAPTERS: dict[str, Adapter] = {
    "anthropic": AnthropicAdapter(),
    "openai": OpenAIChatAdapter(),
    "deepseek": DeepSeekAdapter(),
    "responses": ResponsesAdapter(),
    "gemini": GeminiAdapter(),
    "gemini-interactions": GeminiInteractionsAdapter(),
}
"""Target name -> adapter. On a shared wire the first target is the wire's default
(a Chat Completions recording is ``openai`` unless its URL names DeepSeek's host)."""

WIRES: tuple[WireReader, ...] = (
    _INTERACTIONS_READER,  # before Responses: its payloads also carry ``input``
    _GEMINI_READER,
    _RESPONSES_READER,
    _ANTHROPIC_READER,
    _CHAT_READER,  # last: takes any ``messages`` payload or message list the others leave
)
"""Each wire format's reader, in the order a response, payload or message list is matched
against them (`WireReader.detect`, `detect_request`, `detect_history`)."""

TARGETS: tuple[str, ...] = tuple(sorted(_ADAPTERS))
"""Every compile target's name, sorted."""

PRESETS: Mapping[str, HistoryRules] = {
    PORTABLE.name: PORTABLE,
    **{a.profile.history.name: a.profile.history for a in _ADAPTERS.values()},
}
"""History rules by name: ``portable`` (valid everywhere) and each target's own."""

WRITTEN_FIELDS: frozenset[str] = frozenset().union(*(a.profile.written for a in _ADAPTERS.values()))
"""Request fields some adapter writes itself (`Profile.written`): refused in ``extra`` on
every target, so one ``extra`` means the same wherever it goes."""


def get_adapter(target: str) -> Adapter:
    """The adapter for `target`.

    Raises:
        UnknownTargetError: `target` is not one of `TARGETS`.
    """
    adapter = _ADAPTERS.get(target) if isinstance(target, str) else None
    if adapter is None:
        raise UnknownTargetError(
            f"unknown target {shown(target, 80)}; valid targets: {', '.join(TARGETS)}"
        )
    return adapter


def adapters() -> Mapping[str, Adapter]:
    """Target name -> adapter, in the table's order (a new dict)."""
    return dict(_ADAPTERS)


def target_of(wire: str, urls: Iterable[str] = ()) -> str:
    """The target a request in `wire`'s format was sent to.

    Args:
        wire: A `Profile.wire`.
        urls: Endpoints the request was sent to, if recorded: a target of that wire whose
            `Profile.api_host` one of them names wins.

    Returns:
        That target, else the wire's default (its first target in the table).

    Raises:
        KeyError: No target speaks `wire`.
    """
    names = [n for n, a in _ADAPTERS.items() if a.profile.wire == wire]
    if not names:
        raise KeyError(wire)
    urls = list(urls)
    for name in names:
        host = _ADAPTERS[name].profile.api_host
        if host and any(host in url for url in urls):
            return name
    return names[0]
