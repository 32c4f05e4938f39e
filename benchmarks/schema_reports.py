"""What the per-tool schema reports (issue 12) add to registering a large catalog.

Run:  python benchmarks/schema_reports.py [--repeat 5]

Every tool of ../shared/data (catalogs and retrieval sets, about 7,700) is registered in
one fresh session, with fresh `Tool` objects each time (reports are cached on the tool,
so a second session over the same tools pays nothing):

* **with reports**: `ContextChef.register_tools` as shipped (the volatile lint, then the
  Gemini translation of each schema, kept as `ContextChef.schema_reports`);
* **baseline**, same run: the same registration with the report hook removed (only the
  lint), so the difference is the reports' cost;
* **shared tools**: a session registering the same `Tool` objects again (reports cached).

Prints the median of ``--repeat`` runs of each, the ratio, and how many tools Gemini's
dialect changes.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from contextchef import ContextChef, load_catalog

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))


def all_tools() -> list[Any]:
    files = sorted((DATA / "retrieval").glob("*.catalog.json"))
    files += sorted((DATA / "catalogs").glob("*.json"))
    tools: list[Any] = []
    for path in files:
        tools += load_catalog(path, server=path.name.split(".")[0], repair_schemas=True).tools
    return tools


def register(tools: list[Any], *, reports: bool, fresh: bool = True) -> tuple[float, ContextChef]:
    if fresh:  # no cached reports: every schema is checked (and translated where needed)
        tools = [t.replace() for t in tools]
    chef = ContextChef(default_defer=True, volatile_lint="off")
    if not reports:
        chef._tools.lint = lambda tools, batch: (
            None
        )  # the lint is off: this removes only the reports
    start = time.perf_counter()
    chef.register_tools(tools)
    return time.perf_counter() - start, chef


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tools = all_tools()
    register(tools, reports=True)  # warm imports and caches shared by every run
    with_reports, baseline, shared = [], [], []
    chef = None
    for _ in range(args.repeat):  # interleaved, so machine load hits both alike
        seconds, chef = register(tools, reports=True)
        with_reports.append(seconds)
        baseline.append(register(tools, reports=False)[0])
        shared.append(register(tools, reports=True, fresh=False)[0])
    assert chef is not None
    changed = chef.schema_reports
    a, b = statistics.median(with_reports), statistics.median(baseline)
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"tools registered: {len(tools):,}")
    print(f"register_tools with reports: median {a * 1000:.0f} ms ({args.repeat} runs)")
    print(f"baseline without reports:    median {b * 1000:.0f} ms")
    print(
        f"ratio: {a / b:.2f}x (+{(a - b) * 1000:.0f} ms, {(a - b) / len(tools) * 1e6:.1f} us/tool)"
    )
    print(f"same Tools again (reports cached): median {statistics.median(shared) * 1000:.0f} ms")
    refs = sum(1 for r in changed if r.refs_resolved)
    print(f"tools whose Gemini schema changes: {len(changed):,} ({refs:,} with $ref inlined)")


if __name__ == "__main__":
    main()
