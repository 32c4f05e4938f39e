"""Where the default hybrid ranker misses: each dev-split miss, sorted into a few kinds.

Run:  python benchmarks/retrieval_misses.py [--sets a,b] [--split dev] [--show N]
                                            [--near 0.9]
Needs the semantic extra. Tool vectors come from the default embedding cache.

A miss is one relevant group (a set of interchangeable tools) of a query with no member
in the ``hybrid`` top 5 (the library's `index_ranker`, default `RankerConfig`). Each
miss gets the first kind that applies:

1. ``same text in top 5``: a top-5 tool whose description equals a wanted tool's
   (case and punctuation folded);
2. ``near-identical in top 5``: a top-5 tool whose embedded text has cosine >= ``--near``
   with a wanted tool's (the model's own view of "the same tool");
3. ``rank 6-10``: the best wanted tool is ranked 6th to 10th;
4. ``no shared word``: no wanted tool has a BM25 score (the query shares no search
   token with it) and none is in the top 10;
5. ``other``: ranked below 10 (or not at all) although a query word matches.

The last line per set is recall@5 if kinds 1-2 counted as hits: the ceiling that label
noise among duplicate tools puts on recall@5. ``--show N`` prints N misses per kind
(query, wanted tools, top 3) for reading by hand.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict

from semantic_retrieval import SETS, load_set

from contextchef.search._index import ToolIndex
from contextchef.search._rankers import RankerConfig
from contextchef.search._retrieval import index_ranker

KINDS = ("same text in top 5", "near-identical in top 5", "rank 6-10", "no shared word", "other")


def _folded(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def misses(name: str, split: str, near: float, show: int) -> list[str]:
    """Report lines for one set: counts per kind, the ceiling, and `show` examples each."""
    catalog, queries = load_set(name)
    queries = [q for q in queries if q.split == split and q.groups]
    rank = index_ranker(catalog, "hybrid")
    vectors = ToolIndex(
        [(t, t.name) for t in catalog.tools], ranker=RankerConfig(kind="hybrid", background=False)
    )
    vectors.wait_for_vectors()
    matrix = vectors._semantic.matrix()  # type: ignore[union-attr]
    assert matrix is not None
    bm25 = ToolIndex([(t, t.name) for t in catalog.tools])
    position = {t.name: i for i, t in enumerate(catalog.tools)}
    text = {t.name: _folded(t.description) for t in catalog.tools}
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    recall = ceiling = 0.0
    for q in queries:
        ranked = rank(q.query, 100)
        top = ranked[:5]
        matched = {hit.tool.name for hit in bm25.search([q.query], limit=len(position))}
        hit = dup = 0
        for group in q.groups:
            wanted = [w for w in group if w in position]
            if group & set(top):
                hit += 1
                continue
            best = min((ranked.index(w) + 1 for w in wanted if w in ranked), default=0)
            if any(text[t] and text[t] == text[w] for t in top for w in wanted):
                kind = KINDS[0]
            elif any(
                float(matrix[position[t]] @ matrix[position[w]]) >= near
                for t in top
                for w in wanted
            ):
                kind = KINDS[1]
            elif 5 < best <= 10:
                kind = KINDS[2]
            elif not matched & set(wanted):
                kind = KINDS[3]
            else:
                kind = KINDS[4]
            dup += kind in KINDS[:2]
            counts[kind] += 1
            examples[kind].append(
                f"    {q.query[:100]!r} wants {sorted(group)[:2]} (best rank {best or '-'}), "
                f"top 3 {top[:3]}"
            )
        recall += hit / len(q.groups)
        ceiling += (hit + dup) / len(q.groups)
    n = len(queries)
    lines = [f"{name} ({split}): {n} queries, {sum(counts.values())} missed groups"]
    for kind in KINDS:
        lines.append(f"  {kind}: {counts[kind]}")
        lines += examples[kind][:show]
    lines.append(
        f"  recall@5 {recall / n:.3f}; counting kinds 1-2 as hits {ceiling / n:.3f}" if n else ""
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="metatool,livemcpbench,bfcl_live,bfcl_multiturn")
    parser.add_argument("--split", default="dev", choices=("dev", "held-out"))
    parser.add_argument("--show", type=int, default=0)
    parser.add_argument("--near", type=float, default=0.9)
    args = parser.parse_args()
    for name in args.sets.split(","):
        if name not in SETS:
            raise SystemExit(f"unknown set {name!r}; valid: {', '.join(SETS)}")
        print("\n".join(misses(name, args.split, args.near, args.show)), flush=True)


if __name__ == "__main__":
    main()
