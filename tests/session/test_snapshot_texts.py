"""Snapshot version 3: what was sent refers to the history for its long texts (issue 27).

A wire entry's texts of `SHARED_TEXT` characters or more that a history message holds
(tool results, thinking blocks, long user turns) are written once, in the history; the
entry holds null there and its ledger's ``texts`` say which history text goes back. The
restored entries must be the bytes that were sent (checked against their digests, or
covered by the signature), a version 2 snapshot must restore and be written as version 3
by the next save, and a reference that is corrupt must be refused naming the entry.
Conversations run through the official SDK clients against the `contextchef.testing`
fakes (`test_snapshot_once.conversation`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send
from test_snapshot_once import as_version_2, compiled, conversation, goes_on, make, sync_turn

from contextchef import (
    TARGETS,
    ContextChefError,
    SnapshotKeys,
    SnapshotSignatureError,
    user,
)
from contextchef.history._forms import SHARED_TEXT
from contextchef.testing import text

KEYS = SnapshotKeys({"k": b"k" * 32})


def snapshot_of(target: str, **trust: Any) -> tuple[dict[str, Any], Any]:
    chef, fake = conversation(target)
    return json.loads(json.dumps(chef.snapshot(**trust))), (chef, fake)


def refs(snap: dict[str, Any], target: str) -> list[tuple[int, dict[str, Any]]]:
    ledger = snap["ledgers"][target]
    return [(i, ref) for i, entry in enumerate(ledger["texts"]) for ref in entry]


def refused(snap: dict[str, Any], **trust: Any) -> str:
    """Restore into a session that compiled; it must raise and change nothing."""
    chef = make()
    chef.set_history([user("mine")])
    before = compiled(chef, "anthropic").to_json()
    with pytest.raises(ContextChefError) as info:
        chef.restore(snap, **(trust or {"allow_unsigned": True}))
    assert chef.history == (user("mine"),)
    assert compiled(chef, "anthropic").to_json() == before
    return str(info.value)


@pytest.mark.parametrize("target", TARGETS)
def test_every_long_text_sent_is_a_reference_and_restores_to_the_bytes_sent(target: str) -> None:
    snap, (chef, fake) = snapshot_of(target)
    ledger = snap["ledgers"][target]
    assert snap["version"] == 6 and len(ledger["texts"]) == len(ledger["wire"])
    found = refs(snap, target)
    assert found  # the tool results at least
    history = snap["history"]
    for i, ref in found:
        place = ledger["wire"][i]
        for key in ref["at"][:-1]:
            place = place[key]
        assert place[ref["at"][-1]] is None  # the text is not written twice
        held: Any = history[ref["message"]]
        for key in ref["path"]:
            held = held[key]
        assert isinstance(held, str) and len(held) >= SHARED_TEXT
    # no long text the history holds is left in what was sent
    texts = {s for s in _strings(history) if len(s) >= SHARED_TEXT}
    assert not texts & set(_strings(ledger["wire"]))
    fresh = make()
    fresh.restore(copy.deepcopy(snap), allow_unsigned=True)
    again = compiled(fresh, target)
    assert again.to_json() == compiled(chef, target).to_json() and not again.edits
    fresh.ingest(send(target, fake.script(text("Docs done.")), again.payload))
    assert fake.violations == ()
    # taken again, a restored session writes the same snapshot
    assert json.loads(json.dumps(make_restored(snap).snapshot())) == snap


def make_restored(snap: dict[str, Any]) -> Any:
    chef = make()
    chef.restore(copy.deepcopy(snap), allow_unsigned=True)
    return chef


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@pytest.mark.parametrize("target", ["anthropic", "responses"])
def test_a_version_2_snapshot_restores_and_the_next_snapshot_is_version_3(target: str) -> None:
    snap, (chef, _) = snapshot_of(target)
    old = as_version_2(snap)
    assert old["version"] == 2 and "texts" not in old["ledgers"][target]
    fresh = make()
    fresh.restore(copy.deepcopy(old), allow_unsigned=True)
    assert compiled(fresh, target).to_json() == compiled(chef, target).to_json()
    upgraded = json.loads(json.dumps(fresh.snapshot()))
    assert upgraded == json.loads(json.dumps(chef.snapshot()))
    assert upgraded["version"] == 6 and refs(upgraded, target)


def test_a_session_sync_over_a_version_2_store_saves_version_3(tmp_path: Path) -> None:
    snap, (chef, fake) = snapshot_of("anthropic")
    store, worker, stored = sync_turn(tmp_path, as_version_2(snap), chef, fake)
    assert stored.snapshot["version"] == 6 and refs(stored.snapshot, "anthropic")
    assert json.dumps(stored.snapshot) == json.dumps(worker.snapshot())
    goes_on(store, worker, fake)


def _edited(snap: dict[str, Any], target: str, index: int, **change: Any) -> dict[str, Any]:
    out = copy.deepcopy(snap)
    ref = refs(out, target)[index][1]
    ref.update(change)
    return out


def test_a_reference_to_a_message_the_snapshot_lacks_is_refused_naming_the_entry() -> None:
    snap, _ = snapshot_of("anthropic")
    i, _ref = refs(snap, "anthropic")[0]
    bad = _edited(snap, "anthropic", 0, message=999)
    assert refused(bad) == (
        f"snapshot ledger 'anthropic' 'wire' entry {i} refers to history message 999 at "
        f"{_ref['path']}, which the snapshot lacks (it holds {len(snap['history'])} messages); "
        "nothing was restored"
    )


def test_a_reference_to_a_place_without_text_is_refused_naming_the_entry() -> None:
    snap, _ = snapshot_of("openai")
    i, ref = refs(snap, "openai")[0]
    for path in (["parts", 0, "nothing"], ["parts", 99], ["role", 0], []):
        bad = _edited(snap, "openai", 0, path=path)
        assert refused(bad) == (
            f"snapshot ledger 'openai' 'wire' entry {i} refers to history message "
            f"{ref['message']} at {path}, which holds no text there; nothing was restored"
        )


def test_a_reference_to_a_place_in_the_entry_that_is_not_empty_is_refused() -> None:
    snap, _ = snapshot_of("responses")
    i, _ref = refs(snap, "responses")[0]
    for at in (["type"], ["nowhere", "deeper"], [5], []):
        bad = _edited(snap, "responses", 0, at=at)
        assert refused(bad) == (
            f"snapshot ledger 'responses' 'wire' entry {i} has no empty place at {at} for "
            "the history text it refers to; nothing was restored"
        )


def test_a_reference_to_another_text_is_refused_by_the_entry_digest() -> None:
    snap, _ = snapshot_of("anthropic")
    (i, first), (_, other) = refs(snap, "anthropic")[0], refs(snap, "anthropic")[-1]
    assert first["message"] != other["message"]
    bad = _edited(snap, "anthropic", 0, message=other["message"], path=other["path"])
    assert refused(bad) == (
        f"snapshot ledger 'anthropic' 'wire' entry {i} differs from what was sent (its "
        "digest does not match); the snapshot was changed after it was taken, and "
        "replaying the entry would break the conversation; nothing was restored"
    )


def test_texts_must_be_one_list_per_entry_and_of_the_declared_form() -> None:
    snap, _ = snapshot_of("gemini")
    short = copy.deepcopy(snap)
    short["ledgers"]["gemini"]["texts"].pop()
    n = len(snap["ledgers"]["gemini"]["wire"])
    assert refused(short) == (
        f"snapshot ledger 'gemini' 'wire' texts must hold one list per wire entry ({n}), "
        f"not {n - 1}; nothing was restored"
    )
    for change, problem in (
        ({"message": -1}, "must be an integer >= 0"),
        ({"message": "1"}, "must be an integer"),
        ({"at": "content"}, "must be a list"),
        ({"extra": 1}, "is not a field of this form"),
    ):
        assert problem in refused(_edited(snap, "gemini", 0, **change))


def test_removing_the_texts_does_not_restore_the_entries_unchecked() -> None:
    snap, _ = snapshot_of("anthropic")
    bad = copy.deepcopy(snap)
    del bad["ledgers"]["anthropic"]["texts"]
    i, _ref = refs(snap, "anthropic")[0]
    assert f"'wire' entry {i} differs from what was sent" in refused(bad)


def test_a_signed_version_3_snapshot_restores_and_a_tampered_one_is_refused() -> None:
    trust = {"keys": KEYS, "session_id": "s"}
    snap, (chef, _) = snapshot_of("anthropic", **trust)
    assert snap["version"] == 6 and refs(snap, "anthropic")
    fresh = make()
    fresh.restore(copy.deepcopy(snap), **trust)
    assert compiled(fresh, "anthropic").to_json() == compiled(chef, "anthropic").to_json()
    (_, first), (_, other) = refs(snap, "anthropic")[0], refs(snap, "anthropic")[-1]
    swapped = _edited(snap, "anthropic", 0, message=other["message"], path=other["path"])
    history = copy.deepcopy(snap)
    held = history["history"][first["message"]]
    for key in first["path"][:-1]:
        held = held[key]
    held[first["path"][-1]] = "Different text, long enough to be referred to. " * 3
    for bad in (swapped, history):
        message = refused(bad, **trust)
        assert "does not match its content" in message
        with pytest.raises(SnapshotSignatureError):
            make().restore(bad, **trust)
