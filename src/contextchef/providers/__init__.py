"""Provider adapters: one per wire API, selected by target name.

Targets: ``anthropic`` (Messages), ``openai`` (Chat Completions), ``deepseek`` (Chat
Completions with DeepSeek's ``reasoning_content``), ``responses`` (OpenAI Responses),
``gemini`` (google-genai ``generate_content``), ``gemini-interactions`` (google-genai
``interactions.create``, stateless). Parsers (``from_anthropic``,
``from_openai``, ``from_responses``, ``from_gemini``) read each provider's request
history into the IR; each wire's `WireReader` reads its responses (`read_response`,
`Adapter.read_response`), request payloads and message lists. The target table
(`providers._targets`) registers every target's adapter.

Names are loaded on first use (PEP 562, as in ``contextchef``): importing one of these
modules does not import every wire package (issue 27, fast start).
"""

import typing as _typing

from contextchef._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from contextchef.providers._base import (
        Adapter,
        CacheAuditFinding,
        Chain,
        ModelRules,
        Profile,
        RequestOptions,
        extra_left_out,
    )
    from contextchef.providers._ingest import parse_response, read_response, response_notices
    from contextchef.providers._parsing import ParsedHistory
    from contextchef.providers._reading import ReadResponse, ResponseNotice, WireReader
    from contextchef.providers._targets import (
        PRESETS,
        TARGETS,
        WIRES,
        WRITTEN_FIELDS,
        adapters,
        get_adapter,
        target_of,
        wire_reader,
    )
    from contextchef.providers._usage import CacheReport, CacheRules
    from contextchef.providers.anthropic._parse import from_anthropic
    from contextchef.providers.anthropic._render import AnthropicAdapter
    from contextchef.providers.gemini import synthetic_index, synthetic_offset
    from contextchef.providers.gemini._parse import from_gemini
    from contextchef.providers.gemini._render import GeminiAdapter
    from contextchef.providers.gemini_interactions._parse import from_interactions
    from contextchef.providers.gemini_interactions._render import GeminiInteractionsAdapter
    from contextchef.providers.openai_chat._parse import from_openai
    from contextchef.providers.openai_chat._render import DeepSeekAdapter, OpenAIChatAdapter
    from contextchef.providers.responses._parse import from_responses
    from contextchef.providers.responses._render import ResponsesAdapter

_LAZY_EXPORTS: dict[str, tuple[str, ...]] = {
    "contextchef.providers._base": (
        "Adapter",
        "CacheAuditFinding",
        "Chain",
        "ModelRules",
        "Profile",
        "RequestOptions",
        "extra_left_out",
    ),
    "contextchef.providers._ingest": ("parse_response", "read_response", "response_notices"),
    "contextchef.providers._parsing": ("ParsedHistory",),
    "contextchef.providers._reading": ("ReadResponse", "ResponseNotice", "WireReader"),
    "contextchef.providers._targets": (
        "PRESETS",
        "TARGETS",
        "WIRES",
        "WRITTEN_FIELDS",
        "adapters",
        "get_adapter",
        "target_of",
        "wire_reader",
    ),
    "contextchef.providers._usage": ("CacheReport", "CacheRules"),
    "contextchef.providers.anthropic._parse": ("from_anthropic",),
    "contextchef.providers.anthropic._render": ("AnthropicAdapter",),
    "contextchef.providers.gemini": ("synthetic_index", "synthetic_offset"),
    "contextchef.providers.gemini._parse": ("from_gemini",),
    "contextchef.providers.gemini._render": ("GeminiAdapter",),
    "contextchef.providers.gemini_interactions._parse": ("from_interactions",),
    "contextchef.providers.gemini_interactions._render": ("GeminiInteractionsAdapter",),
    "contextchef.providers.openai_chat._parse": ("from_openai",),
    "contextchef.providers.openai_chat._render": ("DeepSeekAdapter", "OpenAIChatAdapter"),
    "contextchef.providers.responses._parse": ("from_responses",),
    "contextchef.providers.responses._render": ("ResponsesAdapter",),
}
"""Module -> the public names it provides (the TYPE_CHECKING imports above list the same)."""

__getattr__, __dir__ = _lazy_exports(__name__, _LAZY_EXPORTS, globals())


__all__ = [
    "PRESETS",
    "TARGETS",
    "WIRES",
    "WRITTEN_FIELDS",
    "Adapter",
    "AnthropicAdapter",
    "CacheAuditFinding",
    "CacheReport",
    "CacheRules",
    "Chain",
    "DeepSeekAdapter",
    "GeminiAdapter",
    "GeminiInteractionsAdapter",
    "ModelRules",
    "OpenAIChatAdapter",
    "ParsedHistory",
    "Profile",
    "ReadResponse",
    "RequestOptions",
    "ResponseNotice",
    "ResponsesAdapter",
    "WireReader",
    "adapters",
    "extra_left_out",
    "from_anthropic",
    "from_gemini",
    "from_interactions",
    "from_openai",
    "from_responses",
    "get_adapter",
    "parse_response",
    "read_response",
    "response_notices",
    "synthetic_index",
    "synthetic_offset",
    "target_of",
    "wire_reader",
]
