"""Signed snapshots: HMAC-SHA256 over the canonical JSON form, under a host key id (base layer).

A snapshot is data the host keeps somewhere (a file, a database row, a Redis key). Whoever
can write there could otherwise change what a restored session replays. A host that owns
a secret key signs what it writes (`sign`) and checks what it reads (`verify`):

* the MAC is HMAC-SHA256 (stdlib `hmac`) over the snapshot without its ``signature``
  field, serialized canonically (object keys sorted, compact, UTF-8, no NaN), together
  with the signature's own header (algorithm, key id, and the session id it is bound to,
  if any), so no field of it can be swapped either;
* the ``signature`` field records ``{"algorithm": "HMAC-SHA256", "key_id": ..., "mac":
  ..., "session_id": ...}``; the key itself never leaves the host;
* `verify` compares in constant time (`hmac.compare_digest`) and names what failed: no
  signature, one of another shape (a field missing, extra or of the wrong type, a mac
  that is not 64 hex digits), an algorithm other than HMAC-SHA256, a key id the host did
  not give, a MAC that does not match, or a session id other than the one the caller
  names (a snapshot signed for a session restores only with that id; one signed without
  an id only without one);
* a signature that is present is always checked: ``allow_unsigned`` admits only a
  snapshot with no ``signature`` field at all.

What it protects: every value of the snapshot and the session id it was signed for,
against anyone without the key. What it does not: key order (the canonical form sorts
keys), how a decimal store writes an equal number (a float from 1e16 on and the integer
it names, ``1e+23`` and ``100000000000000000000000``; ``-0.0`` and ``0.0``: `_as_numbers`),
a replay of an *older* snapshot of the same session signed with a key still accepted (a
keyed store's signed head refuses a turn log cut short or edited, but not a whole earlier
copy of its rows: `contextchef.stores._store`), and anything once the key leaks. The
ledger's plain SHA-256 digests (``wire_digests``, ``record_digest``) are recomputable by
anyone and only catch accidents, never tampering.

Key rotation: `SnapshotKeys` holds every key still accepted, by id, and signs with
``current``. To rotate, add the new key and make it current; keep the old one until
every stored snapshot signed with it has been rewritten (a store rewrites the whole
snapshot at each checkpoint) or has expired, then drop it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from contextchef._errors import SnapshotSignatureError, UsageError, check_flag, json_reason, shown
from contextchef._json import sorted_utf8
from contextchef._json_read import as_repr, each_float, read_floats

__all__ = [
    "ALGORITHM",
    "SIGNATURE",
    "SnapshotKeys",
    "as_decimal_store",
    "check_session_id",
    "sign",
    "verify",
]

SIGNATURE = "signature"
"""The snapshot field that holds the signature."""
ALGORITHM = "HMAC-SHA256"
_HEX_MAC = re.compile(r"[0-9a-f]{64}")
"""A mac as `sign` writes it: HMAC-SHA256's hex digest."""
MIN_KEY_BYTES = 16
"""Shortest key accepted, in bytes (32 random bytes, ``secrets.token_bytes(32)``, is right)."""


class SnapshotKeys:
    """The host's snapshot keys by id: `sign` uses ``current``, `verify` accepts any of them.

    Args:
        keys: Key id -> secret key (bytes, at least 16; e.g. ``secrets.token_bytes(32)``).
            Key ids are short printable names (``"2026-12"``); they are written into
            every snapshot, the keys never are.
        current: The id of the key that signs; may be left out when there is one key.

    Raises:
        UsageError: No keys, a key id that is not printable text, a key that is not bytes
            or is shorter than 16 bytes, or `current` not among the ids.
    """

    __slots__ = ("_keys", "current")

    def __init__(self, keys: Mapping[str, bytes], *, current: str | None = None) -> None:
        try:  # a hostile mapping's iteration may raise anything
            given = dict(keys) if isinstance(keys, Mapping) else {}
        except Exception:
            given = {}
        if not given:
            raise UsageError(
                f"keys must be a non-empty dict of key id -> bytes, got {shown(keys, 40)}"
            )
        for key_id, secret in given.items():
            if not (isinstance(key_id, str) and 0 < len(key_id) <= 100 and key_id.isprintable()):
                raise UsageError(
                    f"a key id must be printable text (1-100 characters), got {shown(key_id, 40)}"
                )
            if not isinstance(secret, (bytes, bytearray)) or len(secret) < MIN_KEY_BYTES:
                raise UsageError(
                    f"key {key_id!r} must be bytes of at least {MIN_KEY_BYTES} (use "
                    "secrets.token_bytes(32)); got a "
                    f"{type(secret).__name__}"
                    + (f" of {len(secret)}" if isinstance(secret, bytes) else "")
                )
        if current is None and len(given) == 1:
            current = next(iter(given))
        if not isinstance(current, str) or current not in given:
            raise UsageError(
                f"current must name one of the key ids {sorted(given)}, got {shown(current, 40)}"
            )
        self._keys = {k: bytes(v) for k, v in given.items()}
        self.current: str = current

    @property
    def ids(self) -> tuple[str, ...]:
        """The key ids accepted, sorted."""
        return tuple(sorted(self._keys))

    def __repr__(self) -> str:  # never the keys themselves
        return f"SnapshotKeys(ids={list(self.ids)}, current={self.current!r})"

    def _secret(self, key_id: str) -> bytes | None:
        return self._keys.get(key_id)


def _mac(
    secret: bytes, header: Mapping[str, Any], body: Mapping[str, Any], finite: bool = False
) -> str:
    """The MAC of `header` and `body` (hex), over `_as_numbers` of their canonical form."""
    data, restate = _canonical(header, body, finite)
    return _hmac(secret, _as_numbers(data) if restate else data)


def _hmac(secret: bytes, data: bytes) -> str:
    return hmac.new(secret, data, hashlib.sha256).hexdigest()


def _canonical(
    header: Mapping[str, Any], body: Mapping[str, Any], finite: bool, floats: bool = True
) -> tuple[bytes, bool]:
    """``[header, body]`` as sorted-key canonical JSON (UTF-8): version 1 of the MAC's form.

    And whether `_as_numbers` may restate a number in them (False: no float from 1e16 on
    and no -0.0). orjson writes them (`contextchef._json.sorted_utf8`) and msgspec reads
    the bytes back once (`_read_back`): the floats read say whether orjson wrote each as
    ``json`` does (else ``json`` writes them) and whether a number is restated, so neither
    the bytes nor the numbers are searched again. Without `finite` (a caller's value, which
    may hold NaN, written ``null``, or values ``json`` refuses) the bytes are taken only
    when they read back to the value. ``floats=False`` (with `finite`): the caller's reader
    saw no float in them (`strict_loads`), so they are not read back.
    """
    value = [header, body]
    data, restate = sorted_utf8(value, floats=False), True
    if data is not None and (floats or not finite):
        tokens = _read_back(data, None if finite else value)
        if tokens is None:  # no msgspec (the byte searches decide), or not the value's bytes
            data = sorted_utf8(value) if finite else None
        elif as_repr(tokens):
            restate = any("e+" in t or t == "-0.0" for t in tokens)  # as repr writes them
        else:
            data = None  # orjson wrote a float otherwise (1e-7): json writes them
    elif data is not None:
        restate = False  # no float at all
    if data is None:
        try:
            text = json.dumps(
                [header, body],
                sort_keys=True,
                ensure_ascii=False,
                separators=(",", ":"),
                allow_nan=False,
            )
        except (TypeError, ValueError, RecursionError) as exc:
            raise UsageError(
                f"a snapshot must be plain JSON to be signed or checked: {_where(body)}"
                f"{json_reason(exc)}"
            ) from None
        data, restate = text.encode("utf-8", "surrogatepass"), True
    return data, restate


def _where(body: Mapping[str, Any]) -> str:
    """``snapshot field 'x': `` for the first field of `body` JSON cannot write ("": none)."""
    for key, item in body.items():
        try:
            json.dumps(item, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            return f"snapshot field {shown(key, 40)}: "
    return ""


def _read_back(data: bytes, value: object) -> list[str] | None:
    """The text of each float in orjson's `data`, read back (`read_floats`).

    None without msgspec, or when `value` (None: not compared) is not what `data` reads
    back to: orjson writes NaN and the infinities as ``null`` and some values ``json``
    refuses (a datetime, a dataclass) as JSON, and each reads back as something else.
    """
    read = read_floats(data)
    return None if read is None or (value is not None and read[0] != value) else read[1]


_NEGATIVE_ZERO = re.compile(rb"-0\.0[,\]}]")
"""``-0.0`` as ``repr`` writes it, or text like it."""
_EXPONENT = re.compile(rb"e\+(?<=[0-9]e\+)")
"""A float from 1e16 on (``1e+20``), or text like it."""


def _as_numbers(data: bytes) -> bytes:
    """Canonical JSON `data` with its numbers written as a decimal store gives them back.

    Stores that keep JSON as a value hold numbers as decimals (PostgreSQL ``jsonb``,
    ``numeric``): a float from 1e16 on, which ``repr`` writes with an exponent, comes back
    as the integer its decimal text names (``1e+23``: ``100000000000000000000000``, not
    the double's 99999999999999991611392), and ``-0.0`` as ``0.0`` (a decimal has no
    negative zero); every other float comes back as the same float, written alike. Here
    those two kinds are written so, and a snapshot signed before such a store verifies
    after it, while any other change to a number does not. The values are equal as
    numbers, which is what a provider compares in what was sent ("JSON formatting and key
    order don't matter; the values do": research note anthropic-preserved-thinking.md,
    R8). A store that writes ``5.0`` as ``5`` (a JavaScript round trip) turns a float into
    an integer, which is refused: widening this to every whole float would make the
    signatures of most snapshots (a tool schema's ``"default": 0.0``) unreadable by a
    release before this one, during a rolling upgrade or after a rollback. `data` itself
    when it holds no such float (the usual case: two byte searches; text that looks like
    one costs a parse, by msgspec with the ``fastjson`` extra) or cannot be parsed back.
    """
    if _NEGATIVE_ZERO.search(data) is None and _EXPONENT.search(data) is None:
        return data
    restated: list[bool] = []

    def number(text: str) -> Any:
        value = float(text)
        if value == 0 and text.startswith("-"):
            restated.append(True)
            return 0.0
        if "e+" in text:  # from 1e16 on: whole; 1e+23 is 10**23
            restated.append(True)
            return int(Decimal(text))
        return value

    try:
        value = each_float(data, number)  # numbers only: most texts that look like one are text
    except (ValueError, TypeError, RecursionError):
        return data
    if not restated:
        return data
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def as_decimal_store(value: Any) -> Any:
    """`value` with its numbers as a decimal store gives them back (`_as_numbers`'s rule).

    A float from 1e16 on becomes the integer its ``repr`` names, ``-0.0`` becomes ``0.0``;
    anything else is as it was (objects and arrays copied where a number below changed).
    For comparing a signed snapshot's values with the host's own (a runtime tool's
    schema, the tools as sent): two values equal after it were one value when signed.
    """
    if type(value) is float:
        if value == 0:
            return 0.0
        return int(Decimal(repr(value))) if math.isfinite(value) and abs(value) >= 1e16 else value
    if isinstance(value, Mapping):
        return {k: as_decimal_store(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_decimal_store(v) for v in value]
    return value


def _body(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in snapshot.items() if k != SIGNATURE}


def check_session_id(session_id: object, *, name: str = "session_id") -> str | None:
    """`session_id` if it is None or a non-empty printable str.

    Raises:
        UsageError: Anything else (naming the parameter).
    """
    if session_id is None or (
        isinstance(session_id, str) and session_id and session_id.isprintable()
    ):
        return session_id
    raise UsageError(
        f"{name} must be a non-empty printable str (the session the snapshot belongs to) "
        f"or None, got {shown(session_id, 80)}"
    )


def sign(
    snapshot: dict[str, Any],
    keys: SnapshotKeys | None,
    *,
    session_id: str | None = None,
    finite: bool = False,
) -> dict[str, Any]:
    """`snapshot` with a ``signature`` made with ``keys.current`` (a new dict).

    Any signature it held is replaced. `session_id` binds it to one session: `verify`
    accepts it only when given the same id (and one signed without an id only without).
    Without keys, `snapshot` itself is returned, unsigned. ``finite=True``: the caller
    vouches that `snapshot` holds no NaN or infinity (a session's own snapshot, or one
    decoded by a parser that refuses them), so its canonical form may be written by the
    fast encoder (`contextchef._json.sorted_utf8`; the same bytes).

    Raises:
        UsageError: `keys` is not a `SnapshotKeys` or None, `session_id` is not None or
            a non-empty str, a `session_id` without keys (there is nothing to bind it
            to), or the snapshot is not plain JSON.
    """
    session_id = check_session_id(session_id)
    if keys is None and session_id is None:
        return snapshot
    if not isinstance(keys, SnapshotKeys):
        raise UsageError(
            f"keys must be a SnapshotKeys, got {type(keys).__name__}"
            + ("; session_id binds a signature, so it needs keys" if keys is None else "")
        )
    header: dict[str, Any] = {"algorithm": ALGORITHM, "key_id": keys.current}
    if session_id is not None:
        header["session_id"] = session_id
    body = _body(snapshot)
    secret = keys._secret(keys.current)
    assert secret is not None
    return {**body, SIGNATURE: {**header, "mac": _mac(secret, header, body, finite)}}


def _session_error(
    signed_for: object, expected: str | None, key_id: str | None
) -> SnapshotSignatureError:
    """The refusal of a snapshot signed for `signed_for` where `expected` was named."""
    if expected is None:
        detail = (
            f"the snapshot was signed for session {shown(signed_for, 80)} and restore named "
            f"no session: pass session_id={shown(signed_for, 80)} if that is the session "
            "you mean to continue"
        )
    elif signed_for is None:
        detail = (
            f"the snapshot was signed without a session id, not for session "
            f"{shown(expected, 80)}: restore it without session_id"
        )
    else:
        detail = (
            f"the snapshot was signed for session {shown(signed_for, 80)}, not "
            f"{shown(expected, 80)}: a snapshot of another session"
        )
    return SnapshotSignatureError(detail, problem="session", key_id=key_id)


def verify(
    snapshot: Mapping[str, Any],
    keys: SnapshotKeys | None,
    *,
    allow_unsigned: bool = False,
    session_id: str | None = None,
    finite: bool = False,
    floats: bool = True,
) -> bool:
    """Check `snapshot`'s signature against `keys`; return whether it carried one.

    A snapshot with a ``signature`` field is always checked, whatever `allow_unsigned`
    says: it needs `keys`, the MAC must match, and the session id it was signed for must
    equal `session_id` (None for a snapshot signed without one). `allow_unsigned` admits
    only snapshots with no ``signature`` field at all (the host opted into unsigned input).
    ``finite``: as for `sign` (the MAC is the same either way). ``floats=False`` (with
    ``finite``): the caller read `snapshot` from text and saw no float in it
    (`contextchef._json_read.strict_loads`), so no byte search for floats is made: the
    canonical bytes are orjson's and no number is restated (`_as_numbers`).

    Raises:
        SnapshotSignatureError: No keys for a signed snapshot, or for an unsigned one
            without the opt-in (``no_keys``); no signature (``missing``); an unknown key
            id (``unknown_key``); altered content or signature (``mismatch``); a session
            id other than the one it was signed for, or none (``session``); a
            ``signature`` that is not an object of ``algorithm``, ``key_id``, ``mac`` (64
            lowercase hex digits) and optionally ``session_id``, each of its type
            (``malformed``); an algorithm other than HMAC-SHA256
            (``unsupported_algorithm``).
        UsageError: `keys` is not a `SnapshotKeys`, `allow_unsigned` is not a bool,
            `session_id` is not None or a non-empty str, or the snapshot is not plain JSON.
    """
    if keys is not None and not isinstance(keys, SnapshotKeys):
        raise UsageError(f"keys must be a SnapshotKeys or None, got {type(keys).__name__}")
    check_flag("allow_unsigned", allow_unsigned)
    session_id = check_session_id(session_id)
    if SIGNATURE not in snapshot and allow_unsigned:
        return False
    if keys is None:
        raise SnapshotSignatureError(
            "restore checks a snapshot's signature: pass keys=SnapshotKeys(...) (the keys "
            "it was signed with)"
            + (
                "; allow_unsigned=True admits only snapshots that carry no signature"
                if SIGNATURE in snapshot
                else ", or allow_unsigned=True to accept it unchecked"
            ),
            problem="no_keys",
        )
    signature = snapshot.get(SIGNATURE)
    if signature is None:
        raise SnapshotSignatureError(
            f"the snapshot carries no signature (field {SIGNATURE!r}); it was not written by a "
            "session or store holding your keys, or the signature was removed",
            problem="missing",
        )
    malformed = _malformed(signature)
    if malformed:
        raise SnapshotSignatureError(
            f"the snapshot's signature is malformed: {malformed}; it was not written by "
            "contextchef, or it was altered",
            problem="malformed",
            key_id=_key_id(signature),
        )
    assert isinstance(signature, Mapping)
    key_id = signature["key_id"]
    if signature["algorithm"] != ALGORITHM:
        raise SnapshotSignatureError(
            f"the snapshot's signature uses algorithm {shown(signature['algorithm'], 40)}, "
            f"which this version does not support: it checks {ALGORITHM} only",
            problem="unsupported_algorithm",
            key_id=key_id,
        )
    secret = keys._secret(key_id)
    if secret is None:
        raise SnapshotSignatureError(
            f"the snapshot is signed with key id {shown(key_id, 40)}, not one of the keys "
            f"given {list(keys.ids)}: pass SnapshotKeys holding that key (keep an old key "
            "until every snapshot signed with it was rewritten)",
            problem="unknown_key",
            key_id=key_id,
        )
    header = {k: v for k, v in signature.items() if k != "mac"}
    exact, restate = _canonical(header, _body(snapshot), finite, floats)
    given, numbers = signature["mac"].encode("ascii"), _as_numbers(exact) if restate else exact
    if not hmac.compare_digest(_hmac(secret, numbers).encode(), given) and (
        numbers is exact or not hmac.compare_digest(_hmac(secret, exact).encode(), given)
    ):  # (a release before `_as_numbers` signed the exact form)
        raise SnapshotSignatureError(
            f"the snapshot's signature (key id {key_id!r}) does not match its content: the "
            "snapshot or its signature was altered after it was signed",
            problem="mismatch",
            key_id=key_id,
        )
    if header.get("session_id") != session_id:
        raise _session_error(header.get("session_id"), session_id, key_id)
    return True


_FIELDS = ("algorithm", "key_id", "mac", "session_id")
"""The fields of a signature `sign` writes (``session_id`` only when bound to one)."""


def _key_id(signature: object) -> str | None:
    key_id = signature.get("key_id") if isinstance(signature, Mapping) else None
    return key_id if isinstance(key_id, str) else None


def _malformed(signature: object) -> str:
    """What is wrong with the shape of a ``signature`` field, or ``""`` (see `sign`)."""
    if not isinstance(signature, Mapping):
        return (
            f"field {SIGNATURE!r} is {shown(signature, 60)} (a {type(signature).__name__}), "
            f"not an object of {list(_FIELDS)}"
        )
    extra = sorted(shown(k, 40) for k in signature if k not in _FIELDS)
    if extra:
        return f"it holds {', '.join(extra)}; a signature holds only {list(_FIELDS)}"
    for field in _FIELDS[:3]:
        if field not in signature:
            return f"it has no {field!r}"
    algorithm, key_id, mac = signature["algorithm"], signature["key_id"], signature["mac"]
    if not isinstance(algorithm, str):
        return f"'algorithm' is {shown(algorithm, 40)}, not a string such as {ALGORITHM!r}"
    if not (isinstance(key_id, str) and key_id):
        return f"'key_id' is {shown(key_id, 40)}, not a non-empty string"
    if not (isinstance(mac, str) and _HEX_MAC.fullmatch(mac)):
        kind = type(mac).__name__
        return f"'mac' is {shown(mac, 80)} (a {kind}), not 64 lowercase hex digits"
    if "session_id" in signature and not (
        isinstance(signature["session_id"], str) and signature["session_id"]
    ):
        return (
            f"'session_id' is {shown(signature['session_id'], 40)}, not a non-empty string "
            "(a signature made without a session id has no such field)"
        )
    return ""
