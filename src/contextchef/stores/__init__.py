"""Session stores: a `ContextChef`'s snapshots kept outside the process (stores layer).

Above the session: a store keeps what `ContextChef.snapshot` returns and hands it back to
`ContextChef.restore`; the session never imports this package.

* `SessionStore`: the protocol (load, append a turn's delta, write a full snapshot, list,
  delete, expire), every write a compare-and-set on the version (`StaleSessionError`).
* `SQLiteSessionStore`: the embedded default (stdlib ``sqlite3``, one file, many
  processes); `RedisSessionStore`: redis-py (the ``redis`` extra, imported when built).
* `SessionSync`: one conversation of a chef in a store (load, run a turn, save the delta,
  redo a turn that lost its race).
* `snapshot_delta` / `apply_delta`: a turn as the difference between two snapshots.
"""

from contextchef.stores._redis import RedisSessionStore
from contextchef.stores._sqlite import SQLiteSessionStore
from contextchef.stores._store import SessionStore, StoredSession, apply_delta, snapshot_delta
from contextchef.stores._sync import SessionSync

__all__ = [
    "RedisSessionStore",
    "SQLiteSessionStore",
    "SessionStore",
    "SessionSync",
    "StoredSession",
    "apply_delta",
    "snapshot_delta",
]
