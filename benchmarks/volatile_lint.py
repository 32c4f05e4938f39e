"""Cost of the volatile-value lint at registration, against json.dumps of the same schemas.

Every tool of ../shared/data/catalogs is linted (description and schema strings) with a
fixed clock; the baseline is `json.dumps` of each tool's input schema, measured in the
same run. Prints a Markdown table row. Then a scaling table: prompts made of N repeated
values (dates near the clock, times of day, hex ids), lint time against json.dumps of the
same text: the lint must stay linear in the text's length (it was quadratic in the number
of values found before 2026-12-03: 88 KB of dates took 3.3 s).

    python benchmarks/volatile_lint.py [--repeat N]
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import time
from pathlib import Path

from contextchef.tools._catalogs import load_catalog
from contextchef.tools._lint import lint_system, lint_tool

SHARED = Path(
    os.environ.get("CONTEXTCHEF_SHARED_DATA", Path(__file__).parents[2] / "shared" / "data")
)
TODAY = datetime.date(2026, 12, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    tools = [t for p in sorted((SHARED / "catalogs").glob("*.json")) for t in load_catalog(p).tools]
    lint, dumps, found = [], [], 0
    for _ in range(args.repeat):
        start = time.perf_counter()
        found = sum(
            len(lint_tool(t.name, t.description, t.input_schema, today=TODAY)) for t in tools
        )
        lint.append(time.perf_counter() - start)
        start = time.perf_counter()
        for t in tools:
            json.dumps(dict(t.input_schema))
        dumps.append(time.perf_counter() - start)
    a, b = statistics.median(lint), statistics.median(dumps)
    machine = f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} cores"
    print(f"Machine: {machine}.")
    print("| tools | findings | lint ms (median) | us per tool | json.dumps ms | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    per_tool = a / len(tools) * 1e6
    row = [len(tools), found, f"{a * 1000:.1f}", f"{per_tool:.0f}", f"{b * 1000:.1f}"]
    print("| " + " | ".join(str(x) for x in row) + f" | {a / b:.1f}x |")
    scaling()


def scaling() -> None:
    """Lint time of prompts of N repeated values: linear in N (best of 3, cold GC)."""
    print()
    print("| value | repeats | chars | findings | lint ms | json.dumps ms | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for value in ("2026-12-03 ", "at 12:00:05 ", "build 9f8e7d6c5b4a3f2e1 "):
        for n in (1_000, 4_000, 16_000):
            text = value * n
            lint, dumps = [], []
            for _ in range(3):
                gc.collect()
                start = time.perf_counter()
                found = len(lint_system(text, today=TODAY))
                lint.append(time.perf_counter() - start)
                start = time.perf_counter()
                json.dumps(text)
                dumps.append(time.perf_counter() - start)
            a, b = min(lint), min(dumps)
            row = [repr(value.strip()), n, len(text), found, f"{a * 1000:.1f}", f"{b * 1000:.2f}"]
            print("| " + " | ".join(str(x) for x in row) + f" | {a / b:.0f}x |")


if __name__ == "__main__":
    main()
