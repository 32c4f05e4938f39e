"""No two Responses input items share an ``id``, whatever the history holds.

Break-it round 33 (finding 3): a history holding one turn twice (reasoning ``rs_1``, then
``function_call`` ``fc_1`` / ``call_1``), as a host that appends a turn twice stores it,
was sent with both copies of the item ids: the duplicate-call repair renamed the second
``call_id`` but kept ``rs_1`` and ``fc_1`` twice, and the API (and `FakeResponses`) refuses
"Duplicate item found with id rs_1". A reasoning item stored twice got no change at all.
Now the repair before a request keeps the first item of each id, sends a later one whose
``id`` the API takes left out without it (``dropped_duplicate_id``) and leaves out a later
copy of a reasoning item, whose id is required (``dropped_thinking``); ids sent in earlier
requests count, and those requests are never edited. Sent through the openai SDK to
`FakeResponses`, for two turns.
"""

from __future__ import annotations

import copy
from typing import Any

from contextchef import ContextChef, Message, ToolResult, from_responses, user
from contextchef.testing import fake_for, text
from sdk_send import send

REASONING = {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAA-enc-1", "summary": []}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "db_lookup",
    "arguments": '{"key": "start"}',
}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "Begin with 7."}
ASK = {"role": "user", "content": "Look up start."}


def sent_ids(payload: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
    return [(i.get("type"), i.get("id"), i.get("call_id")) for i in payload["input"]]


def two_turns(chef: ContextChef) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Compile, send and ingest twice; the two payloads and the first request's changes."""
    fake = fake_for("responses").script(text("It is 7."), text("Still 7."))
    first = chef.compile("responses", model="gpt-5.5")
    chef.ingest(send("responses", fake, first.payload))
    chef.append(user("Thanks; again?"))
    second = chef.compile("responses", model="gpt-5.5").payload
    chef.ingest(send("responses", fake, second))
    assert fake.violations == ()
    assert second["input"][: len(first.payload["input"])] == first.payload["input"]
    return first.payload, second, [c.kind for c in first.changes]


def chef_with(items: list[dict[str, Any]]) -> ContextChef:
    chef = ContextChef()
    chef.set_history(from_responses(copy.deepcopy(items)).messages)
    return chef


def test_a_reasoning_item_stored_twice_is_sent_once_and_reported() -> None:
    first, _, kinds = two_turns(chef_with([ASK, REASONING, REASONING, CALL, OUTPUT]))
    assert kinds == ["dropped_thinking"]
    assert sent_ids(first) == [
        (None, None, None),
        ("reasoning", "rs_1", None),
        ("function_call", "fc_1", "call_1"),
        ("function_call_output", None, "call_1"),
    ]


def test_a_turn_stored_twice_keeps_every_item_id_unique() -> None:
    again = {**OUTPUT, "output": "again"}
    items = [ASK, REASONING, CALL, REASONING, CALL, OUTPUT, again]
    first, _, kinds = two_turns(chef_with(items))
    assert kinds == ["renamed_duplicate_call", "dropped_thinking", "dropped_duplicate_id"]
    assert sent_ids(first) == [
        (None, None, None),
        ("reasoning", "rs_1", None),
        ("function_call", "fc_1", "call_1"),
        ("function_call", None, "call_1_2"),  # its id left out: optional on a function_call
        ("function_call_output", None, "call_1"),
        ("function_call_output", None, "call_1_2"),
    ]


def test_a_message_item_id_stored_twice_is_sent_once() -> None:
    said = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Hello.", "annotations": []}],
    }
    first, _, kinds = two_turns(chef_with([ASK, said, ASK, said, ASK]))
    assert kinds == ["dropped_duplicate_id"]
    assert [i.get("id") for i in first["input"]] == [None, "msg_1", None, None, None]


def test_an_id_sent_in_an_earlier_request_counts() -> None:
    """The host appends a copy of a turn already sent: only the new copy loses its ids."""
    chef = chef_with([ASK, REASONING, CALL, OUTPUT])
    fake = fake_for("responses").script(text("It is 7."), text("Still 7."))
    payload = chef.compile("responses", model="gpt-5.5").payload
    first = payload["input"]
    chef.ingest(send("responses", fake, payload))
    turn = next(m for m in chef.history if m.role == "assistant")
    copied = Message(role="assistant", parts=turn.parts)
    answer = ToolResult(call_id="call_1", name="db_lookup", content="Begin with 8.")
    chef.append(user("Once more."), copied, Message(role="user", parts=(answer,)))
    request = chef.compile("responses", model="gpt-5.5")
    chef.ingest(send("responses", fake, request.payload))
    assert fake.violations == ()
    assert request.payload["input"][: len(first)] == first  # what was sent is not edited
    new = sent_ids(request.payload)[len(first) :]
    assert ("reasoning", "rs_1", None) not in new
    assert ("function_call", None, "call_1_2") in new
    kinds = [c.kind for c in request.changes]
    assert "dropped_thinking" in kinds and "dropped_duplicate_id" in kinds
