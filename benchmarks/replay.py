"""Replay every recorded transcript per strategy and target; the 50-turn cache scenario.

Usage: python benchmarks/replay.py [--catalog NAME ...]

1. Every transcript in ../shared/data/transcripts, its catalog enlarged with the GitHub
   MCP catalog (117 tools, so every replay has >= 100 tools), replayed on its own target
   and on every other target, for flat / naive / client / native (where the target and
   model have a deferral of their own). Prices: spec 002's multipliers (read 0.1x, write
   1.25x) at $3 per million input tokens; tokens are `estimate_tokens` estimates.
2. The 50-turn scenario of tests/session/cache_scenario.py on every target: cached share
   of input tokens, and the turns whose system or tools changed.

Prints Markdown for benchmarks/RESULTS.md. Values, not timings: the figures do not
depend on the machine (wall time is printed for information).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "session"))  # the scenario lives with its test

from cache_scenario import COMPACTION_TURN, run_scenario  # noqa: E402

from contextchef.analysis._replay import REPLAY_STRATEGIES, ReplayReport, replay  # noqa: E402
from contextchef.analysis._transcripts import load_recording  # noqa: E402
from contextchef.providers import TARGETS  # noqa: E402
from contextchef.tools._catalogs import load_catalog  # noqa: E402

SHARED = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", HERE.parent.parent / "shared" / "data"))


def _usd(report: ReplayReport, name: str) -> str:
    t = report.totals.get(name)
    return "n/a" if t is None else f"${t['cost_usd']:.4f} ({t['cached_share']:.0%})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--catalog", action="append", default=None)
    args = parser.parse_args()
    names = args.catalog or ["github"]
    extra = [t for n in names for t in load_catalog(SHARED / "catalogs" / f"{n}.json").tools]
    files = sorted((SHARED / "transcripts").glob("*.json"))
    recordings = [load_recording(p) for p in files]
    started = time.perf_counter()
    print(
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores. Command: `python benchmarks/replay.py`. Catalog added: "
        f"{', '.join(names)} ({len(extra)} tools).\n"
    )
    print(
        "Own target, per strategy: total input cost (cached share of input tokens est.); "
        "client/flat and naive/flat are cost ratios.\n"
    )
    print(
        "| transcript | target | requests | tools | flat | naive | client | native "
        "| client/flat | naive/flat |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    cross: dict[str, dict[str, list[float]]] = {t: {} for t in TARGETS}
    failures: list[str] = []
    for recording in recordings:
        for target in TARGETS:
            try:
                report = replay([recording], target=target, extra_tools=extra)
            except Exception as exc:  # a target this recording cannot be compiled for
                failures.append(f"{recording.name} on {target}: {type(exc).__name__}: {exc}")
                continue
            for name, t in report.totals.items():
                sums = cross[target].setdefault(name, [0.0, 0.0, 0.0, 0.0])
                sums[0] += t["cost_usd"]
                sums[1] += t["cache_read_tokens_est"]
                sums[2] += t["input_tokens_est"]
                sums[3] += t["requests"]
            if target != recording.target:
                continue
            flat = report.totals["flat"]["cost_usd"]
            info = report.transcripts[0]
            print(
                f"| {recording.name.removesuffix('.json')} | {target} | "
                f"{int(report.totals['flat']['requests'])} | {info['tools']} | "
                + " | ".join(_usd(report, s) for s in REPLAY_STRATEGIES)
                + f" | {report.totals['client']['cost_usd'] / flat:.3f}"
                + f" | {report.totals['naive']['cost_usd'] / flat:.3f} |"
            )
    print(
        "\nEvery transcript replayed on every target (cross-provider replays included), "
        "summed per target: total cost, cached share, requests.\n"
    )
    print("| target | " + " | ".join(REPLAY_STRATEGIES) + " |")
    print("|---|" + "---:|" * len(REPLAY_STRATEGIES))
    for target, rows in cross.items():
        cells = []
        for name in REPLAY_STRATEGIES:
            if name not in rows:
                cells.append("n/a")
                continue
            usd, read, total, n = rows[name]
            cells.append(f"${usd:.3f} ({read / total:.0%}, {int(n)} req.)")
        print(f"| {target} | " + " | ".join(cells) + " |")
    if failures:
        print("\nNot compiled:\n")
        for line in failures:
            print(f"- {line}")
    print(
        "\n50-turn scenario (client deferral; discoveries, blocklist, announcements, "
        f"runtime tool, compaction before turn {COMPACTION_TURN}):\n"
    )
    print(
        "| target | cached share | system/tools changed at turns | prefix broke at turns "
        "| total input tokens est. | cost |"
    )
    print("|---|---:|---|---|---:|---:|")
    for target in TARGETS:
        run = run_scenario(SHARED / "catalogs", target)
        changed = [
            i
            for i in range(1, len(run.requests))
            if (run.requests[i].segments["system"], run.requests[i].segments["tools"])
            != (run.requests[i - 1].segments["system"], run.requests[i - 1].segments["tools"])
        ]
        broke = [i for i, f in enumerate(run.figures) if f.cause]
        tokens = sum(f.input_tokens_est for f in run.figures)
        usd = sum(f.cost_usd for f in run.figures)
        print(
            f"| {target} | {run.cached_share:.1%} | {changed or 'none'} | {broke} | "
            f"{tokens:,} | ${usd:.4f} |"
        )
    print(f"\n(wall time {time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
