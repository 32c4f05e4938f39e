"""`ContextChef.ingest`: provider responses in exactly as returned, through the real SDKs."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from contextchef import (
    TARGETS,
    ContextChef,
    CorruptHistoryError,
    ProviderPart,
    ReasoningPart,
    ToolCall,
    tool_results,
    user,
)
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeResponses,
    fake_for,
    httpx_for,
    text,
    tool_calls,
)
from sdk_send import send

HX = httpx_for(anthropic)


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def grep(pattern: str) -> str:
    """Search files."""
    return f"no match for {pattern}"


def session() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([read_file, grep])
    chef.set_system_prompt("You are careful.")
    chef.set_history([user("Look around.")])
    return chef


@pytest.mark.parametrize("target", TARGETS)
def test_a_loop_with_ingest_keeps_every_block_and_passes_the_fake(target: str) -> None:
    fake = fake_for(target).script(
        tool_calls(("read_file", {"path": "a"}), ("grep", {"pattern": "x"}), reasoning="plan"),
        tool_calls(("read_file", {"path": "b"}), reasoning="again"),
        text("Done."),
    )
    chef = session()
    for _ in range(3):
        response = send(target, fake, chef.compile(target, model="m").payload)
        calls = chef.ingest(response)
        if calls:
            chef.append(tool_results([chef.execute(call).result for call in calls]))
    assert fake.violations == ()
    assert len(fake.requests) == 3
    turns = [m for m in chef.history if m.role == "assistant"]
    assert len(turns) == 3
    names = [[p.name for p in m.parts if isinstance(p, ToolCall)] for m in turns]
    assert names == [["read_file", "grep"], ["read_file"], []]
    if target != "openai":  # Chat Completions returns no reasoning
        assert all(any(isinstance(p, ReasoningPart) for p in m.parts) for m in turns[:2])


def test_anthropic_thinking_is_replayed_byte_for_byte() -> None:
    fake = FakeAnthropic().script(
        tool_calls(("read_file", {"path": "a"}), reasoning="think"), text("ok")
    )
    chef = session()
    first = send("anthropic", fake, chef.compile("anthropic", model="m").payload)
    (call,) = chef.ingest(first)
    chef.append(tool_results([chef.execute(call).result]))
    send("anthropic", fake, chef.compile("anthropic", model="m").payload)
    returned = fake.requests[0].reply["content"]
    (replayed,) = [
        m["content"] for m in fake.requests[1].body["messages"] if m["role"] == "assistant"
    ]
    assert replayed == returned  # every block, in order, as the API sent it


def test_five_gemini_turns_without_call_ids_parsed_one_at_a_time_keep_all_five() -> None:
    script = [tool_calls(("read_file", {"path": str(i)})) for i in range(5)]
    fake = FakeGemini(call_ids=False).script(*script, text("Done."))
    chef = session()
    for _ in range(6):
        response = send("gemini", fake, chef.compile("gemini", model="m").payload)
        calls = chef.ingest(response)
        if calls:
            chef.append(tool_results([chef.execute(call).result for call in calls]))
    assert fake.violations == ()
    ids = [p.id for m in chef.history for p in m.parts if isinstance(p, ToolCall)]
    assert len(ids) == len(set(ids)) == 5
    chef.append(user("thanks"))  # Gemini takes no request ending with the model's turn
    payload = chef.compile("gemini", model="m").payload
    sent = [
        p["function_call"] for c in payload["contents"] for p in c["parts"] if "function_call" in p
    ]
    assert [c["args"]["path"] for c in sent] == ["0", "1", "2", "3", "4"]
    assert all("id" not in c for c in sent)  # made-up ids never go to Gemini


def test_responses_items_keep_their_ids_and_encrypted_reasoning() -> None:
    fake = FakeResponses().script(tool_calls(("grep", {"pattern": "x"}), reasoning="r"), text("ok"))
    chef = session()
    first = send("responses", fake, chef.compile("responses", model="m").payload)
    (call,) = chef.ingest(first)
    assert call.id == "call_0001"  # the call_id, not the item id fc_0001
    chef.append(tool_results([chef.execute(call).result]))
    send("responses", fake, chef.compile("responses", model="m").payload)
    sent = fake.requests[1].body["input"]
    returned = fake.requests[0].reply["output"]
    assert [i for i in sent if i.get("type") in ("reasoning", "function_call")] == returned


def test_ingest_accepts_the_json_dict_and_server_blocks() -> None:
    chef = session()
    response = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"q": "x"}},
            {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": []},
            {"type": "text", "text": "Nothing found."},
        ],
        "stop_reason": "end_turn",
    }
    assert chef.ingest(response) == ()
    (turn,) = [m for m in chef.history if m.role == "assistant"]
    assert [type(p).__name__ for p in turn.parts] == ["ProviderPart", "ProviderPart", "TextPart"]
    assert isinstance(turn.parts[0], ProviderPart)
    request = chef.compile("anthropic")
    # recorded exactly as returned; the request marks its last block as the cache
    # breakpoint, on a copy
    assert json.loads(request.segments["messages"])[-1]["content"] == response["content"]
    assert request.payload["messages"][-1]["content"] == [
        *response["content"][:-1],
        {"type": "text", "text": "Nothing found.", "cache_control": {"type": "ephemeral"}},
    ]
    assert "cache_control" not in response["content"][-1]


@pytest.mark.parametrize(
    "junk",
    [5, None, {"unrelated": 1}, {"choices": []}, {"candidates": [{}]}, object()],
    ids=["int", "none", "unknown-dict", "no-choice", "no-content", "object"],
)
def test_junk_is_corrupt_history_and_changes_nothing(junk: Any) -> None:
    chef = session()
    before = json.dumps([m.to_dict() for m in chef.history])
    with pytest.raises(CorruptHistoryError):
        chef.ingest(junk)
    assert json.dumps([m.to_dict() for m in chef.history]) == before


def test_the_unrecorded_thinking_warning_counts_only_the_targets_own_reasoning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Fresh-user report: a session moved from Responses to Anthropic was told its history
    was "set by hand"; OpenAI reasoning is never sent to Anthropic, so nothing is at risk."""
    from contextchef.providers import from_anthropic, from_responses

    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}
    reply = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "ok"}],
    }
    moved = from_responses([{"type": "message", "role": "user", "content": "hi"}, reasoning, reply])
    thinking = {"type": "thinking", "thinking": "t", "signature": "sig"}
    by_hand = from_anthropic(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [thinking]}]
    )
    for history, warned in ((moved.messages, False), (by_hand.messages, True)):
        chef = ContextChef()
        chef.set_history([*history, user("more")])
        caplog.clear()
        with caplog.at_level("WARNING", logger="contextchef"):
            chef.compile("anthropic", model="claude-opus-5-5")
        assert ("no record of what was sent" in caplog.text) is warned
