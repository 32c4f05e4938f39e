"""Snapshots whose JSON object keys a store gave back in another order (issue: break-it 24).

PostgreSQL ``jsonb`` (shorter keys first, then bytewise), Firestore and DynamoDB maps,
``json.dumps(sort_keys=True)`` and orjson's ``OPT_SORT_KEYS`` return a snapshot equal as
JSON data, its keys in another order. What must hold, on every target:

* signed (the HMAC is over the sorted canonical form, so the values are the signer's): it
  restores, through ``restore(dict)`` and ``restore(text)``; the session goes on turn
  after turn through the SDK clients against the fakes, which compare earlier entries by
  value (research note R8) with no violation; a later unsigned snapshot of it, as written
  or reordered, restores (the latter signed); a value edited in it is refused by the
  signature;
* unsigned (its digests are over the keys in the order written): refused with an error
  that says the keys were reordered and what to do, never that the snapshot was changed;
  a real edit still gets "changed after it was taken";
* a `SessionSync` over a SQLite store whose rows were rewritten with sorted keys: the
  same refusal (unsigned); a keyed store's head, over the texts as stored, names the
  reordering too.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send
from test_snapshot_once import compiled, make

from contextchef import (
    TARGETS,
    ContextChef,
    SessionStoreError,
    SnapshotKeys,
    SnapshotSignatureError,
    UsageError,
    tool_results,
    user,
)
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import fake_for, text, tool_calls

KEYS = SnapshotKeys({"k": b"k" * 32})


def sort_keys(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True))


def jsonb(value: Any) -> Any:
    """PostgreSQL jsonb's key order: shorter keys first, then bytewise."""
    if isinstance(value, dict):
        order = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return {k: jsonb(value[k]) for k in order}
    if isinstance(value, list):
        return [jsonb(v) for v in value]
    return value


ORDERS = {"sorted": sort_keys, "jsonb": jsonb}


def turn(chef: ContextChef, target: str, fake: Any, n: int) -> None:
    """One answered model turn (a tool call every other turn), then the next message."""
    calls = chef.ingest(send(target, fake, compiled(chef, target).payload))
    if calls:
        chef.append(tool_results([chef.execute(call).result for call in calls]))
    else:
        chef.append(user(f"go on after {n}"))


def script(fake: Any, turns: int, tag: str) -> Any:
    return fake.script(
        *[
            tool_calls(("read_file", {"path": f"{tag}{r}.py"}), reasoning=f"plan {tag}{r}")
            if r % 2 == 0
            else text(f"Done {tag}{r}.", reasoning=f"ok {tag}{r}")
            for r in range(turns)
        ]
    )


def conversation(target: str, turns: int = 6) -> tuple[ContextChef, Any]:
    fake = script(fake_for(target), turns, "a")
    chef = make()
    chef.set_history([user("Fix every file, one by one.")])
    for n in range(turns):
        turn(chef, target, fake, n)
    assert fake.violations == ()
    return chef, fake


@pytest.fixture(scope="module")
def sessions() -> dict[str, tuple[ContextChef, Any]]:
    return {target: conversation(target) for target in TARGETS}


def _same_values(snapshot: dict[str, Any], order: str) -> dict[str, Any]:
    moved = ORDERS[order](snapshot)
    assert moved == snapshot and json.dumps(moved) != json.dumps(snapshot)
    return moved  # type: ignore[no-any-return]


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("target", TARGETS)
def test_an_unsigned_reordered_snapshot_is_refused_naming_the_reordering(
    target: str, order: str, sessions: dict[str, tuple[ContextChef, Any]]
) -> None:
    chef, _ = sessions[target]
    moved = _same_values(json.loads(json.dumps(chef.snapshot())), order)
    for given in (copy.deepcopy(moved), json.dumps(moved)):
        fresh = make()
        with pytest.raises(UsageError) as info:
            fresh.restore(given, allow_unsigned=True)
        said = str(info.value)
        assert "keys were reordered" in said and "changed after" not in said, said
        assert "restore(text)" in said and "SnapshotKeys" in said
        assert ("sorted" if order == "sorted" else "jsonb") in said
        assert fresh.history == ()


@pytest.mark.parametrize("target", ["anthropic", "responses"])
def test_a_real_edit_is_still_a_change_after_the_snapshot(
    target: str, sessions: dict[str, tuple[ContextChef, Any]]
) -> None:
    chef, _ = sessions[target]
    snap = json.loads(json.dumps(chef.snapshot()))
    entry = snap["ledgers"][target]["wire"][0]
    stored = json.dumps(entry)
    snap["ledgers"][target]["wire"][0] = json.loads(stored.replace("Fix every", "Fix all"))
    with pytest.raises(UsageError, match="changed after it was taken"):
        make().restore(snap, allow_unsigned=True)


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("target", TARGETS)
def test_a_signed_reordered_snapshot_restores_and_goes_on(target: str, order: str) -> None:
    chef, fake = conversation(target)
    signed = chef.snapshot(keys=KEYS, session_id="c1")
    moved = _same_values(json.loads(json.dumps(signed)), order)
    by_dict, by_text = make(), make()
    by_dict.restore(copy.deepcopy(moved), keys=KEYS, session_id="c1")
    by_text.restore(json.dumps(moved), keys=KEYS, session_id="c1")
    assert by_dict.history == by_text.history == chef.history
    # the same values as the writer's next request: the fake (by value, R8) takes it
    first = compiled(by_dict, target)
    assert json.loads(first.to_json()) == json.loads(compiled(chef, target).to_json())
    assert compiled(by_text, target).to_json() == first.to_json()
    script(fake, 12, "b")
    for n in range(12):
        turn(by_dict, target, fake, n)
    assert fake.violations == ()
    # a later snapshot of the session restores: unsigned as written, signed reordered
    later = by_dict.snapshot()
    again = make()
    again.restore(json.dumps(later), allow_unsigned=True)
    assert again.history == by_dict.history
    again.restore(
        ORDERS[order](by_dict.snapshot(keys=KEYS, session_id="c1")), keys=KEYS, session_id="c1"
    )
    script(fake, 2, "c")
    for n in range(2):
        turn(again, target, fake, n)
    assert fake.violations == ()
    # the snapshot the restore's state gives at once restores unsigned too
    fresh = make()
    fresh.restore(ORDERS[order](json.loads(json.dumps(signed))), keys=KEYS, session_id="c1")
    make().restore(json.dumps(fresh.snapshot()), allow_unsigned=True)


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_an_edit_in_a_signed_reordered_snapshot_is_refused_by_the_signature(order: str) -> None:
    chef, _ = conversation("anthropic")
    moved = ORDERS[order](chef.snapshot(keys=KEYS, session_id="c1"))
    said = json.dumps(moved).replace("Fix every file", "Fix no file")
    with pytest.raises(SnapshotSignatureError):
        make().restore(said, keys=KEYS, session_id="c1")


def _rewrite_rows(path: Path, rows: str) -> None:
    db = sqlite3.connect(path)
    with db:
        for (base,) in db.execute("select base from sessions").fetchall() if rows == "all" else ():
            db.execute("update sessions set base = ?", (json.dumps(sort_keys(json.loads(base))),))
        for version, delta in db.execute("select version, delta from turns").fetchall():
            new = json.dumps(sort_keys(json.loads(delta)))
            db.execute("update turns set delta = ? where version = ?", (new, version))
    db.close()


@pytest.mark.parametrize("rows", ["all", "turns"])
@pytest.mark.parametrize("keyed", [False, True])
def test_a_session_sync_over_rows_rewritten_with_sorted_keys(
    tmp_path: Path, keyed: bool, rows: str
) -> None:
    path = tmp_path / "s.db"
    keys = KEYS if keyed else None
    chef, fake = conversation("anthropic", turns=2)
    sync = SessionSync(SQLiteSessionStore(path, keys=keys), "c1")
    sync.save(chef)
    for n in range(3):  # turns logged after the base
        script(fake, 1, f"s{n}")
        turn(chef, "anthropic", fake, n)
        sync.save(chef)
    _rewrite_rows(path, rows)
    worker = make()
    kind = SnapshotSignatureError if keyed else SessionStoreError  # the record does not restore
    with pytest.raises(kind) as info:
        SessionSync(SQLiteSessionStore(path, keys=keys), "c1").load_into(worker)
    said = str(info.value)
    assert keyed or isinstance(info.value.__cause__, UsageError)
    assert "keys were reordered" in said and "edited" not in said, said
    assert worker.history == ()


def test_a_keyed_store_still_names_an_edit_of_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    chef, fake = conversation("anthropic", turns=2)
    sync = SessionSync(SQLiteSessionStore(path, keys=KEYS), "c1")
    sync.save(chef)
    script(fake, 1, "e")
    turn(chef, "anthropic", fake, 0)
    sync.save(chef)
    db = sqlite3.connect(path)
    with db:
        (delta,) = db.execute("select delta from turns").fetchone()
        db.execute("update turns set delta = ?", (delta.replace("go on", "go off", 1),))
    db.close()
    with pytest.raises(SnapshotSignatureError, match="edited, replaced or reordered"):
        SessionSync(SQLiteSessionStore(path, keys=KEYS), "c1").load_into(make())


@pytest.mark.parametrize("target", TARGETS)
def test_a_signed_jsonb_chat_of_texts_only_goes_on_and_saves_consistently(target: str) -> None:
    """No tool call or reasoning to show the order: the parts' provider data show it."""
    fake = fake_for(target).script(*[text(f"Answer {r}.") for r in range(14)])
    chef = make()
    chef.set_history([user("Hello.")])
    for n in range(3):
        turn(chef, target, fake, n)
    moved = jsonb(chef.snapshot(keys=KEYS, session_id="c1"))
    worker = make()
    worker.restore(json.dumps(moved), keys=KEYS, session_id="c1")
    for n in range(10):
        turn(worker, target, fake, n)
    assert fake.violations == ()
    again = make()
    again.restore(json.dumps(worker.snapshot()), allow_unsigned=True)
    assert again.history == worker.history
