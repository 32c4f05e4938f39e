"""Interactions ``create``: the request fields ``extra`` may add.

The adapter passes ``extra`` as top-level keyword arguments of
``client.interactions.create(**payload)`` (`GeminiInteractionsAdapter.assemble`), which
refuses a key no request field defines ("create() got unexpected keyword argument(s)";
google-genai's ``_CREATE_BODY_KEYS``, the fields of ``CreateModelInteraction`` and
``CreateAgentInteraction``), besides its own call options (``timeout``, ``extra_body``...).
Fields are snake_case only (research gemini-interactions.md §6: ``generationConfig`` is
refused). Nested objects are not checked: the Interactions models keep keys they do not
define. Checked against the installed SDK's request models where google-genai imports,
else against `DECLARED` (google-genai 3.6.1).
"""

from __future__ import annotations

from contextchef._cache import lru_cache
from contextchef.providers._extra_fields import ExtraFields, sdk_attribute

__all__ = ["DECLARED", "FIELDS"]

DECLARED = (
    "agent",
    "agent_config",
    "background",
    "cached_content",
    "continuation_token",
    "environment",
    "generation_config",
    "input",
    "labels",
    "model",
    "previous_interaction_id",
    "response_format",
    "response_mime_type",
    "response_modalities",
    "safety_settings",
    "service_tier",
    "store",
    "stream",
    "system_instruction",
    "tools",
    "webhook_config",
)
"""The request fields of ``CreateModelInteraction`` / ``CreateAgentInteraction`` in
google-genai 3.6.1 (used when it does not import)."""

CALL_OPTIONS = (
    "api_version",
    "automatic_continuation",
    "extra_body",
    "extra_headers",
    "extra_query",
    "timeout",
)
"""``create``'s own keyword arguments besides the body (google-genai 3.6.1)."""

_MODULE = "google.genai._gaos.types.interactions"


@lru_cache(1)
def _names() -> frozenset[str]:
    """The installed SDK's request fields (by alias), else `DECLARED`; with `CALL_OPTIONS`."""
    found: set[str] = set()
    for name in ("CreateModelInteraction", "CreateAgentInteraction"):
        fields = getattr(sdk_attribute(_MODULE, name), "model_fields", None)
        if isinstance(fields, dict):
            found.update(f.alias or k for k, f in fields.items())
    return frozenset(found or DECLARED) | frozenset(CALL_OPTIONS)


FIELDS = ExtraFields(
    api="Gemini Interactions",
    request="extra gives keyword arguments of google-genai's client.interactions.create",
    names=_names,
    hints={
        "generationConfig": "use the snake_case generation_config",
        "metadata": "Interactions takes no request metadata (labels: string keys and values)",
    },
    holder=lambda payload: None,  # its generation_config merges with the cap compile writes
)
"""The Interactions wire's `ExtraFields`."""
