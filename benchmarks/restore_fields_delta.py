"""What the ledger's ``sent`` ``model``, ``cache`` and ``rebased`` cost a `SessionSync` delta.

A conversation of 10 turns per target, each turn a new worker over a `SQLiteSessionStore`
(load, compile, send through the SDK to the `contextchef.testing` fake, ingest, append,
save), Chat switching models every other turn. Per turn: the stored delta's bytes, against
the delta of the same two snapshots with the three fields left out (the baseline, same
run). Sizes only (no timings): ``python benchmarks/restore_fields_delta.py``.
"""

from __future__ import annotations

import copy
import itertools
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path[:0] = [
    str(Path(__file__).parent.parent / "tests"),
    str(Path(__file__).parent.parent / "tests" / "session"),
]

from test_ingest import send  # noqa: E402

from contextchef import ContextChef, user  # noqa: E402
from contextchef.stores import SessionSync, SQLiteSessionStore  # noqa: E402
from contextchef.stores._store import snapshot_delta  # noqa: E402
from contextchef.stores._stored import encode  # noqa: E402
from contextchef.testing import fake_for, text  # noqa: E402

RUNS = {
    "openai": ["gpt-5.6", "gpt-5.6", "gpt-5.7", "gpt-5.7"] * 2 + ["gpt-5.6"] * 2,
    "responses": ["gpt-5.6"] * 10,
    "anthropic": ["claude-sonnet-4-5"] * 10,
}
FIELDS = ("model", "cache", "rebased")


def _without(snap: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(snap)
    for ledger in out["ledgers"].values():
        for key in FIELDS:
            ledger.get("sent", {}).pop(key, None)
    return out


def run(target: str, models: list[str]) -> tuple[list[int], list[int]]:
    """(stored delta bytes, baseline delta bytes) per turn after the first."""
    db = Path(tempfile.mkdtemp()) / "s.db"
    store = SQLiteSessionStore(db)
    chef = ContextChef()
    chef.set_system_prompt("You are a glossary assistant. " * 150)
    chef.append(user("Define cache."))
    SessionSync(store, "s").save(chef)
    fake = fake_for(target).script(*[text(f"answer {k}") for k in range(len(models))])
    snaps = [json.loads(json.dumps(chef.snapshot()))]
    for k, model in enumerate(models):
        worker, sync = ContextChef(), SessionSync(store, "s")
        sync.load_into(worker)
        worker.ingest(send(target, fake, worker.compile(target, model=model).payload))
        worker.append(user(f"And word {k}?"))
        sync.save(worker)
        snaps.append(json.loads(json.dumps(worker.snapshot())))
    with sqlite3.connect(db) as conn:
        stored = [len(d) for (d,) in conn.execute("SELECT delta FROM turns ORDER BY version")]
    base = [
        len(encode(snapshot_delta(_without(a), _without(b)), "s"))
        for a, b in itertools.pairwise(snaps)
    ]
    return stored[1:], base[1:]


def main() -> None:
    print(
        "| target | turns | stored delta, mean bytes | without the fields | added per turn, max |"
    )
    print("|---|---|---|---|---|")
    for target, models in RUNS.items():
        stored, base = run(target, models)
        added = [s - b for s, b in zip(stored, base, strict=True)]
        print(
            f"| {target} | {len(stored)} | {sum(stored) / len(stored):,.0f} | "
            f"{sum(base) / len(base):,.0f} | {max(added)} |"
        )


if __name__ == "__main__":
    main()
