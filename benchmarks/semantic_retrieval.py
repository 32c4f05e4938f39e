"""Retrieval quality of the bm25, semantic and hybrid rankers, and the fusion-weight sweep.

Run:  python benchmarks/semantic_retrieval.py [--sets a,b] [--out FILE]
Needs the semantic extra (pip install -e ".[semantic]"); embeddings go to a temporary
cache directory so every run starts cold.

1. Sweep, on the development split in shared/data/retrieval (the only split we have):
   recall@5 of the weighted fusion for BM25 weights 0..1, of RRF, and of the
   min_similarity floor, all through `contextchef.search._rankers.fuse` on precomputed
   BM25 scores and cosines, with the library's routing (CJK queries -> BM25).
2. Table: `evaluate` with the library's rankers (`RANKERS`, what `contextchef
   eval-retrieval --ranker X` runs), per-query time p50 / p95 in ms (query embedding
   included, its cache cleared before each ranker), and the one-off catalog embedding time.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from contextchef import load_catalog
from contextchef.search import _model
from contextchef.search._index import ToolIndex
from contextchef.search._rankers import RankerConfig, covered, fuse, normalized
from contextchef.search._retrieval import RANKERS, LabelledQuery, evaluate, load_queries

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))
SETS = (
    "acebench_en",
    "acebench_zh",
    "bfcl_live",
    "bfcl_multiturn",
    "bfcl_nonlive",
    "livemcpbench",
    "metatool",
)
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1.0)
FLOORS = (-1.0, 0.1, 0.2, 0.25, 0.3)


def sweep(name: str) -> dict[str, float]:
    catalog = load_catalog(DATA / "retrieval" / f"{name}.catalog.json", repair_schemas=True)
    queries = load_queries(DATA / "retrieval" / f"{name}.queries.jsonl")
    entries = [(t, t.name) for t in catalog.tools]
    base = RankerConfig(kind="hybrid", background=False)
    index = ToolIndex(entries, ranker=base)
    index.wait_for_vectors()
    part = index._semantic
    assert part is not None
    matrix = part.matrix()
    assert matrix is not None
    texts = list(dict.fromkeys(q.query for q in queries))
    read = [t for t in texts if covered(t)]  # the others never reach the model
    vectors = dict(zip(read, part.encoder.encode(read), strict=True))
    position = {t.name: i for i, t in enumerate(catalog.tools)}
    bm25 = ToolIndex(entries)
    rows: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    for text in texts:
        scores = np.zeros(len(entries))
        for hit in bm25.search([text], limit=len(entries)):
            scores[position[hit.wire_name]] = hit.score
        vector = vectors.get(text)
        rows[text] = (scores, None if vector is None else matrix @ vector)

    def recall(config: RankerConfig) -> float:
        def rank(query: str, depth: int) -> list[str]:
            scores, cosine = rows[query]
            final = (
                normalized(scores) if cosine is None else fuse(config, scores=scores, cosine=cosine)
            )
            keep = np.flatnonzero(final > 0)
            order = keep[np.lexsort((keep, -final[keep]))][:depth]
            return [entries[i][1] for i in order]

        return evaluate(queries, rank)["recall@5"]

    out = {f"w={w}": recall(dataclasses.replace(base, bm25_weight=w)) for w in WEIGHTS}
    out["rrf"] = recall(dataclasses.replace(base, fusion="rrf"))
    out["semantic"] = recall(dataclasses.replace(base, kind="semantic"))
    for floor in FLOORS:
        out[f"floor={floor}"] = recall(dataclasses.replace(base, min_similarity=floor))
    return out


def table(name: str) -> list[dict[str, object]]:
    catalog = load_catalog(DATA / "retrieval" / f"{name}.catalog.json", repair_schemas=True)
    queries: list[LabelledQuery] = load_queries(DATA / "retrieval" / f"{name}.queries.jsonl")
    out = []
    for ranker in ("bm25", "semantic", "hybrid", "hybrid-rrf"):
        start = time.perf_counter()
        rank = RANKERS[ranker](catalog)  # embeds the catalog (cold for the first ranker)
        build = time.perf_counter() - start
        for encoder in _model._ENCODERS.values():
            encoder._queries.clear()
        times: list[float] = []

        def timed(query: str, depth: int, rank=rank, times=times) -> list[str]:  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            found: list[str] = rank(query, depth)
            times.append((time.perf_counter() - t0) * 1000)
            return found

        metrics = evaluate(queries, timed)
        ordered = sorted(times)
        row = {
            "set": name,
            "ranker": ranker,
            **metrics,
            "build_s": build,
            "p50": statistics.median(ordered),
            "p95": ordered[int(0.95 * (len(ordered) - 1))],
        }
        print(
            f"{name:15} {ranker:11} r@1 {metrics['recall@1']:.3f} r@5 {metrics['recall@5']:.3f} "
            f"mrr {metrics['mrr']:.3f} build {build:.1f}s p50 {row['p50']:.2f}ms",
            flush=True,
        )
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--skip-sweep", action="store_true")
    args = parser.parse_args()
    sets = args.sets.split(",")
    lines = [
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores. Command: `python benchmarks/semantic_retrieval.py`.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CONTEXTCHEF_CACHE_DIR"] = tmp  # cold: nothing cached from earlier runs
        if not args.skip_sweep:
            sweeps = {}
            for name in sets:
                sweeps[name] = sweep(name)
                print(name, {k: round(v, 3) for k, v in sweeps[name].items()}, flush=True)
            keys = list(next(iter(sweeps.values())))
            lines += ["| recall@5 | " + " | ".join(sets) + " | mean |"]
            lines += ["|---|" + "---:|" * (len(sets) + 1)]
            for key in keys:
                values = [sweeps[s][key] for s in sets]
                cells = " | ".join(f"{v:.3f}" for v in values)
                lines.append(f"| {key} | {cells} | {sum(values) / len(values):.3f} |")
            lines.append("")
        rows = [row for name in sets for row in table(name)]
    lines += [
        "| set | ranker | queries | recall@1 | recall@5 | MRR | nDCG@5 | embed catalog s "
        "| query p50 ms | query p95 ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['set']} | {r['ranker']} | {int(r['queries'])} | {r['recall@1']:.3f} | "  # type: ignore[call-overload]
            f"{r['recall@5']:.3f} | {r['mrr']:.3f} | {r['ndcg@5']:.3f} | {r['build_s']:.1f} | "
            f"{r['p50']:.2f} | {r['p95']:.2f} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
