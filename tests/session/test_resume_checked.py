"""A restored session does not check its thinking bindings again (issue 27, resume).

On ``claude-opus-5-5`` (the prefix check, which the `contextchef.testing` fake enforces) a
compile checks every thinking block it sends against the prefix it was produced after. A
snapshot carries how far that check got (``chain``: ``checked`` entries, ``under`` the
digest of the system and tool set they were checked under, ``wire`` the digests of the
entries it was made over), so the first compile after a restore checks only what is new;
when the worker's system or tools differ it checks everything again, and an entry edited
in the snapshot (its digests recomputed) makes it fingerprint and check everything again.
Every request goes through the official SDK client against the fake, over several turns.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from test_ingest import send
from test_snapshot_once import compiled, make, read_file
from test_snapshot_v5 import fresh_blocks

from contextchef import ContextChef, UsageError, tool_results, user
from contextchef.history import _wire_forms
from contextchef.history._reordered import record_digest as _record_digest
from contextchef.providers._chain import CHAIN, CHECKED
from contextchef.session import _binding
from contextchef.testing import fake_for, text, tool_calls


def conversation() -> tuple[ContextChef, Any]:
    """Three answered model turns with thinking (two with tool calls), then a user turn."""
    fake = fake_for("anthropic").script(
        tool_calls(("read_file", {"path": "a.py"}), reasoning="plan a"),
        tool_calls(("read_file", {"path": "b.py"}), ("read_file", {"path": "c.py"}), reasoning="b"),
        text("Both fixed.", reasoning="done"),
    )
    chef = make()
    chef.set_history([user("Fix a.py, then b.py and c.py.")])
    for _ in range(3):
        calls = chef.ingest(send("anthropic", fake, compiled(chef, "anthropic").payload))
        if calls:
            chef.append(tool_results([chef.execute(call).result for call in calls]))
    chef.append(user("Now the docs."))
    assert fake.violations == ()
    return chef, fake


def worker(data: dict[str, Any], change: str = "") -> ContextChef:
    """A new session restored from `data`; `change`: ``system`` (another system prompt
    set after the restore) or ``tools`` (``read_file`` deferred in this worker)."""
    chef = ContextChef(defer=["read_file"]) if change == "tools" else ContextChef()
    chef.register_tools([read_file])
    chef.set_system_prompt("You are careful.")
    chef.restore(copy.deepcopy(data), allow_unsigned=True)
    if change == "system":
        chef.set_system_prompt("You are terse.")
    return chef


def snapshot_of(chef: ContextChef) -> dict[str, Any]:
    return json.loads(json.dumps(chef.snapshot()))


def without_check(snap: dict[str, Any]) -> dict[str, Any]:
    """`snap` with no carried check (``checked``, ``under`` left out, record digest made)."""
    old = copy.deepcopy(snap)
    ledger = old["ledgers"]["anthropic"]
    for key in ("checked", "under"):
        ledger["chain"].pop(key)
    ledger["record_digest"] = _record_digest(ledger)
    return old


def walked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the entries `first_unbound` reads for thinking (one item a read)."""
    reads: list[int] = []
    real = _binding.thinking_keys

    def counted(entry: object) -> list[str]:
        reads.append(1)
        return real(entry)

    monkeypatch.setattr(_binding, "thinking_keys", counted)
    return reads


def turns(chef: ContextChef, fake: Any, n: int) -> list[str]:
    """`n` more answered turns (a tool call with thinking each) through the fake."""
    out = []
    for i in range(n):
        request = compiled(chef, "anthropic")
        out.append(request.to_json())
        fake.script(tool_calls(("read_file", {"path": f"{i}.py"}), reasoning=f"more {i}"))
        calls = chef.ingest(send("anthropic", fake, request.payload))
        chef.append(tool_results([chef.execute(c).result for c in calls]))
        assert fake.violations == ()
    return out


def test_the_check_is_carried_and_the_first_compile_reads_only_what_is_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chef, fake = conversation()
    snap = snapshot_of(chef)
    chain = snap["ledgers"]["anthropic"]["chain"]
    assert chain["checked"] == len(snap["ledgers"]["anthropic"]["wire"]) > 4
    assert {"under", "wire", "tools"} <= set(chain)
    fresh = worker(snap)
    reads = walked(monkeypatch)
    request = compiled(fresh, "anthropic")
    # only the entries past the carried check (the user turn appended since) were read
    assert 0 < len(reads) <= len(request.payload["messages"]) - chain["checked"]
    assert request.to_json() == compiled(chef, "anthropic").to_json() and not request.edits
    fresh.ingest(send("anthropic", fake.script(text("Docs done.")), request.payload))
    fresh.append(user("And the tests."))
    later = turns(fresh, fake, 3)
    # the same turns from the session that never left, and from a snapshot without the check
    again, twin = conversation()  # the same conversation, its own fake
    assert snapshot_of(again) == snap
    other = worker(without_check(snap))
    other.ingest(send("anthropic", twin.script(text("Docs done.")), request.payload))
    other.append(user("And the tests."))
    assert turns(other, twin, 3) == later


@pytest.mark.parametrize("change", ["system", "tools"])
def test_a_worker_with_other_tools_or_system_checks_everything_again(
    change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = []
    for carried in (True, False):
        chef, fake = conversation()  # the same conversation each time, its own fake
        snap = snapshot_of(chef)
        fresh = worker(snap if carried else without_check(snap), change)
        reads = walked(monkeypatch)
        request = compiled(fresh, "anthropic")
        assert request.edits  # the prefix changed: the thinking before it is not sent
        assert len(reads) >= len(snap["ledgers"]["anthropic"]["wire"])  # all read again
        fresh.ingest(send("anthropic", fake.script(text("Docs done.")), request.payload))
        fresh.append(user("And the tests."))
        requests.append([request.to_json(), *turns(fresh, fake, 3)])
        monkeypatch.undo()
        assert fake.violations == ()
    assert requests[0] == requests[1]


def test_a_forged_count_is_refused_by_the_record_digest() -> None:
    chef, _ = conversation()
    snap = snapshot_of(chef)
    snap["ledgers"]["anthropic"]["chain"]["checked"] -= 1
    with pytest.raises(UsageError, match="the record digest does not match"):
        make().restore(snap, allow_unsigned=True)


@pytest.mark.parametrize("change", [{"checked": 10_000}, {"under": "zz"}, {"tools": "00"}])
def test_a_malformed_check_is_refused(change: dict[str, Any]) -> None:
    chef, _ = conversation()
    snap = snapshot_of(chef)
    ledger = snap["ledgers"]["anthropic"]
    ledger["chain"].update(change)
    ledger["record_digest"] = _record_digest(ledger)
    with pytest.raises(UsageError, match="'chain' must hold a 32-digit hex digest"):
        make().restore(snap, allow_unsigned=True)


def test_an_entry_edited_with_its_digests_remade_is_checked_again() -> None:
    """A user turn rewritten in the snapshot, every digest over it made again (what an
    unsigned snapshot allows): the carried chain and check were made over the old entry,
    so they are dropped, the compile fingerprints the entries again and leaves out the
    thinking produced after the old text; the fake (which saw the old one) takes it."""
    chef, fake = conversation()
    snap = snapshot_of(chef)
    ledger = snap["ledgers"]["anthropic"]
    at = 0  # the first user turn, before every thinking block
    assert ledger["wire"][at]["role"] == "user" and not ledger["texts"][at]
    ledger["wire"][at]["content"] = [{"type": "text", "text": "Fix d.py instead."}]
    shared = ledger["consumed"][: ledger["shared"]]
    ledger["wire_digests"][at] = _wire_forms.wire_digest(ledger["wire"][at], [], shared, True)
    ledger["blocks"] = fresh_blocks(snap, ledger)
    ledger["record_digest"] = _record_digest(ledger)
    fresh = make()
    fresh.restore(copy.deepcopy(snap), allow_unsigned=True)
    cache = fresh._state.ledgers["anthropic"].binding_cache
    assert CHAIN not in cache and CHECKED not in cache  # left behind: made over the old entry
    request = compiled(fresh, "anthropic")
    assert request.edits  # the thinking after the edited turn is no longer sent
    assert "signature" not in json.dumps(request.payload["messages"])
    fresh.ingest(send("anthropic", fake.script(text("Docs done.")), request.payload))
    assert fake.violations == ()


def test_a_chain_with_tool_references_restores_to_the_same_chain() -> None:
    """`chain_form` then `restore_chain`: the same digests and referenced names per entry."""
    from contextchef.providers._chain import chain_form, restore_chain

    wire = [{"n": i} for i in range(6)]
    names = [set(), {"a"}, {"a"}, {"a", "b"}, {"a", "b"}, {"a", "b", "c"}]
    made = [
        (e, bytes([i]) * 16, frozenset(n)) for i, (e, n) in enumerate(zip(wire, names, strict=True))
    ]
    digests = [f"d{i}" for i in range(6)]
    cache: dict[Any, Any] = {CHAIN: made, CHECKED: (b"u" * 16, wire[:4])}
    form = chain_form(cache, wire, digests, None)["chain"]
    assert form["references"] == {"a": 1, "b": 3, "c": 5} and form["checked"] == 4
    again: dict[Any, Any] = {}
    restore_chain(again, wire, digests, form, "")  # stand-in entries: no target wire to check
    assert again[CHAIN] == made and again[CHECKED] == (b"u" * 16, wire[:4])
    edited: dict[Any, Any] = {}  # other wire digests: neither is taken
    restore_chain(edited, wire, [*digests[:5], "other"], form, "")
    assert edited == {}
