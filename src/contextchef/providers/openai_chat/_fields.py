"""Chat Completions: the request fields ``extra`` may add (``openai`` and ``deepseek``).

The adapter copies ``extra`` to the payload's top level (`OpenAIChatAdapter.assemble`),
which is sent as the keyword arguments of ``client.chat.completions.create(**payload)``
(DeepSeek too, through ``openai.OpenAI(base_url=...)``). It takes keyword arguments
only and refuses any other ("create() got an unexpected keyword argument"): the fields
of the request TypedDicts ``CompletionCreateParamsNonStreaming`` /
``CompletionCreateParamsStreaming`` (``openai.types.chat.completion_create_params``),
plus the call's own options (`CALL_OPTIONS`). A field the OpenAI SDK does not define,
newer than it or another provider's (DeepSeek's ``thinking``), goes inside
``extra_body``, which the SDK merges into the JSON body.

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
from contextchef.providers._extra_fields import CALL_OPTIONS, EXTRA_BODY, ExtraFields, sdk_keys

__all__ = ["DECLARED", "FIELDS"]

DECLARED = (
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "messages",
    "metadata",
    "modalities",
    "model",
    "moderation",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
)
"""The request fields of ``chat.completions.create`` in openai 3.63.0 (used when it does
not import)."""

_MODULE = "openai.types.chat.completion_create_params"
_TYPES = ("CompletionCreateParamsNonStreaming", "CompletionCreateParamsStreaming")


@lru_cache(1)
def _names() -> frozenset[str]:
    """The installed SDK's request fields, else `DECLARED`; with `CALL_OPTIONS`."""
    return (sdk_keys(_MODULE, *_TYPES) or frozenset(DECLARED)) | frozenset(CALL_OPTIONS)


_GEMINI = "that is Gemini's; give temperature, top_p, stop... directly"

FIELDS = ExtraFields(
    api="Chat Completions",
    request="extra gives keyword arguments of openai's client.chat.completions.create",
    names=_names,
    declared=frozenset((*DECLARED, *CALL_OPTIONS)),
    hints={
        "max_output_tokens": (
            "that is the Responses and Gemini output cap; pass compile(max_tokens=...), "
            "sent as max_completion_tokens"
        ),
        "stop_sequences": "that is Anthropic's and Gemini's name; Chat Completions' is stop",
        "thinking": (
            "that is Anthropic's; Chat Completions takes reasoning_effort (DeepSeek's "
            "thinking goes inside extra_body: extra={'extra_body': {'thinking': ...}})"
        ),
        "reasoning": "that is Responses' reasoning={'effort': ...}; here it is reasoning_effort",
        "text": (
            "that is Responses' text={'format': ..., 'verbosity': ...}; here they are "
            "response_format and verbosity"
        ),
        "output_config": "that is Anthropic's; here they are response_format and reasoning_effort",
        "generation_config": _GEMINI,
        "generationConfig": _GEMINI,
        "tool_config": "that is Gemini's; Chat Completions' is tool_choice",
    },
    escape=EXTRA_BODY,
)
"""The Chat Completions wire's `ExtraFields`."""
