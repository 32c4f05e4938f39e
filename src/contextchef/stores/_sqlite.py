"""`SQLiteSessionStore`: the embedded default session store (stdlib ``sqlite3``).

One database file holds every session; any number of threads and processes on one
machine may share it (WAL journal, one connection per thread and process, writers
queue on SQLite's lock for up to ``timeout`` seconds). Each write is one ``BEGIN
IMMEDIATE`` transaction that checks the version and writes, so it is a
compare-and-set: a stale writer gets `StaleSessionError` and nothing is written.

Tables: ``sessions(id, version, base, turns, expires_at)`` (the base snapshot as JSON
text), ``turns(id, version, delta)`` (the turn log since the base, primary key
``(id, version)``, so no version can be logged twice) and, for a store built with keys,
``heads(id, head)``: the signed head rewritten with every write (`contextchef.stores.
_store.signed_head`), which a load checks the version, the turn count and every stored
text against. ``lineages(id, token)`` holds each session's lineage token (written when
it is created, `contextchef.stores._lineage`); a table of its own, so a database made
before it existed gains it when opened and its sessions (without a row: token ``""``)
load and are written as before.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contextchef._errors import (
    SessionStoreError,
    UsageError,
    check_callable,
    check_number,
    check_str,
    shown,
)
from contextchef._json import is_unicode
from contextchef._signing import SnapshotKeys
from contextchef.stores._lineage import check_lineage, new_lineage, recreated
from contextchef.stores._store import (
    Delta,
    StoredSession,
    chained,
    check_delta,
    check_keys,
    check_session_id,
    check_snapshot,
    check_ttl,
    check_version,
    head_chain,
    ready_to_restore,
    signed,
    signed_head,
    stale,
    unkeyed_error,
    verified,
)
from contextchef.stores._stored import (
    encode,
    stored_count,
    stored_expiry,
    stored_lineage,
)

__all__ = ["SQLiteSessionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    base TEXT NOT NULL,
    turns INTEGER NOT NULL,
    expires_at REAL
);
CREATE TABLE IF NOT EXISTS turns (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    delta TEXT NOT NULL,
    PRIMARY KEY (id, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS heads (
    id TEXT PRIMARY KEY,
    head TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS lineages (
    id TEXT PRIMARY KEY,
    token TEXT NOT NULL
);
"""


_WHERE = {
    "version": "column sessions.version",
    "turns": "column sessions.turns",
    "base": "column sessions.base",
    "turn": "column turns.delta",
    "head": "column heads.head",
    "expires_at": "column sessions.expires_at",
    "lineage": "column lineages.token",
}
"""Where each value a load reads back is kept (named by its errors)."""


def _token(session_id: str, value: object) -> str:
    """A session's stored lineage token (``""``: no row, written before tokens existed).

    Raises:
        SessionStoreError: It is not a token's text (a corrupt record).
    """
    return stored_lineage(session_id, value, _WHERE["lineage"])


class SQLiteSessionStore:
    """A `SessionStore` in one SQLite file (see the module docstring).

    Args:
        path: The database file (created with its tables if missing), or
            ``":memory:"`` for a store private to this connection (tests).
        ttl: Seconds a session lives after its last write (None: until deleted).
        timeout: Seconds a writer waits for another process's lock before failing
            with `SessionStoreError`.
        clock: Unix time in seconds (``time.time``); expiry only, never in a prompt.
        keys: Sign every snapshot written and check every one loaded (see
            `contextchef.stores._store`); None: unsigned.

    Raises:
        UsageError: Bad `ttl`, `timeout` or `keys`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ttl: float | None = None,
        timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
        keys: SnapshotKeys | None = None,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise UsageError(f"path must be a file path or ':memory:', got {shown(path, 80)}")
        self.path = os.fspath(path) if isinstance(os.fspath(path), str) else ""
        if not self.path or "\0" in self.path or not is_unicode(self.path):
            raise UsageError(f"path must be a file path or ':memory:', got {shown(path, 80)}")
        self.ttl = check_ttl(ttl)
        self.timeout = check_number("timeout", timeout, minimum=0.0, maximum=1e9, above=True)
        self._clock = check_callable("clock", clock)
        self.keys = check_keys(keys)
        ready_to_restore()  # the first request's restore then costs what the next ones do
        self._local = threading.local()
        self._inherited: list[sqlite3.Connection] = []
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise SessionStoreError(
                    f"cannot open session store {shown(self.path, 120)}: {exc}"
                ) from exc
        with self._write():
            pass  # creates the tables now, so configuration errors surface here

    # -- connections ----------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (a new one after a fork: connections never cross it)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid != os.getpid():
            # inherited through fork: never used or closed here (closing could disturb the
            # parent's locks or WAL), just kept from being garbage-collected
            self._inherited.append(conn)
            conn = None
        if conn is None:
            conn = self._open()
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _open(self) -> sqlite3.Connection:
        """A configured connection; waits up to ``timeout`` for another opener's lock.

        Switching to WAL takes an exclusive lock and SQLite does not always route that
        wait through its busy handler, so two processes opening a new file at the same
        moment can see "database is locked" at once; that case is retried here.
        """
        give_up = time.monotonic() + self.timeout
        pause = 0.005
        while True:
            conn: sqlite3.Connection | None = None
            try:
                conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
                mode = conn.execute("PRAGMA journal_mode").fetchone()
                if self.path != ":memory:" and (mode is None or str(mode[0]).lower() != "wal"):
                    conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.executescript(_SCHEMA)
                return conn
            except sqlite3.OperationalError as exc:
                if conn is not None:
                    conn.close()
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() + pause > give_up:
                    raise SessionStoreError(
                        f"cannot open session store {shown(self.path, 120)}: {exc}"
                    ) from exc
                time.sleep(pause)
                pause = min(pause * 2, 0.25)
            except sqlite3.Error as exc:
                if conn is not None:
                    conn.close()
                raise SessionStoreError(
                    f"cannot open session store {shown(self.path, 120)}: {exc}"
                ) from exc

    @contextmanager
    def _write(self, session_id: str = "") -> Iterator[sqlite3.Connection]:
        """One write transaction (taken at once, so two writers never deadlock)."""
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise SessionStoreError(
                f"session store {shown(self.path, 120)}: {exc}", session_id=session_id
            ) from exc

    def _live(self, conn: sqlite3.Connection, session_id: str) -> tuple[int, int, str] | None:
        """(version, turns, lineage token) of the live session, or None (missing or expired)."""
        row = conn.execute(
            "SELECT version, turns, expires_at, token FROM sessions "
            "LEFT JOIN lineages USING (id) WHERE id = ?",
            (session_id,),
        ).fetchone()
        if row is None or self._expired(session_id, row[2]):
            return None
        return (
            stored_count(session_id, row[0], "version", _WHERE["version"], least=1),
            stored_count(session_id, row[1], "turn count", _WHERE["turns"]),
            _token(session_id, row[3]),
        )

    def _expired(self, session_id: str, expires_at: object) -> bool:
        """Whether a row's stored expiry has passed.

        Raises:
            SessionStoreError: It is not a number or NULL (a corrupt record).
        """
        when = stored_expiry(session_id, expires_at, _WHERE["expires_at"])
        return when is not None and when <= self._clock()

    @staticmethod
    def _head(conn: sqlite3.Connection, session_id: str) -> str | None:
        row = conn.execute("SELECT head FROM heads WHERE id = ?", (session_id,)).fetchone()
        return None if row is None else row[0]

    def _check(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        expected: int,
        lineage: str | None,
    ) -> tuple[int, int, str] | None:
        """The live session's (version, turns), if a write based on `expected` may go ahead.

        None: no live session (`expected` is 0). A `lineage` given must be the session's.

        Raises:
            StaleSessionError: The store holds another version, or another incarnation.
        """
        live = self._live(conn, session_id)
        actual = live[0] if live else 0
        if actual != expected:
            raise stale(session_id, expected, actual)
        if live is not None and lineage is not None and live[2] != lineage:
            raise recreated(session_id, expected, actual)
        return live

    def _refuse_signed(
        self, conn: sqlite3.Connection, session_id: str, live: tuple[int, int, str] | None
    ) -> None:
        """Refuse a write without keys on a live signed session (it would drop the signature).

        Raises:
            SnapshotSignatureError: ``no_keys``, saying to build the store with keys.
        """
        if self.keys is None and live is not None and self._head(conn, session_id) is not None:
            raise unkeyed_error(session_id)

    @staticmethod
    def _set_head(conn: sqlite3.Connection, session_id: str, head: str | None) -> None:
        """Write the signed head of the write (a store without keys keeps none)."""
        if head is None:
            conn.execute("DELETE FROM heads WHERE id = ?", (session_id,))
        else:
            conn.execute("INSERT OR REPLACE INTO heads VALUES (?, ?)", (session_id, head))

    def _expiry(self) -> float | None:
        return None if self.ttl is None else self._clock() + self.ttl

    # -- SessionStore ---------------------------------------------------------------------

    def load(self, session_id: str) -> StoredSession | None:
        """The session, or None (see `SessionStore.load`)."""
        session_id = check_session_id(session_id)
        conn = self._connection()
        try:
            conn.execute("BEGIN")  # one read snapshot for the base and its turns
            try:
                row = conn.execute(
                    "SELECT version, base, turns, expires_at, token FROM sessions "
                    "LEFT JOIN lineages USING (id) WHERE id = ?",
                    (session_id,),
                ).fetchone()
                texts = [
                    r[0]
                    for r in conn.execute(
                        "SELECT delta FROM turns WHERE id = ? ORDER BY version", (session_id,)
                    )
                ]
                head = self._head(conn, session_id)
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise SessionStoreError(
                f"session store {shown(self.path, 120)}: {exc}", session_id=session_id
            ) from exc
        if row is None or self._expired(session_id, row[3]):
            return None
        version = stored_count(session_id, row[0], "version", _WHERE["version"], least=1)
        snapshot = verified(self.keys, session_id, version, (row[1], texts, head), _WHERE)
        turns = stored_count(session_id, row[2], "turn count", _WHERE["turns"])
        if len(texts) != turns:
            raise SessionStoreError(
                f"session {session_id!r}: {turns} turns recorded but {len(texts)} stored; "
                "the record is corrupt",
                session_id=session_id,
            )
        return StoredSession(
            session_id=session_id,
            version=version,
            snapshot=snapshot,
            turns=turns,
            expires_at=stored_expiry(session_id, row[3], _WHERE["expires_at"]),
            verified=self.keys is not None,  # `verified` checked the signature
            lineage=_token(session_id, row[4]),
        )

    def append(
        self, session_id: str, delta: Delta, *, expected_version: int, lineage: str | None = None
    ) -> int:
        """Log one turn after `expected_version` (see `SessionStore.append`)."""
        session_id = check_session_id(session_id)
        if check_version(expected_version) == 0:
            raise UsageError(
                f"session {session_id!r}: a new session is written with snapshot(), not append()"
            )
        lineage = check_lineage(lineage, creating=False)
        text = encode(check_delta(delta), session_id)
        with self._write(session_id) as conn:
            live = self._check(conn, session_id, expected_version, lineage)
            new = expected_version + 1
            self._refuse_signed(conn, session_id, live)
            if self.keys is not None and live is not None:  # extend only a head that holds
                chain = head_chain(self._head(conn, session_id), self.keys, session_id, *live[:2])
                head = signed_head(self.keys, session_id, new, live[1] + 1, chained(chain, text))
                self._set_head(conn, session_id, head)
            conn.execute("INSERT INTO turns VALUES (?, ?, ?)", (session_id, new, text))
            conn.execute(
                "UPDATE sessions SET version = ?, turns = turns + 1, "
                "expires_at = coalesce(?, expires_at) WHERE id = ?",
                (new, self._expiry(), session_id),
            )
        return new

    def snapshot(
        self,
        session_id: str,
        snapshot: Mapping[str, Any],
        *,
        expected_version: int,
        lineage: str | None = None,
    ) -> int:
        """Write a full snapshot as the next version (see `SessionStore.snapshot`)."""
        session_id = check_session_id(session_id)
        creating = check_version(expected_version) == 0
        lineage = check_lineage(lineage, creating=creating)
        text = encode(signed(check_snapshot(snapshot), self.keys, session_id), session_id)
        with self._write(session_id) as conn:
            live = self._check(conn, session_id, expected_version, lineage)
            new = expected_version + 1
            self._refuse_signed(conn, session_id, live)
            conn.execute("DELETE FROM turns WHERE id = ?", (session_id,))
            head = signed_head(self.keys, session_id, new, 0, chained(None, text))
            self._set_head(conn, session_id, head)
            if live is None:  # new, or an expired leftover to replace
                conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
                conn.execute(
                    "INSERT OR REPLACE INTO lineages VALUES (?, ?)",
                    (session_id, lineage or new_lineage()),
                )
                conn.execute(
                    "INSERT INTO sessions VALUES (?, ?, ?, 0, ?)",
                    (session_id, new, text, self._expiry()),
                )
            else:
                conn.execute(
                    "UPDATE sessions SET version = ?, base = ?, turns = 0, "
                    "expires_at = coalesce(?, expires_at) WHERE id = ?",
                    (new, text, self._expiry(), session_id),
                )
        return new

    def list_sessions(self, prefix: str = "") -> list[str]:
        """Live session ids starting with `prefix`, sorted."""
        check_str("prefix", prefix)
        conn = self._connection()
        try:
            rows = conn.execute(
                "SELECT id FROM sessions WHERE substr(id, 1, ?) = ? "
                "AND (expires_at IS NULL OR expires_at > ?) ORDER BY id",
                (len(prefix), prefix, self._clock()),
            ).fetchall()
        except sqlite3.Error as exc:
            raise SessionStoreError(f"session store {shown(self.path, 120)}: {exc}") from exc
        return [r[0] for r in rows]  # ids are text: a blob id never matches the prefix

    def delete(self, session_id: str) -> bool:
        """Forget the session; False if there was no live one."""
        session_id = check_session_id(session_id)
        with self._write(session_id) as conn:
            row = conn.execute(
                "SELECT expires_at FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            # a corrupt record is deleted too (the way out its errors name): it counts as live
            live = row is not None and not (
                isinstance(row[0], (int, float)) and row[0] <= self._clock()
            )
            conn.execute("DELETE FROM turns WHERE id = ?", (session_id,))
            conn.execute("DELETE FROM heads WHERE id = ?", (session_id,))
            conn.execute("DELETE FROM lineages WHERE id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return live

    def expire(self, session_id: str, ttl: float | None) -> bool:
        """Forget the session `ttl` seconds from now (None: never); False if none is live."""
        session_id = check_session_id(session_id)
        ttl = check_ttl(ttl)
        with self._write(session_id) as conn:
            if self._live(conn, session_id) is None:
                return False
            when = None if ttl is None else self._clock() + ttl
            conn.execute("UPDATE sessions SET expires_at = ? WHERE id = ?", (when, session_id))
        return True

    def purge_expired(self) -> int:
        """Delete the expired sessions' rows (they are already invisible); return how many."""
        now = self._clock()
        with self._write() as conn:
            for table in ("turns", "heads", "lineages"):
                conn.execute(
                    f"DELETE FROM {table} WHERE id IN "
                    "(SELECT id FROM sessions WHERE expires_at <= ?)",
                    (now,),
                )
            return conn.execute("DELETE FROM sessions WHERE expires_at <= ?", (now,)).rowcount

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
