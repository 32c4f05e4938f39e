"""One malformed block in a model reply never bricks later requests (break-it findings).

A tool-search result whose references are not a list, a thinking block the API cannot
verify (no signature), a last user turn with nothing sendable: each is dropped and
reported, or refused with a clear error, instead of failing every later compile or
request. Multi-turn through the official SDK against `FakeAnthropic`.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from contextchef import ContextChef, ToolResult, UsageError, assistant, tool_results, user
from contextchef.session._request import CompiledRequest
from contextchef.testing import FakeAnthropic, httpx_for, text

OPUS = "claude-opus-5-5"


def get_rate(pair: str) -> str:
    """Exchange rate of a currency pair.

    Args:
        pair: Currency pair, like USD/EUR.
    """
    return "0.9"


def _reply(*content: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": OPUS,
        "content": list(content),
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _run(
    chef: ContextChef, first: dict[str, Any], strategy: str = "auto"
) -> tuple[FakeAnthropic, list[CompiledRequest]]:
    """Ingest the reply `first` as received, then two more turns through the fake.

    The malformed reply is ingested as the JSON body (the SDK's own models warn on it);
    every later request goes through the SDK client to `FakeAnthropic`.
    """
    chef.compile("anthropic", model=OPUS, strategy=strategy)
    calls = chef.ingest(first)
    if calls:
        chef.append(tool_results([chef.execute(c).result for c in calls]))
    fake = FakeAnthropic().script(text("ok"), text("done"))
    requests: list[CompiledRequest] = []
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    try:
        for i in range(2):
            if chef.history[-1].role != "user":
                chef.append(user(f"next {i}"))
            request = chef.compile("anthropic", model=OPUS, strategy=strategy)
            requests.append(request)
            chef.ingest(client.messages.create(**request.payload, extra_headers=request.headers))
    finally:
        client.close()
    return fake, requests


CALL = {"type": "tool_use", "id": "toolu_1", "name": "get_rate", "input": {"pair": "USD/EUR"}}


@pytest.mark.parametrize(
    "content",
    [
        {"type": "tool_search_tool_search_result", "tool_references": 7},
        {"type": "tool_search_tool_search_result", "tool_references": [{"tool_name": 5}]},
        {"type": "tool_search_tool_search_result", "tool_references": ["get_rate"]},
        {"type": "tool_search_tool_search_result"},
        "not an object",
        None,
    ],
)
@pytest.mark.parametrize("strategy", ["anthropic-native", "client"])
def test_a_malformed_tool_search_result_is_dropped_and_reported(
    content: Any, strategy: str
) -> None:
    chef = ContextChef(default_defer=True)
    chef.register_tools([get_rate])
    chef.set_history([user("USD/EUR?")])
    search = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "tool_search_tool_bm25",
        "input": {"query": "rate"},
    }
    result = {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": content}
    fake, _ = _run(chef, _reply(search, result, CALL), strategy)
    assert fake.violations == ()
    for sent in fake.requests:
        kinds = [
            b.get("type")
            for m in sent.body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
        ]
        assert "tool_search_tool_result" not in kinds and "server_tool_use" not in kinds
    chef.append(user("again"))
    request = chef.compile("anthropic", model=OPUS, strategy=strategy)
    assert "tool_search_tool_result" not in str(request.payload["messages"])


@pytest.mark.parametrize(
    "block",
    [
        {"type": "thinking", "thinking": "x"},
        {"type": "thinking", "thinking": "x", "signature": ""},
        {"type": "thinking", "thinking": "x", "signature": None},
        {"type": "redacted_thinking"},
    ],
)
def test_a_thinking_block_the_api_cannot_verify_is_dropped_and_reported(
    block: dict[str, Any],
) -> None:
    chef = ContextChef()
    chef.register_tools([get_rate])
    chef.set_history([user("USD/EUR?")])
    fake, requests = _run(chef, _reply(block, CALL))
    assert fake.violations == ()  # every later request accepted, prefix check included
    assert "thinking" not in str(requests[-1].payload["messages"])
    assert any(c.kind == "dropped_foreign_part" for c in requests[0].changes)


@pytest.mark.parametrize("model", [OPUS, "claude-3-5-sonnet"])
def test_a_last_turn_with_nothing_to_send_is_refused_not_a_prefill(model: str) -> None:
    chef = ContextChef()
    chef.set_history(
        [
            user("hi"),
            assistant("sure"),
            tool_results([ToolResult(call_id="gone", name="x", content="r")]),
        ]
    )
    with pytest.raises(UsageError, match=r"dropped a result for 'gone'.*append the next user"):
        chef.compile("anthropic", model=model)
