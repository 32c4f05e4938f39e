"""Gemini ``generateContent``'s ``config``: the fields ``extra`` may give it.

The adapter copies ``extra`` into ``config`` (`GeminiAdapter.assemble`), which
``client.models.generate_content`` reads as google-genai's ``GenerateContentConfig``: a
pydantic model that forbids keys it does not define, in every nested model too
(``ThinkingConfig``, ``ToolConfig``, ``SafetySetting``...), and takes each field in
snake_case or camelCase. ``generation_config`` (the REST body's and the Interactions
API's name; research gemini-interactions.md §6) is no field of it: its fields go at
the top of ``config``. Checked by the installed SDK's model where google-genai imports
(the fields, the nested models and the value types); else against `DECLARED`, the field
names of google-genai 3.6.1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextchef._cache import lru_cache
from contextchef.providers._casing import camel
from contextchef.providers._extra_fields import ExtraFields, model_problem, sdk_attribute

__all__ = ["DECLARED", "FIELDS"]

DECLARED = (
    "audio_timestamp",
    "audio_transcription_config",
    "automatic_continuation",
    "automatic_function_calling",
    "cached_content",
    "candidate_count",
    "continuation_token",
    "enable_enhanced_civic_answers",
    "frequency_penalty",
    "generation_output_config",
    "http_options",
    "image_config",
    "labels",
    "logprobs",
    "max_output_tokens",
    "media_resolution",
    "model_armor_config",
    "model_selection_config",
    "presence_penalty",
    "response_json_schema",
    "response_logprobs",
    "response_mime_type",
    "response_modalities",
    "response_schema",
    "routing_config",
    "safety_settings",
    "seed",
    "service_tier",
    "should_return_http_response",
    "speech_config",
    "stop_sequences",
    "store",
    "system_instruction",
    "temperature",
    "thinking_config",
    "tool_config",
    "tools",
    "top_k",
    "top_p",
)
"""``GenerateContentConfig``'s fields in google-genai 3.6.1 (used when it does not import)."""


def _model() -> Any:
    return sdk_attribute("google.genai.types", "GenerateContentConfig")


@lru_cache(1)
def _names() -> frozenset[str]:
    """The installed SDK's fields (and camelCase aliases), else `DECLARED`'s."""
    model = _model()
    fields = getattr(model, "model_fields", None)
    found = tuple(fields) if isinstance(fields, Mapping) else DECLARED
    return frozenset(found) | {camel(k) for k in found}


def _validate(extra: Mapping[str, Any]) -> tuple[str, str] | None:
    model = _model()
    return model_problem(model, extra) if model is not None else None


_SPREAD = "give its fields (temperature, top_p, thinking_config...) directly in extra"

FIELDS = ExtraFields(
    api="Gemini generateContent",
    request="extra goes into config, google-genai's GenerateContentConfig; camelCase too",
    model="google-genai's GenerateContentConfig",
    names=_names,
    hints={
        "generation_config": f"that is the REST / Interactions name; {_SPREAD}",
        "generationConfig": f"that is the REST name; {_SPREAD}",
        "metadata": "Gemini takes no request metadata (labels: string keys and values)",
    },
    validate=_validate,
    holder=lambda payload: payload.get("config"),
)
"""Gemini ``generateContent``'s `ExtraFields`."""
