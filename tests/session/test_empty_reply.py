"""An empty reply is handled the same on every target.

A reply with no content (no text, call or refusal) is no turn: every wire reads it as no
message (Anthropic's empty ``content`` and Responses' empty ``output`` were already; a
Chat message with null content is now too), so nothing is added and the turn the request
ended on stays as it was. After a prefill the prefill is the answer, stored as the
assistant turn (before: lost on Anthropic and Responses, two assistant messages on Chat,
the second with null content). No Chat request carries an assistant message with null
content and no calls (the API requires ``content`` "unless ``tool_calls`` or
``function_call`` is specified"). Multi-turn through the official SDK clients against the
fakes, payloads SDK-checked.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from test_ingest import send as sdk_send

from contextchef import ContextChef, Message, TextPart, assistant, from_openai, user
from contextchef.testing import fake_for, raw, text
from sdk_check import sdk_problems

MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-5.5",
    "responses": "gpt-5.5",
    "gemini": "gemini-3-pro",
    "deepseek": "deepseek-chat",
}
PREFILLED = ["anthropic", "openai", "responses"]  # the targets whose models take a prefill


def _send(chef: ContextChef, target: str, send: Callable[..., Any], **options: Any) -> None:
    """Compile (SDK-checked, no null assistant content), send, ingest."""
    payload = chef.compile(target, model=MODELS[target], **options).payload
    problems = sdk_problems(target, payload)
    assert problems == [], problems
    for entry in payload.get("messages", ()):
        if entry.get("role") == "assistant" and not entry.get("tool_calls"):
            assert entry.get("content") is not None, entry
    chef.ingest(send(payload))


def _turns(chef: ContextChef) -> list[tuple[str, str]]:
    return [
        (m.role, "".join(p.text for p in m.parts if isinstance(p, TextPart))) for m in chef.history
    ]


@pytest.mark.parametrize("target", PREFILLED)
def test_an_empty_reply_after_a_prefill_stores_the_prefill(target: str) -> None:
    fake = fake_for(target).script(text(""), text("ok"), text('"b": 2}'))
    send = partial(sdk_send, target, fake)
    chef = ContextChef()
    chef.set_history([user("Give me JSON.")])
    _send(chef, target, send, prefill="{")
    assert _turns(chef) == [("user", "Give me JSON."), ("assistant", "{")]
    chef.append(user("more"))
    _send(chef, target, send)
    chef.append(user("again"))
    _send(chef, target, send, prefill="{")
    assert _turns(chef)[1:] == [
        ("assistant", "{"),
        ("user", "more"),
        ("assistant", "ok"),
        ("user", "again"),
        ("assistant", '{"b": 2}'),
    ]
    assert fake.violations == ()


@pytest.mark.parametrize("target", sorted(MODELS))
def test_an_empty_reply_without_a_prefill_adds_nothing(target: str) -> None:
    fake = fake_for(target).script(text(""), text("ok"))
    send = partial(sdk_send, target, fake)
    chef = ContextChef()
    chef.set_history([user("Q")])
    _send(chef, target, send)
    assert _turns(chef) == [("user", "Q")]  # Chat before: a null-content assistant message
    chef.append(user("more"))
    _send(chef, target, send)
    assert _turns(chef) == [("user", "Q"), ("user", "more"), ("assistant", "ok")]
    assert fake.violations == ()


@pytest.mark.parametrize("target", PREFILLED)
def test_an_empty_continuation_leaves_the_model_turn_as_it_was(target: str) -> None:
    fake = fake_for(target).script(text(""), text("ok"))
    send = partial(sdk_send, target, fake)
    chef = ContextChef()
    chef.set_history([user("Q"), assistant("Part")])
    _send(chef, target, send)
    assert _turns(chef) == [("user", "Q"), ("assistant", "Part")]
    chef.append(user("more"))
    _send(chef, target, send)
    assert _turns(chef)[-2:] == [("user", "more"), ("assistant", "ok")]
    assert fake.violations == ()


def test_a_recorded_chat_message_with_null_content_is_never_sent_as_null() -> None:
    """A Chat history holding one (recorded before, or by another client) is sent valid."""
    recorded = from_openai(
        [
            {"role": "user", "content": "Q"},
            {"role": "assistant", "content": None},
            {"role": "user", "content": "Q2"},
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            {"role": "user", "content": "Q3"},
        ]
    ).messages
    fake = fake_for("openai").script(text("ok"))
    chef = ContextChef()
    chef.set_history(list(recorded))
    payload = chef.compile("openai", model="gpt-5.5").payload
    assert sdk_problems("openai", payload) == []
    assert payload["messages"] == [
        {"role": "user", "content": "Q"},
        {"role": "user", "content": "Q2"},
        {"role": "assistant", "content": "", "refusal": "I can't help with that."},
        {"role": "user", "content": "Q3"},
    ]
    chef.ingest(sdk_send("openai", fake, payload))
    assert fake.violations == ()
    assert isinstance(chef.history[-1], Message) and _turns(chef)[-1] == ("assistant", "ok")


@pytest.mark.parametrize("reason", ["MAX_TOKENS", "SAFETY", "RECITATION", "STOP"])
def test_a_gemini_candidate_without_content_is_an_empty_reply(reason: str) -> None:
    """Break-it round 18: Gemini sends a candidate with no ``content`` when thinking spent
    the output budget (``MAX_TOKENS``) or a filter stopped it; ``ingest`` raised
    CorruptHistoryError ("the Gemini candidate has no content") and the loop stopped. It
    is an empty reply like the other wires' (no turn), its finishReason a notice; the
    loop goes on."""
    usage = {"promptTokenCount": 5, "totalTokenCount": 5}
    empty = raw({"candidates": [{"finishReason": reason, "index": 0}], "usageMetadata": usage})
    fake = fake_for("gemini").script(empty, text("ok"))
    send = partial(sdk_send, "gemini", fake)
    chef = ContextChef()
    chef.set_history([user("Q")])
    _send(chef, "gemini", send)
    assert _turns(chef) == [("user", "Q")]
    stops = [n.reason for n in chef.notices if n.reason == reason]
    assert stops == ([] if reason == "STOP" else [reason])
    chef.append(user("more"))
    _send(chef, "gemini", send)
    assert _turns(chef) == [("user", "Q"), ("user", "more"), ("assistant", "ok")]
    assert fake.violations == ()


def test_a_responses_message_item_with_no_content_is_an_empty_reply() -> None:
    """Break-it round 18: a reply whose one message item has ``content: []`` was stored as
    a provider part and sent back in every later ``input``. It says nothing: no turn, as
    an empty ``output`` already was; after a prefill the prefill is the answer."""
    usage = {
        "input_tokens": 5,
        "output_tokens": 0,
        "total_tokens": 5,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
    body = {
        "id": "resp_e",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "output": [{**item, "content": []}],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }
    fake = fake_for("responses").script(raw(body), raw({**body, "id": "resp_f"}), text("ok"))
    send = partial(sdk_send, "responses", fake)
    chef = ContextChef()
    chef.set_history([user("Q")])
    _send(chef, "responses", send)
    assert _turns(chef) == [("user", "Q")]
    _send(chef, "responses", send, prefill="{")
    assert _turns(chef) == [("user", "Q"), ("assistant", "{")]
    chef.append(user("more"))
    _send(chef, "responses", send)
    assert _turns(chef)[-2:] == [("user", "more"), ("assistant", "ok")]
    assert fake.violations == ()
