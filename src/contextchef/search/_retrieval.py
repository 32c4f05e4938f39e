"""Tool-retrieval evaluation: labelled queries, metrics, the library's rankers (search layer).

Query files are JSON lines ``{"id", "query", "relevant": [...], "lang", "relevant_groups"?}``
(the format of ``shared/data/retrieval``). Metrics count relevant *groups*: a query's
groups are its ``relevant_groups`` when present, else one group per ``relevant`` name.

* recall@k — mean share of a query's groups with a member in the top k;
* MRR — mean of 1 / rank of the first member of any group (0 when none is ranked);
* nDCG@5 — binary gain per group, a group counted once, normalized by the ideal order.

Split: the files in ``shared/data/retrieval`` are the benchmarks' development split; the
rest is kept elsewhere. Fusion weights are tuned on a deterministic part of them,
``dev`` (`split_of`: about 70% of the queries, by a hash of the query's conversation id,
or of its id), and checked on the other 30%, ``held-out``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextchef._errors import CatalogFormatError
from contextchef.search._index import ToolIndex
from contextchef.search._rankers import RankerConfig
from contextchef.tools._catalogs import Catalog, load_catalog

__all__ = [
    "RANKERS",
    "LabelledQuery",
    "Ranker",
    "bm25_ranker",
    "evaluate",
    "grouped",
    "index_ranker",
    "load_benchmark_catalog",
    "load_queries",
    "split_of",
]

DEV_SHARE = 70
"""Percent of queries in the ``dev`` split (`split_of`)."""

Ranker = Callable[[str, int], list[str]]
"""A ranking function: (query text, depth) -> tool names, best first."""


@dataclass(frozen=True, kw_only=True)
class LabelledQuery:
    """One benchmark query.

    Attributes:
        id: The benchmark's id.
        query: The request text.
        groups: Relevant groups; each is a set of interchangeable tool names.
        lang: ``en`` or ``zh``.
        split: ``dev`` (tune here) or ``held-out`` (`split_of`).
    """

    id: str
    query: str
    groups: tuple[frozenset[str], ...]
    lang: str
    split: str = "dev"


def split_of(key: str) -> str:
    """``dev`` or ``held-out`` for a query key, the same on every machine and run.

    ``dev`` when the first 8 hex digits of sha256(`key`), as an integer, mod 100 are
    below `DEV_SHARE`. The key is the query's ``conversation_id`` when it has one (BFCL
    multi-turn: all turns of a conversation fall on the same side), else its ``id``.
    """
    return (
        "dev"
        if int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 100 < DEV_SHARE
        else "held-out"
    )


def load_queries(path: str | Path) -> list[LabelledQuery]:
    """Read a JSON-lines query file.

    Raises:
        CatalogFormatError: The file cannot be read, or a line is not JSON, is nested too
            deeply or lacks ``query`` / ``relevant``.
    """
    out = []
    try:
        text = Path(path).read_text("utf-8")
    except (OSError, ValueError) as exc:
        raise CatalogFormatError(f"cannot read the query file {str(path)!r}: {exc}") from exc
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            groups = row.get("relevant_groups") or [[r] for r in row["relevant"]]
            out.append(
                LabelledQuery(
                    id=str(row.get("id", n)),
                    query=str(row["query"]),
                    groups=tuple(frozenset(g) for g in groups if g),
                    lang=str(row.get("lang", "en")),
                    split=split_of(str(row.get("conversation_id") or row.get("id", n))),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise CatalogFormatError(f"{path}:{n}: not a labelled query ({exc})") from exc
        except RecursionError as exc:
            raise CatalogFormatError(f"{path}:{n}: nested too deeply to read") from exc
    return out


def _ndcg5(ranked: Sequence[str], groups: Sequence[frozenset[str]]) -> float:
    seen: set[int] = set()
    dcg = 0.0
    for i, name in enumerate(ranked[:5]):
        for g, members in enumerate(groups):
            if g not in seen and name in members:
                seen.add(g)
                dcg += 1 / math.log2(i + 2)
                break
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(groups), 5)))
    return dcg / ideal if ideal else 0.0


def evaluate(
    queries: Iterable[LabelledQuery], ranker: Ranker, *, depth: int = 100
) -> dict[str, float]:
    """Score a ranker on labelled queries.

    Returns:
        ``{"queries", "recall@1", "recall@5", "mrr", "ndcg@5"}``; metrics in [0, 1],
        rounded to 4 decimals. Queries with no groups are skipped.
    """
    totals = {"recall@1": 0.0, "recall@5": 0.0, "mrr": 0.0, "ndcg@5": 0.0}
    count = 0
    for q in queries:
        if not q.groups:
            continue
        count += 1
        ranked = ranker(q.query, depth)
        for k in (1, 5):
            top = set(ranked[:k])
            totals[f"recall@{k}"] += sum(1 for g in q.groups if g & top) / len(q.groups)
        wanted = frozenset().union(*q.groups)
        first = next((i for i, name in enumerate(ranked) if name in wanted), None)
        totals["mrr"] += 0.0 if first is None else 1 / (first + 1)
        totals["ndcg@5"] += _ndcg5(ranked, q.groups)
    out = {k: round(v / count, 4) if count else 0.0 for k, v in totals.items()}
    return {"queries": float(count), **out}


def grouped(catalog: Catalog, data: Mapping[str, Any]) -> Catalog:
    """`catalog` with each tool in the group its benchmark file records, if any.

    Groups, from the catalog file's parsed JSON `data`: ``meta.server`` (LiveMCPBench: the
    MCP server, described by the file's ``servers`` list) or ``meta.class`` (BFCL
    multi-turn: the API class). Tools without either keep their server; a catalog with
    neither is returned unchanged.
    """
    described = {
        str(s.get("name")): str(s.get("description") or "")
        for s in data.get("servers") or ()
        if isinstance(s, Mapping)
    }
    tools = []
    descriptions: dict[str, str] = {}
    for tool in catalog.tools:
        group = tool.meta.get("server") or tool.meta.get("class")
        if isinstance(group, str) and group:
            tool = tool.replace(server=group)
            descriptions[group] = described.get(group, "")
        tools.append(tool)
    if not descriptions:
        return catalog
    return dataclasses.replace(catalog, tools=tuple(tools), server_descriptions=descriptions)


def load_benchmark_catalog(path: str | Path) -> Catalog:
    """A benchmark catalog file, schemas repaired, tools in their recorded groups (`grouped`).

    Raises:
        CatalogFormatError: The file cannot be read or is not a catalog.
    """
    catalog = load_catalog(path, repair_schemas=True)
    data = json.loads(Path(path).read_text("utf-8"))  # readable: load_catalog just read it
    return grouped(catalog, data) if isinstance(data, Mapping) else catalog


def index_ranker(catalog: Catalog, ranker: RankerConfig | str = "bm25") -> Ranker:
    """`ToolIndex` with `ranker` over a catalog, ranking own names.

    A two-level ranker's groups are the tools' servers, described by
    ``catalog.server_descriptions``.

    Embeddings are built in the calling thread before the first ranking (never in the
    background), so every query is answered by the configured ranker.

    Raises:
        MissingExtraError: A semantic ranker without the ``semantic`` extra.
    """
    config = dataclasses.replace(RankerConfig.of(ranker), background=False)
    index = ToolIndex(
        [(t, t.name) for t in catalog.tools], ranker=config, groups=catalog.server_descriptions
    )
    index.wait_for_vectors()

    def rank(query: str, depth: int) -> list[str]:
        return [hit.tool.name for hit in index.search([query], limit=depth)]

    return rank


def bm25_ranker(catalog: Catalog) -> Ranker:
    """The library's default ranker (`ToolIndex`) over a catalog, ranking own names."""
    return index_ranker(catalog, "bm25")


RANKERS: dict[str, Callable[[Catalog], Ranker]] = {
    "bm25": bm25_ranker,
    "semantic": lambda catalog: index_ranker(catalog, "semantic"),
    "hybrid": lambda catalog: index_ranker(catalog, "hybrid"),
    "hybrid-rrf": lambda catalog: index_ranker(catalog, "hybrid-rrf"),
    "two-level": lambda catalog: index_ranker(catalog, "two-level"),
    "hybrid-two-level": lambda catalog: index_ranker(catalog, "hybrid-two-level"),
}
"""Rankers selectable by name (``contextchef eval-retrieval --ranker``); all but ``bm25``
need the ``semantic`` extra (`MissingExtraError` otherwise), except ``two-level``."""
