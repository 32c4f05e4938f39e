"""A session that drives its `ContextPolicy` itself (issue 25): usage, native fields, local path.

`ContextChef(context_policy=...)` makes every compile add the provider's own context
management where the model has it (research provider-context-management.md 2.1, 2.2, 2.5:
Anthropic ``context_management.edits`` with their betas, Responses ``context_management``),
the same bytes every turn; on other models the overflow handoff runs once the request
passes the policy's compaction point. `ContextChef.context_usage` reports tokens used,
budget and headroom from the provider's usage when known. Sessions run multi-turn through
the official SDK clients against the fakes, which enforce the rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from context_tools import OPUS, Summaries, next_turn, read_log
from google import genai
from google.genai import types

from contextchef import (
    ContextChef,
    ContextPolicy,
    UsageError,
    assistant,
    native_context,
    user,
)
from contextchef.history._messages import Message, ToolCall
from contextchef.providers._budget import request_tokens
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeResponses,
    httpx_for,
    text,
    tool_calls,
)


def _chef(**options: Any) -> ContextChef:
    chef = ContextChef(max_inline_chars=None, **options)  # results of realistic size, whole
    chef.register_tools([read_log])
    chef.set_history([user("Find why the build fails.")])
    return chef


def _script(calls: int, answers: int = 3) -> list[dict[str, Any]]:
    return [
        *[tool_calls(("read_log", {"path": f"log{k}"})) for k in range(calls)],
        *[text(f"answer {k}") for k in range(answers)],
    ]


@pytest.fixture
def claude() -> Iterator[tuple[FakeAnthropic, anthropic.Anthropic]]:
    fake = FakeAnthropic()
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    yield fake, client
    client.close()


@pytest.fixture
def responses() -> Iterator[tuple[FakeResponses, openai.OpenAI]]:
    fake = FakeResponses()
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    yield fake, client
    client.close()


# -- context_usage ---------------------------------------------------------------------------


def test_usage_is_the_provider_figure_plus_what_was_added_since(
    claude: tuple[FakeAnthropic, anthropic.Anthropic],
) -> None:
    fake, client = claude
    fake.script(*_script(3))
    policy = ContextPolicy(budget_tokens=120_000, never_clear=["read_log"])
    chef = _chef(context_policy=policy)
    first = chef.context_usage("anthropic", model=OPUS)
    view = chef.view.resident + chef.view.library  # search_archive is declared too
    assert first.source == "estimate" and first.budget == 120_000
    assert first.used == request_tokens("", view, chef.history) > 0
    assert first.fixed == request_tokens("", view, ()) > request_tokens("", chef.view.resident, ())
    for k in range(3):
        request = chef.compile("anthropic", model=OPUS)
        reply = client.beta.messages.create(**request.payload, extra_headers=request.headers)
        sent = len(chef.history)
        next_turn(chef, chef.ingest(reply), k)
        usage = chef.context_usage("anthropic", model=OPUS)
        # the fake reports what the model saw (usage.input_tokens under context management)
        assert reply.usage.input_tokens > 0
        added = request_tokens("", (), chef.history[sent:])
        assert usage.source == "usage"
        assert usage.used == reply.usage.input_tokens + added
        assert usage.headroom == 120_000 - usage.used
        if k < 2:  # compiling the next request adds nothing: the provider's figure holds
            chef.compile("anthropic", model=OPUS)
            assert chef.context_usage("anthropic", model=OPUS) == usage
    assert fake.violations == ()
    assert usage.used > 3 * 10_000  # three results of about 12,000 tokens each
    # another target has no usage of its own: our estimate of the whole request
    other = chef.context_usage("gemini", model="gemini-3-pro")
    assert other.source == "estimate" and other.budget == 120_000
    # the history replaced since the last answer: the estimate again, smaller
    chef.compact(Summaries(), keep_recent_turns=0)
    after = chef.context_usage("anthropic", model=OPUS)
    assert after.source == "estimate" and after.used < usage.used // 2


def test_usage_without_a_policy_uses_the_model_window() -> None:
    chef = _chef()
    usage = chef.context_usage("responses", model="gpt-5.6")
    assert usage.budget == 400_000 - 128_000  # window less the model's output limit
    assert chef.context_usage("openai", model="who-knows").budget == 128_000 - 16_384
    with pytest.raises(UsageError, match="model"):
        chef.context_usage("anthropic", model="")


def test_the_policy_must_be_a_context_policy() -> None:
    with pytest.raises(UsageError, match="context_policy must be a ContextPolicy or None"):
        ContextChef(context_policy={"budget_tokens": 5})  # type: ignore[arg-type]


# -- compile adds the native fields itself ---------------------------------------------------


def test_anthropic_compiles_carry_the_policy_byte_stable_and_compact(
    claude: tuple[FakeAnthropic, anthropic.Anthropic],
) -> None:
    fake, client = claude
    fake.script(*_script(6, answers=3))
    policy = ContextPolicy(budget_tokens=70_000, never_clear=["read_log"])
    native = native_context("anthropic", model=OPUS, policy=policy)
    chef = _chef(context_policy=policy)
    fields: set[str] = set()
    block: dict[str, Any] | None = None
    for k in range(8):
        request = chef.compile("anthropic", model=OPUS)
        fields.add(json.dumps(request.payload["context_management"], sort_keys=True))
        assert request.headers["anthropic-beta"] == ",".join(sorted(native.betas))
        if block is not None:
            assert block in [b for m in request.payload["messages"] for b in m["content"]]
        reply = client.beta.messages.create(**request.payload, extra_headers=request.headers)
        found = [b.to_dict() for b in reply.content if b.type == "compaction"]
        block = found[0] if found else block
        next_turn(chef, chef.ingest(reply), k)
    assert fake.violations == ()
    assert fields == {json.dumps(native.extra["context_management"], sort_keys=True)}
    assert block is not None and [n.kind for n in chef.notices].count("compaction") == 1
    assert max(v.input_tokens for v in fake.model_views) < native.budget.budget


def test_the_native_fields_are_the_same_bytes_on_every_compile() -> None:
    chef = _chef(context_policy=ContextPolicy(keep_thinking_turns=1))
    one = chef.compile("anthropic", model=OPUS)
    two = chef.compile("anthropic", model=OPUS)  # the same turn compiled again
    assert one.to_json() == two.to_json() and one.headers == two.headers
    assert one.payload["context_management"]["edits"][0]["type"] == "clear_thinking_20251015"
    plain = _chef().compile("anthropic", model=OPUS)
    assert "context_management" not in plain.payload  # no policy, no field


def test_responses_compiles_carry_compaction_and_the_item_comes_back(
    responses: tuple[FakeResponses, openai.OpenAI],
) -> None:
    fake, client = responses
    fake.script(*_script(3))
    policy = ContextPolicy(budget_tokens=20_000)
    native = native_context("responses", model="gpt-5.6", policy=policy)
    chef = _chef(context_policy=policy)
    item: dict[str, Any] | None = None
    for k in range(5):
        request = chef.compile("responses", model="gpt-5.6")
        assert request.payload["context_management"] == native.extra["context_management"]
        if item is not None:
            assert item in request.payload["input"]
        reply = client.responses.create(**request.payload)
        found = [o.to_dict() for o in reply.output if o.type == "compaction"]
        item = found[0] if found else item
        next_turn(chef, chef.ingest(reply), k)
    assert fake.violations == ()
    assert item is not None and "compaction" in {n.kind for n in chef.notices}


def test_responses_sends_from_the_newest_compaction_item_and_stays_under_budget(
    responses: tuple[FakeResponses, openai.OpenAI],
) -> None:
    fake, client = responses
    fake.script(*_script(12, answers=1))
    policy = ContextPolicy(budget_tokens=30_000)
    chef = _chef(context_policy=policy)
    sent = []
    for k in range(13):
        request = chef.compile("responses", model="gpt-5.6")
        sent.append(request.payload["input"])
        reply = client.responses.create(**request.payload)
        assert reply.usage is not None and reply.usage.input_tokens < policy.budget_tokens
        next_turn(chef, chef.ingest(reply), k)
    assert fake.violations == ()
    items = [[i for i in s if i.get("type") == "compaction"] for s in sent]
    assert sum(1 for n in chef.notices if n.kind == "compaction") >= 2
    for payload, found in zip(sent, items, strict=True):
        if found:  # one compaction item, first: what came before it is not sent again
            assert len(found) == 1 and payload[0] == found[0]
    # the session's record keeps every item: the history still starts with the question
    assert chef.history[0].text == "Find why the build fails."
    assert len(sent[-1]) < len(chef.history)


def test_extra_setting_a_policy_field_is_refused_by_name() -> None:
    chef = _chef(context_policy=ContextPolicy())
    mine = {"context_management": {"edits": []}}
    with pytest.raises(UsageError, match="extra field 'context_management' is written by"):
        chef.compile("anthropic", model=OPUS, extra=mine)
    with pytest.raises(UsageError, match="context_management"):
        chef.compile("responses", model="gpt-5.6", extra={"context_management": []})
    # nothing native on this model: the host's own field passes through
    request = chef.compile("anthropic", model="claude-3-haiku", extra=mine, betas=["x-1"])
    assert request.payload["context_management"] == {"edits": []}
    # the host's betas are kept next to the policy's
    request = chef.compile("anthropic", model=OPUS, betas=["x-1"])
    assert request.headers["anthropic-beta"].split(",")[-1] == "x-1"


def _without_archive_tool(value: Any) -> Any:
    """`value` less the declaration of ``search_archive`` (a policy's session has it)."""
    if isinstance(value, list):
        named = [v for v in value if "search_archive" not in json.dumps(v)[:80]]
        return [_without_archive_tool(v) for v in named]
    if isinstance(value, dict):
        return {k: _without_archive_tool(v) for k, v in value.items()}
    return value


def test_targets_without_native_context_get_no_field() -> None:
    with_policy = _chef(context_policy=ContextPolicy())
    without = _chef()
    for target, model in (("gemini", "gemini-3-pro"), ("openai", "gpt-5.6")):
        a = with_policy.compile(target, model=model)
        b = without.compile(target, model=model)
        assert "search_archive" in a.to_json()  # the policy's archive tool, nothing else
        assert _without_archive_tool(a.payload) == b.payload
        assert dict(a.headers) == dict(b.headers)


# -- the local path --------------------------------------------------------------------------


def _gemini(fake: FakeGemini) -> genai.Client:
    http = types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai)))
    return genai.Client(api_key="x", http_options=http)


def test_gemini_compacts_locally_past_the_policy_point() -> None:
    fake = FakeGemini().script(*_script(8, answers=2))
    summaries = Summaries()
    policy = ContextPolicy(budget_tokens=40_000)  # compaction point 32,000 tokens
    chef = _chef(context_policy=policy, on_overflow=summaries)
    client = _gemini(fake)
    peaks = []
    for k in range(10):
        request = chef.compile("gemini", model="gemini-3-pro")
        peaks.append(request_tokens("", (), chef.history))
        reply = client.models.generate_content(**request.payload)
        next_turn(chef, chef.ingest(reply), k)
    assert fake.violations == ()
    assert len(summaries.inputs) >= 2  # every few results, never every turn
    assert max(peaks) < policy.budget_tokens  # type: ignore[operator]
    assert "read_log" in summaries.inputs[0] and not chef.new_context_pending


def test_no_local_compaction_where_the_provider_compacts(
    claude: tuple[FakeAnthropic, anthropic.Anthropic],
) -> None:
    fake, client = claude
    fake.script(*_script(6, answers=3))
    summaries = Summaries()
    policy = ContextPolicy(budget_tokens=70_000, never_clear=["read_log"])
    chef = _chef(context_policy=policy, on_overflow=summaries)
    for k in range(8):
        request = chef.compile("anthropic", model=OPUS)
        reply = client.beta.messages.create(**request.payload, extra_headers=request.headers)
        next_turn(chef, chef.ingest(reply), k)
    assert fake.violations == () and summaries.inputs == []
    # a trigger under Anthropic's 50,000 minimum is the local path's, on the same model
    small = _chef(context_policy=ContextPolicy(budget_tokens=30_000), on_overflow=summaries)
    small.append(assistant("x" * 120_000), user("go on"))
    small.compile("anthropic", model=OPUS)
    assert len(summaries.inputs) == 1


def test_local_compaction_summarizes_an_orphan_and_keeps_a_pending_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lost = ToolCall(id="lost", name="read_log", arguments={"path": "a"})
    running = ToolCall(id="run", name="read_log", arguments={"path": "b"})
    summaries = Summaries()
    chef = _chef(context_policy=ContextPolicy(budget_tokens=20_000), on_overflow=summaries)
    chef.append(
        Message(role="assistant", parts=(lost,)),  # its result never came (a pod restart)
        user("the pod restarted; go on"),
        assistant("x" * 90_000),
        user("next"),
        Message(role="assistant", parts=(running,)),  # still running when compile is called
    )
    fake = FakeGemini().script(text("Done."), text("Done again."))
    client = _gemini(fake)
    with caplog.at_level("WARNING", logger="contextchef"):
        request = chef.compile("gemini", model="gemini-3-pro")
    assert len(summaries.inputs) == 1 and "lost" not in json.dumps(request.payload)
    assert "pending call(s) ['run']" in caplog.text
    # the pending call is kept as it was, after the summary: its result still fits
    assert chef.history[-1].tool_calls == (running,)
    assert request_tokens("", (), chef.history) < 1_000  # compacted, not stalled
    # meanwhile the request answered it as interrupted (normalize); the history keeps it
    assert "function_response" in json.dumps(request.payload["contents"][-1])
    chef.ingest(client.models.generate_content(**request.payload))
    chef.append(user("and now?"))
    again = chef.compile("gemini", model="gemini-3-pro")
    client.models.generate_content(**again.payload)
    assert fake.violations == () and len(summaries.inputs) == 1


def test_past_the_point_without_a_summarizer_is_logged_not_silent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chef = _chef(context_policy=ContextPolicy(budget_tokens=20_000))
    chef.append(assistant("x" * 90_000), user("next"))
    before = chef.history
    with caplog.at_level("WARNING", logger="contextchef"):
        chef.compile("gemini", model="gemini-3-pro")
    assert "past compact_at with no on_overflow" in caplog.text and chef.history == before
    caplog.clear()
    with caplog.at_level("WARNING", logger="contextchef"):
        _chef(context_policy=ContextPolicy(budget_tokens=20_000)).compile("gemini", model="g")
    assert "compact_at" not in caplog.text  # under the point: nothing to say
