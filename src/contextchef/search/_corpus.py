"""BM25 corpora (bm25s) and the group level of two-level ranking (search layer).

`Corpus` is one bm25s index plus the statistics `ToolIndex` needs to score documents
added later. `GroupLevel` ranks tool groups (servers): one document per group, made of
the server name (twice, like tool names), its description (an MCP server's
``instructions``) and the documents of all its tools; `contextchef.search._rankers.lift`
fuses its scores into the tools'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contextchef.tools._tool import Tool

if TYPE_CHECKING:
    import bm25s
    import numpy as np

__all__ = ["Corpus", "Extras", "GroupLevel", "build_corpus"]


@dataclass(frozen=True)
class Corpus:
    """The bm25s index of a tool set plus the statistics needed to score extra docs."""

    bm25: bm25s.BM25
    vocab: dict[str, int]
    doc_freq: np.ndarray
    num_docs: int
    avg_len: float

    def scores(self, tokens: list[str]) -> np.ndarray:
        """BM25 score of every document for one query's `tokens` (unknown ones ignored)."""
        import numpy as np

        known = [self.vocab[t] for t in tokens if t in self.vocab]
        if not known:
            return np.zeros(self.num_docs)
        return np.asarray(self.bm25.get_scores_from_ids(known), dtype=np.float64)

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


def build_corpus(docs: list[list[str]]) -> Corpus:
    import bm25s
    import numpy as np

    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(tok, len(vocab)) for tok in doc] for doc in docs]
    bm25 = bm25s.BM25()
    bm25.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
    indptr = np.asarray(bm25.scores["indptr"])
    return Corpus(
        bm25=bm25,
        vocab=vocab,
        doc_freq=np.diff(indptr),
        num_docs=len(docs),
        avg_len=sum(map(len, docs)) / len(docs),
    )


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
        out = self.corpus.scores(tokens)
        if strong and len(strong) < len(tokens):
            out[self.corpus.scores(strong) <= 0] = 0
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
