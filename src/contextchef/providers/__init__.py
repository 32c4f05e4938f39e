"""Provider adapters: one per wire API, selected by target name.

Targets: ``anthropic`` (Messages), ``openai`` (Chat Completions), ``deepseek`` (Chat
Completions with DeepSeek's ``reasoning_content``), ``responses`` (OpenAI Responses),
``gemini`` (google-genai ``generate_content``), ``gemini-interactions`` (google-genai
``interactions.create``, stateless). Parsers (``from_anthropic``,
``from_openai``, ``from_responses``, ``from_gemini``) read each provider's request
history into the IR; each wire's `WireReader` reads its responses (`read_response`,
`Adapter.read_response`), request payloads and message lists. The target table
(`providers._targets`) registers every target's adapter.
"""

from __future__ import annotations

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
from contextchef.providers._reading import ReadResponse, ResponseNotice, WireReader, wire_reader
from contextchef.providers._targets import (
    PRESETS,
    TARGETS,
    WIRES,
    WRITTEN_FIELDS,
    adapters,
    get_adapter,
    target_of,
)
from contextchef.providers._usage import CacheReport, CacheRules
from contextchef.providers.anthropic._parse import from_anthropic
from contextchef.providers.anthropic._render import AnthropicAdapter
from contextchef.providers.gemini._parse import from_gemini, synthetic_index, synthetic_offset
from contextchef.providers.gemini._render import GeminiAdapter
from contextchef.providers.gemini_interactions._parse import from_interactions
from contextchef.providers.gemini_interactions._render import GeminiInteractionsAdapter
from contextchef.providers.openai_chat._parse import from_openai
from contextchef.providers.openai_chat._render import DeepSeekAdapter, OpenAIChatAdapter
from contextchef.providers.responses._parse import from_responses
from contextchef.providers.responses._render import ResponsesAdapter

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
