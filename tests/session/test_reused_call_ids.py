"""A history whose calls reuse one id keeps every exchange, on every target.

Some OpenAI-compatible servers send the same call id (``call_0``) on every turn, and a
host that stored such a conversation hands it to `set_history` as it is. Providers pair a
result with its call by id, so the normalizer used to drop each later call and its
result: the model lost every exchange after the first. A reused id now gets a new,
stable one (``call_0_2``...) and its result follows it; the fakes, through the official
SDKs, accept every turn.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import TARGETS, ContextChef, Message, ToolCall, ToolResult, tool_results, user
from contextchef.testing import fake_for, text, tool_calls

READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def _history() -> list[Message]:
    out = [user("Read the three files.")]
    for k in range(3):
        call = ToolCall(id="call_0", name="read_file", arguments=json.dumps({"path": f"f{k}"}))
        out.append(Message(role="assistant", parts=(call,)))
        result = ToolResult(call_id="call_0", name="read_file", content=f"contents of f{k}")
        out.append(Message(role="user", parts=(result,)))
    out.append(user("Now summarize them."))
    return out


def _texts(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


@pytest.mark.parametrize("target", TARGETS)
def test_every_exchange_of_a_reused_id_reaches_the_model(target: str) -> None:
    history = _history()
    fake = fake_for(target).script(tool_calls(("read_file", {"path": "f3"})), text("Done."))
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.set_history(history)
    assert chef.history == tuple(history)  # the host's history is kept as given
    first = chef.compile(target, model="m").payload
    sent = _texts(first)
    for k in range(3):  # every result and every call's arguments are sent
        assert f"contents of f{k}" in sent and f"f{k}" in sent
    for _ in range(2):  # then the loop goes on through the SDK, prefix as sent
        calls = chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
        if calls:
            chef.append(tool_results([chef.execute(c).result for c in calls]))
    assert fake.violations == ()
    assert len(fake.requests) == 2
    assert "contents of f2" in _texts(fake.requests[-1].body)
