"""Snapshot version 4: each wire digest over the stored entry (issue 27, item 1).

A version 4 wire digest covers the entry as stored (its referred texts null), its
references and the ``consumed`` digests of the messages they refer to, which must be
among the ``shared`` ones (checked against the history by the consumed check): an
unsigned restore hashes each long text once, in its history message. A corrupt or
edited snapshot must still be refused naming the entry or message, versions 1-3 must
restore as before (a version 3 text written by main at 42189cd is committed beside this
file, with the payload its restored session compiled), and the conversation must go on
through the official SDK clients against the `contextchef.testing` fakes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send
from test_snapshot_once import (
    as_version_3,
    compiled,
    conversation,
    goes_on,
    ledgers_of,
    make,
    sync_turn,
)
from test_snapshot_texts import refs, refused

from contextchef import TARGETS, user
from contextchef.history._forms import wire_digest
from contextchef.testing import fake_for, text

V3 = json.loads((Path(__file__).parent / "snapshot_v3.json").read_text("utf-8"))


def snapshot_of(target: str) -> tuple[dict[str, Any], Any]:
    chef, fake = conversation(target)
    return json.loads(json.dumps(chef.snapshot())), (chef, fake)


@pytest.mark.parametrize("target", TARGETS)
def test_the_wire_digests_are_over_the_stored_entries_and_their_references(target: str) -> None:
    snap, (chef, fake) = snapshot_of(target)
    assert snap["version"] == 6
    for ledger in ledgers_of(snap):
        consumed, shared = ledger["consumed"], ledger["shared"]
        assert len(consumed) == (ledger["pending"] or ledger["marks"][-1])["history"]
        for entry, texts, digest in zip(
            ledger["wire"], ledger["texts"], ledger["wire_digests"], strict=True
        ):
            assert all(ref["message"] < shared for ref in texts)
            assert wire_digest(entry, texts, consumed, exact=False) == digest
    assert refs(snap, target)  # the tool results at least
    fresh = make()
    fresh.restore(copy.deepcopy(snap), allow_unsigned=True)
    again = compiled(fresh, target)
    assert again.to_json() == compiled(chef, target).to_json() and not again.edits
    fresh.ingest(send(target, fake.script(text("Docs done.")), again.payload))
    fresh.append(user("And the changelog."))
    later = compiled(fresh, target)
    fresh.ingest(send(target, fake.script(text("Changelog done.")), later.payload))
    assert fake.violations == ()


@pytest.mark.parametrize("target", sorted(V3))
def test_a_version_3_text_restores_and_compiles_the_bytes_it_compiled(target: str) -> None:
    stored = V3[target]
    assert json.loads(stored["snapshot"])["version"] == 3
    chef = make()
    chef.restore(json.loads(stored["snapshot"]), allow_unsigned=True)
    request = compiled(chef, target)
    assert request.to_json() == stored["payload"] and not request.edits
    upgraded = json.loads(json.dumps(chef.snapshot()))
    assert upgraded["version"] == 6
    again = make()
    again.restore(upgraded, allow_unsigned=True)
    assert compiled(again, target).to_json() == stored["payload"]
    fake = fake_for(target).script(text("Docs done."))
    again.ingest(send(target, fake, compiled(again, target).payload))
    assert fake.violations == ()


@pytest.mark.parametrize("target", ["anthropic", "openai"])
def test_a_version_3_form_of_a_snapshot_restores_to_the_same_requests(target: str) -> None:
    snap, (chef, _) = snapshot_of(target)
    old = as_version_3(snap)
    assert (
        old["version"] == 3
        and old["ledgers"][target]["wire_digests"] != (snap["ledgers"][target]["wire_digests"])
    )
    fresh = make()
    fresh.restore(old, allow_unsigned=True)
    assert compiled(fresh, target).to_json() == compiled(chef, target).to_json()
    # a version 3 snapshot's digests are not taken for version 4 ones: the next is whole
    assert json.loads(json.dumps(fresh.snapshot())) == json.loads(json.dumps(chef.snapshot()))


def _held(snap: dict[str, Any], ref: dict[str, Any]) -> tuple[Any, Any]:
    holder: Any = snap["history"][ref["message"]]
    for key in ref["path"][:-1]:
        holder = holder[key]
    return holder, ref["path"][-1]


def test_an_edited_history_text_a_wire_entry_refers_to_is_refused() -> None:
    snap, _ = snapshot_of("anthropic")
    i, ref = refs(snap, "anthropic")[0]
    edited = copy.deepcopy(snap)
    holder, key = _held(edited, ref)
    holder[key] = holder[key].replace("contents", "CONTENTS", 1)
    assert f"history message {ref['message']} differs from what the ledger consumed" in (
        refused(edited)
    )
    # the consumed digest edited to match: the entry's digest, which covers it, does not
    from contextchef.history._forms import digest
    from contextchef.history._messages import message_from_dict

    message = message_from_dict(edited["history"][ref["message"]])
    edited["ledgers"]["anthropic"]["consumed"][ref["message"]] = digest(message)
    assert f"'anthropic' 'wire' entry {i} differs from what was sent" in refused(edited)


def test_a_reference_past_the_shared_messages_is_refused_naming_the_entry() -> None:
    snap, _ = snapshot_of("openai")
    i, ref = refs(snap, "openai")[0]
    bad = copy.deepcopy(snap)
    bad["ledgers"]["openai"]["shared"] = ref["message"]
    assert refused(bad) == (
        f"snapshot ledger 'openai' 'wire' entry {i} refers to history message "
        f"{ref['message']}, which is not one of the {ref['message']} consumed messages the "
        "history leads with (each checked against its digest in 'consumed'); nothing was "
        "restored"
    )


def test_reordered_entries_and_a_wrong_digest_are_refused_naming_the_entry() -> None:
    snap, _ = snapshot_of("responses")
    ledger = snap["ledgers"]["responses"]
    i = next(k for k, t in enumerate(ledger["texts"]) if t)
    j = i - 1
    swapped = copy.deepcopy(snap)
    for field in ("wire", "texts"):
        items = swapped["ledgers"]["responses"][field]
        items[i], items[j] = items[j], items[i]
    assert f"'responses' 'wire' entry {j} differs from what was sent" in refused(swapped)
    wrong = copy.deepcopy(snap)
    wrong["ledgers"]["responses"]["wire_digests"][i] = "0" * 16
    assert f"'responses' 'wire' entry {i} differs from what was sent" in refused(wrong)
    short = copy.deepcopy(snap)
    short["ledgers"]["responses"]["wire_digests"].pop()
    assert "'wire'_digests must hold one digest per wire entry" in refused(short)


def test_a_version_4_ledger_without_a_digest_per_consumed_message_is_refused() -> None:
    snap, _ = snapshot_of("gemini")
    bad = copy.deepcopy(snap)
    ledger = bad["ledgers"]["gemini"]
    ledger["consumed"] = ledger["consumed"][ledger["shared"] :]
    size = ledger["pending"]["history"]
    assert refused(bad) == (
        f"snapshot ledger 'gemini' 'consumed' holds {len(ledger['consumed'])} digests: it "
        f"must hold one per message consumed ({size}); nothing was restored"
    )


def test_a_sync_turn_saves_only_the_turn_and_shares_the_stored_entries(tmp_path: Path) -> None:
    snap, (chef, fake) = snapshot_of("anthropic")
    store, worker, stored = sync_turn(tmp_path, snap, chef, fake)
    saved = stored.snapshot["ledgers"]["anthropic"]
    before = snap["ledgers"]["anthropic"]
    n = len(before["wire"])
    assert saved["wire_digests"][:n] == before["wire_digests"]  # the stored entries, as stored
    assert json.dumps(stored.snapshot) == json.dumps(worker.snapshot())
    goes_on(store, worker, fake)


CHILD = """
import json, os, sys
sys.path[:0] = [sys.argv[1], os.path.dirname(sys.argv[1])]  # tests/session, tests (helpers)
from test_snapshot_once import compiled, make
out = {}
for target, text in json.load(open(sys.argv[2])).items():
    chef = make()
    chef.restore(json.loads(text), allow_unsigned=True)
    out[target] = {"payload": compiled(chef, target).to_json(), "snapshot": chef.snapshot()}
json.dump(out, open(sys.argv[3], "w"))
"""


def test_a_new_process_restores_every_target_and_the_conversation_goes_on(tmp_path: Path) -> None:
    import subprocess
    import sys

    made = {target: snapshot_of(target) for target in TARGETS}
    given, back = tmp_path / "in.json", tmp_path / "out.json"
    given.write_text(json.dumps({t: json.dumps(snap) for t, (snap, _) in made.items()}))
    here = str(Path(__file__).parent)
    subprocess.run([sys.executable, "-c", CHILD, here, str(given), str(back)], check=True)
    result = json.loads(back.read_text())
    for target, (_, (chef, fake)) in made.items():
        assert result[target]["payload"] == compiled(chef, target).to_json()
        assert result[target]["snapshot"]["version"] == 6
        worker = make()
        worker.restore(result[target]["snapshot"], allow_unsigned=True)
        for reply in ("Docs done.", "Changelog done."):
            request = compiled(worker, target)
            worker.ingest(send(target, fake.script(text(reply)), request.payload))
            worker.append(user("Next."))
        assert fake.violations == (), target
