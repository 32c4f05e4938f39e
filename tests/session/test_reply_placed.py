"""A reply goes right after what its request sent, before lines the host appended since.

Break-it round 28, finding 1: a host appends the user's next line while the model is
still answering (`compile`, send, `append(user(...))`, then `ingest`). Stored after that
line, the reply followed a message it never saw; on `claude-opus-5-5` its thinking block
is bound to the prefix it was produced after, so every later request was a 400
("bound to a different conversation"). The reply now goes right after the messages its
request sent, and the appended lines follow it, so the conversation is what happened.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_snapshot_once import make  # read_file registered, a system prompt

from contextchef import ContextChef, Message, ToolResult, tool_results, user
from contextchef.history._messages import MediaPart, TextPart
from contextchef.testing import fake_for, text, tool_calls
from sdk_send import send

MODELS = {
    "anthropic": "claude-opus-5-5",
    "openai": "gpt-5.6",
    "responses": "gpt-5.6",
    "gemini": "gemini-3-pro",
    "gemini-interactions": "gemini-3-pro",
}
THINK = {"thinking": {"type": "adaptive"}}


def compiled(chef: ContextChef, target: str) -> Any:
    extra = THINK if target == "anthropic" else None
    return chef.compile(target, model=MODELS[target], extra=extra)


def texts(chef: ContextChef) -> list[str]:
    return [m.role + ":" + m.text for m in chef.history]


@pytest.mark.parametrize("target", list(MODELS))
def test_a_line_typed_while_the_model_answers_follows_the_reply(target: str) -> None:
    fake = fake_for(target).script(
        text("a1", reasoning="d1"), text("a2", reasoning="d2"), text("a3", reasoning="d3")
    )
    chef = make()
    chef.append(user("q1"))
    answer = send(target, fake, compiled(chef, target).payload)  # the request: [q1]
    chef.append(user("q1b, typed meanwhile"))
    assert chef.ingest(answer) == ()
    assert texts(chef) == ["user:q1", "assistant:a1", "user:q1b, typed meanwhile"]
    for k in range(2):
        request = compiled(chef, target)
        assert request.edits == (), request.edits
        chef.ingest(send(target, fake, request.payload))
        chef.append(user(f"q{k + 2}"))
    assert fake.violations == ()
    if target == "anthropic":  # every thinking block is still sent
        payload = compiled(chef, target).payload
        blocks = [b for m in payload["messages"] for b in m["content"] if isinstance(b, dict)]
        assert [b["type"] for b in blocks].count("thinking") == 3


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_tool_calls_answered_after_a_line_typed_meanwhile(target: str) -> None:
    fake = fake_for(target).script(
        tool_calls(("read_file", {"path": "a.py"}), reasoning="plan"),
        text("done", reasoning="ok"),
        text("bye"),
    )
    chef = make()
    chef.append(user("read a.py"))
    answer = send(target, fake, compiled(chef, target).payload)
    chef.append(user("and then b.py"))
    calls = chef.ingest(answer)
    chef.append(tool_results([chef.execute(call).result for call in calls]))
    assert [m.role for m in chef.history] == ["user", "assistant", "user", "user"]
    for _ in range(2):
        chef.ingest(send(target, fake, compiled(chef, target).payload))
        chef.append(user("go on"))
    assert fake.violations == ()


def test_the_reply_goes_at_the_end_when_the_history_changed_or_holds_more_than_text() -> None:
    fake = fake_for("anthropic").script(*[text(f"a{k}", reasoning=f"d{k}") for k in range(6)])
    # the host replaced the history after the compile: the end, as before
    chef = make()
    chef.append(user("q1"))
    answer = send("anthropic", fake, compiled(chef, "anthropic").payload)
    chef.set_history([user("another q1"), user("q1b")])
    chef.ingest(answer)
    assert texts(chef)[-1] == "assistant:a0"
    # the host appended a tool result (not a line of text): the end, as before
    chef = make()
    chef.append(user("q1"))
    answer = send("anthropic", fake, compiled(chef, "anthropic").payload)
    chef.append(tool_results([ToolResult(call_id="x", name="read_file", content="t")]))
    chef.ingest(answer)
    assert chef.history[-1].role == "assistant"
    # nothing appended: the end
    chef = make()
    chef.append(user("q1"))
    chef.ingest(send("anthropic", fake, compiled(chef, "anthropic").payload))
    assert texts(chef) == ["user:q1", "assistant:a2"]


@pytest.mark.parametrize("target", ["anthropic", "responses"])
def test_an_attachment_or_a_clearing_meanwhile_keeps_the_reply_first(target: str) -> None:
    """Break-it 29: an appended image went before the reply, and `clear_tool_results`
    between compile and ingest (messages rewritten in place) put the reply last."""
    fake = fake_for(target).script(
        tool_calls(("read_file", {"path": "a.py"}), reasoning="plan"),
        text("A2", reasoning="d2"),
        text("A3", reasoning="d3"),
        text("A4"),
    )
    chef = make()
    chef.append(user("read a.py"))
    calls = chef.ingest(send(target, fake, compiled(chef, target).payload))
    chef.append(tool_results([chef.execute(call).result for call in calls]))
    answer = send(target, fake, compiled(chef, target).payload)
    image = MediaPart(media_type="image/png", url="https://example.com/a.png")
    chef.append(Message(role="user", parts=(TextPart(text="see this"), image)))
    chef.clear_tool_results(keep_recent=0)
    chef.ingest(answer)
    assert [m.role for m in chef.history][-2:] == ["assistant", "user"]
    assert chef.history[-2].text == "A2" and chef.history[-1].text == "see this"
    for _ in range(2):
        chef.ingest(send(target, fake, compiled(chef, target).payload))
        chef.append(user("go on"))
    assert fake.violations == ()
