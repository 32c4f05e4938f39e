"""Many sessions over one catalog: memory and time per session, runtime tools at scale.

Run:  python benchmarks/session_scale.py [--sessions 1000] [--skip-runtime]

* **memory per session**: the 12 real MCP/harness catalogs of ../shared/data/catalogs
  (286 tools) are loaded once; then ``--sessions`` sessions are created over them (each
  registers the catalogs, gets a system prompt and a user turn, compiles its first
  Anthropic request) and kept alive; ``tracemalloc`` reports the memory they add, per
  session. Measured twice: without a search, and with one ``tool_search`` per session
  (which builds the session's BM25 index).
* **time per session**: creating a session and compiling its first request, against
  the baseline measured in the same run: ``json.dumps`` of that request's payload.
  Target (issue 14): <= 10x.
* **runtime tool at scale**: a session holding every tool of ../shared/data (catalogs
  and retrieval sets, about 7,700) three times over under different server names
  (about 23,000), one search done; then one runtime tool is registered and searched
  for until ``tool_search`` finds it; seven in a row, median reported (a single
  timing at this size is dominated by the garbage collector's pauses). Target (issue
  14): <= 5 ms.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from contextchef import ContextChef, DeferredConfig, ToolCall, load_catalog, user

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))


def catalogs() -> list[Any]:
    paths = sorted((DATA / "catalogs").glob("*.json"))
    return [load_catalog(p, server=p.stem) for p in paths]  # as the CLI: by file name


def session(cats: list[Any], search: bool) -> tuple[ContextChef, Any]:
    chef = ContextChef(default_defer=True)
    for cat in cats:
        chef.register_catalog(cat)
    chef.set_system_prompt("You are a careful engineering agent.")
    chef.append(user("Open an issue about the flaky test."))
    request = chef.compile("anthropic", model="claude-opus-5-5")
    if search:
        chef.execute(ToolCall(id="s", name="tool_search", arguments={"queries": ["issue"]}))
    return chef, request


def memory_per_session(cats: list[Any], count: int, search: bool) -> float:
    session(cats, search)  # warm caches shared by every session (imports, stems)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [session(cats, search)[0] for _ in range(count)]
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(kept) == count
    return (after - before) / count


def time_per_session(cats: list[Any], repeat: int) -> tuple[float, float]:
    made, dumps = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        _, request = session(cats, search=False)
        made.append(time.perf_counter() - start)
        start = time.perf_counter()
        json.dumps(request.payload)
        dumps.append(time.perf_counter() - start)
    return statistics.median(made), statistics.median(dumps)


def runtime_tool_ms(count: int = 7) -> tuple[int, float, float]:
    """(tools, first ms, median ms): `count` runtime tools, each registered then found."""
    tools = []
    files = sorted((DATA / "retrieval").glob("*.catalog.json"))
    files += sorted((DATA / "catalogs").glob("*.json"))
    for copy in range(3):
        for path in files:
            server = f"{path.name.split('.')[0]}_{copy}"
            tools += load_catalog(path, server=server, repair_schemas=True).tools
    chef = ContextChef(default_defer=True, deferred=DeferredConfig(always_meta_tools=True))
    chef.register_tools(tools)
    chef.execute(ToolCall(id="w", name="tool_search", arguments={"queries": ["warm up"]}))
    times = []
    for i in range(count):
        name = f"zorblax_report_{i}"
        start = time.perf_counter()
        chef.register_runtime_tool(
            {"name": name, "description": f"Summarise zorblax{i} telemetry for a cluster."}
        )
        call = ToolCall(id=f"r{i}", name="tool_search", arguments={"queries": [f"zorblax{i}"]})
        found = chef.execute(call)
        times.append((time.perf_counter() - start) * 1000)
        assert found.loaded and found.loaded[0] == name, found.result.content
    return len(tools), times[0], statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--skip-runtime", action="store_true")
    args = parser.parse_args()
    cats = catalogs()
    n_tools = sum(len(c.tools) for c in cats)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"catalog: {len(cats)} files, {n_tools} tools\n")
    print("| measure | value | baseline (same run) | ratio | target |")
    print("|---|---:|---:|---:|---|")
    for search in (False, True):
        per = memory_per_session(cats, args.sessions, search)
        label = "with one tool_search" if search else "no search"
        print(
            f"| memory per session, {args.sessions} sessions ({label}) | {per / 1024:.0f} KB "
            f"| | | <= 50 KB |"
        )
    made, dumps = time_per_session(cats, args.repeat)
    print(
        f"| new session + first compile (median of {args.repeat}) | {made * 1000:.1f} ms | "
        f"json.dumps of the request: {dumps * 1000:.2f} ms | {made / dumps:.0f}x | <= 10x |"
    )
    if not args.skip_runtime:
        count, first, median = runtime_tool_ms()
        print(
            f"| runtime tool registered -> found by tool_search ({count} tools; median of 7, "
            f"first {first:.1f} ms) | {median:.1f} ms | | | <= 5 ms |"
        )


if __name__ == "__main__":
    main()
