"""A refused unsigned snapshot names the cause the stored value shows (break-it round 25).

Its digests are over the writer's bytes. A failing digest is explained by a store's
reordering of JSON object keys when some order of the stored value's keys gives it back;
the restore says the keys were reordered only when that explains every failing digest
it can decide, and otherwise names the first value that no order explains (adding that
the keys were reordered too when it saw that). What must hold, for ``restore(dict)``,
``restore(text)`` and `SessionSync.load_into`, in ``sort_keys`` and jsonb order:

* only one ledger's ``wire`` re-serialized (the history and the other ledgers as
  written): the reordering, never "changed after it was taken";
* only the history (the ledgers' ``consumed`` digests), or only a ledger's ``tools``
  (its record digest): the reordering;
* the whole snapshot reordered and one history message's text, or one wire entry's
  value, edited: that message or entry named as changed, and the reordering said too;
* two ledgers: one reordered, the other edited in place: the edit named;
* the error is a plain `UsageError`, and nothing is restored.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_restore_reordered import ORDERS, compiled, conversation, make, script, sort_keys, turn

from contextchef import (
    TARGETS,
    ContextChef,
    SessionStoreError,
    SnapshotKeys,
    SnapshotSignatureError,
    UsageError,
)
from contextchef.stores import SessionSync, SQLiteSessionStore

KEYS = SnapshotKeys({"k": b"k" * 32})


@pytest.fixture(scope="module")
def snapshots() -> dict[str, dict[str, Any]]:
    return {t: json.loads(json.dumps(conversation(t)[0].snapshot())) for t in TARGETS}


def refused(snap: dict[str, Any]) -> list[str]:
    """What restoring `snap` unsigned says, as a dict and as text (each refused)."""
    said = []
    for given in (copy.deepcopy(snap), json.dumps(snap)):
        fresh = make()
        with pytest.raises(UsageError) as info:
            fresh.restore(given, allow_unsigned=True)
        assert type(info.value) is UsageError and fresh.history == ()
        said.append(str(info.value))
    return said


def moved(value: Any, order: str) -> Any:
    out = ORDERS[order](value)
    assert out == value and json.dumps(out) != json.dumps(value)
    return out


def says_reordered(said: str, order: str) -> None:
    assert "keys were reordered" in said and "changed after" not in said, said
    assert ("sorted" if order == "sorted" else "jsonb") in said, said


def edit_text(value: Any, old: str, new: str) -> bool:
    """Replace `old` by `new` in the first string holding it; whether one did."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        if isinstance(item, str) and old in item:
            value[key] = item.replace(old, new)
            return True
        if isinstance(item, dict | list) and edit_text(item, old, new):
            return True
    return False


Part = Callable[[dict[str, Any], str], None]


def _wire(snap: dict[str, Any], order: str) -> None:
    ledger = next(iter(snap["ledgers"].values()))
    ledger["wire"] = moved(ledger["wire"], order)


def _history(snap: dict[str, Any], order: str) -> None:
    snap["history"] = moved(snap["history"], order)


def _tools(snap: dict[str, Any], order: str) -> None:
    ledger = next(iter(snap["ledgers"].values()))
    ledger["tools"] = ORDERS[order](ledger["tools"])


PARTS: dict[str, Part] = {"wire": _wire, "history": _history, "tools": _tools}


@pytest.mark.parametrize("part", sorted(PARTS))
@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("target", TARGETS)
def test_one_part_reordered_is_named_reordered(
    target: str, order: str, part: str, snapshots: dict[str, dict[str, Any]]
) -> None:
    snap = copy.deepcopy(snapshots[target])
    PARTS[part](snap, order)
    if json.dumps(snap) == json.dumps(snapshots[target]):
        pytest.skip(f"{order} order leaves this target's {part} as written")
    for said in refused(snap):
        says_reordered(said, order)


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("target", TARGETS)
def test_a_history_edit_in_a_reordered_snapshot_is_named(
    target: str, order: str, snapshots: dict[str, dict[str, Any]]
) -> None:
    snap = moved(snapshots[target], order)
    assert edit_text(snap["history"][0], "Fix every file", "Fix no file")
    for said in refused(snap):
        assert "history message 0 differs" in said and "changed after" in said
        assert "keys were reordered" in said, said


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("target", TARGETS)
def test_a_wire_edit_in_a_reordered_snapshot_is_named(
    target: str, order: str, snapshots: dict[str, dict[str, Any]]
) -> None:
    snap = moved(snapshots[target], order)
    ledger = snap["ledgers"][target]
    entry = next(i for i, e in enumerate(ledger["wire"]) if "Done a1." in json.dumps(e))
    assert edit_text(ledger["wire"][entry], "Done a1.", "Done b1.")
    for said in refused(snap):
        assert f"'wire' entry {entry} differs from what was sent" in said, said
        assert "changed after" in said and "keys were reordered" in said


def two_ledgers() -> dict[str, Any]:
    chef, _ = conversation("anthropic", turns=4)
    compiled(chef, "openai")
    snap = json.loads(json.dumps(chef.snapshot()))
    assert sorted(snap["ledgers"]) == ["anthropic", "openai"]
    return snap  # type: ignore[no-any-return]


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_of_two_ledgers_one_reordered_and_one_edited_the_edit_is_named(order: str) -> None:
    snap = two_ledgers()
    snap["ledgers"]["openai"]["wire"] = moved(snap["ledgers"]["openai"]["wire"], order)
    for said in refused(copy.deepcopy(snap)):  # one ledger reordered only
        says_reordered(said, order)
    wire = snap["ledgers"]["anthropic"]["wire"]
    entry = next(i for i, e in enumerate(wire) if "Done a1." in json.dumps(e))
    assert edit_text(wire[entry], "Done a1.", "Done b1.")
    for said in refused(snap):
        assert f"ledger 'anthropic' 'wire' entry {entry} differs" in said, said
        assert "changed after" in said and "keys were reordered" in said


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_both_ledgers_reordered_is_named_reordered(order: str) -> None:
    snap = two_ledgers()
    for ledger in snap["ledgers"].values():
        ledger["wire"] = moved(ledger["wire"], order)
    for said in refused(snap):
        says_reordered(said, order)


def test_an_edit_in_place_is_still_a_change_and_not_a_reordering(
    snapshots: dict[str, dict[str, Any]],
) -> None:
    snap = copy.deepcopy(snapshots["anthropic"])
    assert edit_text(snap["history"][0], "Fix every file", "Fix no file")
    for said in refused(snap):
        assert "history message 0 differs" in said and "reordered" not in said, said


def test_a_session_sync_over_reordered_rows_with_one_edit_names_the_edit(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    chef, fake = conversation("anthropic", turns=2)
    sync = SessionSync(SQLiteSessionStore(path), "c1")
    sync.save(chef)
    for n in range(3):
        script(fake, 1, f"s{n}")
        turn(chef, "anthropic", fake, n)
        sync.save(chef)
    db = sqlite3.connect(path)
    with db:
        (base,) = db.execute("select base from sessions").fetchone()
        edited = base.replace("Fix every file", "Fix no file", 1)
        assert edited != base
        db.execute("update sessions set base = ?", (json.dumps(sort_keys(json.loads(edited))),))
        for version, delta in db.execute("select version, delta from turns").fetchall():
            new = json.dumps(sort_keys(json.loads(delta)))
            db.execute("update turns set delta = ? where version = ?", (new, version))
    db.close()
    worker: ContextChef = make()
    with pytest.raises(SessionStoreError) as info:  # the record does not restore
        SessionSync(SQLiteSessionStore(path), "c1").load_into(worker)
    said = str(info.value)
    assert isinstance(info.value.__cause__, UsageError) and "does not restore" in said
    assert "history message 0 differs" in said and "changed after" in said, said
    assert "keys were reordered" in said and worker.history == ()


def _rows_sorted_and_edited(path: Path, edit: bool) -> None:
    db = sqlite3.connect(path)
    with db:
        (base,) = db.execute("select base from sessions").fetchone()
        db.execute("update sessions set base = ?", (json.dumps(sort_keys(json.loads(base))),))
        for n, (version, delta) in enumerate(db.execute("select version, delta from turns")):
            new = json.dumps(sort_keys(json.loads(delta)))
            if edit and n == 0:
                assert "go on after" in new
                new = new.replace("go on after", "go off after", 1)
            db.execute("update turns set delta = ? where version = ?", (new, version))
    db.close()


@pytest.mark.parametrize("edit", [False, True])
def test_a_keyed_store_over_reordered_rows_tells_an_edit_by_the_signature(
    tmp_path: Path, edit: bool
) -> None:
    """The head is over the texts as stored; the snapshot's signature is over its values."""
    path = tmp_path / "s.db"
    chef, fake = conversation("anthropic", turns=2)
    sync = SessionSync(SQLiteSessionStore(path, keys=KEYS), "c1")
    sync.save(chef)
    for n in range(2):
        script(fake, 1, f"k{n}")
        turn(chef, "anthropic", fake, n)
        sync.save(chef)
    _rows_sorted_and_edited(path, edit)
    with pytest.raises(SnapshotSignatureError) as info:
        SessionSync(SQLiteSessionStore(path, keys=KEYS), "c1").load_into(make())
    said = str(info.value)
    assert "keys were reordered" in said, said
    assert ("edited" in said) == edit, said
