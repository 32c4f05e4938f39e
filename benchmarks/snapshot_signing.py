"""Cost of signing and checking a snapshot, against restoring it (issue 23).

A session of N turns (a user message, a tool call and its result, an answer, each
compiled for Anthropic) is snapshotted; the script times, per snapshot size, `sign`
(HMAC-SHA256 over the canonical form), `verify`, and a whole `restore` (which verifies
first), each the median of `--repeat` runs. Prints a Markdown table.

    python benchmarks/snapshot_signing.py [--turns 10 50 200] [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable

from contextchef import (
    ContextChef,
    SnapshotKeys,
    ToolCall,
    ToolResult,
    assistant,
    tool_results,
    user,
)
from contextchef._signing import sign, verify

KEYS = SnapshotKeys({"k": b"k" * 32})


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: File to read.
    """
    return path


def make() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([read_file])
    return chef


def session(turns: int) -> ContextChef:
    chef = make()
    for n in range(turns):
        chef.append(user(f"Read file {n} and summarize it, please. " * 4))
        chef.compile("anthropic", model="claude-opus-5-5")
        call = ToolCall(id=f"c{n}", name="read_file", arguments=json.dumps({"path": f"{n}.py"}))
        chef.append(assistant("Reading.", tool_calls=[call]))
        result = ToolResult(call_id=f"c{n}", name="read_file", content="x = 1\n" * 200)
        chef.append(tool_results([result]))
        chef.compile("anthropic", model="claude-opus-5-5")
        chef.append(assistant(f"File {n} sets x to 1, two hundred times."))
    return chef


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print(f"Machine: {platform.platform()}, Python {platform.python_version()}, ", end="")
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print("\n| turns | snapshot KB | sign ms | verify ms | restore ms (signed) | verify share |")
    print("|---:|---:|---:|---:|---:|---:|")
    for turns in args.turns:
        snap = json.loads(json.dumps(session(turns).snapshot(keys=KEYS)))
        size = len(json.dumps(snap).encode()) / 1024
        signing = median_ms(lambda s=snap: sign(s, KEYS), args.repeat)
        checking = median_ms(lambda s=snap: verify(s, KEYS), args.repeat)
        restoring = median_ms(lambda s=snap: make().restore(s, keys=KEYS), args.repeat)
        share = checking / restoring
        print(
            f"| {turns} | {size:,.0f} | {signing:.2f} | {checking:.2f} | {restoring:.1f} "
            f"| {share:.0%} |"
        )


if __name__ == "__main__":
    main()
