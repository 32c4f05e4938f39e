"""A restored session diagnoses the cache, matches a pending reply and lints skills as the live one.

Three gaps between a session kept in memory and one restored from its snapshot (in a new
`ContextChef`, or by a `SessionSync` worker per turn over a `SQLiteSessionStore`):

1. the cache diagnosis (`providers._usage.compared`) of the first reply after a restore
   had no ``missed`` figure and no model-change explanation: the previous report of the
   target was not in the snapshot (now its ledger's ``sent`` ``cache``);
2. a request pending at the snapshot lost its model, so with two targets of one wire
   awaiting a reply, the reply went to the last compiled one with a
   ``reply_target_ambiguous`` notice (now ``sent`` ``model``); and the reply after a
   provider compaction lost its explanation (now ``sent`` ``rebased``);
3. the snapshot's skills were registered without the volatile-value lint (now linted
   once, by `resolve_skills`, as `register_skills` does).

Multi-turn, through the official SDK clients against the `contextchef.testing` fakes,
every payload SDK-checked. Each test fails on main (e602c94).
"""

from __future__ import annotations

import copy
import json
import logging
import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from context_tools import next_turn
from test_ingest import send as sdk_send
from test_native_base import _chef as native_chef
from test_native_base import _responses as native_responses
from test_native_base import _turns as native_turns

from contextchef import (
    ContextChef,
    SnapshotKeys,
    SnapshotSignatureError,
    UsageError,
    VolatileValueError,
    user,
)
from contextchef._json import canonical_dumps
from contextchef.history._reordered import record_digest as _record_digest
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.stores._store import snapshot_delta
from contextchef.stores._stored import encode
from contextchef.testing import FakeProvider, fake_for, text
from sdk_check import sdk_problems

SYSTEM = "You are a glossary assistant. " * 150  # long enough to be cached
SWITCHES = {  # the model of each turn: switches explain their miss
    "responses": ["gpt-5.6", "gpt-5.6", "gpt-5.7", "gpt-5.7", "gpt-5.6"],
    "openai": ["gpt-5.6", "gpt-5.6", "gpt-5.7", "gpt-5.7", "gpt-5.6"],
    "anthropic": ["claude-sonnet-4-5", "claude-sonnet-4-5", "claude-haiku-4-5"],
}
Turn = Callable[[ContextChef], None]
Step = Callable[[Turn], ContextChef]


def _chef(**options: Any) -> ContextChef:
    chef = ContextChef(**options)
    chef.set_system_prompt(SYSTEM)
    return chef


def _live() -> Step:
    chef = _chef()
    chef.append(user("Define cache."))

    def step(turn: Turn) -> ContextChef:
        turn(chef)
        return chef

    return step


def _restored() -> Step:
    """Each turn a new chef restored from the last one's snapshot (as JSON)."""
    chefs = [_chef()]
    chefs[0].append(user("Define cache."))

    def step(turn: Turn) -> ContextChef:
        worker = _chef()
        worker.restore(json.loads(json.dumps(chefs[-1].snapshot())), allow_unsigned=True)
        turn(worker)
        chefs.append(worker)
        return worker

    return step


def _synced(path: Path) -> Step:
    """Each turn a new worker: load the stored conversation, run the turn, save it."""
    store = SQLiteSessionStore(path)
    first = _chef()
    first.append(user("Define cache."))
    SessionSync(store, "s").save(first)

    def step(turn: Turn) -> ContextChef:
        worker, sync = _chef(), SessionSync(store, "s")
        assert sync.load_into(worker)
        turn(worker)
        sync.save(worker)
        return worker

    return step


def _drive(target: str, step: Step) -> list[dict[str, Any]]:
    """A turn per model of `SWITCHES`; each reply's cache report (`CacheReport.to_dict`)."""
    models = SWITCHES[target]
    fake = fake_for(target).script(*[text(f"answer {k}") for k in range(len(models))])
    reports: list[dict[str, Any]] = []

    def turn(chef: ContextChef, k: int) -> None:
        payload = chef.compile(target, model=models[k]).payload
        assert sdk_problems(target, payload) == []
        chef.ingest(sdk_send(target, fake, payload))
        reports.append(chef.cache_reports[-1].to_dict())
        chef.append(user(f"And word {k}?"))

    for k in range(len(models)):
        step(partial(turn, k=k))
    assert fake.violations == ()
    return reports


@pytest.mark.parametrize("target", sorted(SWITCHES))
def test_the_first_diagnosis_after_a_restore_is_the_live_ones(target: str, tmp_path: Path) -> None:
    live = _drive(target, _live())
    assert all(r["missed"] is not None for r in live[1:])  # against the previous report
    switched = [r for r in live if "the model changed from" in r["explanation"]]
    assert len(switched) == len(SWITCHES[target]) // 2  # every switch explained
    assert _drive(target, _restored()) == live
    assert _drive(target, _synced(tmp_path / "s.db")) == live


def test_a_model_switch_miss_after_a_restore_is_explained_not_warned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Responses: the switch's miss is named, figure and cause, and not logged as unexplained."""
    models, step = SWITCHES["responses"], _restored()
    fake = fake_for("responses").script(*[text(f"answer {k}") for k in range(len(models))])
    for k, model in enumerate(models):
        caplog.clear()

        def turn(chef: ContextChef, model: str = model) -> None:
            chef.ingest(sdk_send("responses", fake, chef.compile("responses", model=model).payload))
            chef.append(user("More?"))

        with caplog.at_level(logging.WARNING, logger="contextchef"):
            report = step(turn).cache_reports[-1]
        if k == 2:  # gpt-5.6 -> gpt-5.7: nothing read, what 5.6 cached missed
            assert report.read == 0 and report.missed and report.missed > 0
            assert "model changed from 'gpt-5.6' to 'gpt-5.7'" in report.explanation
            assert not any("no edit reported" in r.getMessage() for r in caplog.records)
    assert fake.violations == ()


def _compacting(restore: bool) -> list[dict[str, Any]]:
    """Ten Responses turns whose view the provider compacts (`test_native_base`), each run by
    one chef or (`restore`) by a new one restored from the last one's snapshot; the reports."""
    fake, send = native_responses()
    fake.script(*native_turns(10))
    chef, reports, kinds = native_chef(), [], set()
    for k in range(10):
        if restore:
            snap = json.loads(json.dumps(chef.snapshot()))
            chef = native_chef()
            chef.restore(snap, allow_unsigned=True)
        request = chef.compile("responses", model="gpt-5.6", max_tokens=1024)
        assert sdk_problems("responses", request.payload) == []
        next_turn(chef, chef.ingest(send(request)), k)
        reports.append(chef.cache_reports[-1].to_dict())
        kinds |= {n.kind for n in chef.notices}
    assert fake.violations == () and "compaction" in kinds
    return reports


def test_the_miss_after_a_provider_compaction_is_explained_after_a_restore() -> None:
    live = _compacting(restore=False)
    compacted = [k for k, r in enumerate(live) if "compacted the conversation" in r["explanation"]]
    assert len(compacted) >= 2  # the compacting reply and the one after it
    assert _compacting(restore=True) == live


# -- 2. a pending request keeps its model ---------------------------------------------------

CHAT = {"openai": "gpt-5.5", "deepseek": "deepseek-chat"}  # two targets on Chat Completions


def _two_pending(chef: ContextChef) -> dict[str, Any]:
    """Compile for both Chat targets (neither answered yet); the `openai` payload."""
    payloads = {t: chef.compile(t, model=m).payload for t, m in CHAT.items()}
    for target, payload in payloads.items():
        assert sdk_problems(target, payload) == []
    return payloads["openai"]


def _reply_then_next(chef: ContextChef, fake: FakeProvider, payload: dict[str, Any]) -> Any:
    """Ingest the reply to `payload`; the target it was taken for, notices, next payloads."""
    chef.ingest(sdk_send("openai", fake, payload))
    taken = chef.cache_reports[-1].target
    kinds = [n.kind for n in chef.notices]
    chef.append(user("And then?"))
    after = [canonical_dumps(chef.compile(t, model=m).payload) for t, m in CHAT.items()]
    return taken, kinds, after


def test_a_reply_to_a_restored_pending_request_goes_to_its_model(tmp_path: Path) -> None:
    def fresh() -> tuple[ContextChef, FakeProvider]:
        chef = _chef()
        chef.append(user("Define cache."))
        return chef, fake_for("openai").script(text("a cache keeps."), text("ok"))

    live, fake = fresh()
    payload = _two_pending(live)
    snap = json.loads(json.dumps(live.snapshot()))
    expected = _reply_then_next(live, fake, payload)
    assert expected[:2] == ("openai", [])  # the reply names gpt-5.5: no guess

    first, fake = fresh()
    restored = _chef()
    restored.restore(snap, allow_unsigned=True)
    assert _reply_then_next(restored, fake, _two_pending(first)) == expected

    store, (first, fake) = SQLiteSessionStore(tmp_path / "s.db"), fresh()
    payload = _two_pending(first)
    SessionSync(store, "s").save(first)
    worker, sync = _chef(), SessionSync(store, "s")  # another worker gets the reply
    assert sync.load_into(worker)
    worker.ingest(sdk_send("openai", fake, payload))
    sync.save(worker)
    assert (worker.cache_reports[-1].target, [n.kind for n in worker.notices]) == expected[:2]
    last, sync = _chef(), SessionSync(store, "s")
    assert sync.load_into(last)
    last.append(user("And then?"))
    after = [canonical_dumps(last.compile(t, model=m).payload) for t, m in CHAT.items()]
    assert after == expected[2]
    assert fake.violations == ()


# -- the new fields in the snapshot form ------------------------------------------------------


def _chat_snapshot(keys: SnapshotKeys | None = None) -> dict[str, Any]:
    """Two Chat turns on gpt-5.6 and one compiled on gpt-5.7, unanswered, as JSON."""
    step, chefs = _live(), []
    models = ["gpt-5.6", "gpt-5.6"]
    fake = fake_for("openai").script(text("one"), text("two"))
    for model in models:

        def turn(chef: ContextChef, model: str = model) -> None:
            chef.ingest(sdk_send("openai", fake, chef.compile("openai", model=model).payload))
            chef.append(user("Next?"))

        chefs.append(step(turn))
    chefs[-1].compile("openai", model="gpt-5.7")
    return json.loads(json.dumps(chefs[-1].snapshot(keys=keys)))


def test_the_fields_are_written_checked_and_signed() -> None:
    snap = _chat_snapshot()
    sent = snap["ledgers"]["openai"]["sent"]
    assert sent["model"] == "gpt-5.7"  # the pending request's
    assert isinstance(sent["cache"][0], int) and sent["cache"][1] == "gpt-5.6"  # the last report's
    wrong = [("model", 5), ("cache", [1]), ("cache", [-1, "m"]), ("cache", "x"), ("rebased", 1)]
    for key, value in wrong:
        bad = copy.deepcopy(snap)
        ledger = bad["ledgers"]["openai"]
        ledger["sent"][key] = value
        ledger["record_digest"] = _record_digest(ledger)
        with pytest.raises(UsageError, match=r"ledger 'openai' field 'sent' must .*'cache'"):
            _chef().restore(bad, allow_unsigned=True)
    edited = copy.deepcopy(snap)  # changed alone: the record digest says so
    edited["ledgers"]["openai"]["sent"]["cache"][1] = "gpt-5.7"
    with pytest.raises(UsageError, match="ledger 'openai': its tools, system"):
        _chef().restore(edited, allow_unsigned=True)
    keys = SnapshotKeys({"k": b"k" * 32})
    signed = _chat_snapshot(keys)
    _chef().restore(copy.deepcopy(signed), keys=keys)  # the signature holds
    ledger = signed["ledgers"]["openai"]
    ledger["sent"]["cache"][1] = "gpt-5.7"  # and covers the new field
    ledger["record_digest"] = _record_digest(ledger)
    with pytest.raises(SnapshotSignatureError):
        _chef().restore(signed, keys=keys)


def test_a_snapshot_without_the_fields_restores_as_before() -> None:
    """Written before them: the pending request has no model, its report no previous."""
    old = _chat_snapshot()
    ledger = old["ledgers"]["openai"]
    del ledger["sent"]["model"], ledger["sent"]["cache"]
    ledger["record_digest"] = _record_digest(ledger)
    chef = _chef()
    chef.restore(old, allow_unsigned=True)
    fake = fake_for("openai").script(text("three"))
    chef.ingest(sdk_send("openai", fake, chef.compile("openai", model="gpt-5.7").payload))
    report = chef.cache_reports[-1]
    assert report.missed is None and "model changed" not in report.explanation


def test_the_stored_delta_grows_by_the_new_fields_at_most(tmp_path: Path) -> None:
    """Per turn, the stored delta is the one without the fields plus their own ``set`` ops."""
    db = tmp_path / "s.db"
    step, snaps = _synced(db), []
    models = SWITCHES["openai"]
    fake = fake_for("openai").script(*[text(f"answer {k}") for k in range(len(models))])
    for model in models:

        def turn(chef: ContextChef, model: str = model) -> None:
            chef.ingest(sdk_send("openai", fake, chef.compile("openai", model=model).payload))
            chef.append(user("Next?"))

        snaps.append(json.loads(json.dumps(step(turn).snapshot())))
    with sqlite3.connect(db) as conn:
        stored = [len(d) for (d,) in conn.execute("SELECT delta FROM turns ORDER BY version")]
    assert len(stored) == len(models)

    def without(snap: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        out, fields = copy.deepcopy(snap), {}
        for target, ledger in out["ledgers"].items():
            for key in ("model", "cache", "rebased"):
                fields[target, key] = ledger["sent"].pop(key, None)
        return out, fields

    for k in range(1, len(snaps)):
        (old, was), (new, now) = without(snaps[k - 1]), without(snaps[k])
        ops = [["set", ["ledgers", *key[:1], "sent", *key[1:]], v] for key, v in now.items()]
        size = sum(
            len(encode(op, "s")) + 1
            for op, (k, v) in zip(ops, now.items(), strict=True)
            if was[k] != v
        )
        assert 0 < size <= 2 * 60  # a changed figure each turn, a model at each switch
        assert stored[k] <= len(encode(snapshot_delta(old, new), "s")) + size


# -- 3. a restore lints the snapshot's skills -------------------------------------------------

STAMP = "7e07485f-12f9-416b-8b14-000000000004"


def _lookup(word: str) -> str:
    """Look a word up in the glossary."""
    return f"{word}: a glossary line."


def _skilled(**options: Any) -> ContextChef:
    """A chef with the skill's tool registered (not the skill: a snapshot brings it)."""
    chef = _chef(**options)
    chef.register_tools([_lookup])
    return chef


def _skill_snapshot(
    caplog: pytest.LogCaptureFixture,
) -> tuple[ContextChef, dict[str, Any], FakeProvider]:
    """A session one Anthropic turn in with a skill whose description holds a UUID (JSON)."""
    live = _skilled()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        live.register_skills(
            [{"name": "glossary", "description": f"Glossary run {STAMP}", "tools": ["_lookup"]}]
        )
    assert [r.getMessage() for r in caplog.records if STAMP in r.getMessage()]
    live.append(user("Define cache."))
    fake = fake_for("anthropic").script(*[text(f"ok {k}") for k in range(4)])
    live.ingest(
        sdk_send("anthropic", fake, live.compile("anthropic", model="claude-sonnet-4-5").payload)
    )
    return live, json.loads(json.dumps(live.snapshot())), fake


def test_a_restore_lints_the_snapshots_skills_once(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    live, snap, fake = _skill_snapshot(caplog)
    assert any(STAMP in v.text for v in live.volatile_values)
    caplog.clear()
    restored = _skilled()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        restored.restore(snap, allow_unsigned=True)
        restored.restore(snap, allow_unsigned=True)  # its skills now: not linted again
        for k in range(3):  # nor by a compile
            payload = restored.compile("anthropic", model="claude-sonnet-4-5").payload
            assert sdk_problems("anthropic", payload) == []
            restored.ingest(sdk_send("anthropic", fake, payload))
            restored.append(user(f"More {k}?"))
    assert restored.volatile_values == live.volatile_values
    assert len([r for r in caplog.records if STAMP in r.getMessage()]) == 1
    assert fake.violations == ()
    # a SessionSync worker per turn warns as a chef that registered the skill would
    store = SQLiteSessionStore(tmp_path / "s.db")
    SessionSync(store, "s").save(restored)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        worker = _skilled()
        assert SessionSync(store, "s").load_into(worker)
    assert worker.volatile_values == live.volatile_values
    assert len([r for r in caplog.records if STAMP in r.getMessage()]) == 1


def test_a_restore_refuses_skills_the_live_session_would_refuse(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, snap, _ = _skill_snapshot(caplog)
    strict = _skilled(volatile_lint="raise")
    with pytest.raises(VolatileValueError, match=r"skill 'glossary' description"):
        strict.register_skills(snap["skills"])
    with pytest.raises(VolatileValueError, match=r"skill 'glossary' description"):
        strict.restore(snap, allow_unsigned=True)
    assert strict.skills == () and strict.history == ()  # nothing was restored
    quiet = _skilled(volatile_lint="off")
    quiet.restore(snap, allow_unsigned=True)
    assert quiet.volatile_values == () and [s.name for s in quiet.skills] == ["glossary"]
