"""Search robustness figures for issue 12: near-name lookup at scale, CJK false hits.

Run:  python benchmarks/robustness.py [--copies 3] [--names 200]

Measured side by side in one run:
  * near-name lookup (a misspelled name in ``tool_search``'s ``tool_names``) over every
    tool of shared/data pooled, repeated `--copies` times under distinct servers (about
    23,000 tools at 3 copies): p50 / p95 latency of `ToolIndex.near_names` (trigram
    candidates, then difflib) against the previous full difflib scan (baseline, inlined
    below), and how often the two return the same hits;
  * CJK matching on ACEBench-zh: recall@5 / MRR and the mean number of tools a query
    hits (positive score), with the bigram rule (a tool must share a CJK bigram or a
    word with the query) and without it (one shared character is enough).
"""

from __future__ import annotations

import argparse
import difflib
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

from contextchef import load_catalog
from contextchef.search import _index
from contextchef.search._index import SearchHit, ToolIndex
from contextchef.search._retrieval import bm25_ranker, evaluate, load_queries
from contextchef.tools._tool import Tool

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))


def pooled(copies: int) -> list[tuple[Tool, str]]:
    files = sorted((DATA / "retrieval").glob("*.catalog.json"))
    files += sorted((DATA / "catalogs").glob("*.json"))
    entries: list[tuple[Tool, str]] = []
    for copy in range(copies):
        for path in files:
            server = f"{path.name.split('.')[0]}{copy}"
            cat = load_catalog(path, server=server, repair_schemas=True)
            entries += [(t, f"{server}__{t.name}") for t in cat.tools]
    return entries


def full_scan(entries: list[tuple[Tool, str]], name: str, limit: int) -> list[SearchHit]:
    """The lookup before the trigram index: difflib over every entry."""
    low, cutoff = name.lower(), 0.8
    matcher = difflib.SequenceMatcher(None, "", low)
    scored = []
    for i, (tool, wire) in enumerate(entries):
        best = 0.0
        for candidate in {wire.lower(), tool.name.lower()}:
            matcher.set_seq1(candidate)
            if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
                best = max(best, matcher.ratio())
        if best >= cutoff:
            scored.append((-best, i))
    return [
        SearchHit(tool=entries[i][0], wire_name=entries[i][1], score=-neg)
        for neg, i in sorted(scored)[:limit]
    ]


def misspelled(entries: list[tuple[Tool, str]], count: int) -> list[str]:
    rng = random.Random(12)
    out = []
    for tool, _ in rng.sample(entries, count):
        name = tool.name
        i = rng.randrange(len(name))
        edit = rng.choice(("drop", "swap", "double"))
        if edit == "drop" and len(name) > 3:
            name = name[:i] + name[i + 1 :]
        elif edit == "swap" and i < len(name) - 1:
            name = name[:i] + name[i + 1] + name[i] + name[i + 2 :]
        else:
            name = name[:i] + name[i] + name[i:]
        out.append(name)
    return out


def timed(fn, names: list[str]) -> tuple[list[float], list[list[str]]]:  # type: ignore[no-untyped-def]
    times, results = [], []
    for name in names:
        start = time.perf_counter()
        hits = fn(name)
        times.append((time.perf_counter() - start) * 1000)
        results.append([h.wire_name for h in hits])
    return times, results


def pct(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"{statistics.median(ordered):.2f} / {ordered[int(0.95 * (len(ordered) - 1))]:.2f}"


def cjk_rows() -> list[str]:
    catalog = load_catalog(DATA / "retrieval" / "acebench_zh.catalog.json", repair_schemas=True)
    queries = load_queries(DATA / "retrieval" / "acebench_zh.queries.jsonl")
    index = ToolIndex([(t, t.name) for t in catalog.tools])
    rows = []
    rule = _index._is_cjk_char
    for label, check in (("bigram or word (new)", rule), ("any character (before)", None)):
        _index._is_cjk_char = check or (lambda token: False)  # type: ignore[assignment]
        try:
            scores = evaluate(queries, bm25_ranker(catalog))
            hits = [len(index.search([q.query], limit=10_000)) for q in queries]
        finally:
            _index._is_cjk_char = rule  # type: ignore[assignment]
        rows.append(
            f"| {label} | {scores['queries']:.0f} | {scores['recall@1']:.3f} | "
            f"{scores['recall@5']:.3f} | {scores['mrr']:.3f} | {statistics.mean(hits):.1f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--names", type=int, default=200)
    args = parser.parse_args()
    entries = pooled(args.copies)
    index = ToolIndex(entries)
    names = misspelled(entries, args.names)
    index.near_names("warm up", limit=5)  # builds the name index once
    start = time.perf_counter()
    ToolIndex(entries).near_names("warm up", limit=5)
    build = time.perf_counter() - start
    new_t, new_r = timed(lambda n: index.near_names(n, limit=5), names)
    old_t, old_r = timed(lambda n: full_scan(entries, n, 5), names)
    same = sum(a == b for a, b in zip(new_r, old_r, strict=True)) / len(names)
    ratio = statistics.median(old_t) / statistics.median(new_t)
    machine = f"{platform.machine()} {platform.processor() or ''}".strip()
    print(f"machine: {machine}, {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"command: python benchmarks/robustness.py --copies {args.copies} --names {args.names}")
    print(f"\nNear-name lookup, {len(entries):,} tools, {len(names)} misspelled names")
    print(f"(first lookup, index build + BM25 build included: {build:.2f} s)\n")
    print("| lookup | p50 / p95 ms | same hits as the full scan |")
    print("|---|---:|---:|")
    print(f"| trigram candidates + difflib (new) | {pct(new_t)} | {same:.1%} |")
    print(f"| difflib over every tool (before) | {pct(old_t)} | - |")
    print(f"\nmedian speed-up: {ratio:.0f}x")
    print("\nCJK matching on ACEBench-zh\n")
    print("| a tool matches when it shares | queries | recall@1 | recall@5 | MRR | tools hit |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in cjk_rows():
        print(row)


if __name__ == "__main__":
    main()
