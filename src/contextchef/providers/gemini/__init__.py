"""Wire format gemini: its renderer (IR -> payload) and parser (history -> IR).

The made-up call ids (`synthetic_index`, `synthetic_offset`) live here, not in the
parser, so a session's ingest reads them without loading the Gemini wire (issue 27).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["synthetic_index", "synthetic_offset"]

_SYNTHETIC = re.compile(r"gemini_call_(\d+)_\d+")


def synthetic_index(call_id: str) -> int | None:
    """The message index inside an id `from_gemini` made up (``gemini_call_<i>_<j>``)."""
    found = _SYNTHETIC.fullmatch(call_id)
    return int(found.group(1)) if found else None


def synthetic_offset(ids: Iterable[str], length: int) -> int:
    """The `id_offset` for a turn after `length` messages whose call ids are `ids`.

    The first message index no made-up id (`synthetic_index`) in `ids` uses, at least
    `length`, so ids made for the new turn never repeat earlier ones.
    """
    made = [i for i in map(synthetic_index, ids) if i is not None]
    return max([length, *(i + 1 for i in made)])
