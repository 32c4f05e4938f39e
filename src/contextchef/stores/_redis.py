"""`RedisSessionStore`: sessions in Redis, shared by workers on many machines (extra ``redis``).

Each session is two keys with the same hash tag (so they live in one Redis Cluster
slot): ``<prefix>{<id>}:m``, a hash of ``version``, ``base`` (the base snapshot, JSON),
``turns``, ``lineage`` (the lineage token written when the session is created,
`contextchef.stores._lineage`; a hash written before tokens existed has none: token
``""``) and, for a store built with keys, ``head`` (the signed head rewritten with
every write, `contextchef.stores._store.signed_head`, which a load checks the version,
the turn count and every stored text against), and ``<prefix>{<id>}:t``, the list of
turn deltas since the base. Every write is one Lua script that compares the version, the
lineage token the writer loaded (when given) and, keyed, the head it extends, and writes
(Redis runs a script atomically), so it is a compare-and-set; a load reads both keys in
one ``MULTI``.
Expiry is Redis's own (``PEXPIRE`` on both keys at every write when the store has a
``ttl``).

Uses redis-py (``pip install "contextchef[redis]"``); it is imported when the store is
created, not by ``import contextchef``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from contextchef._errors import (
    SessionStoreError,
    SnapshotSignatureError,
    UsageError,
    check_str,
    shown,
    shown_keys,
)
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
from contextchef.stores._stored import corrupt, encode, stored_count, stored_lineage

__all__ = ["RedisSessionStore"]

# KEYS: meta, log. ARGV: expected version, delta, ttl in ms (0: leave the expiry), the
# head read before (keyed store), the new head ('': no head) and the expected lineage
# ('': unchecked, else '=' .. token). Returns {1, new version}, {0, actual version}, {-1,
# version} (the head changed while the version did not), {-2, version} (a store without
# keys on a signed session), {-3, field, raw value} (a corrupt count) or {-4, version}
# (another lineage: the session was made again).
_COUNT = """
local function count(field)
  local raw = redis.call('HGET', KEYS[1], field)
  if not raw then return 0, '0' end
  local digits = string.match(raw, '^%s*(%d+)%s*$')
  if digits then digits = string.gsub(digits, '^0+', '') end
  if not digits or #digits > 19 or (#digits == 19 and digits > '4611686018427387903')
    or (field == 'version' and digits == '') then return nil, raw end
  return tonumber(digits) or 0, raw
end
local function other_lineage(expected)
  return expected ~= '' and '=' .. (redis.call('HGET', KEYS[1], 'lineage') or '') ~= expected
end
"""
"""Lua: a stored count (``version``, ``turns``; 0 when absent), or nil and the raw value when
corrupt (a script then returns ``{-3, field, raw}``; Python's `stored_count` reads it the
same): not digits, past 2**62 - 1, or a stored version of 0 (a session's is >= 1)."""

_APPEND = (
    _COUNT
    + """
local v, raw = count('version')
if not v then return {-3, 'version', raw} end
local turns, raw_turns = count('turns')
if not turns then return {-3, 'turns', raw_turns} end
if v == 0 or v ~= tonumber(ARGV[1]) then return {0, v} end
if other_lineage(ARGV[6]) then return {-4, v} end
if ARGV[5] ~= '' then
  if (redis.call('HGET', KEYS[1], 'head') or '') ~= ARGV[4] then return {-1, v} end
  redis.call('HSET', KEYS[1], 'head', ARGV[5])
elseif redis.call('HEXISTS', KEYS[1], 'head') == 1 then return {-2, v} end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'version', v + 1)
redis.call('HINCRBY', KEYS[1], 'turns', 1)
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
else
  local left = redis.call('PTTL', KEYS[1])
  if left > 0 then redis.call('PEXPIRE', KEYS[2], left) end
end
return {1, v + 1}
"""
)

# KEYS: meta, log. ARGV: expected version, snapshot, ttl in ms (0: leave the expiry), the
# new head ('': none, a store without keys), the expected lineage (as _APPEND's) and a new
# session's token. Returns {1, new version}, {0, actual version}, {-2, version} (a store
# without keys on a signed session), {-3, field, raw value} (a corrupt version) or {-4,
# version} (another lineage).
_SNAPSHOT = (
    _COUNT
    + """
local v, raw = count('version')
if not v then return {-3, 'version', raw} end
if v ~= tonumber(ARGV[1]) then return {0, v} end
if v > 0 and other_lineage(ARGV[5]) then return {-4, v} end
if ARGV[4] == '' and v > 0 and redis.call('HEXISTS', KEYS[1], 'head') == 1 then
  return {-2, v}
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'version', v + 1, 'base', ARGV[2], 'turns', 0)
if v == 0 then redis.call('HSET', KEYS[1], 'lineage', ARGV[6]) end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'head', ARGV[4])
else redis.call('HDEL', KEYS[1], 'head') end
local ttl = tonumber(ARGV[3])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return {1, v + 1}
"""
)

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


_WHERE = {
    "version": "hash field 'version'",
    "turns": "hash field 'turns'",
    "base": "hash field 'base'",
    "turn": "the turn list",
    "head": "hash field 'head'",
    "expires_at": "the key's TTL",
    "lineage": "hash field 'lineage'",
}
"""Where each value a load reads back is kept (named by its errors)."""


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _field(name: Any) -> str:
    """A hash field name as text (one that is not UTF-8 is kept, shown replaced)."""
    return name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)


class RedisSessionStore:
    """A `SessionStore` in Redis (see the module docstring).

    Args:
        client: A ``redis.Redis`` (or ``redis.RedisCluster``) client, or a URL such as
            ``"redis://127.0.0.1:6379/0"``.
        prefix: Prepended to every key (one Redis may hold several stores).
        ttl: Seconds a session lives after its last write (None: until deleted).
        keys: Sign every snapshot written and check every one loaded (see
            `contextchef.stores._store`); None: unsigned.

    Raises:
        UsageError: redis-py is not installed, or a bad `ttl` / `prefix` / `keys`.
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "contextchef:",
        ttl: float | None = None,
        keys: SnapshotKeys | None = None,
    ):
        try:
            import redis
        except ImportError as exc:  # pragma: no cover - the extra is installed in tests
            raise UsageError(
                'RedisSessionStore needs redis-py: pip install "contextchef[redis]"'
            ) from exc
        if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
            raise UsageError(f"prefix must be a str without braces, got {shown(prefix, 40)}")
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError,)
        self.client = redis.Redis.from_url(client) if isinstance(client, str) else client
        self.prefix = prefix
        self.ttl = check_ttl(ttl)
        self.keys = check_keys(keys)
        ready_to_restore()  # the first request's restore then costs what the next ones do
        self._append = self.client.register_script(_APPEND)
        self._snapshot = self.client.register_script(_SNAPSHOT)

    def _keys(self, session_id: str) -> list[str]:
        tag = f"{self.prefix}{{{session_id}}}"
        return [f"{tag}:m", f"{tag}:t"]

    def _ttl_ms(self) -> int:
        return 0 if self.ttl is None else max(1, round(self.ttl * 1000))

    def _call(self, session_id: str, what: str, run: Any) -> Any:
        try:
            return run()
        except self._errors as exc:
            raise SessionStoreError(
                f"session {session_id!r}: Redis failed to {what}: {exc}", session_id=session_id
            ) from exc

    # -- SessionStore ---------------------------------------------------------------------

    def load(self, session_id: str) -> StoredSession | None:
        """The session, or None (see `SessionStore.load`)."""
        session_id = check_session_id(session_id)
        meta_key, log_key = self._keys(session_id)

        def read() -> list[Any]:
            pipe = self.client.pipeline(transaction=True)
            pipe.hgetall(meta_key)
            pipe.lrange(log_key, 0, -1)
            pipe.pttl(meta_key)
            result: list[Any] = pipe.execute()
            return result

        raw, texts, left = self._call(session_id, "load", read)
        meta = {_field(k): v for k, v in raw.items()}
        if not meta:
            return None
        for name in ("version", "base"):
            if name not in meta:
                raise corrupt(
                    session_id,
                    f"hash {meta_key!r}",
                    f"has no field {name!r} (fields: {shown_keys(meta)})",
                )
        version = stored_count(session_id, meta["version"], "version", _WHERE["version"], least=1)
        record = (meta["base"], texts, meta.get("head"))
        snapshot = verified(self.keys, session_id, version, record, _WHERE)
        turns = stored_count(session_id, meta.get("turns", 0), "turn count", _WHERE["turns"])
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
            expires_at=time.time() + left / 1000 if left > 0 else None,
            verified=self.keys is not None,  # `verified` checked the signature
            lineage=stored_lineage(session_id, meta.get("lineage"), _WHERE["lineage"]),
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
        old, new = self._next_head(session_id, expected_version, text)
        args: list[str | int] = [expected_version, text, self._ttl_ms(), old, new]
        args.append("" if lineage is None else "=" + lineage)
        done, version = self._reply(
            session_id,
            self._call(
                session_id, "append", lambda: self._append(keys=self._keys(session_id), args=args)
            ),
        )
        if done == -2:
            raise unkeyed_error(session_id)
        if done == -4:
            raise recreated(session_id, expected_version, version)
        if done == -1:
            raise SnapshotSignatureError(
                f"session {session_id!r}: the store's signed head changed while its version "
                f"stayed {expected_version}: the record was edited; nothing was written",
                problem="mismatch",
            )
        if not done:
            raise stale(session_id, expected_version, int(version))
        return int(version)

    @staticmethod
    def _reply(session_id: str, reply: Any) -> tuple[int, int]:
        """A write script's ``{status, version}``; a corrupt stored count is an error.

        Raises:
            SessionStoreError: The script found a stored count out of its range (or not one).
        """
        if reply[0] == -3:
            field = _field(reply[1])
            what, least = ("version", 1) if field == "version" else ("turn count", 0)
            stored_count(session_id, reply[2], what, _WHERE[field], least=least)  # raises
            raise corrupt(session_id, f"{what} ({_WHERE[field]})", "is not a count")
        return int(reply[0]), int(reply[1])

    def _next_head(self, session_id: str, expected: int, text: str) -> tuple[str, str]:
        """(the stored head, the head after appending `text`); ``("", "")`` without keys.

        Raises:
            StaleSessionError: The store holds another version than `expected`.
            SnapshotSignatureError: The stored head does not vouch for the record.
        """
        if self.keys is None:
            return "", ""
        meta_key = self._keys(session_id)[0]
        read = self._call(
            session_id,
            "read the head",
            lambda: self.client.hmget(meta_key, "version", "turns", "head"),
        )
        version = 0  # no session
        if read[0] is not None:
            version = stored_count(session_id, read[0], "version", _WHERE["version"], least=1)
        if version != expected:
            raise stale(session_id, expected, version)
        turns = 0 if read[1] is None else read[1]
        turns = stored_count(session_id, turns, "turn count", _WHERE["turns"])
        chain = head_chain(read[2], self.keys, session_id, version, turns, _WHERE)
        new = signed_head(self.keys, session_id, version + 1, turns + 1, chained(chain, text))
        assert new is not None
        return _text(read[2]), new

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
        head = signed_head(self.keys, session_id, expected_version + 1, 0, chained(None, text))
        args: list[str | int] = [expected_version, text, self._ttl_ms(), head or ""]
        if creating:
            args += ["", lineage or new_lineage()]
        else:
            args += ["" if lineage is None else "=" + lineage, ""]
        done, version = self._reply(
            session_id,
            self._call(
                session_id,
                "snapshot",
                lambda: self._snapshot(keys=self._keys(session_id), args=args),
            ),
        )
        if done == -2:
            raise unkeyed_error(session_id)
        if done == -4:
            raise recreated(session_id, expected_version, version)
        if not done:
            raise stale(session_id, expected_version, int(version))
        return int(version)

    def list_sessions(self, prefix: str = "") -> list[str]:
        """Live session ids starting with `prefix`, sorted (a ``SCAN``: O(keys))."""
        check_str("prefix", prefix)
        head = f"{self.prefix}{{"
        pattern = _GLOB_SPECIAL.sub(r"\\\1", head + prefix) + "*}:m"

        def scan() -> list[str]:
            found = set()
            for key in self.client.scan_iter(match=pattern, count=1000):
                try:
                    found.add(_text(key)[len(head) : -3])
                except UnicodeDecodeError:
                    raise SessionStoreError(
                        f"Redis key {shown(key, 120)} is not UTF-8 text, so it names no "
                        f"session: it was not written by a store with prefix "
                        f"{shown(self.prefix, 40)}; delete it or use another prefix"
                    ) from None
            return sorted(found)

        found: list[str] = self._call("", "list sessions", scan)
        return found

    def delete(self, session_id: str) -> bool:
        """Forget the session; False if there was none."""
        session_id = check_session_id(session_id)
        meta_key, log_key = self._keys(session_id)

        def drop() -> bool:
            pipe = self.client.pipeline(transaction=True)
            pipe.delete(meta_key)
            pipe.delete(log_key)
            return bool(pipe.execute()[0])

        deleted: bool = self._call(session_id, "delete", drop)
        return deleted

    def expire(self, session_id: str, ttl: float | None) -> bool:
        """Forget the session `ttl` seconds from now (None: never); False if there is none."""
        session_id = check_session_id(session_id)
        ttl = check_ttl(ttl)
        meta_key, log_key = self._keys(session_id)

        def set_expiry() -> bool:
            pipe = self.client.pipeline(transaction=True)
            if ttl is None:
                pipe.persist(meta_key)
                pipe.persist(log_key)
                pipe.exists(meta_key)
                return bool(pipe.execute()[2])
            ms = max(1, round(ttl * 1000))
            pipe.pexpire(meta_key, ms)
            pipe.pexpire(log_key, ms)
            return bool(pipe.execute()[0])

        found: bool = self._call(session_id, "set the expiry", set_expiry)
        return found
