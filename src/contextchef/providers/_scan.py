"""`first_found`: the first recorded wire entry passing a test, read once per entry."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["first_found"]


def first_found(
    entries: Sequence[Mapping[str, Any]],
    memo: dict[Any, Any],
    key: object,
    test: Callable[[Mapping[str, Any]], bool],
) -> int | None:
    """The index of the first of `entries` that passes `test` (None: none).

    `entries` is a ledger's wire: recorded entries, appended or cut back and rendered
    again (new objects), never changed in place. `memo[key]` keeps how many were read,
    the last of them and what was found; while that one is still in its place, only
    entries after it are read.
    """
    held: tuple[int, object, int | None] = memo.get(key, (0, None, None))
    read, last, found = held
    if read > len(entries) or (read and entries[read - 1] is not last):
        read, found = 0, None  # cut back: read again
    if found is None:
        found = next((i for i in range(read, len(entries)) if test(entries[i])), None)
    memo[key] = (len(entries), entries[-1] if entries else None, found)
    return found
