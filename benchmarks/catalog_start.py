"""A new session over a big catalog, tool_search through the gate, typo lookup (issue 27).

Run:  python benchmarks/catalog_start.py [--repeat 15] [--sizes 286,7726,23178] [--cpu]

Catalogs (read in place from ../shared/data, loaded once per process, as a worker
would): 286 tools = the 12 files of catalogs/; 7,726 = every catalog and retrieval
file; 23,178 = those three times over under other server names. Every timing has
``gc.collect()`` before it; figures are medians; baselines are measured in the same run.

* **create + first compile**: ``ContextChef(default_defer=True)``, the tools registered,
  a system prompt and a user turn, then the first Anthropic compile. Three ways to
  register: one list of every tool (a fresh list per session), one
  ``register_catalog`` per file, and one ``register_catalog`` of the list of files'
  catalogs (issue 27, item 3). Baseline: ``json.dumps`` of that request's payload.
  Target: <= 10x at 7.7k and 23k tools.
* **tool_search through the gate**: ``chef.execute`` of a ``tool_search`` call (gate,
  search, rendering the result text), p50 over 8 English queries x repeats. Baseline:
  bm25s (``BM25().index`` over the same documents, contextchef's tokens) scoring the
  same queries (tokenizing included) and taking the top 5. Target: <= 2x.
* **typo lookup**: ``ToolIndex.near_names`` of a misspelled tool name (one letter
  dropped), 50 names, p50, after the index is built. Target: <= 2 ms at 23k.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextchef import ContextChef, DeferredConfig, ToolCall, UsageError, load_catalog, user
from contextchef.search._index import _document, tokenize

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))

QUERIES = [
    "list open pull requests in a repository",
    "get the current weather forecast for a city",
    "read a text file from disk",
    "search issues by label",
    "convert currency amounts",
    "send an email to a colleague",
    "book a flight ticket",
    "take a screenshot of a web page",
]


def catalogs(size: int) -> list[Any]:
    if size <= 286:
        return [load_catalog(p, server=p.stem) for p in sorted((DATA / "catalogs").glob("*.json"))]
    files = sorted((DATA / "retrieval").glob("*.catalog.json"))
    files += sorted((DATA / "catalogs").glob("*.json"))
    copies = max(1, round(size / 7726))
    return [
        load_catalog(p, server=f"{p.name.split('.')[0]}_{c}", repair_schemas=True)
        for c in range(copies)
        for p in files
    ]


CLOCK = time.perf_counter  # --cpu: time.thread_time (a loaded machine preempts wall time)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = CLOCK()
    out = fn()
    return CLOCK() - start, out


def session(cats: list[Any], listed: list[Any] | None, *, joined: bool = False) -> Any:
    chef = ContextChef(default_defer=True)
    if listed is not None:
        chef.register_tools(listed)
    elif joined:
        chef.register_catalog(cats)
    else:
        for cat in cats:
            chef.register_catalog(cat)
    chef.set_system_prompt("You are a careful engineering agent.")
    chef.append(user("Open an issue about the flaky test."))
    return chef.compile("anthropic", model="claude-opus-5-5")


def start_rows(size: int, cats: list[Any], repeat: int) -> list[str]:
    tools = [t for cat in cats for t in cat.tools]
    rows = []
    ways = [("one list", tools, False), (f"{len(cats)} catalogs", None, False)]
    ways.append((f"{len(cats)} catalogs, one call", None, True))
    for how, listed, joined in ways:
        try:  # the first session of the process builds the shared state
            session(cats, listed, joined=joined)
        except UsageError:  # a tree before register_catalog took a list
            rows.append(f"| {len(tools):,} | {how} | n/a | | |")
            continue
        made, dumps = [], []
        for _ in range(repeat):
            # a fresh list of the same tools per session, as a host builds one; made
            # before the clock starts (copying 23k references is the host's work)
            fresh = None if listed is None else list(listed)
            seconds, request = timed(lambda f=fresh, j=joined: session(cats, f, joined=j))
            made.append(seconds)
            dumps.append(timed(lambda request=request: json.dumps(request.payload))[0])
        m, d = statistics.median(made), statistics.median(dumps)
        rows.append(f"| {len(tools):,} | {how} | {m * 1000:.2f} | {d * 1000:.3f} | {m / d:.1f}x |")
    return rows


def search_rows(cats: list[Any], repeat: int) -> list[str]:
    import bm25s
    import numpy as np

    tools = [t for cat in cats for t in cat.tools]
    chef = ContextChef(default_defer=True, deferred=DeferredConfig(always_meta_tools=True))
    chef.register_tools(tools)
    index = chef.view.index
    entries = [(t, chef.registry.wire_name_for(t)) for t in tools]
    names = [w for _, w in entries]
    chef.execute(ToolCall(id="w", name="tool_search", arguments={"queries": ["warm up"]}))
    retriever = bm25s.BM25()
    retriever.index([_document(t, w) or [w.lower()] for t, w in entries], show_progress=False)

    def theirs(q: str) -> list[str]:
        scores = retriever.get_scores(tokenize(q))
        return [names[i] for i in np.argsort(-scores)[:5]]

    calls = iter(range(10**9))

    def ours(q: str) -> Any:
        call = ToolCall(id=f"q{next(calls)}", name="tool_search", arguments={"queries": [q]})
        return chef.execute(call)

    gated, base = [], []
    for _ in range(repeat):
        for q in QUERIES:  # interleaved, so load hits both alike
            gated.append(timed(lambda q=q: ours(q))[0])
            base.append(timed(lambda q=q: theirs(q))[0])
    g, b = statistics.median(gated), statistics.median(base)
    rng = random.Random(1)
    typos = [t.name[:2] + t.name[3:] for t in rng.sample(tools, 50)]
    index.near_names(typos[0], limit=5)  # imports rapidfuzz (where used) once
    near = statistics.median(timed(lambda t=t: index.near_names(t, limit=5))[0] for t in typos)
    return [
        f"| {len(tools):,} | tool_search via chef.execute, p50 | {g * 1000:.3f} ms | "
        f"bm25s get_scores + top 5: {b * 1000:.3f} ms | {g / b:.1f}x |",
        f"| {len(tools):,} | typo lookup (near_names), p50 of 50 | {near * 1000:.3f} ms | | |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--sizes", default="286,7726,23178")
    parser.add_argument("--search-sizes", default="7726,23178")
    parser.add_argument("--cpu", action="store_true", help="CPU time of this thread, not wall")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.cpu else time.perf_counter
    clock = "CPU (thread_time)" if args.cpu else "wall (perf_counter)"
    print(f"`{' '.join(platform.uname())}`, nproc {os.cpu_count()}, clock: {clock}")
    print(f"uptime before: {subprocess.run(['uptime'], capture_output=True, text=True).stdout}")
    print("| tools | registered as | create + first compile ms | json.dumps ms | ratio |")
    print("|---:|---|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",") if s):
        for row in start_rows(size, catalogs(size), args.repeat):
            print(row, flush=True)
    print("\n| tools | measure | contextchef | baseline (same run) | ratio |")
    print("|---:|---|---:|---|---:|")
    for size in (int(s) for s in args.search_sizes.split(",") if s):
        for row in search_rows(catalogs(size), max(1, args.repeat // 3)):
            print(row, flush=True)
    print(f"\nuptime after: {subprocess.run(['uptime'], capture_output=True, text=True).stdout}")


if __name__ == "__main__":
    main()
