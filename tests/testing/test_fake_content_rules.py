"""The fakes refuse content the APIs refuse, and merge Anthropic turns as the API does.

Hand-written bad requests go through the official SDK clients and come back as the SDK's
``BadRequestError`` naming the rule (break-it 21: part types that do not exist accepted by
the OpenAI fakes, blank Anthropic text accepted, two user messages in a row refused though
the API merges them). contextchef's own multi-turn output on real catalogs still draws no
violation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from contextchef import Allowed, ContextChef, ToolCall, user
from contextchef.testing import (
    FakeAnthropic,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    httpx_for,
    text,
    tool_calls,
)
from contextchef.testing._anthropic_turns import anthropic_turns
from contextchef.testing._content_rules import anthropic_text_blocks_non_blank

HX = httpx_for(anthropic)
MODEL = "test-model"
_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
_A_TOOLS = [{"name": "read_file", "description": "Read a file.", "input_schema": _SCHEMA}]


def _anthropic(fake: FakeProvider) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))


def _openai(fake: FakeProvider) -> openai.OpenAI:
    return openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))


def _refused(fake: FakeProvider, send: Callable[[], object], rule: str, *where: str) -> None:
    fake.script(text("never sent"))
    error: type[Exception] = (
        anthropic.BadRequestError if isinstance(fake, FakeAnthropic) else openai.BadRequestError
    )
    with pytest.raises(error) as caught:
        send()
    assert f"rule {rule} broken" in str(caught.value)
    assert {v.rule for v in fake.violations} == {rule}
    for location in where:
        assert location in str(caught.value)
    assert fake.pending == 1


# -- OpenAI Chat Completions: part types per role -----------------------------------------


@pytest.mark.parametrize(
    ("message", "where"),
    [
        (
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}]},
            "messages[1].content[0]: part type 'thinking' is not valid in assistant messages",
        ),
        (
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x"}]},
            "supported values are refusal, text",
        ),
        (
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
            "part type 'tool_result' is not valid in user messages; supported values are file, "
            "image_url, input_audio, text",
        ),
        ({"role": "user", "content": [{"type": "bogus_part", "zzz": 1}]}, "'bogus_part'"),
        (
            {"role": "system", "content": [{"type": "image_url", "image_url": {"url": "u"}}]},
            "not valid in system messages; supported values are text",
        ),
    ],
)
def test_chat_fake_refuses_part_types_the_role_does_not_take(
    message: dict[str, Any], where: str
) -> None:
    fake = FakeOpenAIChat()
    messages: Any = [{"role": "user", "content": "go"}, message]
    if message["role"] == "assistant":
        messages.append({"role": "user", "content": "next"})
    client = _openai(fake)
    _refused(
        fake,
        lambda: client.chat.completions.create(model=MODEL, messages=messages),
        "chat_content_part_types",
        where,
    )
    client.close()


def test_chat_fake_takes_every_part_type_the_sdk_lists() -> None:
    fake = FakeOpenAIChat().script(text("ok"))
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    messages: Any = [
        {"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
                {"type": "file", "file": {"file_id": "file-1"}},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "no"}],
        },
        {"role": "user", "content": "go on"},
    ]
    heard: Any = [{"role": "user", "content": [{"type": "text", "text": "listen"}, audio]}]
    with _openai(fake) as client:
        client.chat.completions.create(model=MODEL, messages=messages)
        fake.script(text("ok"))  # audio goes to an audio model (`chat_model_media`)
        client.chat.completions.create(model="gpt-audio", messages=heard)
    assert fake.violations == ()


# -- OpenAI Responses: part types per item role -------------------------------------------


@pytest.mark.parametrize(
    ("items", "where"),
    [
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}],
            "input[0].content[0]: part type 'tool_result' is not valid in user items; supported "
            "values are input_file, input_image, input_text",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]},
                {"role": "user", "content": "go"},
            ],
            "input[1].content[0]: part type 'thinking' is not valid in assistant items; "
            "supported values are output_text, refusal",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "input_text", "text": "x"}]},
                {"role": "user", "content": "go"},
            ],
            "'input_text' is not valid in assistant items",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": [{"type": "output_text", "text": "r"}],
                },
            ],
            "input[2].output[0]: part type 'output_text' is not valid in function call",
        ),
    ],
)
def test_responses_fake_refuses_part_types_the_role_does_not_take(
    items: list[dict[str, Any]], where: str
) -> None:
    fake = FakeResponses()
    tools: Any = [{"type": "function", "name": "read_file", "parameters": _SCHEMA}]
    client = _openai(fake)
    _refused(
        fake,
        lambda: client.responses.create(model=MODEL, input=items, tools=tools),  # type: ignore[arg-type]
        "responses_content_part_types",
        where,
    )
    client.close()


# -- Anthropic: blank text blocks ---------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "where"),
    [
        (
            [{"type": "text", "text": " "}],
            "messages[0].content[0]: text content blocks must contain non-whitespace text",
        ),
        (
            [{"type": "text", "text": "hi"}, {"type": "text", "text": ""}],
            "messages[0].content[1]: text content blocks must be non-empty",
        ),
        ("\n\t", "messages[0].content[0]: text content blocks must contain non-whitespace"),
    ],
)
def test_anthropic_fake_refuses_blank_text_blocks(content: Any, where: str) -> None:
    fake = FakeAnthropic()
    client = _anthropic(fake)
    _refused(
        fake,
        lambda: client.messages.create(
            model=MODEL, max_tokens=100, messages=[{"role": "user", "content": content}]
        ),
        "anthropic_text_blocks_non_blank",
        where,
    )
    client.close()


def test_blank_text_in_an_earlier_assistant_turn_is_refused_but_not_in_a_prefill() -> None:
    earlier = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": ""}]},
            {"role": "user", "content": "go"},
        ]
    }
    assert list(anthropic_text_blocks_non_blank(earlier, [])) == [
        "messages[1].content[0]: text content blocks must be non-empty"
    ]
    # The optional final assistant message may be empty (a prefill; whether the model
    # takes one is anthropic_no_prefill, trailing whitespace anthropic_no_trailing_whitespace).
    prefill = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]
    }
    assert list(anthropic_text_blocks_non_blank(prefill, [])) == []


# -- Anthropic: consecutive same-role messages are one turn -------------------------------


def _use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": "a"}}


def _result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "r"}


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": [_use("t1"), _use("t2")]},
            {"role": "user", "content": [_result("t1")]},
            {"role": "user", "content": [_result("t2"), {"type": "text", "text": "both"}]},
        ],
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "let me look"},
            {"role": "assistant", "content": [_use("t1")]},
            {"role": "user", "content": [_result("t1")]},
        ],
    ],
    ids=["two-user-messages", "results-split-over-user-messages", "assistant-split"],
)
def test_anthropic_fake_merges_consecutive_same_role_messages(
    messages: list[dict[str, Any]],
) -> None:
    fake = FakeAnthropic().script(text("ok"))
    with _anthropic(fake) as client:
        client.messages.create(model=MODEL, max_tokens=100, messages=messages, tools=_A_TOOLS)  # type: ignore[arg-type]
    assert fake.violations == ()
    assert len(anthropic_turns(fake.requests[0].body)) in (1, 3)


def test_a_result_not_first_in_the_merged_user_turn_is_refused() -> None:
    fake = FakeAnthropic()
    messages: Any = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [_use("t1")]},
        {"role": "user", "content": "note first"},
        {"role": "user", "content": [_result("t1")]},
    ]
    client = _anthropic(fake)
    _refused(
        fake,
        lambda: client.messages.create(
            model=MODEL,
            max_tokens=100,
            messages=messages,
            tools=_A_TOOLS,  # type: ignore[arg-type]
        ),
        "anthropic_tool_results_first",
        "messages[3].content[0]: tool_result after another block",
    )
    client.close()


def test_a_system_message_keeps_same_role_messages_apart() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
            {"role": "system", "content": "note"},
            {"role": "user", "content": "c"},
        ]
    }
    assert [(t.role, t.at, t.where) for t in anthropic_turns(body)] == [
        ("user", (0, 1), "messages[0..1]"),
        ("user", (3,), "messages[3]"),
    ]


# -- contextchef's own multi-turn output on real catalogs ---------------------------------


def _fallback(call: ToolCall, allowed: Allowed) -> str:
    return "ok: " + json.dumps(allowed.arguments)[:80]


_SEND: dict[str, tuple[Callable[[], FakeProvider], Callable[[Any, Any], Any]]] = {
    "anthropic": (FakeAnthropic, lambda c, p: c.messages.create(**p)),
    "openai": (FakeOpenAIChat, lambda c, p: c.chat.completions.create(**p)),
    "deepseek": (FakeOpenAIChat, lambda c, p: c.chat.completions.create(**p)),
    "responses": (FakeResponses, lambda c, p: c.responses.create(**p)),
}


@pytest.mark.parametrize("target", sorted(_SEND))
@pytest.mark.parametrize("catalog", ["mcp-filesystem.json", "github.json", "cloudflare-docs.json"])
def test_contextchef_multi_turn_output_draws_no_violation(
    target: str, catalog: str, catalogs_dir: Path
) -> None:
    make, send = _SEND[target]
    fake = make()
    chef = ContextChef()
    chef.register_catalog(catalogs_dir / catalog)
    chef.set_system_prompt("You are a careful engineering agent.")
    names = [t.name for t in chef.tools][:2]
    client: Any = _anthropic(fake) if target == "anthropic" else _openai(fake)
    for turn in range(3):
        chef.append(user(f"turn {turn}: look around"))
        fake.script(
            tool_calls(*((name, {}) for name in names), reasoning=f"think {turn}"),
            text("", reasoning="nothing to say") if turn == 1 else text(f"answer {turn}"),
        )
        for _ in range(2):
            response = send(client, chef.compile(target, model=MODEL).payload)
            if not chef.run_tools(chef.ingest(response), fallback=_fallback):
                break
    client.close()
    assert fake.violations == ()
    assert len(fake.requests) == 6
