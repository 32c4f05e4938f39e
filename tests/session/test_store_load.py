"""The multi-process load test (benchmarks/store_load.py), bounded: a few workers, a few
conversations, against a real Redis and a SQLite file.

Workers are picked at random per turn, two turns of one conversation race on every 5th
turn and every 7th turn is delivered twice; no turn may be lost or stored twice and every
request must keep the conversation's prefix.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import store_load

WORKERS, CONVERSATIONS, TURNS = 3, 4, 8  # turns 4+5 race, turn 6 comes twice


def _spec(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str]:
    if kind == "sqlite":
        return ("sqlite", str(tmp_path / "sessions.db"))
    url: str = request.getfixturevalue("redis_server_url")
    from contextchef import RedisSessionStore

    store = RedisSessionStore(url, prefix="load:")
    for sid in store.list_sessions():
        store.delete(sid)
    store.client.close()
    return ("redis", url)


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_workers_at_random_lose_and_duplicate_no_turn(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    spec = _spec(kind, tmp_path, request)
    report = store_load.run(
        spec, workers=WORKERS, conversations=CONVERSATIONS, turns=TURNS, seed=1, deadline=300
    )
    assert report.problems == []
    assert sum(report.done_per_worker.values()) == CONVERSATIONS * TURNS
    assert report.duplicates_skipped == CONVERSATIONS  # turn 6 of each, delivered twice
    assert len(report.done_per_worker) == WORKERS  # every worker served turns
    assert report.attempts == len(report.turn_seconds) + report.lost_races


def test_the_checks_catch_a_worker_that_breaks_the_prefix_and_a_lost_turn(
    tmp_path: Path,
) -> None:
    spec = ("sqlite", str(tmp_path / "sessions.db"))
    report = store_load.run(
        spec, workers=2, conversations=2, turns=4, seed=1, deadline=300, fault="system"
    )
    assert any(
        p.endswith(("system or tools changed", "edits")) or ": edits " in p for p in report.problems
    ), report.problems
    # one turn more than was run: every conversation lacks it
    missing = store_load.check_store(spec, 2, 5)
    assert missing == ["conv 0 turn 4: stored 0 times", "conv 1 turn 4: stored 0 times"]
