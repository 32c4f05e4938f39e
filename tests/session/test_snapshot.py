"""Snapshots: JSON-serializable, versioned, round-trip to identical compiled bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from contextchef import (
    TARGETS,
    ContextChef,
    SnapshotMismatchError,
    ToolCall,
    UsageError,
    assistant,
    user,
)


class State(BaseModel):
    branch: str
    count: int


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: File to read.
    """
    return path


def write_file(path: str, text: str) -> str:
    """Write a file.

    Args:
        path: File to write.
        text: New content.
    """
    return path


KIT = {
    "name": "weather",
    "description": "Weather APIs",
    "tools": [
        {"name": "forecast", "description": "Forecast", "parameters": {"city": {"type": "string"}}}
    ],
}


def build(**kwargs: Any) -> ContextChef:
    chef = ContextChef(default_defer=True, pin=["^read_file$"], modes={"qa": ["read_*"]}, **kwargs)
    chef.register_tools([read_file, write_file])
    chef.register_toolkits([KIT])
    return chef


def populated() -> ContextChef:
    chef = build()
    chef.set_system_prompt("You are careful.")
    chef.set_history([user("hi"), assistant("hello"), user("read a.py")])
    chef.set_blocked_tools(["write_*"])
    chef.load_toolkit("weather")
    chef.announce("tools:added", "Tools newly available: forecast")
    chef.announce("tools:removed", "write_file is disabled", channel="user_tail")
    chef.set_dynamic_state(State(branch="main", count=2))
    chef.set_system_channel_breakpoint(True)
    chef.set_mode("qa")
    return chef


@pytest.mark.parametrize("target", TARGETS)
def test_round_trip_gives_identical_bytes(target: str) -> None:
    chef = populated()
    snap = json.loads(json.dumps(chef.snapshot()))  # JSON-serializable
    fresh = build()
    # the blocklist and mode were set at run time: the host lets the snapshot narrow
    notes = fresh.restore(snap, allow_unsigned=True, narrow=True)
    # 'forecast' was loaded before the mode hid it: a load the policy closes is dropped
    assert [(n.field, n.kept) for n in notes] == [
        ("mode", "snapshot"),
        ("blocked", "snapshot"),
        ("loaded_tools", "session"),
    ]
    assert notes[-1].snapshot == ["forecast"] and notes[-1].session == []
    assert fresh.snapshot() == {**snap, "loaded_tools": []}
    assert fresh.compile(target).to_json() == chef.compile(target).to_json()
    assert fresh.snapshot() == {**chef.snapshot(), "loaded_tools": []}  # the same ledger
    assert fresh.loaded_toolkits == ("weather",)
    assert fresh.take_tool_additions() == ()


def test_snapshot_fields() -> None:
    snap = populated().snapshot()
    assert snap["format"] == "contextchef.snapshot" and snap["version"] == 6
    assert snap["announcements"] == [
        {"id": "tools:added", "content": "Tools newly available: forecast", "channel": "auto"},
        {"id": "tools:removed", "content": "write_file is disabled", "channel": "user_tail"},
    ]
    assert snap["dynamic_state"] == {"branch": "main", "count": 2}
    assert snap["blocked"] == ["write_*"]
    assert snap["mode"] == "qa"
    assert snap["history"][0] == {"role": "user", "parts": [{"kind": "text", "text": "hi"}]}
    assert snap["tools"]["names"] == ["read_file", "write_file"]


def test_restore_over_changed_state_and_without_announcements_field() -> None:
    chef = populated()
    snap = chef.snapshot()
    expected = chef.compile("anthropic").to_json()
    chef.announce("later", "x")
    chef.set_history([user("other")])
    chef.restore(snap, allow_unsigned=True)
    assert chef.compile("anthropic").to_json() == expected
    old = {k: v for k, v in snap.items() if k != "announcements"}
    chef.restore(old, allow_unsigned=True)  # spec 001: no announcements field restores to none
    assert chef.get_announcements() == ()
    assert chef.dynamic_state == {"branch": "main", "count": 2}
    chef.announce("later", "x")
    # any other missing field was never written by a released version: refused
    without_state = {k: v for k, v in snap.items() if k != "dynamic_state"}
    with pytest.raises(UsageError, match=r"'dynamic_state' is missing.*nothing was restored"):
        chef.restore(without_state, allow_unsigned=True)
    assert [a.id for a in chef.get_announcements()] == ["later"]


def test_restore_with_different_tools_is_a_clear_error_and_changes_nothing() -> None:
    snap = populated().snapshot()
    other = ContextChef(modes={"qa": ["read_*"]})
    other.register_tools([read_file])
    other.register_toolkits([KIT])
    other.announce("keep", "me")
    with pytest.raises(SnapshotMismatchError, match=r"missing \['write_file'\]") as info:
        other.restore(snap, allow_unsigned=True)
    assert info.value.missing == ("write_file",)
    assert [a.id for a in other.get_announcements()] == ["keep"]
    no_kits = ContextChef(modes={"qa": ["read_*"]})
    no_kits.register_tools([read_file, write_file])
    with pytest.raises(SnapshotMismatchError, match="register_toolkits"):
        no_kits.restore(snap, allow_unsigned=True)


def test_bad_snapshots() -> None:
    chef = build()
    with pytest.raises(UsageError, match="not a contextchef snapshot"):
        chef.restore({"system": "x"}, allow_unsigned=True)
    snap = chef.snapshot()
    with pytest.raises(SnapshotMismatchError, match="version 99"):
        chef.restore({**snap, "version": 99}, allow_unsigned=True)
    for version in ("5", 5.0, True, None, 0, -1):  # malformed (break-it rounds 31, 32)
        with pytest.raises(UsageError, match=r"'version' is .* not a version") as info:
            chef.restore({**snap, "version": version}, allow_unsigned=True)
        assert not isinstance(info.value, SnapshotMismatchError)


@pytest.mark.parametrize(
    ("field", "value"),
    [("exposure", 5), ("whitelist", "x"), ("announcements", [{"bad": 1}]), ("blocked", [1])],
)
def test_a_malformed_snapshot_changes_nothing(field: str, value: Any) -> None:
    source = ContextChef()
    source.set_system_prompt("A")
    source.set_history([user("from A")])
    snap = source.snapshot()
    snap[field] = value
    target = ContextChef()
    target.set_system_prompt("B")
    target.set_history([user("from B")])
    before = target.compile("anthropic").to_json()
    with pytest.raises(UsageError, match="nothing was restored"):
        target.restore(snap, allow_unsigned=True)
    assert target.compile("anthropic").to_json() == before


def test_loaded_tools_and_gate_state_round_trip() -> None:
    chef = build()
    call = ToolCall(id="c1", name="tool_search", arguments='{"tool_names": ["write_file"]}')
    chef.execute(call)
    snap = chef.snapshot()
    fresh = build()
    fresh.restore(snap, allow_unsigned=True)
    assert fresh.loaded_tools == chef.loaded_tools == ("write_file",)


def _answered_then_edited() -> ContextChef:
    """Opus 5.5 (prefix check): a turn with signed thinking answered, then the system
    prompt changed and compiled (an edit), the request never answered."""
    chef = build()
    chef.set_system_prompt("You are careful.")
    chef.set_history([user("hi")])
    chef.compile("anthropic", model="claude-opus-5-5")
    thinking = {"type": "thinking", "thinking": "", "signature": "sig_1"}
    reply = {"type": "message", "role": "assistant", "content": [thinking, _text("hello")]}
    chef.ingest(reply)
    chef.append(user("read a.py"))
    chef.set_system_prompt("You are very careful.")
    assert [e.kind for e in chef.compile("anthropic", model="claude-opus-5-5").edits] == ["system"]
    return chef


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def test_an_unanswered_edit_is_kept_until_its_answer() -> None:
    """The ledger before the edit travels in the snapshot (``undo``) until an answer."""
    chef = _answered_then_edited()
    snap = json.loads(json.dumps(chef.snapshot()))
    assert snap["ledgers"]["anthropic"]["undo"]["system"] == "You are careful."
    retry = chef.compile("anthropic", model="claude-opus-5-5")
    fresh = build()
    fresh.restore(snap, allow_unsigned=True)
    assert fresh.snapshot() == snap
    restored = fresh.compile("anthropic", model="claude-opus-5-5")
    assert restored.to_json() == retry.to_json() and restored.edits == retry.edits
    fresh.ingest({"type": "message", "role": "assistant", "content": [_text("a.py: ok")]})
    assert "undo" not in fresh.snapshot()["ledgers"]["anthropic"]  # answered: it stays


def test_a_snapshot_without_undo_restores_without_the_edit_report() -> None:
    """``undo`` is left out when no edit is pending; a snapshot whose ``undo`` was deleted
    restores like one: the retry sends the same request (thinking still left out), only
    the edit goes unreported."""
    chef = _answered_then_edited()
    snap = json.loads(json.dumps(chef.snapshot()))
    del snap["ledgers"]["anthropic"]["undo"]
    fresh = build()
    fresh.restore(snap, allow_unsigned=True)
    again = fresh.compile("anthropic", model="claude-opus-5-5")
    assert again.to_json() == chef.compile("anthropic", model="claude-opus-5-5").to_json()
    assert '"thinking"' not in again.to_json()


@pytest.mark.parametrize("undo", [5, "ledger", {"undo": None}])
def test_a_malformed_undo_is_refused_and_changes_nothing(undo: Any) -> None:
    snap = json.loads(json.dumps(_answered_then_edited().snapshot()))
    raw = snap["ledgers"]["anthropic"]
    snap["ledgers"]["anthropic"]["undo"] = (
        {**raw["undo"], **undo} if isinstance(undo, dict) else undo
    )
    target = build()
    target.set_history([user("mine")])
    with pytest.raises(UsageError, match="'undo'"):
        target.restore(snap, allow_unsigned=True)
    assert [m.text for m in target.history] == ["mine"]


@pytest.mark.parametrize("compiled", [False, True])
def test_a_history_edit_taken_back_after_restore_is_no_edit(compiled: bool) -> None:
    """A consumed message edited, snapshotted, restored and put back matches again.

    The snapshot records consumed messages by digest; one the restored history lacks
    stands in by its digest, so the same message put back is no edit (and the thinking
    it was answered with is still sent), with or without a compile of the edit between.
    """
    chef = build()
    chef.set_history([user("hi")])
    for turn in range(2):
        chef.compile("anthropic", model="claude-opus-5-5")
        thinking = {"type": "thinking", "thinking": "", "signature": f"sig_{turn}"}
        reply = {"type": "message", "role": "assistant", "content": [thinking, _text("ok")]}
        chef.ingest(reply)
        chef.append(user(f"next {turn}"))
    sent = chef.compile("anthropic", model="claude-opus-5-5")
    original = chef.history
    chef.set_history([*original[:1], assistant("edited"), *original[2:]])
    if compiled:
        assert chef.compile("anthropic", model="claude-opus-5-5").edits  # never answered
    fresh = build()
    fresh.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True)
    for host in (chef, fresh):
        host.set_history(original)
    again = fresh.compile("anthropic", model="claude-opus-5-5")
    assert again.edits == ()
    assert again.to_json() == chef.compile("anthropic", model="claude-opus-5-5").to_json()
    assert again.to_json() == sent.to_json()
    assert again.to_json().count('"type":"thinking"') == 2
