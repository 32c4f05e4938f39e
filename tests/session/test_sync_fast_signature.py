"""A SessionSync turn signs and checks snapshots by the fast encoder (issue 27, item 1).

A keyed session's save signs the whole snapshot and a keyed store's load checks it: the
MAC is over the snapshot's sorted-key canonical JSON, which orjson (the ``fastjson``
extra) now writes where it writes the bytes ``json`` writes (`_json.sorted_utf8`); a
store's decode refuses NaN and the infinities, which orjson would write as ``null``. What
must hold: the same MAC with and without orjson; a sync loop of several turns through the
official SDK clients against the `contextchef.testing` fakes, over SQLite and Redis,
signed and unsigned, stores exactly the snapshot of a session that never synced; a lost
race is still refused; a stored NaN is a corrupt record.
"""

from __future__ import annotations

import datetime
import enum
import fractions
import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_ingest import send  # the SDK clients pointed at a fake
from test_snapshot_once import compiled, make

from contextchef import (
    TARGETS,
    SessionStoreError,
    SnapshotKeys,
    StaleSessionError,
    tool_results,
    user,
)
from contextchef import _json as json_module
from contextchef._errors import UsageError
from contextchef._json import sorted_utf8
from contextchef._json_read import strict_loads
from contextchef._signing import sign, verify
from contextchef.stores import RedisSessionStore, SessionStore, SessionSync, SQLiteSessionStore
from contextchef.testing import fake_for, text, tool_calls

orjson = pytest.importorskip("orjson")  # the extra (in the test extra, so CI has it)

KEYS = SnapshotKeys({"k": b"k" * 32})


def _sorted_json(value: Any) -> bytes:
    text = json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )
    return text.encode("utf-8", "surrogatepass")


@pytest.fixture(params=[True, False], ids=["fastjson", "json"])
def encoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if not request.param:
        monkeypatch.setattr(json_module, "FAST_JSON", [None])
    return bool(request.param)


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A function (keys) -> a store of the parametrized kind, cleaned up afterwards."""
    made: list[Any] = []

    def build(keys: SnapshotKeys | None) -> SessionStore:
        if request.param == "sqlite":
            made.append(SQLiteSessionStore(tmp_path / "sessions.db", keys=keys))
        else:
            url = request.getfixturevalue("redis_server_url")
            made.append(RedisSessionStore(url, prefix=f"t:{request.node.name}:", keys=keys))
            for sid in made[-1].list_sessions():
                made[-1].delete(sid)
        return made[-1]  # type: ignore[no-any-return]

    yield build
    for store in made:
        store.close() if isinstance(store, SQLiteSessionStore) else store.client.close()


# -- the canonical bytes ----------------------------------------------------------------------

FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e16, 1e15, -0.0, 5e-324, 1e-5, 1.5e-5, 1e-7, 1e-4, 1.5e300, 1e22, 0.1]),
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, 2**64, -(2**63) - 1, 10**30]),
    FLOATS,
    st.text(st.characters(codec=None), max_size=20),
    st.sampled_from(["1e-7", "0.00001", "e-5", "a\\", '"', "\u2028", "\x7f"]),
)
ODD = [
    datetime.datetime(2026, 1, 1),  # orjson writes these; json refuses them
    uuid.UUID(int=7),
    enum.Enum("Color", "RED").RED,  # type: ignore[attr-defined]
    fractions.Fraction(1, 3),
    (1, 2.5, "t"),  # a tuple: json writes a list
    {"n": float("nan")},
    [float("inf"), 1e-7, -0.0, 1e23],
]
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=6), inner, max_size=4),
    ),
    max_leaves=30,
)


@given(value=VALUES)
def test_sorted_utf8_is_the_json_bytes_or_none(value: Any) -> None:
    try:
        expected: Any = _sorted_json(value)
    except (TypeError, ValueError, RecursionError):
        expected = None
    made = sorted_utf8(value)
    assert made is None or made == expected


@given(number=FLOATS)
def test_each_float_orjson_writes_otherwise_takes_json(number: float) -> None:
    made = sorted_utf8({"x": number, "y": [number, "text"]})
    expected = _sorted_json({"x": number, "y": [number, "text"]})
    assert made is None or made == expected
    if 1e-4 <= abs(number) < 1e16 or number == 0:  # written alike: the fast bytes are kept
        assert made == expected


def test_the_fast_encoder_signs_what_json_signs() -> None:
    snap = {
        "format": "x",
        "b": [1, 2.5, "é", {"z": None, "a": True}],
        "a": "\x01\u2028😀",
        "n": 2**63,
    }
    fast = sign(snap, KEYS, session_id="s", finite=True)
    slow = sign(snap, KEYS, session_id="s")
    assert fast == slow
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_module, "FAST_JSON", [None])
        assert sign(snap, KEYS, session_id="s", finite=True) == slow
        assert verify(fast, KEYS, session_id="s", finite=True)
    assert verify(slow, KEYS, session_id="s", finite=True)
    # a key order or a float written otherwise changes nothing: json's bytes are signed
    assert sign({**snap, "f": 1e-7}, KEYS, finite=True) == sign({**snap, "f": 1e-7}, KEYS)


def _by_json(snap: Any) -> Any:
    """`sign` of `snap` by ``json`` alone (every byte search), or the error's type."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_module, "FAST_JSON", [None])
        try:
            return sign(snap, KEYS, session_id="s")
        except UsageError:
            return UsageError


@given(value=st.one_of(VALUES, st.sampled_from(ODD)))
def test_a_signature_made_fast_is_the_one_json_makes(value: Any) -> None:
    """`_signing._canonical` takes orjson's bytes, reads them back once by msgspec and
    restates numbers only when one needs it; a caller's value (not `finite`) is taken so
    only when it reads back to itself (NaN is written ``null``, a datetime as text by
    orjson). The MAC is the one ``json`` makes, or both refuse; a snapshot read from its
    text verifies, whatever floats it holds."""
    snap = {"format": "x", "v": value}
    slow = _by_json(snap)
    for finite in (False, True):
        if finite and slow is UsageError:  # a caller's NaN: `finite` vouches for none
            continue
        try:
            assert sign(snap, KEYS, session_id="s", finite=finite) == slow
        except UsageError:
            assert slow is UsageError
    if slow is UsageError:
        return
    assert verify(slow, KEYS, session_id="s") and verify(slow, KEYS, session_id="s", finite=True)
    floats: list[str] = []
    read = strict_loads(json.dumps(slow), floats)
    assert verify(read, KEYS, session_id="s", finite=True, floats=bool(floats))


# -- the sync loop ----------------------------------------------------------------------------


def _data(snap: dict[str, Any]) -> str:
    """`snap` as JSON without what caches the thinking chain (and so its signature).

    A restored Anthropic ledger keeps the chain of thinking fingerprints it was stored
    with and extends it on its first compile, over more entries than a session that never
    restored has computed (the same on main at cf5aa1d): the requests are the same, the
    ``chain`` field (and the ``record_digest`` over it) longer.
    """
    data = json.loads(json.dumps(snap))
    data.pop("signature", None)
    for ledger in data["ledgers"].values():
        ledger.pop("chain", None)
        ledger.pop("record_digest", None)
    return json.dumps(data)


def _script(target: str) -> Any:
    return fake_for(target).script(
        tool_calls(("read_file", {"path": "a.py"}), reasoning="plan a"),
        text("Fixed a.py.", reasoning="done"),
        tool_calls(("read_file", {"path": "b.py"}), ("read_file", {"path": "c.py"})),
        text("Both fixed."),
        text("Bye."),
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("keys", [None, KEYS], ids=["unsigned", "signed"])
@pytest.mark.usefixtures("encoder")
def test_a_sync_loop_stores_the_snapshot_of_a_session_that_never_synced(
    target: str, keys: SnapshotKeys | None, backend: Any
) -> None:
    store = backend(keys)
    fake, reference = _script(target), make()
    sync = SessionSync(store, "conv", checkpoint_every=3)  # deltas and a checkpoint
    session = "conv" if keys else None
    for turn in range(5):
        worker = make()
        assert sync.load_into(worker) == (turn > 0)
        for chef in (worker, reference):
            chef.append(user(f"Turn {turn}: go on, 任务 {turn}."))
        payload = compiled(worker, target).payload
        assert json.dumps(payload) == json.dumps(compiled(reference, target).payload)
        response = send(target, fake, payload)
        for chef in (worker, reference):
            calls = chef.ingest(response)
            if calls:
                chef.append(tool_results([chef.execute(call).result for call in calls]))
        sync.save(worker)
        stored = store.load("conv")
        assert stored is not None
        assert json.dumps(stored.snapshot) == json.dumps(
            worker.snapshot(keys=keys, session_id=session)
        )
        assert _data(stored.snapshot) == _data(reference.snapshot(keys=keys, session_id=session))
        assert stored.verified is (keys is not None)
    assert fake.violations == ()
    # a writer that loaded an older version loses its race, and writes nothing
    late, winner = SessionSync(store, "conv"), SessionSync(store, "conv")
    late.load_into(make())
    chef = make()
    winner.load_into(chef)
    chef.append(user("One more."))
    winner.save(chef)
    with pytest.raises(StaleSessionError):
        late.save(make())
    stored = store.load("conv")
    assert stored is not None and stored.version == winner.version


def test_a_stored_nan_or_infinity_is_a_corrupt_record(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    chef = make()
    chef.append(user("Hi."))
    SessionSync(store, "conv").save(chef)
    db = sqlite3.connect(tmp_path / "s.db")
    (base,) = db.execute("SELECT base FROM sessions").fetchone()
    for bad in ("NaN", "Infinity", "-Infinity", "1e400"):
        db.execute(
            "UPDATE sessions SET base = ?", (base.replace('"model":null', f'"model":{bad}'),)
        )
        db.commit()
        with pytest.raises(SessionStoreError, match="not valid JSON"):
            store.load("conv")
    db.close()
