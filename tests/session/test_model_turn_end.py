"""A compile never allows what makes a later request invalid (break-it 13, f2 / f3).

A request ending with the model's turn continues that turn, and its reply is stored joined
to it (tests/session/test_prefill_stored.py), unless the reply opens with thinking. Where
roles must alternate (Anthropic, Gemini) and thinking is on, or the turn holds thinking,
compile refuses the first request (`contextchef.providers._model_rules.check_turn`:
Anthropic takes no prefill with thinking on); a reply that opens with thinking anyway is
merged into the turn it continues by the normalizer, as Anthropic combines consecutive
turns of one role itself (break-it 17, f4), so the next request alternates. Gemini takes
no request ending with the model's turn at all (a 400), like Anthropic's newer models and
Interactions.

An Anthropic on-demand compaction sent while a user message is pending, whose block
arrives after more turns, is swapped in before the first kept turn, an assistant turn: the
block opens that turn's message (anthropic-preserved-thinking.md R22, "first content block
of first message"), as a threshold compaction's reply does, instead of two assistant
messages in a row.

Multi-turn, through the official SDK clients against the `contextchef.testing` fakes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from contextchef import (
    ContextChef,
    ContextPolicy,
    Message,
    ProviderPart,
    ReasoningPart,
    TextPart,
    UsageError,
    assistant,
    native_context,
    normalize,
    user,
)
from contextchef.providers import get_adapter
from contextchef.testing import FakeAnthropic, FakeProvider, fake_for, httpx_for, text, tool_calls

HX = httpx_for(anthropic)
OPUS = "claude-opus-5-5"


def step(i: int) -> str:
    """One step."""
    return f"step {i}"


def _sender(target: str, fake: FakeProvider) -> Callable[[Any], Any]:
    """Send a compiled request through `target`'s official SDK client."""
    http = fake.http_client(HX)
    if target in ("gemini", "gemini-interactions"):
        client = genai.Client(api_key="x", http_options=genai_types.HttpOptions(httpx_client=http))
        if target == "gemini":
            return lambda r: client.models.generate_content(**r.payload)
        return lambda r: client.interactions.create(**r.payload)
    if target == "anthropic":
        claude = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http)
        return lambda r: claude.beta.messages.create(**r.payload, extra_headers=r.headers)
    oai = openai.OpenAI(api_key="x", max_retries=0, http_client=http)
    if target == "responses":
        return lambda r: oai.responses.create(**r.payload)
    return lambda r: oai.chat.completions.create(**r.payload)


CASES = [
    ("anthropic", OPUS),
    ("anthropic", "claude-sonnet-4-5"),
    ("anthropic", "m"),
    ("openai", "gpt-5.5"),
    ("responses", "gpt-5.5"),
    ("gemini", "gemini-3-pro"),
    ("gemini", "gemini-2.5-flash"),
    ("gemini-interactions", "gemini-4-argon"),
]


@pytest.mark.parametrize("reasoning", [None, "think"])
@pytest.mark.parametrize(("target", "model"), CASES)
def test_a_continue_request_is_refused_or_its_reply_stays_sendable(
    target: str, model: str, reasoning: str | None
) -> None:
    fake = fake_for(target).script(
        text("first answer", reasoning=reasoning),
        tool_calls(("step", {"i": 1}), reasoning=reasoning),
        text("end", reasoning=reasoning),
        text("after", reasoning=reasoning),
    )
    send = _sender(target, fake)
    chef = ContextChef()
    chef.register_tools([step])
    chef.set_history([user("task")])
    chef.ingest(send(chef.compile(target, model=model)))
    try:  # again without a user turn: a "continue"
        request = chef.compile(target, model=model)
    except UsageError as error:
        assert "append the next user message" in str(error)
        assert model in str(error)
        refused = True
        chef.append(user("go on"))
        request = chef.compile(target, model=model)
    else:
        refused = False
    for _ in range(2):
        chef.run_tools(chef.ingest(send(request)))
        if chef.history[-1].role == "assistant":
            chef.append(user("next"))
        request = chef.compile(target, model=model)
    send(request)
    assert fake.violations == ()
    alternating = get_adapter(target).profile.history.alternate_roles
    prefill = get_adapter(target).model_rules(model).prefill
    assert refused == (not prefill or (alternating and reasoning is not None))


def test_gemini_fake_refuses_a_request_ending_with_the_model() -> None:
    fake = fake_for("gemini").script(text("x"))
    http = genai_types.HttpOptions(httpx_client=fake.http_client(HX))
    client = genai.Client(api_key="x", http_options=http)
    contents = [
        {"role": "user", "parts": [{"text": "q"}]},
        {"role": "model", "parts": [{"text": "Sure"}]},
    ]
    with pytest.raises(genai.errors.ClientError, match="end with a user role"):
        client.models.generate_content(model="gemini-3-pro", contents=contents)
    assert [v.rule for v in fake.violations] == ["gemini_ends_with_user"]
    with pytest.raises(UsageError, match=r"gemini-3-pro.*rejects prefill"):
        chef = ContextChef()
        chef.append(user("q"))
        chef.compile("gemini", model="gemini-3-pro", prefill="Sure")


def _opus_session() -> tuple[FakeAnthropic, ContextChef, Callable[[Any], Any]]:
    fake = FakeAnthropic()
    chef = ContextChef()
    chef.register_tools([step])
    chef.set_history([user("task")])
    return fake, chef, _sender("anthropic", fake)


@pytest.mark.parametrize("background", [1, 2])
@pytest.mark.parametrize("reasoning", ["t", None])
def test_on_demand_compaction_with_a_pending_user_message_arrives_late(
    background: int, reasoning: str | None
) -> None:
    fake, chef, send = _opus_session()

    def turn() -> Any:
        request = chef.compile("anthropic", model=OPUS)
        chef.run_tools(chef.ingest(send(request)))
        return request

    fake.script(
        tool_calls(("step", {"i": 0}), reasoning=reasoning), text("done", reasoning=reasoning)
    )
    turn()
    turn()
    chef.append(user("pending question"))
    on_demand = native_context("anthropic", model=OPUS, policy=ContextPolicy()).on_demand
    reply = send(chef.compile("anthropic", model=OPUS, extra=on_demand))  # not refused
    assert [b.type for b in reply.content] == ["compaction"]
    summarized = len(chef.history)
    for i in range(background):  # turns while the compaction runs
        if i:
            chef.append(user(f"more {i}"))
        fake.script(tool_calls(("step", {"i": 10 + i}), reasoning=reasoning), text(f"ok {i}"))
        turn()
        turn()
    chef.ingest(reply)
    assert chef.history[summarized].parts[0].data["type"] == "compaction"  # swapped in
    for k in range(3):
        chef.append(user(f"after {k}"))
        fake.script(text(f"fine {k}", reasoning=reasoning))
        request = turn()
        if k == 0:
            sent = request.payload["messages"]
            assert [m["role"] for m in sent[:2]] == ["assistant", "user"]
            assert [b["type"] for b in sent[0]["content"]][:1] == ["compaction"]
            details = [e.detail for e in request.edits]
            assert all("model changed" not in d for d in details), details
            assert all(f"(history message {summarized})" in d for d in details), details
    assert fake.violations == ()


def test_a_compaction_block_opens_the_next_assistant_turn_thinking_included() -> None:
    block = ProviderPart(provider="anthropic", data={"type": "compaction", "content": "s"})
    thinking = ReasoningPart(text="t", provider="anthropic")
    history = (
        Message(role="user", parts=(TextPart(text="q"),)),
        Message(role="assistant", parts=(block,)),
        Message(role="assistant", parts=(thinking, TextPart(text="a"))),
    )
    for target in ("anthropic", "gemini"):
        merged = normalize(history, profile=get_adapter(target).profile.history).messages
        assert [m.parts for m in merged[1:]] == [(block, thinking, TextPart(text="a"))]


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "m"])
def test_a_continued_turn_whose_reply_opens_with_thinking_stays_sendable(model: str) -> None:
    # break-it round 17, f4: the reply was kept as a second assistant message (it opens
    # with thinking), and the next request held two assistant turns in a row (a 400).
    fake = fake_for("anthropic").script(text(" violets are blue.", reasoning="rhyme"), text("ok"))
    send = _sender("anthropic", fake)
    chef = ContextChef()
    chef.set_history([user("Write a poem."), assistant("Roses are red,")])
    chef.ingest(send(chef.compile("anthropic", model=model)))
    chef.append(user("Another?"))
    request = chef.compile("anthropic", model=model)
    sent = request.payload["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert [b["type"] for b in sent[1]["content"]] == ["text", "thinking", "text"]
    chef.ingest(send(request))
    assert fake.violations == ()


@pytest.mark.parametrize("target", ["anthropic", "gemini"])
def test_split_model_turns_are_merged_reasoning_included(target: str) -> None:
    """A history holding two model messages in a row, the second opening with its own
    reasoning: each alternating-role target is sent one model turn, and takes it."""
    model = {"anthropic": "m", "gemini": "gemini-3-pro"}[target]
    fake = fake_for(target).script(text("two.", reasoning="plan"), text("ok"), text("fine"))
    send = _sender(target, fake)
    chef = ContextChef()
    chef.set_history([user("Count.")])
    chef.ingest(send(chef.compile(target, model=model)))
    reply = chef.history[-1]
    assert isinstance(reply.parts[0], ReasoningPart)
    chef.set_history([user("Count."), assistant("one,"), reply, user("Go on.")])
    for turn in range(2):
        request = chef.compile(target, model=model)
        sent = request.payload.get("messages") or request.payload["contents"]
        assert len(sent) == 3 + 2 * turn and sent[1]["role"] in ("assistant", "model")
        chef.ingest(send(request))
        chef.append(user(f"more {turn}"))
    assert fake.violations == ()


@pytest.mark.parametrize("other", ["openai", "responses"])
def test_a_late_compaction_keeps_the_turns_made_on_another_provider(other: str) -> None:
    # break-it round 15, f1: turns on another provider while an Anthropic on-demand
    # compaction was in flight were left out of every later Anthropic request: the block
    # was put at the end (the last compiled target owned no outstanding compaction).
    fake, chef, send = _opus_session()
    fake.script(tool_calls(("step", {"i": 0})), text("done"))
    for _ in range(2):
        chef.run_tools(chef.ingest(send(chef.compile("anthropic", model=OPUS))))
    on_demand = native_context("anthropic", model=OPUS, policy=ContextPolicy()).on_demand
    reply = send(chef.compile("anthropic", model=OPUS, extra=on_demand))
    summarized = len(chef.history)
    chef.append(user("Q2 on the other provider"))
    elsewhere = fake_for(other).script(text("A2 from the other provider"))
    chef.ingest(_sender(other, elsewhere)(chef.compile(other, model="gpt-5.5")))
    chef.ingest(reply)
    assert chef.history[summarized].parts[0].data["type"] == "compaction"
    chef.append(user("Q3 back on Anthropic"))
    fake.script(text("fine"))
    request = chef.compile("anthropic", model=OPUS)
    texts = [
        b.get("text") for m in request.payload["messages"] for b in m["content"] if "text" in b
    ]
    assert texts[-3:] == ["Q2 on the other provider", "A2 from the other provider",
                          "Q3 back on Anthropic"]  # fmt: skip
    chef.ingest(send(request))
    assert fake.violations == () and elsewhere.violations == ()


def test_prefill_is_refused_where_the_provider_refuses_it() -> None:
    # break-it round 15, f3 / f5 / f10: prefill with thinking on Anthropic, any trailing
    # assistant message on DeepSeek (prefix mode is a beta compile does not use), and a
    # prefill no provider can encode were accepted, each a 400 or an SDK error later.
    chef = ContextChef()
    chef.set_history([user("Say hello.")])
    thinking = {"thinking": {"type": "adaptive"}}
    with pytest.raises(UsageError, match="cannot be combined with thinking"):
        chef.compile("anthropic", model="claude-sonnet-4-5", prefill="Hel", extra=thinking)
    with pytest.raises(UsageError, match="rejects prefill"):
        chef.compile("deepseek", model="deepseek-reasoner", prefill="Hel")
    with pytest.raises(UsageError, match="valid Unicode"):
        chef.compile("anthropic", model="claude-sonnet-4-5", prefill="a\ud800b")
    sent = chef.compile("anthropic", model="claude-sonnet-4-5", prefill="Hel").payload
    assert sent["messages"][-1] == {"role": "assistant", "content": "Hel"}  # without thinking
    chef.set_history([user("Say hello."), Message(role="assistant", parts=(TextPart(text="Hi"),))])
    with pytest.raises(UsageError, match="deepseek-reasoner' rejects a trailing assistant"):
        chef.compile("deepseek", model="deepseek-reasoner")
