"""Deterministic fakes of the providers' HTTP endpoints, for tests of agent loops.

Each fake stands in for one wire API behind the official SDK client, through the SDK's
own httpx mock transport: `FakeAnthropic` (``POST /v1/messages``), `FakeOpenAIChat`
(``/v1/chat/completions``, also DeepSeek), `FakeResponses` (``/v1/responses``) and
`FakeGemini` (``/models/{model}:generateContent``); `fake_for` picks one per compile
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
    message = client.messages.create(**chef.compile("anthropic", model="m").payload)
    assert message.content[0].id == "toolu_0001"
    ...
    assert [r.path for r in fake.requests] == ["/v1/messages", "/v1/messages"]
    assert fake.violations == ()

Ids are counters per fake (``toolu_0001``, ``call_0001``, ``fc_0001``, ``msg_0001``...),
``created`` is 0, usage is 0: two identical runs give identical bytes. Set
``max_retries=0`` on anthropic/openai clients so a refused request raises at once.
"""

from contextchef.testing._fake import (
    RECORDED_HEADERS,
    FakeAnthropic,
    FakeGemini,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    HTTPRequest,
    fake_for,
    httpx_for,
)
from contextchef.testing._records import Check, RecordedRequest, Violation
from contextchef.testing._replies import Ids
from contextchef.testing._rules import (
    ANTHROPIC_RULES,
    CHAT_RULES,
    GEMINI_RULES,
    RESPONSES_RULES,
    anthropic_tool_use_declared,
)
from contextchef.testing._script import RawReply, ScriptedCall, Turn, raw, text, tool_calls

__all__ = [
    "ANTHROPIC_RULES",
    "CHAT_RULES",
    "GEMINI_RULES",
    "RECORDED_HEADERS",
    "RESPONSES_RULES",
    "Check",
    "FakeAnthropic",
    "FakeGemini",
    "FakeOpenAIChat",
    "FakeProvider",
    "FakeResponses",
    "HTTPRequest",
    "Ids",
    "RawReply",
    "RecordedRequest",
    "ScriptedCall",
    "Turn",
    "Violation",
    "anthropic_tool_use_declared",
    "fake_for",
    "httpx_for",
    "raw",
    "text",
    "tool_calls",
]
