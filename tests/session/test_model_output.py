"""Model output that breaks later turns (issue 23, item 7), through the official SDKs.

* A Chat tool call without ``function`` (or of a type Chat does not replay) used to be
  kept verbatim, returned no call, and went back in every later request, which the API
  refuses: it is now a call of ``malformed_tool_call`` that the gate answers with an error
  result, and the next requests pass the fake (which now checks every call's shape).
* A Responses content part whose ``type`` is not a string raised a bare ``TypeError``.
* ``ingest`` refused a second reply that reused an id (``""`` included) as "ingested
  already": it compares the turn too; the same response twice is still refused.

Every response shape, wrong types at every level: tests/fuzz/test_response_shape_fuzz.py.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from test_ingest import HX, send  # the SDK clients pointed at a fake

from contextchef import TARGETS, ContextChef, CorruptHistoryError, UsageError, tool_results, user
from contextchef.testing import FakeProvider, fake_for, raw, text, tool_calls

READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.set_history([user("Look around.")])
    return chef


def _chat(calls: list[Any], reply_id: str = "chatcmpl-1") -> dict[str, Any]:
    message = {"role": "assistant", "content": "reading", "tool_calls": calls}
    return {
        "id": reply_id,
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }


def _chat_json(fake: FakeProvider, payload: dict[str, Any]) -> Any:
    """`payload` through the OpenAI SDK; the response's JSON as the API returned it (the
    SDK's object of a call without ``function`` cannot be dumped without warnings)."""
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    return client.chat.completions.with_raw_response.create(**payload).http_response.json()


GOOD = {"id": "c_ok", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "c_bad", "type": "function"},  # no function object
        {"id": "c_bad"},
        {"id": "c_bad", "type": "function", "function": "read_file"},
        {"id": "c_bad", "type": "x", "function": {"name": "read_file", "arguments": "{}"}},
        {"id": "c_bad", "type": "custom", "custom": {"name": "read_file", "input": "a"}},
    ],
)
def test_a_chat_call_that_is_no_function_call_is_answered_and_never_breaks_a_request(
    bad: dict[str, Any],
) -> None:
    fake = fake_for("openai").script(raw(_chat([bad, GOOD])), text("ok"), text("done"))
    chef = _chef()
    calls = chef.ingest(_chat_json(fake, chef.compile("openai", model="m").payload))
    assert [(c.id, c.name) for c in calls] == [
        ("c_bad", "malformed_tool_call"),
        ("c_ok", "read_file"),
    ]
    assert "not a function call" in calls[0].arguments
    results = chef.run_tools(calls)  # the malformed call never runs read_file
    assert results[0].is_error and "was no function call" in results[0].content
    assert results[1].content == "read " and not results[1].is_error
    for _ in range(2):  # every later request passes the fake
        chef.ingest(send("openai", fake, chef.compile("openai", model="m").payload))
        chef.append(user("again"))
    assert fake.violations == ()
    (sent,) = [m["tool_calls"] for m in fake.requests[-1].body["messages"] if "tool_calls" in m]
    assert sent[0]["type"] == "function" and sent[0]["function"]["name"] == "malformed_tool_call"


def test_the_chat_fake_refuses_what_used_to_be_replayed() -> None:
    fake = fake_for("openai").script(text("ok"))
    payload = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function"}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
        ],
    }
    with pytest.raises(Exception, match="chat_tool_calls_well_formed"):
        send("openai", fake, payload)


@pytest.mark.parametrize("kind", [["output_text"], {"t": 1}, 3, None])
def test_a_responses_part_whose_type_is_no_string_is_refused_by_name(kind: Any) -> None:
    chef = _chef()
    reply = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": kind, "text": "hi", "annotations": []}],
            }
        ],
    }
    with pytest.raises(CorruptHistoryError, match="content part type"):
        chef.ingest(reply)
    assert len(chef.history) == 1


def _anthropic(reply_id: str, words: str) -> dict[str, Any]:
    return {
        "id": reply_id,
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": words}],
        "stop_reason": "end_turn",
    }


@pytest.mark.parametrize("reply_id", ["msg_same", ""])
def test_two_replies_sharing_an_id_are_both_kept_and_one_reply_twice_is_refused(
    reply_id: str,
) -> None:
    chef = _chef()
    chef.ingest(_anthropic(reply_id, "first"))
    chef.append(user("more"))
    chef.ingest(_anthropic(reply_id, "second"))  # another reply: kept
    assert [m.parts[0].text for m in chef.history if m.role == "assistant"] == [  # type: ignore[union-attr]
        "first",
        "second",
    ]
    chef.append(user("and?"))
    if reply_id:  # the same response again is refused; "" names no response
        with pytest.raises(UsageError, match="ingested already"):
            chef.ingest(_anthropic(reply_id, "second"))
        assert len(chef.history) == 5
    else:
        chef.ingest(_anthropic(reply_id, "second"))
        assert len(chef.history) == 6


def test_after_a_restore_the_last_reply_is_still_known_by_its_id() -> None:
    chef = _chef()
    chef.compile("anthropic")
    chef.ingest(_anthropic("msg_1", "a"))
    resumed = _chef()
    resumed.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True)
    with pytest.raises(UsageError, match="'msg_1' was ingested already"):
        resumed.ingest(_anthropic("msg_1", "a"))
    resumed.append(user("next"))
    resumed.ingest(_anthropic("msg_2", "b"))
    with pytest.raises(UsageError, match="'msg_2' was ingested already"):
        resumed.ingest(_anthropic("msg_2", "b"))
    resumed.ingest(_anthropic("msg_2", "another reply"))


@pytest.mark.parametrize("target", TARGETS)
def test_a_call_that_names_no_tool_is_answered_and_later_requests_pass(target: str) -> None:
    """A model's call with ``""`` as its name used to fail `ingest` (CorruptHistoryError),
    and kept as it came it would be refused on every later request. It is recorded as
    ``malformed_tool_call``: the gate answers it, its sibling call still runs, and the
    following turns pass the fake on every target."""
    fake = fake_for(target).script(
        tool_calls(("", {"path": "x"}), ("read_file", {"path": "a"}), reasoning="plan"),
        tool_calls(("read_file", {"path": "b"})),
        text("Done."),
    )
    chef = _chef()
    answered = []
    for _ in range(3):
        calls = chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
        if calls:
            results = chef.run_tools(calls)
            answered.extend(results)
            chef.append(tool_results(list(results)))
    assert fake.violations == ()
    assert [(r.name, r.is_error) for r in answered] == [
        ("malformed_tool_call", True),
        ("read_file", False),
        ("read_file", False),
    ]
    assert "named no tool" in answered[0].content
    sent = json.dumps(fake.requests[-1].body)
    assert '"malformed_tool_call"' in sent


def _responses_call(**fields: Any) -> dict[str, Any]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "c_r", "name": "read_file"}
    return {"id": "resp_9", "object": "response", "status": "completed", "output": [item | fields]}


@pytest.mark.parametrize(
    ("target", "reply", "runs"),
    [
        (
            "openai",
            _chat([{**GOOD, "function": {"name": "read_file", "arguments": {"path": "a"}}}]),
            True,
        ),
        ("responses", _responses_call(arguments={"path": "a"}), True),
        ("responses", _responses_call(), True),  # no arguments at all: {}
        ("responses", _responses_call(arguments=[1, 2]), False),
    ],
)
def test_arguments_sent_as_an_object_or_left_out_are_taken_not_refused(
    target: str, reply: dict[str, Any], runs: bool
) -> None:
    """Some OpenAI-compatible servers send a call's arguments as an object instead of its
    JSON text, or leave them out; `ingest` used to raise CorruptHistoryError."""
    fake = fake_for(target).script(text("ok"), text("done"))
    chef = _chef()
    chef.compile(target, model="m")
    (call,) = chef.ingest(reply)
    (result,) = chef.run_tools([call])
    assert result.is_error is not runs
    chef.append(tool_results([result]))
    for _ in range(2):  # replayed as text: every later request passes the fake
        chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
        chef.append(user("again"))
    assert fake.violations == ()
