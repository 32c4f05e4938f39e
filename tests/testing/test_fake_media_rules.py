"""The fakes refuse media types the APIs refuse (break-it 35: they took them all).

Hand-written requests go through the official SDK clients; a refused one comes back as
the SDK's ``BadRequestError`` naming the rule and the place, and the same request with a
type the API takes is answered. `fake_for` gives a target whose `Profile.media` is False
(DeepSeek: message content is text) a Chat fake refusing every non-text part.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from contextchef.testing import (
    CHAT_RULES,
    FakeAnthropic,
    FakeGemini,
    FakeGeminiInteractions,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    fake_for,
    httpx_for,
    text,
)

HX = httpx_for(anthropic)
MODEL = "test-model"


def _outcome(fake: FakeProvider, send: Callable[[], object]) -> str | None:
    """The refusal's text (None: answered), after sending once."""
    fake.script(text("ok"))
    try:
        send()
    except Exception as exc:  # each SDK's own 400 error; the text names the rule
        return str(exc)
    return None


def _anthropic(fake: FakeProvider, content: list[dict[str, Any]]) -> str | None:
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    messages: Any = [{"role": "user", "content": content}]
    beta = {"anthropic-beta": "files-api-2025-04-14"}  # for a file source (its own rule)
    return _outcome(
        fake,
        lambda: client.messages.create(
            model=MODEL, max_tokens=9, messages=messages, extra_headers=beta
        ),
    )


def _image(media_type: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": "AAAA"}}


def _document(source: dict[str, Any]) -> dict[str, Any]:
    return {"type": "document", "source": source}


@pytest.mark.parametrize(
    ("block", "where"),
    [
        (_image("image/bmp"), "messages.0.content.0.source.media_type: Input should be"),
        (_image("image/svg+xml"), "'image/svg+xml'"),
        (
            _document({"type": "base64", "media_type": "audio/wav", "data": "AAAA"}),
            "messages.0.content.0.source.base64.media_type: Input should be 'application/pdf'",
        ),
        (
            _document({"type": "base64", "media_type": "text/plain", "data": "AAAA"}),
            "(got 'text/plain')",
        ),
        (
            {
                "type": "tool_result",
                "tool_use_id": "t",
                "content": [
                    _document({"type": "base64", "media_type": "video/mp4", "data": "AAAA"})
                ],
            },
            "messages.0.content.0.content.0.source.base64.media_type",
        ),
    ],
)
def test_anthropic_fake_refuses_media_types_the_api_refuses(
    block: dict[str, Any], where: str
) -> None:
    rules = [
        r for r in FakeAnthropic.default_rules if r.__name__ != "anthropic_tool_result_has_call"
    ]
    fake = FakeAnthropic(rules=rules)
    refused = _anthropic(fake, [block])
    assert refused is not None and "rule anthropic_media_types broken" in refused
    assert where in refused
    assert {v.rule for v in fake.violations} == {"anthropic_media_types"}


def test_anthropic_fake_takes_the_media_types_the_api_takes() -> None:
    fake = FakeAnthropic()
    content = [
        *(_image(t) for t in ("image/jpeg", "image/png", "image/gif", "image/webp")),
        _document({"type": "base64", "media_type": "application/pdf", "data": "AAAA"}),
        _document({"type": "text", "media_type": "text/plain", "data": "hello"}),
        _document({"type": "file", "file_id": "file-1"}),
        {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
    ]
    assert _anthropic(fake, content) is None
    assert fake.violations == ()


def _chat(fake: FakeProvider, parts: list[dict[str, Any]], model: str = MODEL) -> str | None:
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    messages: Any = [{"role": "user", "content": parts}]
    return _outcome(fake, lambda: client.chat.completions.create(model=model, messages=messages))


@pytest.mark.parametrize(
    ("part", "where"),
    [
        (
            {"type": "image_url", "image_url": {"url": "data:image/bmp;base64,Qk0="}},
            "messages[0].content[0].image_url.url: unsupported image type 'image/bmp'",
        ),
        (
            {"type": "file", "file": {"file_data": "data:audio/wav;base64,UklGRg=="}},
            "messages[0].content[0].file.file_data: only PDF files are supported, got 'audio/wav'",
        ),
        (
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "flac"}},
            "input_audio.format: must be 'wav' or 'mp3', got 'flac'",
        ),
    ],
)
def test_chat_fake_refuses_media_types_the_api_refuses(part: dict[str, Any], where: str) -> None:
    fake = FakeOpenAIChat()
    refused = _chat(fake, [part])
    assert refused is not None and "rule chat_media_types broken" in refused and where in refused


def test_chat_fake_takes_pngs_pdfs_and_wav() -> None:
    fake = FakeOpenAIChat()
    parts = [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {
            "type": "file",
            "file": {"file_data": "data:application/pdf;base64,AAAA", "filename": "a.pdf"},
        },
    ]
    assert _chat(fake, parts) is None
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}}
    assert _chat(fake, [audio], model="gpt-audio-mini-2025-12-15") is None


@pytest.mark.parametrize(
    ("model", "part"),
    [
        ("gpt-5.5", {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}}),
        ("gpt-4o", {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}),
        ("gpt-audio", {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}),
        ("gpt-4o-audio-preview", {"type": "file", "file": {"file_id": "file-1"}}),
    ],
)
def test_chat_fake_refuses_audio_to_a_model_without_audio_input_and_images_to_one_with(
    model: str, part: dict[str, Any]
) -> None:
    refused = _chat(FakeOpenAIChat(), [{"type": "text", "text": "hi"}, part], model=model)
    assert refused is not None and "rule chat_model_media broken" in refused
    assert f"messages[0].content[1]: {part['type']} is not supported by model {model!r}" in refused


def test_the_fake_for_a_text_only_target_refuses_image_parts() -> None:
    fake = fake_for("deepseek")
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    refused = _chat(fake, [{"type": "text", "text": "look"}, image])
    assert refused is not None and "rule chat_text_content broken" in refused
    assert "messages[0].content[1]: unknown variant 'image_url', expected `text`" in refused
    assert _chat(fake, [{"type": "text", "text": "look"}]) is None
    assert _chat(fake_for("openai"), [image]) is None  # Chat itself takes it
    assert FakeOpenAIChat().rules == CHAT_RULES  # the Chat fake is unchanged


def test_responses_fake_refuses_audio_files_and_bmp_images_in_outputs_too() -> None:
    fake = FakeResponses()
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    wav = {"type": "input_file", "file_data": "data:audio/wav;base64,AAAA", "filename": "a.wav"}
    bmp = {"type": "input_image", "image_url": "data:image/bmp;base64,Qk0=", "detail": "auto"}
    items: Any = [
        {"role": "user", "content": [wav]},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": [bmp]},
    ]
    refused = _outcome(fake, lambda: client.responses.create(model=MODEL, input=items))
    assert refused is not None and "rule responses_media_types broken" in refused
    assert "input[0].content[0].file_data: unsupported file type 'audio/wav'" in refused
    assert "input[2].output[0].image_url: unsupported image type 'image/bmp'" in refused
    csv = {"type": "input_file", "file_data": "data:text/csv;base64,AAAA", "filename": "a.csv"}
    items[0]["content"] = [csv]
    items[2]["output"] = [{**bmp, "image_url": "data:image/png;base64,AAAA"}]
    assert _outcome(fake, lambda: client.responses.create(model=MODEL, input=items)) is None


def test_gemini_fake_refuses_a_gif_in_a_function_response() -> None:
    fake = FakeGemini()
    http = genai_types.HttpOptions(httpx_client=fake.http_client(HX))
    client = genai.Client(api_key="x", http_options=http)

    def contents(mime: str) -> Any:
        blob = {"inline_data": {"mime_type": mime, "data": "R0lGOA=="}}
        reply = {"id": "c", "name": "f", "response": {"output": "r"}, "parts": [blob]}
        return [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"function_call": {"id": "c", "name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"function_response": reply}]},
        ]

    refused = _outcome(
        fake, lambda: client.models.generate_content(model=MODEL, contents=contents("image/gif"))
    )
    assert refused is not None and "rule gemini_function_response_media broken" in refused
    assert (
        "contents[2].parts[0].functionResponse.parts[0].inlineData.mimeType: 'image/gif'" in refused
    )
    assert (
        _outcome(
            fake,
            lambda: client.models.generate_content(model=MODEL, contents=contents("image/png")),
        )
        is None
    )


def test_interactions_fake_refuses_a_zip_in_a_function_result() -> None:
    fake = FakeGeminiInteractions()
    http = genai_types.HttpOptions(httpx_client=fake.http_client(HX))
    client = genai.Client(api_key="x", http_options=http)

    def steps(mime: str) -> Any:
        blob = {"type": "document", "data": "UEs=", "mime_type": mime}
        return [
            {"type": "user_input", "content": [{"type": "text", "text": "go"}]},
            {"type": "function_call", "id": "c", "name": "f", "arguments": {}},
            {"type": "function_result", "call_id": "c", "name": "f", "result": [blob]},
        ]

    create = client.interactions.create
    refused = _outcome(
        fake, lambda: create(model=MODEL, input=steps("application/zip"), store=False)
    )
    assert refused is not None and "rule interactions_result_media broken" in refused
    assert "input[2].result[0].mime_type: 'application/zip' is not supported" in refused
    assert (
        _outcome(fake, lambda: create(model=MODEL, input=steps("application/pdf"), store=False))
        is None
    )
