"""BM25 corpora (bm25s) and the group level of two-level ranking (search layer).

`Corpus` is one bm25s index plus the statistics `ToolIndex` needs to score documents
added later. `GroupLevel` ranks tool groups (servers): one document per group, made of
the server name (twice, like tool names), its description (an MCP server's
``instructions``) and the documents of all its tools; `contextchef.search._rankers.lift`
fuses its scores into the tools'.
"""

from __future__ import annotations

import functools
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from contextchef.tools._tool import Tool

if TYPE_CHECKING:
    import bm25s
    import numpy as np

__all__ = ["Corpus", "Extras", "GroupLevel", "build_corpus", "top_positive"]


@dataclass(frozen=True)
class Corpus:
    """The bm25s index of a tool set plus the statistics needed to score extra docs.

    Attributes:
        distinct: Each token's postings in bm25s's score matrix name every document at
            most once (checked when built), so `scores` may add them with one indexed
            ``+=`` per token instead of bm25s's ``np.add.at``.
        starts: The score matrix's ``indptr`` as Python ints (token id -> where its
            postings start; the next entry is where they end), read without numpy.
    """

    bm25: bm25s.BM25
    vocab: dict[str, int]
    doc_freq: np.ndarray
    num_docs: int
    avg_len: float
    distinct: bool = False
    starts: list[int] = field(default_factory=list)

    def scores(self, ids: list[int]) -> np.ndarray:
        """``bm25.get_scores_from_ids(ids)``, bit for bit (float32), in fewer numpy steps.

        bm25s sums the precomputed per-(token, document) scores of every query token with
        one ``np.add.at`` over their concatenated postings; one ``np.add.at`` per token
        (a token's postings name each document once, `distinct`) adds the same values in
        the same order without the concatenation, the ``int`` array of ids and its checks
        (issue 27: tool_search ~2x bm25s; with numpy 2, ``np.add.at`` of a slice costs
        less than an indexed ``+=``, which reads, adds and writes in three steps). Falls
        back to bm25s when postings repeat a document or a variant adds non-occurrence
        scores.
        """
        import numpy as np

        bm25 = self.bm25
        if not self.distinct or bm25.nonoccurrence_array is not None:
            found: np.ndarray = bm25.get_scores_from_ids(ids)
            return found
        matrix, starts, add = bm25.scores, self.starts, np.add.at
        data, indices = matrix["data"], matrix["indices"]
        out = np.zeros(self.num_docs, dtype=np.dtype(bm25.dtype))
        for i in ids:  # bounds as Python ints: no numpy scalar per bound (issue 27)
            start, end = starts[i], starts[i + 1]
            add(out, indices[start:end], data[start:end])
        return out

    def token_scores(self, tokens: list[str]) -> np.ndarray:
        """BM25 score of every document for one query's `tokens` (unknown ones ignored).

        Float64, shape ``(num_docs,)``; `scores` of the known tokens' ids.
        """
        import numpy as np

        known = [self.vocab[t] for t in tokens if t in self.vocab]
        if not known:
            return np.zeros(self.num_docs)
        return np.asarray(self.scores(known), dtype=np.float64)

    def reversed(
        self, table: Mapping[str, Sequence[str]], tokenize: Callable[[str], list[str]]
    ) -> Corpus:
        """A corpus with one document per document here: the words `table` maps its tokens to.

        Each distinct token of a document adds the tokens of its words (`tokenize` of
        each) once; a document none of whose tokens is in `table` gets a placeholder
        token no query has. Built from the postings, without the documents' text.
        """
        import numpy as np

        indptr = np.asarray(self.bm25.scores["indptr"])
        indices = np.asarray(self.bm25.scores["indices"])
        docs: list[list[str]] = [[] for _ in range(self.num_docs)]
        for token, vid in self.vocab.items():
            words = table.get(token)
            if words and vid + 1 < len(indptr):
                toks = [t for w in words for t in tokenize(w)]
                for d in indices[indptr[vid] : indptr[vid + 1]].tolist():
                    docs[d] += toks
        return build_corpus([doc or ["\x00"] for doc in docs])


@functools.cache
def quiet_bm25s() -> ModuleType:
    """``bm25s``, its logger given back to the host's logging configuration (once).

    ``bm25s/__init__.py`` sets its own logger to DEBUG at import (``logger.setLevel
    (logging.DEBUG)``), so a host with a root handler would print its "Building index
    from IDs objects" on every index build (the first ``tool_search`` of a tool set).
    The first build resets that level to NOTSET, so the records go by the host's own
    levels (root WARNING by default); nothing of the host's configuration is touched. A
    host that wants bm25s's debug lines sets the level after its first search.
    """
    import bm25s

    logger = logging.getLogger("bm25s")
    if logger.level == logging.DEBUG:  # as bm25s left it
        logger.setLevel(logging.NOTSET)
    module: ModuleType = bm25s
    return module


def build_corpus(docs: list[list[str]]) -> Corpus:
    import numpy as np

    bm25s = quiet_bm25s()

    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(tok, len(vocab)) for tok in doc] for doc in docs]
    bm25 = bm25s.BM25()
    bm25.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
    indptr = np.asarray(bm25.scores["indptr"])
    indices = np.asarray(bm25.scores["indices"])
    # a token's postings strictly increase (so never repeat a document): every step
    # between neighbours goes up, except where a new token's postings start
    starts = np.zeros(indices.size, dtype=bool)
    starts[indptr[:-1][indptr[:-1] < indices.size]] = True
    distinct = bool(np.all((np.diff(indices) > 0) | starts[1:]))
    return Corpus(
        bm25=bm25,
        vocab=vocab,
        doc_freq=np.diff(indptr),
        num_docs=len(docs),
        avg_len=sum(map(len, docs)) / len(docs),
        distinct=distinct,
        starts=indptr.tolist(),
    )


def top_positive(
    total: np.ndarray, limit: int, *, scores: bool = True, first: Sequence[int] = ()
) -> tuple[list[int], list[float]]:
    """The positions of the best `limit` positive scores in `total`, and the scores.

    Best first, ties in position order; the scores as Python floats (an empty list
    when `scores` is False: ``tool_search`` renders positions only). Positions in
    `first` (the tools a query names exactly) rank above every other, in score order:
    their scores are raised by the best score plus one.

    Array methods rather than numpy's module functions: the same C routines without
    their Python wrappers (a ``tool_search`` call pays each one cold; issue 27).
    """
    if first:
        total = total.astype("float64")
        total[list(first)] += max(float(total.max()), 0.0) + 1.0
    candidates = (total > 0).nonzero()[0]
    best = total[candidates]
    if candidates.size > limit:  # only those scoring at least the limit-th best can rank
        kth = best.copy()
        kth.partition(candidates.size - limit)
        keep = best >= kth[candidates.size - limit]
        candidates, best = candidates[keep], best[keep]
    # candidates ascend: a stable sort on the negated score breaks ties by position
    order = (-best).argsort(kind="stable")[:limit]
    return candidates[order].tolist(), best[order].tolist() if scores else []


@dataclass(frozen=True)
class GroupLevel:
    """The group level of a two-level index: one BM25 document per group (server)."""

    corpus: Corpus
    ids: Mapping[str, int]

    @classmethod
    def build(
        cls,
        entries: Sequence[tuple[Tool, str]],
        docs: list[list[str]],
        text: Mapping[str, str],
        tokenize: Callable[[str], list[str]],
    ) -> GroupLevel | None:
        """Groups of `entries` (by server, sorted), or None with fewer than two.

        Args:
            entries: The index's (tool, wire name) pairs.
            docs: Each entry's BM25 document (tokens).
            text: Server -> description.
            tokenize: The index's tokenizer (for server names and descriptions).
        """
        members: dict[str, list[str]] = {}
        for (tool, _), doc in zip(entries, docs, strict=True):
            if tool.server:
                members.setdefault(tool.server, []).extend(doc)
        if len(members) < 2:
            return None
        names = sorted(members)
        group_docs = []
        for name in names:
            own = tokenize(name)
            group_docs.append([*own, *own, *tokenize(text.get(name, "")), *members[name]])
        return cls(corpus=build_corpus(group_docs), ids={n: i for i, n in enumerate(names)})

    def members(self, entries: Sequence[tuple[Tool, str]]) -> np.ndarray:
        """Per entry, its group's index, or -1 (no server, or a server added later)."""
        import numpy as np

        return np.asarray([self.ids.get(t.server or "", -1) for t, _ in entries], dtype=np.intp)

    def scores(self, tokens: list[str], strong: list[str]) -> np.ndarray:
        """BM25 score per group of a query's `tokens`.

        When `strong` (the tokens that are not single CJK characters) is not all of
        `tokens`, a group must match one of them too (as tools must, `ToolIndex.search`).
        """
        out = self.corpus.token_scores(tokens)
        if strong and len(strong) < len(tokens):
            out[self.corpus.token_scores(strong) <= 0] = 0
        return out


@dataclass(frozen=True)
class Extras:
    """The documents `ToolIndex.extended` added, as postings (token -> docs, counts).

    Adding documents copies the token table and extends the touched postings only, so
    an index extended one tool at a time costs O(that tool's tokens) per tool, and a
    query scores the added documents with numpy per query token, not per document.
    """

    lengths: tuple[int, ...] = ()
    postings: Mapping[str, tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)

    def plus(self, docs: Sequence[list[str]]) -> Extras:
        postings = dict(self.postings)
        lengths = list(self.lengths)
        for doc in docs:
            j = len(lengths)
            lengths.append(len(doc))
            for token, tf in Counter(doc).items():
                ids, tfs = postings.get(token, ((), ()))
                postings[token] = ((*ids, j), (*tfs, tf))
        return Extras(lengths=tuple(lengths), postings=postings)

    def scores(self, corpus: Corpus, tokens: list[str]) -> np.ndarray:
        """BM25 score of each added document for one query's `tokens`, float64.

        Scored with `corpus`'s ``k1``, ``b`` and average length, and document frequencies
        counted over `corpus` and the added documents together (one collection).
        """
        import numpy as np

        k1, b = corpus.bm25.k1, corpus.bm25.b
        out = np.zeros(len(self.lengths), dtype=np.float64)
        lengths = np.asarray(self.lengths, dtype=np.float64)
        total = corpus.num_docs + len(self.lengths)
        for token, count in Counter(tokens).items():
            ids, tfs = self.postings.get(token, ((), ()))
            if not ids:
                continue
            vid = corpus.vocab.get(token)
            df = (int(corpus.doc_freq[vid]) if vid is not None else 0) + len(ids)
            idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
            at = np.asarray(ids, dtype=np.intp)
            tf = np.asarray(tfs, dtype=np.float64)
            norm = k1 * (1 - b + b * lengths[at] / corpus.avg_len)
            out[at] += idf * tf / (tf + norm) * count
        return out
