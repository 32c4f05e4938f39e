"""The leaner ranking path ranks exactly as before (issue 27, item 5).

`ToolIndex.search` now sums bm25s's postings with one indexed ``+=`` per token
(`Corpus.scores`), keeps bm25s's float32 scores for a plain one-query search and picks
the top with array methods; ``tool_search`` takes (tool, wire) pairs from
`ToolIndex.top` instead of a `SearchHit` per hit. Each is checked here against the way
it was done before (bm25s's ``get_scores_from_ids``, float64 totals, a lexsort on
(score, registry order)), on the pooled shared/data catalogs: thousands of tools, many
ties, English, Chinese, mixed and several-query searches, limits from 1 to past the
number of hits, with and without runtime tools.
"""

from __future__ import annotations

import dataclasses
import unicodedata

import numpy as np
import pytest

from conftest import shared_data
from contextchef import RankerConfig, Tool, load_catalog
from contextchef.search._index import ToolIndex, _is_cjk_char, tokenize
from contextchef.search._scripts import TRANSLATION_WEIGHT, split_request

QUERIES: list[list[str]] = [
    ["list open pull requests in a repository"],
    ["get the current weather forecast for a city"],
    ["read a text file from disk"],
    ["search issues by label"],
    ["send an email to a colleague"],
    ["file"],
    ["查询天气预报 weather forecast"],
    ["翻译文本"],
    ["图片生成", "image generation"],
    ["read a text file", "take a screenshot"],
    ["create", "update", "delete"],
    ["zzzzqqqq"],
]
LIMITS = [1, 5, 15, 60, 100_000]


@pytest.fixture(scope="module")
def entries() -> list[tuple[Tool, str]]:
    data = shared_data()
    files = sorted((data / "retrieval").glob("*.catalog.json"))
    files += sorted((data / "catalogs").glob("*.json"))
    tools = [
        t
        for p in files
        for t in load_catalog(p, server=p.name.split(".")[0], repair_schemas=True).tools
    ]
    return [(t, f"{t.server}__{t.name}") for t in tools]


@pytest.fixture(scope="module")
def index(entries: list[tuple[Tool, str]]) -> ToolIndex:
    # BM25 as it ranked before; Chinese queries against this English catalog read through
    # the dictionary otherwise (tests/search/test_crosslingual.py)
    return ToolIndex(entries, ranker=RankerConfig(crosslingual=False))


def _before(index: ToolIndex, queries: list[str], limit: int) -> list[tuple[int, float]]:
    """The ranking as `ToolIndex.search` computed it before (bm25 ranker)."""
    corpus = index._corpus.get()  # type: ignore[union-attr]
    n = len(index)

    def scores(tokens: list[str]) -> np.ndarray:
        known = [corpus.vocab[t] for t in tokens if t in corpus.vocab]
        out = np.zeros(n, dtype=np.float64)
        if known:
            out[: index._main] += corpus.bm25.get_scores_from_ids(known)
        if index._main < n:
            out[index._main :] += index._extra.scores(corpus, tokens)
        return out

    def summed(texts: list[str]) -> np.ndarray:
        total = np.zeros(n, dtype=np.float64)
        for query in texts:
            tokens = tokenize(unicodedata.normalize("NFKC", query))
            one = scores(tokens)
            strong = [t for t in tokens if not _is_cjk_char(t)]
            if strong and len(strong) < len(tokens):
                one[scores(strong) <= 0] = 0
            total = total + one
        return total

    # a request in English and Chinese: the English leads, the Chinese counts for a fifth
    split = split_request(queries, english=index._corpus.english)  # type: ignore[union-attr]
    if split is None:
        total = summed(queries)
    else:
        lead, other = (summed(texts) for texts in split)
        total = lead / lead.max() + TRANSLATION_WEIGHT * (
            other / other.max() if other.max() > 0 else other
        )
    candidates = np.flatnonzero(total > 0)
    order = candidates[np.lexsort((candidates, -total[candidates]))][:limit]
    return [(int(i), float(total[i])) for i in order]


def test_real_corpus_postings_name_each_document_once(index: ToolIndex) -> None:
    corpus = index._corpus.get()  # type: ignore[union-attr]
    assert corpus.distinct  # the fast sum applies to the catalogs tool_search serves
    matrix = corpus.bm25.scores
    indices, indptr = matrix["indices"], matrix["indptr"]
    spans = zip(indptr[:-1].tolist(), indptr[1:].tolist(), strict=True)
    assert all(np.unique(indices[a:b]).size == b - a for a, b in spans)


def test_scores_equal_bm25s_bit_for_bit(index: ToolIndex) -> None:
    corpus = index._corpus.get()  # type: ignore[union-attr]
    fallback = dataclasses.replace(corpus, distinct=False)  # bm25s's own np.add.at
    for queries in QUERIES:
        for query in queries:
            tokens = tokenize(query)
            ids = [corpus.vocab[t] for t in tokens if t in corpus.vocab]
            ids += ids[:1]  # a token given twice counts twice, as in bm25s
            want = corpus.bm25.get_scores_from_ids(ids)
            got = corpus.scores(ids)
            assert got.dtype == want.dtype
            assert np.array_equal(got, want)
            assert np.array_equal(fallback.scores(ids), want)


@pytest.mark.parametrize("limit", LIMITS)
def test_search_ranks_as_before(index: ToolIndex, limit: int) -> None:
    for queries in QUERIES:
        hits = index.search(queries, limit=limit)
        want = _before(index, queries, limit)
        entries = index._entries
        assert [(h.tool, h.wire_name) for h in hits] == [entries[i] for i, _ in want]
        assert [h.score for h in hits] == [score for _, score in want]
        assert all(type(h.score) is float for h in hits)
        assert index.top(queries, limit=limit) == [(h.tool, h.wire_name) for h in hits]


def test_search_with_runtime_tools_ranks_as_before(
    index: ToolIndex, entries: list[tuple[Tool, str]]
) -> None:
    index.search(["warm"], limit=1)  # built: the extension tokenizes its documents now
    extra = [
        Tool(name="weather_now", description="Current weather for a city.", source="runtime"),
        Tool(name="read_notes", description="Read a text file of notes.", source="runtime"),
    ]
    grown = index.extended([(t, t.name) for t in extra])
    for queries in QUERIES:
        for limit in (5, 60):
            hits = grown.search(queries, limit=limit)
            want = _before(grown, queries, limit)
            assert [(h.wire_name, h.score) for h in hits] == [
                (grown._entries[i][1], s) for i, s in want
            ]


def _full_width(text: str) -> str:
    """ASCII letters as an input method's full-width mode types them (U+FF01..U+FF5E)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def test_a_full_width_query_ranks_as_its_ascii_form(index: ToolIndex) -> None:
    """breakit9 04: a full-width "SCREENSHOT" (an input method's full-width mode) found
    nothing; NFKC reads it as ASCII."""
    wide = index.search([_full_width("SCREENSHOT the page")], limit=5)
    assert wide and wide == index.search(["SCREENSHOT the page"], limit=5)
    mixed = index.search(["\u622a\u56fe " + _full_width("SCREENSHOT")], limit=5)
    assert mixed == index.search(["\u622a\u56fe SCREENSHOT"], limit=5)
