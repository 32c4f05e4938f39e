"""Call ids from elsewhere reach OpenAI in the range its APIs accept.

Chat Completions refuses a ``tool_calls[].id`` / ``tool_call_id`` over 40 characters and
Responses a ``call_id`` outside 1-64 ("Invalid 'input[4].call_id': empty string"), as
their 400s say. A history built by hand, imported from Gemini (no ids) or from a proxy
(long ids) used to be sent as it was. Each such id is now sent in a short, stable form:
the fakes check the range, through the official SDKs, over several turns.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import ContextChef, Message, ToolCall, ToolResult, tool_results, user
from contextchef.providers._call_ids import fitted_id
from contextchef.testing import fake_for, text, tool_calls

READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
ODD_IDS = ["", "x" * 100, "functions.read_file:0", "call_" + "é" * 50]


def _history() -> list[Message]:
    out = [user("Read them.")]
    for k, call_id in enumerate(ODD_IDS):
        out.append(Message(role="assistant", parts=(ToolCall(id=call_id, name="read_file"),)))
        result = ToolResult(call_id=call_id, name="read_file", content=f"file {k}")
        out += [Message(role="user", parts=(result,)), user(f"next {k}")]
    return out


def _ids(target: str, payload: dict[str, Any]) -> tuple[list[str], list[str]]:
    if target == "openai":
        messages = payload["messages"]
        calls = [c["id"] for m in messages for c in m.get("tool_calls") or ()]
        return calls, [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    items = payload["input"]
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    return calls, [i["call_id"] for i in items if i.get("type") == "function_call_output"]


@pytest.mark.parametrize(("target", "limit"), [("openai", 40), ("responses", 64)])
def test_odd_call_ids_are_sent_in_range_stable_and_paired(target: str, limit: int) -> None:
    fake = fake_for(target).script(tool_calls(("read_file", {"path": "a"})), text("done"))
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.set_history(_history())
    first = chef.compile(target, model="m").payload
    calls, results = _ids(target, first)
    assert calls == results  # each result answers its call
    assert all(0 < len(c) <= limit for c in calls)
    assert len(set(calls)) == len(ODD_IDS)  # different ids stay different
    assert calls[2] == "functions.read_file:0"  # an id in range goes as it is
    assert calls[0] == "call_e3b0c44298fc"  # "" -> "call_" and its SHA-256, first 12 hex
    for _ in range(2):  # the next turns pass the fake, the prefix as sent before
        calls_made = chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
        if calls_made:
            chef.append(tool_results([chef.execute(c).result for c in calls_made]))
    assert fake.violations == ()
    later = fake.requests[-1].body
    assert _ids(target, later)[0][: len(ODD_IDS)] == calls


@pytest.mark.parametrize(("target", "limit"), [("openai", 40), ("responses", 64)])
def test_the_fakes_refuse_call_ids_out_of_range(target: str, limit: int) -> None:
    call_id = "c" * (limit + 1)
    if target == "openai":
        call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        body = {
            "model": "m",
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call_id, "content": "r"},
            ],
        }
    else:
        body = {
            "model": "m",
            "input": [
                {"role": "user", "content": "go"},
                {"type": "function_call", "call_id": "", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "", "output": "r"},
            ],
        }
    fake = fake_for(target).script(text("ok"))
    with pytest.raises(Exception, match="call_ids_in_range"):
        send(target, fake, body)
    assert json.dumps(body)  # the body itself was well formed JSON


def test_fitted_id_is_deterministic_bounded_and_keeps_ids_in_range() -> None:
    assert fitted_id("call_abc", 40) == "call_abc"
    long = "p" * 41
    assert fitted_id(long, 40) == fitted_id(long, 40)
    assert len(fitted_id(long, 40)) == 40 and fitted_id(long, 40).startswith("p" * 27 + "_")
    assert fitted_id(long, 40) != fitted_id(long + "q", 40)
    assert fitted_id("", 64).startswith("call_") and len(fitted_id("", 64)) == 17


def test_interactions_gets_an_id_for_a_call_built_without_one() -> None:
    """Interactions requires ``function_call.id`` and ``function_result.call_id``."""
    fake = fake_for("gemini-interactions").script(text("done"))
    chef = ContextChef()
    chef.register_tools([READ])
    chef.set_history(_history())
    payload = chef.compile("gemini-interactions", model="gemini-3-pro").payload
    calls = [s["id"] for s in payload["input"] if s["type"] == "function_call"]
    results = [s["call_id"] for s in payload["input"] if s["type"] == "function_result"]
    assert calls == results and calls[0] == "call_e3b0c44298fc"
    assert calls[1:] == ODD_IDS[1:]  # Interactions states no length limit: kept
    send("gemini-interactions", fake, payload)
    assert fake.violations == ()
