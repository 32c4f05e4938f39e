"""Searching and reading the archive: the ``search_archive`` tool (search layer).

One tool does both, as users of a search box expect: ``{"query": "..."}`` ranks every
archived message (each message of each `Archive` entry is one document) with BM25, the
same bm25s index and tokenizer as the tool search (`tokenize`, `build_corpus`: stemming,
stop words, camelCase and CJK), and lists the best hits with their handle and byte offset;
``{"handle": "...", "offset": N, "length": M}`` reads an entry (as ``read_offloaded`` reads
an offloaded result: offsets and lengths count bytes). A query that shares no word with the
archive gets no hit, never the least unrelated message.

Deterministic: hits are ordered by score, then by locator and message; the snippets are
the messages' own text, cut at a fixed size. What the tool returns is archived data (the
model's and tools' own words): it is capped, never interpreted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contextchef._errors import UsageError, check_int, shown
from contextchef.history._archive import ARCHIVE_TOOL, Archive, ArchiveEntry
from contextchef.history._offload import (
    OFFLOAD_READ_TOOL,
    OffloadStore,
    execute_offload_read,
    offload_read_tool,
)
from contextchef.search._corpus import Corpus, build_corpus
from contextchef.search._index import tokenize
from contextchef.tools._catalogs import tool_from_dict
from contextchef.tools._tool import Tool

__all__ = [
    "ArchiveHit",
    "archive_tool",
    "execute_archive_tool",
    "reader_tools",
    "search_archive",
]

DEFAULT_HITS = 5
"""Hits a search returns when the model gives no ``limit``."""
MAX_HITS = 20
SNIPPET_CHARS = 240
"""Characters of a hit's message shown in the hit list."""
DEFAULT_READ_BYTES = 20_000
"""Bytes a read returns when the model gives no ``length`` (the cap is 5x)."""
_MAX_READ_BYTES = 5 * DEFAULT_READ_BYTES


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
        docs.corpus = build_corpus([tokenize(text) for _, _, text in docs.docs])
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
    docs = _docs(archive)
    corpus = docs.corpus
    known = (
        [] if corpus is None else [corpus.vocab[t] for t in tokenize(query) if t in corpus.vocab]
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


def archive_tool() -> dict[str, Any]:
    """The ``search_archive`` tool as ``{"name", "description", "input_schema"}``.

    The session registers it (with a `ContextPolicy` or an ``offload_dir``) and answers
    its calls with `execute_archive_tool`.
    """
    return {
        "name": ARCHIVE_TOOL,
        "description": (
            "Search and read earlier messages that were removed from this conversation to "
            "save context (by a summary or by clearing old tool results). Pass 'query' "
            "(keywords) to find them, or 'handle' (from a summary, a cleared result or a "
            "search hit) with optional 'offset' and 'length' in bytes to read one "
            f"(default length {DEFAULT_READ_BYTES}, at most {_MAX_READ_BYTES})."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords to search for."},
                "handle": {"type": "string", "description": "An archive entry's handle."},
                "offset": {"type": "integer", "minimum": 0, "description": "Start byte."},
                "length": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": _MAX_READ_BYTES,
                    "description": "Bytes to read.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_HITS,
                    "description": f"Most hits to list (default {DEFAULT_HITS}).",
                },
            },
            "additionalProperties": False,
        },
        # it only reads what the conversation held: read-only modes keep it reachable
        "annotations": {"readOnlyHint": True, "idempotentHint": True},
    }


def _int(arguments: Mapping[str, Any], key: str, default: int) -> int:
    value = arguments.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise UsageError(f"{ARCHIVE_TOOL}: {key} must be an integer, got {shown(value)}")
    return value


def _snippet(text: str) -> str:
    body = " ".join(text.split("\n", 1)[-1].split())
    return body[:SNIPPET_CHARS] + ("…" if len(body) > SNIPPET_CHARS else "")


def execute_archive_tool(archive: Archive, arguments: Mapping[str, Any]) -> str:
    """Answer one ``search_archive`` call (arguments as in `archive_tool`'s schema).

    Returns:
        For a query: one line per hit (``<handle> offset <bytes> (<reason>, message <i>):
        <snippet>``) and how to read one, or a sentence saying nothing matched. For a
        handle: the requested bytes as text (U+FFFD where a slice cuts a character), or a
        sentence giving the entry's size when the offset is past its end.

    Raises:
        UsageError: Neither or both of ``query`` and ``handle``, a bad value, an unknown
            handle (the gate turns it into an error result).
    """
    query, handle = arguments.get("query"), arguments.get("handle")
    if (query is None) == (handle is None):
        raise UsageError(f"{ARCHIVE_TOOL}: pass either 'query' (to search) or 'handle' (to read)")
    if handle is not None:
        if not isinstance(handle, str):
            raise UsageError(f"{ARCHIVE_TOOL}: 'handle' must be a string, got {shown(handle)}")
        offset = check_int("offset", _int(arguments, "offset", 0), maximum=2**62)
        length = min(
            check_int("length", _int(arguments, "length", DEFAULT_READ_BYTES)), _MAX_READ_BYTES
        )
        data = archive.load(handle)
        text = data[offset : offset + length].decode("utf-8", errors="replace")
        return text or f"Nothing at offset {offset}: {handle} holds {len(data)} bytes."
    limit = min(check_int("limit", _int(arguments, "limit", DEFAULT_HITS), minimum=1), MAX_HITS)
    if not isinstance(query, str):
        raise UsageError(f"{ARCHIVE_TOOL}: 'query' must be a string, got {shown(query)}")
    hits = search_archive(archive, query, limit=limit)
    if not hits:
        return (
            f"Nothing in the archive ({len(archive.entries)} entries) matches {shown(query, 200)}; "
            "try other keywords."
        )
    lines = [
        f"{h.locator} offset {h.offset} ({h.reason}, message {h.index}): {_snippet(h.text)}"
        for h in hits
    ]
    top = hits[0]
    lines.append(
        f'Read a hit with {ARCHIVE_TOOL}({{"handle": "{top.locator}", "offset": {top.offset}}}).'
    )
    return "\n".join(lines)


def reader_tools(
    store: OffloadStore | None, archive: Archive | None
) -> tuple[list[Tool], dict[str, Callable[..., str]]]:
    """A session's read tools (source ``library``) and their handlers by name.

    ``read_offloaded`` over `store` and ``search_archive`` over `archive`, each only when
    given (handlers take the arguments as keywords). The session registers them with its
    other library tools: always resident and never pruned, since offloaded results,
    summaries and cleared results tell the model to call them; they are read-only, so
    read-only modes keep them.
    """
    tools: list[dict[str, Any]] = []
    handlers: dict[str, Callable[..., str]] = {}
    if store is not None:
        tools.append(offload_read_tool())
        handlers[OFFLOAD_READ_TOOL] = lambda **args: execute_offload_read(store, args)
    if archive is not None:
        tools.append(archive_tool())
        handlers[ARCHIVE_TOOL] = lambda **args: execute_archive_tool(archive, args)
    return [tool_from_dict(t, source="library") for t in tools], handlers
