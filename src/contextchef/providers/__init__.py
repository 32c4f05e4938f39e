"""Provider adapters: one per wire API, selected by target name.

Targets: ``anthropic`` (Messages), ``openai`` (Chat Completions), ``responses`` (OpenAI
Responses), ``gemini`` (google-genai ``generate_content``).
"""

from __future__ import annotations

from contextchef._errors import UnknownTargetError
from contextchef.providers._anthropic import AnthropicAdapter
from contextchef.providers._base import Adapter, Profile, RequestOptions
from contextchef.providers._gemini import GeminiAdapter
from contextchef.providers._openai_chat import OpenAIChatAdapter
from contextchef.providers._responses import ResponsesAdapter

__all__ = [
    "TARGETS",
    "Adapter",
    "AnthropicAdapter",
    "GeminiAdapter",
    "OpenAIChatAdapter",
    "Profile",
    "RequestOptions",
    "ResponsesAdapter",
    "get_adapter",
]

_ADAPTERS: dict[str, Adapter] = {
    "anthropic": AnthropicAdapter(),
    "openai": OpenAIChatAdapter(),
    "responses": ResponsesAdapter(),
    "gemini": GeminiAdapter(),
}
TARGETS: tuple[str, ...] = tuple(sorted(_ADAPTERS))


def get_adapter(target: str) -> Adapter:
    """The adapter for `target`.

    Raises:
        UnknownTargetError: `target` is not one of `TARGETS`.
    """
    try:
        return _ADAPTERS[target]
    except KeyError:
        raise UnknownTargetError(
            f"unknown target {target!r}; valid targets: {', '.join(TARGETS)}"
        ) from None
