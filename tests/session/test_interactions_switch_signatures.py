"""Gemini 3's thought-signature rule on the Interactions wire, as on generateContent.

The rule is the model's: "When using Gemini 3 models, you must pass back thought
signatures during function calling, or you will get a validation error"; only the
current turn (the model's steps since the last user input) is validated, and Gemini
1.x / 2.x validate none (https://ai.google.dev/gemini-api/docs/thought-signatures). On
Interactions the signature is a ``thought`` step's ("Always present",
https://ai.google.dev/gemini-api/docs/interactions/thinking). An answer sent unsigned
(Gemini 2.5 with thinking off returns calls without a thought step) is refused once the
session moves mid-turn to Gemini 3: the turn's answers already sent go again, each with a
``thought`` step holding the placeholder Google documents for calls the model did not
make, reported as ``signed_foreign_call`` changes and a ``model`` edit; everything before
them is sent byte-identical. `FakeGeminiInteractions` enforces the rule
(``interactions_calls_signed``); every request goes through the google-genai client.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from google.genai import _interactions_errors

from contextchef import ContextChef, user
from contextchef.providers.gemini._signatures import SKIP_SIGNATURE
from contextchef.testing import FakeGeminiInteractions, text, tool_calls
from sdk_send import send

TARGET = "gemini-interactions"
OLD, NEW = "gemini-2.5-flash", "gemini-3-pro-preview"
PLACEHOLDER = {"type": "thought", "signature": SKIP_SIGNATURE}


def grep(pattern: str) -> str:
    """Search the code."""
    return f"hit for {pattern}"


def find(name: str) -> str:
    """Find a file by name."""
    return f"found {name}"


def kinds(body: dict[str, Any]) -> list[str]:
    return [step["type"] for step in body["input"]]


def _session(*replies: Any) -> tuple[ContextChef, FakeGeminiInteractions]:
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_history([user("find a, then b")])
    return chef, FakeGeminiInteractions().script(*replies)


def _turn(chef: ContextChef, fake: FakeGeminiInteractions, model: str, **extra: Any) -> Any:
    request = chef.compile(TARGET, model=model, extra=extra)
    chef.run_tools(chef.ingest(send(TARGET, fake, request.payload)))
    return request


def test_a_switch_mid_turn_sends_the_turns_answers_again_signed() -> None:
    chef, fake = _session(
        tool_calls(("grep", {"pattern": "a"})),
        tool_calls(("grep", {"pattern": "b"})),
        tool_calls(("grep", {"pattern": "c"})),
        text("done"),
    )
    first, second = _turn(chef, fake, OLD), _turn(chef, fake, OLD)
    assert first.changes == second.changes == () and first.edits == second.edits == ()
    before = fake.requests[1].body
    assert kinds(before) == ["user_input", "function_call", "function_result"]  # 2.5: unsigned
    third = _turn(chef, fake, NEW)
    assert [(c.kind, c.call_id, c.index) for c in third.changes] == [
        ("signed_foreign_call", "call_0001", 1),
        ("signed_foreign_call", "call_0002", 3),
    ]
    assert third.changes[0].detail == (
        f"message 1: call 'call_0001' was recorded from Gemini unsigned, model {NEW!r} needs "
        f"signed calls; sent with {SKIP_SIGNATURE!r}"
    )
    (edit,) = third.edits
    assert (edit.kind, edit.history_index, edit.wire_index) == ("model", 1, 1)
    assert edit.detail.startswith(
        f"model {NEW!r} takes no function calls in the current turn without a thought "
        "signature, and requests before carried them (history message 1)"
    )
    body = fake.requests[2].body
    assert body["input"][0] == before["input"][0]  # the user's text: byte-identical
    assert body["input"][1] == PLACEHOLDER
    assert body["input"][2] == before["input"][1]  # the call itself as it was sent
    assert body["input"][3] == before["input"][2]  # and its result
    assert body["input"][4] == PLACEHOLDER
    assert kinds(body)[5:] == ["function_call", "function_result"]
    # Gemini 3 signs its own answer (a thought step): from here on append-only again
    fourth = _turn(chef, fake, NEW)
    assert fourth.edits == () and fourth.changes == ()
    later = fake.requests[3].body["input"]
    assert later[: len(body["input"])] == body["input"]
    assert later[len(body["input"])]["type"] == "thought"
    assert later[len(body["input"])]["signature"] != SKIP_SIGNATURE
    assert fake.violations == ()


def test_a_switch_after_the_turn_ended_edits_nothing() -> None:
    """An earlier turn is not validated: its unsigned answers go as they were sent."""
    chef, fake = _session(tool_calls(("grep", {"pattern": "a"})), text("A."), text("B."))
    _turn(chef, fake, OLD)
    _turn(chef, fake, OLD)
    chef.append(user("and b?"))
    request = _turn(chef, fake, NEW)
    assert request.edits == () and request.changes == ()
    assert "thought" not in kinds(fake.requests[2].body)
    bodies = [r.body["input"] for r in fake.requests]
    for earlier, later in itertools.pairwise(bodies):
        assert later[: len(earlier)] == earlier
    assert fake.violations == ()


def test_a_stored_chain_switched_mid_turn_is_sent_whole_and_signed() -> None:
    """The server holds the unsigned answers; the request carries them again, signed."""
    chef, fake = _session(
        tool_calls(("grep", {"pattern": "a"})), tool_calls(("grep", {"pattern": "b"})), text("ok")
    )
    _turn(chef, fake, OLD, store=True)
    _turn(chef, fake, OLD, store=True)
    assert "previous_interaction_id" in fake.requests[1].body  # chained while on 2.5
    request = _turn(chef, fake, NEW, store=True)
    assert [c.call_id for c in request.changes] == ["call_0001", "call_0002"]
    body = fake.requests[2].body
    assert "previous_interaction_id" not in body  # the answers the chain holds are edited
    assert kinds(body) == [
        "user_input",
        *["thought", "function_call", "function_result"] * 2,
    ]
    assert body["input"][1] == body["input"][4] == PLACEHOLDER
    assert fake.violations == ()


def test_a_tools_change_with_the_switch_resends_from_the_first_unsigned_answer() -> None:
    """New tools that no message sent refers to keep those messages (a ``tools`` rebase)."""
    chef, fake = _session(
        tool_calls(("grep", {"pattern": "a"})), tool_calls(("grep", {"pattern": "b"})), text("ok")
    )
    _turn(chef, fake, OLD)
    _turn(chef, fake, OLD)
    chef.register_tools([find])
    request = _turn(chef, fake, NEW)
    assert sorted((e.kind, e.history_index, e.wire_index) for e in request.edits) == [
        ("model", 1, 1),
        ("tools", 0, 0),
    ]
    before, body = fake.requests[1].body, fake.requests[2].body
    assert [t["name"] for t in body["tools"]] == ["find", "grep"]
    assert body["input"][0] == before["input"][0]
    assert body["input"][1] == PLACEHOLDER
    assert body["input"][2:4] == before["input"][1:3]
    assert fake.violations == ()


def test_on_2_5_nothing_is_signed() -> None:
    """Gemini 2.5 does not validate signatures: its own calls go as they came."""
    chef, fake = _session(
        tool_calls(("grep", {"pattern": "a"})), tool_calls(("grep", {"pattern": "b"})), text("ok")
    )
    for _ in range(3):
        request = _turn(chef, fake, OLD)
        assert request.changes == () and request.edits == ()
    assert "thought" not in kinds(fake.requests[2].body)
    assert fake.violations == ()


def test_the_fake_refuses_an_unsigned_call_of_the_current_turn_on_gemini_3() -> None:
    from google import genai
    from google.genai import types

    from sdk_send import HX

    fake = FakeGeminiInteractions().script(text("ok"), text("ok"), text("ok"), text("ok"))
    http = types.HttpOptions(httpx_client=fake.http_client(HX))
    create = genai.Client(api_key="x", http_options=http).interactions.create
    go = {"type": "user_input", "content": [{"type": "text", "text": "go"}]}
    call = {"type": "function_call", "id": "c1", "name": "grep", "arguments": {}}
    result = {"type": "function_result", "call_id": "c1", "name": "grep", "result": "hit"}
    with pytest.raises(_interactions_errors.BadRequestError, match="interactions_calls_signed"):
        create(model=NEW, input=[go, call, result], store=False)
    create(model=OLD, input=[go, call, result], store=False)  # 2.5 does not validate
    create(model=NEW, input=[go, PLACEHOLDER, call, result], store=False)
    create(model=NEW, input=[go, call, result, go], store=False)  # an earlier turn
    assert [(v.request_index, v.rule) for v in fake.violations] == [
        (0, "interactions_calls_signed")
    ]
    assert "function_call 'c1' is in the current turn without a thought signature" in (
        fake.violations[0].message
    )


def test_the_unsigned_answer_found_cold_is_the_one_a_whole_read_finds() -> None:
    # read an answer at a time, or cold (a restore): the same first unsigned answer
    from hypothesis import given
    from hypothesis import strategies as st

    from contextchef.providers.gemini._signatures import unsigned_sent_step
    from contextchef.providers.gemini_interactions._signatures import STEPS

    go = {"type": "user_input", "content": [{"type": "text", "text": "go"}]}
    said = {"type": "model_output", "content": [{"type": "text", "text": "x"}]}
    thought = {"type": "thought", "signature": "c2ln"}
    call = {"type": "function_call", "id": "c", "name": "f", "arguments": {}}
    result = {"type": "function_result", "call_id": "c", "result": "r"}

    def whole(entries: list[dict[str, Any]]) -> int | None:
        found, start, calls, signs = None, None, False, False
        for i, entry in enumerate([*entries, result]):
            if entry in (go, result):
                if start is not None and calls and not signs and found is None:
                    found = start
                start, calls, signs = None, False, False
                if entry is go and i < len(entries):
                    found = None
                continue
            start = i if start is None else start
            calls, signs = calls or entry is call, signs or entry is thought
        return found

    @given(st.lists(st.sampled_from([go, said, thought, call, result]), max_size=30))
    def check(entries: list[dict[str, Any]]) -> None:
        assert unsigned_sent_step(entries, {}, STEPS) == whole(entries)
        memo: dict[Any, Any] = {}
        for n in range(len(entries) + 1):
            assert unsigned_sent_step(entries[:n], memo, STEPS) == whole(entries[:n])

    check()


def test_the_sessions_own_memory_call_is_signed_on_every_model_and_never_edited() -> None:
    """`injected_call` gives the placeholder thought step whatever the model.

    The call is the session's, never the model's: on a switch to Gemini 3 within the turn
    it is already valid, and only the model's own unsigned answer is edited.
    """
    from contextchef import InMemoryStore

    chef = ContextChef(memory=InMemoryStore({"a": "1"}))
    chef.register_tools([grep])
    chef.set_history([user("find a")])
    fake = FakeGeminiInteractions().script(
        tool_calls(("grep", {"pattern": "a"})), tool_calls(("grep", {"pattern": "b"})), text("ok")
    )
    _turn(chef, fake, OLD)
    _turn(chef, fake, OLD)
    sent = fake.requests[1].body["input"]
    assert kinds(fake.requests[1].body) == [
        "user_input",
        "thought",
        "function_call",
        "function_result",
        "function_call",
        "function_result",
    ]
    assert sent[1] == PLACEHOLDER and sent[2]["id"] == "contextchef_memories_0001"
    switched = _turn(chef, fake, NEW)
    assert [(c.kind, c.call_id) for c in switched.changes] == [
        ("signed_foreign_call", "call_0001"),
        ("signed_foreign_call", "call_0002"),
    ]
    (edit,) = switched.edits
    body = fake.requests[2].body["input"]
    assert edit.wire_index == 4  # after the memory exchange, which is sent as it was
    assert body[:4] == sent[:4]
    assert body[4] == PLACEHOLDER and body[5] == sent[4]
    assert fake.violations == ()
