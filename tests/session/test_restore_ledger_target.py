"""A ledger is tied to its target key: one copied from another target is refused on restore.

Break-it 21 (p5): ``s["ledgers"]["openai"] = copy.deepcopy(s["ledgers"]["anthropic"])`` in
an unsigned snapshot restored with ``allow_unsigned=True``, and the next Chat compile sent
Anthropic blocks. Restore now checks each wire entry against its ledger's target's wire
form (`contextchef.providers._wire_shape`, keys and part types only, nothing re-rendered)
and refuses with `SnapshotMismatchError` naming the ledger; the library's own ledgers for
every target still restore and send the same bytes through the SDK clients.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import (
    TARGETS,
    ContextChef,
    SnapshotMismatchError,
    ToolCall,
    ToolResult,
    assistant,
    tool_results,
    user,
)
from contextchef.providers._wire_shape import foreign_entry
from contextchef.testing import fake_for, text

MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "deepseek": "deepseek-chat",
    "gemini": "gemini-2.5-pro",
    "gemini-interactions": "gemini-2.5-pro",
    "openai": "gpt-5.6",
    "responses": "gpt-5.6",
}


def grep(pattern: str) -> str:
    """Search the code base.

    Args:
        pattern: A regular expression.
    """
    return "src/app.py:12: TODO " + pattern


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_system_prompt("You are careful.")
    return chef


def _snapshot() -> dict[str, Any]:
    """A snapshot holding a ledger per target, each with a tool call, result and text."""
    chef = _chef()
    chef.append(user("Find the TODOs."))
    chef.append(
        assistant("Looking.", [ToolCall(id="c1", name="grep", arguments='{"pattern":"x"}')])
    )
    chef.append(tool_results([ToolResult(call_id="c1", name="grep", content="one TODO")]))
    chef.append(assistant("One TODO."), user("Thanks, and now?"))
    for target in TARGETS:
        chef.compile(target, model=MODELS[target])
    snapshot: dict[str, Any] = json.loads(json.dumps(chef.snapshot()))
    assert sorted(snapshot["ledgers"]) == sorted(TARGETS)
    return snapshot


@pytest.fixture(scope="module")
def snap() -> dict[str, Any]:
    return _snapshot()


@pytest.mark.parametrize("source", sorted(TARGETS))
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_ledger_copied_from_another_target_is_refused(
    snap: dict[str, Any], source: str, target: str
) -> None:
    same_wire = {source, target} == {"openai", "deepseek"}  # both Chat Completions
    if source == target or same_wire:
        pytest.skip("the same wire form")
    forged = copy.deepcopy(snap)
    forged["ledgers"][target] = copy.deepcopy(snap["ledgers"][source])
    chef = _chef()
    with pytest.raises(SnapshotMismatchError) as caught:
        chef.restore(forged, allow_unsigned=True)
    message = str(caught.value)
    assert f"snapshot ledger {target!r} 'wire' entry " in message
    assert f"not in the {target} wire form" in message
    assert chef.snapshot()["ledgers"] == {}  # nothing was restored


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_each_targets_own_ledger_restores_and_sends_the_same_bytes(
    snap: dict[str, Any], target: str
) -> None:
    restored = _chef()
    assert restored.restore(snap, allow_unsigned=True) == ()
    original = _chef()
    original.restore(snap, allow_unsigned=True)
    for chef in (restored, original):
        chef.append(user("One more turn."))
    payload = restored.compile(target, model=MODELS[target]).payload
    assert payload == original.compile(target, model=MODELS[target]).payload
    fake = fake_for(target).script(text("Done."))
    restored.ingest(send(target, fake, payload))
    restored.append(user("And again."))
    send(
        target,
        fake.script(text("Done again.")),
        restored.compile(target, model=MODELS[target]).payload,
    )
    assert fake.violations == ()


@pytest.mark.parametrize(
    ("target", "entry", "reason"),
    [
        ("openai", {"role": "user", "content": [{"type": "tool_result"}]}, "'tool_result'"),
        ("anthropic", {"role": "user", "parts": [{"text": "x"}]}, "no 'content'"),
        ("anthropic", {"role": "assistant", "content": None, "tool_calls": []}, "'tool_calls'"),
        ("gemini", {"role": "user", "content": "x"}, "no 'parts'"),
        ("responses", {"type": "function_call", "id": "c", "name": "g"}, "has no call_id"),
        ("responses", {"type": "user_input", "content": []}, "Interactions step"),
        ("gemini-interactions", {"type": "function_call_output"}, "Responses item"),
        ("gemini-interactions", {"type": "function_call", "call_id": "c"}, "has a call_id"),
    ],
)
def test_foreign_entries_are_named(target: str, entry: dict[str, Any], reason: str) -> None:
    found = foreign_entry(target, entry)
    assert found is not None and reason in found


def test_entries_valid_on_both_wires_pass() -> None:
    both = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert foreign_entry("anthropic", both) is None
    assert foreign_entry("openai", both) is None
    assert foreign_entry("nonesuch", {"anything": 1}) is None


def test_a_long_ledger_copied_is_refused_from_its_ends() -> None:
    """Restore reads a long ledger's first and last 32 entries only (no per-entry work on
    a long conversation), which still shows the wire of a whole ledger copied across."""
    chef = _chef()
    for r in range(40):  # 160 messages, a tool call in every round
        call = ToolCall(id=f"c{r}", name="grep", arguments='{"pattern":"x"}')
        chef.append(user(f"Round {r}."), assistant("Looking.", [call]))
        chef.append(tool_results([ToolResult(call_id=call.id, name="grep", content="a TODO")]))
        chef.append(assistant("Found it."))
    chef.append(user("Next?"))
    for target in ("anthropic", "openai"):
        chef.compile(target, model=MODELS[target])
    snap: dict[str, Any] = json.loads(json.dumps(chef.snapshot()))
    assert len(snap["ledgers"]["anthropic"]["wire"]) > 64
    forged = copy.deepcopy(snap)
    forged["ledgers"]["openai"] = copy.deepcopy(snap["ledgers"]["anthropic"])
    with pytest.raises(SnapshotMismatchError, match=r"'openai' 'wire' entry \d+ is not"):
        _chef().restore(forged, allow_unsigned=True)
    assert _chef().restore(snap, allow_unsigned=True) == ()


@pytest.mark.parametrize(
    ("target", "entry", "reason"),
    [
        # a part or entry type the target's wire does not know is refused only where
        # another wire takes it as its own
        ("anthropic", {"role": "user", "content": [{"type": "input_text"}]}, "'input_text'"),
        ("anthropic", {"role": "assistant", "content": [{"type": "server_tool_use"}]}, None),
        ("responses", {"role": "user", "content": [{"type": "text", "text": "x"}]}, "'text'"),
        ("responses", {"type": "web_search_call", "id": "ws_1"}, None),
        ("gemini-interactions", {"type": "reasoning"}, "Responses item"),
        ("gemini-interactions", {"type": "google_search_call", "id": "g"}, None),
        # a type that is no string is no wire's: named or passed, never a TypeError
        ("responses", {"type": ["message"]}, None),
        ("anthropic", {"role": "user", "content": [{"type": ["text"]}]}, None),
        ("openai", {"role": "user", "content": [{"type": {"a": 1}}]}, "{'a': 1}"),
    ],
)
def test_types_a_wire_does_not_know(target: str, entry: dict[str, Any], reason: str | None) -> None:
    found = foreign_entry(target, entry)
    assert found is None if reason is None else found is not None and reason in found


def test_each_wires_own_entry_types_are_no_other_wires() -> None:
    """The wires' shapes (`WireReader.shape`) agree: what one has as its own no other
    knows, and what a closed wire takes an open one does not claim to know."""
    from contextchef.providers import WIRES

    for reader in WIRES:
        assert reader.shape.own_kinds <= reader.shape.kinds or not reader.shape.kinds
        for other in WIRES:
            if other is not reader:
                assert not reader.shape.own_kinds & other.shape.kinds, (reader.wire, other.wire)


def test_restoring_a_ledger_loads_no_other_wire() -> None:
    """Only a part or entry type the target's wire does not know reads the other wires."""
    chef = ContextChef()  # no tools: the probe restores into a bare session
    chef.append(user("Find the TODOs."), assistant("None."), user("Sure?"))
    chef.compile("anthropic", model=MODELS["anthropic"])
    probe = (
        "import json, sys\n"
        "from contextchef import ContextChef\n"
        f"assert ContextChef().restore(json.loads({json.dumps(json.dumps(chef.snapshot()))}),"
        " allow_unsigned=True) == ()\n"
        "print(json.dumps(sorted({m.split('.')[2] for m in sys.modules"
        " if m.startswith('contextchef.providers.') and m.count('.') > 2})))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == ["anthropic"]
