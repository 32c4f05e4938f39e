"""Ranking the archive's messages (search layer): BM25 over every archived message.

Each message of each `Archive` entry is one document, indexed with the same bm25s index and
tokenizer as the tool search (`tokenize`, `build_corpus`: stemming, stop words, camelCase
and CJK), over folded text (`fold_tokens`: NFKD accent folding and case folding, a
mixed-case identifier also kept whole, other scripts' words kept), applied the same way
to the messages and to the query: ``cafe`` finds ``café``, ``camelcasename`` finds
``CamelCaseName`` and ``SECRET007x`` finds ``SECRET007X``. A query that shares no word
with the archive gets no hit, never the least unrelated message. Deterministic: the
documents are taken in locator order and hits are ordered by score, then by locator and
message, whatever order the entries were added in. The ``search_archive`` tool that shows
the hits to the model is `contextchef.deferred._recall`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from contextchef._errors import UsageError, check_int, shown
from contextchef.history._archive import ARCHIVE_TOOL, Archive, ArchiveEntry

if TYPE_CHECKING:
    from contextchef.search._corpus import Corpus

# the index modules (and bm25s) load with the first search, not with the session (issue 27)

__all__ = ["DEFAULT_HITS", "ArchiveHit", "search_archive"]

DEFAULT_HITS = 5
"""Hits a search returns when the model gives no ``limit``."""


@dataclass(frozen=True, kw_only=True)
class ArchiveHit:
    """One archived message matching a query.

    Attributes:
        locator: The entry's handle.
        reason: Why the entry's messages left the model's view.
        index: The message's history index when it was archived.
        offset: Byte offset of the message's text in the entry (read from there).
        score: Its BM25 score (higher is better).
        text: The message's text as archived.
    """

    locator: str
    reason: str
    index: int
    offset: int
    score: float
    text: str


class _Docs:
    """The BM25 corpus of an archive's messages, rebuilt when the entries change."""

    def __init__(self) -> None:
        self.key: tuple[str, ...] = ()
        self.corpus: Corpus | None = None
        self.docs: list[tuple[ArchiveEntry, int, str]] = []


def _docs(archive: Archive) -> _Docs:
    from contextchef.search._corpus import build_corpus
    from contextchef.search._index import fold_tokens

    entries = sorted(archive.entries, key=lambda e: e.locator)  # order-free: canonical
    key = tuple(e.locator for e in entries)
    cached = archive.search_index
    if isinstance(cached, _Docs) and cached.key == key:
        return cached
    docs = _Docs()
    docs.key = key
    for entry in entries:
        data = archive.load(entry.locator)
        docs.docs += [(entry, k, entry.message_text(data, k)) for k in range(len(entry.offsets))]
    if docs.docs:
        docs.corpus = build_corpus([fold_tokens(text) for _, _, text in docs.docs])
    archive.search_index = docs
    return docs


def search_archive(archive: Archive, query: str, *, limit: int = DEFAULT_HITS) -> list[ArchiveHit]:
    """The archived messages best matching `query`, best first (at most `limit`).

    Raises:
        UsageError: `query` is not text or `limit` is not a positive integer.
    """
    if not isinstance(archive, Archive):
        raise UsageError(f"archive must be an Archive, got {shown(archive, 60)}")
    if not isinstance(query, str):
        raise UsageError(f"{ARCHIVE_TOOL}: 'query' must be a string, got {shown(query)}")
    check_int("limit", limit, minimum=1)
    from contextchef.search._index import fold_tokens

    docs = _docs(archive)
    corpus = docs.corpus
    known = (
        [] if corpus is None else [corpus.vocab[t] for t in fold_tokens(query) if t in corpus.vocab]
    )
    if corpus is None or not known:
        return []
    scores = corpus.bm25.get_scores_from_ids(known)
    ranked = sorted(
        (-float(s), d[0].locator, d[1], i)
        for i, (s, d) in enumerate(zip(scores, docs.docs, strict=True))
    )
    hits = []
    for neg, _, k, i in ranked[:limit]:
        if neg >= 0:
            break
        entry, _, text = docs.docs[i]
        hits.append(
            ArchiveHit(
                locator=entry.locator,
                reason=entry.reason,
                index=_index(text, entry.first),
                offset=entry.offsets[k],
                score=-neg,
                text=text,
            )
        )
    return hits


def _index(text: str, default: int) -> int:
    """The history index a message's ``## message <i> (<role>)`` line gives."""
    head = text.split("\n", 1)[0].split(" ")
    return int(head[2]) if len(head) > 2 and head[2].isdigit() else default
