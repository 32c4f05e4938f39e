"""Session stores: a session's snapshots kept outside the process (stores layer, above the session).

A stored session is a base snapshot (`ContextChef.snapshot`) plus a log of turns, each
the *delta* from the previous snapshot to the next: since a session is append-only
(history and ledgers only grow), a turn's delta is the messages and wire entries it
appended plus the few scalars it changed, not the whole conversation again.
`snapshot_delta` computes it and `apply_delta` replays it; ``load`` returns the base
with every delta applied, which equals the snapshot the last writer took, value for
value, so the restored session compiles byte-identical requests.

Every write names the version it is based on (`StoredSession.version`, the number of
writes so far; 0 = no session) and is a compare-and-set: it succeeds only if the store
still holds that version, else it raises `StaleSessionError` and writes nothing. Two
workers racing on one conversation therefore never lose or duplicate a turn: one wins,
the other reloads, redoes its turn on the winner's state and retries. A session deleted
or expired and made again counts from version 1 again, so a write also names the
incarnation it is for (its lineage token, `contextchef.stores._lineage`) and one for an
earlier incarnation is refused the same way. `SessionSync` (`contextchef.stores._sync`)
wraps that loop for a `ContextChef`.

A store built with ``keys`` (`contextchef.SnapshotKeys`) signs every snapshot it writes
for its session id (HMAC-SHA256, `contextchef._signing`) and checks the signature of the
snapshot it loads (base plus turns), so a row edited or copied from another session is
refused with `SnapshotSignatureError`; `SessionSync` signs each turn's snapshot with the
store's keys before taking the delta. With every write a keyed store also rewrites a
signed head (`signed_head`: version, turn count, a hash chain over the base text and every
turn text), so a turn log cut short with its counters lowered, or a turn added, removed,
reordered or edited, is refused at load and at the next append (`verified`). What no
store can tell without state outside its rows: a whole earlier copy of a session's rows
(head included) put back loads as that earlier version; a host that must rule this out
keeps the last version it wrote elsewhere and compares. A store built without keys
writes and reads unsigned snapshots: whoever can write its rows can change the history
and data a session restores (never its policy, which is the host's:
`contextchef.exposure._restore`). It refuses a session a keyed store wrote (signed)
at load, append and snapshot (`SnapshotSignatureError`, ``no_keys``): only keys can
check it, and writing on it unsigned would drop its signature.

Implementations: `contextchef.stores.SQLiteSessionStore` (stdlib ``sqlite3``, one
file, many processes) and `contextchef.stores.RedisSessionStore` (redis-py, extra
``redis``; Lua scripts make each write atomic).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from contextchef._errors import (
    SessionStoreError,
    SnapshotSignatureError,
    StaleSessionError,
    UsageError,
    check_int,
    check_number,
    shown,
)
from contextchef._signing import SIGNATURE, SnapshotKeys, sign, verify
from contextchef.history._reordered import head_mismatch
from contextchef.stores._stored import (
    WHERE,
    Where,
    corrupt,
    decode,
    encode,
    stored_text,
    unkeyed_error,
)

__all__ = [
    "MAX_SESSION_ID",
    "SessionStore",
    "StoredSession",
    "apply_delta",
    "chained",
    "check_delta",
    "check_keys",
    "check_session_id",
    "check_snapshot",
    "check_ttl",
    "decode",
    "encode",
    "head_chain",
    "ready_to_restore",
    "signed",
    "signed_head",
    "snapshot_delta",
    "stale",
    "unkeyed_error",
    "verified",
]

MAX_SESSION_ID = 512
"""Longest session id, in characters."""

Delta = list[list[Any]]
"""A turn: ``[["set", path, value] | ["extend", path, items] | ["del", path], ...]``."""


@dataclass(frozen=True)
class StoredSession:
    """A session as the store holds it.

    Attributes:
        session_id: Its id.
        version: Writes so far (>= 1); the next write must name it as expected_version.
        snapshot: The session's latest snapshot (base plus every turn applied), ready for
            `ContextChef.restore`; a new dict owned by the caller.
        turns: Turns logged since the base snapshot (how many deltas were applied).
        expires_at: Unix time (seconds) when the store forgets it, or None.
        verified: The store checked the snapshot's signature for this session id with
            its keys as it loaded it (`verified`), so a restore need not check it again;
            False: the restore checks what it is given.
        lineage: The token of this incarnation of the session (made when it was
            created; ``""``: written before tokens existed), to pass back as the
            writes' ``lineage=`` (`contextchef.stores._lineage`); None: the store does
            not keep one.
    """

    session_id: str
    version: int
    snapshot: dict[str, Any]
    turns: int
    expires_at: float | None
    verified: bool = False
    lineage: str | None = None


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions live between turns: any worker process can continue any session.

    Versions count writes: a new session is written with ``expected_version=0`` and gets
    version 1; each later write names the version it read and gets the next. A write
    whose expected version is not the stored one raises `StaleSessionError` and writes
    nothing (an expired or deleted session counts as version 0). Writes refresh the
    expiry (the store's ``ttl``). Backend failures raise `SessionStoreError`.

    A session deleted or expired and written again under its id counts from version 1
    again, so a version alone does not say which conversation a writer loaded: each
    incarnation has a lineage token (`StoredSession.lineage`, made at creation). A write
    given ``lineage=`` (the token its writer loaded) is refused with `StaleSessionError`
    unless the store holds that incarnation, checked atomically with the version
    (`contextchef.stores._lineage`); ``lineage=None`` (the default) checks the version
    only. `SessionSync` always passes it.
    """

    def load(self, session_id: str) -> StoredSession | None:
        """The session, or None if it does not exist or has expired."""
        ...

    def append(
        self, session_id: str, delta: Delta, *, expected_version: int, lineage: str | None = None
    ) -> int:
        """Log one turn (a `snapshot_delta`) after `expected_version`; return the new version.

        Raises:
            StaleSessionError: The store holds another version (0: no such session), or
                (`lineage` given) another incarnation: the session was deleted or
                expired and created again since it was loaded.
        """
        ...

    def snapshot(
        self,
        session_id: str,
        snapshot: Mapping[str, Any],
        *,
        expected_version: int,
        lineage: str | None = None,
    ) -> int:
        """Replace the base with a full snapshot and drop the turn log; return the version.

        With ``expected_version=0`` this creates the session, whose lineage token is
        `lineage` (non-empty; None: the store makes a random one); otherwise `lineage`,
        if given, is checked as by `append`.

        Raises:
            StaleSessionError: The store holds another version, or another incarnation.
        """
        ...

    def list_sessions(self, prefix: str = "") -> list[str]:
        """Ids of the live sessions starting with `prefix`, sorted."""
        ...

    def delete(self, session_id: str) -> bool:
        """Forget the session; False if there was none."""
        ...

    def expire(self, session_id: str, ttl: float | None) -> bool:
        """Forget the session `ttl` seconds from now (None: never); False if there is none."""
        ...


def check_session_id(session_id: object) -> str:
    """`session_id` if it is a usable id.

    Raises:
        UsageError: Not a non-empty str of at most `MAX_SESSION_ID` characters without
            control characters.
    """
    if (
        not isinstance(session_id, str)
        or not 0 < len(session_id) <= MAX_SESSION_ID
        or not session_id.isprintable()
    ):
        raise UsageError(
            f"session id must be a non-empty printable str of at most {MAX_SESSION_ID} "
            f"characters, got {shown(session_id, 80)}"
        )
    return session_id


def check_ttl(ttl: object) -> float | None:
    """`ttl` (seconds until expiry) if valid: None or a finite number > 0.

    Raises:
        UsageError: Anything else.
    """
    if ttl is None:
        return None
    return check_number("ttl", ttl, minimum=0.0, maximum=1e15, above=True)


def check_version(expected_version: object) -> int:
    """`expected_version` if it is an int >= 0.

    Raises:
        UsageError: Anything else.
    """
    return check_int("expected_version", expected_version, maximum=2**62)


def stale(session_id: str, expected: int, actual: int) -> StaleSessionError:
    """The error for a write based on `expected` when the store holds `actual`."""
    held = f"version {actual}" if actual else "no such session (expired, deleted or new)"
    return StaleSessionError(
        f"session {session_id!r}: write based on version {expected} but the store holds "
        f"{held}; another writer was first: load the session again, redo the turn on it "
        "and retry",
        session_id=session_id,
        expected=expected,
        actual=actual,
    )


def check_keys(keys: object) -> SnapshotKeys | None:
    """`keys` if it is a `SnapshotKeys` or None (a store without keys writes unsigned).

    Raises:
        UsageError: Anything else.
    """
    if keys is not None and not isinstance(keys, SnapshotKeys):
        raise UsageError(f"keys must be a SnapshotKeys or None, got {type(keys).__name__}")
    return keys


def ready_to_restore() -> None:
    """Build, once per process, the snapshot form check a restore starts with.

    That check (`contextchef.session._snapshot_form`) imports pydantic and builds its
    validator on first use, about 0.1 s, several times a warm restore of a 1,000-message
    conversation. A store is built when a worker starts, before its first request, so
    the stores call this when they are built: the worker's first restore then costs what
    the next ones do. ``import contextchef.stores`` itself imports no pydantic.
    """
    from contextchef.session._snapshot_form import _adapter

    _adapter()


def signed(snapshot: dict[str, Any], keys: SnapshotKeys | None, session_id: str) -> dict[str, Any]:
    """`snapshot` signed for `session_id` with ``keys.current`` (as it is without keys).

    Signed as a value that holds no NaN (``finite``): a store writes it with `encode`,
    which refuses NaN, so one that held any is never written.
    """
    return snapshot if keys is None else sign(snapshot, keys, session_id=session_id, finite=True)


_CHAIN = re.compile(r"[0-9a-f]{64}")
"""A head's chain: a SHA-256 hex digest (`chained`)."""

HEAD_FORMAT = "contextchef.store-head"
"""The ``format`` of a store's signed head."""


def chained(chain: str | None, text: str | bytes) -> str:
    """The head's chain after one more stored text (hex SHA-256).

    The chain starts as SHA-256 of the base snapshot's text; each turn makes it
    SHA-256(previous chain, SHA-256(turn text)). Texts are hashed as stored (UTF-8).
    """
    digest = hashlib.sha256(text if isinstance(text, bytes) else text.encode("utf-8")).digest()
    if chain is None:
        return digest.hex()
    return hashlib.sha256(bytes.fromhex(chain) + digest).hexdigest()


def signed_head(
    keys: SnapshotKeys | None, session_id: str, version: int, turns: int, chain: str
) -> str | None:
    """The head a keyed store writes with each write, as JSON text (None without keys).

    It is signed for `session_id` (`contextchef._signing.sign`) and records the version,
    the turn count and the chain over the base and every turn (`chained`), so a record
    whose turns or counters changed no longer matches it, and only the key can make one.
    """
    if keys is None:
        return None
    head = {"format": HEAD_FORMAT, "version": version, "turns": turns, "chain": chain}
    return encode(sign(head, keys, session_id=session_id), session_id)


def head_chain(
    text: object,
    keys: SnapshotKeys,
    session_id: str,
    version: int,
    turns: int,
    where: Where = WHERE,
) -> str:
    """The chain of a stored head, after checking it is signed and names `version`, `turns`.

    Raises:
        SnapshotSignatureError: No head (``missing``), a head that is not a head object
            (``malformed``: another JSON value, or an object of another format), one not
            signed with `keys` for this session (as `contextchef._signing.verify`), or
            one for another version or turn count (``mismatch``: turns were removed or
            added, counters edited).
    """
    if text is None:
        raise SnapshotSignatureError(
            f"session {session_id!r}: the store holds no signed head for it (a store built "
            "with keys writes one with every write): it was removed, or the session was "
            "written by a store without keys",
            problem="missing",
        )
    head = decode(text, session_id, f"head ({where['head']})")
    if not isinstance(head, dict) or head.get("format") != HEAD_FORMAT:
        raise SnapshotSignatureError(
            f"session {session_id!r}: the store's head ({where['head']}) is "
            f"{shown(head, 60)}, not a signed head (a JSON object of format "
            f"{HEAD_FORMAT!r}): it was edited or overwritten",
            problem="malformed",
        )
    verify(head, keys, session_id=session_id)
    chain = head.get("chain")
    counts = (head.get("version"), head.get("turns"))
    if counts != (version, turns) or not all(type(c) is int for c in counts):
        raise SnapshotSignatureError(
            f"session {session_id!r}: the store's signed head is for version "
            f"{shown(head.get('version'), 20)} with {shown(head.get('turns'), 20)} turns, but "
            f"the record holds version {version} with {turns}: turns were removed or added, "
            "or its counters were edited",
            problem="mismatch",
            key_id=head[SIGNATURE].get("key_id"),
        )
    if not (isinstance(chain, str) and _CHAIN.fullmatch(chain)):
        raise corrupt(
            session_id,
            f"head ({where['head']})",
            f"holds chain {shown(chain, 80)}, not 64 hex digits",
        )
    return chain


def verified(
    keys: SnapshotKeys | None,
    session_id: str,
    version: int,
    record: tuple[object, Sequence[object], object],
    where: Where = WHERE,
) -> dict[str, Any]:
    """The snapshot a stored record (base text, turn texts, head text) adds up to, checked.

    Without keys it is the record as it is, if it is unsigned: a signed one (a head, or a
    signature in the snapshot) is refused, since only keys can check it. With keys, the
    head must vouch for `version`, the turn count and every stored text (`head_chain`,
    `chained`), and the snapshot's own signature must be for `session_id`. Every stored
    value is type-checked as it is read (`contextchef.stores._stored`).

    Raises:
        SnapshotSignatureError: No head or signature, an unknown key id, altered content,
            removed, added, reordered or edited turns, edited counters, or another
            session's record; without keys, a signed record (``no_keys``).
        SessionStoreError: A corrupt record (a value not JSON text, not JSON, turns that
            do not apply), naming the column or field (`where`) and the value.
    """
    base = stored_text(session_id, record[0], f"snapshot ({where['base']})")
    texts = [
        stored_text(session_id, t, f"turn {i} ({where['turn']})")
        for i, t in enumerate(record[1], 1)
    ]
    head = record[2]
    if keys is not None:
        chain = head_chain(head, keys, session_id, version, len(texts), where)
        made = chained(None, base)
        for text in texts:
            made = chained(made, text)
        if not hmac.compare_digest(made, chain):
            values = functools.partial(materialize, session_id, base, texts, where)
            why = head_mismatch([base, *texts], values, keys, session_id)
            raise SnapshotSignatureError(
                f"session {session_id!r}: the stored snapshot and turns are not the ones the "
                f"store's signed head vouches for: {why}",
                problem="mismatch",
            )
    floats: list[str] = []  # those the texts hold: none, and the signature check skips
    snapshot = materialize(session_id, base, texts, where, floats)  # its float scans
    if keys is not None:  # `decode` refuses NaN
        verify(snapshot, keys, session_id=session_id, finite=True, floats=bool(floats))
    elif head is not None or SIGNATURE in snapshot:
        raise unkeyed_error(session_id, snapshot.get(SIGNATURE))
    return snapshot


def check_delta(delta: object) -> list[list[Any]]:
    """`delta` if it has the shape of a `snapshot_delta` (so a stored turn always parses).

    Raises:
        UsageError: Not a list of ``["set" | "extend", path, value]`` / ``["del", path]``
            entries with a path of keys (str) and indexes (int).
    """
    valid = isinstance(delta, list)
    for entry in delta if isinstance(delta, list) else ():
        if not (isinstance(entry, list) and entry and entry[0] in ("set", "extend", "del")):
            valid = False
            break
        size = 2 if entry[0] == "del" else 3
        path = entry[1] if len(entry) > 1 else None
        valid = (
            len(entry) == size
            and isinstance(path, list)
            and all(isinstance(k, str) or type(k) is int for k in path)
            and (entry[0] != "extend" or isinstance(entry[2], list))
            and (bool(path) or (entry[0] == "set" and isinstance(entry[2], dict)))
        )
        if not valid:
            break
    if not valid:
        raise UsageError(
            f"a delta is a list of ['set'|'extend', path, value] or ['del', path] entries "
            f"(see snapshot_delta), got {shown(delta, 80)}"
        )
    return delta  # type: ignore[return-value]


def check_snapshot(snapshot: object) -> dict[str, Any]:
    """`snapshot` as a dict if it is a mapping with string keys.

    Raises:
        UsageError: Anything else.
    """
    if not isinstance(snapshot, Mapping) or not all(isinstance(k, str) for k in snapshot):
        raise UsageError(f"a snapshot is a mapping of str keys, got {shown(snapshot, 80)}")
    return dict(snapshot)


# -- deltas -------------------------------------------------------------------------------


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


_FLAT = frozenset({str, int, type(None)})


def _same(a: object, b: object) -> bool:
    """Equal as JSON (``1``, ``1.0`` and ``True`` differ, unlike ``==``)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, list) and isinstance(b, list) and all(map(operator.is_, a, b)):
        return len(a) == len(b) or _json(a) == _json(b)  # the same items: shared forms
    if isinstance(a, list) and _FLAT.issuperset(map(type, a)):  # digests, indices: in C
        return a == b and list(map(type, a)) == list(map(type, b))  # (1, True: types)
    if isinstance(a, (dict, list)):
        return _json(a) == _json(b)
    return a == b


def snapshot_delta(old: Mapping[str, Any], new: Mapping[str, Any]) -> Delta:
    """The turn that turns snapshot `old` into `new` (both JSON: dicts, lists, scalars).

    Dicts are compared key by key (unless their key order changed: then ``set`` whole);
    a list that only grew (old is a prefix of new) gives one ``extend`` of the new
    items; anything else that changed is ``set`` whole; a key that went away is ``del``.
    A ledger's ``wire`` is compared by its ``wire_digests`` (`_wire_grew`).
    ``apply_delta(old, snapshot_delta(old, new))`` equals `new`, key order included.
    """
    out: Delta = []
    _diff(old, new, [], out)
    return out


def _same_order(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether applying per-key operations to `old` leaves `new`'s key order.

    Kept keys stay where they are and new keys go at the end, so the kept keys must lead
    `new` in the same order (key order is part of the bytes of a JSON object).
    """
    kept = [key for key in old if key in new]
    return kept == list(new)[: len(kept)]


def _wire_grew(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a ledger's ``wire`` only grew, read from its ``wire_digests``.

    A snapshot records a digest of each wire entry's canonical JSON (checked on restore),
    so equal digests are equal entries, byte for byte: the entries need not be serialized
    again to be compared.
    """
    a, b = old.get("wire_digests"), new.get("wire_digests")
    if not (isinstance(a, list) and isinstance(b, list)):
        return False
    wire_a, wire_b = old["wire"], new["wire"]
    same_size = isinstance(wire_a, list) and isinstance(wire_b, list)
    return same_size and len(a) == len(wire_a) and len(b) == len(wire_b) and a == b[: len(a)]


def _diff(old: object, new: object, path: list[str | int], out: Delta) -> None:
    if isinstance(old, dict) and isinstance(new, dict) and _same_order(old, new):
        out.extend(["del", [*path, key]] for key in old if key not in new)
        for key, value in new.items():
            if key not in old:
                out.append(["set", [*path, key], value])
            elif key == "wire" and _wire_grew(old, new):
                if len(value) > len(old[key]):
                    out.append(["extend", [*path, key], value[len(old[key]) :]])
            else:
                _diff(old[key], value, [*path, key], out)
        return
    grew = isinstance(old, list) and isinstance(new, list) and len(new) >= len(old)
    if grew and _same(old, new[: len(old)]):  # type: ignore[index, arg-type]
        if len(new) > len(old):  # type: ignore[arg-type]
            out.append(["extend", path, new[len(old) :]])  # type: ignore[arg-type, index]
        return
    if not _same(old, new):
        out.append(["set", path, new])


def apply_delta(base: dict[str, Any], delta: Sequence[Any], session_id: str = "") -> None:
    """Apply a turn to `base` in place (`base` and `delta` fresh from ``json.loads``).

    Raises:
        SessionStoreError: The delta does not fit the base (a corrupt record).
    """
    try:
        for op, path, *value in delta:
            if not path:
                if op != "set" or not isinstance(value[0], dict):
                    raise ValueError(f"{op} at the root")
                base.clear()
                base.update(value[0])
                continue
            parent: Any = base
            for key in path[:-1]:
                parent = parent[key]
            last = path[-1]
            if op == "set":
                parent[last] = value[0]
            elif op == "extend":
                target = parent[last]
                if not isinstance(target, list):
                    raise ValueError(f"extend of a {type(target).__name__}")
                target.extend(value[0])
            elif op == "del":
                del parent[last]
            else:
                raise ValueError(f"unknown operation {op!r}")
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise SessionStoreError(
            f"session {session_id!r}: a stored turn does not apply to its snapshot ({exc}); "
            "the record is corrupt: delete it or restore it from a backup",
            session_id=session_id,
        ) from exc


def materialize(
    session_id: str,
    base: object,
    turns: Sequence[object],
    where: Where = WHERE,
    floats: list[str] | None = None,
) -> dict[str, Any]:
    """The snapshot a stored base and its logged turns (JSON texts) add up to.

    `floats`, when given, gets the text of each float the texts hold (`decode`).

    Raises:
        SessionStoreError: A corrupt record (naming the column or field, `where`).
    """
    snapshot = decode(base, session_id, f"snapshot ({where['base']})", floats)
    if not isinstance(snapshot, dict):
        raise corrupt(
            session_id,
            f"snapshot ({where['base']})",
            f"is {shown(snapshot, 60)}, not a JSON object",
        )
    for number, text in enumerate(turns, 1):
        delta = decode(text, session_id, f"turn {number} ({where['turn']})", floats)
        if not isinstance(delta, list):
            raise corrupt(
                session_id,
                f"turn {number} ({where['turn']})",
                f"is {shown(delta, 60)}, not a JSON array",
            )
        apply_delta(snapshot, delta, session_id)
    return snapshot
