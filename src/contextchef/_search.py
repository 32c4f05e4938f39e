"""The tool index: exact lookup and BM25 ranking (search layer).

Each tool becomes one BM25 document (via `bm25s`) made of its name parts (split on
``_ - . /`` and camelCase, counted twice so names weigh more than prose), its server,
description, parameter names and tags. Text is lower-cased; runs of CJK characters are
indexed per character so Chinese text is searchable; English stop words are dropped.
Ties are broken by registry order, so the same query always gives the same ranking.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from contextchef._tool import Tool

__all__ = ["SearchHit", "ToolIndex", "tokenize"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z0-9]+|[\u3400-\u9fff\uf900-\ufaff]")
_STOP = frozenset(STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Split text into lower-case search tokens.

    ``createIssue``/``create_issue`` -> ``create``, ``issue``; each CJK character is a
    token; English stop words are removed.
    """
    spaced = _CAMEL.sub(" ", text)
    return [t for t in (m.group(0).lower() for m in _WORD.finditer(spaced)) if t not in _STOP]


def _document(tool: Tool, wire: str) -> list[str]:
    props = tool.input_schema.get("properties")
    params = " ".join(props) if isinstance(props, dict) else ""
    name_tokens = tokenize(tool.name) + tokenize(wire)
    return [
        *name_tokens,
        *name_tokens,
        *tokenize(tool.server or ""),
        *tokenize(tool.description),
        *tokenize(params),
        *tokenize(" ".join(tool.tags)),
    ]


@dataclass(frozen=True, kw_only=True)
class SearchHit:
    """One ranked result.

    Attributes:
        tool: The tool.
        wire_name: Its provider-legal name.
        score: BM25 score (higher is better; 0 means no query term matched).
    """

    tool: Tool
    wire_name: str
    score: float


class ToolIndex:
    """An immutable search index over a fixed list of (tool, wire name) pairs.

    Build a new index when the tool set changes (the session keys it on the registry
    fingerprint).
    """

    def __init__(self, entries: Sequence[tuple[Tool, str]]) -> None:
        self._entries = tuple(entries)
        self._by_wire = {wire: i for i, (_, wire) in enumerate(self._entries)}
        self._bm25: bm25s.BM25 | None = None
        docs = [_document(tool, wire) or [wire.lower()] for tool, wire in self._entries]
        if docs:
            self._bm25 = bm25s.BM25()
            self._bm25.index(docs, show_progress=False)
            self._vocab = set(self._bm25.vocab_dict)

    def __len__(self) -> int:
        return len(self._entries)

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
        own = [i for i, (t, _) in enumerate(self._entries) if t.name == name]
        if own:
            return own
        low = name.lower()
        return [i for i, (t, w) in enumerate(self._entries) if low in (w.lower(), t.name.lower())]

    def search(self, queries: Sequence[str], *, limit: int) -> list[SearchHit]:
        """Rank tools for one or more queries (scores are summed over queries).

        Returns:
            At most `limit` hits with a positive score, best first; ties in registry
            order.
        """
        if self._bm25 is None or limit <= 0:
            return []
        total = np.zeros(len(self._entries), dtype=np.float64)
        for query in queries:
            tokens = [t for t in tokenize(query) if t in self._vocab]
            if tokens:
                total += self._bm25.get_scores(tokens)
        order = sorted(
            (i for i in range(len(self._entries)) if total[i] > 0),
            key=lambda i: (-total[i], i),
        )
        return [
            SearchHit(
                tool=self._entries[i][0], wire_name=self._entries[i][1], score=float(total[i])
            )
            for i in order[:limit]
        ]
