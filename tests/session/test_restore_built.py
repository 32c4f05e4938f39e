"""A restore builds each message once, straight from the decoded snapshot (issue 27, item 1).

Restore makes the history's messages with `history._built.built` (one checked walk per
message) and checks each wire entry by hashing its canonical bytes; a message or entry it
does not take as it is goes the long way, which names what is wrong. What must hold: the
restored session is the original one (the same messages, field for field; the same
requests, byte for byte, turn after turn, through the official SDK clients against the
`contextchef.testing` fakes, with and without the ``fastjson`` encoder), and a corrupt
history or wire record is refused naming the message or entry, changing nothing.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from test_ingest import send
from test_snapshot_once import compiled, conversation, make

from contextchef import (
    TARGETS,
    ContextChefError,
    CorruptHistoryError,
    UsageError,
    tool_results,
    user,
)
from contextchef import _json as json_module
from contextchef._json import FrozenDict
from contextchef.history._messages import message_from_dict
from contextchef.testing import text, tool_calls


def _alike(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _alike(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _alike(x, y)
    elif hasattr(a, "__dict__"):
        assert list(vars(a)) == list(vars(b))
        for name in vars(a):
            _alike(getattr(a, name), getattr(b, name))
    else:
        assert a == b


@pytest.fixture(params=[True, False], ids=["fastjson", "json"])
def encoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if not request.param:
        monkeypatch.setattr(json_module, "FAST_JSON", [None])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.usefixtures("encoder")
def test_a_restored_session_is_the_original_turn_after_turn(target: str) -> None:
    chef, fake = conversation(target)
    snap = json.loads(json.dumps(chef.snapshot()))
    worker = make()
    worker.restore(copy.deepcopy(snap), allow_unsigned=True)
    # the same messages, each field of the same type as message_from_dict makes them
    assert worker.history == chef.history
    for message, form in zip(worker.history, snap["history"], strict=True):
        _alike(message, message_from_dict(form))
    data = [getattr(p, "provider_data", None) for m in worker.history for p in m.parts]
    assert any(isinstance(d, FrozenDict) for d in data) or target == "openai"
    # then three more turns on both, the same model answers: the same bytes every time
    fake.script(
        tool_calls(("read_file", {"path": "d.py"}), reasoning="docs"),
        text("Docs done.", reasoning="ok"),
        text("Bye."),
    )
    for turn in range(3):
        sent, again = compiled(chef, target), compiled(worker, target)
        assert again.to_json() == sent.to_json() and not again.edits, turn
        answer = send(target, fake, again.payload)
        for session in (chef, worker):
            calls = session.ingest(answer)
            if calls:
                session.append(tool_results([session.execute(c).result for c in calls]))
            else:
                session.append(user(f"next {turn}"))
    assert fake.violations == ()
    assert json.loads(json.dumps(worker.snapshot())) == json.loads(json.dumps(chef.snapshot()))


def _refused(snap: dict[str, Any], kind: type[ContextChefError]) -> str:
    chef = make()
    chef.set_history([user("mine")])
    before = compiled(chef, "anthropic").to_json()
    with pytest.raises(kind) as info:
        chef.restore(snap, allow_unsigned=True)
    assert chef.history == (user("mine"),)
    assert compiled(chef, "anthropic").to_json() == before
    return str(info.value)


def _where(snap: dict[str, Any], kind: str) -> tuple[int, int]:
    """(message, part) of the first part of `kind` in the snapshot's history."""
    return next(
        (i, j)
        for i, m in enumerate(snap["history"])
        for j, p in enumerate(m["parts"])
        if p["kind"] == kind
    )


BAD = {
    "a lone surrogate in a tool result": (
        "tool_result",
        lambda p: p.update(content="a\ud800"),
        "ToolResult.content holds text that is not valid Unicode (a lone surrogate)",
    ),
    "NaN in thinking's provider data": (
        "reasoning",
        lambda p: p["provider_data"].update(extra=math.nan),
        "is not JSON data: its values hold NaN, Infinity or a number too large",
    ),
    "a tool call without an id": ("tool_call", lambda p: p.pop("id"), "tool_call part:"),
    "a text part of another kind of value": (
        "text",
        lambda p: p.update(text=7),
        "TextPart.text must be a string, got int",
    ),
    "an unknown field": (
        "tool_result",
        lambda p: p.update(colour="red"),
        "tool_result part has unknown fields ['colour']",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.usefixtures("encoder")
def test_a_corrupt_history_message_is_refused_naming_it(case: str) -> None:
    kind, change, words = BAD[case]
    chef, _ = conversation("anthropic")
    snap = json.loads(json.dumps(chef.snapshot()))
    i, j = _where(snap, kind)
    change(snap["history"][i]["parts"][j])
    message = _refused(snap, CorruptHistoryError)
    assert message.startswith(f"message {i}: ") and words in message, message


@pytest.mark.usefixtures("encoder")
def test_a_wire_entry_holding_nan_is_refused_as_not_plain_json() -> None:
    chef, _ = conversation("anthropic")
    snap = json.loads(json.dumps(chef.snapshot()))
    snap["ledgers"]["anthropic"]["wire"][0]["x"] = math.nan
    assert "snapshot ledger 'anthropic' 'wire' is not plain JSON" in _refused(snap, UsageError)


@pytest.mark.usefixtures("encoder")
def test_an_edited_wire_entry_and_a_surrogate_in_one_are_refused_naming_the_entry() -> None:
    chef, _ = conversation("responses")
    snap = json.loads(json.dumps(chef.snapshot()))
    last = len(snap["ledgers"]["responses"]["wire"]) - 1
    edited = copy.deepcopy(snap)
    edited["ledgers"]["responses"]["wire"][last]["zz"] = "added"
    assert f"'responses' 'wire' entry {last} differs from what was sent" in _refused(
        edited, UsageError
    )
    edited["ledgers"]["responses"]["wire"][last]["zz"] = "\udc00"
    assert f"'responses' 'wire' entry {last} holds text that is not valid Unicode" in _refused(
        edited, UsageError
    )
