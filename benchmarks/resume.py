"""What a worker pays for a conversation it did not serve the turn before (issue 27).

Run:  python benchmarks/resume.py [--messages 400] [--repeat 5] [--targets anthropic,openai]

Each timing is the whole operation a user pays, with ``gc.collect()`` before it (caches
cold as after an HTTP call), median of ``--repeat``, against the baseline measured in the
same run on the same payload: ``json.dumps`` of the request as plain dicts and lists (what
the SDK does with it anyway), also after a ``gc.collect()``, best of the same number.

Per target (``claude-opus-5-5`` with thinking blocks on Anthropic; Chat and Responses on
``gpt-5.6``; Gemini) and per history shape:

* ``short``: one-line user texts, a short file read per round (the shape of
  compile_steady.py);
* ``real``: tool results of real size, 3-9 KB of JSON from the catalogs in
  ../shared/data (deterministic slices), and 1.5 KB of thinking per call on Anthropic;

it measures:

* **steady**: the ledger holds the conversation; append the model's turn and a tool
  result, compile;
* **cold**: a conversation never sent (an imported history): ``set_history`` + compile,
  over message objects built for that compile (built untimed, as the host builds them);
* **resume**: a new session over the same tools (created and registered beforehand, as a
  worker that keeps its catalog loaded), then ``restore`` of the stored snapshot text
  (read by the restore, which keeps it: the history messages it vouches for are built
  when read), append the new turn, compile: the conversation picked up from a store;
  **resume json**: the same with ``json.loads`` of the text by the host and ``restore``
  of the dict (which the restore must not keep: every message is built);
* **sync**: the same through `SessionSync` over a `SQLiteSessionStore` file (``load_into``,
  append, compile, ``save`` of the turn's delta), against **store**: the store's own
  ``load`` and ``append`` of that delta (the raw reads and writes of the same bytes).

The snapshot's size is reported beside the payload's. Targets (issue 27): resume <= 2x
and cold <= 1x ``json.dumps`` of the payload; sync <= 2x store.

``--cpu``: time with ``time.process_time`` (this process's CPU time) instead of the wall
clock, for a machine shared with other work, where the wall clock also counts the time
slices other processes take; the store's file I/O waits are then not counted.

``--cold-only``: steady and cold compiles only (resume and sync print 0). ``--no-fastjson``:
canonical JSON written and stored JSON read by ``json`` alone, as without the ``fastjson``
extra (orjson writes, msgspec reads).

``--parts``: also a resume's parts apart, best of ``--repeat`` each: ``json.loads`` of the
snapshot, ``restore`` of the decoded dict, ``restore`` of the text (its read included),
and the first compile after that (a new turn appended, untimed, between).

``--signed``: the snapshot is signed (``SnapshotKeys``, bound to the session id) and
restored with the keys, and the store is built with them (it signs what it writes and
checks what it loads, signed head included), as a host that signs its snapshots runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextchef import (
    ContextChef,
    SnapshotKeys,
    ToolCall,
    ToolResult,
    assistant,
    tool_results,
    user,
)
from contextchef._records import plain
from contextchef.history._messages import Message, ReasoningPart
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.stores._store import snapshot_delta
from contextchef.tools._catalogs import load_catalog

SHARED = Path(
    os.environ.get("CONTEXTCHEF_SHARED_DATA") or Path(__file__).parents[2] / "shared/data"
)
TARGETS = {
    "anthropic": "claude-opus-5-5",
    "openai": "gpt-5.6",
    "responses": "gpt-5.6",
    "gemini": "gemini-3-pro",
}
THINKING = {"type": "enabled", "budget_tokens": 4096}
SIGNED: dict[str, SnapshotKeys | None] = {"keys": None}  # --signed: the keys
CLOCK: dict[str, Callable[[], float]] = {"now": time.perf_counter}  # --cpu: process_time
COLD_ONLY = {"on": False}  # --cold-only: steady and cold compiles, no resume or sync
PARTS_SHOWN = ("part_loads", "part_restore", "part_text", "part_first")
PARTS = {"on": False}  # --parts: a resume's parts apart (json.loads, restore, first compile)


def corpus() -> str:
    """Deterministic text for real-sized tool results: the catalogs' JSON, sorted by name."""
    paths = sorted((SHARED / "catalogs").glob("*.json"))
    return "".join(p.read_text("utf-8") for p in paths)


TEXT = corpus()


def result_text(r: int, real: bool) -> str:
    if not real:
        return f"def f{r}(x):\n" + "    y\n" * 60
    size = 3000 + (r * 2654435761) % 6000  # 3-9 KB
    start = (r * 40503) % (len(TEXT) - size)
    return TEXT[start : start + size]


def turn(r: int, target: str, real: bool) -> list[Message]:
    """The model's turn with one call, and its result (2 messages)."""
    parts: list[Any] = []
    if target == "anthropic":
        thought = ("Check the caller before the edit; the loop bound looks off. " * 25)[:1500]
        parts.append(
            ReasoningPart(
                provider="anthropic",
                text=thought if real else "",
                provider_data={
                    "provider": "anthropic",
                    "block": {
                        "type": "thinking",
                        "thinking": thought if real else "",
                        "signature": f"sig{r:06d}" * 40,
                    },
                },
            )
        )
    call = ToolCall(id=f"call_{r:06d}", name="filesystem__read_file", arguments={"path": f"{r}.py"})
    parts.append(call)
    result = ToolResult(call_id=call.id, name=call.name, content=result_text(r, real))
    return [Message(role="assistant", parts=tuple(parts)), tool_results([result])]


def history(size: int, target: str, real: bool) -> list[Message]:
    out: list[Message] = []
    for r in range(size // 4):
        out.append(user(f"step {r}: look at src/{r}.py and fix the failing test"))
        out.extend(turn(r, target, real))
        out.append(assistant(f"fixed step {r}: the off-by-one in the loop bound"))
    out.append(user("next: the flaky test in src/last.py"))
    return out


def new_session() -> ContextChef:
    chef = ContextChef(defer=["github__*"])
    for name in ("mcp-filesystem", "github"):
        chef.register_tools(load_catalog(SHARED / "catalogs" / f"{name}.json").tools)
    chef.set_system_prompt("You are a careful coding agent.")
    return chef


def compile_for(chef: ContextChef, target: str) -> Any:
    extra = {"thinking": THINKING} if target == "anthropic" else None
    return chef.compile(target, model=TARGETS[target], max_tokens=8192, extra=extra)


def timed(prepare: Callable[[], Any], run: Callable[[Any], Any], repeat: int) -> list[float]:
    """`run(prepare())` timed in ms, `repeat` times, a ``gc.collect()`` before each."""
    out: list[float] = []
    for _ in range(repeat):
        arg = prepare()
        gc.collect()
        now = CLOCK["now"]
        t0 = now()
        run(arg)
        out.append((now() - t0) * 1000)
    return out


def measure(target: str, size: int, real: bool, repeat: int) -> dict[str, float]:
    messages = history(size, target, real)
    chef = new_session()
    chef.set_history(messages)
    payload = compile_for(chef, target).payload
    for k in range(4):  # a few answered turns: the ledger holds the conversation
        chef.append(*turn(100_000 + k, target, real))
        payload = compile_for(chef, target).payload
    mutable = plain(payload)
    dumps = timed(lambda: None, lambda _: json.dumps(mutable), repeat)
    counter = iter(range(200_000, 300_000))

    def steady(_: object) -> None:
        chef.append(*turn(next(counter), target, real))
        compile_for(chef, target)

    steady_ms = timed(lambda: None, steady, repeat)
    keys = SIGNED["keys"]
    trust: dict[str, Any] = {"keys": keys, "session_id": "s"} if keys else {}
    stored = json.dumps(chef.snapshot(**trust))

    def resume(worker: ContextChef) -> None:
        worker.restore(stored, allow_unsigned=keys is None, **trust)
        worker.append(*turn(next(counter), target, real))
        compile_for(worker, target)

    def resume_json(worker: ContextChef) -> None:
        worker.restore(json.loads(stored), allow_unsigned=keys is None, **trust)
        worker.append(*turn(next(counter), target, real))
        compile_for(worker, target)

    def cold(made: tuple[ContextChef, list[Message]]) -> None:
        worker, imported = made
        worker.set_history(imported)
        compile_for(worker, target)

    def worker() -> ContextChef:
        fresh = new_session()
        assert fresh.view is not None  # the tool view is the catalog's cost, not the turn's
        return fresh

    resume_ms = timed(worker, resume, repeat) if not COLD_ONLY["on"] else [0.0]
    resume_json_ms = timed(worker, resume_json, repeat) if not COLD_ONLY["on"] else [0.0]
    parts = resume_parts(stored, worker, target, real, repeat, trust)
    # each cold compile gets message objects no session has seen (an imported history; the
    # host builds them, untimed), so nothing cached on a message by an earlier compile helps
    cold_ms = timed(lambda: (worker(), history(size, target, real)), cold, repeat)
    sync_ms, store_ms = (
        synced(chef, target, real, worker, repeat) if not COLD_ONLY["on"] else ([0.0], [1.0])
    )
    return {
        "payload_kb": len(json.dumps(mutable)) / 1024,
        "snapshot_kb": len(stored) / 1024,
        "dumps": min(dumps),
        "steady": statistics.median(steady_ms),
        "cold": statistics.median(cold_ms),
        "cold_best": min(cold_ms),
        "resume": statistics.median(resume_ms),
        "resume_json": statistics.median(resume_json_ms),
        "sync": statistics.median(sync_ms),
        "store": statistics.median(store_ms),
        **{f"part_{k}": min(v) for k, v in parts.items()},
    }


def resume_parts(
    stored: str,
    worker: Callable[[], ContextChef],
    target: str,
    real: bool,
    repeat: int,
    trust: dict[str, Any],
) -> dict[str, list[float]]:
    """A resume's parts apart (``--parts``), ms, each after a ``gc.collect()``.

    ``loads``: ``json.loads`` of the snapshot text; ``restore``: `ContextChef.restore`
    of it; ``text``: `ContextChef.restore` of the text, into another new session;
    ``first``: the compile after that, a new turn appended (untimed) in between.
    """
    out: dict[str, list[float]] = {"loads": [], "restore": [], "text": [], "first": []}
    if not PARTS["on"]:
        return {k: [0.0] for k in out}
    counter = iter(range(500_000, 600_000))
    now = CLOCK["now"]
    for _ in range(repeat):
        chef = worker()
        gc.collect()
        t0 = now()
        decoded = json.loads(stored)
        t1 = now()
        gc.collect()
        t2 = now()
        chef.restore(decoded, allow_unsigned=not trust, **trust)
        t3 = now()
        chef = worker()
        gc.collect()
        t6 = now()
        chef.restore(stored, allow_unsigned=not trust, **trust)
        t7 = now()
        chef.append(*turn(next(counter), target, real))
        gc.collect()
        t4 = now()
        compile_for(chef, target)
        t5 = now()
        times = (t1 - t0, t3 - t2, t7 - t6, t5 - t4)
        for key, ms in zip(("loads", "restore", "text", "first"), times, strict=True):
            out[key].append(ms * 1000)
    return out


def synced(
    chef: ContextChef, target: str, real: bool, worker: Callable[[], ContextChef], repeat: int
) -> tuple[list[float], list[float]]:
    """A `SessionSync` turn, and the store's own load + append of the same delta (ms)."""
    base = chef.snapshot()
    counter = iter(range(300_000, 400_000))
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteSessionStore(Path(folder) / "sessions.db", keys=SIGNED["keys"])
        store.snapshot("s", base, expected_version=0)

        def fresh() -> ContextChef:  # the stored session back to its base, a new worker
            store.snapshot("s", base, expected_version=store.load("s").version)  # type: ignore[union-attr]
            return worker()

        def turn_of(chef: ContextChef) -> None:
            sync = SessionSync(store, "s")
            sync.load_into(chef)
            chef.append(*turn(next(counter), target, real))
            compile_for(chef, target)
            sync.save(chef)

        sync_ms = timed(fresh, turn_of, repeat)
        delta = snapshot_delta(base, store.load("s").snapshot)  # type: ignore[union-attr]

        def raw(_: object) -> None:
            stored = store.load("s")
            assert stored is not None
            store.append("s", delta, expected_version=stored.version)

        store_ms = timed(fresh, raw, repeat)
    return sync_ms, store_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--shapes", default="short,real")
    parser.add_argument("--signed", action="store_true", help="signed snapshots, keyed store")
    parser.add_argument("--cpu", action="store_true", help="CPU time (process_time), not wall")
    parser.add_argument("--cold-only", action="store_true", help="no resume or sync timings")
    parser.add_argument("--parts", action="store_true", help="a resume's parts, best of --repeat")
    parser.add_argument(
        "--no-fastjson", action="store_true", help="JSON by json only (no orjson, no msgspec)"
    )
    args = parser.parse_args()
    if args.cpu:
        CLOCK["now"] = time.process_time
    COLD_ONLY["on"] = args.cold_only
    PARTS["on"] = args.parts and not args.cold_only
    if args.no_fastjson:
        from contextchef import _json, _json_read

        _json.__dict__.setdefault("FAST_JSON", [])[:] = [None]
        _json_read.__dict__.setdefault("FAST_DECODE", [])[:] = [None]
    if args.signed:
        SIGNED["keys"] = SnapshotKeys({"bench": b"k" * 32})
    logging.getLogger("contextchef").setLevel(logging.ERROR)  # histories built by hand
    print(
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, {os.cpu_count()} cores."
    )
    print(
        f"Load before: {os.getloadavg()[0]:.1f}. Command: `python benchmarks/resume.py "
        f"--messages {args.messages} --repeat {args.repeat}"
        f"{' --signed' if args.signed else ''}{' --cpu' if args.cpu else ''}"
        f"{' --cold-only' if args.cold_only else ''}{' --parts' if PARTS['on'] else ''}"
        f"{' --no-fastjson' if args.no_fastjson else ''}`.\n"
    )
    print(
        "| target | shape | payload KB | snapshot KB | json.dumps ms | steady ms (x) | "
        "cold ms (x) | cold best ms (x) | resume ms (x) | resume json ms (x) | store ms | "
        "sync ms (x store) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    measured = []
    for real in [shape == "real" for shape in args.shapes.split(",")]:
        for target in args.targets.split(","):
            m = measure(target, args.messages, real, args.repeat)
            measured.append((target, real, m))
            d = m["dumps"]
            print(
                f"| {target} | {'real' if real else 'short'} | {m['payload_kb']:.0f} | "
                f"{m['snapshot_kb']:.0f} | {d:.2f} | {m['steady']:.2f} ({m['steady'] / d:.2f}x) | "
                f"{m['cold']:.1f} ({m['cold'] / d:.1f}x) | "
                f"{m['cold_best']:.1f} ({m['cold_best'] / d:.1f}x) | "
                f"{m['resume']:.1f} ({m['resume'] / d:.1f}x) | "
                f"{m['resume_json']:.1f} ({m['resume_json'] / d:.1f}x) | {m['store']:.1f} | "
                f"{m['sync']:.1f} ({m['sync'] / m['store']:.1f}x) |"
            )
    if PARTS["on"]:
        print(
            "\nA resume's parts, best of the repeats (ms, x json.dumps of the payload):\n\n"
            "| target | shape | json.dumps | json.loads snapshot | restore dict | restore text | "
            "first compile |\n|---|---|---:|---:|---:|---:|---:|"
        )
        for target, real, m in measured:
            d = m["dumps"]
            print(
                f"| {target} | {'real' if real else 'short'} | {d:.2f} | "
                + " | ".join(f"{m[k]:.1f} ({m[k] / d:.1f}x)" for k in PARTS_SHOWN)
                + " |"
            )
    print(f"\nLoad after: {os.getloadavg()[0]:.1f}.")


if __name__ == "__main__":
    main()
