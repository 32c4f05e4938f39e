"""What a store write and load cost at the store itself (no chef): the compare-and-set's price.

Run:  python benchmarks/store_write.py [--writes 2000] [--repeat 5] [--redis-url URL]
      (set PYTHONPATH to another checkout's src to measure that one: "before")

One session of a small base snapshot ({"history": [...]}, 2 KB) gets `--writes` appends of
a 200-byte delta, then is loaded `--writes` times; each measured as wall time per call (µs),
median of `--repeat` runs, `gc.collect()` before each, on SQLite (a file in a temporary
directory) and, given `--redis-url`, Redis. Writes pass ``lineage=`` (the token the
session's load returned) when the store takes it (lineage tokens), as `SessionSync` does.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import contextchef
from contextchef import RedisSessionStore, SQLiteSessionStore

BASE = {"history": [{"role": "user", "parts": [{"text": "x" * 100}]}] * 16}
DELTA = [["extend", ["history"], [{"role": "assistant", "parts": [{"text": "y" * 150}]}]]]


def run(store: Any, sid: str, writes: int) -> tuple[float, float]:
    store.delete(sid)
    store.snapshot(sid, BASE, expected_version=0)
    stored = store.load(sid)
    checked = "lineage" in inspect.signature(store.append).parameters
    extra = {"lineage": stored.lineage} if checked else {}
    gc.collect()
    start = time.perf_counter()
    for version in range(1, writes + 1):
        store.append(sid, DELTA, expected_version=version, **extra)
    append_us = (time.perf_counter() - start) / writes * 1e6
    store.snapshot(sid, BASE, expected_version=writes + 1, **extra)  # a short log to load
    gc.collect()
    start = time.perf_counter()
    for _ in range(writes):
        store.load(sid)
    load_us = (time.perf_counter() - start) / writes * 1e6
    return append_us, load_us


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--redis-url")
    args = parser.parse_args()
    print(f"contextchef from {Path(contextchef.__file__).parent}")
    print(f"{platform.platform()}, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as folder:
        stores: list[tuple[str, Any]] = [("sqlite", SQLiteSessionStore(Path(folder) / "s.db"))]
        if args.redis_url:
            stores.append(("redis", RedisSessionStore(args.redis_url, prefix="bench-write:")))
        for name, store in stores:
            runs = [run(store, "bench", args.writes) for _ in range(args.repeat)]
            append_us = statistics.median(r[0] for r in runs)
            load_us = statistics.median(r[1] for r in runs)
            print(f"{name}: append {append_us:.1f} µs, load {load_us:.1f} µs (medians)")
            store.delete("bench")


if __name__ == "__main__":
    main()
