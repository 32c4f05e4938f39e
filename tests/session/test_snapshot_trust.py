"""Snapshots are data, policy is the host's, and signed snapshots refuse any edit (issue 23).

A host closes tools four ways here: the ``read_only`` mode hides ``write_file``, the
blocklist blocks ``delete_cache`` and ``load_toolkit`` (so the ``admin`` toolkit's
``admin_reset`` cannot be loaded), and ``search_secrets`` is deferred under
``require_search`` with the ``client`` strategy (callable only through
``defer_execute`` after a search). Sixteen edits of a stored snapshot, on the snapshot
dict and through a row edited in the SQLite store:

* signed (the default: ``restore(..., keys=...)``, a store built with keys): every edit
  is refused with `SnapshotSignatureError` (a stored row too, even one that is not JSON:
  the store's signed head vouches for every stored text) and the session is unchanged,
  snapshot for snapshot;
* unsigned, where the host opted in (``allow_unsigned=True``): the session keeps its
  own policy, so no edit reopens a tool the policy closes; a forged load of
  ``search_secrets`` (allowed by the policy, only not searched yet) is dropped, since the
  history shows no search that found it, so ``require_search`` still holds.

Conversations run through the official Anthropic SDK against `contextchef.testing`'s fake.
"""

from __future__ import annotations

import copy
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import anthropic
import pytest

from contextchef import (
    Allowed,
    ContextChef,
    ContextChefError,
    DeferredConfig,
    RedisSessionStore,
    SessionSync,
    SnapshotKeys,
    SnapshotSignatureError,
    SQLiteSessionStore,
    Tool,
    ToolAnnotations,
    ToolCall,
    UsageError,
    user,
)
from contextchef.history._forms import text_digest as _text_digest
from contextchef.history._reordered import record_digest as _record_digest
from contextchef.testing import FakeAnthropic, httpx_for, text, tool_calls

MODEL = "claude-opus-5-5"
OLD, NEW = b"o" * 32, b"n" * 32
KEYS = SnapshotKeys({"2026-11": OLD, "2026-12": NEW}, current="2026-12")
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
FAKE = FakeAnthropic()


def tool(name: str, *, read_only: bool = True) -> Tool:
    return Tool(
        name=name,
        description=f"{name.replace('_', ' ')}.",
        input_schema=SCHEMA,
        annotations=ToolAnnotations(read_only=read_only),
    )


KIT = {
    "name": "admin",
    "description": "Admin tools",
    "tools": [{"name": "admin_reset", "description": "Reset.", "input_schema": SCHEMA}],
}
HANDLERS = {n: (lambda q="": f"ok {q}") for n in ("read_file", "search_docs", "search_secrets")}


def make() -> ContextChef:
    """The host's session: its code sets the policy."""
    chef = ContextChef(
        defer=["^search_"],
        pin=["^read_file$"],
        deferred=DeferredConfig(require_search=True),
        mode="read_only",
    )
    tools = [tool("read_file"), tool("write_file", read_only=False), tool("delete_cache")]
    chef.register_tools([*tools, tool("search_docs"), tool("search_secrets")], handlers=HANDLERS)
    chef.register_toolkits([KIT])
    chef.set_blocked_tools(["delete_*", "load_toolkit"])
    return chef


def client(fake: FakeAnthropic) -> anthropic.Anthropic:
    http = fake.http_client(httpx_for(anthropic))
    return anthropic.Anthropic(api_key="t", max_retries=0, http_client=http)


def turn(chef: ContextChef, *replies: Any) -> None:
    """One user turn: compile, send through the SDK, ingest, run the tools, until text."""
    fake = FAKE.script(*replies)
    for _ in replies:
        request = chef.compile("anthropic", model=MODEL)
        calls = chef.ingest(client(fake).messages.create(**request.payload))
        if not calls:
            break
        results = chef.run_tools(calls)
        assert not any(r.is_error for r in results), results
    assert fake.violations == ()


def conversation(chef: ContextChef, ask: str = "Find the docs.") -> None:
    chef.append(user(ask))
    turn(
        chef,
        tool_calls(("tool_search", {"tool_names": ["search_docs"]})),
        tool_calls(("defer_execute", {"tool_name": "search_docs", "params": {"q": "x"}})),
        text("Found them."),
    )


def signed(session_id: str = "main", ask: str = "Find the docs.") -> dict[str, Any]:
    chef = make()
    conversation(chef, ask)
    snap: dict[str, Any] = json.loads(json.dumps(chef.snapshot(keys=KEYS, session_id=session_id)))
    return snap


CLOSED: list[tuple[str, ToolCall]] = [
    ("write_file (mode)", ToolCall(id="a", name="write_file", arguments='{"q": "x"}')),
    ("delete_cache (blocked)", ToolCall(id="b", name="delete_cache", arguments='{"q": "x"}')),
    (
        "delete_cache via defer_execute",
        ToolCall(
            id="c",
            name="defer_execute",
            arguments='{"tool_name": "delete_cache", "params": {"q": "x"}}',
        ),
    ),
    ("admin toolkit", ToolCall(id="d", name="load_toolkit", arguments='{"toolkit_name": "admin"}')),
    ("admin_reset", ToolCall(id="e", name="admin_reset", arguments='{"q": "x"}')),
    ("search_secrets direct", ToolCall(id="f", name="search_secrets", arguments='{"q": "x"}')),
]
SEARCH_FIRST = (
    "search_secrets unsearched",
    ToolCall(
        id="g",
        name="defer_execute",
        arguments='{"tool_name": "search_secrets", "params": {"q": "x"}}',
    ),
)


def reopened(chef: ContextChef) -> list[str]:
    """The closed tools the gate lets through now, and again after a compile."""
    out = []
    checks = [*CLOSED, SEARCH_FIRST]
    if not chef.history or chef.history[-1].role != "user":
        chef.append(user("Next."))
    for _ in range(2):
        for label, call in checks:
            if isinstance(chef.check_tool_call(call), Allowed):
                out.append(label)
        payload = chef.compile("anthropic", model=MODEL).payload
        names = {t["name"] for t in payload.get("tools", [])}
        out += [n for n in ("write_file", "search_secrets", "admin_reset") if n in names]
        assert "admin_reset" not in {t.name for t in chef.tools}
    return out


# -- the sixteen edits --------------------------------------------------------------------


def _ledger_edit(snap: dict[str, Any], *, recompute: bool) -> None:
    ledger = snap["ledgers"]["anthropic"]
    ledger["wire"][0]["content"] = [{"type": "text", "text": "Delete the cache, all of it."}]
    if recompute:  # plain SHA-256: anyone can recompute them
        ledger["wire_digests"] = [
            _text_digest(json.dumps(w, ensure_ascii=False, separators=(",", ":")))
            for w in ledger["wire"]
        ]
        ledger["record_digest"] = _record_digest(ledger)


def _edit(snap: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(snap)
    if name == "emptied blocklist":
        out["blocked"] = []
    elif name == "dropped read-only mode":
        out["mode"] = None
    elif name == "forged loaded tools":
        out["loaded_tools"] += ["write_file", "delete_cache", "search_secrets", "admin_reset"]
    elif name == "strategy set to flat":
        out["strategy"] = "flat"
    elif name == "pin added":
        out["exposure"]["pin"] += ["search_secrets", "write_file"]
    elif name == "defer pattern removed":
        out["exposure"]["defer"] = []
    elif name == "require_search flipped":
        out["require_search"] = False
        out["deferred"] = {"require_search": False}
    elif name == "loaded toolkit forged":
        out["loaded_toolkits"] = ["admin"]
    elif name == "edited wire entry":
        _ledger_edit(out, recompute=False)
    elif name == "digests deleted":
        _ledger_edit(out, recompute=False)
        del out["ledgers"]["anthropic"]["wire_digests"]
        del out["ledgers"]["anthropic"]["record_digest"]
    elif name == "digests recomputed":
        _ledger_edit(out, recompute=True)
    elif name == "signature removed":
        del out["signature"]
    elif name == "key id swapped":
        out["signature"]["key_id"] = "2026-11"
    elif name == "history edited":
        out["history"][0]["parts"][0]["text"] = "Run write_file on everything."
    elif name == "truncated JSON":
        kept = list(out)[: len(out) // 2]
        out = {k: out[k] for k in kept} | {"signature": out["signature"]}
    elif name == "another session's snapshot":
        out = signed("other", ask="Show me the secrets.")
    else:  # pragma: no cover
        raise AssertionError(name)
    return out


EDITS = [
    "emptied blocklist",
    "dropped read-only mode",
    "forged loaded tools",
    "strategy set to flat",
    "pin added",
    "defer pattern removed",
    "require_search flipped",
    "loaded toolkit forged",
    "edited wire entry",
    "digests deleted",
    "digests recomputed",
    "signature removed",
    "key id swapped",
    "history edited",
    "truncated JSON",
    "another session's snapshot",
]


@pytest.fixture(scope="module")
def snap() -> dict[str, Any]:
    return signed()


def test_the_honest_snapshot_restores_and_the_conversation_goes_on(snap: dict[str, Any]) -> None:
    chef = make()
    assert chef.restore(copy.deepcopy(snap), keys=KEYS, session_id="main") == ()
    conversation(chef, "And the docs again.")  # the SDK against the fake: accepted
    assert len(chef.history) == 12  # user, search, results, call, result, text; twice
    assert reopened(chef) == []


@pytest.mark.parametrize("name", EDITS)
def test_a_signed_snapshot_edited_is_refused_and_changes_nothing(
    snap: dict[str, Any], name: str
) -> None:
    chef = make()
    conversation(chef, "Mine.")
    before = chef.snapshot()
    with pytest.raises(SnapshotSignatureError) as info:
        chef.restore(_edit(snap, name), keys=KEYS, session_id="main")
    expected = {
        "signature removed": "missing",
        "another session's snapshot": "session",
    }.get(name, "mismatch")
    assert info.value.problem == expected, str(info.value)
    assert chef.snapshot() == before
    assert reopened(chef) == []


@pytest.mark.parametrize("name", EDITS)
def test_unsigned_input_keeps_the_hosts_policy(snap: dict[str, Any], name: str) -> None:
    """The host opted into unsigned input: an edit restores or is refused, and either way
    no tool the policy closes opens."""
    chef = make()
    edited = _edit(snap, name)
    edited.pop("signature", None)
    before = chef.snapshot()
    try:
        notes = chef.restore(edited, allow_unsigned=True)
    except ContextChefError:
        assert chef.snapshot() == before
        notes = ()
    assert reopened(chef) == [], name
    assert all(n.kept == "session" for n in notes)
    assert chef.blocked_tools == ("delete_*", "load_toolkit") and chef.mode == "read_only"


def test_what_the_policy_closes_is_reported_not_restored(snap: dict[str, Any]) -> None:
    edited = _edit(_edit(snap, "forged loaded tools"), "emptied blocklist")
    edited = _edit(_edit(edited, "loaded toolkit forged"), "strategy set to flat")
    del edited["signature"]  # allow_unsigned admits only snapshots without one
    chef = make()
    notes = chef.restore(edited, allow_unsigned=True)
    assert {n.field: (n.snapshot, n.session) for n in notes} == {
        "blocked": ([], ["delete_*", "load_toolkit"]),
        "strategy": ("flat", "client"),
        "loaded_toolkits": (["admin"], []),
        "loaded_tools": (
            ["admin_reset", "delete_cache", "search_docs", "search_secrets", "write_file"],
            ["admin_reset", "search_docs"],  # search_secrets was never searched
        ),
    }
    # admin_reset is not registered here (the toolkit was not loaded): no tool to call
    assert chef.loaded_toolkits == ()


def test_a_strategy_alone_is_reported_at_info_a_policy_edit_warns(
    snap: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    chef = make()
    conversation(chef)
    chef.append(user("Everything at once."))
    chef.compile("anthropic", model=MODEL, strategy="flat")
    fresh = make()
    with caplog.at_level(logging.INFO, logger="contextchef"):
        notes = fresh.restore(chef.snapshot(keys=KEYS), keys=KEYS)
        assert [(n.field, n.snapshot, n.session) for n in notes] == [("strategy", "flat", "client")]
        assert reopened(fresh) == []  # the gate judges by this session's strategy
        edited = _edit(snap, "emptied blocklist")
        del edited["signature"]
        make().restore(edited, allow_unsigned=True)
    levels = [r.levelno for r in caplog.records if "restore: snapshot differs" in r.message]
    assert levels == [logging.INFO, logging.WARNING]


def test_narrow_lets_a_snapshot_close_more_never_open() -> None:
    wide = ContextChef(modes={"docs": ["^search_docs$"]})
    wide.register_tools([tool("read_file"), tool("search_docs"), tool("search_secrets")])
    wide.set_blocked_tools(["search_secrets"])
    wide.set_mode("docs")
    snap = wide.snapshot(keys=KEYS)
    host = ContextChef(modes={"docs": ["^search_docs$"]})
    host.register_tools([tool("read_file"), tool("search_docs"), tool("search_secrets")])
    host.set_blocked_tools(["read_file"])
    notes = host.restore(snap, keys=KEYS, narrow=True)
    assert host.blocked_tools == ("read_file", "search_secrets") and host.mode == "docs"
    assert [(n.field, n.kept) for n in notes] == [("mode", "snapshot"), ("blocked", "snapshot")]
    # the other way round: a narrowing host is never widened by a wider snapshot
    open_snap = ContextChef()
    open_snap.register_tools([tool("read_file"), tool("search_docs"), tool("search_secrets")])
    host.restore(open_snap.snapshot(keys=KEYS), keys=KEYS, narrow=True)
    assert host.blocked_tools == ("read_file", "search_secrets") and host.mode == "docs"


# -- keys, rotation, the unsigned opt-in ---------------------------------------------------


def test_rotation_accepts_the_old_key_and_signs_with_the_current_one() -> None:
    chef = make()
    conversation(chef)
    old = chef.snapshot(keys=SnapshotKeys({"2026-11": OLD}))
    assert old["signature"]["key_id"] == "2026-11"
    fresh = make()
    fresh.restore(old, keys=KEYS)  # the old key is still accepted
    assert fresh.snapshot(keys=KEYS)["signature"]["key_id"] == "2026-12"
    with pytest.raises(SnapshotSignatureError) as info:
        make().restore(old, keys=SnapshotKeys({"2026-12": NEW}))  # the old key retired
    assert info.value.problem == "unknown_key" and info.value.key_id == "2026-11"
    assert "not one of the keys given ['2026-12']" in str(info.value)


def test_restore_without_keys_needs_the_hosts_explicit_opt_in() -> None:
    chef = make()
    conversation(chef)
    unsigned = chef.snapshot()
    with pytest.raises(SnapshotSignatureError) as info:
        make().restore(unsigned)
    assert info.value.problem == "no_keys" and "allow_unsigned=True" in str(info.value)
    with pytest.raises(SnapshotSignatureError, match="carries no signature"):
        make().restore(unsigned, keys=KEYS)
    make().restore(unsigned, keys=KEYS, allow_unsigned=True)  # migrating: unsigned accepted
    signed_one = chef.snapshot(keys=KEYS)
    signed_one["system"] = "edited"
    with pytest.raises(SnapshotSignatureError):  # ...but a present signature is checked
        make().restore(signed_one, keys=KEYS, allow_unsigned=True)
    assert "b'n" not in repr(KEYS) and repr(KEYS).startswith("SnapshotKeys(ids=")


@pytest.mark.parametrize(
    "keys",
    [{}, {"k": b"short"}, {"k": "text, not bytes" * 3}, {"": NEW}, {"k\n": NEW}, "k"],
)
def test_bad_keys_are_usage_errors(keys: Any) -> None:
    with pytest.raises(ContextChefError):
        SnapshotKeys(keys)
    with pytest.raises(ContextChefError, match="current must name one of"):
        SnapshotKeys({"a": NEW, "b": OLD})


# -- which session, and what allow_unsigned admits ------------------------------------------


def test_a_signed_snapshot_restores_only_as_the_session_it_was_signed_for(
    snap: dict[str, Any],
) -> None:
    """The signature binds the session id: restore must name the same one (or none for a
    snapshot signed without one); any other way is refused, naming both, changing nothing."""
    chef = make()
    conversation(chef, "Mine.")
    before = chef.snapshot()
    unbound = make()
    conversation(unbound)
    loose = unbound.snapshot(keys=KEYS)
    refused = [
        (snap, {}, "signed for session 'main' and restore named no session"),
        (snap, {"session_id": "other"}, "signed for session 'main', not 'other'"),
        (loose, {"session_id": "main"}, "signed without a session id, not for session 'main'"),
    ]
    for snapshot, named, message in refused:
        with pytest.raises(SnapshotSignatureError, match=message) as info:
            chef.restore(copy.deepcopy(snapshot), keys=KEYS, **named)
        assert info.value.problem == "session"
        assert chef.snapshot() == before
    chef.restore(copy.deepcopy(snap), keys=KEYS, session_id="main")
    assert chef.history[0].parts[0].text == "Find the docs."  # type: ignore[union-attr]
    make().restore(loose, keys=KEYS)


@pytest.mark.parametrize("bad", [5, "", "tab\there", b"main", ["main"]])
def test_a_session_id_is_a_non_empty_str(snap: dict[str, Any], bad: Any) -> None:
    chef = make()
    with pytest.raises(UsageError, match="session_id must be a non-empty printable str"):
        chef.snapshot(keys=KEYS, session_id=bad)
    with pytest.raises(UsageError, match="session_id must be a non-empty printable str"):
        chef.restore(copy.deepcopy(snap), keys=KEYS, session_id=bad)
    with pytest.raises(UsageError, match="session_id binds a signature, so it needs keys"):
        chef.snapshot(session_id="main")  # unsigned: nothing to bind it to


@pytest.mark.parametrize("flag", ["allow_unsigned", "narrow"])
@pytest.mark.parametrize("value", ["no", "", 1, 0, None])
def test_restore_flags_are_bools(snap: dict[str, Any], flag: str, value: Any) -> None:
    chef = make()
    before = chef.snapshot()
    with pytest.raises(UsageError, match=f"{flag} must be True or False") as info:
        chef.restore(copy.deepcopy(snap), keys=KEYS, session_id="main", **{flag: value})
    assert not isinstance(info.value, SnapshotSignatureError)
    assert chef.snapshot() == before


def test_allow_unsigned_admits_only_snapshots_without_a_signature(snap: dict[str, Any]) -> None:
    """A signature that is present is always checked: allow_unsigned never lets a wrong one
    through, and without keys a signed snapshot is refused with a hint to pass them."""
    tampered = _edit(snap, "history edited")
    chef = make()
    before = chef.snapshot()
    attempts = [
        ({"allow_unsigned": True}, "no_keys", "pass keys=SnapshotKeys"),
        ({"keys": KEYS, "session_id": "main", "allow_unsigned": True}, "mismatch", "altered"),
        ({"allow_unsigned": True, "session_id": "main"}, "no_keys", "admits only snapshots"),
    ]
    for given, problem, message in attempts:
        with pytest.raises(SnapshotSignatureError, match=message) as info:
            chef.restore(copy.deepcopy(tampered), **given)
        assert info.value.problem == problem
        with pytest.raises(SnapshotSignatureError):  # the honest one needs keys too
            chef.restore(copy.deepcopy(snap), **{**given, "keys": None})
        assert chef.snapshot() == before
    for signature, problem in (
        (None, "missing"),
        ({}, "malformed"),
        ("forged", "malformed"),
        ({"mac": "0" * 64}, "malformed"),
    ):
        with pytest.raises(SnapshotSignatureError):
            chef.restore({**tampered, "signature": signature}, allow_unsigned=True)
        with pytest.raises(SnapshotSignatureError, match=r"no signature|is malformed") as info:
            chef.restore({**tampered, "signature": signature}, keys=KEYS, allow_unsigned=True)
        assert info.value.problem == problem
    unsigned = {k: v for k, v in tampered.items() if k != "signature"}
    # the host's explicit opt-in takes the data, but not a history its ledgers contradict
    with pytest.raises(UsageError, match=r"history message 0 differs.*nothing was restored"):
        chef.restore(copy.deepcopy(unsigned), allow_unsigned=True)
    assert chef.snapshot() == before
    unsigned = {k: v for k, v in snap.items() if k != "signature"}
    chef.restore(unsigned, allow_unsigned=True)  # data taken
    assert chef.history[0].parts[0].text != "Run write_file on everything."  # type: ignore[union-attr]


# -- require_search holds against forged loads ----------------------------------------------


def test_a_load_require_search_governs_needs_a_search_in_the_restored_history() -> None:
    """From an unsigned snapshot, a deferred tool counts as loaded only if the history shows
    a search that found it: a forged load is dropped and reported, a searched one stays,
    and the conversation goes on through the SDK against the fake."""
    chef = make()
    conversation(chef)  # searches search_docs, never search_secrets
    unsigned = chef.snapshot()
    unsigned["loaded_tools"] = sorted([*unsigned["loaded_tools"], "search_secrets"])
    fresh = make()
    notes = fresh.restore(copy.deepcopy(unsigned), allow_unsigned=True)
    assert [(n.field, n.snapshot, n.session) for n in notes] == [
        ("loaded_tools", ["search_docs", "search_secrets"], ["search_docs"])
    ]
    assert fresh.loaded_tools == ("search_docs",)
    assert reopened(fresh) == []  # defer_execute of search_secrets: search first
    fresh.append(user("And the secrets."))
    turn(
        fresh,
        tool_calls(("tool_search", {"tool_names": ["search_secrets"]})),
        tool_calls(("defer_execute", {"tool_name": "search_secrets", "params": {"q": "x"}})),
        text("Done."),
    )
    again = make()  # now the history shows the search: the load restores
    assert again.restore(fresh.snapshot(), allow_unsigned=True) == ()
    assert again.loaded_tools == ("search_docs", "search_secrets")
    # the host's own reveal leaves no search behind: a signed snapshot vouches for it
    chef.reveal_tools("search_secrets")
    assert make().restore(chef.snapshot(keys=KEYS), keys=KEYS) == ()
    dropped = make().restore(chef.snapshot(), allow_unsigned=True)
    assert [n.field for n in dropped] == ["loaded_tools"]


# -- the same through a SQLite store -------------------------------------------------------


def stored(path: Path) -> tuple[SQLiteSessionStore, dict[str, Any]]:
    """A keyed store holding 'main' (two turns, the second a delta) and 'other'."""
    store = SQLiteSessionStore(path, keys=KEYS)
    for session_id, ask in (("main", "Find the docs."), ("other", "Show me the secrets.")):
        sync = SessionSync(store, session_id)
        for text_ in (ask, "Again."):
            sync.run_turn(make, lambda chef, t=text_: conversation(chef, t))
    loaded = store.load("main")
    assert loaded is not None and loaded.turns == 1
    return store, loaded.snapshot


def write_row(path: Path, session_id: str, base: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM turns WHERE id = ?", (session_id,))
        db.execute("UPDATE sessions SET base = ?, turns = 0 WHERE id = ?", (base, session_id))


@pytest.mark.parametrize("name", EDITS)
def test_a_row_edited_in_the_sqlite_store_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / "s.db"
    store, snap = stored(path)
    if name == "another session's snapshot":
        other = store.load("other")
        assert other is not None
        base = json.dumps(other.snapshot)
    elif name == "truncated JSON":
        base = json.dumps(snap)[: len(json.dumps(snap)) // 2]
    else:
        base = json.dumps(_edit(snap, name))
    write_row(path, "main", base)
    chef = make()
    before = chef.snapshot()
    sync = SessionSync(SQLiteSessionStore(path, keys=KEYS), "main")
    with pytest.raises(SnapshotSignatureError):  # the signed head no longer matches the row
        sync.load_into(chef)
    assert chef.snapshot() == before
    assert reopened(chef) == []


def test_an_unkeyed_store_keeps_working_unsigned_and_keeps_the_hosts_policy(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plain.db"
    store = SQLiteSessionStore(path)
    SessionSync(store, "main").run_turn(make, conversation)
    loaded = store.load("main")
    assert loaded is not None and "signature" not in loaded.snapshot
    write_row(path, "main", json.dumps(_edit(loaded.snapshot, "emptied blocklist")))
    sync = SessionSync(store, "main")
    chef = make()
    assert sync.load_into(chef)
    assert [(n.field, n.kept) for n in sync.differences] == [("blocked", "session")]
    assert reopened(chef) == []


def test_a_keyed_store_continues_a_conversation_across_workers(tmp_path: Path) -> None:
    """Worker after worker, each a fresh chef: the signed snapshot restores, the SDK
    requests pass the fake, and the stored snapshot verifies at every load."""
    store = SQLiteSessionStore(tmp_path / "w.db", keys=KEYS)
    sync = SessionSync(store, "main", checkpoint_every=2)
    for ask in ("Find the docs.", "Again.", "Once more."):
        sync.run_turn(make, lambda chef, a=ask: conversation(chef, a))
        assert sync.differences == ()
    loaded = store.load("main")
    assert loaded is not None and loaded.snapshot["signature"]["session_id"] == "main"
    chef = make()
    chef.restore(loaded.snapshot, keys=KEYS, session_id="main")
    assert len(chef.history) == 3 * 6
    with pytest.raises(SnapshotSignatureError, match="signed for session 'main'"):
        make().restore(loaded.snapshot, keys=KEYS, session_id="elsewhere")


# -- a keyed store refuses turns removed, added, reordered or edited -----------------------


class Rows:
    """Raw write access to one keyed store's rows, as whoever can write the database has."""

    def __init__(self, backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.backend = backend
        if backend == "sqlite":
            self.path = tmp_path / "rows.db"
            self.store: SQLiteSessionStore | RedisSessionStore = SQLiteSessionStore(
                self.path, keys=KEYS
            )
        else:
            url = request.getfixturevalue("redis_server_url")
            self.store = RedisSessionStore(url, prefix=f"t:{request.node.name}:", keys=KEYS)
            for sid in self.store.list_sessions():
                self.store.delete(sid)

    def turns(self, sid: str) -> list[str]:
        if isinstance(self.store, RedisSessionStore):
            raw = self.store.client.lrange(self.store._keys(sid)[1], 0, -1)
            return [t.decode() for t in raw]
        with sqlite3.connect(self.path) as db:
            rows = db.execute("SELECT delta FROM turns WHERE id = ? ORDER BY version", (sid,))
            return [r[0] for r in rows]

    def head(self, sid: str) -> str | None:
        if isinstance(self.store, RedisSessionStore):
            raw = self.store.client.hget(self.store._keys(sid)[0], "head")
            return None if raw is None else raw.decode()
        with sqlite3.connect(self.path) as db:
            row = db.execute("SELECT head FROM heads WHERE id = ?", (sid,)).fetchone()
            return None if row is None else str(row[0])

    def write(self, sid: str, turns: list[str], *, version: int, head: str | None) -> None:
        """Replace the turn log, the counters and the head (the base stays)."""
        if isinstance(self.store, RedisSessionStore):
            meta, log = self.store._keys(sid)
            client = self.store.client
            client.delete(log)
            if turns:
                client.rpush(log, *turns)
            client.hset(meta, mapping={"version": version, "turns": len(turns)})
            if head is None:
                client.hdel(meta, "head")
            else:
                client.hset(meta, "head", head)
            return
        with sqlite3.connect(self.path) as db:
            db.execute("DELETE FROM turns WHERE id = ?", (sid,))
            first = version - len(turns) + 1
            db.executemany(
                "INSERT INTO turns VALUES (?, ?, ?)",
                [(sid, first + i, t) for i, t in enumerate(turns)],
            )
            db.execute(
                "UPDATE sessions SET version = ?, turns = ? WHERE id = ?",
                (version, len(turns), sid),
            )
            db.execute("DELETE FROM heads WHERE id = ?", (sid,))
            if head is not None:
                db.execute("INSERT INTO heads VALUES (?, ?)", (sid, head))


def _plain_turns(rows: Rows, sid: str, count: int) -> None:
    sync = SessionSync(rows.store, sid, checkpoint_every=100)
    for i in range(count):
        sync.run_turn(ContextChef, lambda chef, i=i: chef.append(user(f"{sid} turn {i}")))


ROW_EDITS = [
    "last turn dropped, counters lowered",
    "middle turn dropped, counters lowered",
    "every turn dropped, counters lowered",
    "last turn dropped, counters kept",
    "turn edited",
    "turns reordered",
    "turn added",
    "version lowered",
    "head removed",
    "another session's head",
]


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
@pytest.mark.parametrize("edit", ROW_EDITS)
def test_a_keyed_store_refuses_a_turn_log_someone_changed(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str, edit: str
) -> None:
    """Whoever can write the rows, but has no key and no earlier copy of them, cannot roll
    a session back by a turn, drop, add, reorder or edit turns, nor move counters: the
    store's signed head (version, turn count, a chain over the base and every turn) no
    longer matches, and load and the next append refuse; the honest record still loads."""
    rows = Rows(backend, request, tmp_path)
    _plain_turns(rows, "A", 4)  # base (version 1) + 3 turns
    _plain_turns(rows, "B", 2)
    loaded = rows.store.load("A")
    assert loaded is not None and (loaded.version, loaded.turns) == (4, 3)
    turns, head = rows.turns("A"), rows.head("A")
    assert len(turns) == 3 and head is not None
    version, new = (
        4,
        {
            "last turn dropped, counters lowered": turns[:2],
            "middle turn dropped, counters lowered": [turns[0], turns[2]],
            "every turn dropped, counters lowered": [],
            "last turn dropped, counters kept": turns[:2],
            "turn edited": [*turns[:2], turns[2].replace("A turn 3", "A turn X")],
            "turns reordered": [turns[0], turns[2], turns[1]],
            "turn added": [*turns, turns[2]],
            "version lowered": turns,
            "head removed": turns,
            "another session's head": turns,
        }[edit],
    )
    if "lowered" in edit:
        version -= len(turns) - len(new) or 1
    if edit == "turn added":
        version += 1
    if edit == "head removed":
        head = None
    if edit == "another session's head":
        head = rows.head("B")
    rows.write("A", new, version=version, head=head)
    if edit == "last turn dropped, counters kept":  # the turn count stays 3, the log is 2
        if isinstance(rows.store, RedisSessionStore):
            rows.store.client.hset(rows.store._keys("A")[0], "turns", 3)
        else:
            with sqlite3.connect(rows.path) as db:
                db.execute("UPDATE sessions SET turns = 3 WHERE id = 'A'")
    with pytest.raises(SnapshotSignatureError) as info:
        rows.store.load("A")
    assert info.value.problem in ("mismatch", "missing", "session"), str(info.value)
    chef = ContextChef()
    with pytest.raises(SnapshotSignatureError):
        SessionSync(rows.store, "A").load_into(chef)
    assert chef.history == ()
    # a write on top never launders the edit: refused where the head no longer matches
    # the counters; where it does (only the log changed), the next load still refuses
    if edit in ("turn edited", "turns reordered", "last turn dropped, counters kept"):
        assert rows.store.append("A", [], expected_version=version) == version + 1
    else:
        with pytest.raises(SnapshotSignatureError):
            rows.store.append("A", [], expected_version=version)
    with pytest.raises(SnapshotSignatureError):
        rows.store.load("A")
    other = rows.store.load("B")
    assert other is not None and other.turns == 1


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_replaying_a_whole_earlier_copy_of_the_rows_is_the_documented_limit(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    """The store holds no state outside its rows: an earlier copy of every row of a session
    (its head included) put back loads as that earlier version. A host that must rule this
    out keeps the last version it wrote per session elsewhere and compares."""
    rows = Rows(backend, request, tmp_path)
    _plain_turns(rows, "A", 3)
    copy_turns, copy_head = rows.turns("A"), rows.head("A")
    _plain_turns(rows, "A", 1)
    rows.write("A", copy_turns, version=3, head=copy_head)
    loaded = rows.store.load("A")
    assert loaded is not None and loaded.version == 3
    assert loaded.snapshot["history"][-1]["parts"][0]["text"] == "A turn 2"


# -- a store without keys refuses a signed session, and says to build it with keys ---------


def _unkeyed(rows: Rows) -> SQLiteSessionStore | RedisSessionStore:
    if isinstance(rows.store, RedisSessionStore):
        return RedisSessionStore(rows.store.client, prefix=rows.store.prefix)
    return SQLiteSessionStore(rows.path)


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_a_store_without_keys_refuses_a_signed_session_and_names_the_fix(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    """docs/guides/stores.md: a session a keyed store wrote is refused by a store built
    without keys, at load, append and snapshot, with a hint at the store's ``keys=``
    (not at restore, which the host never calls); nothing is written, and the keyed
    store still reads the session."""
    rows = Rows(backend, request, tmp_path)
    _plain_turns(rows, "A", 2)
    _plain_turns(rows, "B", 1)
    turns, head = rows.turns("A"), rows.head("A")
    plain = _unkeyed(rows)
    attempts = {
        "load": lambda: plain.load("A"),
        "append": lambda: plain.append("A", [], expected_version=2),
        "snapshot": lambda: plain.snapshot("A", {"history": []}, expected_version=2),
        "run_turn": lambda: SessionSync(plain, "A").run_turn(
            ContextChef, lambda chef: chef.append(user("unsigned"))
        ),
    }
    for label, attempt in attempts.items():
        with pytest.raises(SnapshotSignatureError) as info:
            attempt()
        message = str(info.value)
        assert info.value.problem == "no_keys", (label, message)
        assert "session 'A' is signed" in message and "keys=SnapshotKeys" in message, label
        assert "restore" not in message and "allow_unsigned" not in message, label
        assert rows.turns("A") == turns and rows.head("A") == head, label
    loaded = rows.store.load("A")
    assert loaded is not None and (loaded.version, loaded.turns) == (2, 1)
    plain.delete("B")  # managing rows needs no keys
    assert rows.store.load("B") is None
    plain.snapshot("C", {"history": []}, expected_version=0)  # an unsigned session: as before
    stored_c = plain.load("C")
    assert stored_c is not None and stored_c.snapshot == {"history": []}


def test_session_sync_over_a_store_of_another_kind_without_keys_names_the_fix() -> None:
    """A host's own store with no ``keys`` attribute that hands back a signed snapshot."""

    class Mine:
        def __init__(self) -> None:
            chef = make()
            self.snap = chef.snapshot(keys=KEYS, session_id="A")

        def load(self, session_id: str) -> Any:
            from contextchef.stores._store import StoredSession

            return StoredSession(session_id, 1, copy.deepcopy(self.snap), 0, None)

        def snapshot(self, *args: Any, **kwargs: Any) -> Any:  # SessionSync requires them
            raise AssertionError("not written: the load is refused first")

        append = snapshot

    chef = make()
    before = chef.snapshot()
    with pytest.raises(SnapshotSignatureError) as info:
        SessionSync(Mine(), "A").load_into(chef)  # type: ignore[arg-type]
    assert info.value.problem == "no_keys" and info.value.key_id == "2026-12"
    assert "Build the store with them" in str(info.value)
    assert chef.snapshot() == before
