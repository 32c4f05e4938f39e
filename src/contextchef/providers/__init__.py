"""Provider adapters: one per wire API, selected by target name.

Targets: ``anthropic`` (Messages), ``openai`` (Chat Completions), ``deepseek`` (Chat
Completions with DeepSeek's ``reasoning_content``), ``responses`` (OpenAI Responses),
``gemini`` (google-genai ``generate_content``). Parsers (``from_anthropic``,
``from_openai``, ``from_responses``, ``from_gemini``) read each provider's request
history into the IR.
"""

from __future__ import annotations

from contextchef._errors import UnknownTargetError, shown
from contextchef.providers._base import (
    Adapter,
    CacheAuditFinding,
    ModelRules,
    Profile,
    RequestOptions,
)
from contextchef.providers._ingest import (
    ReadResponse,
    ResponseNotice,
    parse_response,
    read_response,
    response_notices,
)
from contextchef.providers._parsing import ParsedHistory
from contextchef.providers.anthropic._parse import from_anthropic
from contextchef.providers.anthropic._render import AnthropicAdapter
from contextchef.providers.gemini._parse import from_gemini, synthetic_index
from contextchef.providers.gemini._render import GeminiAdapter
from contextchef.providers.openai_chat._parse import from_openai
from contextchef.providers.openai_chat._render import DeepSeekAdapter, OpenAIChatAdapter
from contextchef.providers.responses._parse import from_responses
from contextchef.providers.responses._render import ResponsesAdapter

__all__ = [
    "TARGETS",
    "Adapter",
    "AnthropicAdapter",
    "CacheAuditFinding",
    "DeepSeekAdapter",
    "GeminiAdapter",
    "ModelRules",
    "OpenAIChatAdapter",
    "ParsedHistory",
    "Profile",
    "ReadResponse",
    "RequestOptions",
    "ResponseNotice",
    "ResponsesAdapter",
    "from_anthropic",
    "from_gemini",
    "from_openai",
    "from_responses",
    "get_adapter",
    "parse_response",
    "read_response",
    "response_notices",
    "synthetic_index",
]

_ADAPTERS: dict[str, Adapter] = {
    "anthropic": AnthropicAdapter(),
    "openai": OpenAIChatAdapter(),
    "deepseek": DeepSeekAdapter(),
    "responses": ResponsesAdapter(),
    "gemini": GeminiAdapter(),
}
TARGETS: tuple[str, ...] = tuple(sorted(_ADAPTERS))


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
