"""Session stores: SQLite (stdlib) and Redis (a real redis-server), one behaviour."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from conftest import examples
from contextchef import (
    ContextChef,
    RedisSessionStore,
    SessionStore,
    SessionStoreError,
    SessionSync,
    SQLiteSessionStore,
    StaleSessionError,
    ToolCall,
    UsageError,
    assistant,
    tool_results,
    user,
)
from contextchef.stores._store import apply_delta, snapshot_delta

TARGETS = ("anthropic", "openai", "responses", "gemini")


class Workspace(BaseModel):
    turn: int
    files: list[str]


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: File to read.
    """
    return f"contents of {path}"


def write_file(path: str, text: str) -> str:
    """Write a file.

    Args:
        path: File to write.
        text: New content.
    """
    return f"wrote {len(text)} chars to {path}"


KIT = {
    "name": "weather",
    "description": "Weather APIs",
    "tools": [
        {"name": "forecast", "description": "Forecast", "parameters": {"city": {"type": "string"}}}
    ],
}


def build() -> ContextChef:
    chef = ContextChef(default_defer=True, pin=["^read_file$"])
    chef.register_tools([read_file, write_file])
    chef.register_toolkits([KIT])
    chef.set_system_prompt("You are a careful engineering agent.")
    return chef


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    if request.param == "sqlite":
        sqlite_store = SQLiteSessionStore(tmp_path / "sessions.db")
        yield sqlite_store
        sqlite_store.close()
        return
    url = request.getfixturevalue("redis_server_url")
    redis_store = RedisSessionStore(url, prefix=f"t:{request.node.name}:")
    for sid in redis_store.list_sessions():
        redis_store.delete(sid)
    yield redis_store
    redis_store.client.close()


# -- stored sessions compile byte-identical requests --------------------------------------


def host_turn(chef: ContextChef, turn: int) -> None:
    """What the host changes before turn `turn` (state, announcements, a toolkit)."""
    chef.set_dynamic_state(Workspace(turn=turn, files=[f"f{turn}.py"]))
    if turn == 1:
        chef.announce("tools:added", "Weather tools can be loaded.")
    if turn == 3:
        chef.load_toolkit("weather")
    if turn == 5:
        chef.retract_announcement("tools:added")
    chef.append(user(f"Task {turn}: go on, 任务 {turn}."))


def model_turn(chef: ContextChef, turn: int) -> None:
    """The model's reply (tool calls on most turns) and the tools' results."""
    calls = {
        0: [ToolCall(id="c0", name="read_file", arguments={"path": "a.py"})],
        1: [ToolCall(id="c1", name="tool_search", arguments={"queries": ["write a file"]})],
        2: [
            ToolCall(
                id="c2",
                name="defer_execute",
                arguments={"tool_name": "write_file", "params": {"path": "b", "text": "x"}},
            ),
            ToolCall(id="c3", name="read_file", arguments={"path": "b"}),
        ],
        4: [ToolCall(id="c4", name="no_such_tool", arguments={})],
    }.get(turn % 6, [])
    chef.append(assistant(f"Working on turn {turn}.", calls))
    if calls:
        chef.append(tool_results([chef.execute(call).result for call in calls]))


def test_a_session_continued_through_the_store_sends_the_same_bytes(store: SessionStore) -> None:
    """Each turn runs on a fresh chef restored from the store, next to one kept in memory."""
    reference = build()
    sync = SessionSync(store, "conv-1", checkpoint_every=4)  # deltas and checkpoints
    for turn in range(10):
        worker = build()
        assert sync.load_into(worker) == (turn > 0)
        assert sync.version == turn
        for chef in (reference, worker):
            host_turn(chef, turn)
        for target in TARGETS:
            sent, again = reference.compile(target), worker.compile(target)
            assert again.to_json() == sent.to_json(), (turn, target)
            assert again.segments == sent.segments and again.headers == sent.headers
            assert again.edits == sent.edits == ()
        for chef in (reference, worker):
            model_turn(chef, turn)
        assert sync.save(worker) == turn + 1
    stored = store.load("conv-1")
    assert stored is not None and stored.version == 10
    assert json.dumps(stored.snapshot) == json.dumps(reference.snapshot())  # key order too


def test_the_turn_log_holds_deltas_not_the_whole_conversation(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    chef, sync = build(), SessionSync(store, "c", checkpoint_every=100)
    for turn in range(8):
        host_turn(chef, turn)
        chef.compile("anthropic")
        model_turn(chef, turn)
        sync.save(chef)
    db = sqlite3.connect(tmp_path / "s.db")
    base = db.execute("SELECT length(base) FROM sessions").fetchone()[0]
    deltas = [n for (n,) in db.execute("SELECT length(delta) FROM turns ORDER BY version")]
    db.close()
    assert len(deltas) == 7  # the first write is the base snapshot
    whole = len(json.dumps(chef.snapshot(), ensure_ascii=False, separators=(",", ":")))
    assert max(deltas) < whole / 3 and sum(deltas) + base > whole  # each turn: its own part


# -- compare-and-set ------------------------------------------------------------------------


def test_two_writers_racing_lose_no_turn_and_the_stale_one_can_retry(store: SessionStore) -> None:
    first, second = SessionSync(store, "race"), SessionSync(store, "race")
    chef = build()
    chef.append(user("start"))
    first.save(chef)
    a, b = build(), build()
    first.load_into(a)
    second.load_into(b)
    a.append(assistant("reply from worker A"))
    b.append(assistant("reply from worker B"))
    assert first.save(a) == 2
    with pytest.raises(StaleSessionError) as caught:
        second.save(b)
    err = caught.value
    assert (err.session_id, err.expected, err.actual) == ("race", 1, 2)
    assert "load the session again" in str(err)
    # the stale writer reloads, redoes its turn on the winner's state, and wins
    b = build()
    second.load_into(b)
    b.append(user("and from B"))
    assert second.save(b) == 3
    stored = store.load("race")
    assert stored is not None
    texts = [m["parts"][0]["text"] for m in stored.snapshot["history"]]
    assert texts == ["start", "reply from worker A", "and from B"]


def test_run_turn_retries_after_losing_the_race(store: SessionStore) -> None:
    seed = build()
    seed.append(user("start"))
    SessionSync(store, "r").save(seed)
    rival = SessionSync(store, "r")
    tries: list[int] = []

    def turn(chef: ContextChef) -> str:
        tries.append(len(chef.history))
        if len(tries) == 1:  # another worker saves while this attempt runs
            other = build()
            rival.load_into(other)
            other.append(assistant("rival"))
            rival.save(other)
        chef.append(user(f"mine after {len(chef.history)}"))
        return "done"

    assert SessionSync(store, "r").run_turn(build, turn) == "done"
    stored = store.load("r")
    assert stored is not None and stored.version == 3 and tries == [1, 2]
    texts = [m["parts"][0]["text"] for m in stored.snapshot["history"]]
    assert texts == ["start", "rival", "mine after 2"]


def test_write_rules(store: SessionStore) -> None:
    with pytest.raises(StaleSessionError) as caught:
        store.append("none", [], expected_version=3)
    assert caught.value.actual == 0 and "no such session" in str(caught.value)
    with pytest.raises(UsageError, match="snapshot\\(\\), not append"):
        store.append("none", [], expected_version=0)
    assert store.snapshot("s", {"a": [1]}, expected_version=0) == 1
    with pytest.raises(StaleSessionError):
        store.snapshot("s", {"a": []}, expected_version=0)  # creating twice
    assert store.append("s", [["extend", ["a"], [2]]], expected_version=1) == 2
    loaded = store.load("s")
    assert loaded is not None
    assert (loaded.snapshot, loaded.version, loaded.turns) == ({"a": [1, 2]}, 2, 1)
    for bad in ("", "x" * 513, "tab\there", 7):
        with pytest.raises(UsageError, match="session id"):
            store.load(bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="expected_version"):
        store.append("s", [], expected_version=-1)
    with pytest.raises(SessionStoreError, match="not JSON"):
        store.snapshot("s", {"x": float("nan")}, expected_version=2)


def test_list_delete_and_expire(store: SessionStore) -> None:
    for sid in ("b/2", "a/1", "a/2", "a*[x]"):
        store.snapshot(sid, {"id": sid}, expected_version=0)
    assert store.list_sessions() == ["a*[x]", "a/1", "a/2", "b/2"]
    assert store.list_sessions("a/") == ["a/1", "a/2"]
    assert store.list_sessions("a*") == ["a*[x]"]
    assert store.delete("a/1") is True and store.delete("a/1") is False
    assert store.load("a/1") is None
    assert store.expire("a/2", 3600) is True and store.expire("gone", 60) is False
    loaded = store.load("a/2")
    assert loaded is not None and loaded.expires_at is not None
    assert store.expire("a/2", None) is True
    loaded = store.load("a/2")
    assert loaded is not None and loaded.expires_at is None
    # a deleted session starts again at version 1
    assert store.snapshot("a/1", {"id": "again"}, expected_version=0) == 1


def test_sqlite_expiry_follows_the_clock(tmp_path: Path) -> None:
    clock = Clock()
    store = SQLiteSessionStore(tmp_path / "s.db", ttl=60, clock=clock)
    store.snapshot("s", {"n": [0]}, expected_version=0)
    clock.now += 59
    assert store.append("s", [["extend", ["n"], [1]]], expected_version=1) == 2  # refreshes
    clock.now += 59
    loaded = store.load("s")
    assert loaded is not None and loaded.expires_at == clock.now + 1
    clock.now += 2
    assert store.load("s") is None and store.list_sessions() == []
    with pytest.raises(StaleSessionError):
        store.append("s", [], expected_version=2)
    assert store.purge_expired() == 1
    assert store.snapshot("s", {"n": []}, expected_version=0) == 1


def test_redis_expiry_is_set_on_both_keys(redis_server_url: str) -> None:
    store = RedisSessionStore(redis_server_url, prefix="t:ttl:", ttl=120)
    store.delete("s")
    store.snapshot("s", {"n": []}, expected_version=0)
    store.append("s", [["extend", ["n"], [1]]], expected_version=1)
    meta, log = store._keys("s")
    assert 0 < store.client.pttl(meta) <= 120_000 and 0 < store.client.pttl(log) <= 120_000
    loaded = store.load("s")
    assert loaded is not None and loaded.expires_at is not None
    store.client.close()


# -- failures are SessionStoreError ---------------------------------------------------------


def test_a_corrupt_record_is_a_clear_error(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    store.snapshot("s", {"a": [1]}, expected_version=0)
    store.append("s", [["extend", ["b"], [2]]], expected_version=1)  # no key b
    with pytest.raises(SessionStoreError, match="does not apply") as caught:
        store.load("s")
    assert caught.value.session_id == "s"
    db = sqlite3.connect(tmp_path / "s.db")
    db.execute("UPDATE sessions SET base = 'not json'")
    db.commit()
    db.close()
    with pytest.raises(SessionStoreError, match="not valid JSON"):
        store.load("s")


def test_an_unreachable_redis_is_a_store_error() -> None:
    store = RedisSessionStore("redis://127.0.0.1:1/0")
    with pytest.raises(SessionStoreError, match="Redis failed to load"):
        store.load("s")


def test_bad_arguments() -> None:
    with pytest.raises(UsageError, match="ttl"):
        SQLiteSessionStore(":memory:", ttl=0)
    with pytest.raises(UsageError, match="prefix"):
        RedisSessionStore("redis://127.0.0.1:1/0", prefix="{x}")
    with pytest.raises(UsageError, match="checkpoint_every"):
        SessionSync(SQLiteSessionStore(":memory:"), "s", checkpoint_every=0)
    assert isinstance(SQLiteSessionStore(":memory:"), SessionStore)


# -- deltas ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=examples(full=300, default=50), deadline=None)
@given(st.dictionaries(st.text(max_size=3), json_values, max_size=5), json_values, st.data())
def test_a_delta_applied_to_its_base_gives_the_new_snapshot(
    old: dict[str, Any], extra: Any, data: st.DataObject
) -> None:
    new = json.loads(json.dumps(old))
    for key in data.draw(st.lists(st.sampled_from([*old, "k"]), max_size=3)) if old else ["k"]:
        if isinstance(new.get(key), list):
            new[key] = [*new[key], extra]  # grown: an extend
        elif data.draw(st.booleans()):
            new[key] = extra
        else:
            new.pop(key, None)
    if data.draw(st.booleans()):  # the same keys in another order
        new = dict(reversed(list(new.items())))
    base = json.loads(json.dumps(old))
    apply_delta(base, json.loads(json.dumps(snapshot_delta(old, new))))
    assert json.dumps(base) == json.dumps(new)  # key order included


def test_delta_tells_one_from_true_and_a_grown_list_from_a_changed_one() -> None:
    assert snapshot_delta({"a": 1}, {"a": True}) == [["set", ["a"], True]]
    assert snapshot_delta({"a": [1, 2]}, {"a": [1, 2, 3]}) == [["extend", ["a"], [3]]]
    assert snapshot_delta({"a": [1, 2]}, {"a": [1.0, 2, 3]}) == [["set", ["a"], [1.0, 2, 3]]]
    # flat lists (digests, indices) are compared in C, their items' types included
    assert snapshot_delta({"a": [1, 1]}, {"a": [1, True]}) == [["set", ["a"], [1, True]]]
    assert snapshot_delta({"a": [1, 2]}, {"a": [True, 2, 3]}) == [["set", ["a"], [True, 2, 3]]]
    assert snapshot_delta({"a": [1, 2]}, {"a": [1, 2.0]}) == [["set", ["a"], [1, 2.0]]]
    assert snapshot_delta({"a": ["x", None, 300]}, {"a": ["x", None, 300]}) == []
    assert snapshot_delta({"a": {"b": 1}, "c": 2}, {"a": {"b": 1}}) == [["del", ["c"]]]
    # a key inserted before kept ones: the object is set whole, in its new order
    assert snapshot_delta({"o": {"b": 1}}, {"o": {"a": 0, "b": 1}}) == [
        ["set", ["o"], {"a": 0, "b": 1}]
    ]


def test_a_stored_version_that_is_not_a_number_is_a_store_error(tmp_path: Any) -> None:
    import sqlite3

    from contextchef import SessionStoreError, SQLiteSessionStore

    path = tmp_path / "s.db"
    store = SQLiteSessionStore(str(path))
    store.snapshot("s", ContextChef().snapshot(), expected_version=0)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE sessions SET version = 'abc' WHERE id = 's'")
    with pytest.raises(
        SessionStoreError,
        match=r"stored version \(column sessions.version\) is 'abc' \(a str\), not a whole "
        r"number from 1 to 2\*\*62 - 1; the record is corrupt",
    ):
        store.load("s")


def _made(chef: ContextChef) -> None:
    chef.register_runtime_tool(
        {
            "name": "made_by_model",
            "description": "A tool the model wrote.",
            "input_schema": {"type": "object", "properties": {"x": {"type": "integer"}}},
        }
    )


def test_a_runtime_tool_is_restored_from_its_recorded_definition() -> None:
    import json as _json

    from contextchef import assistant as _assistant
    from contextchef import user as _user

    chef = ContextChef()
    chef.set_history([_user("hi")])
    _made(chef)
    chef.append(_assistant("made a tool"), _user("use it"))
    before = chef.compile("anthropic").to_json()
    snap = _json.loads(_json.dumps(chef.snapshot()))
    fresh = ContextChef()  # knows nothing of the tool the conversation made
    fresh.restore(snap, allow_unsigned=True)
    assert [t.name for t in fresh.tools if t.source == "runtime"] == ["made_by_model"]
    assert fresh.compile("anthropic").to_json() == before
    assert fresh.take_tool_additions() == ()  # restored, not news to announce
    assert fresh.snapshot() == snap


def test_a_bad_runtime_definition_in_a_snapshot_changes_nothing() -> None:
    import json as _json

    from contextchef import SnapshotMismatchError, Tool, UsageError
    from contextchef import user as _user

    chef = ContextChef()
    chef.set_history([_user("hi")])
    _made(chef)
    snap = _json.loads(_json.dumps(chef.snapshot()))
    broken = _json.loads(_json.dumps(snap))
    broken["tools"]["definitions"][0]["input_schema"] = {"type": "nonsense"}
    fresh = ContextChef()
    before = fresh.snapshot()
    with pytest.raises(UsageError, match="snapshot runtime tool 'made_by_model': its definit"):
        fresh.restore(broken, allow_unsigned=True)  # an edit its digest tells (break-it 38)
    assert fresh.snapshot() == before
    del broken["tools"]["definition_digests"]  # an older snapshot: the definition is built
    with pytest.raises(UsageError, match="snapshot runtime tool definition"):
        fresh.restore(broken, allow_unsigned=True)
    assert fresh.snapshot() == before
    taken = ContextChef()
    taken.register_tools([Tool(name="made_by_model", description="static")])
    with pytest.raises(SnapshotMismatchError, match="register_runtime_tool"):
        taken.restore(snap, allow_unsigned=True)
    assert [t.source for t in taken.tools] == ["builtin"]


def test_a_runtime_tool_registered_here_under_its_server_is_taken_as_the_runtime_tool() -> None:
    """A server's tool added mid-conversation, listed by the next worker's server at start."""
    import json as _json

    from contextchef import DeferredConfig, Tool
    from contextchef import assistant as _assistant
    from contextchef import user as _user

    def tool(description: str = "Added later.") -> Tool:
        return Tool(name="late", description=description, server="srv")

    def session(*extra: Tool) -> ContextChef:
        chef = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
        chef.register_tools(
            [Tool(name="early", description="From the start.", server="srv"), *extra]
        )
        return chef

    chef = session()
    chef.set_history([_user("hi")])
    chef.register_runtime_tool(tool())
    chef.append(_assistant("a tool came"), _user("use it"))
    before = chef.compile("anthropic").to_json()
    snap = _json.loads(_json.dumps(chef.snapshot()))
    fresh = session(tool())  # the server lists it now: an ordinary server tool
    assert fresh.restore(snap, allow_unsigned=True) == ()
    assert [(t.name, t.source) for t in fresh.tools if t.server] == [
        ("early", "builtin"),
        ("late", "runtime"),
    ]
    assert fresh.compile("anthropic").to_json() == before
    assert fresh.snapshot() == snap
    other = session(tool("Defined otherwise."))  # taken, with the server's definition
    other.restore(snap, allow_unsigned=True)
    assert other.registry.by_wire_name("srv__late").description == "Defined otherwise."


def test_a_negative_stored_version_and_a_make_chef_without_a_chef_are_clear_errors(
    tmp_path: Any,
) -> None:
    import sqlite3

    from contextchef import SessionStoreError, SessionSync, SQLiteSessionStore, UsageError

    path = tmp_path / "s.db"
    store = SQLiteSessionStore(str(path))
    store.snapshot("s", ContextChef().snapshot(), expected_version=0)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE sessions SET version = -5 WHERE id = 's'")
    with pytest.raises(SessionStoreError, match=r"stored version .* is -5, outside its range"):
        store.load("s")
    with pytest.raises(UsageError, match="expected a ContextChef"):
        SessionSync(store, "t").run_turn(lambda: None, lambda chef: None)  # type: ignore[arg-type,return-value]


def test_processes_opening_a_new_sqlite_file_at_once_all_succeed(tmp_path: Path) -> None:
    # CI once saw "database is locked" from the switch to WAL when two workers opened a
    # fresh file in the same instant; every opener must wait for the lock instead. One
    # spawn of six openers, released together by a barrier once all have imported
    # contextchef (a fixed start time let slow spawns on a busy machine miss the race).
    import multiprocessing

    from sqlite_opener import open_at_once

    ctx = multiprocessing.get_context("spawn")
    path = str(tmp_path / "fresh.db")
    out = ctx.Queue()
    procs = 6
    ready = ctx.Barrier(procs)
    workers = [ctx.Process(target=open_at_once, args=(path, ready, out)) for _ in range(procs)]
    for p in workers:
        p.start()
    answers = [out.get(timeout=120) for _ in workers]
    for p in workers:
        p.join(timeout=30)
    assert answers == ["ok"] * procs
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_two_threads_racing_every_turn_all_get_through(tmp_path: Path) -> None:
    # Two writers in a tight loop on one session once starved one of them past its
    # eight attempts; with jittered backoff between attempts every turn lands.
    import threading

    store = SQLiteSessionStore(tmp_path / "race.db")
    seed = build()
    seed.append(user("start"))
    SessionSync(store, "race").save(seed)
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        sync = SessionSync(store, "race")
        try:
            for i in range(15):
                sync.run_turn(build, lambda chef, i=i: chef.append(user(f"{name}{i}")))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stored = store.load("race")
    assert stored is not None
    texts = [m["parts"][0]["text"] for m in stored.snapshot["history"]]
    assert sorted(texts[1:]) == sorted(f"{n}{i}" for n in "ab" for i in range(15))
    assert [t for t in texts if t.startswith("a")] == [f"a{i}" for i in range(15)]


def test_run_turn_checks_attempts_and_backoff(store: SessionStore) -> None:
    sync = SessionSync(store, "x")
    for bad in ({"attempts": 0}, {"attempts": True}, {"backoff": -1}, {"backoff": float("nan")}):
        with pytest.raises(UsageError):
            sync.run_turn(build, lambda chef: None, **bad)  # type: ignore[arg-type]
