"""A snapshot holds the conversation once and restores to the same bytes (issue 27, item 1).

Version 2 of the snapshot records the history once: a ledger's normalized messages that
equal history messages are their indices, its consumed messages a count of the history
they lead, and the thinking-fingerprint chain is recorded so the first compile after a
restore does not serialize the ledger again. What each target was sent (its wire entries)
stays the ledger's record, replayed byte for byte. Each conversation here runs through the
official SDK clients against the `contextchef.testing` fakes (on Anthropic with thinking,
on ``claude-opus-5-5``, whose prefix check the fake enforces); the restored session's
requests must equal the original's and be accepted. Version 1 snapshots still restore.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import BaseModel
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import TARGETS, ContextChef, tool_results, user
from contextchef._json import canonical_dumps
from contextchef.history._forms import digest, text_digest
from contextchef.history._messages import message_from_dict
from contextchef.history._reordered import record_digest as _record_digest
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import fake_for, text, tool_calls

MODELS = {"anthropic": "claude-opus-5-5"}


class Files(BaseModel):
    files: list[str]


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: File to read.
    """
    return f"<<MARKER {path}>> " + "contents " * 120  # a text over SHARED_TEXT


def make() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([read_file])
    chef.set_system_prompt("You are careful.")
    return chef


def compiled(chef: ContextChef, target: str) -> Any:
    return chef.compile(target, model=MODELS.get(target, "m"))


def conversation(target: str) -> tuple[ContextChef, Any]:
    """Three model turns with thinking and tool calls, answered, then a user turn."""
    fake = fake_for(target).script(
        tool_calls(("read_file", {"path": "a.py"}), reasoning="plan a"),
        tool_calls(("read_file", {"path": "b.py"}), ("read_file", {"path": "c.py"}), reasoning="b"),
        text("Both fixed.", reasoning="done"),
        text("Again."),
        text("And again."),
    )
    chef = make()
    chef.set_history([user("Fix a.py, then b.py and c.py.")])
    for _ in range(3):
        calls = chef.ingest(send(target, fake, compiled(chef, target).payload))
        if calls:
            chef.append(tool_results([chef.execute(call).result for call in calls]))
    chef.append(user("Now the docs."))
    assert fake.violations == ()
    return chef, fake


def ledgers_of(snap: dict[str, Any]) -> list[dict[str, Any]]:
    ledgers = snap["ledgers"].values()
    return [*ledgers, *(lg["undo"] for lg in ledgers if "undo" in lg)]


def as_version_3(snap: dict[str, Any]) -> dict[str, Any]:
    """`snap` as version 3 wrote it: each wire digest over the whole entry sent."""
    old = copy.deepcopy(snap)
    old["version"] = 3
    whole = as_version_2(snap, version=3)
    for ledger, entries in zip(ledgers_of(old), ledgers_of(whole), strict=True):
        ledger.pop("blocks", None)  # version 5's
        ledger["wire_digests"] = [text_digest(canonical_dumps(e)) for e in entries["wire"]]
    return old


def as_version_2(snap: dict[str, Any], version: int = 2) -> dict[str, Any]:
    """`snap` as version 2 wrote it: each wire entry whole, its texts not referred to."""
    old = copy.deepcopy(snap)
    old["version"] = version
    for ledger in ledgers_of(old):
        ledger.pop("blocks", None)  # version 5's
        for entry, refs in zip(ledger["wire"], ledger.pop("texts"), strict=True):
            for ref in refs:
                text: Any = old["history"][ref["message"]]
                for key in ref["path"]:
                    text = text[key]
                holder = entry
                for key in ref["at"][:-1]:
                    holder = holder[key]
                assert holder[ref["at"][-1]] is None
                holder[ref["at"][-1]] = text
        ledger["wire_digests"] = [text_digest(canonical_dumps(e)) for e in ledger["wire"]]
    return old


def as_version_1(snap: dict[str, Any]) -> dict[str, Any]:
    """`snap` as version 1 wrote it: every ledger message in full, consumed by digest.

    (Checked once against the version 1 writer, main at 1087dea: for these conversations
    on anthropic, responses, gemini and openai it gives the very dicts that wrote.)
    """
    old = as_version_2(snap)
    old["version"] = 1
    history = [message_from_dict(m) for m in old["history"]]
    for ledger in ledgers_of(old):
        shared = ledger.pop("shared")
        rest = ledger["consumed"][shared:] if len(ledger["consumed"]) > shared else []
        ledger["consumed"] = [digest(m) for m in history[:shared]] + rest
        ledger["ir"] = [old["history"][m] if isinstance(m, int) else m for m in ledger["ir"]]
        ledger.pop("chain", None)
        ledger["record_digest"] = _record_digest(ledger)
    return old


@pytest.mark.parametrize("target", TARGETS)
def test_the_conversation_is_stored_once_and_restores_to_the_same_bytes(target: str) -> None:
    chef, fake = conversation(target)
    snap = json.loads(json.dumps(chef.snapshot()))
    assert snap["version"] == 6
    ledger = snap["ledgers"][target]
    whole = json.dumps(snap)
    for path in ("a.py", "b.py", "c.py"):
        marker = f"<<MARKER {path}>>"
        # once, as the conversation: what the target was sent refers to it (version 3)
        assert json.dumps(snap["history"]).count(marker) == 1
        assert whole.count(marker) == 1, (marker, whole.count(marker))
        v2 = as_version_2(snap)["ledgers"][target]
        assert json.dumps(v2["wire"]).count(marker) == 1  # version 2: once more, as sent
    # messages sent as they are in the history are its indices; on Chat Completions the
    # model turns went without their (DeepSeek) reasoning, so they are recorded in full
    assert all(isinstance(m, int) or m["role"] == "assistant" for m in ledger["ir"])
    assert ledger["shared"] == ledger["pending"]["history"] == len(ledger["consumed"])
    if target == "anthropic":  # the prefix-check chain is recorded with the ledger
        assert len(ledger["chain"]["digests"]) == len(ledger["wire"])
    v3, v2, old = as_version_3(snap), as_version_2(snap), as_version_1(snap)
    assert len(json.dumps(old)) > len(json.dumps(v2)) > len(whole)

    expected = compiled(chef, target)
    for data in (snap, v3, v2, old):
        fresh = make()
        fresh.restore(copy.deepcopy(data), allow_unsigned=True)
        assert fresh.history == chef.history
        again = compiled(fresh, target)
        assert again.to_json() == expected.to_json()
        assert again.edits == () and again.appended == expected.appended
        # the next turn goes on, accepted by the provider, and stays the same bytes
        reply = send(target, fake.script(text("Docs done.")), again.payload)
        fresh.ingest(reply)
        fresh.append(user("Thanks."))
        assert fake.violations == ()
        following = compiled(fresh, target)
        assert following.to_json().startswith(again.to_json()[: again.to_json().index("]")])
        assert not following.edits


def test_an_edited_message_reference_is_refused() -> None:
    chef, _ = conversation("responses")
    snap = json.loads(json.dumps(chef.snapshot()))
    snap["ledgers"]["responses"]["ir"][0] = 999
    fresh = make()
    with pytest.raises(Exception, match=r"'ir' entry 0 refers to history message 999"):
        fresh.restore(snap, allow_unsigned=True)
    assert fresh.history == ()


def test_an_edited_chain_is_refused_by_the_record_digest() -> None:
    chef, _ = conversation("anthropic")
    snap = json.loads(json.dumps(chef.snapshot()))
    chain = snap["ledgers"]["anthropic"]["chain"]
    chain["digests"][0] = "0" * 32
    with pytest.raises(Exception, match="the record digest does not match"):
        make().restore(snap, allow_unsigned=True)


def test_restore_neither_changes_nor_keeps_the_snapshot_it_is_given() -> None:
    """`SessionSync` hands the stored snapshot to restore and diffs the next save against
    it: restore must leave it as it was, and share nothing with the session."""
    chef, _ = conversation("anthropic")
    chef.set_dynamic_state(Files(files=["a.py"]))
    snap = json.loads(json.dumps(chef.snapshot()))
    kept = copy.deepcopy(snap)
    fresh = make()
    fresh.restore(snap, allow_unsigned=True)
    assert snap == kept
    before = fresh.snapshot()
    snap["dynamic_state"]["files"].append("INJECTED")
    for message in snap["history"]:
        message["parts"].append({"kind": "text", "text": "INJECTED"})
    assert fresh.snapshot() == before


def sync_turn(
    tmp_path: Any, snap: dict[str, Any], chef: ContextChef, fake: Any
) -> tuple[SQLiteSessionStore, ContextChef, Any]:
    """`snap` stored, a worker's SessionSync turn on it (its request equal to `chef`'s).

    Returns the store, the worker and what the store holds after the turn.
    """
    store = SQLiteSessionStore(tmp_path / "s.db")
    store.snapshot("s", snap, expected_version=0)
    worker, sync = make(), SessionSync(store, "s")
    assert sync.load_into(worker)
    request = compiled(worker, "anthropic")
    assert request.to_json() == compiled(chef, "anthropic").to_json()
    worker.ingest(send("anthropic", fake.script(text("Docs done.")), request.payload))
    worker.append(user("Thanks."))
    sync.save(worker)
    stored = store.load("s")
    assert stored is not None and stored.turns == 1
    return store, worker, stored


def goes_on(store: SQLiteSessionStore, worker: ContextChef, fake: Any) -> None:
    """A fresh load of `store` sends what `worker` would, and the fake takes it."""
    later = make()
    assert SessionSync(store, "s").load_into(later)
    again = compiled(later, "anthropic")
    assert again.to_json() == compiled(worker, "anthropic").to_json() and not again.edits
    later.ingest(send("anthropic", fake.script(text("Fine.")), again.payload))
    assert fake.violations == ()


def test_a_session_sync_turn_saves_what_a_fresh_load_restores(tmp_path: Any) -> None:
    chef, fake = conversation("anthropic")
    store, worker, _ = sync_turn(tmp_path, chef.snapshot(), chef, fake)
    later = make()
    assert SessionSync(store, "s").load_into(later)
    assert later.snapshot() == worker.snapshot()
    assert compiled(later, "anthropic").to_json() == compiled(worker, "anthropic").to_json()


def test_a_delta_reads_the_growth_of_the_wire_from_its_digests() -> None:
    """What was sent is compared by its recorded digests, not serialized again; an entry
    whose digest changed (sent again after an edit) is written whole."""
    from contextchef.stores._store import apply_delta, snapshot_delta

    old = {"ledgers": {"a": {"wire": [{"n": 1}], "wire_digests": ["d1"], "x": [1]}}}
    grown = {
        "ledgers": {"a": {"wire": [{"n": 1}, {"n": 2}], "wire_digests": ["d1", "d2"], "x": [1]}}
    }
    changed = {"ledgers": {"a": {"wire": [{"n": True}], "wire_digests": ["d9"], "x": [1]}}}
    assert snapshot_delta(old, grown) == [
        ["extend", ["ledgers", "a", "wire"], [{"n": 2}]],
        ["extend", ["ledgers", "a", "wire_digests"], ["d2"]],
    ]
    assert snapshot_delta(old, changed) == [
        ["set", ["ledgers", "a", "wire"], [{"n": True}]],
        ["set", ["ledgers", "a", "wire_digests"], ["d9"]],
    ]
    for new in (grown, changed):
        base = copy.deepcopy(old)
        apply_delta(base, snapshot_delta(old, new))
        assert base == new and json.dumps(base) == json.dumps(new)


def same_text(path: str) -> str:
    """Read a file whose contents every path shares.

    Args:
        path: File to read.
    """
    return f"{len(path)} " + "the same long contents " * 80  # over SHARED_TEXT, one text


def _repeating(target: str, when: str) -> dict[str, Any]:
    """Four turns whose tool results are one long text; snapshots taken `when`."""
    fake = fake_for(target).script(
        *(tool_calls(("same_text", {"path": f"{k}.py"})) for k in range(4)), text("Done.")
    )
    chef = ContextChef()
    chef.register_tools([same_text])
    chef.set_system_prompt("You are careful.")
    chef.set_history([user("Read them all.")])
    for turn in range(5):
        calls = chef.ingest(send(target, fake, compiled(chef, target).payload))
        chef.append(tool_results([chef.execute(c).result for c in calls]) if calls else user("ok"))
        if when == "every turn":
            chef.snapshot()
        elif when == "restored" and turn == 2:
            resumed = ContextChef()
            resumed.register_tools([same_text])
            resumed.restore(json.dumps(chef.snapshot()), allow_unsigned=True)
            chef = resumed
    compiled(chef, target)
    assert fake.violations == ()
    return chef.snapshot()


@pytest.mark.parametrize("target", TARGETS)
def test_a_repeated_long_text_is_referred_to_in_its_own_message(target: str) -> None:
    """Break-it round 31 (#8): which message an entry's text refers to did depend on when
    earlier snapshots were taken. Each entry now refers to the text's first place from
    its own compile's mark on: the same snapshot however often one was taken."""
    snaps = {when: _repeating(target, when) for when in ("every turn", "at the end", "restored")}
    assert snaps["every turn"] == snaps["at the end"] == snaps["restored"]
    refs = [r for lg in ledgers_of(snaps["at the end"]) for rs in lg["texts"] for r in rs]
    named = [r["message"] for r in refs]
    assert named == sorted(set(named)) and len(named) == 4  # each result's own message
