"""A `SessionSync` turn reuses what it loaded (issue 27, item 1).

The snapshot a turn saves shares the forms of the unchanged messages and wire entries
with the one it loaded, so the delta is found by identity instead of serializing both;
a keyed store's load is verified once (the store checks the HMAC, restore does not check
it again), and a signed snapshot's wire entries are not serialized again to check their
digests. What is stored, restored and sent must be exactly what it was.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_store import TARGETS, build, host_turn, model_turn

from contextchef import SessionSync, SnapshotKeys, SnapshotSignatureError, SQLiteSessionStore
from contextchef.session import _maintenance
from contextchef.stores import _store
from contextchef.stores._store import snapshot_delta

KEYS = SnapshotKeys({"k": b"k" * 32})


def _stored_turns(path: Path) -> list[Any]:
    db = sqlite3.connect(path)
    rows = [json.loads(text) for (text,) in db.execute("SELECT delta FROM turns ORDER BY version")]
    db.close()
    return rows


@pytest.mark.parametrize("keys", [None, KEYS], ids=["unsigned", "signed"])
def test_each_turn_stores_the_delta_a_full_comparison_finds(
    tmp_path: Path, keys: SnapshotKeys | None
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db", keys=keys)
    reference, session = build(), "conv" if keys else None
    sync = SessionSync(store, "conv", checkpoint_every=100)
    expected = []
    for turn in range(6):
        worker = build()
        loaded = store.load("conv")
        sync.load_into(worker)
        for chef in (reference, worker):
            host_turn(chef, turn)
        for target in TARGETS:
            assert worker.compile(target).to_json() == reference.compile(target).to_json()
        for chef in (reference, worker):
            model_turn(chef, turn)
        sync.save(worker)
        if loaded is not None:  # what comparing the two snapshots whole gives
            full = worker.snapshot(keys=keys, session_id=session)
            expected.append(snapshot_delta(json.loads(json.dumps(loaded.snapshot)), full))
    assert _stored_turns(tmp_path / "s.db") == expected
    stored = store.load("conv")
    assert stored is not None
    assert json.dumps(stored.snapshot) == json.dumps(
        reference.snapshot(keys=keys, session_id=session)
    )


def test_a_keyed_load_checks_the_snapshot_signature_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db", keys=KEYS)
    chef, sync = build(), SessionSync(store, "conv")
    host_turn(chef, 0)
    chef.compile("anthropic")
    model_turn(chef, 0)
    sync.save(chef)
    checked: list[str] = []

    def counting(real: Any) -> Any:
        def verify(snapshot: Any, *args: Any, **kwargs: Any) -> bool:
            checked.append(str(snapshot.get("format")))
            return bool(real(snapshot, *args, **kwargs))

        return verify

    monkeypatch.setattr(_store, "verify", counting(_store.verify))
    monkeypatch.setattr(_maintenance, "verify", counting(_maintenance.verify))
    worker = build()
    assert sync.load_into(worker)
    assert checked.count("contextchef.snapshot") == 1  # the store's check; restore trusts it
    assert worker.compile("anthropic").to_json() == chef.compile("anthropic").to_json()


def test_a_signed_snapshot_restores_to_the_same_record_without_rechecking_its_wire() -> None:
    chef = build()
    for turn in range(3):
        host_turn(chef, turn)
        for target in TARGETS:
            chef.compile(target)
        model_turn(chef, turn)
    snap = json.loads(json.dumps(chef.snapshot(keys=KEYS, session_id="s")))
    fresh = build()
    fresh.restore(snap, keys=KEYS, session_id="s")
    # the recorded digests are kept as they are: the next snapshot is the same
    assert fresh.snapshot(keys=KEYS, session_id="s") == snap
    for target in TARGETS:
        assert fresh.compile(target).to_json() == chef.compile(target).to_json()
    tampered = json.loads(json.dumps(snap))
    tampered["ledgers"]["openai"]["wire"][0]["content"] = "changed"
    with pytest.raises(SnapshotSignatureError) as info:
        build().restore(tampered, keys=KEYS, session_id="s")
    assert info.value.problem == "mismatch"


class _KeyedButUnchecked:
    """A store of another kind: it holds keys, but its load checks nothing."""

    def __init__(self, inner: SQLiteSessionStore) -> None:
        self.inner, self.keys = inner, inner.keys
        self.tamper = False

    def load(self, session_id: str) -> Any:
        stored = self.inner.load(session_id)
        if stored is None or not self.tamper:
            return stored
        snapshot = json.loads(json.dumps(stored.snapshot))
        snapshot["ledgers"]["anthropic"]["wire"][0]["content"] = "changed"
        return _store.StoredSession(
            session_id, stored.version, snapshot, stored.turns, stored.expires_at
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_only_a_load_the_store_verified_skips_the_restores_own_check(tmp_path: Path) -> None:
    """A store that did not say it verified (`StoredSession.verified`) gets every check."""
    store = _KeyedButUnchecked(SQLiteSessionStore(tmp_path / "s.db", keys=KEYS))
    chef, sync = build(), SessionSync(store, "conv")  # type: ignore[arg-type]
    host_turn(chef, 0)
    chef.compile("anthropic")
    model_turn(chef, 0)
    sync.save(chef)
    assert SessionSync(store, "conv").load_into(build())  # type: ignore[arg-type]
    store.tamper = True
    with pytest.raises(SnapshotSignatureError) as info:
        SessionSync(store, "conv").load_into(build())  # type: ignore[arg-type]
    assert info.value.problem == "mismatch"
