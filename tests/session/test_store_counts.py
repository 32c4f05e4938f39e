"""A stored count out of its range is a store error naming it and the range (breakit24 p27).

A stored session's version is the writes so far, from 1 (`StoredSession.version`; 0 is
no session) to 2**62 - 1, and its turn count from 0. A hand-edited ``version`` of -5 or
2**62 was reported as "not a whole number", and one of 0 loaded, after which
`SessionSync.save` raised ``UsageError: a new session is written with snapshot()``. Now
every read of a count, by a load in Python or by a write script in Redis, refuses what is
out of range with a `SessionStoreError` naming the session, the column or field, the value
and the range, and the two readers agree on which values those are. Real SQLite files and
a real Redis server.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextchef import (
    ContextChef,
    RedisSessionStore,
    SessionStoreError,
    SessionSync,
    SnapshotKeys,
    SQLiteSessionStore,
    StaleSessionError,
    user,
)

KEYS = SnapshotKeys({"k": b"k" * 32})
RANGE_1 = "a whole number from 1 to 2**62 - 1"


class Rows:
    """Session 'c' written by two `SessionSync` turns (a base and one logged turn)."""

    def __init__(self, kind: str, keyed: bool, tmp_path: Path, request: Any) -> None:
        keys = KEYS if keyed else None
        if kind == "sqlite":
            self.path = tmp_path / "s.db"
            self.store: SQLiteSessionStore | RedisSessionStore = SQLiteSessionStore(
                self.path, keys=keys
            )
            self.where = "column sessions.version"
        else:
            url = request.getfixturevalue("redis_server_url")
            prefix = f"n:{zlib.crc32(request.node.name.encode())}:"
            self.store = RedisSessionStore(url, prefix=prefix, keys=keys)
            for sid in self.store.list_sessions():
                self.store.delete(sid)
            self.where = "hash field 'version'"
        sync = SessionSync(self.store, "c")
        for text in ("one", "two"):
            sync.run_turn(ContextChef, lambda chef, t=text: chef.append(user(t)))

    def set(self, field: str, value: object) -> None:
        if isinstance(self.store, RedisSessionStore):
            self.store.client.hset(self.store._keys("c")[0], field, value)  # type: ignore[arg-type]
            return
        with sqlite3.connect(self.path) as db:
            db.execute(f"UPDATE sessions SET {field} = ? WHERE id = 'c'", (value,))

    def close(self) -> None:
        if isinstance(self.store, RedisSessionStore):
            self.store.client.close()
        else:
            self.store.close()


@pytest.fixture
def rows(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rows]:
    kind, keyed = request.param
    made = Rows(kind, keyed, tmp_path, request)
    yield made
    made.close()


KINDS = [("sqlite", False), ("sqlite", True), ("redis", False), ("redis", True)]
IDS = ["sqlite", "sqlite-keyed", "redis", "redis-keyed"]


@pytest.mark.parametrize("rows", KINDS, ids=IDS, indirect=True)
def test_a_stored_version_of_zero_is_a_store_error_for_every_reader(rows: Rows) -> None:
    """The probe: version 0 loaded, and the next save said to use snapshot()."""
    rows.set("version", 0)
    said = f"session 'c': the stored version ({rows.where}) is 0, outside its range ({RANGE_1})"
    sync, chef = SessionSync(rows.store, "c"), ContextChef()
    with pytest.raises(SessionStoreError) as caught:
        sync.load_into(chef)
    assert str(caught.value).startswith(said) and "the record is corrupt" in str(caught.value)
    assert chef.history == ()  # nothing restored
    chef.append(user("more"))
    for write in (
        lambda: sync.save(chef),
        lambda: rows.store.append("c", [], expected_version=1),
        lambda: rows.store.snapshot("c", chef.snapshot(), expected_version=0),
    ):
        with pytest.raises(SessionStoreError) as caught:
            write()
        assert type(caught.value) is SessionStoreError  # not stale, not a UsageError
        assert f"({rows.where}) is 0, outside its range" in str(caught.value)
    assert rows.store.delete("c")  # the way out the message names
    assert SessionSync(rows.store, "c").save(chef) == 1


@pytest.mark.parametrize("rows", KINDS[:1] + KINDS[2:3], ids=["sqlite", "redis"], indirect=True)
@pytest.mark.parametrize(
    ("value", "said"),
    [
        (-5, "is -5, outside its range"),
        (2**62, "is 4611686018427387904, outside its range"),
        (2**63 - 1, "is 9223372036854775807, outside its range"),
        ("x7", "x7' (a "),
    ],
)
def test_a_whole_number_out_of_range_is_said_to_be_out_of_range(
    rows: Rows, value: object, said: str
) -> None:
    """The probe: -5 and 2**62 were "not a whole number (... 4611686018427387904, a int)"."""
    rows.set("version", value)
    with pytest.raises(SessionStoreError) as caught:
        rows.store.load("c")
    assert said in str(caught.value) and RANGE_1 in str(caught.value)
    assert "not a whole number (" not in str(caught.value)


@pytest.mark.parametrize("rows", KINDS[:1] + KINDS[2:3], ids=["sqlite", "redis"], indirect=True)
def test_the_largest_version_loads(rows: Rows) -> None:
    rows.set("version", 2**62 - 1)
    loaded = rows.store.load("c")
    assert loaded is not None and loaded.version == 2**62 - 1 and loaded.turns == 1


@pytest.mark.parametrize("rows", KINDS[:1] + KINDS[2:3], ids=["sqlite", "redis"], indirect=True)
def test_a_negative_turn_count_is_named_with_its_range(rows: Rows) -> None:
    rows.set("turns", -1)
    with pytest.raises(SessionStoreError, match=r"turn count \(.*\) is -1, outside its range"):
        rows.store.load("c")
    with pytest.raises(SessionStoreError, match=r"a whole number from 0 to 2\*\*62 - 1"):
        rows.store.append("c", [], expected_version=2)


RAW = [
    "0",
    "00",
    " 7 ",
    "007",
    "4611686018427387903",
    "0004611686018427387903",
    "4611686018427387904",
    "9999999999999999999",
    "-1",
    "x7",
    "",
    "\x1c5",
]


@pytest.mark.parametrize("rows", [("redis", False)], ids=["redis"], indirect=True)
@pytest.mark.parametrize("raw", RAW)
def test_the_write_scripts_and_the_load_agree_on_a_stored_version(rows: Rows, raw: str) -> None:
    """Redis reads a count twice: in Python at load, in Lua in the write scripts."""
    rows.set("version", raw)
    try:
        rows.store.load("c")
        loaded = True
    except SessionStoreError:
        loaded = False
    for write in (
        lambda: rows.store.append("c", [], expected_version=1),
        lambda: rows.store.snapshot("c", {"history": []}, expected_version=1),
    ):
        with pytest.raises((SessionStoreError, StaleSessionError)) as caught:
            write()
        assert (type(caught.value) is StaleSessionError) == loaded, (raw, str(caught.value))
        if not loaded:
            assert "hash field 'version'" in str(caught.value)
            assert f"{RANGE_1}" in str(caught.value) or "outside its range" in str(caught.value)
