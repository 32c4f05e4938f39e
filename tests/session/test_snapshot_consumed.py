"""A history message a ledger consumed must still be what it consumed when restored.

A snapshot records, per target, the history messages its ledger consumed: a count of
those that lead the history (``shared``) and a digest of each (``consumed``). An unsigned
snapshot whose history was edited but whose ledgers were not would otherwise restore and
disagree with itself: the target that sent the message replays it as it was, a target
compiled for the first time sends it as edited, and ``chef.history`` says the latter.
Restore refuses it instead, naming the message and the ledger, and restores nothing.
Conversations run through the official SDK clients against the `contextchef.testing`
fakes (Anthropic with thinking, on ``claude-opus-5-5``, whose prefix check the fake
enforces).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake
from test_snapshot_once import as_version_2, compiled, conversation, make

from contextchef import ContextChef, ContextChefError, Message, TextPart, UsageError, _json, user
from contextchef.history._forms import digest


def snapshot_of_two_targets() -> dict[str, Any]:
    """Three Anthropic turns answered, then the next user turn compiled for OpenAI too."""
    chef, _ = conversation("anthropic")
    compiled(chef, "openai")
    return json.loads(json.dumps(chef.snapshot()))


def set_text(i: int, value: str) -> Callable[[dict[str, Any]], None]:
    def edit(snap: dict[str, Any]) -> None:
        snap["history"][i]["parts"][0]["text"] = value

    return edit


def big_int(snap: dict[str, Any]) -> None:
    # past 64 bits, within a double's range (10**400 is no JSON data `json_problem` takes)
    snap["history"][1]["parts"][0]["provider_data"]["block"]["n"] = 10**300


def nan_arguments(snap: dict[str, Any]) -> None:
    snap["history"][1]["parts"][1]["arguments"] = '{"path": NaN}'


EDITS = {
    "text": set_text(0, "EVIL"),
    "nul": set_text(0, "Fix a.py\x00"),
    "long": set_text(0, "x" * 2_000_000),
    "big int": big_int,
    "nan arguments": nan_arguments,
}


@pytest.mark.parametrize("edit", EDITS)
def test_a_consumed_message_edited_in_the_history_alone_is_refused(edit: str) -> None:
    snap = snapshot_of_two_targets()
    EDITS[edit](snap)
    chef = make()
    with pytest.raises(ContextChefError, match="nothing was restored") as caught:
        chef.restore(snap, allow_unsigned=True)
    if edit in ("text", "nul", "long", "big int"):  # valid messages: only the ledger knows
        message = 0 if edit != "big int" else 1
        assert isinstance(caught.value, UsageError)
        assert f"ledger 'anthropic': history message {message} differs" in str(caught.value)
    assert chef.history == ()  # nothing restored: the session goes on as it was
    chef.append(user("Hi."))
    assert len(chef.compile("anthropic", model="claude-opus-5-5").payload["messages"]) == 1


def test_a_message_only_one_target_consumed_names_that_target() -> None:
    snap = snapshot_of_two_targets()
    assert snap["ledgers"]["anthropic"]["shared"] == 5 < snap["ledgers"]["openai"]["shared"]
    set_text(6, "EVIL")(snap)
    with pytest.raises(UsageError, match="ledger 'openai': history message 6 differs"):
        make().restore(snap, allow_unsigned=True)


def test_a_signed_snapshot_so_edited_is_still_refused() -> None:
    from contextchef import SnapshotKeys

    keys = SnapshotKeys({"k1": b"k" * 32}, current="k1")
    chef, _ = conversation("anthropic")
    snap = json.loads(json.dumps(chef.snapshot(keys=keys)))
    set_text(0, "EVIL")(snap)
    with pytest.raises(ContextChefError):
        make().restore(snap, keys=keys)


def test_restored_unedited_the_conversation_goes_on_and_stays_checked() -> None:
    first, fake = conversation("anthropic")  # two answers left: "Again.", "And again."
    compiled(first, "openai")
    chef = make()
    chef.restore(json.loads(json.dumps(first.snapshot())), allow_unsigned=True)
    for follow_up in ("More.", "Thanks."):
        chef.ingest(send("anthropic", fake, compiled(chef, "anthropic").payload))
        chef.append(user(follow_up))
    compiled(chef, "anthropic")
    assert fake.violations == ()
    again = json.loads(json.dumps(chef.snapshot()))
    ledger = again["ledgers"]["anthropic"]
    assert ledger["shared"] == len(ledger["consumed"]) == 11  # every message has its digest
    restored = make()
    restored.restore(json.loads(json.dumps(again)), allow_unsigned=True)
    assert compiled(restored, "anthropic").payload == compiled(chef, "anthropic").payload
    again["history"][8]["parts"][0]["text"] = "EVIL"  # the turn after the first restore
    with pytest.raises(UsageError, match="ledger 'anthropic': history message 8 differs"):
        make().restore(again, allow_unsigned=True)


def test_a_snapshot_with_digests_past_the_shared_messages_only_still_restores() -> None:
    """Snapshots written before every consumed message had its digest restore unchecked."""
    snap = as_version_2(snapshot_of_two_targets())  # version 4 writes every digest
    for ledger in snap["ledgers"].values():
        ledger["consumed"] = ledger["consumed"][ledger["shared"] :]
    chef = make()
    chef.restore(snap, allow_unsigned=True)
    assert len(chef.history) == 7


@pytest.mark.parametrize("shared", [10**30, 8, -1])
def test_a_bad_shared_count_is_named(shared: int) -> None:
    snap = snapshot_of_two_targets()
    snap["ledgers"]["anthropic"]["shared"] = shared
    with pytest.raises(UsageError, match="'shared'") as caught:
        make().restore(snap, allow_unsigned=True)
    assert "nothing was restored" in str(caught.value) or shared < 0


def test_a_bad_consumed_count_is_named() -> None:
    snap = snapshot_of_two_targets()
    snap["ledgers"]["openai"]["consumed"].pop()
    with pytest.raises(UsageError, match="ledger 'openai' 'consumed' holds 6 digests"):
        make().restore(snap, allow_unsigned=True)


# -- an integer too long for Python to print is described in our words ----------------------

HUGE = 10**5000


def _wire_int(snap: dict[str, Any]) -> None:
    snap["ledgers"]["anthropic"]["wire"][0]["content"][0]["n"] = HUGE


def _dynamic_int(snap: dict[str, Any]) -> None:
    snap["dynamic_state"] = {"n": HUGE}


@pytest.mark.parametrize("edit", [_wire_int, _dynamic_int])
def test_a_snapshot_integer_too_long_is_named_in_our_words(edit: Any) -> None:
    snap = snapshot_of_two_targets()
    edit(snap)
    with pytest.raises(UsageError) as caught:
        make().restore(snap, allow_unsigned=True)
    message = str(caught.value)
    assert "set_int_max_str_digits" not in message and "Exceeds the limit" not in message
    assert "integer of more than 4,300 digits" in message and "as a string" in message


def test_the_model_is_told_of_a_too_long_integer_argument_in_our_words() -> None:
    from contextchef import ToolCall

    chef = make()
    arguments = '{"path": 1' + "0" * 5000 + "}"
    outcome = chef.execute(ToolCall(id="c1", name="read_file", arguments=arguments))
    told = str(outcome.result.content)
    assert "set_int_max_str_digits" not in told and "Exceeds the limit" not in told
    assert "integer of more than 4,300 digits" in told


def test_a_memory_file_with_a_too_long_integer_is_refused_in_our_words(tmp_path: Any) -> None:
    from contextchef import FileMemoryStore

    path = tmp_path / "memories.json"
    path.write_text('{"version": 1, "memories": {"a": 1' + "0" * 5000 + "}}", "utf-8")
    with pytest.raises(UsageError, match="integer of more than 4,300 digits"):
        FileMemoryStore(path)


def test_the_digests_checked_at_restore_are_the_next_saves() -> None:
    # restore keeps each ledger's checked digests, so the save after a resume digests the
    # new turn only; what it writes must equal what a fresh digest of every message gives
    snap = snapshot_of_two_targets()
    chef = make()
    chef.restore(snap, allow_unsigned=True)
    chef.append(user("And b.py?"))
    compiled(chef, "anthropic")
    again = json.loads(json.dumps(chef.snapshot()))
    fresh = make()
    fresh.restore(again, allow_unsigned=True)  # every consumed message checked again
    for name in ("anthropic", "openai"):
        ledger = again["ledgers"][name]
        assert (
            ledger["consumed"][: len(snap["ledgers"][name]["consumed"])]
            == (snap["ledgers"][name]["consumed"])
        )
        assert ledger["consumed"] == [digest(m) for m in chef.history[: len(ledger["consumed"])]]
    assert fresh.snapshot() == chef.snapshot()


@pytest.mark.parametrize("fast", [True, False])
def test_floats_that_orjson_writes_otherwise_still_match(
    fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the consumed check digests each message's form with the fast encoder first; orjson
    # writes 1e-07 as 1e-7, so such a message is checked again on its canonical bytes
    if not fast:
        monkeypatch.setattr(_json, "FAST_JSON", [None])
    scored = TextPart(text="ok", provider_data={"score": 1e-7, "big": 1e16, "zero": -0.0})
    chef = ContextChef()
    chef.set_history([user("hi"), Message(role="assistant", parts=(scored,)), user("next")])
    chef.compile("anthropic", model="claude-sonnet-4-5")
    snap = json.loads(json.dumps(chef.snapshot()))
    restored = ContextChef()
    restored.restore(snap, allow_unsigned=True)
    assert restored.history == chef.history
    snap["history"][1]["parts"][0]["provider_data"]["score"] = 2e-7
    with pytest.raises(UsageError, match="history message 1 differs"):
        ContextChef().restore(snap, allow_unsigned=True)
