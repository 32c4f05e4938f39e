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
other script breaks near-ties and stands in where the lead finds nothing. The request's
scores are ``normalized(lead) + TRANSLATION_WEIGHT * normalized(translation)`` (each
divided by its best, all zero stays zero), where ``lead`` sums the scores of the
catalog-script texts and ``translation`` those of the other-script texts, each scored
exactly as a query of its own (the dictionary route, the embedding model and the
two-level lift included). Which text is which (`split_request`):

- an English catalog (`contextchef.search._bilingual.ENGLISH_CATALOG_SHARE`): a query
  without Han characters leads; in a query with Han, the Latin text before the first
  Han character and the one after the last lead when they hold two words or more
  (``"create issue 创建问题"``, or a question with a Chinese passage quoted after it)
  and the rest is a translation; a query with fewer Latin words around its Han text is
  a translation whole: Chinese with names inside (``"在 mbox 系统中创建工作空间"``,
  ``"GitHub 上创建问题"``) is one Chinese text, not two renditions. Kana and Hangul are
  not Han: a Korean request with English words in it (BFCL-live's ``"hey do 거실 에어컨
  실행"``, whose tool's description holds Korean) is ranked as before;
- a Chinese catalog (ACEBench-zh), the mirror: a query with Han leads, a query with
  Latin letters and no Han is the translation. A Chinese query is never cut: Latin
  identifiers, codes and product names are part of Chinese requests and of a Chinese
  catalog's own names (455 of ACEBench-zh's 623 queries mix the two scripts).

A request without text in both scripts (English only, Chinese only, the usual case) is
ranked as before: its queries' scores summed, a query only in the other script keeping
the dictionary route. `TRANSLATION_WEIGHT` is a small fixed share, not fitted: below 1
so that the lead's order stands wherever it is clear, above 0 so that the translation
still orders the tools the lead scores alike and finds the tools it misses
(benchmarks/bilingual_queries.py and benchmarks/RESULTS.md give the figures).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from contextchef.search._bilingual import has_han
from contextchef.search._cjk import HAN
from contextchef.search._rankers import normalized
from contextchef.search._transcript import weighted

if TYPE_CHECKING:
    import numpy as np

__all__ = ["TRANSLATION_WEIGHT", "request_scores", "split_request"]


TRANSLATION_WEIGHT = 0.2
"""The translation's share of a request written in both scripts (module docstring)."""


_LETTERS = re.compile(r"[A-Za-z]")
_WORDS = re.compile(r"[A-Za-z]{2,}")


def split_request(queries: Sequence[str], *, english: bool) -> tuple[list[str], list[str]] | None:
    """(lead texts, translation texts) of a request in both scripts, else None.

    Args:
        queries: The request's queries, in order.
        english: Whether the catalog is written in English (`_LazyCorpus.english`).

    Returns:
        None when the request has no Latin-letter text or no Han text on the side that
        would lead (it is then ranked as before); else the catalog-script texts and the
        other-script texts, in query order, neither empty (module docstring).
    """
    lead: list[str] = []
    other: list[str] = []
    leads = False  # a lead text with Latin letters (English catalog) or Han (Chinese)
    for query in queries:
        # full-width Latin (an input method's full-width mode) is Latin, as the index reads it
        query = query if query.isascii() else unicodedata.normalize("NFKC", query)
        han = has_han(query)
        if not english:
            (lead if han or not _LETTERS.search(query) else other).append(query)
            leads = leads or han
        elif not han:
            lead.append(query)
            leads = leads or _LETTERS.search(query) is not None
        else:  # "create issue 创建问题": the English words around the Chinese lead
            runs = list(HAN.finditer(query))
            head, tail = query[: runs[0].start()], query[runs[-1].end() :]
            head, tail = (t if len(_WORDS.findall(t)) >= 2 else "" for t in (head, tail))
            if head or tail:
                lead.append(f"{head} {tail}".strip())
                leads = True
            other.append(query[len(head) : len(query) - len(tail)])
    return (lead, other) if leads and other else None


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
