"""Part fields of the wrong kind are refused where the part is made (break-it round 10).

Media data that is not base64, a non-bool ``is_error`` and an empty tool name were taken
and broke later (google-genai's request type raised pydantic's error in the host's loop,
Anthropic was sent the bad data, Gemini got ``function_call{name: ""}``). Each is now
refused naming ``Part.field``: a `UsageError` at construction, a `CorruptHistoryError`
naming the message through ``set_history`` and ``restore`` (both builders, issue 27),
and parsers of provider wire data refuse an empty function name naming the message.
"""

from __future__ import annotations

import base64
from typing import Any

import anthropic
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from contextchef import ContextChef, CorruptHistoryError, UsageError
from contextchef.history._built import built
from contextchef.history._messages import (
    MediaPart,
    Message,
    TextPart,
    ToolCall,
    ToolResult,
    message_from_dict,
)
from contextchef.providers import from_anthropic, from_gemini, from_openai, from_responses
from contextchef.testing import FakeAnthropic, FakeGemini, httpx_for, text

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(64))).decode()


def _call(**over: Any) -> dict[str, Any]:
    return {"kind": "tool_call", "id": "c1", "name": "grep", "arguments": "{}", **over}


def _result(**over: Any) -> dict[str, Any]:
    return {"kind": "tool_result", "call_id": "c1", "name": "grep", "content": "R", **over}


def _media(**over: Any) -> dict[str, Any]:
    return {"kind": "media", "media_type": "image/png", "data": PNG, **over}


def _history(call: dict[str, Any], result: dict[str, Any], media: dict[str, Any]) -> list[Any]:
    return [
        {"role": "user", "parts": [{"kind": "text", "text": "look"}, media]},
        {"role": "assistant", "parts": [call]},
        {"role": "user", "parts": [result]},
        {"role": "user", "parts": [{"kind": "text", "text": "next"}]},
    ]


BAD = {
    # case: (call, result, media, message index, the field named)
    "media data not base64": (_call(), _result(), _media(data="!!!notbase64"), 0, "MediaPart.data"),
    "media data with whitespace": (
        _call(),
        _result(),
        _media(data=PNG[:8] + "\n" + PNG[8:]),
        0,
        "MediaPart.data",
    ),
    "media data unpadded": (_call(), _result(), _media(data="QUJDRA"), 0, "MediaPart.data"),
    "media data empty": (_call(), _result(), _media(data=""), 0, "MediaPart.data"),
    "media type empty": (_call(), _result(), _media(media_type=""), 0, "MediaPart.media_type"),
    "media url empty": (
        _call(),
        _result(),
        {"kind": "media", "media_type": "image/png", "url": ""},
        0,
        "MediaPart.url",
    ),
    "media file id empty": (
        _call(),
        _result(),
        {"kind": "media", "media_type": "image/png", "file_id": ""},
        0,
        "MediaPart.file_id",
    ),
    "result media not base64": (
        _call(),
        _result(media=[_media(data="@@")]),
        _media(),
        2,
        "MediaPart.data",
    ),
    "is_error 'no'": (
        _call(),
        _result(is_error="no"),
        _media(),
        2,
        "ToolResult.is_error must be a bool",
    ),
    "is_error 'yes'": (
        _call(),
        _result(is_error="yes"),
        _media(),
        2,
        "ToolResult.is_error must be a bool",
    ),
    "is_error 0": (_call(), _result(is_error=0), _media(), 2, "ToolResult.is_error must be a bool"),
    "is_error 1": (_call(), _result(is_error=1), _media(), 2, "ToolResult.is_error must be a bool"),
    "call name empty": (_call(name=""), _result(), _media(), 1, "ToolCall.name"),
    "reference empty": (_call(), _result(references=[""]), _media(), 2, "ToolResult.references"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_set_history_refuses_a_field_of_the_wrong_kind(case: str) -> None:
    call, result, media, index, named = BAD[case]
    chef = ContextChef()
    with pytest.raises(CorruptHistoryError, match=named) as info:
        chef.set_history(_history(call, result, media))
    assert f"message {index}" in str(info.value)
    assert chef.history == ()


@pytest.mark.parametrize("case", sorted(BAD))
def test_restore_refuses_it_from_either_builder(case: str) -> None:
    call, result, media, index, named = BAD[case]
    chef = ContextChef()
    chef.set_history(_history(_call(), _result(), _media()))
    snap = chef.snapshot()
    snap["history"] = _history(call, result, media)
    assert built(snap["history"][index]) is None  # the fast builder leaves it to the other
    with pytest.raises(CorruptHistoryError, match=named):
        ContextChef().restore(snap, allow_unsigned=True)


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (
            lambda: MediaPart(media_type="image/png", data="!!!notbase64"),
            "MediaPart.data must be base64",
        ),
        (lambda: MediaPart(media_type="image/png", data="é"), "MediaPart.data must be base64"),
        (lambda: MediaPart(media_type="image/png", data=""), "MediaPart.data"),
        (lambda: MediaPart(media_type="", url="https://x/a.png"), "MediaPart.media_type"),
        (
            lambda: ToolResult(call_id="c", name="t", content="", is_error="no"),
            "ToolResult.is_error must be a bool",
        ),  # type: ignore[arg-type]
        (
            lambda: ToolResult(call_id="c", name="t", content="", is_error=0),
            "ToolResult.is_error must be a bool",
        ),  # type: ignore[arg-type]
        (
            lambda: ToolResult(call_id="c", name="t", content="", is_error=None),
            "ToolResult.is_error must be a bool",
        ),  # type: ignore[arg-type]
        (lambda: ToolCall(id="c", name=""), "ToolCall.name must be a non-empty name"),
        (lambda: ToolResult(call_id="c", name="t", content="", references=("",)), "references"),
    ],
)
def test_direct_construction_refuses_it(make: Any, named: str) -> None:
    with pytest.raises(UsageError, match=named):
        make()


def test_valid_values_and_an_unnamed_result_are_kept() -> None:
    assert MediaPart(media_type="image/png", data=PNG).data == PNG
    assert ToolResult(call_id="c", name="t", content="", is_error=True).is_error is True
    orphan = ToolResult(call_id="c", name="", content="x")  # a parsed result of an unknown call
    assert message_from_dict(Message(role="user", parts=(orphan,)).to_dict()).parts == (orphan,)


def test_parsers_record_an_empty_function_name_as_a_malformed_call_with_a_note() -> None:
    """Replayed with ``""`` it would be refused on every later request (Anthropic: a name is
    ``^[a-zA-Z0-9_-]{1,128}$``); it is recorded as ``malformed_tool_call`` for the gate."""
    chat = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "", "arguments": "{}"}}
            ],
        },
    ]
    claude = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "", "input": {}}],
        },
    ]
    gemini = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "", "args": {}}}]},
    ]
    items = [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "", "arguments": "{}"},
    ]
    for parse, wire in [
        (from_openai, chat),
        (from_anthropic, claude),
        (from_gemini, gemini),
        (from_responses, items),
    ]:
        parsed = parse(wire)
        (call,) = [p for m in parsed.messages for p in m.parts if isinstance(p, ToolCall)]
        assert call.name == "malformed_tool_call", parse
        assert any("is empty, answered as 'malformed_tool_call'" in n for n in parsed.notes)
        assert any(n.startswith(("message 1:", "item 1:")) for n in parsed.notes), parsed.notes


def test_wire_results_without_a_name_are_named_from_their_call() -> None:
    """Chat tool messages and Responses outputs carry no name: the call's is taken."""
    chat = from_openai(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "grep", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "R"},
        ]
    )
    items = from_responses(
        [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "R"},
        ]
    )
    for parsed in (chat, items):
        assert parsed.messages[-1].tool_results[0].name == "grep"


def _gemini(fake: FakeGemini) -> genai.Client:
    http = types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai)))
    return genai.Client(api_key="t", http_options=http)


def _anthropic(fake: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )


def test_media_and_a_result_without_a_name_go_through_the_sdks_multi_turn() -> None:
    """Inline base64 media and an unnamed result, two turns, through both SDKs and fakes."""
    history = _history(_call(), _result(name=""), _media())
    for provider in ("anthropic", "gemini"):
        chef = ContextChef()
        chef.set_history(history)
        if provider == "gemini":
            g = FakeGemini().script(text("a png"), text("done"))
            for turn in range(2):
                p = chef.compile("gemini", model="gemini-2.5-flash").payload
                calls = [x for c in p["contents"] for x in c["parts"] if "function_response" in x]
                assert calls[0]["function_response"]["name"] == "grep"  # the call's name
                reply = _gemini(g).models.generate_content(**p)
                chef.ingest(reply)
                chef.append(Message(role="user", parts=(TextPart(text=f"more {turn}"),)))
            assert g.violations == ()
        else:
            a = FakeAnthropic().script(text("a png"), text("done"))
            for turn in range(2):
                p = chef.compile("anthropic", model="claude-sonnet-4-5", max_tokens=64).payload
                reply = _anthropic(a).messages.create(**p)
                chef.ingest(reply)
                chef.append(Message(role="user", parts=(TextPart(text=f"more {turn}"),)))
            assert a.violations == ()
            assert a.requests[1].body["messages"][0]["content"][1]["source"]["data"] == PNG


def test_the_fakes_refuse_what_the_providers_document() -> None:
    """Gemini: a function name is required; Anthropic: image data is base64."""
    g = FakeGemini().script(text("ok"))
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"function_call": {"name": "", "args": {}}}]},
        {
            "role": "user",
            "parts": [{"function_response": {"name": "", "response": {"output": "R"}}}],
        },
    ]
    with pytest.raises(genai_errors.ClientError):
        _gemini(g).models.generate_content(model="m", contents=contents)
    assert any("functionCall.name: required" in v.message for v in g.violations)
    assert any("functionResponse.name: required" in v.message for v in g.violations)
    a = FakeAnthropic().script(text("ok"))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "!!"}}
    with pytest.raises(anthropic.BadRequestError):
        _anthropic(a).messages.create(
            model="m", max_tokens=8, messages=[{"role": "user", "content": [image]}]
        )
    assert any(
        "messages[0].content[0]: source.data is not valid base64" in v.message for v in a.violations
    )


def test_mcp_image_data_that_is_not_base64_becomes_a_note() -> None:
    """An MCP server's bad image data is not sent on (providers refuse it): a note says so."""
    from contextchef.mcp import result_from_mcp

    raw = {
        "content": [
            {"type": "image", "mimeType": "image/png", "data": "%%%"},
            {"type": "image", "mimeType": "image/png", "data": PNG},
        ]
    }
    result = result_from_mcp(raw, call_id="c", name="shot")
    assert result.content == "[image/png content not shown: its data is not valid base64]"
    assert [m.data for m in result.media] == [PNG]
