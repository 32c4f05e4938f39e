"""A session deleted or expired and written again under its id is another conversation:
a write based on the earlier one is refused even when the versions match (break-it round
16, finding A), on SQLite and a real Redis, signed and unsigned, by `append` and by
`snapshot`; and sessions stored before lineage tokens existed still load and are written.
"""

from __future__ import annotations

import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from contextchef import (
    ContextChef,
    RedisSessionStore,
    SessionStoreError,
    SessionSync,
    SnapshotKeys,
    SQLiteSessionStore,
    StaleSessionError,
    UsageError,
    user,
)
from contextchef.testing import FakeAnthropic, Ids, httpx_for, text

KEYS = SnapshotKeys({"k": b"k" * 32})
HX = httpx_for(anthropic)
LEGACY = Path(__file__).with_name("store_before_lineages.sql")
RECREATED = "deleted or expired and created again since this writer loaded it"

Store = SQLiteSessionStore | RedisSessionStore


def build() -> ContextChef:
    chef = ContextChef()
    chef.set_system_prompt("You are a careful engineering agent.")
    return chef


def say(tag: str) -> Callable[[ContextChef], None]:
    """A turn: the user says `tag`, Claude (a fake, through the SDK client) answers."""

    def turn(chef: ContextChef) -> None:
        chef.append(user(tag))
        fake = FakeAnthropic(ids=Ids(tag)).script(text(f"ok {tag}"))
        claude = anthropic.Anthropic(api_key="t", max_retries=0, http_client=fake.http_client(HX))
        request = chef.compile("anthropic", model="claude-opus-5-5")
        chef.ingest(claude.messages.create(**request.payload, extra_headers=request.headers))

    return turn


def said(store: Store, session_id: str = "conv") -> list[str]:
    stored = store.load(session_id)
    assert stored is not None
    return [m["parts"][0]["text"] for m in stored.snapshot["history"] if m["role"] == "user"]


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Stores:
    """Stores of one kind, and a way to make a session expire now."""

    def __init__(self, kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.kind, self.request, self.tmp_path = kind, request, tmp_path
        self.clock = Clock()
        self.made: list[Store] = []

    def make(self, keys: SnapshotKeys | None = None) -> Store:
        store: Store
        if self.kind == "sqlite":
            store = SQLiteSessionStore(self.tmp_path / "s.db", keys=keys, clock=self.clock)
        else:
            url = self.request.getfixturevalue("redis_server_url")
            prefix = f"lin:{zlib.crc32(self.request.node.name.encode())}:"
            store = RedisSessionStore(url, prefix=prefix, keys=keys)
        if not self.made:
            for sid in store.list_sessions():
                store.delete(sid)
        self.made.append(store)
        return store

    def expire_now(self, store: Store, session_id: str) -> None:
        if isinstance(store, SQLiteSessionStore):
            assert store.expire(session_id, 1.0)
            self.clock.now += 2.0
        else:
            assert store.expire(session_id, 0.001)
            deadline = time.monotonic() + 5
            while store.load(session_id) is not None:  # Redis forgets it within a moment
                assert time.monotonic() < deadline
                time.sleep(0.002)
        assert store.load(session_id) is None


@pytest.fixture(params=["sqlite", "redis"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    made = Stores(request.param, request, tmp_path)
    yield made
    for store in made.made:
        if isinstance(store, RedisSessionStore):
            store.client.close()
        else:
            store.close()


@pytest.mark.parametrize("checkpoint_every", [1, 32])  # the stale write: snapshot / append
@pytest.mark.parametrize("gone", ["delete", "expire"])
@pytest.mark.parametrize("keyed", [False, True])
def test_a_save_based_on_an_earlier_incarnation_is_refused(
    stores: Stores, keyed: bool, gone: str, checkpoint_every: int
) -> None:
    """The break-it reproducer: conversation A at version 2, a slow worker loads it, A goes
    away, conversation B reaches version 2 under the same id, the slow worker saves."""
    store = stores.make(KEYS if keyed else None)

    def sync() -> SessionSync:
        return SessionSync(store, "conv", checkpoint_every=checkpoint_every)

    for tag in ("a0", "a1"):
        sync().run_turn(build, say(tag))
    slow, chef = sync(), build()
    assert slow.load_into(chef) and slow.version == 2
    say("a2")(chef)
    if gone == "delete":
        assert store.delete("conv")
    else:
        stores.expire_now(store, "conv")
    for tag in ("b0", "b1"):
        sync().run_turn(build, say(tag))
    before = store.load("conv")
    assert before is not None and before.version == 2

    with pytest.raises(StaleSessionError) as info:
        slow.save(chef)
    err = info.value
    assert (err.session_id, err.expected, err.actual) == ("conv", 2, 2)
    assert RECREATED in str(err) and "Nothing was written" in str(err)
    after = store.load("conv")  # B is untouched, and still loads
    assert after is not None and (after.version, after.turns) == (before.version, before.turns)
    assert after.snapshot == before.snapshot and said(store) == ["b0", "b1"]

    # the slow worker's run_turn reloads and does its turn on B
    slow.run_turn(build, say("a2onB"))
    assert said(store) == ["b0", "b1", "a2onB"]
    assert SessionSync(store, "conv").load_into(build())


def test_the_store_checks_the_lineage_it_is_given(stores: Stores) -> None:
    """`append` and `snapshot` with ``lineage=``: the incarnation's token or a refusal."""
    store = stores.make()
    assert store.snapshot("s", {"a": [1]}, expected_version=0, lineage="first") == 1
    loaded = store.load("s")
    assert loaded is not None and loaded.lineage == "first"
    assert store.append("s", [["extend", ["a"], [2]]], expected_version=1, lineage="first") == 2
    for write in (
        lambda: store.append("s", [["extend", ["a"], [3]]], expected_version=2, lineage="x"),
        lambda: store.snapshot("s", {"a": []}, expected_version=2, lineage="x"),
        lambda: store.append("s", [], expected_version=2, lineage=""),
    ):
        with pytest.raises(StaleSessionError, match=RECREATED):
            write()
    loaded = store.load("s")
    assert loaded is not None and (loaded.version, loaded.snapshot) == (2, {"a": [1, 2]})
    assert store.snapshot("s", {"a": [0]}, expected_version=2, lineage="first") == 3
    assert store.append("s", [], expected_version=3) == 4  # no lineage: the version only
    # made again: a token of its own (random when none is given)
    assert store.delete("s")
    assert store.snapshot("s", {"a": []}, expected_version=0) == 1
    again = store.load("s")
    assert again is not None and again.lineage is not None
    assert len(again.lineage) == 32 and again.lineage != "first"
    with pytest.raises(StaleSessionError, match=RECREATED):
        store.append("s", [], expected_version=1, lineage="first")
    # a stale version is reported as such, before the lineage
    with pytest.raises(StaleSessionError, match="another writer was first"):
        store.append("s", [], expected_version=5, lineage="first")
    for bad, creating in (("", True), (5, True), ("x" * 129, False), ("tab\t", False)):
        with pytest.raises(UsageError, match="lineage must be None or"):
            if creating:
                store.snapshot("n", {}, expected_version=0, lineage=bad)  # type: ignore[arg-type]
            else:
                store.append("s", [], expected_version=1, lineage=bad)  # type: ignore[arg-type]
    assert store.load("n") is None


def test_sessions_stored_before_lineage_tokens_load_and_are_written(tmp_path: Path) -> None:
    """A database written by the code before tokens (tests/session/store_before_lineages.sql,
    from main at 48e23bc): both sessions load with the token ``""``, take turns (a delta
    and a checkpoint), and a write on one deleted and made again is still refused."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(LEGACY.read_text(encoding="utf-8"))
    db.close()
    for sid, keys in (("plain", None), ("signed", KEYS)):
        store = SQLiteSessionStore(path, keys=keys)  # adds the lineages table
        loaded = store.load(sid)
        assert loaded is not None and (loaded.version, loaded.turns, loaded.lineage) == (2, 1, "")
        assert said(store, sid) == ["old0", "old1"]
        SessionSync(store, sid).run_turn(build, say("new0"))  # a delta
        SessionSync(store, sid, checkpoint_every=1).run_turn(build, say("new1"))  # a snapshot
        assert said(store, sid) == ["old0", "old1", "new0", "new1"]
        slow, chef = SessionSync(store, sid), build()
        assert slow.load_into(chef) and slow.version == 4
        say("late")(chef)
        store.delete(sid)
        for tag in ("x0", "x1", "x2", "x3"):
            SessionSync(store, sid).run_turn(build, say(tag))
        with pytest.raises(StaleSessionError, match=RECREATED):
            slow.save(chef)
        assert said(store, sid) == ["x0", "x1", "x2", "x3"]
        store.close()


def test_redis_sessions_stored_before_lineage_tokens_load_and_are_written(
    redis_server_url: str,
) -> None:
    """A Redis hash without the ``lineage`` field (what the code before tokens wrote)."""
    for keys in (None, KEYS):
        store = RedisSessionStore(redis_server_url, prefix=f"lin-old-{keys is None}:", keys=keys)
        store.delete("old")
        for tag in ("old0", "old1"):
            SessionSync(store, "old").run_turn(build, say(tag))
        store.client.hdel(store._keys("old")[0], "lineage")
        loaded = store.load("old")
        assert loaded is not None and (loaded.version, loaded.lineage) == (2, "")
        SessionSync(store, "old").run_turn(build, say("new0"))
        SessionSync(store, "old", checkpoint_every=1).run_turn(build, say("new1"))
        slow, chef = SessionSync(store, "old"), build()
        assert slow.load_into(chef) and slow.version == 4
        say("late")(chef)
        store.delete("old")
        for tag in ("x0", "x1", "x2", "x3"):
            SessionSync(store, "old").run_turn(build, say(tag))
        with pytest.raises(StaleSessionError, match=RECREATED):
            slow.save(chef)
        assert said(store, "old") == ["x0", "x1", "x2", "x3"]
        store.delete("old")
        store.client.close()


class VersionOnly:
    """A store of another kind, written before tokens: its writes take no ``lineage=``."""

    def __init__(self, inner: SQLiteSessionStore) -> None:
        self.inner = inner

    def load(self, session_id: str) -> Any:
        return self.inner.load(session_id)

    def append(self, session_id: str, delta: Any, *, expected_version: int) -> int:
        return self.inner.append(session_id, delta, expected_version=expected_version)

    def snapshot(self, session_id: str, snapshot: Any, *, expected_version: int) -> int:
        return self.inner.snapshot(session_id, snapshot, expected_version=expected_version)


def test_session_sync_over_a_store_without_lineages_checks_versions(tmp_path: Path) -> None:
    store = VersionOnly(SQLiteSessionStore(tmp_path / "s.db"))
    for tag in ("a0", "a1", "a2"):
        SessionSync(store, "c", checkpoint_every=2).run_turn(build, say(tag))  # type: ignore[arg-type]
    assert said(store.inner, "c") == ["a0", "a1", "a2"]
    first, second = SessionSync(store, "c"), SessionSync(store, "c")  # type: ignore[arg-type]
    one, two = build(), build()
    first.load_into(one)
    second.load_into(two)
    say("one")(one)
    say("two")(two)
    first.save(one)
    with pytest.raises(StaleSessionError, match="another writer was first"):
        second.save(two)


def test_a_sync_that_created_the_session_keeps_its_lineage(stores: Stores) -> None:
    """Saves in a row without a reload: the token made at creation guards the next ones."""
    store = stores.make()
    mine, chef = SessionSync(store, "c"), build()
    say("a0")(chef)
    assert mine.save(chef) == 1
    say("a1")(chef)
    assert mine.save(chef) == 2
    store.delete("c")
    for tag in ("b0", "b1"):
        SessionSync(store, "c").run_turn(build, say(tag))
    say("a2")(chef)
    with pytest.raises(StaleSessionError, match=RECREATED):
        mine.save(chef)
    stored = store.load("c")
    assert stored is not None and said(store, "c") == ["b0", "b1"]
    assert [m["role"] for m in stored.snapshot["history"]] == ["user", "assistant"] * 2


@pytest.mark.parametrize("token", [b"\xff", "tab\there", "x" * 129])
def test_a_garbled_lineage_token_is_a_corrupt_record(
    token: Any, tmp_path: Path, redis_server_url: str
) -> None:
    """Not a token a store wrote: every save would be refused as a race and redone forever
    (break-it round 31), so the load says the record is corrupt instead."""
    path = tmp_path / "s.db"
    sqlite = SQLiteSessionStore(path)
    SessionSync(sqlite, "c").run_turn(build, say("t0"))
    with sqlite3.connect(path) as db:
        db.execute("update lineages set token = ?", (token,))
    db.close()
    redis = RedisSessionStore(redis_server_url, prefix="lin-bad:")
    redis.delete("c")
    SessionSync(redis, "c").run_turn(build, say("t0"))
    redis.client.hset(redis._keys("c")[0], "lineage", token)
    for store in (sqlite, redis):
        with pytest.raises(SessionStoreError, match=r"lineage token .* the record is corrupt"):
            store.load("c")
        with pytest.raises(SessionStoreError):
            SessionSync(store, "c").run_turn(build, say("t1"))
    redis.delete("c")
    redis.client.close()
    sqlite.close()
