"""A ledger's normalized messages (``ir``) are tied to their places by ``ir_digest``.

Break-it round 17 left it open: ``ir`` (history indices, or a message in full where the
normalized one differs) had no digest, so two of its items swapped in an unsigned
snapshot restored without complaint, and the next request was rendered from the wrong
context. The digest is over the list (`history._forms.form_digest`, sorted-key canonical
JSON, the fast encoder where its bytes are ``json``'s), checked on an unsigned version 5
restore; the record digest covers it, so it cannot be dropped alone. Snapshots written
before it (no ``ir_digest``) and versions 1-4 still restore.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from test_snapshot_once import compiled, make
from test_snapshot_v5 import float_conversation, long_conversation

from contextchef import TARGETS, SnapshotKeys, UsageError, _json
from contextchef.history._reordered import record_digest as _record_digest


def _swap(items: list[Any], i: int, j: int) -> None:
    items[i], items[j] = items[j], items[i]


@pytest.mark.parametrize("target", TARGETS)
def test_swapped_ir_items_are_refused_naming_the_ledger_and_field(target: str) -> None:
    chef, _ = long_conversation(target, rounds=6)
    snap = json.loads(json.dumps(chef.snapshot()))
    ledger = snap["ledgers"][target]
    assert ledger["ir_digest"] and len(ledger["ir"]) > 6
    kinds = {type(item) for item in ledger["ir"]}
    i, j = 2, 5
    if dict in kinds and int in kinds:  # a message in full moved against an index
        i = next(k for k, item in enumerate(ledger["ir"]) if isinstance(item, dict))
        j = next(k for k, item in enumerate(ledger["ir"]) if isinstance(item, int) and k > 0)
    moved = copy.deepcopy(snap)
    _swap(moved["ledgers"][target]["ir"], i, j)
    with pytest.raises(UsageError, match=f"snapshot ledger '{target}' 'ir' differs from what"):
        make().restore(moved, allow_unsigned=True)
    dropped = copy.deepcopy(moved)  # the digest cannot go with them: the record digest says so
    del dropped["ledgers"][target]["ir_digest"]
    with pytest.raises(UsageError, match=f"snapshot ledger '{target}': its tools, system"):
        make().restore(dropped, allow_unsigned=True)
    worker = make()  # the honest one restores, to the same request
    worker.restore(copy.deepcopy(snap), allow_unsigned=True)
    assert compiled(worker, target).to_json() == compiled(chef, target).to_json()


def test_an_edited_ir_message_is_refused() -> None:
    """Gemini records these model turns in full (their provider data differ): one edited."""
    chef = float_conversation("gemini", rounds=3)
    snap = json.loads(json.dumps(chef.snapshot()))
    ir = snap["ledgers"]["gemini"]["ir"]
    at = next(k for k, item in enumerate(ir) if isinstance(item, dict))
    ir[at]["parts"][0]["name"] = "write_file"
    with pytest.raises(UsageError, match="snapshot ledger 'gemini' 'ir' differs"):
        make().restore(snap, allow_unsigned=True)


@pytest.mark.parametrize(("writer_fast", "reader_fast"), [(True, False), (False, True)])
def test_floats_in_ir_restore_whichever_encoder_wrote_them(
    writer_fast: bool, reader_fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """orjson writes ``1e-7`` where ``json`` writes ``1e-07``: the digest is ``json``'s bytes."""
    if not writer_fast:
        monkeypatch.setattr(_json, "FAST_JSON", [None])
    chef = float_conversation("gemini", rounds=4)
    snap = json.loads(json.dumps(chef.snapshot()))
    assert "1e-07" in json.dumps(snap["ledgers"]["gemini"]["ir"])
    monkeypatch.setattr(_json, "FAST_JSON", [] if reader_fast else [None])
    worker = make()
    worker.restore(copy.deepcopy(snap), allow_unsigned=True)
    assert compiled(worker, "gemini").to_json() == compiled(chef, "gemini").to_json()


def test_a_snapshot_without_ir_digest_restores() -> None:
    """Written before the field: no digest to check (nor for versions 1-4)."""
    chef, _ = long_conversation("openai", rounds=3)
    snap = json.loads(json.dumps(chef.snapshot()))
    ledger = snap["ledgers"]["openai"]
    del ledger["ir_digest"]
    ledger["record_digest"] = _record_digest(ledger)
    worker = make()
    worker.restore(snap, allow_unsigned=True)
    assert compiled(worker, "openai").to_json() == compiled(chef, "openai").to_json()


def test_a_signed_snapshot_is_covered_by_its_signature() -> None:
    keys = SnapshotKeys({"k": b"k" * 32})
    chef, _ = long_conversation("anthropic", rounds=3)
    snap = json.loads(json.dumps(chef.snapshot(keys=keys)))
    make().restore(copy.deepcopy(snap), keys=keys)
    _swap(snap["ledgers"]["anthropic"]["ir"], 1, 3)
    with pytest.raises(Exception, match=r"signature|signed"):
        make().restore(snap, keys=keys)
