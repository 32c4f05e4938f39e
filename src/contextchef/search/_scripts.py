"""A request written twice, in the catalog's script and in another (search layer).

``tool_search`` invites the model to add the user's own wording to its queries, and a
model often sends the same request twice: ``["create issue", "创建问题"]``, or one query
``"create issue 创建问题"``. Against a catalog written in English the Chinese half is a
translation of the English half, not more evidence: it reaches the catalog only through
CC-CEDICT's glosses (`contextchef.search._bilingual`), which are loose (创建 is "to
found; to establish", not "create"), so summing it with the English half as an equal
let it outvote the English: on the real GitHub catalog ``["create issue", "创建问题"]``
put ``assign_copilot_to_issue`` first and ``create_issue`` third, where ``["create
issue"]`` alone put ``create_issue`` first (issue 28, break-it round 22).

The rule (`request_scores`): the text in the catalog's script leads and the text in the
other script breaks ties and stands in where the lead finds nothing. The request's
scores are ``normalized(lead) + TRANSLATION_WEIGHT * normalized(translation)`` (each
divided by its best, all zero stays zero), where ``lead`` sums the scores of the
catalog-script texts and ``translation`` those of the other-script texts, each scored
exactly as a query of its own (the dictionary route, the embedding model and the
two-level lift included). Which text is which (`split_request`):

- an English catalog (`contextchef.search._bilingual.ENGLISH_CATALOG_SHARE`): the CJK
  runs of every query (Han, kana, Hangul) are the translation, the rest of each query
  (its Latin words and digits) the lead; a query that is all CJK is all translation;
- a Chinese catalog (ACEBench-zh), the mirror: a query without CJK is the translation
  and a query with CJK leads, whole. A Chinese query is not split: Latin identifiers,
  codes and product names are part of Chinese requests and of a Chinese catalog's own
  tool and parameter names (455 of ACEBench-zh's 623 queries mix the two scripts).

A request without text in both scripts (English only, Chinese only, the usual case) is
ranked as before: its queries' scores summed, a query only in the other script keeping
the dictionary route. `TRANSLATION_WEIGHT` is a small fixed share, not fitted: below 1
so that the lead's order stands wherever it is clear, above 0 so that the translation
still orders the tools the lead scores alike and finds the tools it misses
(benchmarks/bilingual_queries.py and benchmarks/RESULTS.md give the figures).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from contextchef.search._rankers import normalized
from contextchef.search._transcript import weighted

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CJK", "TRANSLATION_WEIGHT", "request_scores", "split_request"]

CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
"""Runs of CJK characters (kana, Han, Hangul, compatibility ideographs)."""

TRANSLATION_WEIGHT = 0.2
"""The translation's share of a request written in both scripts (module docstring)."""

_LETTERS = re.compile(r"[A-Za-z]")


def split_request(queries: Sequence[str], *, english: bool) -> tuple[list[str], list[str]] | None:
    """(lead texts, translation texts) of a request in both scripts, else None.

    Args:
        queries: The request's queries, in order.
        english: Whether the catalog is written in English (`_LazyCorpus.english`).

    Returns:
        None when the request has no text in one of the two scripts (it is then ranked
        as before); else the catalog-script texts and the other-script texts, in query
        order, neither list empty (see the module docstring for where the cut falls).
    """
    lead: list[str] = []
    other: list[str] = []
    for query in queries:
        runs = CJK.findall(query) if not query.isascii() else []
        if not english:
            (lead if runs else other if _LETTERS.search(query) else lead).append(query)
            continue
        rest = CJK.sub(" ", query) if runs else query
        if _LETTERS.search(rest):
            lead.append(rest)
        if runs:
            other.append(" ".join(runs))
    return (lead, other) if lead and other else None


def request_scores(
    queries: Sequence[str],
    scores: Callable[[str], np.ndarray],
    english: bool,
    open_request_weight: float,
) -> np.ndarray | None:
    """Every entry's score for a request, its translation kept below its lead.

    Args:
        queries: The request's queries.
        scores: One query text's scores of every entry (the ranker's).
        english: Whether the catalog is written in English.
        open_request_weight: `RankerConfig.open_request_weight`: each text is scored
            through `contextchef.search._transcript.weighted` with it.

    Returns:
        None for no queries; the sum of the queries' scores for a request in one script
        (one query's scores as they are); else ``normalized(lead) + TRANSLATION_WEIGHT *
        normalized(translation)``, in ``[0, 1 + TRANSLATION_WEIGHT]`` (module docstring).
    """
    import numpy as np

    split = split_request(queries, english=english)
    parts = [list(queries)] if split is None else split
    sums: list[np.ndarray] = []
    for texts in parts:
        total: np.ndarray | None = None  # one query's scores are the total as they are
        for text in texts:
            part = weighted(text, open_request_weight, scores)
            total = part if total is None else np.add(total, part, dtype=np.float64)
        if total is not None:
            sums.append(total)
    if split is None:
        return sums[0] if sums else None
    lead, translation = sums
    return normalized(lead.astype(np.float64)) + TRANSLATION_WEIGHT * normalized(
        translation.astype(np.float64)
    )
