"""A snapshot taken after a restore copies what the restore read (issue 27, item 1).

A worker that picks a conversation up from stored text and writes its whole snapshot back
each turn (`restore(text)`, a turn, `snapshot()`) used to walk every wire entry again to
write its stored form (long texts as references to the history) and hash every block
again. The restore now keeps, per ledger, the stored forms it decoded and the blocks it
checked (`history._wire_forms.seed_stored`, `history._blocks.seed_blocks`); a snapshot
copies an entry's stored form while the entry and the history messages it refers to are
unchanged, and walks only the rest. What must hold, on every target, through the official
SDK clients against the `contextchef.testing` fakes: the snapshot equals the one the
original session writes at the same point; editing a snapshot one was handed, or the dict
given to `restore`, changes no later snapshot; an edit of a message a stored entry refers
to writes that entry afresh, and the result restores to the same requests; and only the
entries and blocks that changed are walked and hashed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_ingest import send
from test_snapshot_once import compiled, conversation, ledgers_of, make

from contextchef import TARGETS, ContextChef, tool_results, user
from contextchef.history import _blocks, _wire_forms
from contextchef.testing import text, tool_calls


def _more(fake: Any) -> Any:
    """Three more model turns scripted: a tool call, two calls, a text."""
    return fake.script(
        tool_calls(("read_file", {"path": "d.py"}), reasoning="d"),
        tool_calls(("read_file", {"path": "e.py"}), ("read_file", {"path": "f.py"})),
        text("All done.", reasoning="end"),
    )


def _resumed(text: str) -> ContextChef:
    worker = make()
    worker.restore(text, allow_unsigned=True)
    return worker


def _turn(chef: ContextChef, target: str, fake: Any) -> None:
    calls = chef.ingest(send(target, fake, compiled(chef, target).payload))
    chef.append(tool_results([chef.execute(c).result for c in calls]) if calls else user("go on"))


@pytest.mark.parametrize("target", TARGETS)
def test_the_snapshot_after_a_restore_is_the_originals(target: str) -> None:
    chef, fake = conversation(target)
    compiled(chef, target)
    worker = _resumed(json.dumps(chef.snapshot()))
    assert worker.snapshot() == chef.snapshot()
    assert any(refs for lg in ledgers_of(worker.snapshot()) for refs in lg["texts"])  # referred
    for k in range(2):  # the same turns on both: the same snapshots, each restorable
        for session in (chef, worker):
            session.append(user(f"and then {k}"))
            compiled(session, target)
        snap = chef.snapshot()
        assert worker.snapshot() == snap
        assert _resumed(json.dumps(snap)).snapshot() == snap
    assert fake.violations == ()


@pytest.mark.parametrize("target", TARGETS)
def test_a_worker_writing_its_snapshot_each_turn(target: str) -> None:
    chef, fake = conversation(target)
    fake = _more(fake)
    for _ in range(3):  # restore the text, a turn, write the text back: as a worker does
        text = json.dumps(chef.snapshot())
        chef = _resumed(text)
        _turn(chef, target, fake)
        snap = chef.snapshot()
        again = _resumed(json.dumps(snap))
        assert again.snapshot() == snap
        assert compiled(again, target).payload == compiled(chef, target).payload
    assert fake.violations == ()


def _wire_of(snap: dict[str, Any]) -> list[Any]:
    return [(lg["wire"], lg["texts"]) for lg in ledgers_of(snap)]


@pytest.mark.parametrize("target", TARGETS)
def test_editing_a_snapshot_changes_no_later_one(target: str) -> None:
    chef, _ = conversation(target)
    compiled(chef, target)
    text = json.dumps(chef.snapshot())
    worker = _resumed(text)
    first = worker.snapshot()
    want = json.loads(json.dumps(first))
    for ledger in ledgers_of(first):  # a host editing what it was handed, in place
        for entry in ledger["wire"]:
            entry["edited"] = True
        for refs in ledger["texts"]:
            for ref in refs:
                ref["message"] = 0
    assert worker.snapshot() == want
    mine = json.loads(text)
    given = make()
    given.restore(mine, allow_unsigned=True)
    for ledger in ledgers_of(mine):  # the dict given to restore, edited after it
        for entry in ledger["wire"]:
            entry.clear()
        ledger["texts"] = [[] for _ in ledger["texts"]]
    assert given.snapshot() == want


@pytest.mark.parametrize("target", TARGETS)
def test_an_edited_message_writes_its_entries_afresh(target: str) -> None:
    chef, fake = conversation(target)
    compiled(chef, target)
    worker = _resumed(json.dumps(chef.snapshot()))
    worker.clear_tool_results(keep_recent=0)  # the texts the entries refer to are gone
    chef.clear_tool_results(keep_recent=0)
    snap = worker.snapshot()
    assert snap == chef.snapshot()
    again = _resumed(json.dumps(snap))
    assert compiled(again, target).payload == compiled(worker, target).payload
    assert fake.violations == ()


def _sent(chef: ContextChef) -> list[int]:
    """The identities of the wire entries each ledger holds."""
    return [id(e) for ledger in chef._state.ledgers.values() for e in ledger.wire]


@pytest.mark.parametrize("target", TARGETS)
def test_only_what_changed_is_walked_and_hashed(target: str, monkeypatch: Any) -> None:
    chef, fake = conversation(target)
    fake = _more(fake)
    compiled(chef, target)
    walked, hashed = [], []
    referred, digest = _wire_forms._referred, _blocks.block_digest
    monkeypatch.setattr(
        _wire_forms,
        "_referred",
        lambda v, p, t, r, s: walked.append(p) or referred(v, p, t, r, s),
    )
    monkeypatch.setattr(_blocks, "block_digest", lambda *a: hashed.append(1) or digest(*a))
    worker = _resumed(json.dumps(chef.snapshot()))
    before = _sent(worker)
    _turn(worker, target, fake)
    compiled(worker, target)
    walked.clear(), hashed.clear()
    snap = worker.snapshot()
    new = set(_sent(worker)) - set(before)  # sent since (an unanswered compile's tail again)
    assert 0 < len([p for p in walked if p == ()]) == len(new) < len(_sent(worker))
    assert len(hashed) <= 2 * len(snap["ledgers"])  # each ledger's last blocks
    assert _resumed(json.dumps(snap)).snapshot() == snap


@pytest.mark.parametrize("target", TARGETS)
def test_a_sync_save_after_an_edit_writes_the_entries_afresh(target: str, tmp_path: Any) -> None:
    """A save over the stored base takes its entries as stored only while what they refer
    to is unchanged (`_unreferred`): after `clear_tool_results` they hold their texts."""
    from contextchef.stores import SessionSync, SQLiteSessionStore

    chef, fake = conversation(target)
    compiled(chef, target)
    store = SQLiteSessionStore(tmp_path / "s.db")
    SessionSync(store, "c").save(chef)
    worker = make()
    sync = SessionSync(store, "c")
    sync.load_into(worker)
    worker.clear_tool_results(keep_recent=0)
    chef.clear_tool_results(keep_recent=0)
    sync.save(worker)
    again = make()
    SessionSync(store, "c").load_into(again)
    assert again.snapshot() == chef.snapshot() == worker.snapshot()
    assert compiled(again, target).payload == compiled(chef, target).payload
    assert fake.violations == ()
