"""A worker that writes its whole snapshot back each turn, and `snapshot()` alone (issue 27).

Run:  python benchmarks/writeback.py [--messages 1000] [--repeat 7] [--targets ...] [--cpu]

`resume.py` times a worker that resumes through `SessionSync` (which saves the turn's
delta); a host that keeps snapshots in its own table writes the whole snapshot instead:

* **turn**: `restore(text)` of the stored snapshot in a new session (catalog registered
  beforehand), append the model's turn and a tool result, compile, ``json.dumps`` of
  `snapshot()`: everything the worker pays for the turn but the model call and its I/O;
* **snapshot after restore**: the last step alone, the turn done untimed before it;
* **snapshot, steady**: `snapshot()` of a session that has served every turn (a worker
  with sticky routing), after a turn.

Histories are `resume.py`'s (short messages and real-sized results, 1,000 messages), each
timing with ``gc.collect()`` before it, median of ``--repeat``; x = against ``json.dumps``
of the turn's payload in the same run (best of the same number).
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
import time
from collections.abc import Callable
from typing import Any

from resume import TARGETS, compile_for, history, new_session, turn  # this folder's

from contextchef._records import plain

CLOCK: dict[str, Callable[[], float]] = {"now": time.perf_counter}


def timed(prepare: Callable[[], Any], run: Callable[[Any], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        arg = prepare()
        gc.collect()
        t0 = CLOCK["now"]()
        run(arg)
        out.append((CLOCK["now"]() - t0) * 1000)
    return out


def measure(target: str, size: int, real: bool, repeat: int) -> dict[str, float]:
    chef = new_session()
    chef.set_history(history(size, target, real))
    compile_for(chef, target)
    for k in range(4):
        chef.append(*turn(100_000 + k, target, real))
        payload = compile_for(chef, target).payload
    stored = json.dumps(chef.snapshot())
    counter = iter(range(200_000, 300_000))
    mutable = plain(payload)
    dumps = min(timed(lambda: None, lambda _: json.dumps(mutable), repeat))

    def whole(worker: Any) -> None:
        worker.restore(stored, allow_unsigned=True)
        worker.append(*turn(next(counter), target, real))
        compile_for(worker, target)
        json.dumps(worker.snapshot())

    def resumed() -> Any:
        worker = new_session()
        worker.restore(stored, allow_unsigned=True)
        worker.append(*turn(next(counter), target, real))
        compile_for(worker, target)
        return worker

    def steady() -> Any:
        chef.append(*turn(next(counter), target, real))
        compile_for(chef, target)
        return chef

    return {
        "dumps": dumps,
        "turn": statistics.median(timed(new_session, whole, repeat)),
        "after": statistics.median(timed(resumed, lambda w: w.snapshot(), repeat)),
        "steady": statistics.median(timed(steady, lambda c: c.snapshot(), repeat)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--cpu", action="store_true", help="CPU time (process_time), not wall")
    args = parser.parse_args()
    if args.cpu:
        CLOCK["now"] = time.process_time
    logging.getLogger("contextchef").setLevel(logging.ERROR)
    print(
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, {os.cpu_count()} cores."
    )
    print(f"Load before: {os.getloadavg()[0]:.1f}.\n")
    print(
        "| target | shape | json.dumps ms | turn ms (x) | snapshot after restore ms (x) "
        "| snapshot, steady ms (x) |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for real in (False, True):
        for target in args.targets.split(","):
            m = measure(target, args.messages, real, args.repeat)
            d = m["dumps"]
            cells = " | ".join(f"{m[k]:.1f} ({m[k] / d:.1f}x)" for k in ("turn", "after", "steady"))
            print(f"| {target} | {'real' if real else 'short'} | {d:.2f} | {cells} |")
    print(f"\nLoad after: {os.getloadavg()[0]:.1f}.")


if __name__ == "__main__":
    main()
