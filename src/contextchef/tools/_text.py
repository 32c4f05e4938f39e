"""Outside text inside our model-facing text: the tags it must not open or close (tools layer).

The library wraps parts of what the model reads in tags (the deferred directory
``<available_deferred_tools>``, ``<announcements>``, ``<memories>``, ...). Text that comes
from outside (an MCP server's ``instructions``, tool descriptions, parameter
descriptions) is data: `escape_tags` rewrites the ``<`` of every opening or closing of
one of `LIBRARY_TAGS` to ``&lt;``, so no server can end our directory early or forge an
announcement. The match is made on what a reader would see: case and compatibility
forms folded (NFKC: the fullwidth U+FF1C is ``<``, fullwidth letters are letters),
spaces and invisible characters (zero-width, other format characters) skipped. Any
other ``<`` is left as it is: descriptions keep their ``List<str>`` and their own
``<example>`` tags.

`cap_text` bounds such text, in characters.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["LIBRARY_TAGS", "cap_text", "escape_tags", "server_text"]

LIBRARY_TAGS = frozenset(
    {
        "announcement",
        "announcements",
        "available_deferred_tools",
        "available_skills",
        "available_toolkits",
        "conversation_summary",
        "dynamic_state",
        "implicit_context",
        "memories",
        "memory",
        "toolkit",
    }
)
"""Every tag the library renders into model-facing text (tests/deferred/test_text.py
checks the sources against it)."""

_LESS_THAN = "<\ufe64\uff1c"
"""The characters whose NFKC form is ``<`` (checked over all of Unicode by the tests)."""
_WINDOW = 2 * max(len(t) for t in LIBRARY_TAGS) + 16
_TAG_AFTER = re.compile(
    r"\s*/?\s*(" + "|".join(sorted(LIBRARY_TAGS, key=len, reverse=True)) + r")(?![a-z0-9_-])"
)


def _hidden(char: str) -> bool:
    return unicodedata.category(char) in ("Cf", "Cc") and not char.isspace()


def _visible_after(text: str, start: int) -> str:
    """Up to `_WINDOW` characters from `start`, as a reader takes them.

    NFKC, case-folded, invisible (format and control) characters skipped, however many.
    """
    kept: list[str] = []
    for char in text[start:]:
        if len(kept) >= _WINDOW:
            break
        if not _hidden(char):
            kept.append(char)
    folded = unicodedata.normalize("NFKC", "".join(kept)).casefold()
    return "".join(c for c in folded if not _hidden(c))


def escape_tags(text: str) -> str:
    """`text` with every opening or closing of a library tag neutralized (``<`` -> ``&lt;``).

    Idempotent, and the identity on text that has no such tag.
    """
    if not any(c in text for c in _LESS_THAN):
        return text
    out: list[str] = []
    for i, char in enumerate(text):
        if char in _LESS_THAN and _TAG_AFTER.match(_visible_after(text, i + 1)):
            out.append("&lt;")
        else:
            out.append(char)
    return "".join(out)


def cap_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def server_text(text: str, limit: int) -> str:
    """Outside text as the library shows it: capped to `limit` characters, tags escaped.

    The escaping is the last step (a cut after it could turn ``<announcementx`` into
    ``<announcement…``): the text is cut short enough that its escaped form fits.
    """
    cut = limit
    while True:
        out = escape_tags(cap_text(text, cut))
        if len(out) <= limit or cut <= 1:
            return out
        cut -= len(out) - limit
