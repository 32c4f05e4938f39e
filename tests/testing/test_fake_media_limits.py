"""The fakes refuse media over the APIs' size and count limits (break-it 37 #4: they took them).

Hand-written requests go through the official SDK clients: one just within each limit is
answered, one just past it is refused with the SDK's ``BadRequestError`` naming the rule.
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
    FakeAnthropic,
    FakeGemini,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    httpx_for,
    text,
)

HX = httpx_for(anthropic)
MB = 1024 * 1024


def _outcome(fake: FakeProvider, send: Callable[[], object]) -> str | None:
    """The refusal's text (None: answered), after sending once."""
    fake.script(text("ok"))
    try:
        send()
    except (anthropic.BadRequestError, openai.BadRequestError, genai.errors.ClientError) as e:
        return str(e)
    return None


def _image(data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def _anthropic(*content: dict[str, Any]) -> str | None:
    fake = FakeAnthropic()
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    messages: Any = [{"role": "user", "content": [*content, {"type": "text", "text": "look"}]}]
    return _outcome(
        fake, lambda: client.messages.create(model="m", max_tokens=8, messages=messages)
    )


def test_anthropic_fake_refuses_an_image_over_5_mb() -> None:
    assert _anthropic(_image("A" * (5 * MB))) is None
    refused = _anthropic(_image("A" * (5 * MB + 4)))
    assert refused is not None and "rule anthropic_media_limits broken" in refused
    assert "messages.0.content.0.source.base64: image exceeds 5 MB maximum" in refused


def test_anthropic_fake_refuses_more_than_100_images() -> None:
    assert _anthropic(*[_image("AAAA")] * 100) is None
    refused = _anthropic(*[_image("AAAA")] * 101)
    assert refused is not None and "too many images (101): at most 100" in refused


def test_anthropic_fake_refuses_a_request_over_32_mb() -> None:
    assert _anthropic(*[_image("A" * (4 * MB))] * 7) is None
    refused = _anthropic(*[_image("A" * (4 * MB))] * 9)
    assert refused is not None and "request_too_large" in refused


def _url(size: int) -> str:
    return "data:image/png;base64," + "A" * size


def _chat(*urls: str) -> str | None:
    fake = FakeOpenAIChat()
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    parts = [{"type": "image_url", "image_url": {"url": u}} for u in urls]
    messages: Any = [{"role": "user", "content": [{"type": "text", "text": "look"}, *parts]}]
    return _outcome(fake, lambda: client.chat.completions.create(model="m", messages=messages))


def _responses(*urls: str) -> str | None:
    fake = FakeResponses()
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    parts = [{"type": "input_image", "image_url": u, "detail": "auto"} for u in urls]
    items: Any = [{"role": "user", "content": [{"type": "input_text", "text": "look"}, *parts]}]
    return _outcome(fake, lambda: client.responses.create(model="m", input=items))


@pytest.mark.parametrize("send", [_chat, _responses])
def test_openai_fakes_refuse_images_over_the_guides_limits(
    send: Callable[..., str | None],
) -> None:
    assert send(_url(20_000_000)) is None
    too_large = send(_url(20_000_001))
    assert too_large is not None and "the limit is 20 MB per image" in too_large
    assert send(*[_url(4)] * 500) is None
    too_many = send(*[_url(4)] * 501)
    assert too_many is not None and "too many images in this request (501)" in too_many
    too_much = send(*[_url(17_000_000)] * 3)
    assert too_much is not None and "exceed the limit of 50 MB per request" in too_much
    assert "rule openai_image_limits broken" in too_much


def _gemini(*parts: dict[str, Any]) -> str | None:
    fake = FakeGemini()
    client = genai.Client(
        api_key="x", http_options=genai_types.HttpOptions(httpx_client=fake.http_client(HX))
    )
    contents: Any = [{"role": "user", "parts": [{"text": "look"}, *parts]}]
    return _outcome(fake, lambda: client.models.generate_content(model="m", contents=contents))


def _inline(kind: str, size: int) -> dict[str, Any]:
    return {"inline_data": {"mime_type": kind, "data": "A" * size}}


def test_gemini_fake_refuses_inline_data_over_the_limits() -> None:
    assert _gemini(_inline("application/pdf", 48_000_000)) is None
    pdf = _gemini(_inline("application/pdf", 50_000_004))
    assert pdf is not None and "the PDF is larger than 50 MB" in pdf
    assert _gemini(*[_inline("image/png", 4)] * 3_600) is None
    many = _gemini(*[_inline("image/png", 4)] * 3_601)
    assert many is not None and "too many images (3601)" in many
    total = _gemini(*[_inline("video/mp4", 40_000_000)] * 3)
    assert total is not None and "bytes of inline data > 100 MB" in total
    assert "rule gemini_media_limits broken" in total
