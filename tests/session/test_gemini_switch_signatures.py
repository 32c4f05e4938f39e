"""A session that moves mid-turn from Gemini 2.5 to Gemini 3 sends the turn's calls signed.

Gemini 2.5 does not validate thought signatures, and with thinking off returns its calls
without one; the library sends them back as they came. Gemini 3 validates the signature
of every step of the current turn (the model's steps since the last user text) and
answers 400 for a function call step without one ("Function call is missing a
thought_signature in functionCall parts",
https://ai.google.dev/gemini-api/docs/thought-signatures). After a switch in the middle of
a turn, the steps of that turn already sent unsigned must go out with the placeholder the
docs give for calls the model did not make (``skip_thought_signature_validator``): an edit
of messages already sent, made only because the model would refuse the request
otherwise, and reported (a ``model`` edit, ``signed_foreign_call`` changes). A turn that
is over is not validated: no edit. A tools change on 2.5 keeps the messages sent (the
check of what the tools change touches reads the model's rules). Every request goes
through the google-genai client to `FakeGemini`.
"""

from __future__ import annotations

import itertools
from typing import Any

from contextchef import ContextChef, InMemoryStore, user
from contextchef.providers.gemini._render import SKIP_SIGNATURE
from contextchef.testing import FakeGemini, text, tool_calls
from sdk_send import send

OLD, NEW = "gemini-2.5-flash", "gemini-3-pro-preview"


def grep(pattern: str) -> str:
    """Search the code."""
    return f"hit for {pattern}"


def find(name: str) -> str:
    """Find a file by name."""
    return f"found {name}"


def signatures(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """(call id, thoughtSignature) of every function call part sent."""
    return [
        (p["functionCall"]["id"], p.get("thoughtSignature"))
        for c in body["contents"]
        for p in c["parts"]
        if "functionCall" in p
    ]


def _session(*replies: Any) -> tuple[ContextChef, FakeGemini]:
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_history([user("find a, then b")])
    return chef, FakeGemini().script(*replies)


def _turn(chef: ContextChef, fake: FakeGemini, model: str) -> Any:
    request = chef.compile("gemini", model=model)
    chef.run_tools(chef.ingest(send("gemini", fake, request.payload)))
    return request


def test_a_switch_mid_turn_signs_the_steps_of_the_turn_already_sent() -> None:
    chef, fake = _session(
        tool_calls(("grep", {"pattern": "a"})),
        tool_calls(("grep", {"pattern": "b"})),
        tool_calls(("grep", {"pattern": "c"})),
        text("done"),
    )
    first, second = _turn(chef, fake, OLD), _turn(chef, fake, OLD)
    assert first.changes == second.changes == () and first.edits == second.edits == ()
    assert signatures(fake.requests[1].body) == [("call_0001", None)]
    third = _turn(chef, fake, NEW)
    assert [(c.kind, c.call_id, c.index) for c in third.changes] == [
        ("signed_foreign_call", "call_0001", 1),
        ("signed_foreign_call", "call_0002", 3),
    ]
    (edit,) = third.edits
    assert (edit.kind, edit.history_index, edit.wire_index) == ("model", 1, 1)
    assert edit.detail.startswith(
        f"model {NEW!r} takes no function calls in the current turn without a thought "
        "signature, and requests before carried them (history message 1)"
    )
    body = fake.requests[2].body
    assert signatures(body) == [("call_0001", SKIP_SIGNATURE), ("call_0002", SKIP_SIGNATURE)]
    assert body["contents"][:1] == fake.requests[1].body["contents"][:1]  # only the turn's steps
    assert body["contents"][1] != fake.requests[1].body["contents"][1]
    # from here on append-only again: the fake's own call comes back unsigned and is signed
    # as it is first sent; nothing sent is edited
    fourth = _turn(chef, fake, NEW)
    assert fourth.edits == ()
    assert [(c.kind, c.call_id) for c in fourth.changes] == [("signed_foreign_call", "call_0003")]
    later = fake.requests[3].body["contents"]
    assert later[: len(body["contents"])] == body["contents"]
    assert fake.violations == ()


def test_a_switch_after_the_turn_ended_edits_nothing() -> None:
    """An earlier turn is not validated: its unsigned steps go as they were sent."""
    chef, fake = _session(tool_calls(("grep", {"pattern": "a"})), text("A."), text("B."))
    _turn(chef, fake, OLD)
    _turn(chef, fake, OLD)
    chef.append(user("and b?"))
    request = _turn(chef, fake, NEW)
    assert request.edits == () and request.changes == ()
    assert signatures(fake.requests[2].body) == [("call_0001", None)]
    bodies = [r.body["contents"] for r in fake.requests]
    for earlier, later in itertools.pairwise(bodies):
        assert later[: len(earlier)] == earlier
    assert fake.violations == ()


def test_a_tools_change_on_2_5_keeps_the_unsigned_steps_sent() -> None:
    """The check of what a tools change touches reads 2.5's rules: nothing to sign."""
    chef, fake = _session(
        tool_calls(("grep", {"pattern": "a"})), tool_calls(("grep", {"pattern": "b"})), text("ok")
    )
    _turn(chef, fake, OLD)
    _turn(chef, fake, OLD)
    chef.register_tools([find])
    request = _turn(chef, fake, OLD)
    assert request.changes == ()
    (edit,) = request.edits
    assert edit.kind == "tools"
    assert "the messages already sent are kept" in edit.detail
    assert signatures(fake.requests[2].body) == [("call_0001", None), ("call_0002", None)]
    sent = fake.requests[1].body["contents"]
    assert fake.requests[2].body["contents"][: len(sent)] == sent
    assert fake.violations == ()


def test_the_sessions_own_memory_call_is_signed_on_every_model_and_never_edited() -> None:
    """`injected_call` gives the placeholder whatever the model (kept on purpose).

    Gemini 1.x / 2.x do not validate signatures, so the placeholder costs nothing there,
    and the call is the session's, never the model's: on a switch to Gemini 3 within the
    turn it is already valid, and only the model's own unsigned step is edited.
    """
    chef = ContextChef(memory=InMemoryStore({"a": "1"}))
    chef.register_tools([grep])
    chef.set_history([user("find a")])
    fake = FakeGemini().script(
        tool_calls(("grep", {"pattern": "a"})), tool_calls(("grep", {"pattern": "b"})), text("ok")
    )
    _turn(chef, fake, OLD)
    _turn(chef, fake, OLD)
    memory = ("contextchef_memories_0001", SKIP_SIGNATURE)
    assert signatures(fake.requests[1].body) == [memory, ("call_0001", None)]
    switched = _turn(chef, fake, NEW)
    assert [(c.kind, c.call_id) for c in switched.changes] == [
        ("signed_foreign_call", "call_0001"),
        ("signed_foreign_call", "call_0002"),
    ]
    (edit,) = switched.edits
    body = fake.requests[2].body["contents"]
    assert edit.wire_index == 3  # after the memory exchange, which is sent as it was
    assert body[:3] == fake.requests[1].body["contents"][:3]
    assert signatures(fake.requests[2].body) == [
        memory,
        ("call_0001", SKIP_SIGNATURE),
        ("call_0002", SKIP_SIGNATURE),
    ]
    assert fake.violations == ()


def test_the_unsigned_step_found_cold_is_the_one_a_whole_read_finds() -> None:
    # a cold memo (a restore) reads from the last user turn back only: the same answer
    from hypothesis import given
    from hypothesis import strategies as st

    from contextchef.providers.gemini._signatures import unsigned_sent_step

    user_text = {"role": "user", "parts": [{"text": "go"}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}
    unsigned = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}
    signed = {"role": "model", "parts": [{"functionCall": {"name": "f"}, "thoughtSignature": "s"}]}
    said = {"role": "model", "parts": [{"text": "done"}]}

    def whole(entries: list[dict[str, Any]]) -> int | None:
        found = None
        for i, entry in enumerate(entries):
            if entry is user_text:
                found = None
            elif found is None and entry is unsigned:
                found = i
        return found

    @given(st.lists(st.sampled_from([user_text, answer, unsigned, signed, said]), max_size=30))
    def check(entries: list[dict[str, Any]]) -> None:
        assert unsigned_sent_step(entries, {}) == whole(entries)
        memo: dict[Any, Any] = {}
        for n in range(len(entries) + 1):  # read a turn at a time, as compiles do
            assert unsigned_sent_step(entries[:n], memo) == whole(entries[:n])

    check()


def test_a_tools_change_with_the_switch_resends_from_the_first_unsigned_step_only() -> None:
    """A tools change and a switch to Gemini 3 mid-turn: the turn's steps, not entry 0.

    The new ``tools`` name no tool the messages sent refer to, so they are kept (a
    ``tools`` rebase); only the unsigned steps Gemini 3 refuses are sent again, signed.
    Placeholders are no reference to a tool: they do not make the sent messages stale.
    """
    chef, fake = _session(
        tool_calls(("grep", {"pattern": "a"})),
        tool_calls(("grep", {"pattern": "b"})),
        text("done"),
    )
    _turn(chef, fake, OLD)
    _turn(chef, fake, OLD)
    chef.register_tools([find])
    request = _turn(chef, fake, NEW)
    assert [(c.kind, c.call_id, c.index) for c in request.changes] == [
        ("signed_foreign_call", "call_0001", 1),
        ("signed_foreign_call", "call_0002", 3),
    ]
    assert sorted((e.kind, e.history_index, e.wire_index) for e in request.edits) == [
        ("model", 1, 1),
        ("tools", 0, 0),
    ]
    (tools_edit,) = [e for e in request.edits if e.kind == "tools"]
    assert "the messages already sent are kept" in tools_edit.detail
    before, body = fake.requests[1].body, fake.requests[2].body
    names = [d["name"] for d in body["tools"][0]["functionDeclarations"]]
    assert names == ["find", "grep"]
    assert body["contents"][0] == before["contents"][0]  # the user's text: byte-identical
    assert body["contents"][2] == before["contents"][2]  # the result answering call_0001
    assert signatures(body) == [("call_0001", SKIP_SIGNATURE), ("call_0002", SKIP_SIGNATURE)]
    unsigned = {k: v for k, v in body["contents"][1]["parts"][0].items() if k != "thoughtSignature"}
    assert unsigned == before["contents"][1]["parts"][0]  # the call itself as sent, now signed
    assert fake.violations == ()
