"""Multi-intent queries: rank each clause of a request too, and what that could gain (issue 28).

Run:  python benchmarks/multi_intent.py [--sets a,b] [--rows DIR] [--skip-latency]
                                         [--latency-sample N] [--out FILE]
Needs the semantic extra; ``pysbd`` (pip install pysbd) for the ``pysbd`` splitters (they
are skipped without it). Tool vectors come from the default embedding cache.

Many requests ask for several things ("find X and then send it to Y") and recall@5 counts
every wanted tool, so the idea measured here: rank the whole request AND each of its
clauses, then fuse. Nothing here is in the library; it measures on the same precomputed
BM25 scores and MiniLM cosines as benchmarks/semantic_retrieval.py's sweeps (the library's
`fuse` and `weighted`, default `RankerConfig`, the same `split_of`), so the ``none`` row
equals the default ``hybrid`` of that script.

1. Splitters (a query with fewer than two clauses of >= 2 search tokens is ranked as
   before; transcripts with an open request too, `open_request` already splits them):
   ``regex``: sentence ends followed by an upper-case letter or a quote, ``;`` and line
   breaks; ``regex+conn``: also the connectives "and then", "and also", "then", "after
   that", "afterwards", "as well as", "also"; ``regex+and``: also a bare "and";
   ``pysbd`` (rule-based sentence boundaries, the pragmatic segmenter's rules: "Dr.",
   "e.g.", file names and URLs kept whole) and ``pysbd+conn``.
2. Fusions of the whole query's scores ``W`` and the clauses' ``C_i`` (each divided by
   its best): ``sum a``: ``W + a * sum(C_i)``; ``mean a``: ``W + a * mean(C_i)``; ``max
   a``: ``W + a * max(C_i)``; ``inter h``: W's top h, then the clauses' rank-1 tools in
   turn, their rank-2 tools, ..., then W's order; ``rinter h``: W's top h, then W's next
   and each clause's tool rank by rank; ``tail h``: W's top h, then each clause's best
   tool not yet listed, then W's order.
3. Ceilings (dev, multi-intent queries of the ``regex+conn`` / ``regex+and`` splits): of
   the wanted groups the whole query misses (none in its top 5), how many a clause ranks
   first / in its top 3 (an oracle picking the right clause tool could add no more); for
   the sets with servers (LiveMCPBench, BFCL multi-turn), how many have their server
   ranked first by a clause (BM25 over the server's pooled text, `GroupLevel`), and the
   wanted tool ranked first / in the top 3 of that server for the clause (two-level
   retrieval per clause).
4. Latency (``--latency-sample`` multi-intent queries per set, interleaved, query cache
   cleared, ``gc.collect()`` first; p50 ms): ``bm25`` (`ToolIndex.search`), ``hybrid``
   (the whole query embedded), ``hybrid + clauses batched`` (the whole query and its
   clauses in one model run, plus their BM25 passes), ``clauses one run each`` and the
   ``pysbd`` split alone.

``--rows DIR`` keeps each set's scores and cosines (pickles) between runs.
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from semantic_retrieval import SETS, _index, _query_vectors, bm25_scores, load_set

from contextchef.search._index import ToolIndex, tokenize
from contextchef.search._rankers import RankerConfig, fuse, normalized
from contextchef.search._retrieval import LabelledQuery, evaluate
from contextchef.search._transcript import open_request, unlabelled, weighted

Row = tuple[np.ndarray, np.ndarray | None, int]  # BM25 scores, cosines (None: BM25 alone), tokens
Data = tuple[list[str], list[LabelledQuery], dict[str, Row]]

HYBRID = RankerConfig(kind="hybrid")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])|\s*;\s*|\n+")
_CONNECTIVES = r"and\s+then|and\s+also|then|after\s+that|afterwards|as\s+well\s+as|also"
_CONN = re.compile(rf",?\s+(?:{_CONNECTIVES})\s+", re.I)
_CONN_AND = re.compile(rf",?\s+(?:{_CONNECTIVES}|and)\s+", re.I)
_SEGMENTER: list[object] = []


def _pysbd() -> Callable[[str], list[str]] | None:
    """pysbd's English segmenter (one per line of the text), or None when not installed."""
    if not _SEGMENTER:
        try:
            import pysbd  # type: ignore[import-untyped]
        except ImportError:
            return None
        _SEGMENTER.append(pysbd.Segmenter(language="en", clean=False))
    segment = _SEGMENTER[0].segment  # type: ignore[attr-defined]
    return lambda text: [s for line in text.split("\n") for s in segment(line)]


def splitters() -> list[str]:
    """The splitter names measured (the pysbd ones when it is installed)."""
    names = ["regex", "regex+conn", "regex+and"]
    return names + (["pysbd", "pysbd+conn"] if _pysbd() is not None else [])


def clauses(query: str, splitter: str) -> list[str]:
    """`query`'s clauses of >= 2 search tokens under `splitter`; [] for fewer than two."""
    if splitter == "none":
        return []
    pysbd = _pysbd() if splitter.startswith("pysbd") else None
    parts = pysbd(query) if pysbd is not None else _SENTENCE.split(query)
    if splitter.endswith("+conn") or splitter.endswith("+and"):
        rule = _CONN_AND if splitter.endswith("+and") else _CONN
        parts = [piece for part in parts for piece in rule.split(part)]
    kept = [p.strip(" ,.;") for p in parts if p.strip() and len(tokenize(p)) >= 2]
    return kept if len(kept) >= 2 else []


def query_clauses(query: str, splitter: str) -> list[str]:
    """The clauses ranked for a benchmark query (none for a transcript with an open request)."""
    return [] if open_request(query) else clauses(unlabelled(query), splitter)


def rows_for(name: str, cache: Path | None) -> Data:
    """Tool names, labelled queries and per-text BM25 scores / cosines for every text needed."""
    path = cache / f"{name}.pkl" if cache else None
    entries: list[str] = []
    queries: list[LabelledQuery] = []
    rows: dict[str, Row] = {}
    if path is not None and path.exists():
        entries, queries, rows = pickle.loads(path.read_bytes())
    catalog, loaded = load_set(name)
    if not queries:
        entries, queries = [t.name for t in catalog.tools], [q for q in loaded if q.groups]
    texts = set()
    for q in queries:
        texts.add(unlabelled(q.query))
        texts.update(filter(None, [open_request(q.query)]))
        for splitter in splitters():
            texts.update(query_clauses(q.query, splitter))
    missing = sorted(texts - rows.keys())
    if missing:
        index = _index(catalog, HYBRID)
        matrix = index._semantic.matrix()  # type: ignore[union-attr]
        assert matrix is not None
        vectors = _query_vectors(index, missing)
        bm25 = bm25_scores(catalog)
        for text in missing:
            scores = bm25(text)
            vector = vectors.get(text)
            cosine = None if vector is None else matrix @ vector
            rows[text] = (scores, cosine, len(set(tokenize(text))))
        if path is not None:
            path.write_bytes(pickle.dumps((entries, queries, rows)))
    return entries, queries, rows


def _top(scores: np.ndarray, depth: int) -> list[int]:
    keep = np.flatnonzero(scores > 0)
    return [int(i) for i in keep[np.lexsort((keep, -scores[keep]))][:depth]]


def _merged(first: list[int], lists: Sequence[list[int]], depth: int, rest: list[int]) -> list[int]:
    """`first`, then `lists` read rank by rank (duplicates skipped), then `rest`."""
    order = list(first)
    for k in range(depth):
        for ranked in lists:
            if k < len(ranked) and ranked[k] not in order:
                order.append(ranked[k])
    order += [i for i in rest if i not in order]
    return order[:depth]


def ranker(data: Data, splitter: str, fusion: str, value: float) -> Callable[[str, int], list[str]]:
    """A ranking function for `evaluate`: the default hybrid, clauses fused per `fusion`."""
    entries, _, rows = data

    def scored(text: str) -> np.ndarray:
        scores, cosine, tokens = rows[text]
        if cosine is None:
            return normalized(scores)
        return fuse(HYBRID, scores=scores, cosine=cosine, tokens=tokens)

    def rank(query: str, depth: int) -> list[str]:
        whole = weighted(query, HYBRID.open_request_weight, scored)
        parts = [normalized(scored(c)) for c in query_clauses(query, splitter)]
        if not parts:
            return [entries[i] for i in _top(whole, depth)]
        h = int(value)
        ranked = _top(whole, depth)
        if fusion in ("sum", "mean", "max"):
            stack = np.vstack(parts)
            extra = {"sum": stack.sum(0), "mean": stack.mean(0), "max": stack.max(0)}[fusion]
            order = _top(normalized(whole) + value * extra, depth)
        elif fusion == "inter":
            order = _merged(ranked[:h], [_top(p, depth) for p in parts], depth, ranked)
        elif fusion == "rinter":
            lists = [ranked[h:], *[_top(p, depth) for p in parts]]
            order = _merged(ranked[:h], lists, depth, ranked)
        else:  # tail
            order = ranked[:h]
            for p in parts:
                best = [i for i in _top(p, depth) if i not in order][:1]
                order += best if len(order) < 5 else []
            order += [i for i in ranked if i not in order]
        return [entries[i] for i in order[:depth]]

    return rank


FUSIONS = (
    [("sum", a) for a in (0.25, 0.5, 1.0)]
    + [("mean", a) for a in (0.5, 1.0)]
    + [("max", a) for a in (0.5, 1.0)]
    + [(f, h) for f in ("inter", "rinter") for h in (1.0, 2.0)]
    + [("tail", h) for h in (3.0, 4.0)]
)


def variants(data: Data) -> dict[str, tuple[float, float]]:
    """recall@5 (dev, held-out) of the default hybrid and every splitter x fusion."""
    _, queries, _ = data
    splits = [[q for q in queries if q.split == s] for s in ("dev", "held-out")]

    def both(rank: Callable[[str, int], list[str]]) -> tuple[float, float]:
        dev, held = (evaluate(part, rank)["recall@5"] if part else float("nan") for part in splits)
        return dev, held

    out = {"none (default hybrid)": both(ranker(data, "none", "sum", 0.0))}
    for splitter in splitters():
        for fusion, value in FUSIONS:
            label = (
                f"{fusion} {value:g}"
                if fusion in ("sum", "mean", "max")
                else f"{fusion} {value:.0f}"
            )
            out[f"{splitter}, {label}"] = both(ranker(data, splitter, fusion, value))
    return out


def ceilings(name: str, data: Data, splitter: str) -> dict[str, int]:
    """Dev multi-intent queries: missed groups a clause finds (item 3 of the docstring)."""
    entries, queries, rows = data
    rank = ranker(data, "none", "sum", 0.0)
    catalog, _ = load_set(name)
    index = _index(catalog, RankerConfig(kind="hybrid", group_weight=0.1))
    index._corpus.get()  # type: ignore[union-attr]
    groups = index._corpus.groups  # type: ignore[union-attr]
    members = index._group_members(groups) if groups is not None else None
    dev = [q for q in queries if q.split == "dev"]
    out = {
        "dev missed groups, all queries": sum(
            not (g & set(rank(q.query, 5))) for q in dev for g in q.groups
        )
    }
    depths = (1, 3, 5)
    out |= dict.fromkeys(
        ("multi-intent queries", "missed", *(f"clause top {d}" for d in depths)), 0
    )
    gain = dict.fromkeys(depths, 0.0)  # recall@5 an oracle would add: groups in a clause's top d
    if members is not None:
        out |= dict.fromkeys(("server first", "tool first in it", "tool top 3 in it"), 0)
    position = {n: i for i, n in enumerate(entries)}
    for q in dev:
        parts = query_clauses(q.query, splitter)
        if not parts:
            continue
        out["multi-intent queries"] += 1
        top5 = set(rank(q.query, 5))
        scored = [
            normalized(fuse(HYBRID, scores=rows[c][0], cosine=rows[c][1], tokens=rows[c][2]))
            if rows[c][1] is not None
            else normalized(rows[c][0])
            for c in parts
        ]
        tops = [[entries[i] for i in _top(s, 5)] for s in scored]
        for group in q.groups:
            if group & top5:
                continue
            out["missed"] += 1
            for d in depths:
                found = any(set(t[:d]) & group for t in tops)
                out[f"clause top {d}"] += found
                gain[d] += found / len(q.groups) / len(dev)
            if members is None or groups is None:
                continue
            wanted = {position[n] for n in group if n in position}
            servers = {int(members[i]) for i in wanted}
            first = top3 = server = False
            for clause, score in zip(parts, scored, strict=True):
                tokens = tokenize(clause)
                best = groups.scores(tokens, tokens)
                if best.max() <= 0 or int(np.argmax(best)) not in servers:
                    continue
                server = True
                inside = [
                    i for i in _top(score, len(entries)) if members[i] == int(np.argmax(best))
                ]
                first |= bool(inside[:1]) and inside[0] in wanted
                top3 |= bool(set(inside[:3]) & wanted)
            out["server first"] += server
            out["tool first in it"] += first
            out["tool top 3 in it"] += top3
    base = evaluate(dev, rank)["recall@5"]
    for d in depths:
        out[f"recall@5 ceiling, top {d} (x1000)"] = round(1000 * (base + gain[d]))
    return out


def latency(name: str, data: Data, sample: int) -> dict[str, float]:
    """p50 ms per route over `sample` multi-intent queries (item 4 of the docstring)."""
    from contextchef.search import _model

    _, queries, _ = data
    catalog, _ = load_set(name)
    texts = sorted({q.query for q in queries if query_clauses(q.query, "regex+conn")})
    texts = texts[:: max(1, len(texts) // sample)][:sample]
    bm25 = ToolIndex([(t, t.name) for t in catalog.tools])
    hybrid = _index(catalog, HYBRID)
    encoder = next(iter(_model._ENCODERS.values()))
    bm25.search([texts[0]], limit=5)
    hybrid.search([texts[0]], limit=5)
    pysbd = _pysbd()
    times: dict[str, list[float]] = {}

    def clock(label: str, run: Callable[[], object]) -> None:
        start = time.perf_counter()
        run()
        times.setdefault(label, []).append((time.perf_counter() - start) * 1000)

    gc.collect()
    for text in texts:
        both = [text, *query_clauses(text, "regex+conn")]
        encoder._queries.clear()
        clock("bm25", lambda t=text: bm25.search([t], limit=5))
        clock("hybrid (whole query)", lambda t=text: hybrid.search([t], limit=5))
        clock(
            "whole + clauses, one batched model run",
            lambda b=both: (encoder.encode(b), [bm25.search([c], limit=5) for c in b]),
        )
        clock(
            "whole + clauses, one model run each",
            lambda b=both: (
                [encoder.encode([c]) for c in b],
                [bm25.search([c], limit=5) for c in b],
            ),
        )
        clock("regex+conn split", lambda t=text: query_clauses(t, "regex+conn"))
        if pysbd is not None:
            clock("pysbd split", lambda t=text, split=pysbd: split(t))
    return {label: statistics.median(v) for label, v in times.items()} | {"queries": len(texts)}


def main() -> None:
    parser = argparse.ArgumentParser()
    default = [s for s in SETS if s != "newcomer_probes"]
    parser.add_argument("--sets", default=",".join(default))
    parser.add_argument("--rows", type=Path, default=None)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--latency-sample", type=int, default=30)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    sets = args.sets.split(",")
    if args.rows:
        args.rows.mkdir(parents=True, exist_ok=True)
    lines = [
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start.",
        "",
    ]
    table: dict[str, dict[str, tuple[float, float]]] = {}
    caps: list[str] = []
    timing: list[str] = []
    for name in sets:
        data = rows_for(name, args.rows)
        table[name] = variants(data)
        for splitter in ("regex+conn", "regex+and", *splitters()[3:]):
            cap = ceilings(name, data, splitter)
            caps.append(
                f"| {name} | {splitter} | " + " | ".join(f"{k} {v}" for k, v in cap.items()) + " |"
            )
        if not args.skip_latency:
            p50 = latency(name, data, args.latency_sample)
            timing.append(
                f"| {name} | " + " | ".join(f"{k} {v:.2f}" for k, v in p50.items()) + " |"
            )
        print(name, "done", flush=True)
    keys = list(next(iter(table.values())))
    lines += ["| recall@5 dev / held-out | " + " | ".join(sets) + " | mean dev change |"]
    lines += ["|---|" + "---:|" * (len(sets) + 1)]
    base = [table[s][keys[0]][0] for s in sets]
    for key in keys:
        cells = [table[s][key] for s in sets]
        change = sum(c[0] - b for c, b in zip(cells, base, strict=True)) / len(sets)
        lines.append(
            f"| {key} | "
            + " | ".join(f"{d:.3f} / {h:.3f}" for d, h in cells)
            + f" | {change:+.4f} |"
        )
    lines += ["", "Ceilings (dev, multi-intent queries):", *caps]
    if timing:
        lines += ["", "Latency p50 ms:", *timing]
    lines.append(f"\nLoad at the end: {os.getloadavg()[0]:.1f}.")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
