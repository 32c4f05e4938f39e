"""Retrieval quality of every ranker on every set, dev and held-out, plus the weight sweeps.

Run:  python benchmarks/semantic_retrieval.py [--sets a,b] [--out FILE] [--skip-sweep]
                                               [--cold] [--latency-sample N]
Needs the semantic extra (pip install -e ".[semantic]"). Tool vectors come from the
default embedding cache (``--cold``: a temporary one, so the catalogs are embedded again).

Sets: the seven in shared/data/retrieval, each cut by `split_of` into ``dev`` (~70%, the
only part weights are tuned on) and ``held-out``; plus ``newcomer_probes``
(benchmarks/data/newcomer_probes.jsonl: 30 everyday requests for tools of the real MCP
catalogs in shared/data/catalogs, pooled as a session would name them,
``<server>__<tool>``; never tuned on, reported whole). Groups (two-level): LiveMCPBench's
MCP servers (described by its ``servers`` list), BFCL multi-turn's API classes, and the
probe catalog's servers; the other sets record none, so their two-level rankers rank as
their one-level base.

1. Sweeps (dev split only): recall@5 of the hybrid fusion for fixed BM25 weights ``w``,
   for ``w = 0.3`` with a long-query boost (``long+b``: ``w`` rising to ``0.3 + b`` from
   12 to 36 distinct query tokens, `RankerConfig.long_query_boost`), of ``bm25`` and that
   hybrid for open-request weights (``open=o``, `RankerConfig.open_request_weight`: a
   transcript's user turns after its last tool call scored again; every other row uses
   the default 0.75), and of
   ``two-level`` / ``hybrid-two-level`` for group weights ``g``, through the library's
   `fuse` and `lift` on precomputed BM25 scores, cosines and group scores.
2. Table: the library's rankers (`index_ranker`), recall@1/5 and MRR per split; query
   vectors are embedded once per set in a batch (the recall pass), then a latency pass
   times `--latency-sample` queries per set per ranker with the query cache cleared, so
   each timed query embeds its text.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from contextchef import load_catalog
from contextchef.search._index import ToolIndex, _is_cjk_char, tokenize
from contextchef.search._rankers import RankerConfig, covered, fuse, lift, normalized
from contextchef.search._retrieval import (
    LabelledQuery,
    evaluate,
    grouped,
    index_ranker,
    load_queries,
)
from contextchef.search._transcript import open_request, weighted
from contextchef.tools._catalogs import Catalog

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))
PROBES = REPO / "benchmarks" / "data" / "newcomer_probes.jsonl"
SETS = (
    "acebench_en",
    "acebench_zh",
    "bfcl_live",
    "bfcl_multiturn",
    "bfcl_nonlive",
    "livemcpbench",
    "metatool",
    "newcomer_probes",
)
RANKER_NAMES = ("bm25", "semantic", "hybrid", "two-level", "hybrid-two-level")
WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
GROUP_WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5)
BOOSTS = (0.1, 0.2, 0.3)  # long_query_boost: w rises by this much from 12 to 36 query tokens
OPEN_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)  # open_request_weight (transcripts only)
PROBE_CATALOGS = (  # gemini-cli-legacy left out: same server name and tool names as gemini-cli
    "cloudflare-browser",
    "cloudflare-docs",
    "cloudflare-radar",
    "gemini-cli",
    "github",
    "mcp-fetch",
    "mcp-filesystem",
    "mcp-github-legacy",
    "mcp-memory",
    "mcp-puppeteer",
    "sentry",
)


def probe_catalog() -> Catalog:
    """The real MCP catalogs pooled, each tool named ``<server>__<tool>`` like a session."""
    tools = []
    descriptions: dict[str, str] = {}
    for name in PROBE_CATALOGS:
        catalog = load_catalog(DATA / "catalogs" / f"{name}.json")
        descriptions.update(catalog.server_descriptions)
        tools += [t.replace(name=f"{t.server}__{t.name}") for t in catalog.tools]
    return Catalog(tools=tuple(tools), server_descriptions=descriptions, source="probes")


def load_set(name: str) -> tuple[Catalog, list[LabelledQuery]]:
    """A set's catalog, in its recorded groups, and its queries (probes: all ``held-out``)."""
    if name == "newcomer_probes":
        queries = [dataclasses.replace(q, split="held-out") for q in load_queries(PROBES)]
        return probe_catalog(), queries
    path = DATA / "retrieval" / f"{name}.catalog.json"
    catalog = grouped(load_catalog(path, repair_schemas=True), json.loads(path.read_text()))
    return catalog, load_queries(DATA / "retrieval" / f"{name}.queries.jsonl")


def _index(catalog: Catalog, config: RankerConfig) -> ToolIndex:
    index = ToolIndex(
        [(t, t.name) for t in catalog.tools],
        ranker=dataclasses.replace(config, background=False),
        groups=catalog.server_descriptions,
    )
    index.wait_for_vectors()
    return index


_VECTORS: dict[str, np.ndarray] = {}  # query text -> vector, shared by the sweep and table


def _query_vectors(index: ToolIndex, texts: list[str]) -> dict[str, np.ndarray]:
    """Every covered text's vector, embedded in one batch (the recall pass's cache)."""
    part = index._semantic
    assert part is not None
    read = sorted({t for t in texts if covered(t) and t not in _VECTORS})
    if read:
        _VECTORS.update(zip(read, part.encoder.encode(read), strict=True))
    return {t: _VECTORS[t] for t in texts if t in _VECTORS}


def bm25_scores(catalog: Catalog) -> Callable[[str], np.ndarray]:
    """A text -> the default BM25 score of every catalog tool, in catalog order (0: no hit).

    The open-request weighting is off: the callers weigh a transcript's open request
    themselves (`weighted`), on these per-text rows.
    """
    entries = [t.name for t in catalog.tools]
    bm25 = ToolIndex(
        [(t, t.name) for t in catalog.tools], ranker=RankerConfig(open_request_weight=0)
    )
    position = {n: i for i, n in enumerate(entries)}

    def scores(text: str) -> np.ndarray:
        out = np.zeros(len(entries))
        for hit in bm25.search([text], limit=len(entries)):
            out[position[hit.wire_name]] = hit.score
        return out

    return scores


def sweep(name: str) -> dict[str, float]:
    """recall@5 on the dev split for every fusion setting, on precomputed scores."""
    catalog, queries = load_set(name)
    dev = [q for q in queries if q.split == "dev"]
    index = _index(catalog, RankerConfig(kind="hybrid", group_weight=0.1))
    matrix = index._semantic.matrix()  # type: ignore[union-attr]
    assert matrix is not None
    texts = sorted({q.query for q in dev})
    texts = sorted({*texts, *filter(None, map(open_request, texts))})
    vectors = _query_vectors(index, texts)
    corpus = index._corpus.get()  # type: ignore[union-attr]
    groups = index._corpus.groups  # type: ignore[union-attr]
    members = index._group_members(groups) if groups is not None else None
    rows: dict[str, tuple[np.ndarray, np.ndarray | None, np.ndarray | None, int]] = {}
    entries = [t.name for t in catalog.tools]
    bm25 = bm25_scores(catalog)
    for text in texts:
        scores = bm25(text)
        vector = vectors.get(text)
        tokens = tokenize(text)
        strong = [t for t in tokens if not _is_cjk_char(t)]
        group = groups.scores(tokens, strong) if groups is not None else None
        cosine = None if vector is None else matrix @ vector
        rows[text] = (scores, cosine, group, len(set(tokens)))
    del corpus

    def recall(kind: str, w: float, g: float, boost: float = 0.0, opened: float = 0.75) -> float:
        config = RankerConfig(kind="hybrid", bm25_weight=w, long_query_boost=boost)

        def scored(text: str) -> np.ndarray:
            scores, cosine, group, tokens = rows[text]
            one = (
                scores
                if kind == "bm25" or cosine is None
                else fuse(config, scores=scores, cosine=cosine, tokens=tokens)
            )
            if g > 0 and group is not None and members is not None:
                one = lift(g, tools=normalized(one), groups=group, members=members)
            return one

        def rank(query: str, depth: int) -> list[str]:
            one = weighted(query, opened, scored)
            keep = np.flatnonzero(one > 0)
            order = keep[np.lexsort((keep, -one[keep]))][:depth]
            return [entries[i] for i in order]

        return evaluate(dev, rank)["recall@5"]

    out = {"bm25": recall("bm25", 0.0, 0.0)}
    out |= {f"hybrid w={w}": recall("hybrid", w, 0.0) for w in WEIGHTS}
    out |= {f"hybrid w=0.3 long+{b}": recall("hybrid", 0.3, 0.0, b) for b in BOOSTS}
    out |= {f"bm25 open={o}": recall("bm25", 0.0, 0.0, 0.0, o) for o in OPEN_WEIGHTS}
    out |= {
        f"hybrid w=0.3 long+0.2 open={o}": recall("hybrid", 0.3, 0.0, 0.2, o) for o in OPEN_WEIGHTS
    }
    out |= {f"two-level g={g}": recall("bm25", 0.0, g) for g in GROUP_WEIGHTS}
    out |= {
        f"hybrid-two-level w=0.3 long+0.2 g={g}": recall("hybrid", 0.3, g, 0.2)
        for g in GROUP_WEIGHTS
    }
    return out


def _timed(rank: Callable[[str, int], list[str]], queries: list[str]) -> list[float]:
    times = []
    for text in queries:
        start = time.perf_counter()
        rank(text, 100)
        times.append((time.perf_counter() - start) * 1000)
    return times


def table(name: str, sample: int) -> list[dict[str, Any]]:
    """Each library ranker on one set: metrics per split, build time, query p50."""
    catalog, queries = load_set(name)
    texts = sorted({q.query for q in queries})
    timed_texts = texts[:: max(1, len(texts) // sample)][:sample]
    out = []
    vectors_ready = False
    for ranker in RANKER_NAMES:
        start = time.perf_counter()
        rank = index_ranker(catalog, ranker)  # embeds the catalog (or reads the cache)
        build = time.perf_counter() - start
        encoder = None
        if ranker in ("semantic", "hybrid", "hybrid-two-level"):
            from contextchef.search import _model

            encoder = next(iter(_model._ENCODERS.values()))
            if not vectors_ready:
                _query_vectors(_index(catalog, RankerConfig(kind="hybrid")), texts)
                vectors_ready = True
            encoder._queries.clear()
            times = _timed(rank, timed_texts)  # cold: every timed query embeds its text
            real = encoder.encode_query
            encoder.encode_query = lambda text, real=real: (  # type: ignore[method-assign]
                _VECTORS[text] if text in _VECTORS else real(text)
            )
        else:
            rank(timed_texts[0], 100)
            times = _timed(rank, timed_texts)
        row: dict[str, Any] = {"set": name, "ranker": ranker, "build_s": build}
        for split in ("dev", "held-out"):
            part = [q for q in queries if q.split == split]
            row[split] = evaluate(part, rank) if part else None
        if encoder is not None:
            del encoder.encode_query  # back to the class's method
        row["p50"] = statistics.median(times)
        row["p95"] = statistics.quantiles(times, n=20)[-1] if len(times) > 1 else times[0]
        row["timed"] = len(times)
        out.append(row)
        cells = " ".join(f"{s} r@5 {row[s]['recall@5']:.3f}" for s in ("dev", "held-out") if row[s])
        print(
            f"{name:15} {ranker:17} {cells} p50 {row['p50']:.2f}ms p95 {row['p95']:.2f}ms",
            flush=True,
        )
    return out


def _sweep_lines(sets: list[str], sweeps: dict[str, dict[str, float]]) -> list[str]:
    keys = list(next(iter(sweeps.values())))
    lines = ["| recall@5 (dev) | " + " | ".join(sets) + " | mean |"]
    lines += ["|---|" + "---:|" * (len(sets) + 1)]
    for key in keys:
        values = [sweeps[s][key] for s in sets]
        cells = " | ".join(f"{v:.3f}" for v in values)
        lines.append(f"| {key} | {cells} | {sum(values) / len(values):.3f} |")
    return lines


def _table_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| set | ranker | dev n | dev r@1 | dev r@5 | dev MRR | held-out n | held-out r@1 "
        "| held-out r@5 | held-out MRR | query p50 ms | p95 ms | p50 / bm25 | p95 / bm25 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base: dict[str, float] = {}
    base95: dict[str, float] = {}
    for r in rows:
        if r["ranker"] == "bm25":
            base[r["set"]], base95[r["set"]] = r["p50"], r["p95"]
        cells = []
        for split in ("dev", "held-out"):
            m = r[split]
            if m is None:
                cells.append("- | - | - | -")
            else:
                n, r1, r5, mrr = int(m["queries"]), m["recall@1"], m["recall@5"], m["mrr"]
                cells.append(f"{n} | {r1:.3f} | {r5:.3f} | {mrr:.3f}")
        ratio = r["p50"] / base[r["set"]] if base.get(r["set"]) else float("nan")
        ratio95 = r["p95"] / base95[r["set"]] if base95.get(r["set"]) else float("nan")
        lines.append(
            f"| {r['set']} | {r['ranker']} | {' | '.join(cells)} | {r['p50']:.2f} "
            f"| {r['p95']:.2f} | {ratio:.1f}x | {ratio95:.1f}x |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--skip-sweep", action="store_true")
    parser.add_argument("--cold", action="store_true", help="embed catalogs into a temp cache")
    parser.add_argument("--latency-sample", type=int, default=100)
    args = parser.parse_args()
    sets = args.sets.split(",")
    lines = [
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start. "
        "Command: `python benchmarks/semantic_retrieval.py`.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        if args.cold:
            os.environ["CONTEXTCHEF_CACHE_DIR"] = tmp
        if not args.skip_sweep:
            tuned = [s for s in sets if s != "newcomer_probes"]
            sweeps = {}
            for name in tuned:
                sweeps[name] = sweep(name)
                print(name, {k: round(v, 3) for k, v in sweeps[name].items()}, flush=True)
            lines += [*_sweep_lines(tuned, sweeps), ""]
        rows = [row for name in sets for row in table(name, args.latency_sample)]
    lines += _table_lines(rows)
    lines.append(f"\nLoad at the end: {os.getloadavg()[0]:.1f}.")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
