"""Gemini's own unsigned calls are replayed as they came; the placeholder only where needed.

Gemini 3 and later refuse a ``function_call`` of the current turn without its
``thought_signature``; Gemini 2.5 does not validate signatures, and with thinking off it
returns calls without one (https://ai.google.dev/gemini-api/docs/thought-signatures). A
call Gemini returned unsigned is sent back as it came on such a model: no placeholder, no
change reported (break-it 33 #8). The placeholder ``skip_thought_signature_validator`` is
for calls Gemini did not make (another provider's, a hand-made history) on a model that
validates them. Multi-turn through the official google-genai client against `FakeGemini`.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from contextchef import ContextChef, from_anthropic, user
from contextchef.providers.gemini._render import SKIP_SIGNATURE, GeminiAdapter
from contextchef.testing import FakeGemini, text, tool_calls
from sdk_send import send


def grep(pattern: str) -> str:
    """Search the code."""
    return f"hit for {pattern}"


def _call_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for c in body["contents"] for p in c["parts"] if "functionCall" in p]


def test_geminis_own_unsigned_calls_are_sent_back_as_they_came() -> None:
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_history([user("find a and b")])
    fake = FakeGemini().script(
        tool_calls(("grep", {"pattern": "a"})), tool_calls(("grep", {"pattern": "b"})), text("done")
    )
    requests = []
    for _ in range(3):
        request = chef.compile("gemini", model="gemini-2.5-flash")
        requests.append(request)
        chef.run_tools(chef.ingest(send("gemini", fake, request.payload)))
    assert fake.violations == ()
    assert [r.changes for r in requests] == [(), (), ()]
    last = fake.requests[-1].body
    assert _call_parts(last) == [
        {"functionCall": {"id": "call_0001", "args": {"pattern": "a"}, "name": "grep"}},
        {"functionCall": {"id": "call_0002", "args": {"pattern": "b"}, "name": "grep"}},
    ]
    # append-only: each request starts with the previous one's contents, byte for byte
    bodies = [r.body["contents"] for r in fake.requests]
    for earlier, later in itertools.pairwise(bodies):
        assert later[: len(earlier)] == earlier


def _foreign_history() -> list[dict[str, Any]]:
    """An Anthropic transcript whose last turn is an answered call (the current turn)."""
    return [
        {"role": "user", "content": "find a"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "grep", "input": {"pattern": "a"}}
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]},
    ]


@pytest.mark.parametrize(
    ("model", "signed"),
    [("gemini-2.5-pro", False), ("gemini-3-pro-preview", True), ("gemini-4-argon", True)],
)
def test_a_foreign_call_gets_the_placeholder_only_where_the_model_validates(
    model: str, signed: bool
) -> None:
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_history(from_anthropic(_foreign_history()).messages)
    fake = FakeGemini().script(tool_calls(("grep", {"pattern": "b"})), text("done"))
    first = chef.compile("gemini", model=model)
    kinds = [(c.kind, c.call_id) for c in first.changes]
    assert kinds == ([("signed_foreign_call", "t1")] if signed else [])
    chef.run_tools(chef.ingest(send("gemini", fake, first.payload)))
    second = chef.compile("gemini", model=model)
    # Gemini's own call (unsigned by the fake) follows the same rule; the foreign call
    # already sent keeps the form it was sent in
    assert [(c.kind, c.call_id) for c in second.changes] == (
        [("signed_foreign_call", "call_0001")] if signed else []
    )
    send("gemini", fake, second.payload)
    assert fake.violations == ()
    calls = _call_parts(fake.requests[-1].body)
    expected = SKIP_SIGNATURE if signed else None
    assert [p.get("thoughtSignature") for p in calls] == [expected, expected]
    first_contents = fake.requests[0].body["contents"]
    assert fake.requests[1].body["contents"][: len(first_contents)] == first_contents
    if signed:
        assert "recorded from Gemini unsigned" in second.changes[0].detail
        assert "has no Gemini thought signature" in first.changes[0].detail


@pytest.mark.parametrize(
    ("model", "signed"),
    [
        ("gemini-2.5-flash", False),
        ("gemini-2.0-flash-001", False),
        ("models/gemini-2.5-pro", False),
        ("publishers/google/models/gemini-2.5-flash-lite", False),
        ("gemini-1.5-pro", False),
        ("gemini-3-flash", True),
        ("gemini-3.1-pro-preview", True),
        ("gemini-4-argon", True),
        ("gemini-25-experimental", True),
        ("my-tuned-model", True),  # unknown: assumed to validate (the safe default)
    ],
)
def test_which_models_validate_thought_signatures(model: str, signed: bool) -> None:
    assert GeminiAdapter().model_rules(model).signed_calls is signed
