"""The adapter interface and the provider capability table (providers layer).

An adapter is a set of pure functions for one wire API: compiled tools + system text +
IR messages -> a payload dict for the official SDK call. Adapters hold no state, never
see the registry, and build dicts in a fixed key order so `canonical_dumps` of a payload
is byte-stable. What a provider can do is data in `Profile`, not branches in adapters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from contextchef._json import JsonValue, canonical_dumps, thaw
from contextchef._messages import Message
from contextchef._view import CompiledTool

__all__ = ["ANTHROPIC_DEFAULT_MAX_TOKENS", "Adapter", "Profile", "RequestOptions", "copy_schema"]

ANTHROPIC_DEFAULT_MAX_TOKENS = 4096
"""Output cap sent to Anthropic when the caller gives none (the API requires one)."""


@dataclass(frozen=True, kw_only=True)
class Profile:
    """What one provider API supports.

    Attributes:
        target: The target's name (``anthropic``, ``openai``, ``responses``, ``gemini``).
        sdk_call: The SDK call the payload is made for, e.g. ``client.messages.create``.
        native_tool_search: The provider can expand deferred tools itself.
        strict_schemas: The provider has a strict (structured-output) tool mode.
        positional_system: System messages may appear inside the conversation.
        name_pattern: The provider's documented tool-name rule.
    """

    target: str
    sdk_call: str
    native_tool_search: bool
    strict_schemas: bool
    positional_system: bool
    name_pattern: str


@dataclass(frozen=True, kw_only=True)
class RequestOptions:
    """Per-request settings.

    Attributes:
        model: Model name, passed through.
        max_tokens: Output cap in tokens, or None for the provider's default (Anthropic
            requires a value: `ANTHROPIC_DEFAULT_MAX_TOKENS` is sent).
        cache_system: Anthropic: mark the end of the system prompt as a prompt-cache
            breakpoint (``cache_control: {"type": "ephemeral"}``), which caches tools and
            system together.
    """

    model: str
    max_tokens: int | None = None
    cache_system: bool = True


class Adapter(Protocol):
    """One wire API. Implementations are stateless; every method is a pure function."""

    profile: Profile

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """The ``tools`` array in this API's shape (new dicts, caller may mutate)."""

    def render_request(
        self,
        *,
        system: str,
        tools: Sequence[CompiledTool],
        messages: Sequence[Message],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The full payload, to be passed as ``**payload`` to `Profile.sdk_call`."""

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """Canonical JSON text of the payload's ``system``, ``tools`` and ``messages``."""


def copy_schema(schema: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A deep copy, so callers can mutate payloads without touching tool definitions."""
    out = thaw(schema)
    assert isinstance(out, dict)
    return out


def dumps_segment(value: Any) -> str:
    """Canonical text of one payload segment (``""`` for an absent one)."""
    return "" if value is None else canonical_dumps(value)
