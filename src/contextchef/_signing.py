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
  signature, a key id the host did not give, a MAC that does not match, or another
  session's snapshot.

What it protects: every value of the snapshot and the session id it was signed for,
against anyone without the key. What it does not: key order (the canonical form sorts
keys), a replay of an *older* snapshot of the same session signed with a key still
accepted (stores' versions and compare-and-set guard that), and anything once the key
leaks. The ledger's plain SHA-256 digests (``wire_digests``, ``record_digest``) are
recomputable by anyone and only catch accidents, never tampering.

Key rotation: `SnapshotKeys` holds every key still accepted, by id, and signs with
``current``. To rotate, add the new key and make it current; keep the old one until
every stored snapshot signed with it has been rewritten (a store rewrites the whole
snapshot at each checkpoint) or has expired, then drop it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from contextchef._errors import SnapshotSignatureError, UsageError, shown

__all__ = ["ALGORITHM", "SIGNATURE", "SnapshotKeys", "sign", "verify"]

SIGNATURE = "signature"
"""The snapshot field that holds the signature."""
ALGORITHM = "HMAC-SHA256"
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


def _mac(secret: bytes, header: Mapping[str, Any], body: Mapping[str, Any]) -> str:
    try:
        text = json.dumps(
            [header, body],
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,
        )
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"a snapshot must be plain JSON to be signed or checked: {exc}") from None
    data = text.encode("utf-8", "surrogatepass")
    return hmac.new(secret, data, hashlib.sha256).hexdigest()


def _body(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in snapshot.items() if k != SIGNATURE}


def sign(
    snapshot: Mapping[str, Any], keys: SnapshotKeys, *, session_id: str | None = None
) -> dict[str, Any]:
    """`snapshot` with a ``signature`` made with ``keys.current`` (a new dict).

    Any signature it held is replaced. `session_id` binds it to one session: `verify`
    given another id refuses it.

    Raises:
        UsageError: `keys` is not a `SnapshotKeys`, or the snapshot is not plain JSON.
    """
    if not isinstance(keys, SnapshotKeys):
        raise UsageError(f"keys must be a SnapshotKeys, got {type(keys).__name__}")
    header: dict[str, Any] = {"algorithm": ALGORITHM, "key_id": keys.current}
    if session_id is not None:
        header["session_id"] = session_id
    body = _body(snapshot)
    secret = keys._secret(keys.current)
    assert secret is not None
    return {**body, SIGNATURE: {**header, "mac": _mac(secret, header, body)}}


def verify(
    snapshot: Mapping[str, Any],
    keys: SnapshotKeys | None,
    *,
    allow_unsigned: bool = False,
    session_id: str | None = None,
) -> None:
    """Check `snapshot`'s signature against `keys`; return if it vouches for the snapshot.

    With `allow_unsigned`, a snapshot without a signature is accepted (the host opted into
    unsigned input), and so is any snapshot when there are no keys; a signature present
    and checkable is still checked. A snapshot signed for a session id is refused when
    `session_id` names another.

    Raises:
        SnapshotSignatureError: No keys and unsigned input not allowed (``no_keys``); no
            signature (``missing``); an unknown key id (``unknown_key``); altered content
            or signature (``mismatch``); another session's snapshot (``session``).
        UsageError: `keys` is not a `SnapshotKeys`, or the snapshot is not plain JSON.
    """
    if keys is not None and not isinstance(keys, SnapshotKeys):
        raise UsageError(f"keys must be a SnapshotKeys or None, got {type(keys).__name__}")
    if keys is None:
        if allow_unsigned:
            return
        raise SnapshotSignatureError(
            "restore checks a snapshot's signature: pass keys=SnapshotKeys(...) (the keys "
            "it was signed with), or allow_unsigned=True to accept it unchecked",
            problem="no_keys",
        )
    signature = snapshot.get(SIGNATURE)
    if signature is None and allow_unsigned:
        return
    if not isinstance(signature, Mapping) or not isinstance(signature.get("mac"), str):
        raise SnapshotSignatureError(
            f"the snapshot carries no signature (field {SIGNATURE!r}); it was not written by a "
            "session or store holding your keys, or the signature was removed",
            problem="missing",
        )
    key_id = signature.get("key_id")
    secret = keys._secret(key_id) if isinstance(key_id, str) else None
    if secret is None or signature.get("algorithm") != ALGORITHM:
        raise SnapshotSignatureError(
            f"the snapshot is signed with key id {shown(key_id, 40)} "
            f"({shown(signature.get('algorithm'), 40)}), not one of the keys given "
            f"{list(keys.ids)} ({ALGORITHM})",
            problem="unknown_key",
            key_id=key_id if isinstance(key_id, str) else None,
        )
    header = {k: v for k, v in signature.items() if k != "mac"}
    made = _mac(secret, header, _body(snapshot)).encode()
    if not hmac.compare_digest(made, signature["mac"].encode("utf-8", "surrogatepass")):
        raise SnapshotSignatureError(
            f"the snapshot's signature (key id {key_id!r}) does not match its content: the "
            "snapshot or its signature was altered after it was signed",
            problem="mismatch",
            key_id=key_id,
        )
    signed_for = header.get("session_id")
    if session_id is not None and signed_for != session_id:
        raise SnapshotSignatureError(
            f"the snapshot was signed for session {shown(signed_for, 80)}, not "
            f"{shown(session_id, 80)}: a snapshot of another session",
            problem="session",
            key_id=key_id,
        )
