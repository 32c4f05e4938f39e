"""The ``search_archive`` tool: the model searches and reads what left its view.

One tool does both, as users of a search box expect: ``{"query": "..."}`` lists the best
BM25 hits among the archived messages (`contextchef.search.search_archive`) with their
handle and byte offset; ``{"handle": "...", "offset": N, "length": M}`` reads an entry (as
``read_offloaded`` reads an offloaded result: offsets and lengths count bytes; pages cut
on UTF-8 character boundaries and end with a line giving where they are and the next
offset). It is a
library tool, registered with a `ContextPolicy` or an ``offload_dir`` and run through the
gate like every tool (`reader_tools`).

Deterministic: the hit list follows the ranking's order; the snippets are the messages' own
text, cut at a fixed size. What the tool returns is archived data (the model's and tools'
own words): it is capped, never interpreted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from contextchef._errors import UsageError, check_int, shown
from contextchef.history._archive import ARCHIVE_TOOL, Archive
from contextchef.history._offload import (
    DEFAULT_READ_BYTES,
    MAX_READ_BYTES,
    OFFLOAD_READ_TOOL,
    OffloadStore,
    byte_range_properties,
    char_span,
    execute_offload_read,
    int_argument,
    offload_read_tool,
)
from contextchef.search._archive import DEFAULT_HITS, search_archive
from contextchef.tools._catalogs import tool_from_dict
from contextchef.tools._tool import Tool

__all__ = ["archive_tool", "execute_archive_tool", "read_page", "reader_tools"]

MAX_HITS = 20
"""Most hits one search lists."""
SNIPPET_CHARS = 240
"""Characters of a hit's message shown in the hit list."""


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
            f"(default length {DEFAULT_READ_BYTES}, at most {MAX_READ_BYTES}). A page "
            "ends with a line giving its bytes, the entry's size and the next offset to "
            "pass as is; the text is everything before that line. A line of archived "
            "content that starts like the archive's own markers ('## message', '-> call', "
            "'<- result of', '(thinking', '[attached') has one backslash added in front."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords to search for."},
                "handle": {"type": "string", "description": "An archive entry's handle."},
                **byte_range_properties(),
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


def _snippet(text: str) -> str:
    body = " ".join(text.split("\n", 1)[-1].split())
    return body[:SNIPPET_CHARS] + ("…" if len(body) > SNIPPET_CHARS else "")


def read_page(data: bytes, handle: str, offset: int, length: int) -> str:
    """One page of an entry: its text, a line break, then a line saying where it is.

    The page is the bytes from `offset` to ``offset + length``, both moved back to the
    start of a UTF-8 character (`history._offload.char_span`; a page holds at least one
    whole character), so no page splits a character. The last line is always
    ``[search_archive: bytes <start>-<end> of <size> of <handle>; ...]``: ``the end of
    the entry`` on the last page, else ``more follows: next offset <end>`` and the call
    that reads it. Everything before
    that last line break is the entry's text: the pages read at the next offsets given,
    each without its last line, put together give the entry byte for byte.
    """
    size = len(data)
    start, end = char_span(data, offset, length)
    if start >= size:
        return f"Nothing at offset {offset}: {handle} holds {size} bytes."
    if end <= start:  # a length shorter than the character there: give that character
        end = start + 1
        while end < size and data[end] & 0xC0 == 0x80:
            end += 1
    text = data[start:end].decode("utf-8", errors="replace")
    where = f"[{ARCHIVE_TOOL}: bytes {start}-{end} of {size} of {handle}; "
    if end >= size:
        return f"{text}\n{where}the end of the entry]"
    call = f'{ARCHIVE_TOOL}({{"handle": "{handle}", "offset": {end}}})'
    return f"{text}\n{where}more follows: next offset {end}, read it with {call}]"


def execute_archive_tool(archive: Archive, arguments: Mapping[str, Any]) -> str:
    """Answer one ``search_archive`` call (arguments as in `archive_tool`'s schema).

    Returns:
        For a query: one line per hit (``<handle> offset <bytes> (<reason>, message <i>):
        <snippet>``) and how to read one, or a sentence saying nothing matched. For a
        handle: a page (`read_page`): the requested bytes as text, cut on UTF-8
        character boundaries, then a line giving the page's bytes, the entry's size and
        the next offset; or a sentence giving the entry's size when the offset is past
        its end.

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
        offset = check_int(
            "offset", int_argument(ARCHIVE_TOOL, arguments, "offset", 0), maximum=2**62
        )
        length = min(
            check_int(
                "length", int_argument(ARCHIVE_TOOL, arguments, "length", DEFAULT_READ_BYTES)
            ),
            MAX_READ_BYTES,
        )
        return read_page(archive.load(handle), handle, offset, length)
    limit = min(
        check_int("limit", int_argument(ARCHIVE_TOOL, arguments, "limit", DEFAULT_HITS), minimum=1),
        MAX_HITS,
    )
    if not isinstance(query, str):
        raise UsageError(f"{ARCHIVE_TOOL}: 'query' must be a string, got {shown(query)}")
    hits = search_archive(archive, query, limit=limit)
    if not hits:
        head = (
            f"Nothing in the archive ({len(archive.entries)} entries) matches {shown(query, 200)}"
        )
        gone = archive.unreachable()
        if not gone:
            return f"{head}; try other keywords."
        return (
            f"{head}. This conversation names {len(gone)} archive entries this session cannot "
            f"read (e.g. {gone[0]}): they were kept in memory by the session this one was "
            "restored from, or in another offload store, so what they hold cannot be searched "
            "here; ask the user if you need it."
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
