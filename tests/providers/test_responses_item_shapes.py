"""Responses tool search and ``additional_tools`` items of the wrong shape never break a session.

Break-it round 33 (findings 1 and 4): a client ``tool_search_output`` whose ``call_id`` was an
object or a list was taken in by `ContextChef.ingest` and `from_responses` without a note,
and every later ``compile("responses")`` raised a bare ``TypeError`` (unhashable type);
``"tools": true`` went through too and made the fake itself crash. Now the parser refuses
such an item (`CorruptHistoryError` naming the field and what is valid, the history left as
it was), a stored one that reaches a session by another road is left out of what is sent
(``dropped_foreign_part``), and an ``additional_tools`` item that lost its ``role`` gets
``developer``, the only one it takes. Finding 3: a client ``tool_search_call`` without a
``call_id`` is sent, with its synthesized output, under the made-up id a function call gets.
Every request goes through the openai SDK to `FakeResponses`, for two turns.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from contextchef import (
    ContextChef,
    CorruptHistoryError,
    Message,
    ProviderPart,
    from_responses,
    user,
)
from contextchef.testing import fake_for, raw, text
from sdk_send import send

FN = {
    "type": "function",
    "name": "get_rate",
    "description": "Exchange rate.",
    "defer_loading": True,
    "parameters": {"type": "object", "properties": {"pair": {"type": "string"}}},
}
NAMESPACE = {"type": "namespace", "name": "fx", "description": "FX tools.", "tools": [FN]}
CLIENT_CALL = {
    "type": "tool_search_call",
    "execution": "client",
    "call_id": "ts_1",
    "status": "completed",
    "arguments": {"queries": ["rate"]},
}
CLIENT_OUTPUT = {
    "type": "tool_search_output",
    "execution": "client",
    "call_id": "ts_1",
    "status": "completed",
    "tools": [FN],
}
HOSTED_OUTPUT = {
    "type": "tool_search_output",
    "id": "tso_1",
    "call_id": None,
    "execution": "server",
    "status": "completed",
    "tools": [NAMESPACE],
}

# (label, item to spoil, key, value, what the refusal names)
SPOILED: list[tuple[str, dict[str, Any], str, Any, str]] = [
    ("client-call_id-object", CLIENT_OUTPUT, "call_id", {"type": "text"}, "'call_id'"),
    ("client-call_id-list", CLIENT_OUTPUT, "call_id", ["ts_1"], "'call_id'"),
    ("client-tools-true", CLIENT_OUTPUT, "tools", True, "'tools' must be a list"),
    ("hosted-tools-true", HOSTED_OUTPUT, "tools", True, "'tools' must be a list"),
    ("hosted-id-object", HOSTED_OUTPUT, "id", {"a": 1}, "'id' must be a string or null"),
    ("hosted-status", HOSTED_OUTPUT, "status", ["done"], "'status' must be"),
    ("hosted-execution", HOSTED_OUTPUT, "execution", "remote", "'execution' must be"),
    ("hosted-tools-entry", HOSTED_OUTPUT, "tools", ["fx"], "'tools'[0] must be a tool definition"),
    (
        "hosted-member-name-list",
        HOSTED_OUTPUT,
        "tools",
        [{**NAMESPACE, "tools": [{**FN, "name": []}]}],
        "'tools'[0].tools[0].name must be a non-empty string",
    ),
    (
        "hosted-namespace-no-description",
        HOSTED_OUTPUT,
        "tools",
        [{k: v for k, v in NAMESPACE.items() if k != "description"}],
        "'tools'[0].description must be a string",
    ),
    ("client-call-call_id-object", CLIENT_CALL, "call_id", {"x": 1}, "'call_id'"),
]
IDS = [s[0] for s in SPOILED]


def spoiled(item: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    return {**copy.deepcopy(item), key: copy.deepcopy(value)}


def history(item: dict[str, Any]) -> list[dict[str, Any]]:
    """A stored input with `item` in place of its search call or output."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "What is the USD/EUR rate?"},
        CLIENT_CALL,
        CLIENT_OUTPUT,
        {"role": "user", "content": "And now?"},
    ]
    where = 1 if item["type"] == "tool_search_call" else 2
    if item.get("execution") == "server":
        items[1:3] = [{**CLIENT_CALL, "execution": "server", "call_id": None}, item]
    else:
        items[where] = item
    return copy.deepcopy(items)


def reply(*output: dict[str, Any]) -> dict[str, Any]:
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "The rate is 0.9.", "annotations": []}],
    }
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": "gpt-5.5",
        "output": [*copy.deepcopy(list(output)), message],
    }


@pytest.mark.parametrize(("label", "item", "key", "value", "named"), SPOILED, ids=IDS)
def test_from_responses_refuses_a_spoiled_search_item_naming_the_field(
    label: str, item: dict[str, Any], key: str, value: Any, named: str
) -> None:
    with pytest.raises(CorruptHistoryError) as caught:
        from_responses(history(spoiled(item, key, value)))
    assert named in str(caught.value), str(caught.value)
    assert "responses message" in str(caught.value)


@pytest.mark.parametrize(("label", "item", "key", "value", "named"), SPOILED, ids=IDS)
def test_ingest_refuses_a_spoiled_reply_and_the_session_goes_on(
    label: str, item: dict[str, Any], key: str, value: Any, named: str
) -> None:
    chef = ContextChef()
    chef.set_history([user("What is the USD/EUR rate?")])
    before = chef.history
    call = {**CLIENT_CALL, "id": "tsc_1"} if item["execution"] == "client" else None
    output = [c for c in (call, spoiled(item, key, value)) if c is not None]
    if item["type"] == "tool_search_call":
        output = [spoiled(item, key, value)]
    with pytest.raises(CorruptHistoryError, match=re.escape(named)):
        chef.ingest(reply(*output))
    assert chef.history == before
    fake = fake_for("responses").script(text("0.9"), text("Still 0.9."))
    chef.ingest(send("responses", fake, chef.compile("responses", model="gpt-5.5").payload))
    chef.append(user("And now?"))
    chef.ingest(send("responses", fake, chef.compile("responses", model="gpt-5.5").payload))
    assert fake.violations == ()


@pytest.mark.parametrize(("label", "item", "key", "value", "named"), SPOILED, ids=IDS)
def test_a_spoiled_item_a_host_stored_is_left_out_and_reported(
    label: str, item: dict[str, Any], key: str, value: Any, named: str
) -> None:
    """A provider part built by hand (or restored) skips the parser: compile leaves it out."""
    part = ProviderPart(provider="responses", data=spoiled(item, key, value))
    chef = ContextChef()
    chef.set_history(
        [
            user("What is the USD/EUR rate?"),
            Message(role="assistant", parts=(part,)),
            user("And now?"),
        ]
    )
    fake = fake_for("responses").script(text("0.9"), text("Still 0.9."))
    first = chef.compile("responses", model="gpt-5.5")
    assert "dropped_foreign_part" in [c.kind for c in first.changes]
    assert all(i.get("type") == "message" for i in first.payload["input"])
    chef.ingest(send("responses", fake, first.payload))
    chef.append(user("Thanks."))
    second = chef.compile("responses", model="gpt-5.5").payload
    chef.ingest(send("responses", fake, second))
    assert fake.violations == ()
    assert second["input"][: len(first.payload["input"])] == first.payload["input"]


@pytest.mark.parametrize(("label", "item", "key", "value", "named"), SPOILED, ids=IDS)
def test_the_report_of_a_stored_spoiled_item_names_the_field_and_what_is_valid(
    label: str, item: dict[str, Any], key: str, value: Any, named: str
) -> None:
    """The ``dropped_foreign_part`` detail says why (`_items.item_problem`), not only that."""
    part = ProviderPart(provider="responses", data=spoiled(item, key, value))
    chef = ContextChef()
    chef.set_history(
        [user("What is the USD/EUR rate?"), Message(role="assistant", parts=(part,)), user("Go.")]
    )
    request = chef.compile("responses", model="gpt-5.5")
    (dropped,) = [c for c in request.changes if c.kind == "dropped_foreign_part"]
    assert dropped.index == 1
    assert dropped.detail.startswith("message 1: dropped a provider part the target cannot ")
    assert named in dropped.detail, dropped.detail
    assert "FrozenDict" not in dropped.detail and "tuple" not in dropped.detail  # JSON types
    fake = fake_for("responses").script(text("0.9"))
    chef.ingest(send("responses", fake, request.payload))
    assert fake.violations == ()


def test_an_ingested_hosted_search_with_well_formed_items_is_still_kept_and_replayed() -> None:
    chef = ContextChef()
    chef.set_history([user("What is the USD/EUR rate?")])
    hosted_call = {**CLIENT_CALL, "id": "tsc_1", "execution": "server", "call_id": None}
    chef.ingest(reply(hosted_call, HOSTED_OUTPUT))
    chef.append(user("And now?"))
    payload = chef.compile("responses", model="gpt-5.5").payload
    assert [i for i in payload["input"] if i.get("type") == "tool_search_output"] == [HOSTED_OUTPUT]


def test_additional_tools_without_role_is_given_developer_and_accepted() -> None:
    extra = {**FN, "name": "get_fee", "defer_loading": False}
    items = [
        {"role": "user", "content": "What is the fee?"},
        {"type": "additional_tools", "tools": [extra]},
        {"role": "user", "content": "Go on."},
    ]
    parsed = from_responses(items)
    assert any("additional_tools item without its role" in n for n in parsed.notes)
    chef = ContextChef()
    chef.set_history(parsed.messages)
    fake = fake_for("responses").script(text("The fee is 1%."), text("Done."))
    payload = chef.compile("responses", model="gpt-5.5").payload
    (sent,) = [i for i in payload["input"] if i.get("type") == "additional_tools"]
    assert sent == {"type": "additional_tools", "tools": [extra], "role": "developer"}
    chef.ingest(send("responses", fake, payload))
    chef.append(user("Thanks."))
    chef.ingest(send("responses", fake, chef.compile("responses", model="gpt-5.5").payload))
    assert fake.violations == ()


def test_additional_tools_of_another_role_is_refused() -> None:
    items = [
        {"role": "user", "content": "What is the fee?"},
        {"type": "additional_tools", "role": "user", "tools": [FN]},
    ]
    with pytest.raises(CorruptHistoryError, match="'role' must be 'developer', got 'user'"):
        from_responses(items)


def test_a_client_search_call_without_call_id_gets_the_made_up_id_a_function_call_gets() -> None:
    items = [
        {"role": "user", "content": "What is the USD/EUR rate?"},
        {k: v for k, v in CLIENT_CALL.items() if k != "call_id"},
        CLIENT_OUTPUT,  # answers "ts_1", a call that is not there
        {"role": "user", "content": "Go on."},
    ]
    chef = ContextChef()
    chef.set_history(from_responses(items).messages)
    fake = fake_for("responses").script(text("Searching again."), text("Done."))
    request = chef.compile("responses", model="gpt-5.5")
    kinds = [c.kind for c in request.changes]
    assert "synthesized_result" in kinds and "dropped_orphan_result" in kinds
    search = [i for i in request.payload["input"] if str(i.get("type")).startswith("tool_search")]
    assert [(i["type"], i["call_id"]) for i in search] == [
        ("tool_search_call", "call_e3b0c44298fc"),  # as a function call with an empty id
        ("tool_search_output", "call_e3b0c44298fc"),
    ]
    chef.ingest(send("responses", fake, request.payload))
    chef.append(user("Thanks."))
    chef.ingest(send("responses", fake, chef.compile("responses", model="gpt-5.5").payload))
    assert fake.violations == ()


def test_a_hosted_search_reply_from_the_fake_round_trips() -> None:
    """The fake's own hosted search items pass the shape check (no false refusal)."""
    chef = ContextChef()
    chef.set_history([user("What is the USD/EUR rate?")])
    hosted_call = {**CLIENT_CALL, "id": "tsc_1", "execution": "server", "call_id": None}
    fake = fake_for("responses").script(raw(reply(hosted_call, HOSTED_OUTPUT)), text("Done."))
    chef.ingest(send("responses", fake, chef.compile("responses", model="gpt-5.5").payload))
    chef.append(user("And now?"))
    chef.ingest(send("responses", fake, chef.compile("responses", model="gpt-5.5").payload))
    assert fake.violations == ()
