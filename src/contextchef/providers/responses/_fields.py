"""Responses: the request fields ``extra`` may add.

The adapter copies ``extra`` to the payload's top level (`ResponsesAdapter.assemble`),
which is sent as the keyword arguments of ``client.responses.create(**payload)``. It
takes keyword arguments only and refuses any other ("create() got an unexpected keyword
argument"): the fields of the request TypedDicts ``ResponseCreateParamsNonStreaming`` /
``ResponseCreateParamsStreaming`` (``openai.types.responses.response_create_params``),
plus the call's own options (`CALL_OPTIONS`; ``extra_body`` carries a field newer than
the installed SDK), plus ``compaction``, which is no API field but asks compile for the
keyword arguments of ``client.responses.compact`` (`NativeContext.on_demand`,
`_context.compact_body`).

Values are not checked: the SDK does not check them either (TypedDicts), and the API
answers for them. A name in `DECLARED` (the fields of openai 3.63.0) or `CALL_OPTIONS`
passes without importing the SDK (importing openai 3.63.0 alone takes 0.3 to 0.6 s and
40 MB, 70,000 objects that every later full garbage collection walks); any other is
looked up in the installed openai where it imports, so a field a newer SDK added passes,
and a name neither knows is refused. (With an older SDK, a declared field it lacks is
left to its call to refuse.)
"""

from __future__ import annotations

from contextchef._cache import lru_cache
from contextchef.providers._compacted import COMPACTION
from contextchef.providers._extra_fields import CALL_OPTIONS, EXTRA_BODY, ExtraFields, sdk_keys

__all__ = ["DECLARED", "FIELDS"]

DECLARED = (
    "access_programs",
    "background",
    "background_options",
    "context_management",
    "conversation",
    "image",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "model",
    "moderation",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
)
"""The request fields of ``responses.create`` in openai 3.63.0 (used when it does not
import)."""

_MODULE = "openai.types.responses.response_create_params"
_TYPES = ("ResponseCreateParamsNonStreaming", "ResponseCreateParamsStreaming")


@lru_cache(1)
def _names() -> frozenset[str]:
    """The installed SDK's request fields, else `DECLARED`; with `CALL_OPTIONS`, compaction."""
    found = sdk_keys(_MODULE, *_TYPES) or frozenset(DECLARED)
    return found | frozenset(CALL_OPTIONS) | {COMPACTION}


_GEMINI = "that is Gemini's; give temperature, top_p, reasoning, text... directly"

FIELDS = ExtraFields(
    api="Responses",
    request="extra gives keyword arguments of openai's client.responses.create",
    names=_names,
    declared=frozenset((*DECLARED, *CALL_OPTIONS, COMPACTION)),
    hints={
        "max_completion_tokens": (
            "that is Chat Completions' output cap; pass compile(max_tokens=...), sent as "
            "max_output_tokens"
        ),
        "reasoning_effort": "that is Chat Completions' name; use reasoning={'effort': ...}",
        "response_format": (
            "that is Chat Completions' name; use text={'format': {...}} (a json_schema "
            "format has name, schema and strict beside its type, not nested)"
        ),
        "verbosity": "that is Chat Completions' name; use text={'verbosity': ...}",
        "stop": "Responses takes no stop sequences",
        "stop_sequences": "that is Anthropic's and Gemini's; Responses takes no stop sequences",
        "thinking": "that is Anthropic's; use reasoning={'effort': ...}",
        "output_config": (
            "that is Anthropic's; use text={'format': ...} and reasoning={'effort': ...}"
        ),
        "generation_config": _GEMINI,
        "generationConfig": _GEMINI,
        "tool_config": "that is Gemini's; Responses' is tool_choice",
    },
    escape=EXTRA_BODY,
)
"""The Responses wire's `ExtraFields`."""
