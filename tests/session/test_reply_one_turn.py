"""A reply is one model turn, whatever its parts; break-it round 20's reading gaps.

1. A Responses reply's output items are one assistant turn: a ``refusal`` message item
   after a ``function_call`` (kept whole, as a provider part) and a server-executed
   ``tool_search_output`` join the call's turn instead of opening another message. Before,
   ``[function_call, refusal]`` was stored as two assistant messages and every later
   compile raised (the call's result was moved after its batch, leaving the last user
   message empty).
2. A refusal continues no prefill, but text beside it does: a Chat reply with both
   ``content`` and ``refusal`` after ``prefill="{"`` is stored ``{"a": 1}`` (it was
   ``"a": 1}``, broken JSON sent back); a Responses reply with ``output_text`` beside its
   ``refusal`` keeps the prefill before its message item.
3. An Anthropic tool turn whose thinking block is not first (``[tool_use, thinking]``)
   is sent without ``thinking`` (Anthropic refuses such a turn, 400 "Expected `thinking`
   or `redacted_thinking`, but found `tool_use`") and the log says so, no longer that the
   turn "has no thinking block (lost before it was stored?)".

Multi-turn through the official SDK clients against the fakes, payloads SDK-checked, the
stored history and the next request asserted exactly.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import pytest
from test_ingest import send as sdk_send
from test_reply_gaps import _chat, _compile, _message_item, _responses

from contextchef import ContextChef, Message, ProviderPart, TextPart, ToolCall, ToolResult, user
from contextchef.testing import fake_for, provider_search, raw, text, tool_calls
from sdk_check import sdk_problems

ARGS = '{"pattern": "a"}'
CALL_ITEM = {
    "type": "function_call",
    "id": "fc_r1",
    "call_id": "call_r1",
    "name": "grep",
    "arguments": ARGS,
    "status": "completed",
}
REFUSAL_ITEM = _message_item([{"type": "refusal", "refusal": "no"}])
STORED_CALL = ToolCall(
    id="call_r1",
    name="grep",
    arguments=ARGS,
    provider_data={
        "provider": "responses",
        "extra": {"id": "fc_r1", "status": "completed"},
        "keys": ["arguments", "call_id", "name", "type", "id", "status"],
    },
)


def grep(pattern: str) -> str:
    """Search."""
    return "hit"


def get_weather(city: str) -> str:
    """The weather in a city."""
    return "Sunny"


@pytest.mark.parametrize("prefill", ["", "{"])
@pytest.mark.parametrize("call_first", [True, False])
def test_a_responses_refusal_joins_the_call_of_its_reply(call_first: bool, prefill: str) -> None:
    output = [CALL_ITEM, REFUSAL_ITEM] if call_first else [REFUSAL_ITEM, CALL_ITEM]
    fake = fake_for("responses").script(raw(_responses(1, output)), text("done"))
    send = partial(sdk_send, "responses", fake)
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_history([user("hi")])
    calls = chef.ingest(send(_compile(chef, "responses", prefill=prefill)))
    assert chef.run_tools(calls)
    refusal = ProviderPart(provider="responses", data=REFUSAL_ITEM)
    # before: [call, refusal] was two assistant messages, and the next compile raised
    # (the refusal is no continuation: no prefill stored either way)
    turn = (STORED_CALL, refusal) if call_first else (refusal, STORED_CALL)
    assert chef.history[1:] == (
        Message(role="assistant", parts=turn),
        Message(role="user", parts=(ToolResult(call_id="call_r1", name="grep", content="hit"),)),
    )
    payload = _compile(chef, "responses")
    assert payload["input"] == [
        {"type": "message", "role": "user", "content": "hi"},
        *output,
        {"type": "function_call_output", "call_id": "call_r1", "output": "hit"},
    ]
    chef.ingest(send(payload))
    assert [p.text for p in chef.history[-1].parts if isinstance(p, TextPart)] == ["done"]
    assert fake.violations == ()


def test_a_hosted_tool_search_reply_is_one_turn() -> None:
    fake = fake_for("responses").script(
        provider_search("get_weather", then=tool_calls(("get_weather", {"city": "Paris"}))),
        text("Sunny."),
    )
    send = partial(sdk_send, "responses", fake)
    chef = ContextChef(defer=["get_*"])
    chef.register_tools([grep, get_weather])
    chef.set_history([user("Weather in Paris?")])
    payload = chef.compile("responses", model="gpt-5.5", strategy="openai-native").payload
    assert sdk_problems("responses", payload) == []
    calls = chef.ingest(send(payload))
    assert chef.run_tools(calls)
    # before: assistant [search call], user [search output], assistant [call]
    assert [(m.role, [type(p).__name__ for p in m.parts]) for m in chef.history] == [
        ("user", ["TextPart"]),
        ("assistant", ["ProviderPart", "ProviderPart", "ToolCall"]),
        ("user", ["ToolResult"]),
    ]
    reply = fake.requests[0].reply["output"]
    assert [p.data for p in chef.history[1].parts[:2]] == reply[:2]  # kept as returned
    payload = chef.compile("responses", model="gpt-5.5", strategy="openai-native").payload
    assert sdk_problems("responses", payload) == []
    assert payload["input"][1:3] == reply[:2]
    assert [i["type"] for i in payload["input"]] == [
        "message",
        "tool_search_call",
        "tool_search_output",
        "function_call",
        "function_call_output",
    ]
    chef.ingest(send(payload))
    assert fake.violations == ()


def test_chat_text_beside_a_refusal_continues_the_prefill() -> None:
    message = {"role": "assistant", "content": '"a": 1}', "refusal": "no"}
    fake = fake_for("openai").script(raw(_chat(1, message)), text("ok"))
    send = partial(sdk_send, "openai", fake)
    chef = ContextChef()
    chef.set_history([user("Give JSON")])
    chef.ingest(send(_compile(chef, "openai", prefill="{")))
    # before: '"a": 1}' without the prefill, sent back as broken JSON
    hints = {"extra": {"refusal": "no"}, "keys": ["content", "refusal", "role"]}
    stored = TextPart(text='{"a": 1}', provider_data={"provider": "openai", "message": hints})
    assert chef.history[1:] == (Message(role="assistant", parts=(stored,)),)
    assert [n.reason for n in chef.notices if n.kind == "incomplete"] == ["refusal"]
    chef.append(user("next"))
    payload = _compile(chef, "openai")
    assert payload["messages"] == [
        {"role": "user", "content": "Give JSON"},
        {"content": '{"a": 1}', "refusal": "no", "role": "assistant"},
        {"role": "user", "content": "next"},
    ]
    chef.ingest(send(payload))
    assert fake.violations == ()


def test_responses_text_beside_a_refusal_keeps_the_prefill() -> None:
    item = _message_item(
        [
            {"type": "output_text", "text": '"a": 1}', "annotations": []},
            {"type": "refusal", "refusal": "no"},
        ]
    )
    fake = fake_for("responses").script(raw(_responses(1, [item])), text("ok"))
    send = partial(sdk_send, "responses", fake)
    chef = ContextChef()
    chef.set_history([user("Give JSON")])
    chef.ingest(send(_compile(chef, "responses", prefill="{")))
    # before: the item alone, its text continuing a prefill the history did not hold
    parts = (TextPart(text="{"), ProviderPart(provider="responses", data=item))
    assert chef.history[1:] == (Message(role="assistant", parts=parts),)
    chef.append(user("next"))
    payload = _compile(chef, "responses")
    assert payload["input"] == [
        {"type": "message", "role": "user", "content": "Give JSON"},
        {"type": "message", "role": "assistant", "content": "{"},
        item,
        {"type": "message", "role": "user", "content": "next"},
    ]
    chef.ingest(send(payload))
    assert fake.violations == ()


def _anthropic(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "msg_r1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def test_a_thinking_block_after_the_call_is_named_and_thinking_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    thinking = {"type": "thinking", "thinking": "Let me search.", "signature": "sigA"}
    use = {"type": "tool_use", "id": "toolu_r1", "name": "grep", "input": {"pattern": "a"}}
    fake = fake_for("anthropic").script(raw(_anthropic([use, thinking])), text("done"))
    send = partial(sdk_send, "anthropic", fake)
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_history([user("hi")])
    on = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    assert chef.run_tools(chef.ingest(send(_compile(chef, "anthropic", extra=on))))
    assert [type(p).__name__ for p in chef.history[1].parts] == ["ToolCall", "ReasoningPart"]
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        payload = _compile(chef, "anthropic", extra=on)
    [warning] = [r.getMessage() for r in caplog.records]
    assert "(messages[1]) has no thinking block first: it has one after another block" in warning
    assert "lost before it was stored" not in warning
    assert "thinking" not in payload  # the API's advice: Anthropic refuses such a turn
    assert payload["messages"][1]["content"] == [use, thinking]  # sent as it came
    chef.ingest(send(payload))
    assert fake.violations == ()
