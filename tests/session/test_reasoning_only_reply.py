"""A Responses reply that is only reasoning (break-it round 28, finding 3).

A reply cut at ``max_output_tokens`` while the model was reasoning (``status:
"incomplete"``) holds one ``reasoning`` item. Replayed before the next user message it is
a reasoning item with no following item of its turn, which OpenAI refuses ("Item 'rs_…'
of type 'reasoning' was provided without its required following item.",
continuedev/continue#8933, vercel/ai#7099, mastra-ai/mastra#14048). The item is now left
out of what is sent (``dropped_thinking``), as is reasoning whose output the host
removed; the stored history keeps it, and every
request starts with the one before it (append-only). `FakeResponses` refuses such a
request (`responses_reasoning_followed`). Multi-turn through the openai SDK's Responses
client against the fake.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from contextchef import ContextChef, ReasoningPart, TextPart, user
from contextchef.testing import FakeProvider, fake_for, raw, text, tool_calls
from contextchef.testing._replies import response_body
from sdk_send import send

MODEL = "gpt-5.5"
EXTRA = {"include": ["reasoning.encrypted_content"], "store": False}


def grep(pattern: str) -> str:
    """Search the code base.

    Args:
        pattern: A regular expression.
    """
    return f"src/app.py:12: {pattern}"


def _cut_while_reasoning(n: int) -> Any:
    """A reply cut at ``max_output_tokens`` holding only a reasoning item."""
    item = {"type": "reasoning", "id": f"rs_cut{n}", "summary": [], "encrypted_content": "e"}
    body = response_body([item], model=MODEL, response_id=f"resp_cut{n}")
    body["status"] = "incomplete"
    body["incomplete_details"] = {"reason": "max_output_tokens"}
    return raw(body)


class _Loop:
    """Compile, send through the SDK, ingest, run the calls; each request's input kept."""

    def __init__(self, fake: FakeProvider) -> None:
        self.fake = fake
        self.chef = ContextChef()
        self.chef.register_tools([grep])
        self.chef.set_system_prompt("You are a careful engineering agent.")
        self.inputs: list[list[dict[str, Any]]] = []
        self.changes: list[list[str]] = []

    def turn(self) -> None:
        request = self.chef.compile("responses", model=MODEL, extra=EXTRA)
        self.inputs.append(request.payload["input"])
        self.changes.append([c.kind for c in request.changes])
        calls = self.chef.ingest(send("responses", self.fake, request.payload))
        if calls:
            self.chef.run_tools(calls)

    def reasoning_ids(self, k: int) -> list[object]:
        return [e.get("id") for e in self.inputs[k] if e.get("type") == "reasoning"]


def _append_only(inputs: list[list[dict[str, Any]]]) -> None:
    for before, after in itertools.pairwise(inputs):
        assert after[: len(before)] == before


def test_a_reply_cut_while_reasoning_is_left_out_and_the_loop_goes_on() -> None:
    fake = fake_for("responses").script(
        _cut_while_reasoning(1),
        text("Here is the plan.", reasoning="plan"),
        tool_calls(("grep", {"pattern": "gift"}), reasoning="look"),
        text("Found it."),
    )
    loop = _Loop(fake)
    loop.chef.append(user("Where are gift cards handled?"))
    loop.turn()
    assert [n.kind for n in loop.chef.notices] == ["incomplete"]
    [cut] = loop.chef.history[1].parts
    assert isinstance(cut, ReasoningPart)  # stored as it came
    loop.chef.append(user("please continue"))
    for _ in range(3):
        loop.turn()
        if loop.chef.history[-1].role == "assistant":
            loop.chef.append(user("and then?"))
    assert fake.violations == ()
    assert "dropped_thinking" in loop.changes[1]
    assert loop.reasoning_ids(1) == []
    assert [e.get("content") for e in loop.inputs[1]] == [
        "Where are gift cards handled?",
        "please continue",
    ]
    assert "rs_cut1" not in {i for k in range(len(loop.inputs)) for i in loop.reasoning_ids(k)}
    assert len(loop.reasoning_ids(3)) == 2  # the whole turns' reasoning is sent back
    assert isinstance(loop.chef.history[1].parts[0], ReasoningPart)  # history unchanged
    _append_only(loop.inputs)


def test_a_reasoning_only_reply_in_a_long_conversation() -> None:
    replies: list[Any] = []
    for n in range(6):
        replies += [
            tool_calls(("grep", {"pattern": f"p{n}"}), reasoning=f"r{n}"),
            text(f"answer {n}", reasoning=f"s{n}"),
        ]
    replies[5:5] = [_cut_while_reasoning(1)]
    replies[9:9] = [_cut_while_reasoning(2)]
    fake = fake_for("responses").script(*replies)
    loop = _Loop(fake)
    for n in range(len(replies)):
        if loop.chef.history == () or loop.chef.history[-1].role == "assistant":
            loop.chef.append(user("please continue" if n in (6, 10) else f"question {n}"))
        loop.turn()
    assert fake.violations == ()
    sent = {i for k in range(len(loop.inputs)) for i in loop.reasoning_ids(k)}
    assert not {"rs_cut1", "rs_cut2"} & sent
    assert sum("dropped_thinking" in c for c in loop.changes) == 2
    cut = [m for m in loop.chef.history if all(isinstance(p, ReasoningPart) for p in m.parts)]
    assert len(cut) == 2  # both stored as they came
    final = loop.inputs[-1]
    assert sum(e.get("type") == "reasoning" for e in final) == 11  # every other turn's
    assert any(isinstance(p, TextPart) for p in loop.chef.history[-1].parts)
    _append_only(loop.inputs)


def test_compiling_right_after_the_cut_sends_no_lone_reasoning() -> None:
    fake = fake_for("responses").script(_cut_while_reasoning(1), text("Done.", reasoning="r"))
    loop = _Loop(fake)
    loop.chef.append(user("Go."))
    loop.turn()
    loop.turn()  # the host asks again without a new message
    assert fake.violations == ()
    assert loop.reasoning_ids(1) == []
    assert "dropped_thinking" in loop.changes[1]
    _append_only(loop.inputs)


def test_a_turn_whose_output_the_host_removed_sends_no_lone_reasoning() -> None:
    fake = fake_for("responses").script(
        text("First answer.", reasoning="r1"), text("Second answer.", reasoning="r2")
    )
    loop = _Loop(fake)
    loop.chef.append(user("Go."))
    loop.turn()
    first, reply = loop.chef.history
    kept = tuple(p for p in reply.parts if isinstance(p, ReasoningPart))
    loop.chef.set_history([first, replace(reply, parts=kept), user("Go on.")])
    loop.turn()
    assert fake.violations == ()
    assert loop.reasoning_ids(1) == []
    assert "dropped_thinking" in loop.changes[1]
    assert loop.chef.history[1].parts == kept  # the history as the host set it
