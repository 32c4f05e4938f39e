"""Every value a session store reads back, corrupted in turn (wrong type, wrong value), on
SQLite and Redis, with and without keys: each store call answers or raises a
`ContextChefError` (never a bare TypeError), a load names the session, where the value is
kept (column or hash field) and the value, and `delete` (the way out the message names)
removes the record."""

from __future__ import annotations

import contextlib
import re
import sqlite3
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextchef import (
    ContextChef,
    ContextChefError,
    RedisSessionStore,
    SessionStoreError,
    SessionSync,
    SnapshotKeys,
    SnapshotSignatureError,
    SQLiteSessionStore,
    user,
)
from contextchef.stores._store import verified

KEYS = SnapshotKeys({"k": b"k" * 32})
DEEP = "[" * 100_000 + "]" * 100_000

SV, ST = "version (column sessions.version) is", "turn count (column sessions.turns) is"
RV, RT = "version (hash field 'version') is", "turn count (hash field 'turns') is"
FROM_1, FROM_0 = "a whole number from 1 to 2**62 - 1", "a whole number from 0 to 2**62 - 1"

# (column or hash field, stored value, a text the load error must hold)
SQLITE_CASES: list[tuple[str, object, str]] = [
    ("sessions.expires_at", "tomorrow", "column sessions.expires_at) is 'tomorrow' (a str)"),
    ("sessions.expires_at", b"\x00", "column sessions.expires_at) is b'\\x00' (a bytes)"),
    ("sessions.expires_at", float("inf"), "column sessions.expires_at) is inf (a float)"),
    ("sessions.version", "abc", f"{SV} 'abc' (a str), not {FROM_1}"),
    ("sessions.version", "", f"{SV} '' (a str), not a whole number from 1"),
    ("sessions.version", 1.5, f"{SV} 1.5 (a float), not a whole number from 1"),
    ("sessions.version", -5, f"{SV} -5, outside its range ({FROM_1})"),
    ("sessions.version", 0, f"{SV} 0, outside its range ({FROM_1})"),
    ("sessions.version", b"\xff", f"{SV} b'\\xff' (a bytes), not a whole number from 1"),
    ("sessions.version", 2**62, f"{SV} 4611686018427387904, outside its range"),
    ("sessions.version", 2**63 - 1, f"{SV} 9223372036854775807, outside its range"),
    ("sessions.turns", "one", f"{ST} 'one' (a str), not {FROM_0}"),
    ("sessions.turns", 0.5, f"{ST} 0.5 (a float), not a whole number from 0"),
    ("sessions.turns", "²", f"{ST} '²' (a str), not a whole number from 0"),
    ("sessions.turns", -1, f"{ST} -1, outside its range ({FROM_0})"),
    ("sessions.base", 5, "snapshot (column sessions.base) is 5, not a JSON object"),
    ("sessions.base", 2.5, "snapshot (column sessions.base) is 2.5, not a JSON object"),
    ("sessions.base", b"\xff\xfe", "snapshot (column sessions.base) is not valid JSON"),
    ("sessions.base", "not json", "snapshot (column sessions.base) is not valid JSON"),
    ("sessions.base", "[1]", "snapshot (column sessions.base) is [1], not a JSON object"),
    ("sessions.base", DEEP, "snapshot (column sessions.base) is not valid JSON"),
    ("turns.delta", 7, "turn 1 (column turns.delta) is 7, not a JSON array"),
    ("turns.delta", b"\xff", "turn 1 (column turns.delta) is not valid JSON"),
    ("turns.delta", "nope", "turn 1 (column turns.delta) is not valid JSON"),
    ("turns.delta", "{}", "turn 1 (column turns.delta) is {}, not a JSON array"),
    ("turns.delta", '[["bogus"]]', "a stored turn does not apply"),
    ("turns.delta", "[5]", "a stored turn does not apply"),
    ("heads.head", 5, "head (column heads.head) is 5, not a signed head"),
    ("heads.head", b"\xff", "head (column heads.head) is not valid JSON"),
    ("heads.head", "nope", "head (column heads.head) is not valid JSON"),
    ("heads.head", "[]", "head (column heads.head) is [], not a signed head"),
    ("heads.head", "{}", "head (column heads.head) is {}, not a signed head"),
]

REDIS_CASES: list[tuple[str, object, str]] = [
    ("version", "abc", f"{RV} b'abc' (a bytes), not {FROM_1}"),
    ("version", "", f"{RV} b'' (a bytes), not a whole number from 1"),
    ("version", "1.5", f"{RV} b'1.5' (a bytes), not a whole number from 1"),
    ("version", "-5", f"{RV} -5, outside its range ({FROM_1})"),
    ("version", "0", f"{RV} 0, outside its range ({FROM_1})"),
    ("version", b"\xff", f"{RV} b'\\xff' (a bytes), not a whole number from 1"),
    ("version", "9" * 30, f"{RV} {'9' * 30}, outside its range"),
    ("version", None, "has no field 'version'"),
    ("turns", "one", f"{RT} b'one' (a bytes), not {FROM_0}"),
    ("turns", "0.5", f"{RT} b'0.5' (a bytes), not a whole number from 0"),
    ("turns", "-1", f"{RT} -1, outside its range ({FROM_0})"),
    ("base", b"\xff\xfe", "snapshot (hash field 'base') is not valid JSON"),
    ("base", "not json", "snapshot (hash field 'base') is not valid JSON"),
    ("base", "[1]", "snapshot (hash field 'base') is [1], not a JSON object"),
    ("base", DEEP, "snapshot (hash field 'base') is not valid JSON"),
    ("base", None, "has no field 'base'"),
    ("turn", b"\xff", "turn 1 (the turn list) is not valid JSON"),
    ("turn", "nope", "turn 1 (the turn list) is not valid JSON"),
    ("turn", "{}", "turn 1 (the turn list) is {}, not a JSON array"),
    ("turn", "[5]", "a stored turn does not apply"),
    ("head", b"\xff", "head (hash field 'head') is not valid JSON"),
    ("head", "nope", "head (hash field 'head') is not valid JSON"),
    ("head", "[]", "head (hash field 'head') is [], not a signed head"),
    ("head", "{}", "head (hash field 'head') is {}, not a signed head"),
    ("head", '{"v": 1}', "head (hash field 'head') is {'v': 1}, not a signed head"),
]


class Backend:
    """A store holding session 'A' (a base and one turn) and raw write access to its rows."""

    def __init__(self, kind: str, keyed: bool, tmp_path: Path, request: Any) -> None:
        self.kind = kind
        keys = KEYS if keyed else None
        if kind == "sqlite":
            self.path = tmp_path / "s.db"
            self.store: SQLiteSessionStore | RedisSessionStore = SQLiteSessionStore(
                self.path, keys=keys
            )
        else:
            url = request.getfixturevalue("redis_server_url")
            prefix = f"c:{zlib.crc32(request.node.name.encode())}:"
            self.store = RedisSessionStore(url, prefix=prefix, keys=keys)
            for sid in self.store.list_sessions():
                self.store.delete(sid)
        sync = SessionSync(self.store, "A")
        for text in ("one", "two"):
            sync.run_turn(ContextChef, lambda chef, t=text: chef.append(user(t)))
        loaded = self.store.load("A")
        assert loaded is not None and loaded.turns == 1

    def corrupt(self, where: str, value: object) -> None:
        if isinstance(self.store, RedisSessionStore):
            meta, log = self.store._keys("A")
            client = self.store.client
            if where == "turn":
                client.lset(log, 0, value)  # type: ignore[arg-type]
            elif value is None:
                client.hdel(meta, where)
            else:
                client.hset(meta, where, value)  # type: ignore[arg-type]
            return
        table, column = where.split(".")
        with sqlite3.connect(self.path) as db:
            db.execute(f"UPDATE {table} SET {column} = ? WHERE id = 'A'", (value,))

    def close(self) -> None:
        if isinstance(self.store, RedisSessionStore):
            self.store.client.close()
        else:
            self.store.close()


@pytest.fixture
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Backend]]:
    made: list[Backend] = []

    def make(kind: str, keyed: bool) -> Backend:
        made.append(Backend(kind, keyed, tmp_path, request))
        return made[-1]

    yield make
    for one in made:
        one.close()


def _cases() -> Iterator[Any]:
    for kind, cases in (("sqlite", SQLITE_CASES), ("redis", REDIS_CASES)):
        for keyed in (False, True):
            for where, value, text in cases:
                if "head" in where and not keyed:
                    continue  # a store without keys keeps no head (one refuses: no_keys)
                label = f"{kind}-{'keyed' if keyed else 'plain'}-{where}={value!r:.20}"
                yield pytest.param(kind, keyed, where, value, text, id=label)


def _answers_or_refuses(call: Callable[[], object]) -> None:
    with contextlib.suppress(ContextChefError):  # anything else fails the test
        call()


@pytest.mark.parametrize(("kind", "keyed", "where", "value", "text"), list(_cases()))
def test_a_corrupt_stored_value_is_a_store_error_naming_it(
    backend: Callable[..., Backend], kind: str, keyed: bool, where: str, value: object, text: str
) -> None:
    rows = backend(kind, keyed)
    rows.corrupt(where, value)
    with pytest.raises(ContextChefError) as info:
        rows.store.load("A")
    message = str(info.value)
    if keyed and isinstance(info.value, SnapshotSignatureError):
        # the signed head caught the edit before the value was read
        assert info.value.problem in ("mismatch", "malformed"), message
        if "not a signed head" in text:  # present but not a head: not reported as removed
            assert info.value.problem == "malformed" and text in message, message
    else:
        assert type(info.value) is SessionStoreError, message
        assert "session 'A'" in message and text in message, message
        assert info.value.session_id == "A"
    store = rows.store
    for call in (
        lambda: store.append("A", [], expected_version=2),
        lambda: store.snapshot("A", {"history": []}, expected_version=2),
        lambda: store.expire("A", 60),
        lambda: store.list_sessions(),
        lambda: SessionSync(store, "A").run_turn(ContextChef, lambda chef: None, attempts=1),
    ):
        _answers_or_refuses(call)
    if isinstance(store, SQLiteSessionStore):
        _answers_or_refuses(store.purge_expired)
    assert store.delete("A") is True  # the way out the message names
    assert store.load("A") is None
    SessionSync(store, "A").run_turn(ContextChef, lambda chef: chef.append(user("anew")))
    again = store.load("A")
    assert again is not None and again.version == 1


def test_the_corrupt_expiry_of_the_break_it_report(tmp_path: Path) -> None:
    """/tmp/breakit3 03: ``expires_at = 'tomorrow'`` was a bare TypeError from load and run_turn."""
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    SessionSync(store, "conv-1").run_turn(ContextChef, lambda chef: chef.append(user("hi")))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE sessions SET expires_at = 'tomorrow'")
    for call in (
        lambda: store.load("conv-1"),
        lambda: SessionSync(store, "conv-1").run_turn(ContextChef, lambda chef: None),
    ):
        with pytest.raises(SessionStoreError) as info:
            call()
        assert str(info.value).startswith(
            "session 'conv-1': the stored expiry (column sessions.expires_at) is 'tomorrow' "
            "(a str), not a Unix time in seconds"
        )
    assert store.list_sessions() == ["conv-1"]  # still there, for an operator to delete
    assert store.delete("conv-1") and store.list_sessions() == []


def test_a_stored_text_of_another_type_is_named() -> None:
    """SQLite turns a number written to a TEXT column into text, and Redis keeps bytes, so
    only another schema or client can hand a load a number where JSON text belongs."""
    for record, text in (
        ((5, [], None), "the stored snapshot (in its record) is 5 (a int), not JSON text"),
        (("{}", [b"[]", None], None), "turn 2 (in its record) is None (a NoneType)"),
    ):
        with pytest.raises(SessionStoreError) as info:
            verified(None, "A", 1, record)
        assert text in str(info.value)
    with pytest.raises(SessionStoreError, match=r"head \(in its record\) is 5 \(a int\)"):
        verified(KEYS, "A", 1, ("{}", [], 5))


def test_a_redis_key_that_is_not_utf8_is_named_by_list_sessions(
    backend: Callable[..., Backend],
) -> None:
    rows = backend("redis", False)
    store = rows.store
    assert isinstance(store, RedisSessionStore)
    bad = store.prefix.encode() + b"{\xff}:m"
    store.client.hset(bad, "version", 1)
    try:
        with pytest.raises(SessionStoreError, match="is not UTF-8 text"):
            store.list_sessions()
    finally:
        store.client.delete(bad)
    assert store.list_sessions() == ["A"]


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_removed_head_is_missing_and_one_that_is_no_head_is_malformed(
    backend: Callable[..., Backend], kind: str
) -> None:
    """Break-it round 16, finding B: a head set to ``{}`` or ``[]`` said it was removed."""
    rows = backend(kind, True)
    where = "heads.head" if kind == "sqlite" else "head"
    for value in ("{}", "[]", '"head"', "7"):
        rows.corrupt(where, value)
        for call in (
            lambda: rows.store.load("A"),
            lambda: rows.store.append("A", [], expected_version=2),
        ):
            with pytest.raises(SnapshotSignatureError) as info:
                call()
            assert info.value.problem == "malformed", str(info.value)
            assert "not a signed head" in str(info.value) and "removed" not in str(info.value)
    if isinstance(rows.store, RedisSessionStore):
        rows.corrupt("head", None)
    else:
        with sqlite3.connect(rows.path) as db:
            db.execute("DELETE FROM heads WHERE id = 'A'")
    with pytest.raises(SnapshotSignatureError) as info:
        rows.store.load("A")
    assert info.value.problem == "missing" and "it was removed" in str(info.value)


class _HostStore:
    """A store of the host's own (the docs say one works with SessionSync) that fails."""

    def __init__(self, loaded: object = None, error: Exception | None = None) -> None:
        self.loaded, self.error = loaded, error

    def load(self, session_id: str) -> object:
        if self.error is not None:
            raise self.error
        return self.loaded

    def snapshot(self, session_id: str, snapshot: object, *, expected_version: int) -> object:
        if self.error is not None:
            raise self.error
        return self.loaded

    def append(self, session_id: str, delta: object, *, expected_version: int) -> object:
        return self.snapshot(session_id, delta, expected_version=expected_version)


@pytest.mark.parametrize(
    ("store", "said"),
    [
        (
            _HostStore(error=ConnectionError("backend down")),
            "load raised ConnectionError: backend down",
        ),
        (_HostStore(loaded={"version": 1}), "load returned dict {'version': 1}; a SessionStore's"),
        (_HostStore(loaded="v1"), "load returned str 'v1'"),
    ],
)
def test_a_host_store_that_fails_is_a_store_error(store: _HostStore, said: str) -> None:
    # break-it 35 #2: a store of the host's own raising its driver's error, or loading
    # something other than a StoredSession, escaped run_turn (an AttributeError from inside)
    def turn(chef: ContextChef) -> None:
        chef.append(user("hi"))

    with pytest.raises(SessionStoreError) as caught:
        SessionSync(store, "s").run_turn(ContextChef, turn)  # type: ignore[arg-type]
    assert said in str(caught.value) and "session 's'" in str(caught.value)
    assert caught.value.session_id == "s"


@pytest.mark.parametrize(
    ("written", "said"),
    [(ConnectionError("gone"), "snapshot raised ConnectionError: gone"), (None, "returned None")],
)
def test_a_host_store_whose_write_fails_is_a_store_error(written: object, said: str) -> None:
    error = written if isinstance(written, Exception) else None
    store = _HostStore(error=None)
    sync = SessionSync(store, "s")  # type: ignore[arg-type]
    chef = ContextChef()
    assert sync.load_into(chef) is False  # nothing stored yet
    store.error, store.loaded = error, written
    chef.append(user("hi"))
    with pytest.raises(SessionStoreError, match=said):
        sync.save(chef)
    assert sync.version == 0  # nothing taken as written


def test_a_store_without_a_call_sync_makes_is_a_store_error_when_made() -> None:
    with pytest.raises(SessionStoreError, match="the store's load raised AttributeError"):
        SessionSync(object(), "s").load_into(ContextChef())  # type: ignore[arg-type]


def test_a_host_store_of_odd_parts_is_a_store_error_too() -> None:
    # break-it 36 #7, #10: a load of another session, or of an object without
    # StoredSession's fields, a keys property that raises, an exception without a text
    import types

    from contextchef import StoredSession

    record = StoredSession("other", 1, {"format": "x"}, 0, None, False, "L")
    duck = types.SimpleNamespace(session_id="s", version=1, snapshot={}, turns=0)

    class BadText(Exception):
        def __str__(self) -> str:
            raise ValueError("no text")

    class Vault(_HostStore):
        @property
        def keys(self) -> object:
            raise RuntimeError("vault unreachable")

    cases = [
        (_HostStore(loaded=record), "load returned StoredSession"),
        (_HostStore(loaded=duck), "load returned SimpleNamespace"),
        (_HostStore(error=BadText()), "load raised BadText: <a BadText that cannot be printed"),
    ]
    for store, said in cases:
        with pytest.raises(SessionStoreError, match=re.escape(said)):
            SessionSync(store, "s").load_into(ContextChef())  # type: ignore[arg-type]
    with pytest.raises(SessionStoreError, match="reading the store's keys raised RuntimeError"):
        SessionSync(Vault(), "s")  # type: ignore[arg-type]
