"""Deterministic fakes of the providers' HTTP endpoints, for tests of agent loops.

Each fake stands in for one wire API behind the official SDK client, through the SDK's
own httpx mock transport: `FakeAnthropic` (``POST /v1/messages``), `FakeOpenAIChat`
(``/v1/chat/completions``, also DeepSeek), `FakeResponses` (``/v1/responses``) and
`FakeGemini` (``/models/{model}:generateContent``), `FakeGeminiInteractions`
(``/v1/interactions``, `contextchef.testing._interactions`); `fake_for` picks one per compile
target. A fake answers scripted model turns in the provider's exact response JSON, records
every request, and refuses requests that break the provider's rules (unanswered tool
calls, orphan results, role order, tool names...) with the provider's HTTP 400 error, so
the SDK raises its ``BadRequestError`` (google-genai: ``errors.ClientError``) naming the
rule. Nothing here imports httpx or an SDK; both stay test extras.

Hooking a fake to each SDK (``hx = httpx_for(anthropic)``: ``httpx2`` or ``httpx``)::

    fake = FakeAnthropic().script(
        tool_calls(("read_file", {"path": "README.md"})),  # turn 1: a tool call
        text("Done."),                                      # turn 2: the answer
    )
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(hx))
    # openai.OpenAI(api_key="x", max_retries=0, http_client=FakeOpenAIChat().http_client(hx))
    # genai.Client(api_key="x", http_options=types.HttpOptions(
    #     httpx_client=FakeGemini().http_client(hx)))
    # async clients take fake.async_http_client(hx): anthropic.AsyncAnthropic(...,
    # http_client=...), openai.AsyncOpenAI(...), HttpOptions(httpx_async_client=...)
    message = client.messages.create(**chef.compile("anthropic", model="m").payload)
    assert message.content[0].id == "toolu_0001"
    ...
    assert [r.path for r in fake.requests] == ["/v1/messages", "/v1/messages"]
    assert fake.violations == ()

Provider-native tool search (the provider runs the search inside the model's turn) is
scripted with `provider_search`, naming only the deferred tools found; the fake fills in
the rest from the request it answers::

    fake = FakeAnthropic().script(  # the request declares get_weather with defer_loading
        provider_search("get_weather", query="weather",
                        then=tool_calls(("get_weather", {"city": "Paris"}))),
        text("Sunny."),
    )

`FakeAnthropic` answers with a ``server_tool_use`` named after the request's search tool
(``tool_search_tool_bm25``: input ``{"query": ...}``; ``tool_search_tool_regex``:
``{"pattern": ...}``), its ``tool_search_tool_result`` listing a ``tool_reference`` per
tool found, then the text and ``tool_use`` blocks of ``then``. `FakeResponses` answers
with a hosted ``tool_search_call`` (``execution: "server"``, ``call_id: null``,
arguments ``{"paths": [...]}``) and a ``tool_search_output`` carrying copies of the
request's ``namespace`` (or flat deferred function) entries declaring the found tools,
then ``then``'s items, calls in their namespace. ``error="invalid_tool_input"`` (or another
of `SEARCH_ERROR_CODES`) answers an Anthropic search with its
``tool_search_tool_result_error`` instead. Ids: ``srvtoolu_0001``, ``tsc_0001``,
``tso_0001``. A found name the request does not declare with ``defer_loading: true``, a
request without the provider's search tool, or a `provider_search` turn sent to
`FakeOpenAIChat` / `FakeGemini` is a scripting mistake: the fake answers HTTP 500 naming
the tool and what it could find, records a `Violation` (rule ``provider_search``) and
keeps the turn queued.

`FakeResponses` refuses, in OpenAI's words, a ``reasoning`` input item that no item of
its turn follows (`responses_reasoning_followed`: a reply cut while reasoning, replayed).

Ids are counters per fake (``toolu_0001``, ``call_0001``, ``fc_0001``, ``msg_0001``,
``sig_0001``...), ``created`` is 0, usage is 0 (the OpenAI fakes: input tokens and their
prompt cache, estimated from the JSON): two identical runs give identical bytes.

`FakeResponses` and `FakeOpenAIChat` model OpenAI's prompt cache
(`contextchef.testing._openai_cache`): on ``gpt-5.6`` and later only explicit
``prompt_cache_breakpoint`` markers (and, in ``implicit`` mode, one breakpoint at the
latest entry) are read and written, the latest 80 considered and at most 4 written per
request; older models cache automatically. ``usage`` reports ``cached_tokens`` and
``cache_write_tokens`` (per TTL on Responses), `cache_outcomes` keeps each request's
`CacheOutcome`, a Responses ``comparison_response_id`` gets ``prompt_cache_diagnostics``,
and misplaced or malformed breakpoints and options are refused in OpenAI's words
(`responses_prompt_cache`, `chat_prompt_cache`).
Set ``max_retries=0`` on anthropic/openai clients so a refused request raises at once.

`FakeAnthropic` also holds long sessions to Anthropic's preserved-thinking rules
(https://platform.claude.com/docs/en/build-with-claude/preserved-thinking and its
sub-pages; rule ids R1-R30 are this fake's numbering of those rules), on the
Claude models named in its table (`claude_model` reads ``claude-opus-5-5``, dated,
Bedrock and Vertex AI spellings alike). Made-up model names (``"m"``) skip all of it:

* the prefix check (`anthropic_thinking_prefix`): a ``thinking`` block sent back on
  Fable/Mythos 5.1-5.2, Opus/Sonnet/Haiku 5.5 must come with the same ``system``, the same
  set of ``tools`` and the same earlier messages as the request whose reply carried it
  (scripted turns sign their reasoning: ``text("ok", reasoning="")`` sends an empty,
  signed block). Any edit is the API's 400 ``messages.<i>.content.<j>: Invalid
  `signature` in `thinking` block. The block is bound to a different conversation...``;
  ``cache_control`` moves, unreferenced ``defer_loading`` tools and removing the oldest,
  newest or all thinking blocks are not edits;
* ``thinking.block_binding.prefix_mismatch_behavior: "drop_block"`` (with the
  `THINKING_BETA` value in ``betas=[...]``; without it the field is a 400) lets the request
  through and lists the dropped blocks in the reply's ``input_transformations``;
* ``role: "system"`` messages: only on models taking them, right after a user message and
  before an assistant message or at the end; ``clear_at`` and tool changes with their betas
  (`anthropic_system_message_placement`, `anthropic_system_message_fields`);
* prefill: a request ending in an assistant message is refused on the models that refuse
  it (`anthropic_no_prefill`);
* ``diagnostics: {"previous_message_id": ...}`` gets the reply's ``diagnostics`` with the
  first ``cache_miss_reason`` against the request that produced that message
  (``defer_loading: true`` tools appended after that request's are outside the prefix;
  any other change to ``tools``, an insertion or a move included, is ``tools_changed``).

These refusals carry the API's wording as the whole error message (`provider_worded`), so
code that parses the provider's 400 can be tested against the fake; `Violation.rule` still
names the rule. Drop `anthropic_thinking_prefix` from ``rules=`` to act as an account the
check is not enforced on (failing blocks are then reported as
``thinking_mismatch_allowed``).

The opaque tokens the fakes issue (thinking signatures, ``compaction`` blocks and items,
Interactions thought signatures) are verified statelessly, as the provider does: each is
sealed with an HMAC under the fake's ``signing_key`` (`FAKE_SIGNING_KEY` by default) over
its content and, for thinking, the prefix it was produced after. A new fake, in another
process, accepts what another fake with the same key issued and gives the same verdict on
edits, so a snapshotted session can resume against a new fake.
"""

from contextchef.testing._beta_fields import (
    FILES_API_BETA,
    anthropic_beta_fields,
    anthropic_file_sources,
)
from contextchef.testing._binding import (
    THINKING_BETA,
    anthropic_block_binding,
    anthropic_thinking_prefix,
)
from contextchef.testing._body import NO_HEADERS
from contextchef.testing._by_wire import fake_for
from contextchef.testing._choice_rules import (
    anthropic_thinking_choice_not_forced,
    anthropic_tool_choice_declared,
    chat_tool_choice_declared,
    gemini_tool_choice_declared,
    responses_tool_choice_declared,
)
from contextchef.testing._claude import ClaudeModel, claude_model, parse_claude_name
from contextchef.testing._context import (
    COMPACT_BETA,
    CONTEXT_MANAGEMENT_BETA,
    ON_DEMAND_COMPACT_BETA,
    ModelView,
    anthropic_compaction_blocks_known,
    anthropic_compaction_closed_turn,
    anthropic_context_management_valid,
)
from contextchef.testing._fake import (
    RECORDED_HEADERS,
    FakeGemini,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    HTTPRequest,
    httpx_for,
)
from contextchef.testing._fake_anthropic import FakeAnthropic
from contextchef.testing._interactions import (
    INTERACTIONS_RULES,
    FakeGeminiInteractions,
    interactions_reply,
)
from contextchef.testing._media_limits import (
    anthropic_media_limits,
    gemini_media_limits,
    openai_image_limits,
)
from contextchef.testing._media_rules import (
    anthropic_media_types,
    chat_media_types,
    chat_model_media,
    chat_text_content,
    gemini_function_response_media,
    interactions_result_media,
    responses_media_types,
)
from contextchef.testing._native import (
    ANTHROPIC_NATIVE_RULES,
    MCP_CLIENT_BETA,
    RESPONSES_NATIVE_RULES,
    anthropic_defer_loading_supported,
    anthropic_deferred_no_cache_control,
    anthropic_not_all_deferred,
    anthropic_search_tools_valid,
    anthropic_server_tool_use_not_answered,
    anthropic_tool_change_rules,
    anthropic_tool_reference_content,
    responses_deferred_needs_search,
    responses_namespaced_calls,
    responses_search_items_paired,
    responses_search_tool_valid,
)
from contextchef.testing._openai_cache import (
    CHAT_CACHE_RULES,
    RESPONSES_CACHE_RULES,
    CacheOutcome,
    chat_prompt_cache,
    responses_prompt_cache,
)
from contextchef.testing._placement import (
    CLEAR_AT_BETA,
    INLINE_TOOLS_BETA,
    OUTPUT_CONFIG_BETA,
    TOOL_CHANGES_BETA,
    anthropic_no_prefill,
    anthropic_system_message_fields,
    anthropic_system_message_placement,
)
from contextchef.testing._reasoning_items import responses_reasoning_followed
from contextchef.testing._records import Check, RecordedRequest, Violation, provider_worded
from contextchef.testing._replies import Ids
from contextchef.testing._responses_context import (
    responses_compaction_items_known,
    responses_context_management_valid,
)
from contextchef.testing._rules import (
    ANTHROPIC_RULES,
    CHAT_RULES,
    GEMINI_RULES,
    RESPONSES_RULES,
    anthropic_tool_use_declared,
)
from contextchef.testing._script import (
    SEARCH_ERROR_CODES,
    ProviderSearch,
    RawReply,
    ScriptedCall,
    Turn,
    provider_search,
    raw,
    text,
    tool_calls,
)
from contextchef.testing._search_items import responses_search_items_valid
from contextchef.testing._signing import FAKE_SIGNING_KEY

__all__ = [
    "ANTHROPIC_NATIVE_RULES",
    "ANTHROPIC_RULES",
    "CHAT_CACHE_RULES",
    "CHAT_RULES",
    "CLEAR_AT_BETA",
    "COMPACT_BETA",
    "CONTEXT_MANAGEMENT_BETA",
    "FAKE_SIGNING_KEY",
    "FILES_API_BETA",
    "GEMINI_RULES",
    "INLINE_TOOLS_BETA",
    "INTERACTIONS_RULES",
    "MCP_CLIENT_BETA",
    "NO_HEADERS",
    "ON_DEMAND_COMPACT_BETA",
    "OUTPUT_CONFIG_BETA",
    "RECORDED_HEADERS",
    "RESPONSES_CACHE_RULES",
    "RESPONSES_NATIVE_RULES",
    "RESPONSES_RULES",
    "SEARCH_ERROR_CODES",
    "THINKING_BETA",
    "TOOL_CHANGES_BETA",
    "CacheOutcome",
    "Check",
    "ClaudeModel",
    "FakeAnthropic",
    "FakeGemini",
    "FakeGeminiInteractions",
    "FakeOpenAIChat",
    "FakeProvider",
    "FakeResponses",
    "HTTPRequest",
    "Ids",
    "ModelView",
    "ProviderSearch",
    "RawReply",
    "RecordedRequest",
    "ScriptedCall",
    "Turn",
    "Violation",
    "anthropic_beta_fields",
    "anthropic_block_binding",
    "anthropic_compaction_blocks_known",
    "anthropic_compaction_closed_turn",
    "anthropic_context_management_valid",
    "anthropic_defer_loading_supported",
    "anthropic_deferred_no_cache_control",
    "anthropic_file_sources",
    "anthropic_media_limits",
    "anthropic_media_types",
    "anthropic_no_prefill",
    "anthropic_not_all_deferred",
    "anthropic_search_tools_valid",
    "anthropic_server_tool_use_not_answered",
    "anthropic_system_message_fields",
    "anthropic_system_message_placement",
    "anthropic_thinking_choice_not_forced",
    "anthropic_thinking_prefix",
    "anthropic_tool_change_rules",
    "anthropic_tool_choice_declared",
    "anthropic_tool_reference_content",
    "anthropic_tool_use_declared",
    "chat_media_types",
    "chat_model_media",
    "chat_prompt_cache",
    "chat_text_content",
    "chat_tool_choice_declared",
    "claude_model",
    "fake_for",
    "gemini_function_response_media",
    "gemini_media_limits",
    "gemini_tool_choice_declared",
    "httpx_for",
    "interactions_reply",
    "interactions_result_media",
    "openai_image_limits",
    "parse_claude_name",
    "provider_search",
    "provider_worded",
    "raw",
    "responses_compaction_items_known",
    "responses_context_management_valid",
    "responses_deferred_needs_search",
    "responses_media_types",
    "responses_namespaced_calls",
    "responses_prompt_cache",
    "responses_reasoning_followed",
    "responses_search_items_paired",
    "responses_search_items_valid",
    "responses_search_tool_valid",
    "responses_tool_choice_declared",
    "text",
    "tool_calls",
]
