"""A client tool search built by hand as provider parts counts like an ingested one.

A host that writes a client ``tool_search_call`` and its ``tool_search_output`` itself (or
restores them) holds them as `ProviderPart` items, not as the `ToolCall` / `ToolResult`
an ingested reply gives. The output echoes the call's ``call_id`` (OpenAI's tool search
guide, client-executed search), so it answers that call: it was left out as answering no
call (``dropped_orphan_result``), which left the call unanswered and every later request
refused ("exactly one" client output after it, `FakeResponses`' pairing rule). A malformed
call is still left out, the reason named, and its output with it. Every request goes
through the openai SDK to the fake, for two turns.
"""

from __future__ import annotations

import copy
from typing import Any

from contextchef import ContextChef, Message, ProviderPart, user
from contextchef.testing import fake_for, text
from sdk_send import send

MODEL = "gpt-5.5"
FN = {
    "type": "function",
    "name": "get_rate",
    "description": "Exchange rate.",
    "parameters": {"type": "object", "properties": {"pair": {"type": "string"}}},
}
CALL = {
    "type": "tool_search_call",
    "execution": "client",
    "call_id": "ts_1",
    "status": "completed",
    "arguments": {"queries": ["rate"]},
}
OUTPUT = {
    "type": "tool_search_output",
    "execution": "client",
    "call_id": "ts_1",
    "status": "completed",
    "tools": [FN],
}


def part(data: dict[str, Any]) -> ProviderPart:
    return ProviderPart(provider="responses", data=copy.deepcopy(data))


def search_items(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in payload["input"] if str(i.get("type")).startswith("tool_search")]


def test_a_hand_built_client_search_and_its_output_are_sent_as_built() -> None:
    chef = ContextChef()
    chef.set_history(
        [
            user("What is the USD/EUR rate?"),
            Message(role="assistant", parts=(part(CALL),)),
            Message(role="user", parts=(part(OUTPUT),)),
            user("And now?"),
        ]
    )
    fake = fake_for("responses").script(text("0.9"), text("Still 0.9."))
    first = chef.compile("responses", model=MODEL)
    assert first.changes == ()
    assert search_items(first.payload) == [CALL, OUTPUT]
    chef.ingest(send("responses", fake, first.payload))
    chef.append(user("Thanks."))
    second = chef.compile("responses", model=MODEL)
    assert second.changes == ()
    assert second.payload["input"][: len(first.payload["input"])] == first.payload["input"]
    chef.ingest(send("responses", fake, second.payload))
    assert fake.violations == ()
    assert [r.body["input"][1:3] for r in fake.requests] == [[CALL, OUTPUT], [CALL, OUTPUT]]


def test_an_output_answering_a_hand_built_call_sent_in_an_earlier_request_is_kept() -> None:
    """A search the host adds after a request was sent counts too (checked against `before`)."""
    chef = ContextChef()
    chef.set_history([user("What is the USD/EUR rate?")])
    fake = fake_for("responses").script(text("Searching."), text("0.9"))
    chef.ingest(send("responses", fake, chef.compile("responses", model=MODEL).payload))
    chef.append(Message(role="assistant", parts=(part(CALL),)))
    chef.append(Message(role="user", parts=(part(OUTPUT), *user("Go on.").parts)))
    request = chef.compile("responses", model=MODEL)
    assert request.changes == ()
    assert search_items(request.payload) == [CALL, OUTPUT]
    chef.ingest(send("responses", fake, request.payload))
    assert fake.violations == ()


def test_a_malformed_hand_built_call_is_left_out_with_its_output_each_reason_named() -> None:
    chef = ContextChef()
    chef.set_history(
        [
            user("What is the USD/EUR rate?"),
            Message(role="assistant", parts=(part({**CALL, "call_id": {"x": 1}}),)),
            Message(role="user", parts=(part(OUTPUT),)),
            user("And now?"),
        ]
    )
    fake = fake_for("responses").script(text("0.9"))
    request = chef.compile("responses", model=MODEL)
    kinds = {c.kind: c.detail for c in request.changes}
    assert (
        "tool_search_call 'call_id' must be a string or null, got an object"
        in (kinds["dropped_foreign_part"])
    )
    assert "answers no tool_search_call" in kinds["dropped_orphan_result"]
    assert search_items(request.payload) == []
    chef.ingest(send("responses", fake, request.payload))
    assert fake.violations == ()
