"""Values a session store writes and reads back: JSON text, counts, expiries (stores layer).

Whatever a store reads back from its rows may have been edited by anyone who can write
them, so each value is checked for its type and form as it is read: a value that does not
fit is a `SessionStoreError` naming the session, where the value is kept (the column or
hash field, `Where`) and the value, never a bare ``TypeError``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from contextchef._errors import SessionStoreError, SnapshotSignatureError, json_reason, shown
from contextchef._json import is_unicode
from contextchef._json_read import strict_loads
from contextchef.stores._lineage import MAX_LINEAGE

__all__ = [
    "WHERE",
    "Where",
    "corrupt",
    "decode",
    "encode",
    "stored_count",
    "stored_expiry",
    "stored_text",
    "unkeyed_error",
]

Where = Mapping[str, str]
"""Where a store keeps each value it reads back, for messages: ``version``, ``turns``,
``base``, ``turn``, ``head``, ``expires_at`` -> e.g. ``"column sessions.version"``."""

WHERE: Where = dict.fromkeys(
    ("version", "turns", "base", "turn", "head", "expires_at"), "in its record"
)
"""The generic labels (a store passes its own, naming its columns or fields)."""


def corrupt(session_id: str, what: str, detail: str) -> SessionStoreError:
    """The error for a stored value a store cannot read back: `what` (and where), `detail`."""
    return SessionStoreError(
        f"session {shown(session_id, 80)}: the stored {what} {detail}; the record is "
        "corrupt: delete it (store.delete) or restore it from a backup",
        session_id=session_id,
    )


def stored_text(session_id: str, value: object, what: str) -> str | bytes:
    """A stored JSON text (str, or bytes as Redis gives it), its type checked.

    Raises:
        SessionStoreError: Another type (a number, a NULL), naming `what` and the value.
    """
    if isinstance(value, (str, bytes)):
        return value
    raise corrupt(
        session_id, what, f"is {shown(value, 60)} (a {type(value).__name__}), not JSON text"
    )


def stored_expiry(session_id: str, value: object, where: str) -> float | None:
    """A stored expiry (Unix time in seconds, or None: never) read back, its type checked.

    Raises:
        SessionStoreError: Not None nor a finite number (text such as ``'tomorrow'``, a
            blob, an infinity), naming `where` and the value.
    """
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number):
            return number
    raise corrupt(
        session_id,
        f"expiry ({where})",
        f"is {shown(value, 60)} (a {type(value).__name__}), not a Unix time in seconds "
        "(a finite number) or NULL (never expires)",
    )


def encode(value: object, session_id: str) -> str:
    """Compact JSON text for storage (UTF-8 kept, no NaN).

    Raises:
        SessionStoreError: The value is not JSON (a snapshot always is).
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        if not is_unicode(text):
            raise ValueError("it holds text with a lone surrogate (not valid Unicode)")
        return text
    except (TypeError, ValueError, RecursionError) as exc:
        raise SessionStoreError(
            f"session {session_id!r}: cannot store a value that is not JSON: {json_reason(exc)}",
            session_id=session_id,
        ) from exc


def decode(text: object, session_id: str, what: str, floats: list[str] | None = None) -> Any:
    """Parse stored JSON; `what` says where it was stored (for the message).

    NaN and the infinities are refused (`encode` never writes them), so what a store
    reads back is plain JSON (a keyed store's signature check relies on it: `verified`).
    Read by `contextchef._json_read.strict_loads`: msgspec's decoder with the
    ``fastjson`` extra where it reads what ``json`` reads, ``json`` otherwise (orjson is
    not used: it reads an integer past 64 bits as a float). `floats`, when given, gets the
    text of each float read.

    Raises:
        SessionStoreError: The stored value is not JSON text (the record is corrupt).
    """
    try:
        text = stored_text(session_id, text, what)
        return strict_loads(text, floats)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise SessionStoreError(
            f"session {session_id!r}: stored {what} is not valid JSON ({json_reason(exc)}: "
            f"{shown(text, 60)}); the record is corrupt: delete it (store.delete) or restore "
            "it from a backup",
            session_id=session_id,
        ) from exc


_DIGITS = re.compile(r"-?[0-9]{1,40}")
"""A whole number as text (a store writes ASCII digits; its range is checked after)."""
_SPACE = " \t\n\v\f\r"
"""What may surround it (C's ``isspace``, as the Redis scripts' ``%s``)."""
_MOST = 2**62 - 1
"""The largest count a store writes (`contextchef.stores._store.check_version`'s bound)."""


def stored_count(
    session_id: str, value: object, what: str, where: str = "", *, least: int = 0
) -> int:
    """A version or turn count read back from a store (`where`: its column or field), as an int.

    Args:
        session_id: The session (for the message).
        value: What the store holds: an int, or its text (str, or bytes as Redis gives it).
        what: The count's name (``"version"``, ``"turn count"``).
        where: Its column or field, for the message.
        least: The smallest valid value: 1 for a stored session's version (the writes so
            far, `StoredSession.version`; 0 is no session), 0 for a turn count.

    Raises:
        SessionStoreError: The stored value is not a whole number from `least` to 2**62 - 1
            (a corrupt record), naming the value, where it is and that range.
    """
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
    if isinstance(text, str) and _DIGITS.fullmatch(text.strip(_SPACE)):
        number = int(text)
    if number is not None and least <= number <= _MOST:
        return number
    valid = f"a whole number from {least} to 2**62 - 1"
    if number is not None:
        held = f"{shown(number, 40)}, outside its range ({valid})"
    else:
        held = f"{shown(value, 40)} (a {type(value).__name__}), not {valid}"
    raise corrupt(session_id, f"{what} ({where})" if where else what, f"is {held}")


def stored_lineage(session_id: str, value: object, where: str) -> str:
    """A session's lineage token read back from a store (`where`: its column or field).

    ``""`` for none (a session written before tokens existed). A token is what
    `contextchef.stores._lineage.new_lineage` wrote: printable text of at most
    `MAX_LINEAGE` (128) characters. Anything else would never equal the token a save
    expects, so each save would be refused as a race (`StaleSessionError`) and redone
    forever.

    Raises:
        SessionStoreError: Not such text (bytes that are not UTF-8 included): the record
            is corrupt.
    """
    if value is None:
        return ""
    token = value
    if isinstance(value, (bytes, bytearray)):
        try:
            token = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise corrupt(session_id, f"lineage token ({where})", "is not UTF-8 text") from None
    if not isinstance(token, str) or len(token) > MAX_LINEAGE or not token.isprintable():
        raise corrupt(
            session_id,
            f"lineage token ({where})",
            f"is {shown(value, 60)}, not printable text of at most {MAX_LINEAGE} characters",
        )
    return token


def unkeyed_error(session_id: str, signature: object = None) -> SnapshotSignatureError:
    """The refusal of a signed session by a store (or `SessionSync`) without keys."""
    key_id = signature.get("key_id") if isinstance(signature, Mapping) else None
    by = f" (key id {shown(key_id, 40)})" if isinstance(key_id, str) else ""
    return SnapshotSignatureError(
        f"session {shown(session_id, 80)} is signed{by}, and this store was built without "
        "keys: a store reads signed sessions only with the keys they were signed with. "
        "Build the store with them: SQLiteSessionStore(path, keys=SnapshotKeys({...})) or "
        "RedisSessionStore(url, keys=SnapshotKeys({...}))",
        problem="no_keys",
        key_id=key_id if isinstance(key_id, str) else None,
    )
