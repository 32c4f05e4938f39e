"""Reply and ingest gaps left by break-it round 18, each closed on every target.

1. An empty text part (Gemini ``{"text": ""}``, Anthropic ``{"type": "text", "text": ""}``,
   Chat ``content: ""`` beside ``tool_calls``, Responses ``output_text`` ``""``) is not
   stored: it says nothing, and no wire sent it back anyway. A Gemini one carrying a
   thought signature stays; a reply of nothing but empty text after a prefill is the
   prefill (the empty-reply rule).
2. A refusal (Chat ``message.refusal``, a Responses ``refusal`` part) continues no
   prefill: the stored turn is the refusal alone, and a Chat refusal is stored in the form
   it is sent back (``content: ""`` beside the refusal) from the first request on.
3. Two targets on one wire both awaiting a reply (``openai`` and ``deepseek``): the reply
   goes to the request for the model it names, and a reply that cannot be told apart is
   reported.

Multi-turn through the official SDK clients against the fakes, payloads SDK-checked, the
stored history and the next request asserted exactly.
"""

from __future__ import annotations

import base64
from functools import partial
from typing import Any

import pytest
from test_ingest import send as sdk_send

from contextchef import ContextChef, Message, ProviderPart, ReasoningPart, TextPart, ToolCall, user
from contextchef.testing import fake_for, raw, text
from contextchef.testing._replies import response_body
from sdk_check import sdk_problems

MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-5.5",
    "deepseek": "deepseek-chat",
    "responses": "gpt-5.5",
    "gemini": "gemini-3-pro",
}
ARGS = '{"path": "a"}'


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def _chat(n: int, message: dict[str, Any], model: str = "gpt-5.5") -> dict[str, Any]:
    choice = {"index": 0, "finish_reason": "stop", "message": message}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    head = {"id": f"chatcmpl-r{n}", "object": "chat.completion", "created": 0, "model": model}
    return {**head, "choices": [choice], "usage": usage}


def _responses(n: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    return response_body(output, model="gpt-5.5", response_id=f"resp_r{n}")


def _message_item(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_r1",
        "role": "assistant",
        "status": "completed",
        "content": content,
    }


EMPTY_TEXT_AND_A_CALL: dict[str, dict[str, Any]] = {
    "anthropic": {
        "id": "msg_r1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": ""},
            {"type": "tool_use", "id": "toolu_r1", "name": "read_file", "input": {"path": "a"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
    "openai": _chat(
        1,
        {
            "role": "assistant",
            "content": "",
            "refusal": None,
            "tool_calls": [
                {
                    "id": "call_r1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": ARGS},
                }
            ],
        },
    ),
    "responses": _responses(
        1,
        [
            _message_item([{"type": "output_text", "text": "", "annotations": []}]),
            {
                "type": "function_call",
                "id": "fc_r1",
                "call_id": "call_r1",
                "name": "read_file",
                "arguments": ARGS,
                "status": "completed",
            },
        ],
    ),
    "gemini": {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": ""},
                        {
                            "functionCall": {
                                "id": "call_r1",
                                "name": "read_file",
                                "args": {"path": "a"},
                            }
                        },
                        {"text": ""},
                    ],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 1, "totalTokenCount": 1},
        "modelVersion": "gemini-3-pro",
        "responseId": "resp_r1",
    },
}
"""A reply that is an empty text part beside one call, as each wire sends it."""

SENT_CALL = {
    "anthropic": [
        {"role": "user", "content": [{"type": "text", "text": "Look."}]},
        {
            "role": "assistant",
            "content": [
                {"id": "toolu_r1", "input": {"path": "a"}, "name": "read_file", "type": "tool_use"}
            ],
        },
    ],
    "openai": [
        {"role": "user", "content": "Look."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_r1",
                    "function": {"name": "read_file", "arguments": ARGS},
                    "type": "function",
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_r1", "content": "contents of a"},
    ],
    "responses": [
        {"type": "message", "role": "user", "content": "Look."},
        {
            "arguments": ARGS,
            "call_id": "call_r1",
            "name": "read_file",
            "type": "function_call",
            "id": "fc_r1",
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_r1", "output": "contents of a"},
    ],
    "gemini": [
        {"role": "user", "parts": [{"text": "Look."}]},
        {
            "role": "model",
            "parts": [
                {
                    "function_call": {"id": "call_r1", "name": "read_file", "args": {"path": "a"}},
                    "thought_signature": "skip_thought_signature_validator",
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "function_response": {
                        "id": "call_r1",
                        "name": "read_file",
                        "response": {"output": "contents of a"},
                    }
                }
            ],
        },
    ],
}
"""The start of the request after that reply and its result, on each wire."""


def _conversation(payload: dict[str, Any]) -> list[Any]:
    for key in ("messages", "input", "contents"):
        if key in payload:
            return list(payload[key])
    raise AssertionError(sorted(payload))


def _compile(chef: ContextChef, target: str, **options: Any) -> dict[str, Any]:
    payload = chef.compile(target, model=MODELS[target], **options).payload
    assert sdk_problems(target, payload) == []
    return payload


@pytest.mark.parametrize("target", sorted(EMPTY_TEXT_AND_A_CALL))
def test_an_empty_text_part_beside_a_call_is_not_stored(target: str) -> None:
    fake = fake_for(target).script(raw(EMPTY_TEXT_AND_A_CALL[target]), text("Done."))
    send = partial(sdk_send, target, fake)
    chef = ContextChef()
    chef.register_tools([read_file])
    chef.set_history([user("Look.")])
    calls = chef.ingest(send(_compile(chef, target)))
    [reply] = chef.history[1:]
    assert [type(p) for p in reply.parts] == [ToolCall]  # before: a TextPart("") first
    chef.run_tools(calls)
    payload = _compile(chef, target)
    sent = _conversation(payload)
    if target == "anthropic":  # the result carries the cache breakpoint
        assert sent[2]["content"][0]["tool_use_id"] == "toolu_r1"
        sent = sent[:2]
    assert sent == SENT_CALL[target]
    chef.ingest(send(payload))
    assert [p.text for p in chef.history[-1].parts if isinstance(p, TextPart)] == ["Done."]
    assert fake.violations == ()


def test_a_gemini_empty_text_part_holding_a_thought_signature_is_kept() -> None:
    """Gemini may put the signature of a turn on an empty text part: it is sent back."""
    signature = base64.b64encode(b"sig-r1").decode()
    body = EMPTY_TEXT_AND_A_CALL["gemini"]
    candidate = body["candidates"][0]
    parts = [*candidate["content"]["parts"][:2], {"text": "", "thoughtSignature": signature}]
    signed = {**body, "candidates": [{**candidate, "content": {"role": "model", "parts": parts}}]}
    fake = fake_for("gemini").script(raw(signed), text("Done."))
    chef = ContextChef()
    chef.register_tools([read_file])
    chef.set_history([user("Look.")])
    chef.run_tools(chef.ingest(sdk_send("gemini", fake, _compile(chef, "gemini"))))
    assert [type(p) for p in chef.history[1].parts] == [ToolCall, TextPart]
    sent = _conversation(_compile(chef, "gemini"))
    assert sent[1]["parts"][1:] == [{"text": "", "thought_signature": signature}]
    assert fake.violations == ()


def test_an_interactions_empty_text_step_is_kept_so_the_next_request_chains() -> None:
    """The answer is chained to as the server returned it (`Chain.answer`): dropping the
    empty step would make the next stored request send the whole history again."""
    usage = {"total_input_tokens": 0, "total_cached_tokens": 0, "total_output_tokens": 0}
    step = {"type": "function_call", "id": "call_r1", "name": "read_file"}
    body = {
        "id": "v1_r1",
        "status": "requires_action",
        "model": "gemini-3-pro",
        "steps": [  # Gemini 3 signs every answer that calls a function (a thought step)
            {"type": "thought", "signature": "c2lnX3Ix"},
            {"type": "model_output", "content": [{"type": "text", "text": ""}]},
            {**step, "arguments": {"path": "a"}},
        ],
        "usage": {**usage, "total_tokens": 0},
    }
    fake = fake_for("gemini-interactions").script(raw(body), text("Done."))
    send = partial(sdk_send, "gemini-interactions", fake)
    chef = ContextChef()
    chef.register_tools([read_file])
    chef.set_history([user("Look.")])
    options = {"model": "gemini-3-pro", "extra": {"store": True}}
    chef.run_tools(chef.ingest(send(chef.compile("gemini-interactions", **options).payload)))
    assert [type(p) for p in chef.history[1].parts] == [ReasoningPart, TextPart, ToolCall]
    payload = chef.compile("gemini-interactions", **options).payload
    assert sdk_problems("gemini-interactions", payload) == []
    assert payload["previous_interaction_id"] == "v1_r1"
    assert payload["input"] == [
        {
            "type": "function_result",
            "call_id": "call_r1",
            "name": "read_file",
            "result": "contents of a",
        }
    ]
    chef.ingest(send(payload))
    assert fake.violations == ()


EMPTY_TEXT_ONLY: dict[str, dict[str, Any]] = {
    "anthropic": {
        **EMPTY_TEXT_AND_A_CALL["anthropic"],
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": ""}],
    },
    "openai": _chat(1, {"role": "assistant", "content": "", "refusal": None}),
    "responses": _responses(
        1, [_message_item([{"type": "output_text", "text": "", "annotations": []}])]
    ),
}


@pytest.mark.parametrize("target", sorted(EMPTY_TEXT_ONLY))
def test_a_reply_of_empty_text_after_a_prefill_is_the_prefill(target: str) -> None:
    fake = fake_for(target).script(raw(EMPTY_TEXT_ONLY[target]), text("ok"))
    send = partial(sdk_send, target, fake)
    chef = ContextChef()
    chef.set_history([user("JSON please.")])
    chef.ingest(send(_compile(chef, target, prefill="{")))
    assert [(m.role, m.parts) for m in chef.history[1:]] == [("assistant", (TextPart(text="{"),))]
    chef.append(user("more"))
    sent = _conversation(_compile(chef, target))
    assert [e.get("content") for e in sent] in (
        [
            [{"type": "text", "text": "JSON please."}],
            [{"type": "text", "text": "{"}],
            [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}],
        ],
        ["JSON please.", "{", "more"],
    ), sent
    assert fake.violations == ()


REFUSAL = "I can't help with that."
CHAT_REFUSAL = {"role": "assistant", "content": None, "refusal": REFUSAL}
RESPONSES_REFUSAL = _message_item([{"type": "refusal", "refusal": REFUSAL}])


@pytest.mark.parametrize("prefill", ["", "{"])
def test_a_chat_refusal_is_stored_as_sent_and_continues_no_prefill(prefill: str) -> None:
    fake = fake_for("openai").script(raw(_chat(1, CHAT_REFUSAL)), text("ok"), text("ok2"))
    send = partial(sdk_send, "openai", fake)
    chef = ContextChef()
    chef.set_history([user("Q")])
    chef.ingest(send(_compile(chef, "openai", prefill=prefill)))
    sent_form = {"content": "", "refusal": REFUSAL, "role": "assistant"}
    # before: ``{`` stored as the model's answer before the refusal, and the refusal kept
    # with content null, sent with content "" (stored and sent forms apart)
    stored = Message(role="assistant", parts=(ProviderPart(provider="openai", data=sent_form),))
    assert chef.history[1:] == (stored,)
    assert [n.reason for n in chef.notices if n.kind == "incomplete"] == ["refusal"]
    chef.append(user("more"))
    first = _compile(chef, "openai")
    assert first["messages"] == [
        {"role": "user", "content": "Q"},
        sent_form,
        {"role": "user", "content": "more"},
    ]
    chef.ingest(send(first))
    chef.append(user("again"))
    second = _compile(chef, "openai")
    assert second["messages"][:3] == first["messages"]  # the same bytes from the first on
    chef.ingest(send(second))
    assert fake.violations == ()


@pytest.mark.parametrize("prefill", ["", "{"])
def test_a_responses_refusal_continues_no_prefill(prefill: str) -> None:
    fake = fake_for("responses").script(raw(_responses(1, [RESPONSES_REFUSAL])), text("ok"))
    send = partial(sdk_send, "responses", fake)
    chef = ContextChef()
    chef.set_history([user("Q")])
    chef.ingest(send(_compile(chef, "responses", prefill=prefill)))
    [refusal] = chef.history[1:]
    assert refusal.parts == (ProviderPart(provider="responses", data=RESPONSES_REFUSAL),)
    assert [n.reason for n in chef.notices if n.kind == "incomplete"] == ["refusal"]
    chef.append(user("more"))
    payload = _compile(chef, "responses")
    assert payload["input"] == [
        {"type": "message", "role": "user", "content": "Q"},
        RESPONSES_REFUSAL,
        {"type": "message", "role": "user", "content": "more"},
    ]
    chef.ingest(send(payload))
    assert fake.violations == ()


def test_two_targets_on_the_chat_wire_each_get_the_reply_to_their_model() -> None:
    """openai (with a prefill) and deepseek both await a reply; openai's comes in last.

    Before: it was joined with the request compiled last (deepseek's), and the prefill
    of the openai request it answers was lost (``"a": 1}`` stored).
    """
    openai_fake, deepseek_fake = fake_for("openai"), fake_for("deepseek")
    openai_fake.script(text('"a": 1}'), text("ok"))
    deepseek_fake.script(text("from deepseek"))
    chef = ContextChef()
    chef.set_history([user("JSON please.")])
    openai_payload = _compile(chef, "openai", prefill="{")
    deepseek_payload = _compile(chef, "deepseek")
    chef.ingest(sdk_send("openai", openai_fake, openai_payload))
    assert [
        (m.role, [p.text for p in m.parts if isinstance(p, TextPart)]) for m in chef.history
    ] == [
        ("user", ["JSON please."]),
        ("assistant", ['{"a": 1}']),
    ]
    assert [n for n in chef.notices if n.kind == "reply_target_ambiguous"] == []
    chef.append(user("more"))
    payload = _compile(chef, "openai")
    assert [e["content"] for e in payload["messages"]] == ["JSON please.", '{"a": 1}', "more"]
    chef.ingest(sdk_send("openai", openai_fake, payload))
    assert deepseek_payload["messages"] == [{"role": "user", "content": "JSON please."}]
    assert openai_fake.violations == () and deepseek_fake.violations == ()


def test_a_reply_two_waiting_targets_could_answer_is_reported() -> None:
    """Both compiled for the same model name: the reply cannot say; the notice does."""
    fake = fake_for("openai").script(text('"a": 1}'))
    chef = ContextChef()
    chef.set_history([user("JSON please.")])
    chef.compile("deepseek", model="shared-model")
    payload = chef.compile("openai", model="shared-model", prefill="{").payload
    chef.ingest(sdk_send("openai", fake, payload))
    [notice] = [n for n in chef.notices if n.kind == "reply_target_ambiguous"]
    assert notice.reason == "openai"
    assert "'deepseek', 'openai'" in notice.detail or "'openai', 'deepseek'" in notice.detail
    assert "shared-model" in notice.detail and "Chat Completions" in notice.detail
    assert [p.text for p in chef.history[1].parts if isinstance(p, TextPart)] == ['{"a": 1}']
    assert fake.violations == ()
