"""`SessionSync`: one conversation of a `ContextChef` kept in a `SessionStore` (stores layer).

It loads the stored snapshot into a chef, lets the host run a turn, and writes the turn's
delta with a compare-and-set on the version and the incarnation (lineage token,
`contextchef.stores._lineage`) it loaded; `run_turn` redoes a turn that lost its race.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contextchef._echo import printed
from contextchef._errors import (
    ContextChefError,
    CorruptHistoryError,
    SessionStoreError,
    SnapshotMismatchError,
    SnapshotSignatureError,
    StaleSessionError,
    UsageError,
    shown,
)
from contextchef._signing import SIGNATURE, SnapshotKeys
from contextchef.exposure._restore import PolicyDifference
from contextchef.stores._lineage import new_lineage, takes_lineage
from contextchef.stores._store import (
    SessionStore,
    check_session_id,
    snapshot_delta,
    unkeyed_error,
)

if TYPE_CHECKING:
    from contextchef.history._messages import Message
    from contextchef.session._chef import ContextChef

__all__ = ["SessionSync"]


def _check_chef(chef: object) -> None:
    """A `UsageError` unless `chef` is a session (`make_chef` returned something else)."""
    try:  # a hostile object's attribute lookup may raise anything
        ok = callable(getattr(chef, "restore", None)) and callable(getattr(chef, "snapshot", None))
    except Exception:
        ok = False
    if not ok:
        raise UsageError(
            f"expected a ContextChef (from make_chef), got {type(chef).__name__}; make_chef "
            "must build and return the session's chef"
        )


def _is_stored(stored: object, session_id: str) -> bool:
    """Whether a store's `load` returned a `StoredSession` of `session_id` (or its fields)."""
    try:
        version, turns = getattr(stored, "version", None), getattr(stored, "turns", None)
        lineage = getattr(stored, "lineage", None)
        return (
            getattr(stored, "session_id", None) == session_id
            and isinstance(getattr(stored, "snapshot", None), dict)
            and type(version) is int
            and version >= 1
            and type(turns) is int
            and turns >= 0
            and type(getattr(stored, "verified", None)) is bool
            and (lineage is None or type(lineage) is str)
        )
    except Exception:  # a property of the host's object that raised
        return False


class SessionSync:
    """One conversation of a `ContextChef` kept in a `SessionStore`.

    A worker that picks the conversation up calls `load_into` (restores the stored
    snapshot into a chef built with the same tools), runs the turn, then calls `save`,
    which writes only the turn's delta, with a compare-and-set on the version it loaded.
    When another worker saved first, `save` raises `StaleSessionError`; `run_turn` does
    the reload-and-redo loop for you. Each write also names the incarnation loaded (its
    lineage token; the one `save` makes when it creates the session), so a session
    deleted or expired and made again meanwhile, even back to the same version, is
    refused the same way instead of getting this turn (a store whose ``append`` and
    ``snapshot`` take no ``lineage=`` is written with the version check only).

    Snapshots are signed with the store's ``keys`` (for this session id) and restored
    against them; a store without keys (or without a ``keys`` attribute) is unsigned, and
    its snapshots are restored with ``allow_unsigned=True`` (a signed one is refused:
    build the store with ``keys=``). Either way the chef keeps its
    own policy; `differences` says where the stored snapshot's differed. The system prompt
    is the conversation's (a ``system`` difference when `make_chef` set another one; to
    change it, call ``set_system_prompt`` after loading, an edit the next compile reports).

    Args:
        store: Where the session lives.
        session_id: The conversation's id.
        checkpoint_every: Write a full snapshot instead of a delta when this many turns
            are logged (keeps ``load`` short); >= 1.

    Raises:
        UsageError: `session_id` is not a valid id; `checkpoint_every` is not an int >= 1.
    """

    def __init__(self, store: SessionStore, session_id: str, *, checkpoint_every: int = 32) -> None:
        if not isinstance(checkpoint_every, int) or checkpoint_every < 1:
            raise UsageError(
                f"checkpoint_every must be an int >= 1, got {shown(checkpoint_every, 40)}"
            )
        self.store = store
        self.session_id = check_session_id(session_id)
        self.checkpoint_every = checkpoint_every
        self.version = 0
        self._turns = 0
        self._snapshot: dict[str, Any] | None = None
        self._history: tuple[Message, ...] = ()  # the messages `_snapshot` holds the forms of
        self._lineage: str | None = None  # the incarnation loaded or created (None: unchecked)
        self._checked = takes_lineage(store)
        try:  # a store without keys (or another kind) is unsigned
            keys = getattr(store, "keys", None)
        except Exception as exc:  # a property of the host's store that raised
            raise SessionStoreError(
                f"session {self.session_id!r}: reading the store's keys raised "
                f"{type(exc).__name__}: {printed(exc)}",
                session_id=self.session_id,
            ) from exc
        self.keys: SnapshotKeys | None = keys if isinstance(keys, SnapshotKeys) else None
        self.differences: tuple[PolicyDifference, ...] = ()
        """What the last `load_into` reported (`ContextChef.restore`)."""

    def load_into(self, chef: ContextChef) -> bool:
        """Restore the stored session into `chef`; False (chef untouched) if none is stored.

        Raises:
            SnapshotSignatureError: The stored snapshot's signature fails (keyed store),
                or the store has no keys and the stored session is signed (``no_keys``:
                build the store with ``keys=``).
            SnapshotMismatchError: `chef` has other tools than the stored session, or
                the record was written by a release whose snapshot version this one
                does not read.
            SessionStoreError: The store failed or holds a corrupt record: one that is
                not a snapshot, or whose snapshot `ContextChef.restore` refuses (edited,
                a turn lost; the refusal's words are in the message). `chef` is untouched.
                A store of your own that raises another exception, or whose ``load``
                returns no `StoredSession`, is reported so too (the exception its cause).
            UsageError: `chef` is not a session (what `make_chef` returned).
        """
        _check_chef(chef)
        stored = self._call("load", self.session_id)
        if stored is not None and not _is_stored(stored, self.session_id):
            raise SessionStoreError(
                f"session {self.session_id!r}: the store's load returned "
                f"{type(stored).__name__} {shown(stored, 80)}; a SessionStore's load returns "
                "None or a StoredSession of this session_id (an int version >= 1, a "
                "snapshot dict, an int turns, a bool verified, a str lineage or None)",
                session_id=self.session_id,
            )
        if stored is None:
            self.version, self._turns, self._snapshot, self._lineage = 0, 0, None, None
            return False
        if self.keys is None and SIGNATURE in stored.snapshot:  # a store of another kind
            raise unkeyed_error(self.session_id, stored.snapshot[SIGNATURE])
        # restore neither changes nor keeps what it is given: the stored snapshot stays
        # the base of the next save's delta as it is; a keyed store of ours verified it
        session = self.session_id if self.keys else None
        try:
            self.differences, self._history = chef._restore_stored(stored, self.keys, session)
        except (SnapshotMismatchError, SnapshotSignatureError):
            raise  # the session's tools, or the keys: not the record
        except (UsageError, CorruptHistoryError) as exc:  # what the store gave does not restore
            raise SessionStoreError(
                f"session {self.session_id!r}: the stored record does not restore: {exc}",
                session_id=self.session_id,
            ) from exc
        self.version, self._turns, self._lineage = stored.version, stored.turns, stored.lineage
        self._snapshot = stored.snapshot
        return True

    def save(self, chef: ContextChef) -> int:
        """Write `chef`'s state as the next version; return it.

        Raises:
            StaleSessionError: Another writer saved since `load_into`, or the session was
                deleted or expired (and perhaps made again) since (nothing written).
            SessionStoreError: The store failed (a store of your own: any exception it
                raised is the cause), or its write returned no version (an int >= 1).
            UsageError: `chef` is not a session.
        """
        _check_chef(chef)
        old, session = self._snapshot, self.session_id if self.keys else None
        base = (self._history, old) if old is not None else None  # unchanged parts shared
        new, history = chef._snapshot_over(base, self.keys, session)
        lineage = new_lineage() if self.version == 0 else self._lineage
        checked = {"lineage": lineage} if self._checked else {}
        if old is None or self._turns + 1 >= self.checkpoint_every:
            version = self._call(
                "snapshot", self.session_id, new, expected_version=self.version, **checked
            )
            self._turns = 0
        else:
            delta = snapshot_delta(old, new)
            version = self._call(
                "append", self.session_id, delta, expected_version=self.version, **checked
            )
            self._turns += 1
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise SessionStoreError(
                f"session {self.session_id!r}: the store's write returned {shown(version, 80)}; "
                "a SessionStore's snapshot and append return the new version (an int >= 1)",
                session_id=self.session_id,
            )
        # a snapshot shares nothing with the chef: the next delta's base
        self.version, self._snapshot, self._history = version, new, history
        self._lineage = lineage if self._checked else None
        return version

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """`self.store`'s `method` called; what it raises, a `ContextChefError`.

        The library's stores raise only `SessionStoreError` (`StaleSessionError` on a lost
        race); a store of the host's own may raise anything (a driver's ``ConnectionError``),
        which is raised as a `SessionStoreError` naming the call, the original its cause.
        """
        try:
            return getattr(self.store, method)(*args, **kwargs)
        except ContextChefError:
            raise
        except Exception as exc:
            raise SessionStoreError(
                f"session {self.session_id!r}: the store's {method} raised "
                f"{type(exc).__name__}: {printed(exc)}",
                session_id=self.session_id,
            ) from exc

    def run_turn(
        self,
        make_chef: Callable[[], ContextChef],
        turn: Callable[[ContextChef], Any],
        *,
        attempts: int = 8,
        backoff: float = 0.01,
    ) -> Any:
        """Load, run `turn` on a fresh chef, save; on a lost race, do it all again.

        After the n-th lost race the next attempt waits a random time in
        ``[0, backoff * 2**n]`` seconds (capped at 1 s): without it two writers in a
        tight loop can keep colliding, the one that just won starting its next turn
        while the loser redoes this one. The jitter only spaces attempts; it never
        reaches a request.

        Args:
            make_chef: Builds a chef with the session's tools (a new one per attempt, so
                a lost attempt leaves nothing behind).
            turn: The work of one turn (append messages, compile, ingest...); its return
                value is returned. It may run more than once: keep side effects
                outside the chef idempotent.
            attempts: Tries before the last `StaleSessionError` is raised.
            backoff: Base of the randomized exponential wait between tries, in seconds.

        Raises:
            StaleSessionError: Every attempt lost its race.
            UsageError: `attempts` is not a positive int or `backoff` not a number >= 0.
        """
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise UsageError(f"attempts must be an int >= 1, got {shown(attempts, 40)}")
        if (
            isinstance(backoff, bool)
            or not isinstance(backoff, (int, float))
            or not 0 <= backoff < float("inf")
        ):
            raise UsageError(f"backoff must be a number of seconds >= 0, got {shown(backoff, 40)}")
        for attempt in range(attempts):
            if attempt:
                time.sleep(random.uniform(0, min(1.0, backoff * 2 ** (attempt - 1))))
            chef = make_chef()
            self.load_into(chef)
            result = turn(chef)
            try:
                self.save(chef)
            except StaleSessionError:
                if attempt == attempts - 1:
                    raise
                continue
            return result
        raise AssertionError("unreachable")  # pragma: no cover
