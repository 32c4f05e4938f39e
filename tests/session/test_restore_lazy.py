"""A restore of snapshot text builds the messages it vouches for when read (issue 27, item 1).

`ContextChef.restore` of the snapshot's JSON text (and `SessionSync.load_into`, which
restores what its store read) keeps the decoded history: each message whose form the
snapshot vouches for (its signature, or a ledger's consumed block digests that hold) is
made with its role only, and builds its parts on first read, with the builder a restore of
the dict uses. What must hold: the two restores are the same session (the same messages,
field for field; the same requests, byte for byte, turn after turn through the official
SDK clients against the `contextchef.testing` fakes); a corrupt or edited message gets the
same refusal from both, naming it, and changes nothing; a copy, a pickle and a read from
many threads of a lazy message are the built message; the caller's dict is never kept.
"""

from __future__ import annotations

import copy
import json
import pickle
import threading
from typing import Any

import pytest
from test_ingest import send
from test_restore_built import BAD, _alike, _where
from test_snapshot_once import compiled, make

from contextchef import (
    TARGETS,
    ContextChef,
    ContextChefError,
    CorruptHistoryError,
    SnapshotKeys,
    SnapshotSignatureError,
    UsageError,
    tool_results,
    user,
)
from contextchef.history._lazy import is_lazy
from contextchef.history._messages import Message, message_from_dict
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import fake_for, text, tool_calls

ROUNDS = 45
"""Model turns of `long_conversation`: 91 messages, two consumed blocks (64 each at most)."""


def long_conversation(target: str, rounds: int = ROUNDS) -> tuple[ContextChef, Any]:
    """`rounds` answered model turns (thinking, tool calls), then a user turn."""
    replies = []
    for r in range(rounds):
        if r % 3 == 2:
            replies.append(text(f"Done with step {r}.", reasoning=f"think {r}"))
        else:
            replies.append(tool_calls(("read_file", {"path": f"f{r}.py"}), reasoning=f"plan {r}"))
    fake = fake_for(target).script(*replies, *[text(f"more {k}") for k in range(8)])
    chef = make()
    chef.set_history([user("Fix every file, one by one.")])
    for r in range(rounds):
        calls = chef.ingest(send(target, fake, compiled(chef, target).payload))
        if calls:
            chef.append(tool_results([chef.execute(call).result for call in calls]))
        else:
            chef.append(user(f"go on after {r}"))
    assert fake.violations == ()
    return chef, fake


def lazy_count(chef: ContextChef) -> int:
    return sum(map(is_lazy, chef._state.history))


def _answer(sessions: tuple[ContextChef, ...], answer: Any, turn: int) -> None:
    """The one answer the model gave, ingested by each of `sessions` (the same turn)."""
    for session in sessions:
        calls = session.ingest(answer)
        if calls:
            session.append(tool_results([session.execute(c).result for c in calls]))
        else:
            session.append(user(f"next {turn}"))


@pytest.mark.parametrize("target", TARGETS)
def test_a_text_restore_is_the_dict_restore_turn_after_turn(target: str) -> None:
    chef, fake = long_conversation(target)
    stored = json.dumps(chef.snapshot())
    by_text, by_dict = make(), make()
    by_text.restore(stored, allow_unsigned=True)
    by_dict.restore(json.loads(stored), allow_unsigned=True)
    size = len(chef.history)
    assert lazy_count(by_dict) == 0
    assert lazy_count(by_text) >= 64  # at least the first consumed block
    fake.script(
        tool_calls(("read_file", {"path": "d.py"}), reasoning="docs"),
        text("Docs done.", reasoning="ok"),
        text("Bye."),
    )
    for turn in range(3):
        sent = compiled(by_text, target)
        for other in (chef, by_dict):
            assert compiled(other, target).to_json() == sent.to_json(), turn
        _answer((chef, by_text, by_dict), send(target, fake, sent.payload), turn)
    assert fake.violations == ()
    # three turns (compile, ingest) read the parts of next to none of the old messages
    assert lazy_count(by_text) >= 60
    assert by_text.history == by_dict.history and len(by_text.history) > size
    text_snap = json.loads(json.dumps(by_text.snapshot()))
    assert text_snap == json.loads(json.dumps(by_dict.snapshot()))


@pytest.mark.parametrize("target", ["anthropic", "responses"])
def test_lazy_messages_are_the_messages_a_restore_builds(target: str) -> None:
    chef, _ = long_conversation(target)
    stored = json.dumps(chef.snapshot())
    forms = json.loads(stored)["history"]
    worker = make()
    worker.restore(stored.encode(), allow_unsigned=True)  # bytes, as a store may give them
    lazy = [m for m in worker._state.history if is_lazy(m)]
    assert len(lazy) >= 64
    for message, form in zip(worker._state.history, forms, strict=True):
        assert message.parts  # reading them builds them
        _alike(message, message_from_dict(form))
        assert not is_lazy(message) and list(vars(message)) == ["role", "parts"]
    assert worker.history == chef.history


def test_copies_pickles_and_threads_see_the_built_message() -> None:
    chef, _ = long_conversation("anthropic", rounds=24)
    stored = json.dumps(chef.snapshot())
    workers = [make() for _ in range(4)]
    for worker in workers:
        worker.restore(stored, allow_unsigned=True)
    built = chef.history
    first, second, third, fourth = (w._state.history for w in workers)
    i = next(k for k, m in enumerate(first) if is_lazy(m) and m.tool_calls == m.tool_calls)
    assert not is_lazy(first[i])  # reading tool_calls built it
    j = next(k for k, m in enumerate(second) if is_lazy(m))
    for made in (
        copy.copy(second[j]),
        copy.deepcopy(second[j]),
        pickle.loads(pickle.dumps(second[j])),
    ):
        assert type(made) is Message and made == built[j] and not is_lazy(made)
    # many threads read the same lazy messages at once: every one sees the built parts
    seen: list[Any] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def read(history: tuple[Message, ...]) -> None:
        try:
            start.wait()
            seen.append([m.parts for m in history])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(h,)) for h in (third, fourth) * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all(parts == [m.parts for m in built] for parts in seen)
    assert repr(third[5]) == repr(built[5]) and repr(fourth[6]) == repr(built[6])


def _refused(restore: Any, kind: type[ContextChefError]) -> str:
    chef = make()
    chef.set_history([user("mine")])
    before = compiled(chef, "anthropic").to_json()
    with pytest.raises(kind) as info:
        restore(chef)
    assert chef.history == (user("mine"),)
    assert compiled(chef, "anthropic").to_json() == before
    return str(info.value)


@pytest.fixture(scope="module")
def long_snapshot() -> dict[str, Any]:
    chef, _ = long_conversation("anthropic")
    return json.loads(json.dumps(chef.snapshot()))  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", sorted(set(BAD) - {"NaN in thinking's provider data"}))
@pytest.mark.parametrize("block", [0, 1])
def test_a_corrupt_message_in_any_block_gets_the_dict_restores_refusal(
    case: str, block: int, long_snapshot: dict[str, Any]
) -> None:
    kind, change, words = BAD[case]
    snap = copy.deepcopy(long_snapshot)
    i, j = _where({"history": snap["history"][64 * block :]}, kind)
    i += 64 * block
    change(snap["history"][i]["parts"][j])
    text_refusal = _refused(lambda c: c.restore(json.dumps(snap), allow_unsigned=True), Exception)
    dict_refusal = _refused(
        lambda c: c.restore(copy.deepcopy(snap), allow_unsigned=True), Exception
    )
    assert text_refusal == dict_refusal
    assert text_refusal.startswith(f"message {i}: ") and words in text_refusal, text_refusal


@pytest.mark.parametrize("block", [0, 1])
def test_an_edited_message_gets_the_dict_restores_refusal(
    block: int, long_snapshot: dict[str, Any]
) -> None:
    snap = copy.deepcopy(long_snapshot)
    i, j = _where({"history": snap["history"][64 * block :]}, "text")
    i += 64 * block
    snap["history"][i]["parts"][j]["text"] += " (edited)"
    text_refusal = _refused(lambda c: c.restore(json.dumps(snap), allow_unsigned=True), UsageError)
    dict_refusal = _refused(
        lambda c: c.restore(copy.deepcopy(snap), allow_unsigned=True), UsageError
    )
    assert text_refusal == dict_refusal and f"history message {i} differs" in text_refusal


def test_two_messages_swapped_are_refused_as_from_a_dict(long_snapshot: dict[str, Any]) -> None:
    snap = copy.deepcopy(long_snapshot)
    history = snap["history"]
    history[70], history[74] = history[74], history[70]
    text_refusal = _refused(lambda c: c.restore(json.dumps(snap), allow_unsigned=True), UsageError)
    dict_refusal = _refused(
        lambda c: c.restore(copy.deepcopy(snap), allow_unsigned=True), UsageError
    )
    assert text_refusal == dict_refusal and "history message 70 differs" in text_refusal


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ('{"version": 5,', "snapshot text is not JSON: "),
        ('{"version": NaN}', "snapshot text is not JSON: NaN is not JSON"),
        ('{"version": 1e999}', "snapshot text is not JSON: 1e999 is past what a float holds"),
        (b"\xff\xfe\x00{", "snapshot text is not JSON: "),
        ("[]", "snapshot"),
        ("", "snapshot text is not JSON: "),
    ],
)
def test_text_that_is_not_a_snapshot_is_refused(given: Any, words: str) -> None:
    message = _refused(lambda c: c.restore(given, allow_unsigned=True), UsageError)
    assert (words in message and "nothing was restored" in message) or words == "snapshot", message


def test_a_signed_snapshot_text_is_lazy_and_its_signature_still_checked() -> None:
    keys = SnapshotKeys({"k1": b"k" * 32}, current="k1")
    chef, fake = long_conversation("openai", rounds=12)
    stored = json.dumps(chef.snapshot(keys=keys, session_id="s"))
    worker = make()
    worker.restore(stored, keys=keys, session_id="s")
    assert lazy_count(worker) >= len(chef.history) - 2  # all but what no ledger consumed
    assert worker.history == chef.history
    # its keys reordered by a store (the signature checks values): no block holds, so
    # nothing is lazy, and what the session writes next is its own, read back unsigned
    resorted = json.dumps(json.loads(stored), sort_keys=True)
    moved = make()
    moved.restore(resorted, keys=keys, session_id="s")
    assert lazy_count(moved) == 0
    fake.script(text("Fine.", reasoning="ok"), text("Done."))
    for turn in range(2):
        _answer((moved,), send("openai", fake, compiled(moved, "openai").payload), turn)
    assert fake.violations == ()
    again = make()
    again.restore(json.dumps(moved.snapshot()), allow_unsigned=True)
    assert again.history == moved.history
    edited = json.loads(stored)
    edited["history"][3]["parts"][0]["text"] = "not what was said"
    refusal = _refused(
        lambda c: c.restore(json.dumps(edited), keys=keys, session_id="s"), SnapshotSignatureError
    )
    assert "signature" in refusal


def test_the_callers_dict_is_never_kept(long_snapshot: dict[str, Any]) -> None:
    snap = copy.deepcopy(long_snapshot)
    worker = make()
    worker.restore(snap, allow_unsigned=True)
    assert lazy_count(worker) == 0
    want = worker.history
    for form in snap["history"]:
        form["parts"].clear()
    assert worker.history == want


def test_a_sync_turn_keeps_its_stores_messages_lazy(tmp_path: Any) -> None:
    chef, fake = long_conversation("anthropic")
    store = SQLiteSessionStore(tmp_path / "s.db")
    SessionSync(store, "s").save(chef)
    sync, worker = SessionSync(store, "s"), make()
    assert sync.load_into(worker)
    assert lazy_count(worker) >= 64
    fake.script(text("Synced.", reasoning="fine"))
    _answer((worker,), send("anthropic", fake, compiled(worker, "anthropic").payload), 0)
    sync.save(worker)
    assert lazy_count(worker) >= 60  # the save shares the stored forms: none rebuilt
    again = make()
    assert SessionSync(store, "s").load_into(again)
    assert again.history == worker.history
    assert compiled(again, "anthropic").to_json() == compiled(worker, "anthropic").to_json()
    assert fake.violations == ()


def test_a_malformed_part_past_the_vouched_blocks_is_refused_at_once() -> None:
    chef, _ = long_conversation("responses", rounds=6)
    chef.append(user("a last word"))  # not consumed by any ledger: not vouched for
    snap = json.loads(json.dumps(chef.snapshot()))
    snap["history"][-1]["parts"][0]["kind"] = "nonsense"
    refusal = _refused(
        lambda c: c.restore(json.dumps(snap), allow_unsigned=True), CorruptHistoryError
    )
    assert refusal.startswith(f"message {len(snap['history']) - 1}: ")


def _ledger(snap: dict[str, Any]) -> dict[str, Any]:
    return snap["ledgers"]["anthropic"]  # type: ignore[no-any-return]


SHAPES = {
    "no marks": lambda s: _ledger(s).update(marks=[], pending=None),
    "no blocks": lambda s: _ledger(s).pop("blocks"),
    "one list of blocks": lambda s: _ledger(s).update(blocks=[_ledger(s)["blocks"][0]]),
    "a message that is a list": lambda s: s["history"].__setitem__(3, ["user", "hi"]),
    "parts that are text": lambda s: s["history"][3].update(parts="hi"),
    "a part that is text": lambda s: s["history"][3]["parts"].__setitem__(0, "hi"),
    "a role of the system": lambda s: s["history"][3].update(role="system"),
    "more shared than consumed": lambda s: _ledger(s).update(shared=10**6),
    "a consumed digest short": lambda s: _ledger(s)["consumed"].pop(),
}


@pytest.mark.parametrize("case", sorted(SHAPES))
def test_a_malformed_snapshot_gets_the_dict_restores_refusal(
    case: str, long_snapshot: dict[str, Any]
) -> None:
    """What `vouched` and `lazy_history` read before the ledgers are checked: no other error."""
    snap = copy.deepcopy(long_snapshot)
    SHAPES[case](snap)
    by_dict = _refused(lambda c: c.restore(copy.deepcopy(snap), allow_unsigned=True), Exception)
    by_text = _refused(lambda c: c.restore(json.dumps(snap), allow_unsigned=True), Exception)
    assert by_text == by_dict
    with pytest.raises(ContextChefError):
        make().restore(json.dumps(snap), allow_unsigned=True)


def test_the_history_a_caller_reads_holds_built_messages() -> None:
    """`chef.history` builds what a restore left lazy: readers of an instance's dict
    (``vars``, orjson's dataclass writer) see each message as one built by hand."""
    orjson = pytest.importorskip("orjson")
    chef, _ = long_conversation("anthropic", rounds=6)
    stored = json.dumps(chef.snapshot())
    by_text, by_dict = make(), make()
    by_text.restore(stored, allow_unsigned=True)
    by_dict.restore(json.loads(stored), allow_unsigned=True)
    assert lazy_count(by_text) > 0
    history = by_text.history
    assert lazy_count(by_text) == 0
    assert all(list(vars(m)) == ["role", "parts"] for m in history)
    assert orjson.dumps(history) == orjson.dumps(by_dict.history) == orjson.dumps(chef.history)


def test_snapshot_text_with_a_byte_order_mark_and_other_inputs() -> None:
    chef, _ = long_conversation("openai", rounds=4)
    stored = json.dumps(chef.snapshot())
    for given in ("\ufeff" + stored, b"\xef\xbb\xbf" + stored.encode(), bytearray(stored.encode())):
        worker = make()
        worker.restore(given, allow_unsigned=True)
        assert worker.history == chef.history
    message = _refused(lambda c: c.restore(memoryview(stored.encode())), UsageError)
    assert "or its JSON text as str or bytes; got memoryview" in message


def test_a_scripted_call_nested_past_pythons_limit_is_a_usage_error() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(UsageError, match="call 0 args is not JSON-serializable"):
        tool_calls(("deep", deep))


def test_a_text_reference_to_a_negative_index_says_what_is_valid() -> None:
    chef, _ = long_conversation("openai", rounds=3)
    snap = json.loads(json.dumps(chef.snapshot()))
    ledger = snap["ledgers"]["openai"]
    refs = [{"at": [0], "message": 0, "path": ["parts", -1, "content"]}]
    ledger["texts"] = [refs] + [[]] * (len(ledger["wire"]) - 1)
    message = _refused(lambda c: c.restore(json.dumps(snap), allow_unsigned=True), UsageError)
    assert "'texts' [0] [0] 'path' [1] must be a key (text) or an index (an integer >= 0)" in (
        message
    )
    assert "got -1" in message
