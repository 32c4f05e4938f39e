"""Edits to a returned payload never reach the session's record of what was sent.

Regression (breakit1 s26): on OpenAI Chat, Responses and Gemini the payload's message
dicts were the ledger's own record, so a key the caller added to a sent message was sent
again in every later request; on Anthropic only the last message was a copy (its cache
breakpoint), so earlier messages leaked the same way.

The payload's message entries are still the record (copying them on every compile made a
steady compile cost about one ``json.dumps`` of the payload; benchmarks/compile_steady.py),
but they are recorded read-only: an edit at any depth raises `ReadOnlyPayloadError` (a
``TypeError`` too) naming ``mutable_payload()``, whose plain copy is the caller's to edit.
The payload dict and its lists are new per compile and stay the caller's.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from contextchef import (
    ContextChef,
    ContextChefError,
    MediaPart,
    ReadOnlyPayloadError,
    TextPart,
    Tool,
    ToolCall,
    ToolResult,
    assistant,
    tool_results,
    user,
)
from contextchef._json import canonical_dumps
from contextchef.history._messages import Message

KEY = {"anthropic": "messages", "openai": "messages", "responses": "input", "gemini": "contents"}
MODEL = {"anthropic": "claude-sonnet-4-5"}
IMAGE = "https://example.com/chart.png"


def _history() -> list[Message]:
    call = ToolCall(
        id="call_1", name="lookup", arguments={"query": {"terms": ["a", "b"], "deep": {"n": 1}}}
    )
    return [
        user("hello"),
        assistant("hi"),
        Message(
            role="user",
            parts=(TextPart(text="look this up:"), MediaPart(media_type="image/png", url=IMAGE)),
        ),
        Message(role="assistant", parts=(call,)),
        tool_results([ToolResult(call_id="call_1", name="lookup", content="found")]),
    ]


def _session() -> ContextChef:
    chef = ContextChef()
    chef.set_history(_history())
    return chef


def _containers(value: Any) -> Iterator[dict[str, Any] | list[Any]]:
    """Every dict and list inside `value`, at any depth (`value` itself excluded)."""
    children = value.values() if isinstance(value, dict) else value
    for child in children:
        if isinstance(child, (dict, list)):
            yield child
            yield from _containers(child)


def _edits(container: dict[str, Any] | list[Any]) -> list[Callable[[], object]]:
    """One call per way of editing `container` in place."""
    if isinstance(container, dict):
        key = next(iter(container), "k")
        return [
            lambda: container.__setitem__("EXTRA", "INJECTED"),
            lambda: container.__delitem__(key),
            lambda: container.update(EXTRA="INJECTED"),
            lambda: container.setdefault("EXTRA", "INJECTED"),
            lambda: container.pop(key),
            container.popitem,
            container.clear,
        ]
    return [
        lambda: container.append({"type": "text", "text": "INJECTED"}),
        lambda: container.extend(["INJECTED"]),
        lambda: container.insert(0, "INJECTED"),
        lambda: container.__setitem__(0, "INJECTED"),
        lambda: container.__delitem__(0),
        container.pop,
        container.clear,
        container.reverse,
        lambda: container.sort(key=str),
        lambda: container.__iadd__(["INJECTED"]),
    ]


@pytest.mark.parametrize("target", sorted(KEY))
def test_editing_a_returned_payload_does_not_change_later_requests(target: str) -> None:
    model = MODEL.get(target, "m")
    edited, clean = _session(), _session()
    first = edited.compile(target, model=model)
    untouched = clean.compile(target, model=model).to_json()
    entries = first.payload[KEY[target]]
    containers = [c for entry in entries for c in [entry, *_containers(entry)]]
    assert len(containers) >= len(entries) + 3  # parts, tool calls and their inputs too
    refused = 0
    for container in containers:
        for edit in _edits(container):
            with pytest.raises(ReadOnlyPayloadError, match=r"mutable_payload\(\)") as caught:
                edit()
            assert isinstance(caught.value, TypeError)
            assert isinstance(caught.value, ContextChefError)
            refused += 1
    assert first.to_json() == untouched  # nothing got through
    entries.append({"role": "user", "content": "INJECTED"})  # the list is the caller's
    first.payload["EXTRA"] = "INJECTED"  # and so is the dict
    for chef in (edited, clean):
        chef.append(assistant("found it"))
        chef.append(user("thanks"))
    later = edited.compile(target, model=model).to_json()
    assert "INJECTED" not in later
    assert later == clean.compile(target, model=model).to_json()
    assert edited.compile(target, model=model).to_json() == later  # and again
    assert untouched != later
    assert refused > 20


@pytest.mark.parametrize("target", sorted(KEY))
def test_a_mutable_payload_is_the_callers_to_edit(target: str) -> None:
    model = MODEL.get(target, "m")
    edited, clean = _session(), _session()
    request = edited.compile(target, model=model)
    clean.compile(target, model=model)
    mine = request.mutable_payload()
    assert canonical_dumps(mine) == request.to_json()
    for copied in (
        mine,
        copy.deepcopy(request.payload),
        pickle.loads(pickle.dumps(request.payload)),
    ):
        assert copied == request.payload
        for container in _containers(copied):
            assert type(container) in (dict, list)  # plain, hence editable
    for entry in mine[KEY[target]]:
        entry["EXTRA"] = "INJECTED"
        for container in _containers(entry):
            if isinstance(container, list):
                container.append("INJECTED")
            else:
                container["EXTRA"] = "INJECTED"
    assert "INJECTED" in canonical_dumps(mine)
    assert "INJECTED" not in request.to_json()
    for chef in (edited, clean):
        chef.append(user("thanks"))
    assert (
        edited.compile(target, model=model).to_json()
        == clean.compile(target, model=model).to_json()
    )


@pytest.mark.parametrize("target", sorted(KEY))
def test_read_only_entries_serialize_like_plain_ones(target: str) -> None:
    request = _session().compile(target, model=MODEL.get(target, "m"))
    payload = request.payload
    mine = request.mutable_payload()
    assert json.dumps(payload) == json.dumps(mine)
    assert json.dumps(payload, sort_keys=True, indent=1) == json.dumps(
        mine, sort_keys=True, indent=1
    )
    assert canonical_dumps(payload) == canonical_dumps(mine) == request.to_json()
    assert json.loads(request.to_json()) == payload


def _tooled() -> ContextChef:
    chef = _session()
    schema = {"type": "object", "properties": {"query": {"type": "object"}}}
    chef.register_tools([Tool(name="lookup", description="Look it up.", input_schema=schema)])
    return chef


def test_snapshots_are_plain_copies_of_the_ledger() -> None:
    """A snapshot's sent entries and tools, edited after the fact, reach no request.

    Regression: ``snapshot()`` handed out the ledger's own tool entries, so a key added
    to the snapshot's ``tools`` was sent by the same session from then on.
    """
    edited, clean = _tooled(), _tooled()
    for chef in (edited, clean):
        chef.compile("openai", model="m")
    snap = edited.snapshot()
    ledger = snap["ledgers"]["openai"]
    for entry in [*ledger["wire"], *ledger["tools"]]:
        assert all(type(c) in (dict, list) for c in [entry, *_containers(entry)])
        entry["EXTRA"] = "INJECTED"
    for chef in (edited, clean):
        chef.append(assistant("found it"), user("thanks"))
    later = edited.compile("openai", model="m").to_json()
    assert "INJECTED" not in later
    assert later == clean.compile("openai", model="m").to_json()


def test_a_restored_ledger_is_a_copy_of_the_snapshot() -> None:
    chef = _tooled()
    chef.compile("openai", model="m")
    snap = chef.snapshot()
    other = _tooled()
    other.restore(snap, allow_unsigned=True)
    before = other.compile("openai", model="m").to_json()
    ledger = snap["ledgers"]["openai"]
    for entry in [*ledger["wire"], *ledger["tools"]]:  # the caller's, edited after restore
        entry["EXTRA"] = "INJECTED"
    other.append(assistant("found it"), user("thanks"))
    request = other.compile("openai", model="m")
    later = request.to_json()
    assert "INJECTED" not in later
    assert not request.edits  # nothing sent changed: the cache prefix holds
    assert later.startswith(before[: before.index('"messages"')])
