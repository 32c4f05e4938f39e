"""Restore's integrity checks made in tight loops still check every message and entry.

An unsigned restore digests each consumed history message and each wire entry with the
fast encoder in one loop, compares the lists at once, and goes one by one only to name a
mismatch; a value the fast encoder refuses (an integer past 64 bits) or writes otherwise
(a float) in the middle of the list is digested alone on the canonical bytes and the loop
goes on. What must hold: such a conversation restores and sends the same bytes, turn
after turn, through the official SDK clients against the `contextchef.testing` fakes; an
edit after such a message is still named (the digests stay aligned); a history or wire
entry that is not an object is refused naming the field (the form takes them uncopied).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import ContextChef, Message, TextPart, UsageError, _json, assistant, user
from contextchef.testing import FakeAnthropic, FakeOpenAIChat, text

ODD = {"big": 2**70, "score": 1e-7, "small": -0.0}
"""Provider data the fast encoder refuses (the integer) or writes otherwise (the floats)."""


def _history() -> list[Message]:
    odd = Message(role="assistant", parts=(TextPart(text="odd", provider_data=ODD),))
    out: list[Message] = []
    for i in range(6):
        out += [user(f"question {i}"), odd if i in (1, 4) else assistant(f"answer {i}")]
    return [*out, user("last")]


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.set_system_prompt("Be brief.")
    return chef


TARGETS = {"anthropic": ("claude-sonnet-4-5", FakeAnthropic), "openai": ("gpt-5.6", FakeOpenAIChat)}


@pytest.fixture(params=[True, False], ids=["fastjson", "json"])
def fast(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if not request.param:
        monkeypatch.setattr(_json, "FAST_JSON", [None])
    return bool(request.param)


@pytest.mark.parametrize("target", TARGETS)
def test_odd_values_mid_history_restore_and_send_the_same_bytes(target: str, fast: bool) -> None:
    model, fake_type = TARGETS[target]
    chef = _chef()
    chef.set_history(_history())
    fake = fake_type()
    fake.script(text("One."), text("Two."), text("Three."))
    chef.ingest(send(target, fake, chef.compile(target, model=model).payload))
    snap = json.loads(json.dumps(chef.snapshot()))
    worker = _chef()
    worker.restore(snap, allow_unsigned=True)
    assert worker.history == chef.history
    for turn in range(2):  # the same bytes from both, two more turns
        for session in (chef, worker):
            session.append(user(f"more {turn}"))
        ours, theirs = (s.compile(target, model=model) for s in (chef, worker))
        assert theirs.to_json() == ours.to_json() and not theirs.edits, turn
        answer = send(target, fake, theirs.payload)
        for session in (chef, worker):
            session.ingest(answer)
    assert fake.violations == ()


@pytest.mark.parametrize("at", [0, 5, 11])
def test_an_edit_before_between_or_after_odd_messages_is_named(at: int, fast: bool) -> None:
    chef = _chef()
    chef.set_history(_history())
    chef.compile("openai", model="gpt-5.6")
    snap = json.loads(json.dumps(chef.snapshot()))
    snap["history"][at]["parts"][0]["text"] = "EDITED"
    with pytest.raises(UsageError, match=f"history message {at} differs"):
        _chef().restore(snap, allow_unsigned=True)


def test_an_edited_wire_entry_after_odd_ones_is_named(fast: bool) -> None:
    chef = _chef()
    chef.set_history(_history())
    chef.compile("anthropic", model="claude-sonnet-4-5")
    snap = json.loads(json.dumps(chef.snapshot()))
    wire = snap["ledgers"]["anthropic"]["wire"]
    last = len(wire) - 1
    wire[last]["content"] = [{"type": "text", "text": "EDITED"}]
    with pytest.raises(UsageError, match=f"'wire' entry {last} differs from what was sent"):
        _chef().restore(snap, allow_unsigned=True)


@pytest.mark.parametrize("field", ["history", "wire"])
@pytest.mark.parametrize("value", [3, "text", None, [1]])
def test_an_entry_that_is_not_an_object_is_named(field: str, value: Any) -> None:
    chef = _chef()
    chef.set_history(_history())
    chef.compile("openai", model="gpt-5.6")
    snap = json.loads(json.dumps(chef.snapshot()))
    holder = snap if field == "history" else snap["ledgers"]["openai"]
    holder[field][2] = value
    wanted = f"field '{field}' [2] must be an object, got {type(value).__name__}"
    with pytest.raises(UsageError, match=wanted.replace("[", r"\[").replace("]", r"\]")):
        _chef().restore(snap, allow_unsigned=True)
