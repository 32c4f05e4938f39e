"""Snapshot version 6: block digests are CRC-32 checksums (issue 27, item 1).

A restore hashes every block of the conversation (`history._blocks`) to vouch for what
it reads; SHA-256 (version 5) was a third of that. Version 6 writes the CRC-32 of each
block's bytes (8 hex digits). Version 5 snapshots still restore, their blocks checked
with SHA-256 and taken as they are; the first save after such a restore writes version 6,
every block a CRC-32 (none of the version 5 ones carried over, in a snapshot or in a
SessionSync turn on a version 5 base). A version 5 digest in a version 6 snapshot is an
edited block, refused like any other.
"""

from __future__ import annotations

import copy
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send
from test_snapshot_once import compiled, goes_on, ledgers_of, make, sync_turn
from test_snapshot_v5 import fresh_blocks, long_conversation, restored

from contextchef import TARGETS, ContextChef, UsageError, assistant, user
from contextchef._json import canonical_utf8, fast_encoder
from contextchef.history._blocks import BLOCK, blocks_of
from contextchef.testing import fake_for, text


def _crc(value: Any) -> str:
    encode = fast_encoder() or canonical_utf8
    return f"{zlib.crc32(encode(value)):08x}"


def as_version_5(snap: dict[str, Any]) -> dict[str, Any]:
    """`snap` as a version 5 writer wrote it: the same items, SHA-256 blocks."""
    old = copy.deepcopy(snap)
    old["version"] = 5
    for ledger in ledgers_of(old):
        shared, forms = ledger["shared"], old["history"]
        columns = (ledger["wire"], ledger["texts"], ledger["wire_digests"])
        consumed = ledger["consumed"][:shared]
        ledger["blocks"] = blocks_of(forms[:shared], consumed, columns, {}, None, crc=False)
    return old


def test_each_block_is_the_crc32_of_its_items_and_position() -> None:
    chef, _ = long_conversation("anthropic")
    snap = json.loads(json.dumps(chef.snapshot()))
    assert snap["version"] == 6
    ledger, forms = snap["ledgers"]["anthropic"], snap["history"]
    consumed, shared = ledger["consumed"], ledger["shared"]
    assert (
        ledger["blocks"][0]
        == [  # each with its first position: moved, it differs
            _crc([lo, forms[lo : min(lo + BLOCK, shared)], consumed[lo : min(lo + BLOCK, shared)]])
            for lo in range(0, shared, BLOCK)
        ]
    )
    wire, texts, digests = ledger["wire"], ledger["texts"], ledger["wire_digests"]
    assert ledger["blocks"][1] == [
        _crc([lo, wire[lo : lo + BLOCK], texts[lo : lo + BLOCK], digests[lo : lo + BLOCK]])
        for lo in range(0, len(wire), BLOCK)
    ]


@pytest.mark.parametrize("target", TARGETS)
def test_a_version_5_snapshot_restores_and_saves_as_version_6(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chef, fake = long_conversation(target)
    old = as_version_5(json.loads(json.dumps(chef.snapshot())))
    assert all(len(b) == 16 for lg in ledgers_of(old) for column in lg["blocks"] for b in column)
    worker, one_by_one = restored(old, monkeypatch)
    assert one_by_one == 0  # its SHA-256 blocks held: no entry hashed alone
    assert worker.history == chef.history
    chef.append(user("next")), worker.append(user("next"))
    request = compiled(worker, target)
    assert request.to_json() == compiled(chef, target).to_json() and not request.edits
    worker.ingest(send(target, fake, request.payload))
    assert fake.violations == ()
    again = json.loads(json.dumps(worker.snapshot()))
    assert again["version"] == 6
    for ledger in ledgers_of(again):  # made afresh: no version 5 block carried over
        assert ledger["blocks"] == fresh_blocks(again, ledger)
        assert {len(b) for column in ledger["blocks"] for b in column} == {8}
    assert restored(again, monkeypatch)[1] == 0


def test_a_sync_turn_on_a_version_5_base_writes_crc32_blocks(tmp_path: Path) -> None:
    chef, fake = long_conversation("anthropic")
    old = as_version_5(json.loads(json.dumps(chef.snapshot())))
    store, worker, stored = sync_turn(tmp_path, old, chef, fake)
    assert stored.snapshot["version"] == 6
    saved = stored.snapshot["ledgers"]["anthropic"]
    assert saved["blocks"] == fresh_blocks(stored.snapshot, saved)
    assert {len(b) for column in saved["blocks"] for b in column} == {8}
    goes_on(store, worker, fake)


@pytest.mark.parametrize("column", [0, 1])
def test_a_version_5_block_in_a_version_6_snapshot_is_refused(column: int) -> None:
    """The SHA-256 of the right bytes is still not the block a version 6 writer wrote."""
    chef, _ = long_conversation("openai")
    snap = json.loads(json.dumps(chef.snapshot()))
    mixed = copy.deepcopy(snap)
    mixed["ledgers"]["openai"]["blocks"][column][1] = as_version_5(snap)["ledgers"]["openai"][
        "blocks"
    ][column][1]
    kind = ("consumed", "wire")[column]
    with pytest.raises(UsageError, match=f"'openai' {kind} block 1 "):
        make().restore(mixed, allow_unsigned=True)


def test_a_version_5_snapshot_with_an_edited_message_is_refused() -> None:
    chef, _ = long_conversation("responses")
    old = as_version_5(json.loads(json.dumps(chef.snapshot())))
    at = [m["parts"][0]["kind"] for m in old["history"]].index("tool_result", BLOCK + 1)
    old["history"][at]["parts"][0]["content"] = "EDITED"
    with pytest.raises(UsageError, match=f"history message {at} differs"):
        make().restore(old, allow_unsigned=True)


def _swap_first_blocks(snap: dict[str, Any], target: str) -> dict[str, Any]:
    """`snap` with its first two 64-item blocks swapped whole, digests and all."""
    moved = copy.deepcopy(snap)
    led = moved["ledgers"][target]
    for column in (moved["history"], led["consumed"], led["wire"], led["wire_digests"]):
        column[0:BLOCK], column[BLOCK : 2 * BLOCK] = column[BLOCK : 2 * BLOCK], column[0:BLOCK]
    led["texts"][0:BLOCK], led["texts"][BLOCK : 2 * BLOCK] = (
        led["texts"][BLOCK : 2 * BLOCK],
        led["texts"][0:BLOCK],
    )
    for blocks in led["blocks"]:
        blocks[0], blocks[1] = blocks[1], blocks[0]
    return moved


def test_whole_blocks_moved_with_their_digests_are_refused() -> None:
    """Break-it 38: a block's digest covered its items, not where they stand, so two whole
    blocks swapped with every digest restored and replayed the reordered conversation."""
    h: list[Any] = []
    for i in range(BLOCK * 3):
        h.append(user(f"question {i // 2}") if i % 2 == 0 else assistant(f"answer {i // 2}"))
    chef = ContextChef()
    chef.set_history([*h, user("final")])
    fake = fake_for("anthropic").script(text("ok"))
    chef.ingest(
        send("anthropic", fake, chef.compile("anthropic", model="claude-sonnet-4-5").payload)
    )
    snap = json.loads(json.dumps(chef.snapshot()))
    with pytest.raises(
        UsageError, match="'anthropic' consumed block 0 \\(history messages 0-63\\)"
    ):
        ContextChef().restore(_swap_first_blocks(snap, "anthropic"), allow_unsigned=True)
    ContextChef().restore(snap, allow_unsigned=True)  # the snapshot as written restores


def test_a_version_lowered_below_5_is_refused() -> None:
    """Break-it 38: "version": 4 on a version 5 or 6 snapshot skipped the block checks (a
    version 4 ledger has none), and entries moved with their digests restored."""
    chef, _ = long_conversation("openai")
    snap = json.loads(json.dumps(chef.snapshot()))
    for version in (4, 3):
        lowered = {**copy.deepcopy(snap), "version": version}
        with pytest.raises(UsageError, match="holds 'blocks', which only version 5 and later"):
            make().restore(lowered, allow_unsigned=True)
    old = as_version_5(snap)
    with pytest.raises(UsageError, match="which only version 5 and later write, in a version 4"):
        make().restore({**old, "version": 4}, allow_unsigned=True)
