"""Query latency of the model rankers against bm25, and what was tried to cut it (issue 28).

Run:  python benchmarks/query_latency.py [--sets a,b] [--sample N] [--skip-timing]
                                          [--skip-variants] [--rows DIR] [--out FILE]
Needs the semantic extra. Tool vectors come from the default embedding cache.

1. Timing (``--sample`` distinct queries per set, 100 by default, the same sample as
   benchmarks/semantic_retrieval.py): each query is ranked by ``bm25``, then by
   ``hybrid`` with the query cache cleared (so it embeds its text: distinct queries,
   cold), then embedded alone (`Encoder.encode_query`, cache cleared), and alone by an
   encoder with one onnxruntime thread (``threads=1``; the default uses one per core),
   interleaved per query, each of the four first in turn, so load swings and a model
   run's warm caches favour none; ``gc.collect()`` first. p50 / p95 in ms.
2. Variants (recall@5 per split, through the library's `fuse` and `weighted` on
   precomputed BM25 scores and cosines, as the sweeps of semantic_retrieval.py):
   * cascade: ``hybrid`` embeds a query text only when BM25 is not confident, else
     BM25 answers alone (normalized, as while vectors are built). Rules: the margin
     ``(s1 - s2) / s1`` of the two best BM25 scores at least ``m``; and coverage: the
     best BM25 tool holds at least a share ``c`` of the query's distinct known tokens,
     with margin ``m``. "skip" is the share of queries that embed nothing.
   * query cut: the query embedded from its first ``L`` word pieces (tools keep 256).
   * static: the query vector as the mean of per-word-piece vectors, each the model's
     output for ``[CLS] piece [SEP]`` (model2vec-style, from the same MiniLM); then
     that mapped by a ridge regression fitted on every set's tool texts to their
     MiniLM vectors (no query used); and an agreement cascade: the mapped static
     hybrid answers when its top k equals BM25's, else the model runs.
   ``--rows DIR`` keeps each set's precomputed scores and cosines (pickles) between
   runs.
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import semantic_retrieval as sr

from contextchef.search._index import ToolIndex, tokenize
from contextchef.search._model import Encoder, encoder_for
from contextchef.search._rankers import RankerConfig, embedding_text, fuse, normalized
from contextchef.search._retrieval import LabelledQuery, evaluate, index_ranker
from contextchef.search._transcript import open_request, weighted

Row = tuple[np.ndarray, np.ndarray | None, int]  # BM25 scores, cosines (None: BM25 alone), tokens
Rule = Callable[[str, Row], bool]  # True: BM25 is confident, the model is skipped

HYBRID = RankerConfig(kind="hybrid")
MARGINS = (0.2, 0.4, 0.5, 0.6, 0.7)
COVERAGE = ((1.0, 0.0), (1.0, 0.4), (0.8, 0.2), (0.8, 0.4), (0.6, 0.4))
CUTS = (128, 96, 64)
AGREE = (1, 2, 3)


def _pq(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), statistics.quantiles(values, n=20)[-1]


def timing(name: str, sample: int) -> dict[str, tuple[float, float]]:
    """p50 / p95 (ms) of bm25, hybrid (query cache cleared) and the embedding alone."""
    catalog, queries = sr.load_set(name)
    texts = sorted({q.query for q in queries})
    timed = texts[:: max(1, len(texts) // sample)][:sample]
    bm25 = index_ranker(catalog, "bm25")
    config = RankerConfig(kind="hybrid", background=False)
    index = ToolIndex([(t, t.name) for t in catalog.tools], ranker=config)
    index.wait_for_vectors()
    encoder = index._semantic.encoder  # type: ignore[union-attr]
    single = encoder_for(threads=1)  # the same model, one onnxruntime thread
    single.encode([timed[0]])
    bm25(timed[0], 100)
    index.search([timed[0]], limit=100)
    steps: list[tuple[str, Callable[[str], object]]] = [
        ("bm25", lambda text: bm25(text, 100)),
        ("hybrid", lambda text: index.search([text], limit=100)),
        ("embedding", encoder.encode_query),
        ("one thread", single.encode_query),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in steps}
    gc.collect()
    for i, text in enumerate(timed):
        for name, step in steps[i % 4 :] + steps[: i % 4]:  # each goes first in turn
            encoder._queries.clear()
            single._queries.clear()
            start = time.perf_counter()
            step(text)
            times[name].append((time.perf_counter() - start) * 1000)
    return {k: _pq(v) for k, v in times.items()}


def rows_for(
    name: str, cache: Path | None
) -> tuple[list[str], list[LabelledQuery], dict[str, Row]]:
    """Each query text's (and open request's) BM25 scores, cosines and token count."""
    path = cache / f"{name}.pkl" if cache else None
    if path is not None and path.is_file():
        found: tuple[list[str], list[LabelledQuery], dict[str, Row]] = pickle.loads(
            path.read_bytes()
        )
        return found
    catalog, queries = sr.load_set(name)
    index = sr._index(catalog, HYBRID)
    matrix = index._semantic.matrix()  # type: ignore[union-attr]
    assert matrix is not None
    texts = sorted({q.query for q in queries})
    texts = sorted({*texts, *filter(None, map(open_request, texts))})
    vectors = sr._query_vectors(index, texts)
    entries = [t.name for t in catalog.tools]
    bm25 = sr.bm25_scores(catalog)
    rows: dict[str, Row] = {}
    for text in texts:
        scores = bm25(text)
        vector = vectors.get(text)
        cosine = None if vector is None else matrix @ vector
        rows[text] = (scores, cosine, len(set(tokenize(text))))
    out = (entries, queries, rows)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(out))
    return out


def recall(
    entries: list[str],
    queries: list[LabelledQuery],
    rows: dict[str, Row],
    rule: Rule | None = None,
    cosines: dict[str, np.ndarray] | None = None,
    cheap: tuple[dict[str, np.ndarray], int] | None = None,
) -> dict[str, float | None]:
    """recall@5 per split of `hybrid` with a cascade `rule` or replaced cosines; "skip".

    `cheap` (cosines, k): the agreement cascade; a text whose hybrid top k under these
    cosines is BM25's top k keeps that answer and skips the model.
    """
    embedded: set[str] = set()

    def scored(text: str) -> np.ndarray:
        scores, cosine, tokens = rows[text]
        if cosine is None or (rule is not None and rule(text, rows[text])):
            return normalized(scores)
        if cheap is not None:
            fast = fuse(HYBRID, scores=scores, cosine=cheap[0][text], tokens=tokens)
            k = cheap[1]
            top = set(np.argsort(-fast, kind="stable")[:k].tolist())
            if scores.max() > 0 and top == set(np.argsort(-scores, kind="stable")[:k].tolist()):
                return fast
        embedded.add(text)
        if cosines is not None and text in cosines:
            cosine = cosines[text]
        return fuse(HYBRID, scores=scores, cosine=cosine, tokens=tokens)

    def rank(query: str, depth: int) -> list[str]:
        one = weighted(query, HYBRID.open_request_weight, scored)
        keep = np.flatnonzero(one > 0)
        order = keep[np.lexsort((keep, -one[keep]))][:depth]
        return [entries[i] for i in order]

    out: dict[str, float | None] = {}
    for split in ("dev", "held-out"):
        part = [q for q in queries if q.split == split]
        out[split] = evaluate(part, rank)["recall@5"] if part else None
    distinct = sorted({q.query for q in queries})
    skipped = 0
    for query in distinct:
        embedded.clear()
        weighted(query, HYBRID.open_request_weight, scored)
        skipped += not embedded
    out["skip"] = skipped / len(distinct)
    return out


def _margin(scores: np.ndarray) -> float:
    if len(scores) < 2:
        return 1.0
    second, first = np.partition(scores, len(scores) - 2)[-2:]
    return float((first - second) / first) if first > 0 else 0.0


def variants(name: str, cache: Path | None) -> list[tuple[str, dict[str, float | None]]]:
    """recall@5 (dev, held-out) and the skipped share of every variant on one set."""
    entries, queries, rows = rows_for(name, cache)
    out = [
        ("bm25 (every query skipped)", recall(entries, queries, rows, lambda _t, _r: True)),
        ("hybrid", recall(entries, queries, rows)),
    ]
    for m in MARGINS:
        rule: Rule = lambda _t, row, m=m: _margin(row[0]) >= m  # noqa: E731
        out.append((f"cascade margin >= {m}", recall(entries, queries, rows, rule)))
    catalog, _ = sr.load_set(name)
    plain = ToolIndex([(t, t.name) for t in catalog.tools])
    plain.search(["x"], limit=1)
    corpus = plain._corpus.get()  # type: ignore[union-attr]
    coverage: dict[str, float] = {}
    for text, (scores, _, _) in rows.items():
        known = [t for t in dict.fromkeys(tokenize(text)) if t in corpus.vocab]
        best = int(np.argmax(scores)) if len(scores) else 0
        if not known or not len(scores) or scores[best] <= 0:
            coverage[text] = 0.0
            continue
        held = sum(1 for t in known if corpus.token_scores([t])[best] > 0)
        coverage[text] = held / len(known)
    for c, m in COVERAGE:
        rule = lambda t, row, c=c, m=m: coverage[t] >= c and _margin(row[0]) >= m  # noqa: E731
        out.append(
            (f"cascade coverage >= {c}, margin >= {m}", recall(entries, queries, rows, rule))
        )
    index = sr._index(catalog, HYBRID)
    matrix = index._semantic.matrix()  # type: ignore[union-attr]
    assert matrix is not None
    encoder = Encoder()
    encoder._load()
    texts = [t for t, row in rows.items() if row[1] is not None]
    lengths = {t: len(encoder._tokenizer.encode(t).ids) for t in texts}
    for cut in CUTS:
        encoder._tokenizer.enable_truncation(max_length=cut)
        long = [t for t in texts if lengths[t] > cut]
        vectors = encoder.encode(long) if long else np.zeros((0, matrix.shape[1]))
        cut_cosines = {t: matrix @ v for t, v in zip(long, vectors, strict=True)}
        result = recall(entries, queries, rows, cosines=cut_cosines)
        result["skip"] = None
        out.append((f"query cut to {cut} word pieces", result))
    encoder._tokenizer.enable_truncation(max_length=256)
    static = _static_vectors(encoder, texts)
    mapped = static @ _ridge_map(encoder) if len(texts) else static
    mapped /= np.clip(np.linalg.norm(mapped, axis=1, keepdims=True), 1e-12, None)
    for label, vectors in (("", static), (" + ridge map", mapped)):
        result = recall(
            entries, queries, rows, cosines=dict(zip(texts, vectors @ matrix.T, strict=True))
        )
        result["skip"] = None
        out.append((f"static word-piece query vectors{label}", result))
    cheap = dict(zip(texts, mapped @ matrix.T, strict=True))
    for k in AGREE:
        result = recall(entries, queries, rows, cheap=(cheap, k))
        out.append((f"cascade: static + map hybrid agrees with BM25 on the top {k}", result))
    return out


_PIECES: dict[int, np.ndarray] = {}  # word-piece id -> the model's vector of it alone
_MAP: list[np.ndarray] = []


def _static_vectors(encoder: Encoder, texts: list[str]) -> np.ndarray:
    """Unit mean-of-word-piece vectors (each piece run alone through MiniLM), one a text."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    pieces = [encoder._tokenizer.encode(t).ids[1:-1] for t in texts]
    wanted = sorted({i for ids in pieces for i in ids} - _PIECES.keys())
    for start in range(0, len(wanted), 256):
        chunk = wanted[start : start + 256]
        ids = np.array([[101, i, 102] for i in chunk], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in encoder._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = np.asarray(encoder._session.run(None, feeds)[0], dtype=np.float32)
        pooled = hidden.mean(axis=1) if hidden.ndim == 3 else hidden
        _PIECES.update(zip(chunk, pooled, strict=True))
    dim = next(iter(_PIECES.values())).shape[0] if _PIECES else 384
    out = np.array(
        [np.mean([_PIECES[i] for i in ids], axis=0) if ids else np.zeros(dim) for ids in pieces]
    )
    return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)  # type: ignore[no-any-return]


def _ridge_map(encoder: Encoder) -> np.ndarray:
    """A linear map from static vectors to MiniLM's, fitted (ridge, lambda 1) on the tool
    texts of every set and their MiniLM vectors (no query, no label is used)."""
    if not _MAP:
        xs, ys = [], []
        for name in sr.SETS:
            catalog, _ = sr.load_set(name)
            matrix = sr._index(catalog, HYBRID)._semantic.matrix()  # type: ignore[union-attr]
            assert matrix is not None
            xs.append(_static_vectors(encoder, [embedding_text(t) for t in catalog.tools]))
            ys.append(matrix)
        x, y = np.vstack(xs), np.vstack(ys)
        _MAP.append(np.linalg.solve(x.T @ x + np.eye(x.shape[1]), x.T @ y))
    return _MAP[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default=",".join(sr.SETS))
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-variants", action="store_true")
    parser.add_argument("--rows", type=Path, default=None, help="keep precomputed rows here")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    sets = args.sets.split(",")
    lines = [
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start.",
        "",
    ]
    if not args.skip_timing:
        lines += [
            "| set | bm25 p50 | bm25 p95 | hybrid p50 | hybrid p95 | embedding p50 "
            "| embedding p95 | embedding, 1 thread, p50 / p95 | hybrid p50 / bm25 "
            "| hybrid p95 / bm25 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name in sets:
            t = timing(name, args.sample)
            (b50, b95), (h50, h95), (e50, e95) = t["bm25"], t["hybrid"], t["embedding"]
            o50, o95 = t["one thread"]
            line = (
                f"| {name} | {b50:.2f} | {b95:.2f} | {h50:.2f} | {h95:.2f} | {e50:.2f} "
                f"| {e95:.2f} | {o50:.2f} / {o95:.2f} | {h50 / b50:.0f}x | {h95 / b95:.0f}x |"
            )
            print(line, flush=True)
            lines.append(line)
        lines.append(f"\nLoad after the timing: {os.getloadavg()[0]:.1f}.\n")
    if not args.skip_variants:
        table: dict[str, dict[str, dict[str, float | None]]] = {}
        for name in sets:
            for label, result in variants(name, args.rows):
                table.setdefault(label, {})[name] = result
                print(name, label, result, flush=True)
        lines += ["| variant (recall@5 dev / held-out, skip) | " + " | ".join(sets) + " |"]
        lines += ["|---|" + "---:|" * len(sets)]
        for label, per_set in table.items():
            cells = []
            for name in sets:
                r: dict[str, Any] = per_set[name]
                dev = "-" if r["dev"] is None else f"{r['dev']:.3f}"
                skip = "" if r["skip"] is None else f", {r['skip']:.0%}"
                cells.append(f"{dev} / {r['held-out']:.3f}{skip}")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
