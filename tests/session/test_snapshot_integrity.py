"""A snapshot's record of what was sent is checked on restore (breakit3 F01, F02).

Each ledger's ``wire`` entries are replayed byte for byte on the next compile. An entry
holding a lone surrogate (what ``json.loads`` makes of ``"\\ud800"``) cannot be encoded for
any request, and an entry changed after the snapshot was taken replays bytes the provider
never saw (on Anthropic's newest models the thinking sent back then refers to another
conversation: a 400). Restore refuses both with a `UsageError` naming the ledger and entry,
and changes nothing, as it refuses a snapshot missing its digests; a good snapshot
restores and its next request is accepted. Requests go through the official SDK clients
to the `contextchef.testing` fakes.
"""

from __future__ import annotations

import copy
import json
import types
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from contextchef import ContextChef, ContextChefError, SnapshotKeys, UsageError, user
from contextchef.testing import FakeAnthropic, FakeResponses, httpx_for, text, tool_calls

MODEL = "claude-opus-5-5"


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: File to read.
    """
    return "content"


def make() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([read_file])
    return chef


def anthropic_client(fake: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )


def responses_client(fake: FakeResponses) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )


FAKE = FakeAnthropic()
"""One fake per provider for the module: the thinking signatures it issued stay valid."""
FAKE_R = FakeResponses()


def conversation() -> dict[str, Any]:
    """A snapshot (through JSON) after a thinking tool loop on Anthropic and a Responses turn."""
    chef = make()
    chef.set_history([user("Start.")])
    fake = FAKE.script(
        tool_calls(("read_file", {"path": "a"}), reasoning="r"), text("ok", reasoning="r")
    )
    client = anthropic_client(fake)
    for _ in range(2):
        request = chef.compile("anthropic", model=MODEL)
        chef.run_tools(chef.ingest(client.messages.create(**request.payload)))
    chef.append(user("more"))
    fake_r = FAKE_R.script(text("fine"))
    chef.ingest(
        responses_client(fake_r).responses.create(
            **chef.compile("responses", model="gpt-5.5").payload
        )
    )
    chef.append(user("and more"))
    snap: dict[str, Any] = json.loads(json.dumps(chef.snapshot()))
    return snap


@pytest.fixture(scope="module")
def snap() -> dict[str, Any]:
    return conversation()


def next_request_is_accepted(chef: ContextChef) -> None:
    fake = FAKE.script(text("again"))
    request = chef.compile("anthropic", model=MODEL)
    anthropic_client(fake).messages.create(**request.payload, extra_headers=request.headers)
    assert fake.violations == ()
    fake_r = FAKE_R.script(text("again"))
    request = chef.compile("responses", model="gpt-5.5")
    responses_client(fake_r).responses.create(**request.payload)
    assert fake_r.violations == ()


def test_a_good_snapshot_restores_and_its_next_requests_are_accepted(snap: dict[str, Any]) -> None:
    assert all(
        len(ledger["wire_digests"]) == len(ledger["wire"]) for ledger in snap["ledgers"].values()
    )
    chef = make()
    chef.restore(copy.deepcopy(snap), allow_unsigned=True)
    next_request_is_accepted(chef)


@pytest.mark.parametrize("field", ["wire_digests", "record_digest"])
def test_a_snapshot_without_its_digests_is_refused(snap: dict[str, Any], field: str) -> None:
    """No released snapshot lacks them: deleting them does not restore an edited snapshot
    unchecked."""
    for target in ("anthropic", "responses"):
        old = copy.deepcopy(snap)
        del old["ledgers"][target][field]
        assert refused(old) == (
            f"snapshot ledger {target!r} field {field!r} is missing (a snapshot has every "
            "field ContextChef.snapshot() writes); nothing was restored"
        )


def wire_strings(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from wire_strings(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from wire_strings(item, (*path, i))
    elif isinstance(value, str):
        yield path


def changed(snap: dict[str, Any], target: str, path: tuple[Any, ...], new: str) -> dict[str, Any]:
    out = copy.deepcopy(snap)
    holder = out["ledgers"][target]["wire"]
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = new
    return out


def refused(snap: dict[str, Any]) -> str:
    """Restore into a session that has compiled already; it must raise and change nothing."""
    chef = make()
    chef.set_history([user("mine")])
    request = chef.compile("anthropic", model=MODEL)
    with pytest.raises(UsageError) as info:
        chef.restore(snap, allow_unsigned=True)
    assert chef.compile("anthropic", model=MODEL).payload == request.payload  # unchanged
    return str(info.value)


@pytest.mark.parametrize("target", ["anthropic", "responses"])
def test_a_lone_surrogate_anywhere_in_the_wire_record_is_refused(
    snap: dict[str, Any], target: str
) -> None:
    paths = list(wire_strings(snap["ledgers"][target]["wire"]))
    assert len(paths) > 5
    for path in paths:
        bad = changed(snap, target, path, "S\ud800")
        message = refused(bad)
        assert message == (
            f"snapshot ledger {target!r} 'wire' entry {path[0]} holds text that is not valid "
            "Unicode (a lone surrogate), which no request can encode; nothing was restored"
        )


def test_a_lone_surrogate_in_a_wire_key_is_refused(snap: dict[str, Any]) -> None:
    bad = copy.deepcopy(snap)
    bad["ledgers"]["anthropic"]["wire"][1]["\udfff"] = 1
    assert "'anthropic' 'wire' entry 1 holds text that is not valid Unicode" in refused(bad)


@pytest.mark.parametrize("target", ["anthropic", "responses"])
def test_an_edited_wire_entry_is_refused_naming_ledger_and_entry(
    snap: dict[str, Any], target: str
) -> None:
    """breakit3 F02: the edited text would have been replayed (a 400 on Anthropic)."""
    paths = list(wire_strings(snap["ledgers"][target]["wire"]))
    for path in paths:
        bad = changed(snap, target, path, "Different")
        assert refused(bad) == (
            f"snapshot ledger {target!r} 'wire' entry {path[0]} differs from what was sent "
            "(its digest does not match); the snapshot was changed after it was taken, and "
            "replaying the entry would break the conversation; nothing was restored"
        )


def test_wire_digests_must_be_one_per_entry(snap: dict[str, Any]) -> None:
    bad = copy.deepcopy(snap)
    bad["ledgers"]["anthropic"]["wire_digests"].pop()
    assert "'anthropic' 'wire'_digests must hold one digest per wire entry" in refused(bad)


def test_no_string_of_a_snapshot_with_a_lone_surrogate_reaches_a_payload(
    snap: dict[str, Any],
) -> None:
    """The whole class: every string a snapshot carries, a lone surrogate put in it in turn.

    Restore (or the compile after it) refuses it with a library error, or the payload it
    reaches encodes as UTF-8 (the string never reaches a request).
    """
    for path in wire_strings(snap):
        bad = copy.deepcopy(snap)
        holder: Any = bad
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = holder[path[-1]] + "\ud800"
        chef = make()
        try:
            chef.restore(bad, allow_unsigned=True)
            for target, model in (("anthropic", MODEL), ("responses", "gpt-5.5")):
                request = chef.compile(target, model=model)
                json.dumps(request.payload, ensure_ascii=False).encode("utf-8")
        except ContextChefError:
            continue


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda ledger: ledger.__setitem__("tools", []),
        lambda ledger: ledger["tools"].append(ledger["tools"][-1]),
        lambda ledger: ledger.pop("bindings", None) or ledger.__setitem__("bindings", {"a": "b"}),
        lambda ledger: ledger.__setitem__("system", "another system prompt"),
        # breakit8 03: a ledger marked rebased re-sent the conversation without its thinking
        lambda ledger: ledger.__setitem__("rebased", not ledger["rebased"]),
    ],
    ids=["tools emptied", "tool duplicated", "bindings replaced", "system changed", "rebased"],
)
def test_a_changed_ledger_record_is_refused(snap: dict[str, Any], corrupt: Any) -> None:
    """Fresh-user reports (breakit4 02, 06): the ledger's ``tools`` and ``bindings`` were not
    checked like its ``wire`` entries; an emptied or duplicated ``tools`` restored, then the
    next request was a 400. The record digest covers them now."""
    bad = copy.deepcopy(snap)
    corrupt(bad["ledgers"]["anthropic"])
    fresh = make()
    before = fresh.snapshot()
    with pytest.raises(UsageError, match="the record digest does not match"):
        fresh.restore(bad, allow_unsigned=True)
    assert fresh.snapshot() == before
    unchecked = copy.deepcopy(bad)  # deleting the record digest does not get it through
    del unchecked["ledgers"]["anthropic"]["record_digest"]
    with pytest.raises(UsageError, match="'record_digest' is missing"):
        fresh.restore(unchecked, allow_unsigned=True)
    assert fresh.snapshot() == before


@pytest.mark.parametrize("bad", [True, -1, [], [None], "step"])
def test_a_replay_hint_of_the_wrong_shape_is_refused_at_restore(bad: Any) -> None:
    """Break-it round 6: an unsigned snapshot whose Interactions thought step was turned
    into a boolean (or a number, list, string) was restored, then every compile raised
    AttributeError. Restore refuses it, naming the message and the hint key."""
    from google import genai
    from google.genai import types

    from contextchef.testing import FakeGeminiInteractions

    def grep(pattern: str) -> str:
        """Search.

        Args:
            pattern: What to find.
        """
        return "hit"

    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_history([user("go")])
    fake = FakeGeminiInteractions().script(tool_calls(("grep", {"pattern": "x"}), reasoning="r"))
    http = types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai)))
    client = genai.Client(api_key="x", http_options=http)
    request = chef.compile("gemini-interactions", model="gemini-4-argon")
    chef.run_tools(chef.ingest(client.interactions.create(**request.payload)))
    snapshot = chef.snapshot()
    parts = [p for m in snapshot["history"] for p in m["parts"]]
    hinted = next(p for p in parts if "step" in (p.get("provider_data") or {}))
    hinted["provider_data"]["step"] = bad
    restored = ContextChef()
    restored.register_tools([grep])
    with pytest.raises(ContextChefError, match=r"message 1: .*\['step'\] must be an object"):
        restored.restore(snapshot, allow_unsigned=True)


def test_a_ledger_entry_nested_past_the_recursion_limit_is_refused(
    snap: dict[str, Any],
) -> None:
    """breakit8 02: a RecursionError escaped restore; it is a UsageError, nothing restored."""
    deep: Any = "x"
    for _ in range(5000):
        deep = {"a": deep}
    bad = copy.deepcopy(snap)
    bad["ledgers"]["anthropic"]["wire"][0] = deep
    assert "snapshot ledger 'anthropic' field 'wire' is nested too deep" in refused(bad)


@pytest.mark.parametrize("depth", [600, 5000])
def test_a_deep_dynamic_state_is_named_when_refused(snap: dict[str, Any], depth: int) -> None:
    """Break-it round 31: a ``dynamic_state`` nested ~600 deep was refused as "a ledger
    field"; the refusal names the field that nests past what a restore can walk."""
    deep: Any = 1
    for _ in range(depth):
        deep = {"k": deep}
    bad = copy.deepcopy(snap)
    bad["dynamic_state"] = deep
    said = refused(bad)
    assert "snapshot field 'dynamic_state'" in said and "nested too deep" in said, said
    if depth < 1000:  # JSON writes it: a signed one is then an edit (signature mismatch)
        return
    keys = SnapshotKeys({"k": b"k" * 32})  # signed (break-it 34 #7): named too
    chef = make()
    chef.set_history([user("hi")])
    chef.compile("anthropic", model=MODEL)
    signed = chef.snapshot(keys=keys)
    signed["dynamic_state"] = deep
    with pytest.raises(UsageError, match=r"snapshot field 'dynamic_state': it is nested too deep"):
        make().restore(signed, keys=keys)


@pytest.mark.parametrize("version", [True, 2.0, 3.0, "3", None])
def test_a_version_that_is_not_an_integer_is_refused(snap: dict[str, Any], version: Any) -> None:
    """breakit8 04: ``True`` and ``2.0`` read as versions 1 and 2 (they compare equal)."""
    bad = {**snap, "version": version}
    fresh = make()
    with pytest.raises(ContextChefError, match=r"'version' is .* not a version"):
        fresh.restore(bad, allow_unsigned=True)


def test_a_snapshot_given_as_any_mapping_restores(snap: dict[str, Any]) -> None:
    """Break-it round 34 (#2): `restore` takes any Mapping (as typed); a mappingproxy of a
    real snapshot raised a bare IndexError from the form check's message."""
    chef = make()
    chef.restore(types.MappingProxyType(copy.deepcopy(snap)), allow_unsigned=True)
    assert chef.snapshot() == make_restored(snap).snapshot()
    with pytest.raises(UsageError, match="not a contextchef snapshot"):
        make().restore(types.MappingProxyType({}), allow_unsigned=True)


def make_restored(snap: dict[str, Any]) -> ContextChef:
    chef = make()
    chef.restore(copy.deepcopy(snap), allow_unsigned=True)
    return chef
