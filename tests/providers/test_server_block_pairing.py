"""Server tool blocks that pair with nothing are never sent (breakit3 F04, F05).

A server tool's result block answers the call before it in the same assistant message
(Anthropic: ``server_tool_use`` / ``mcp_tool_use`` -> ``*_tool_result``; Responses: a
client ``tool_search_call`` -> ``tool_search_output``). A history or a model reply holding
one that answers nothing (orphan result, mismatched ids, result before its call) or a call
left without its result would be refused on every later request. Whether it came in by
`ingest` or by `set_history`, the block is left out of what is sent and the drop is
reported in `CompiledRequest.changes`; a well-formed pair goes back unchanged. Every
request goes through the official SDK client to the `contextchef.testing` fakes, which
enforce the pairing (research note rules 6 and 21).
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from contextchef import ContextChef, from_anthropic, from_responses, user
from contextchef.testing import (
    FakeAnthropic,
    FakeResponses,
    anthropic_server_tool_use_not_answered,
    httpx_for,
    raw,
    text,
)

MODEL = "claude-opus-5-5"


def use(block_id: str, name: str = "tool_search_tool_regex") -> dict[str, Any]:
    tool_input = {"pattern": "x"} if name == "tool_search_tool_regex" else {"query": "x"}
    return {"type": "server_tool_use", "id": block_id, "name": name, "input": tool_input}


def search_result(block_id: str) -> dict[str, Any]:
    return {
        "type": "tool_search_tool_result",
        "tool_use_id": block_id,
        "content": {"type": "tool_search_tool_search_result", "tool_references": []},
    }


def web_result(block_id: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": block_id, "content": []}


def mcp_result(block_id: str) -> dict[str, Any]:
    return {"type": "mcp_tool_result", "tool_use_id": block_id, "content": [], "is_error": False}


BROKEN: dict[str, tuple[list[dict[str, Any]], int]] = {
    # blocks before the assistant's text -> how many are dropped
    "orphan tool-search result": ([search_result("srvtoolu_9")], 1),
    "orphan web search result": ([web_result("srvtoolu_9")], 1),
    "orphan mcp result": ([mcp_result("mcptoolu_9")], 1),
    "result without an id": ([{**web_result("x"), "tool_use_id": None}], 1),
    "orphan web search call": ([use("srvtoolu_1", "web_search")], 1),
    "mismatched tool-search ids": ([use("srvtoolu_1"), search_result("srvtoolu_2")], 2),
    "mismatched web search ids": (
        [use("srvtoolu_1", "web_search"), web_result("srvtoolu_2")],
        2,
    ),
    "result before its call": ([search_result("srvtoolu_1"), use("srvtoolu_1")], 2),
    "second result for one call": (
        [use("srvtoolu_1", "web_search"), web_result("srvtoolu_1"), web_result("srvtoolu_1")],
        1,
    ),
}
GOOD: dict[str, list[dict[str, Any]]] = {
    "tool-search pair": [use("srvtoolu_1"), search_result("srvtoolu_1")],
    "web search pair": [use("srvtoolu_1", "web_search"), web_result("srvtoolu_1")],
}


def anthropic_client(fake: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )


def history(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [*blocks, {"type": "text", "text": "hm"}]},
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
    ]


@pytest.mark.parametrize("strategy", ["client", "anthropic-native"])
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_unpaired_server_blocks_in_a_history_are_dropped_and_reported(
    case: str, strategy: str
) -> None:
    blocks, dropped = BROKEN[case]
    chef = ContextChef()
    chef.set_history(from_anthropic(history(blocks)).messages)
    fake = FakeAnthropic().script(text("ok"))
    request = chef.compile("anthropic", model=MODEL, strategy=strategy)
    anthropic_client(fake).messages.create(**request.payload, extra_headers=request.headers)
    assert fake.violations == ()
    sent = request.payload["messages"][1]["content"]
    assert len(sent) == 1 + len(blocks) - dropped
    assert all(block in blocks for block in sent[:-1])
    reported = [c for c in request.changes if c.kind == "dropped_search_block"]
    assert len(reported) == dropped
    assert all(c.index == 1 and "was left out" in c.detail for c in reported)


@pytest.mark.parametrize("case", sorted(GOOD))
def test_paired_server_blocks_go_back_unchanged(case: str) -> None:
    blocks = GOOD[case]
    chef = ContextChef()
    chef.set_history(from_anthropic(history(blocks)).messages)
    fake = FakeAnthropic().script(text("ok"))
    request = chef.compile("anthropic", model=MODEL, strategy="anthropic-native")
    anthropic_client(fake).messages.create(**request.payload, extra_headers=request.headers)
    assert request.payload["messages"][1]["content"][:-1] == blocks
    assert request.changes == ()


def test_a_trailing_unanswered_server_call_is_kept_for_a_paused_turn() -> None:
    """A paused turn (``pause_turn``) may end on a server call; it is sent back to go on."""
    blocks = [{"type": "text", "text": "searching"}, use("srvtoolu_1", "web_search")]
    chef = ContextChef()
    chef.set_history(
        from_anthropic(
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": blocks}]
        ).messages
    )
    request = chef.compile("anthropic", model="claude-sonnet-4-5")  # takes a prefill
    sent = request.payload["messages"][-1]["content"]
    assert [{k: v for k, v in b.items() if k != "cache_control"} for b in sent] == blocks
    assert request.changes == ()


def reply(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [*blocks, {"type": "text", "text": "found nothing"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


@pytest.mark.parametrize("case", sorted(set(BROKEN) - {"orphan mcp result"}))  # beta only
def test_an_ingested_reply_with_unpaired_server_blocks_breaks_no_later_turn(case: str) -> None:
    """breakit3 F05: the reply is stored, but what the provider would refuse is never sent."""
    blocks, dropped = BROKEN[case]
    chef = ContextChef()
    chef.set_history([user("hi")])
    fake = FakeAnthropic().script(raw(reply(blocks)), text("ok"), text("again"))
    client = anthropic_client(fake)
    chef.ingest(client.messages.create(**chef.compile("anthropic", model=MODEL).payload))
    for turn in ("and now?", "more"):
        chef.append(user(turn))
        request = chef.compile("anthropic", model=MODEL)
        chef.ingest(client.messages.create(**request.payload, extra_headers=request.headers))
    assert fake.violations == ()
    sent = fake.requests[-1].body["messages"][1]["content"]
    assert sent[-1] == {"type": "text", "text": "found nothing"}
    assert len(sent) == 1 + len(blocks) - dropped


# -- the fake enforces the pairing for every server tool ---------------------------------------


@pytest.mark.parametrize("block", [web_result("srvtoolu_9"), mcp_result("mcptoolu_9")])
def test_the_fake_refuses_any_server_result_answering_no_call(block: dict[str, Any]) -> None:
    body = {"model": MODEL, "messages": history([block])}
    found = list(anthropic_server_tool_use_not_answered(body, ()))
    assert found == [
        f"messages.1.content.0: {block['type']} for {block['tool_use_id']!r} follows no "
        "server_tool_use or mcp_tool_use with that id in this message"
    ]
    paired = {"model": MODEL, "messages": history([use(block["tool_use_id"], "x"), block])}
    if block["type"] == "mcp_tool_result":
        paired["messages"][1]["content"][0]["type"] = "mcp_tool_use"
    assert list(anthropic_server_tool_use_not_answered(paired, ())) == []


# -- Responses: a client tool_search_output answers a tool_search_call before it -----------------

CALL = {
    "type": "tool_search_call",
    "call_id": "ts_1",
    "execution": "client",
    "arguments": {"query": "x"},
    "status": "completed",
}
OUTPUT = {
    "type": "tool_search_output",
    "call_id": "ts_1",
    "execution": "client",
    "status": "completed",
    "tools": [],
}
ASSISTANT = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "hm"}],
}
RESPONSES_BROKEN = {
    "orphan output": [OUTPUT],
    "mismatched ids": [{**CALL, "call_id": "ts_2"}, OUTPUT],
    "output before its call": [OUTPUT, CALL],
}


@pytest.mark.parametrize("strategy", ["client", "openai-native", "openai-native-client"])
@pytest.mark.parametrize("case", sorted(RESPONSES_BROKEN))
def test_an_orphan_client_search_output_is_dropped_on_responses(case: str, strategy: str) -> None:
    items = RESPONSES_BROKEN[case]
    chef = ContextChef(default_defer=True)
    chef.register_tools(
        [{"name": n, "description": f"Do {n}.", "input_schema": {"type": "object"}} for n in "ab"]
    )
    chef.set_history(
        from_responses(
            [
                {"role": "user", "content": "hi"},
                *items,
                ASSISTANT,
                {"role": "user", "content": "go"},
            ]
        ).messages
    )
    fake = FakeResponses().script(text("ok"))
    client = openai.OpenAI(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    request = chef.compile("responses", model="gpt-5.5", strategy=strategy)
    client.responses.create(**request.payload)
    assert fake.violations == ()
    sent = request.payload["input"]
    calls = [item.get("call_id") for item in sent if item.get("type") == "tool_search_call"]
    outputs = [item.get("call_id") for item in sent if item.get("type") == "tool_search_output"]
    assert outputs == calls  # each call answered once, after it; the orphan left out
    assert all(
        sent.index(o) > sent.index(c)
        for c in sent
        for o in sent
        if c.get("type") == "tool_search_call"
        and o.get("type") == "tool_search_output"
        and o.get("call_id") == c.get("call_id")
    )
    dropped = [c for c in request.changes if c.kind == "dropped_orphan_result"]
    assert [c.call_id for c in dropped] == ["ts_1"]
