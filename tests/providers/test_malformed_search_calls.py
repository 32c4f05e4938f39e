"""A provider-native search call with malformed arguments is answered, never raised.

Break-it round 27: under ``openai-native-client`` a client ``tool_search_call`` whose
``arguments`` was a JSON text (``'{"queries": ["read file"]}'``), a list or null made
`ContextChef.ingest` raise `CorruptHistoryError`; nothing was stored and the agent loop
stopped. Every other malformed call was answered with an error result. Now the call is
kept, answered with an error saying the shape ``tool_search`` takes, and sent back as
``{}``, through the official SDKs for two turns; the Anthropic client search (a
``tool_use`` named ``tool_search``) alike.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import shared_data
from contextchef import ContextChef, ToolCall, load_catalog, user
from contextchef.testing import FakeAnthropic, FakeResponses, raw, text
from sdk_send import send

MISSING = object()
SHAPES: list[Any] = ['{"queries": ["read file"]}', ["read file"], None, {"queries": [10**400]}]
IDS = ["json-text", "list", "null", "huge-int"]
USAGE = "tool_search takes exactly one of 'tool_names' (a list of exact names) or 'queries'"


def chef() -> ContextChef:
    made = ContextChef(default_defer=True)
    made.register_catalog(load_catalog(shared_data() / "catalogs" / "mcp-filesystem.json"))
    made.set_history([user("Read the notes file.")])
    return made


def responses_reply(arguments: Any) -> dict[str, Any]:
    call: dict[str, Any] = {
        "type": "tool_search_call",
        "id": "ts_1",
        "call_id": "cs_1",
        "execution": "client",
        "status": "completed",
    }
    if arguments is not MISSING:
        call["arguments"] = arguments
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": "gpt-5.5",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [call],
    }


@pytest.mark.parametrize("arguments", [*SHAPES, MISSING], ids=[*IDS, "missing"])
def test_a_responses_client_search_call_is_answered(arguments: Any) -> None:
    session = chef()
    fake = FakeResponses().script(raw(responses_reply(arguments)), text("Done."))
    options: dict[str, Any] = {"model": "gpt-5.5", "strategy": "openai-native-client"}
    calls = session.ingest(send("responses", fake, session.compile("responses", **options).payload))
    assert [c.name for c in calls] == ["tool_search"]
    (result,) = session.run_tools(calls)
    assert result.is_error and USAGE in result.content, result.content
    payload = session.compile("responses", **options).payload
    session.ingest(send("responses", fake, payload))
    assert fake.violations == ()
    (sent,) = [i for i in payload["input"] if i.get("type") == "tool_search_call"]
    assert sent["arguments"] == {} and sent["call_id"] == "cs_1"
    (output,) = [i for i in payload["input"] if i.get("type") == "tool_search_output"]
    assert output["call_id"] == "cs_1" and output["tools"] == []
    said = [i["content"] for i in payload["input"] if i.get("role") == "developer"]
    assert any(USAGE in s for s in said)  # the answer's text reaches the model


def test_a_well_formed_responses_search_call_still_loads_and_replays_as_given() -> None:
    session = chef()
    arguments = {"queries": ["read file"]}
    fake = FakeResponses().script(raw(responses_reply(arguments)), text("Done."))
    options: dict[str, Any] = {"model": "gpt-5.5", "strategy": "openai-native-client"}
    calls = session.ingest(send("responses", fake, session.compile("responses", **options).payload))
    (result,) = session.run_tools(calls)
    assert not result.is_error and "filesystem__read_file" in result.references
    payload = session.compile("responses", **options).payload
    session.ingest(send("responses", fake, payload))
    assert fake.violations == ()
    (sent,) = [i for i in payload["input"] if i.get("type") == "tool_search_call"]
    assert sent["arguments"] == arguments


def test_a_hosted_search_call_is_the_providers_and_kept_as_given() -> None:
    session = chef()
    reply = responses_reply("odd")
    reply["output"][0].update(execution="server", call_id=None)
    session.ingest(reply)
    (part,) = session.history[-1].parts
    assert getattr(part, "data", {}).get("arguments") == "odd"


@pytest.mark.parametrize("arguments", SHAPES, ids=IDS)
def test_an_anthropic_client_search_call_is_answered(arguments: Any) -> None:
    session = chef()
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "tool_search", "input": arguments}
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    fake = FakeAnthropic().script(raw(reply), text("Done."))
    options: dict[str, Any] = {"model": "claude-sonnet-4-5", "strategy": "anthropic-native-client"}
    calls = session.ingest(send("anthropic", fake, session.compile("anthropic", **options).payload))
    (result,) = session.run_tools(calls)
    assert result.is_error and USAGE in result.content, result.content
    payload = session.compile("anthropic", **options).payload
    session.ingest(send("anthropic", fake, payload))
    assert fake.violations == ()
    uses = [b for m in payload["messages"] if isinstance(m["content"], list) for b in m["content"]]
    assert [b["input"] for b in uses if b["type"] == "tool_use"] == [{}]


def test_the_gate_says_the_search_shape_for_any_unreadable_search_arguments() -> None:
    session = chef()
    check = session.check_tool_call(ToolCall(id="c", name="tool_search", arguments="not json"))
    assert USAGE in getattr(check, "reason", "")
    assert 'e.g. {"queries": ["read file"]}' in getattr(check, "reason", "")
