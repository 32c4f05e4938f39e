"""Load test: many worker processes continue many conversations through one session store.

Run:  python benchmarks/store_load.py [--workers 8] [--conversations 200] [--turns 20]
      [--stores sqlite,redis] [--redis-url URL]

A coordinator hands out turns; each turn of each conversation goes to a worker process
picked at random, which builds a fresh `ContextChef` (the demo catalog, 51 tools),
restores the conversation from the store (`SessionSync.load_into`), appends the user
turn, compiles it, appends a scripted model reply (a tool call and its result on two
turns in three) and saves with a compare-and-set (`SessionSync.save`). The next turn of a
conversation is handed out when the previous one is saved, except that:

* every 5th turn is sent to two workers at once together with the turn after it (two
  messages of one user arriving together): the two race on one version, the loser gets
  `StaleSessionError`, reloads, redoes its turn on the winner's state and retries;
* every 7th turn is delivered twice (a retried request): the second worker finds the
  turn already in the stored history and does nothing.

Checked at the end, per conversation: every turn is in the stored history exactly once,
and every request passed the prefix-stability check (same ``system`` and ``tools``
segments as the conversation's previous request, whose ``messages`` segment is a prefix
of this one's, no ``edits``), compared through hashes the coordinator passes along.
Reported: turns per second per worker (and in total), attempts, lost races, and the
median and 95th-percentile turn time. The Redis store gets a ``redis-server`` started on
127.0.0.1 (a free port) unless ``--redis-url`` is given; SQLite uses a file in a
temporary directory. The test suite runs the same code with small counts
(tests/session/test_store_load.py).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import platform
import queue
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

TARGET = "anthropic"
MODEL = "claude-opus-5-5"


# -- one worker -----------------------------------------------------------------------------


def _make_store(spec: tuple[str, str]) -> Any:
    from contextchef import RedisSessionStore, SQLiteSessionStore

    kind, where = spec
    if kind == "sqlite":
        return SQLiteSessionStore(where, timeout=120)
    return RedisSessionStore(where, prefix="load:")


def _make_chef() -> Any:
    from contextchef import ContextChef, load_demo_catalog

    chef = ContextChef(default_defer=True, pin=["^read_file$"])
    chef.register_catalog(load_demo_catalog())
    chef.set_system_prompt("You are a careful software engineering agent.")
    return chef


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _marker(conv: int, turn: int) -> str:
    return f"[c{conv} t{turn}]"


def _do_turn(chef: Any, conv: int, turn: int) -> None:
    """The user's turn and the scripted model reply (the request is compiled by the caller)."""
    from contextchef import ToolCall, ToolResult, assistant, tool_results

    if turn % 3 == 2:
        chef.append(assistant(f"Done with {_marker(conv, turn)}."))
        return
    call = ToolCall(id=f"c{conv}t{turn}", name="read_file", arguments={"path": f"f{turn}.py"})
    chef.append(assistant("Reading.", [call]))
    check = chef.check_tool_call(call)  # the gate, as a host runs it
    assert check.decision == "allowed", check
    content = f"contents of f{turn}.py\n" * 20
    chef.append(tool_results([ToolResult(call_id=call.id, name=call.name, content=content)]))


def _prefix_problem(request: Any, prev: dict[str, Any] | None) -> str:
    if request.edits:
        return f"edits {request.edits!r:.200}"
    if prev is None:
        return ""
    seg = request.segments
    if _sha(seg["system"]) != prev["system"] or _sha(seg["tools"]) != prev["tools"]:
        return "system or tools changed"
    messages: str = seg["messages"]
    if _sha(messages[: prev["messages_len"] - 1]) != prev["messages_head"]:
        return "earlier messages changed"
    return ""


def _overwrite(store: Any, session_id: str, snapshot: dict[str, Any], version: int) -> int:
    """The injected bug: write over whatever is stored (last writer wins)."""
    from contextchef import StaleSessionError

    while True:
        try:
            new: int = store.snapshot(session_id, snapshot, expected_version=version)
            return new
        except StaleSessionError as exc:
            version = exc.actual


def worker_main(spec: tuple[str, str], tasks: Any, results: Any, fault: str = "") -> None:
    """Serve turns until a None task arrives (runs in its own process).

    `fault` injects a bug the checks must catch: ``"system"`` (each worker sets its own
    system prompt after restoring) or
    ``"last-writer-wins"`` (a lost race overwrites the winner instead of redoing).
    """
    store = _make_store(spec)
    _make_chef()  # warm: imports done before the clock starts
    results.put({"ready": os.getpid()})
    while True:
        task = tasks.get()
        if task is None:
            return
        conv, turn, prev = task
        try:
            outcome = _serve(store, conv, turn, prev, fault)
        except Exception as exc:  # reported, so the coordinator does not wait for it
            outcome = {
                "seconds": 0.0,
                "attempts": 1,
                "lost": 0,
                "skipped": False,
                "problem": f"worker error: {exc!r:.300}",
                "seen": None,
            }
        results.put({"conv": conv, "turn": turn, "pid": os.getpid(), **outcome})


def _serve(
    store: Any, conv: int, turn: int, prev: dict[str, Any] | None, fault: str
) -> dict[str, Any]:
    """Do one turn (load, append, compile, reply, save; again after a lost race)."""
    from contextchef import SessionSync, StaleSessionError, user
    from contextchef.history._messages import TextPart

    started = time.perf_counter()
    attempts, lost, skipped, problem, seen = 0, 0, False, "", None
    sync = SessionSync(store, f"conv-{conv:05d}", checkpoint_every=8)
    while True:
        attempts += 1
        chef = _make_chef()
        sync.load_into(chef)
        if fault == "system":  # each worker words the system prompt its own way
            chef.set_system_prompt(f"You are a careful agent (worker {os.getpid()}).")
        texts = [p.text for m in chef.history for p in m.parts if isinstance(p, TextPart)]
        if any(t.startswith(_marker(conv, turn)) for t in texts):
            skipped = True  # delivered twice: already done
            break
        chef.append(user(f"{_marker(conv, turn)} Please continue with step {turn}."))
        request = chef.compile(TARGET, model=MODEL)
        problem = problem or _prefix_problem(request, prev)
        _do_turn(chef, conv, turn)
        try:
            version = sync.save(chef)
        except StaleSessionError as exc:
            lost += 1
            if fault != "last-writer-wins":
                continue
            version = _overwrite(store, sync.session_id, chef.snapshot(), exc.actual)
        seg = request.segments
        seen = {
            "version": version,
            "system": _sha(seg["system"]),
            "tools": _sha(seg["tools"]),
            "messages_len": len(seg["messages"]),
            "messages_head": _sha(seg["messages"][: len(seg["messages"]) - 1]),
        }
        break
    return {
        "seconds": time.perf_counter() - started,
        "attempts": attempts,
        "lost": lost,
        "skipped": skipped,
        "problem": problem,
        "seen": seen,
    }


# -- the coordinator ------------------------------------------------------------------------


@dataclass
class Report:
    store: str
    workers: int
    conversations: int
    turns: int
    seconds: float
    done_per_worker: dict[int, int]
    attempts: int
    lost_races: int
    duplicates_skipped: int
    turn_seconds: list[float]
    problems: list[str] = field(default_factory=list)

    @property
    def per_worker(self) -> list[float]:
        return [n / self.seconds for n in self.done_per_worker.values()]


def run(
    spec: tuple[str, str],
    *,
    workers: int,
    conversations: int,
    turns: int,
    seed: int = 0,
    deadline: float = 3600.0,
    fault: str = "",
) -> Report:
    """Run the load test against one store; see the module docstring."""
    rng = random.Random(seed)
    ctx = mp.get_context("spawn")
    inboxes = [ctx.Queue() for _ in range(workers)]
    results = ctx.Queue()
    procs = [
        ctx.Process(target=worker_main, args=(spec, inboxes[i], results, fault), daemon=True)
        for i in range(workers)
    ]
    for p in procs:
        p.start()
    prev: dict[int, dict[str, Any] | None] = dict.fromkeys(range(conversations))
    next_turn = dict.fromkeys(range(conversations), 0)
    waiting: dict[int, int] = {}  # conversation -> results still expected for its batch
    outstanding = 0

    def send(conv: int, turn: int) -> None:
        nonlocal outstanding
        inboxes[rng.randrange(workers)].put((conv, turn, prev[conv]))
        outstanding += 1
        waiting[conv] = waiting.get(conv, 0) + 1

    def dispatch(conv: int) -> None:
        turn = next_turn[conv]
        if turn >= turns:
            return
        if turn % 5 == 4 and turn + 1 < turns:  # two turns at once: a race
            send(conv, turn)
            send(conv, turn + 1)
            next_turn[conv] = turn + 2
        else:
            send(conv, turn)
            if turn % 7 == 6:  # the same turn twice: a duplicate delivery
                send(conv, turn)
            next_turn[conv] = turn + 1

    ready = 0  # every worker has imported contextchef and opened the store
    opened_by = time.perf_counter() + deadline
    while ready < len(procs):
        try:
            results.get(timeout=1.0)
            ready += 1
        except queue.Empty:
            dead = [p.pid for p in procs if not p.is_alive()]
            if dead or time.perf_counter() > opened_by:
                for p in procs:
                    p.kill()
                raise RuntimeError(
                    f"load test could not start: {ready} of {len(procs)} workers ready, "
                    f"dead workers {dead}"
                ) from None
    started = time.perf_counter()
    report = Report(
        store=spec[0],
        workers=workers,
        conversations=conversations,
        turns=turns,
        seconds=0.0,
        done_per_worker={},
        attempts=0,
        lost_races=0,
        duplicates_skipped=0,
        turn_seconds=[],
    )
    best: dict[int, dict[str, Any]] = {}
    try:
        for conv in range(conversations):
            dispatch(conv)
        while outstanding:
            left = deadline - (time.perf_counter() - started)
            try:
                res = results.get(timeout=max(0.1, min(left, 60.0)))
            except queue.Empty:
                dead = [p.pid for p in procs if not p.is_alive()]
                if left <= 0 or dead:
                    raise RuntimeError(
                        f"load test stalled: {outstanding} turns outstanding, dead workers {dead}"
                    ) from None
                continue
            outstanding -= 1
            conv = res["conv"]
            report.attempts += res["attempts"]
            report.lost_races += res["lost"]
            report.turn_seconds.append(res["seconds"])
            if res["skipped"]:
                report.duplicates_skipped += 1
            else:
                pid = res["pid"]
                report.done_per_worker[pid] = report.done_per_worker.get(pid, 0) + 1
            if res["problem"]:
                report.problems.append(f"conv {conv} turn {res['turn']}: {res['problem']}")
            seen = res["seen"]
            if seen and (conv not in best or seen["version"] > best[conv]["version"]):
                best[conv] = seen
            waiting[conv] -= 1
            if waiting[conv] == 0:
                prev[conv] = best.get(conv)
                dispatch(conv)
    finally:
        for inbox in inboxes:
            inbox.put(None)
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
    report.seconds = time.perf_counter() - started
    report.problems += check_store(spec, conversations, turns)
    return report


def check_store(spec: tuple[str, str], conversations: int, turns: int) -> list[str]:
    """Every turn of every conversation stored exactly once (user turn and model reply)."""
    store = _make_store(spec)
    problems = []
    for conv in range(conversations):
        stored = store.load(f"conv-{conv:05d}")
        if stored is None:
            problems.append(f"conv {conv}: not stored")
            continue
        texts = [
            part.get("text", "")
            for message in stored.snapshot["history"]
            for part in message["parts"]
            if part.get("kind") == "text"
        ]
        for turn in range(turns):
            asked = sum(t.startswith(_marker(conv, turn)) for t in texts)
            if asked != 1:
                problems.append(f"conv {conv} turn {turn}: stored {asked} times")
        calls = [
            part["id"]
            for message in stored.snapshot["history"]
            for part in message["parts"]
            if part.get("kind") == "tool_call"
        ]
        if len(calls) != len(set(calls)):
            problems.append(f"conv {conv}: a tool call stored twice")
    return problems


# -- servers and the command line -----------------------------------------------------------


@contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway ``redis-server`` on 127.0.0.1 (no persistence); yields its URL."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as folder:
        proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                folder,
            ],
            stdout=subprocess.DEVNULL,
        )
        try:
            import redis

            client = redis.Redis(port=port)
            for _ in range(200):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            client.close()
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _print(report: Report) -> None:
    per = report.per_worker
    total = sum(report.done_per_worker.values())
    times = sorted(report.turn_seconds)
    p95 = times[int(0.95 * (len(times) - 1))] * 1000 if times else 0.0
    print(
        f"| {report.store} | {report.workers} x {report.conversations} x {report.turns} | "
        f"{total} | {report.seconds:.1f} | {total / report.seconds:.0f} | "
        f"{min(per):.1f} / {statistics.median(per):.1f} / {max(per):.1f} | "
        f"{report.lost_races} | {report.duplicates_skipped} | "
        f"{statistics.median(times) * 1000:.0f} / {p95:.0f} | {len(report.problems)} |"
    )
    for problem in report.problems[:20]:
        print(f"  problem: {problem}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--stores", default="sqlite,redis")
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        "| store | workers x conversations x turns | turns saved | seconds | turns/s | "
        "turns/s per worker (min / median / max) | lost races (retried) | duplicate "
        "deliveries skipped | turn ms (p50 / p95) | problems |"
    )
    print("|---|---|---:|---:|---:|---|---:|---:|---|---:|")
    failed = False
    for kind in args.stores.split(","):
        if kind == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                spec = ("sqlite", os.path.join(folder, "sessions.db"))
                report = run(
                    spec,
                    workers=args.workers,
                    conversations=args.conversations,
                    turns=args.turns,
                    seed=args.seed,
                )
        else:
            with redis_server() if not args.redis_url else _given(args.redis_url) as url:
                report = run(
                    ("redis", url),
                    workers=args.workers,
                    conversations=args.conversations,
                    turns=args.turns,
                    seed=args.seed,
                )
        _print(report)
        failed = failed or bool(report.problems)
    sys.exit(1 if failed else 0)


@contextmanager
def _given(url: str) -> Iterator[str]:
    yield url


if __name__ == "__main__":
    main()
