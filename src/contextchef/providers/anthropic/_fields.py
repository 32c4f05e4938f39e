"""Anthropic Messages: the request fields ``extra`` may add.

The adapter copies ``extra`` to the payload's top level (`AnthropicAdapter.assemble`),
which is sent as the keyword arguments of ``client.messages.create(**payload)``, or of
``client.beta.messages.create`` for a request that uses betas (the docs' history and
tool-management guides: native context management, inline tool changes). Both take
keyword arguments only and refuse any other ("create() got an unexpected keyword
argument"). The fields taken are those of either call: the request TypedDicts
(``MessageCreateParamsNonStreaming`` / ``MessageCreateParamsStreaming``, for ``stream``)
of ``anthropic.types.message_create_params`` and of its beta twin, so a beta-only field
(``context_management``, ``compaction``, ``mcp_servers``, ``betas``...) passes: it is
valid for the beta call, which such a request is sent with. Plus the calls' own
options (`CALL_OPTIONS`: ``extra_body`` carries a field newer than the installed SDK).

Values are not checked: the SDK does not check them either (TypedDicts), and the API
answers for them. A name in `DECLARED` (the fields of anthropic 2.17.0, which has no
``temperature``, ``top_p`` or ``top_k``) or `CALL_OPTIONS` passes without importing the
SDK (importing anthropic 2.17.0 takes 0.8 s and 70 MB here, 155,000 objects that every
later full garbage collection walks); any other is looked up in the installed anthropic
where it imports, so a field a newer SDK added passes, and a name neither knows is
refused. (With an SDK older than 2.17.0, a declared field it lacks is left to its call
to refuse.)
"""

from __future__ import annotations

from types import MappingProxyType

from contextchef._cache import lru_cache
from contextchef.providers._compacted import ON_DEMAND_BETA
from contextchef.providers._extra_fields import CALL_OPTIONS, EXTRA_BODY, ExtraFields, sdk_keys
from contextchef.providers.anthropic._context import CONTEXT_MANAGEMENT_BETA
from contextchef.providers.anthropic._models import BINDING_BETA

__all__ = ["DECLARED", "FIELDS", "FIELD_BETAS"]

FIELD_BETAS = MappingProxyType(
    {
        # build-with-claude/preserved-thinking/prefix-checks
        "thinking.block_binding": BINDING_BETA,
        "compaction": ON_DEMAND_BETA,
        "context_management": CONTEXT_MANAGEMENT_BETA,  # given in extra, as ContextPolicy
        # agents-and-tools/mcp-connector: the current connector (mcp_toolset); a host on
        # the older tool_configuration shape pins mcp-client-2025-04-04 in betas
        "mcp_servers": "mcp-client-2025-11-20",
        # SDK BetaFallbackParam: "These rules apply with the server-side-fallback-2026-07-01
        # beta header" (build-with-claude/refusals-and-fallback)
        "fallbacks": "server-side-fallback-2026-07-01",
        # SDK BetaFallbackCreditTokenParam: the object form "Requires anthropic-beta:
        # fallback-credit-2026-07-01; without that header the field accepts the bare string only"
        "fallback_credit_token.token": "fallback-credit-2026-07-01",
        # SDK lib/threads/_thread_state.py MESSAGE_THREADS_BETA
        "thread": "message-threads-2026-08-12",
    }
)
"""Request field (dotted path) -> the ``anthropic-beta`` value a request using it sends
(`Profile.field_betas`, `providers._headers`). These are the fields of the installed
SDK's beta ``MessageCreateParams`` that its GA type lacks, with the beta their docs
name; ``billing_policy`` is left out (the SDK names three ``user-profiles-*`` betas
and none for the field): it needs ``compile(betas=...)``, as ``betas`` itself is merged
into the header (`providers._headers`)."""

DECLARED = (
    "betas",
    "billing_policy",
    "cache_control",
    "compaction",
    "container",
    "context_management",
    "diagnostics",
    "fallback_credit_token",
    "fallbacks",
    "inference_geo",
    "max_tokens",
    "mcp_servers",
    "messages",
    "metadata",
    "model",
    "output_config",
    "service_tier",
    "speed",
    "stop_sequences",
    "stream",
    "system",
    "thinking",
    "thread",
    "tool_choice",
    "tools",
    "user_profile_id",
    "workspace_id",
)
"""The request fields of ``messages.create`` and ``beta.messages.create`` in anthropic
2.17.0 (used when it does not import)."""

_TYPES = ("MessageCreateParamsNonStreaming", "MessageCreateParamsStreaming")
_MODULES = ("anthropic.types.message_create_params", "anthropic.types.beta.message_create_params")


@lru_cache(1)
def _names() -> frozenset[str]:
    """The installed SDK's request fields (both calls), else `DECLARED`; with `CALL_OPTIONS`."""
    found = frozenset().union(*(sdk_keys(module, *_TYPES) for module in _MODULES))
    return (found or frozenset(DECLARED)) | frozenset(CALL_OPTIONS)


_CAP = "Anthropic's is max_tokens, which compile writes: pass compile(max_tokens=...)"

FIELDS = ExtraFields(
    api="Anthropic Messages",
    request=(
        "extra gives keyword arguments of anthropic's client.messages.create, or "
        "client.beta.messages.create for a request with betas"
    ),
    names=_names,
    declared=frozenset((*DECLARED, *CALL_OPTIONS)),
    hints={
        "max_completion_tokens": f"that is Chat Completions' output cap; {_CAP}",
        "max_output_tokens": f"that is the Responses and Gemini output cap; {_CAP}",
        "generation_config": "that is Gemini's; give stop_sequences, thinking... directly",
        "generationConfig": "that is Gemini's; give stop_sequences, thinking... directly",
        "stop": "that is Chat Completions' name; Anthropic's is stop_sequences (a list)",
        "reasoning_effort": "that is Chat Completions'; use output_config={'effort': ...}",
        "reasoning": "that is Responses'; use output_config={'effort': ...} and thinking",
        "response_format": "that is Chat Completions'; use output_config={'format': ...}",
        "text": "that is Responses' output format; use output_config={'format': ...}",
        "user": "that is OpenAI's; Anthropic takes metadata={'user_id': ...}",
        "parallel_tool_calls": (
            "that is OpenAI's; Anthropic takes tool_choice={'type': 'auto', "
            "'disable_parallel_tool_use': True}"
        ),
        "tool_config": "that is Gemini's; Anthropic's is tool_choice",
    },
    escape=EXTRA_BODY,
)
"""The Anthropic wire's `ExtraFields`."""
