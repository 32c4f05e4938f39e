"""Lineage tokens: which incarnation of a session a write is for (stores layer).

A session id can name several conversations over time: the session expires (a store's
``ttl``), is deleted (a "reset conversation") or its id is reused, and a new one is
written under the same id and counts its versions from 1 again. Versions count writes
(`contextchef.stores.SessionStore`), so a writer that loaded version 2 of the first
conversation cannot tell version 2 of the second from it by the number alone: its
compare-and-set would pass and write its turn on the other conversation (a delta on
another base, which no load can replay, or a snapshot over the other conversation's
turns).

So each incarnation gets a lineage token when it is created (``expected_version=0``):
a random token (`new_lineage`), kept next to the version, returned by ``load``
(`StoredSession.lineage`) and compared by ``append`` and ``snapshot`` when the writer
passes the one it loaded (``lineage=``), in the same transaction or script as the
version. A session written before tokens existed has none: its token reads as ``""``
(its own value, which no new incarnation has), so it loads and is written as before.
The token is never part of a snapshot nor of anything sent to a model.
"""

from __future__ import annotations

import inspect
import secrets
from typing import Any

from contextchef._cache import lru_cache
from contextchef._errors import StaleSessionError, UsageError, shown

__all__ = ["MAX_LINEAGE", "check_lineage", "new_lineage", "recreated", "takes_lineage"]

MAX_LINEAGE = 128
"""Longest lineage token, in characters."""


def new_lineage() -> str:
    """A fresh lineage token: 32 random hex digits (128 bits, ``secrets``)."""
    return secrets.token_hex(16)


def check_lineage(lineage: object, *, creating: bool) -> str | None:
    """`lineage` if it is None or a printable str of at most `MAX_LINEAGE` characters.

    A new session's token (`creating`: ``expected_version=0``) must not be empty: ``""``
    is the token of a session written before tokens existed.

    Raises:
        UsageError: Anything else.
    """
    if lineage is None:
        return None
    if (
        isinstance(lineage, str)
        and len(lineage) <= MAX_LINEAGE
        and lineage.isprintable()
        and (lineage or not creating)
    ):
        return lineage
    need = "a non-empty" if creating else "a"
    raise UsageError(
        f"lineage must be None or {need} printable str of at most {MAX_LINEAGE} characters "
        f"(the StoredSession.lineage a load returned), got {shown(lineage, 80)}"
    )


def recreated(session_id: str, expected: int, actual: int) -> StaleSessionError:
    """The error for a write whose version matches but whose session was made again."""
    return StaleSessionError(
        f"session {session_id!r}: the session was deleted or expired and created again "
        f"since this writer loaded it: the store holds version {actual} of another "
        f"conversation under this id (the write was based on version {expected} of the "
        "earlier one, another lineage). Nothing was written: load the session again and "
        "redo the turn on it, or start a new conversation",
        session_id=session_id,
        expected=expected,
        actual=actual,
    )


def takes_lineage(store: object) -> bool:
    """Whether `store`'s ``append`` and ``snapshot`` both accept ``lineage=``.

    A store of another kind, written before tokens existed, may not: `SessionSync` then
    writes with the version check only.
    """
    try:
        return all(_takes(getattr(store, name)) for name in ("append", "snapshot"))
    except Exception:  # no such method, or a property that raised: written without it
        return False


def _takes(method: Any) -> bool:
    """Whether `method` has a ``lineage`` parameter (a method's function read once)."""
    function = getattr(method, "__func__", None)
    if function is not None:
        return _function_takes(function)
    return "lineage" in inspect.signature(method).parameters


@lru_cache(maxsize=64)
def _function_takes(function: Any) -> bool:
    return "lineage" in inspect.signature(function).parameters
