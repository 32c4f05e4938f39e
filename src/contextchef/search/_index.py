"""The tool index: exact lookup and BM25 ranking (search layer).

Each tool becomes one BM25 document (via `bm25s`) made of its name parts (split on
``_ - . /`` and camelCase, counted twice so names weigh more than prose), its server,
description, tags, and the names and descriptions of its parameters (nested ones too).

Tokens: Latin words are lower-cased, stripped of English stop words and stemmed with
Snowball (PyStemmer); each run of CJK characters gives its characters and its character
bigrams, so Chinese queries match Chinese text without a segmentation dictionary.
Measured on the shared retrieval sets (benchmarks/RESULTS.md): stemming lifts recall@5
by 2-8 points on the English sets; on ACEBench-zh, unigrams + bigrams reach 0.851
against 0.809 for jieba's search-mode segmentation plus unigrams (and need no 2 s
dictionary load); parameter descriptions add another 4-8 points on BFCL-live and
ACEBench-zh. A tool that shares only single CJK characters with a query that has bigrams
or words is no match (文件 and 邮件 share 件): on ACEBench-zh that cuts the tools a query
hits by 41% at the same recall. A Chinese query against a catalog that is mostly English
also scores its English glosses from CC-CEDICT when the ``crosslingual`` extra is
installed (`contextchef.search._bilingual`, `RankerConfig.crosslingual`). Ties are
broken by registry order, so the same query always gives the same ranking. Names are
looked up through dictionaries and a trigram index (misspelled names:
`ToolIndex.near_names`), so lookups do not scan the catalog.

With a ``semantic`` or ``hybrid`` `RankerConfig`, each query's BM25 scores are fused with
embedding similarity (`contextchef.search._rankers`); exact lookups and near-name
matching never change. With a ``group_weight`` (the ``two-level`` rankers), the tools'
groups (servers) get BM25 documents of their own: the server name (twice), its
description (an MCP server's ``instructions``) and the documents of all its tools; a
query's group scores then lift the tools of the groups it matches (`lift`).
"""

from __future__ import annotations

import copy
import functools
import re
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contextchef._overlay import layered
from contextchef.search._bilingual import (
    ENGLISH_CATALOG_SHARE,
    crosslingual_scores,
    dictionary,
    translated,
)
from contextchef.search._cjk import CJK as _CJK
from contextchef.search._corpus import Corpus, Extras, GroupLevel, build_corpus, top_positive
from contextchef.search._rankers import RankerConfig, SemanticPart, embedding_text, lift, normalized
from contextchef.search._scripts import request_scores
from contextchef.tools._tool import Tool

if TYPE_CHECKING:
    import numpy as np

# bm25s, numpy and PyStemmer are imported by the first search (tokenize or a ranked
# query), not by ``import contextchef``: a session that never searches never pays for
# them (benchmarks/import_time.py). Building an index is lazy for the same reason.

__all__ = ["SearchHit", "ToolIndex", "fold", "fold_tokens", "tokenize"]

_ALNUM = re.compile(r"[A-Za-z0-9]+")
_CAMEL_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])|[A-Z]+")
_STEMS: dict[str, str] = {}
_STEM_CACHE_LIMIT = 500_000
_TEXT_TOOLS: list[Any] = []  # [stop words, stemmer], filled by the first tokenize
_TEXT_TOOLS_LOCK = threading.Lock()


def _text_tools() -> tuple[frozenset[str], Any]:
    """English stop words (bm25s's list) and the Snowball stemmer, loaded once."""
    if not _TEXT_TOOLS:
        with _TEXT_TOOLS_LOCK:
            if not _TEXT_TOOLS:
                import Stemmer
                from bm25s.stopwords import STOPWORDS_EN

                _TEXT_TOOLS.extend([frozenset(STOPWORDS_EN), Stemmer.Stemmer("english")])
    return _TEXT_TOOLS[0], _TEXT_TOOLS[1]


def _stem(word: str) -> str:
    stem: str = _text_tools()[1].stemWord(word)
    if len(_STEMS) < _STEM_CACHE_LIMIT:
        _STEMS[word] = stem
    return stem


def _words(text: str) -> list[str]:
    """Lower-case Latin words, camelCase split, stop words dropped."""
    stop = _text_tools()[0]
    out: list[str] = []
    for word in _ALNUM.findall(text):
        if word.islower() or word.isupper() or word.isdigit():
            low = word.lower()
            if low not in stop:
                out.append(low)
        else:  # mixed case: createIssue, HTTPServer, v2Api
            out += [p for p in map(str.lower, _CAMEL_PART.findall(word)) if p not in stop]
    return out


def tokenize(text: str) -> list[str]:
    """Split text into search tokens (see the module docstring).

    ``createIssues``/``create_issues`` -> ``creat``, ``issu``; ``图片生成`` -> ``图``,
    ``片``, ``生``, ``成``, ``图片``, ``片生``, ``生成``.
    """
    stems = _STEMS
    out = [stems.get(w) or _stem(w) for w in _words(text)]
    if not text.isascii():
        for run in _CJK.findall(text):
            out.extend(run)
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


_OTHER_WORD = re.compile(r"[^\W\d_]+")


def fold(text: str) -> str:
    """`text` with accents folded and non-ASCII letters case-folded, ASCII case kept.

    NFKD, then combining marks dropped (``café`` -> ``cafe``, ``ﬁ`` -> ``fi``), then
    `str.casefold` on the characters that are not ASCII (``Straße`` -> ``Strasse``);
    ASCII letters keep their case so `tokenize` can still split camelCase.
    """
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(
        ch if ch.isascii() else ch.casefold() for ch in decomposed if not unicodedata.combining(ch)
    )


def fold_tokens(text: str) -> list[str]:
    """`tokenize` over `fold` (text), plus tokens for what `tokenize` splits or drops.

    Documents and queries of the archive search go through this same function, so case
    and accents never decide a match: a mixed-case identifier (``CamelCaseName``,
    ``SECRET007x``) also gives its whole lower-cased word, stemmed as `tokenize` stems
    (so ``camelcasename`` and ``SECRET007X`` find it, and its camelCase parts still
    match as in the tool search); words of other scripts than Latin and CJK (Cyrillic,
    Greek, ...) give their case-folded words, which `tokenize` drops.
    """
    folded = fold(text)
    out = tokenize(folded)
    stop = _text_tools()[0]
    for word in _ALNUM.findall(folded):
        if not (word.islower() or word.isupper() or word.isdigit()):
            low = word.lower()
            if low not in stop:
                out.append(_STEMS.get(low) or _stem(low))
    if not folded.isascii():
        out += [w for w in _OTHER_WORD.findall(folded) if not w.isascii() and not _CJK.search(w)]
    return out


def _is_cjk_char(token: str) -> bool:
    """A single CJK character (`tokenize` gives each one, besides the bigrams)."""
    return len(token) == 1 and _CJK.fullmatch(token) is not None


def _schema_text(node: object, names: list[str], prose: list[str], depth: int = 0) -> None:
    """Collect parameter names and descriptions, nested objects and array items included."""
    if not isinstance(node, dict) or depth > 6:
        return
    props = node.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            names.append(str(name))
            if isinstance(sub, dict):
                desc = sub.get("description")
                if isinstance(desc, str):
                    prose.append(desc)
                _schema_text(sub, names, prose, depth + 1)
    items = node.get("items")
    if isinstance(items, dict):
        _schema_text(items, names, prose, depth + 1)


def _document(tool: Tool, wire: str) -> list[str]:
    name_tokens = tokenize(tool.name if tool.name == wire else f"{tool.name} {wire}")
    names = [tool.server or "", *tool.tags]
    prose = [tool.description]
    _schema_text(tool.input_schema, names, prose)
    return [
        *name_tokens,
        *name_tokens,
        *tokenize(" ".join(names)),
        *tokenize("\n".join(prose)),
    ]


@dataclass(frozen=True, kw_only=True)
class SearchHit:
    """One ranked result.

    Attributes:
        tool: The tool.
        wire_name: Its provider-legal name.
        score: Higher is better: the BM25 score summed over queries under the ``bm25``
            ranker; under ``semantic`` / ``hybrid`` each query's score is first
            normalized to [0, 1] (see `contextchef.search._rankers`).
    """

    tool: Tool
    wire_name: str
    score: float


NEAR_CANDIDATES = 200
"""Most names `ToolIndex.near_names` scores (those sharing most trigrams with the name)."""


def _trigrams(name: str) -> set[str]:
    padded = f"\x02{name}\x03"
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


@dataclass
class _Names:
    """Exact-name and trigram lookups over an index's entries (see `ToolIndex._lookup`)."""

    own: dict[str, list[int]]
    lower: dict[str, list[int]]
    grams: dict[str, np.ndarray]
    size: int

    @classmethod
    def build(cls, entries: Sequence[tuple[Tool, str]], *, start: int = 0) -> _Names:
        """The lookups of `entries`, numbered from `start`."""
        import numpy as np

        own: dict[str, list[int]] = {}
        lower: dict[str, list[int]] = {}
        grams: dict[str, list[int]] = {}
        for i, (tool, wire) in enumerate(entries, start):
            own.setdefault(tool.name, []).append(i)
            spellings = {wire.lower(), tool.name.lower()}
            for spelling in sorted(spellings):
                lower.setdefault(spelling, []).append(i)
            for gram in set().union(*map(_trigrams, spellings)):
                grams.setdefault(gram, []).append(i)
        postings = {g: np.asarray(ids, dtype=np.int64) for g, ids in grams.items()}
        return cls(own=own, lower=lower, grams=postings, size=start + len(entries))

    def candidates(self, low: str) -> list[int]:
        """Entries sharing the most trigrams with `low`, most first (registry order on ties)."""
        import numpy as np

        found = [self.grams[g] for g in _trigrams(low) if g in self.grams]
        if not found:
            return []
        shared = np.bincount(np.concatenate(found), minlength=self.size)
        hit = np.flatnonzero(shared)
        if hit.size > NEAR_CANDIDATES:
            top = np.argpartition(-shared[hit], NEAR_CANDIDATES - 1)[:NEAR_CANDIDATES]
            hit = hit[top]
        order = np.lexsort((hit, -shared[hit]))
        return [int(i) for i in hit[order]]


class _LazyCorpus:
    """The BM25 corpus and the name index of an index's base entries, built on first use.

    Shared by an index and every index `ToolIndex.extended` derives from it, so each is
    built at most once whichever of them needs it first; the first ranked search builds
    both (the name index with the search index: a typo lookup after it builds nothing;
    issue 27). Thread-safe.
    """

    def __init__(
        self, entries: tuple[tuple[Tool, str], ...], groups: Mapping[str, str] | None = None
    ) -> None:
        self._entries = entries
        self._group_text = groups
        self._corpus: Corpus | None = None
        self.groups: GroupLevel | None = None
        self.english = True  # fewer than half the documents hold CJK (set by `get`)
        self._reverse: Corpus | None = None
        self._names: _Names | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        """Whether the corpus has been built (by a search)."""
        return self._corpus is not None

    def get(self) -> Corpus:
        corpus = self._corpus
        if corpus is None:
            self.names()
            with self._lock:
                if self._corpus is None:
                    docs = [_document(tool, wire) or [wire.lower()] for tool, wire in self._entries]
                    if self._group_text is not None:
                        self.groups = GroupLevel.build(
                            self._entries, docs, self._group_text, tokenize
                        )
                    cjk = sum(1 for doc in docs if not all(t.isascii() for t in doc))
                    self.english = cjk < ENGLISH_CATALOG_SHARE * len(docs)
                    self._corpus = build_corpus(docs)
                corpus = self._corpus
        return corpus

    def reverse(self) -> Corpus:
        """The base entries' documents in Chinese words (`Dictionary.reverse`), built once."""
        corpus = self.get()
        if self._reverse is None:
            table = dictionary().reverse(tokenize)
            with self._lock:
                if self._reverse is None:
                    self._reverse = corpus.reversed(table, tokenize)
        return self._reverse

    def names(self) -> _Names:
        names = self._names
        if names is None:
            with self._lock:
                if self._names is None:
                    self._names = _Names.build(self._entries)
                names = self._names
        return names


class ToolIndex:
    """An immutable search index over a fixed list of (tool, wire name) pairs.

    Build a new index when the tool set changes. Tools added at run time go through
    `extended`, which keeps the built index and scores the few new documents with the
    same BM25 variant (bm25s's default, Lucene: ``idf = ln(1 + (N - df + 0.5) /
    (df + 0.5))``, ``tfc = tf / (tf + k1 * (1 - b + b * len / avg_len))``) against the
    built corpus's statistics, so adding one tool costs one tokenization, not a rebuild.

    The BM25 corpus is built by the first ranked `search` (exact lookup and `near_names`
    never need it), and the extra documents are tokenized then too; the ranking is the
    same whenever that happens.

    Args:
        entries: (tool, wire name) pairs, in registry order.
        ranker: How queries are ranked (None: ``bm25``). A ``semantic`` or ``hybrid``
            ranker embeds the tools on the first search (in the background by default,
            BM25 answering until the vectors are ready) and embeds tools added through
            `extended` at once.
        groups: Server name -> description (or MCP ``instructions``), read when the
            ranker has a ``group_weight``; groups are the entries' servers (a server
            missing here has an empty description). Tools added through `extended`
            take part in their group's score only if the group was in the base entries.

    Raises:
        MissingExtraError: A semantic ranker without the ``semantic`` extra.
        EmbeddingModelError: Its model file is missing or not the expected one.
    """

    def __init__(
        self,
        entries: Sequence[tuple[Tool, str]],
        *,
        ranker: RankerConfig | None = None,
        groups: Mapping[str, str] | None = None,
    ) -> None:
        self._entries = tuple(entries)
        self.ranker = ranker or RankerConfig()
        two_level = self.ranker.group_weight > 0
        self._group_text = dict(groups or {}) if two_level else None
        self._semantic = (
            SemanticPart(self.ranker, [embedding_text(t) for t, _ in self._entries])
            if self.ranker.kind != "bm25"
            else None
        )
        self._by_wire: Mapping[str, int] = {wire: i for i, (_, wire) in enumerate(self._entries)}
        self._corpus = _LazyCorpus(self._entries, self._group_text) if self._entries else None
        self._main = len(self._entries)
        self._extra_cache: Extras | None = Extras()
        self._names: list[_Names] | None = None
        self._members: np.ndarray | None = None
        self.memo: dict[object, Any] = {}
        """Text callers derive from this index's entries, by their key (e.g. the rendered
        ``tool_search`` entries per wire name); an `extended` index starts empty."""

    def extended(self, entries: Sequence[tuple[Tool, str]]) -> ToolIndex:
        """A new index with `entries` added, reusing this one's BM25 index."""
        if self._corpus is None:
            return ToolIndex(
                [*self._entries, *entries], ranker=self.ranker, groups=self._group_text
            )
        new = copy.copy(self)
        if self._semantic is not None:
            new._semantic = self._semantic.extended([embedding_text(t) for t, _ in entries])
        new._entries = self._entries + tuple(entries)
        start = len(self._entries)
        new._by_wire = layered(self._by_wire, {w: start + i for i, (_, w) in enumerate(entries)})
        new._extra_cache = None
        if self._corpus.built:  # searched already: tokenize just the new documents now
            docs = [_document(tool, wire) or [wire.lower()] for tool, wire in entries]
            new._extra_cache = self._extra.plus(docs)
        new._names = None
        new._members = None
        new.memo = {}
        return new

    def wait_for_vectors(self, timeout: float | None = None) -> bool:
        """Start embedding the tools if needed and wait for it (semantic rankers only).

        Returns:
            True when searches now use the embeddings; False under ``bm25``, after
            `timeout` seconds, or when embedding failed (logged; BM25 keeps answering).
        """
        return self._semantic.wait(timeout) if self._semantic is not None else False

    @property
    def _extra(self) -> Extras:
        """The entries added by `extended`, tokenized (on first use), in order."""
        extra = self._extra_cache
        if extra is None:
            docs = [_document(t, w) or [w.lower()] for t, w in self._entries[self._main :]]
            extra = Extras().plus(docs)
            self._extra_cache = extra
        return extra

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, wire_name: object) -> bool:
        return wire_name in self._by_wire

    def tool(self, wire_name: str) -> Tool | None:
        """The tool indexed under `wire_name`, or None."""
        at = self._by_wire.get(wire_name)
        return self._entries[at][0] if at is not None else None

    def exact(self, names: Sequence[str]) -> tuple[list[SearchHit], list[str]]:
        """Look names up exactly.

        A name matches a wire name, else a tool's own name (every tool with that own
        name), else either case-insensitively.

        Returns:
            (hits in request order without duplicates, names that matched nothing).
        """
        hits: list[SearchHit] = []
        missing: list[str] = []
        seen: set[int] = set()
        for name in names:
            found = self._lookup(name)
            if not found:
                missing.append(name)
            for i in found:
                if i not in seen:
                    seen.add(i)
                    tool, wire = self._entries[i]
                    hits.append(SearchHit(tool=tool, wire_name=wire, score=float("inf")))
        return hits, missing

    def _lookup(self, name: str) -> list[int]:
        if name in self._by_wire:
            return [self._by_wire[name]]
        parts = self._name_index()
        own = [i for names in parts for i in names.own.get(name, ())]
        return own or [i for names in parts for i in names.lower.get(name.lower(), ())]

    def _name_index(self) -> list[_Names]:
        """The name lookups: the base entries' (shared), then those `extended` added.

        Built on first use (a search by keywords builds the base one with its corpus).
        """
        if self._names is None:
            base = [self._corpus.names()] if self._corpus is not None else []
            start = self._main if base else 0
            self._names = [*base, _Names.build(self._entries[start:], start=start)]
        return self._names

    def near_names(self, name: str, *, limit: int, cutoff: float = 0.8) -> list[SearchHit]:
        """Tools whose wire or own name is spelled almost like `name` (typos, plurals).

        Candidates come from a trigram index (the names sharing the most trigrams with
        `name`, at most `NEAR_CANDIDATES`), so the cost follows the few similar names,
        not the catalog size; each is then scored in C by rapidfuzz's normalized Indel
        similarity (``fuzz.ratio`` / 100, lower-cased; >= `cutoff`), best first,
        registry order on ties.
        """
        from rapidfuzz import fuzz, process

        low = name.lower()
        ids = [i for names in self._name_index() for i in names.candidates(low)]
        spellings: list[str] = []
        owners: list[int] = []
        for i in ids:
            tool, wire = self._entries[i]
            for candidate in {wire.lower(), tool.name.lower()}:
                spellings.append(candidate)
                owners.append(i)
        best: dict[int, float] = {}
        found = process.extract(
            low, spellings, scorer=fuzz.ratio, score_cutoff=cutoff * 100, limit=None
        )
        for _, score, at in found:
            best[owners[at]] = max(best.get(owners[at], 0.0), score / 100)
        ranked = sorted((-score, i) for i, score in best.items())[:limit]
        return [
            SearchHit(tool=self._entries[i][0], wire_name=self._entries[i][1], score=-neg)
            for neg, i in ranked
        ]

    def search(self, queries: Sequence[str], *, limit: int) -> list[SearchHit]:
        """Rank tools for one or more queries (scores are summed over queries).

        A request in two scripts ranks by the catalog's (`contextchef.search._scripts`).

        Returns:
            At most `limit` hits with a positive score, best first; ties in registry
            order.

        Raises:
            MissingExtraError, EmbeddingModelError: Only from a semantic ranker's
                first search, when the model cannot be loaded.
        """
        order, scores = self._ranked(queries, limit)
        entries = self._entries
        return [
            SearchHit(tool=entries[i][0], wire_name=entries[i][1], score=score)
            for i, score in zip(order, scores, strict=True)
        ]

    def top(self, queries: Sequence[str], *, limit: int) -> list[tuple[Tool, str]]:
        """`search`'s hits as the index's own (tool, wire name) pairs, without scores.

        No `SearchHit` per hit, for callers that render them (``tool_search``; issue 27).
        """
        return [self._entries[i] for i in self._ranked(queries, limit, with_scores=False)[0]]

    def _ranked(
        self, queries: Sequence[str], limit: int, *, with_scores: bool = True
    ) -> tuple[list[int], list[float]]:
        """(entry positions, their scores or []): the best `limit` with a positive score."""
        lazy = self._corpus
        if lazy is None or limit <= 0:
            return [], []
        lazy.get()  # sets lazy.english
        scores = functools.partial(self._query_scores, lazy)
        total = request_scores(queries, scores, lazy.english, self.ranker.open_request_weight)
        if total is None:
            return [], []
        named = [i for query in queries for i in self._lookup(query)]  # a name: first
        return top_positive(total, limit, scores=with_scores, first=named)

    def _query_scores(self, lazy: _LazyCorpus, query: str) -> np.ndarray:
        """One query text's scores of every entry: BM25, fused, lifted by its groups."""
        corpus, groups = lazy.get(), lazy.groups
        plain = self._semantic is None and groups is None
        # full-width Latin and digits (an input method's full-width mode) read as ASCII
        ascii = query.isascii()  # no CJK, nothing to translate (issue 27: fewer steps)
        query = query if ascii else unicodedata.normalize("NFKC", query)
        tokens = tokenize(query)
        # plain BM25 keeps bm25s's float32 scores (exact in float64: same order, same
        # values); fusing, lifting and summing queries work in float64 as before
        scores = self._scores(corpus, tokens, wide=not plain)
        strong = tokens if ascii else [t for t in tokens if not _is_cjk_char(t)]
        if strong and len(strong) < len(tokens):
            # one shared CJK character is no match (文件 and 邮件 share 件): a tool
            # must share a bigram or a word with the query, then every token counts
            scores[self._scores(corpus, strong, wide=False) <= 0] = 0
        cross = not ascii and lazy.english
        english = translated(query, self.ranker.crosslingual, tokenize) if cross else None
        if english:  # a Chinese query, an English catalog (`_bilingual`)
            scores = crosslingual_scores(
                english,
                scores,
                tokens,
                strong,
                lambda t: self._scores(corpus, [t]),
                reverse=lazy.reverse(),
            )
        fused = (
            None
            if self._semantic is None
            else self._semantic.scores(query, scores, tokens=len(set(tokens)))
            if not english
            else self._semantic.scores(english.text, scores, translated=True)
        )
        if groups is not None:
            one = normalized(scores if fused is None else fused)
            return lift(
                self.ranker.group_weight,
                tools=one,
                groups=groups.scores(tokens, strong),
                members=self._group_members(groups),
            )
        if self._semantic is None:
            return scores
        return normalized(scores) if fused is None else fused

    def _group_members(self, groups: GroupLevel) -> np.ndarray:
        """Per entry, its group's index in `groups` (-1: none); computed once per index."""
        if self._members is None:
            self._members = groups.members(self._entries)
        return self._members

    def _scores(self, corpus: Corpus, tokens: list[str], *, wide: bool = True) -> np.ndarray:
        """BM25 score of every entry (built and extra documents) for one query's tokens.

        Float64; with `wide` False and no runtime tools, bm25s's float32 (`Corpus.scores`).
        """
        import numpy as np

        known = [corpus.vocab[t] for t in tokens if t in corpus.vocab]
        if known and self._main == len(self._entries):  # no runtime tools: one array
            scores = corpus.scores(known)
            return scores.astype(np.float64) if wide else scores
        scores = np.zeros(len(self._entries), dtype=np.float64)
        if known:
            scores[: self._main] += corpus.scores(known)
        if self._main < len(self._entries):
            scores[self._main :] += self._extra.scores(corpus, tokens)
        return scores
