"""Where a `SessionSync` turn goes (issue 27, item 1): the turn of resume.py, split.

Run:  python benchmarks/sync_split.py [--targets anthropic,openai] [--signed] [--repeat 5]

The turn is resume.py's ``synced`` one (a fresh worker; ``SessionSync.load_into``,
append the model's turn and its result, compile, ``save`` of the delta) over a
`SQLiteSessionStore` file, on the 1,000-message histories of resume.py. Each part is
timed by a wrapper (CPU time, ``time.process_time``; ``gc.collect()`` before each turn;
medians of ``--repeat`` after one warm-up turn):

* store read: ``store.load`` less its JSON decoding (SQL, the signed head and the
  snapshot's signature check with keys);
* decode: the stored texts' ``json.loads`` (`stores._store.decode`);
* restore: ``ContextChef.restore`` of the decoded snapshot (`Maintenance.restore`);
* compile: append + compile;
* snapshot: the turn's snapshot (`Maintenance.snapshot`; signing included with keys);
* delta: `snapshot_delta` against what was loaded;
* encode / store write: the delta's JSON text, then ``store.append`` less it.

Works on any checkout (``PYTHONPATH=<tree>/src``): it wraps what each names, if present.
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import resume  # the same histories, sessions and turns

from contextchef import SnapshotKeys
from contextchef.session import _maintenance
from contextchef.stores import SessionSync, SQLiteSessionStore, _sqlite, _store, _sync

SPENT: dict[str, float] = {}


def wrap(owner: Any, name: str, key: str) -> None:
    """Add the CPU time of each call of ``owner.name`` to ``SPENT[key]``."""
    real: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            SPENT[key] = SPENT.get(key, 0.0) + time.process_time() - start

    setattr(owner, name, timed)


PARTS = ("store read", "decode", "restore", "compile", "snapshot", "delta", "encode", "store write")


def split(target: str, real: bool, repeat: int, keys: SnapshotKeys | None) -> dict[str, float]:
    chef = resume.new_session()
    chef.set_history(resume.history(1000, target, real))
    resume.compile_for(chef, target)
    for k in range(4):
        chef.append(*resume.turn(100_000 + k, target, real))
        resume.compile_for(chef, target)
    base = chef.snapshot()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteSessionStore(Path(folder) / "s.db", keys=keys)
        store.snapshot("s", base, expected_version=0)
        for i in range(repeat + 1):
            stored = store.load("s")
            assert stored is not None
            store.snapshot("s", base, expected_version=stored.version)
            worker = resume.new_session()
            assert worker.view is not None
            SPENT.clear()
            gc.collect()
            t0 = time.process_time()
            sync = SessionSync(store, "s")
            sync.load_into(worker)
            t1 = time.process_time()
            worker.append(*resume.turn(300_000 + i, target, real))
            resume.compile_for(worker, target)
            t2 = time.process_time()
            sync.save(worker)
            t3 = time.process_time()
            if i:
                rows.append({**SPENT, "total": t3 - t0, "compile": t2 - t1})
    out = {k: statistics.median(r.get(k, 0.0) for r in rows) * 1000 for k in rows[0]}
    out["store read"] = out["load"] - out.get("decode", 0.0)
    out["store write"] = out["append"] - out.get("encode", 0.0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="anthropic,openai")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--signed", action="store_true")
    args = parser.parse_args()
    logging.getLogger("contextchef").setLevel(logging.ERROR)
    wrap(_store, "decode", "decode")
    wrap(_sqlite, "encode", "encode")
    wrap(_sync, "snapshot_delta", "delta")
    wrap(_maintenance.Maintenance, "restore", "restore")
    wrap(_maintenance.Maintenance, "snapshot", "snapshot")
    wrap(SQLiteSessionStore, "load", "load")
    wrap(SQLiteSessionStore, "append", "append")
    keys = SnapshotKeys({"bench": b"k" * 32}) if args.signed else None
    print(f"| target | shape | total | {' | '.join(PARTS)} |")
    print("|---|---|" + "---:|" * (len(PARTS) + 1))
    for real in (False, True):
        for target in args.targets.split(","):
            m = split(target, real, args.repeat, keys)
            cells = " | ".join(f"{m.get(p, 0.0):.1f}" for p in PARTS)
            print(f"| {target} | {'real' if real else 'short'} | {m['total']:.1f} | {cells} |")


if __name__ == "__main__":
    main()
