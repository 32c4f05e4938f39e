"""Snapshot version 5: a ledger's digests checked a block at a time (issue 27, item 1).

Each ledger holds ``blocks``: the digest of each 64 consumed messages' forms with their
consumed digests, and of each 64 stored wire entries with their texts and digests. An
unsigned restore hashes each block at once and skips the one-by-one checks only when
every block is the one written; any other block (edited, or made of values the encoder
refuses) sends the ledger to the one-by-one checks, which still name the message or
entry, and once they pass a block that differs (items moved with their digests, or the
block digest edited) or a missing ``blocks`` is refused. A save makes only the blocks
whose digests changed, and what it writes equals the blocks made afresh; versions 1-4
restore as before; the conversation goes on through the official SDK clients against the
`contextchef.testing` fakes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send
from test_snapshot_once import compiled, goes_on, ledgers_of, make, sync_turn

from contextchef import TARGETS, UsageError, _json, tool_results, user
from contextchef.history import _wire_forms
from contextchef.history._blocks import BLOCK, blocks_of
from contextchef.testing import fake_for, text, tool_calls


def long_conversation(target: str, rounds: int = 40) -> tuple[Any, Any]:
    """`rounds` answered tool calls (4 messages each): several blocks of each kind."""
    replies = [
        tool_calls(("read_file", {"path": f"{i}.py"}), reasoning=f"r{i}") for i in range(rounds)
    ]
    fake = fake_for(target).script(*replies, text("Done."), text("More."), text("Again."))
    chef = make()
    chef.set_history([user("Read every file.")])
    for _ in range(rounds + 1):
        calls = chef.ingest(send(target, fake, compiled(chef, target).payload))
        chef.append(tool_results([chef.execute(c).result for c in calls]) if calls else user("ok"))
    return chef, fake


def fresh_blocks(snap: dict[str, Any], ledger: dict[str, Any]) -> list[list[str]]:
    """The blocks of `ledger` made from its own items, no cache or base."""
    shared, forms = ledger["shared"], snap["history"]
    columns = (ledger["wire"], ledger["texts"], ledger["wire_digests"])
    return blocks_of(forms[:shared], ledger["consumed"][:shared], columns, {}, None)


def restored(snap: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """A session restored from `snap`, and how many ledgers were checked one by one."""
    calls, real = [0], _wire_forms._digests_of

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(_wire_forms, "_digests_of", counted)
    chef = make()
    chef.restore(copy.deepcopy(snap), allow_unsigned=True)
    return chef, calls[0]


@pytest.mark.parametrize("target", TARGETS)
def test_blocks_are_written_and_a_restore_takes_them(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chef, fake = long_conversation(target)
    snap = json.loads(json.dumps(chef.snapshot()))
    assert snap["version"] == 6
    for ledger in ledgers_of(snap):
        assert ledger["blocks"] == fresh_blocks(snap, ledger)
        assert len(ledger["blocks"][1]) == -(-len(ledger["wire"]) // BLOCK) > 1
    worker, one_by_one = restored(snap, monkeypatch)
    assert one_by_one == 0  # every block held: no entry hashed alone
    chef.append(user("next")), worker.append(user("next"))
    request = compiled(worker, target)
    assert request.to_json() == compiled(chef, target).to_json() and not request.edits
    worker.ingest(send(target, fake, request.payload))
    assert fake.violations == ()


@pytest.mark.parametrize(("which", "named"), [(0, "history messages 64-"), (1, "entries 64-")])
def test_a_wrong_block_digest_alone_is_refused(which: int, named: str) -> None:
    """Each item matches its digest, the block does not: moved items or an edited block."""
    chef, _ = long_conversation("anthropic")
    snap = json.loads(json.dumps(chef.snapshot()))
    snap["ledgers"]["anthropic"]["blocks"][which][1] = "0" * 16
    kind = ("consumed", "wire")[which]
    with pytest.raises(UsageError, match=f"'anthropic' {kind} block 1 \\([a-z ]*{named}"):
        make().restore(snap, allow_unsigned=True)


def _swap(items: list[Any], i: int, j: int) -> None:
    items[i], items[j] = items[j], items[i]


@pytest.mark.parametrize("target", ["anthropic", "responses"])
def test_wire_entries_moved_with_their_digests_are_refused(target: str) -> None:
    """Two wire entries swapped along with their own digests and texts."""
    chef, _ = long_conversation(target)
    snap = json.loads(json.dumps(chef.snapshot()))
    wire = copy.deepcopy(snap)
    for key in ("wire", "wire_digests", "texts"):
        _swap(wire["ledgers"][target][key], 3, 5)
    with pytest.raises(UsageError, match=f"'{target}' wire block 0 \\(wire entries 0-63\\)"):
        make().restore(wire, allow_unsigned=True)


@pytest.mark.parametrize("target", ["openai", "gemini"])
def test_history_messages_moved_with_their_digests_are_refused(target: str) -> None:
    """Two shared messages swapped with their consumed digests (no wire text refers to them)."""
    chef, _ = long_conversation(target)
    snap = json.loads(json.dumps(chef.snapshot()))
    ledger = snap["ledgers"][target]
    referred = {ref["message"] for refs in ledger["texts"] for ref in refs}
    at = next(  # in the second consumed block (messages 64-127)
        i for i in range(BLOCK, ledger["shared"] - 2) if not {i, i + 2} & referred
    )
    history = copy.deepcopy(snap)
    _swap(history["history"], at, at + 2)
    _swap(history["ledgers"][target]["consumed"], at, at + 2)
    with pytest.raises(UsageError, match="consumed block 1 \\(history messages 64-"):
        make().restore(history, allow_unsigned=True)
    edited = copy.deepcopy(history)  # a message that also differs: named, as before
    edited["history"][at]["parts"].append({"kind": "text", "text": "EDITED"})
    with pytest.raises(UsageError, match=f"history message {at} differs"):
        make().restore(edited, allow_unsigned=True)


def test_a_version_5_ledger_without_blocks_is_refused() -> None:
    """Every version 5 save writes them: a ledger without them, or with too few, is refused."""
    chef, _ = long_conversation("gemini")
    snap = json.loads(json.dumps(chef.snapshot()))
    gone = copy.deepcopy(snap)
    del gone["ledgers"]["gemini"]["blocks"]
    with pytest.raises(UsageError, match="'gemini' has no 'blocks'"):
        make().restore(gone, allow_unsigned=True)
    short = copy.deepcopy(snap)
    short["ledgers"]["gemini"]["blocks"][1].pop()
    with pytest.raises(UsageError, match=r"'blocks' must hold \[consumed blocks, wire blocks\]"):
        make().restore(short, allow_unsigned=True)


def float_conversation(target: str, rounds: int = 20) -> Any:
    """`rounds` calls whose arguments hold floats (``1e-07``: orjson writes ``1e-7``)."""
    args = [{"path": f"{i}.py", "ratio": 1e-7 * (i + 1), "scale": 0.1} for i in range(rounds)]
    fake = fake_for(target).script(*(tool_calls(("read_file", a)) for a in args), text("Done."))
    chef = make()
    chef.set_history([user("Read every file.")])
    for _ in range(rounds + 1):
        calls = chef.ingest(send(target, fake, compiled(chef, target).payload))
        chef.append(tool_results([chef.execute(c).result for c in calls]) if calls else user("ok"))
    return chef


@pytest.mark.parametrize("reader_fast", [True, False])
@pytest.mark.parametrize("target", ["anthropic", "openai"])
def test_blocks_with_floats_are_judged_by_every_encoder(
    target: str, reader_fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Break-it round 18: a block holding a float was never judged, so wire entries moved
    with their digests, or an edited block digest, restored when a call's arguments held
    a float. Encoders write floats apart (orjson ``1e-7``, ``json`` ``1e-07``), and the
    writer may have had either: such a block is refused only when no encoder gives its
    digest. An honest snapshot restores whichever encoder the reader has (one without
    orjson cannot tell what a writer that had it wrote: its float blocks are left to the
    one-by-one checks)."""
    chef = float_conversation(target)
    snap = json.loads(json.dumps(chef.snapshot()))
    if not reader_fast:  # the writer had the fastjson extra, the reader has not
        monkeypatch.setattr(_json, "FAST_JSON", [None])
    worker = make()
    worker.restore(copy.deepcopy(snap), allow_unsigned=True)
    assert compiled(worker, target).to_json() == compiled(chef, target).to_json()
    if not reader_fast:
        return
    moved = copy.deepcopy(snap)
    for key in ("wire", "wire_digests", "texts"):
        _swap(moved["ledgers"][target][key], 2, 4)
    with pytest.raises(UsageError, match=f"'{target}' wire block 0 \\(wire entries 0-"):
        make().restore(moved, allow_unsigned=True)
    for column, kind in ((0, "consumed"), (1, "wire")):
        edited = copy.deepcopy(snap)
        edited["ledgers"][target]["blocks"][column][0] = "0" * 16
        with pytest.raises(UsageError, match=f"'{target}' {kind} block 0 "):
            make().restore(edited, allow_unsigned=True)


def test_an_edit_inside_a_later_block_is_named() -> None:
    chef, _ = long_conversation("openai")
    snap = json.loads(json.dumps(chef.snapshot()))
    ledger = snap["ledgers"]["openai"]
    kinds = [m["parts"][0]["kind"] for m in snap["history"]]
    at = kinds.index("tool_result", BLOCK + 1)  # in the second block
    edited = copy.deepcopy(snap)
    edited["history"][at]["parts"].append({"kind": "text", "text": "EDITED"})
    with pytest.raises(UsageError, match=f"history message {at} differs"):
        make().restore(edited, allow_unsigned=True)
    entry = next(i for i in range(BLOCK, len(ledger["wire"])) if not ledger["texts"][i])
    edited = copy.deepcopy(snap)
    edited["ledgers"]["openai"]["wire"][entry]["name"] = "EDITED"
    with pytest.raises(UsageError, match=f"'wire' entry {entry} differs from what was sent"):
        make().restore(edited, allow_unsigned=True)


def test_a_version_4_form_restores_to_the_same_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    chef, _ = long_conversation("responses")
    snap = json.loads(json.dumps(chef.snapshot()))
    old = copy.deepcopy(snap)
    old["version"] = 4
    for ledger in ledgers_of(old):
        del ledger["blocks"]
    worker, one_by_one = restored(old, monkeypatch)
    assert one_by_one == 1
    assert compiled(worker, "responses").to_json() == compiled(chef, "responses").to_json()
    assert worker.snapshot()["version"] == 6


def test_a_sync_turn_writes_the_blocks_made_afresh(tmp_path: Path) -> None:
    chef, fake = long_conversation("anthropic")
    snap = json.loads(json.dumps(chef.snapshot()))
    store, worker, stored = sync_turn(tmp_path, snap, chef, fake)
    saved = stored.snapshot["ledgers"]["anthropic"]
    assert saved["blocks"] == fresh_blocks(stored.snapshot, saved)
    assert saved["blocks"][1][:-1] == snap["ledgers"]["anthropic"]["blocks"][1][:-1]
    goes_on(store, worker, fake)
