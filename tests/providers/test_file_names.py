"""Inline file data goes to the OpenAI wires with a ``filename``.

OpenAI's file inputs guide sends every base64 ``file_data`` with a ``filename``, and the
API answers one without it with a 400 ("Missing required parameter", laravel/ai#321 on
Responses, openai/openai-agents-python#1513 on Chat); the SDK types mark it optional, so
the library sent none. Each request goes through the official SDK client against the
fake, which now refuses a nameless ``file_data`` as the API does.
"""

from __future__ import annotations

import base64
from typing import Any

import openai
import pytest

from contextchef import ContextChef, MediaPart, Message, TextPart
from contextchef.providers import from_responses
from contextchef.testing import FakeOpenAIChat, FakeResponses, fake_for, httpx_for, text
from sdk_send import send

HX = httpx_for(openai)
PDF = base64.b64encode(b"%PDF-1.4\n").decode()
CSV = base64.b64encode(b"a,b\n1,2\n").decode()


def _compiled(target: str, *media: MediaPart) -> dict[str, Any]:
    """The payload for one user message holding `media`, sent to `target`'s fake."""
    chef = ContextChef()
    chef.set_history([Message(role="user", parts=(TextPart(text="read"), *media))])
    request = chef.compile(target, model="gpt-5.5")
    fake = fake_for(target).script(text("ok"))
    send(target, fake, request.mutable_payload())
    assert fake.violations == ()
    return request.payload


@pytest.mark.parametrize(
    ("media", "name"),
    [
        (MediaPart(media_type="application/pdf", data=PDF), "attachment.pdf"),
        (MediaPart(media_type="text/csv", data=CSV), "attachment.csv"),
        (MediaPart(media_type="text/x-rust", data=CSV), "attachment.rust"),
        (
            MediaPart(media_type="application/pdf", data=PDF, provider_data={"filename": "q3.pdf"}),
            "q3.pdf",
        ),
    ],
)
def test_responses_sends_an_inline_file_with_a_name(media: MediaPart, name: str) -> None:
    payload = _compiled("responses", media)
    part = payload["input"][0]["content"][1]
    assert part["type"] == "input_file" and part["filename"] == name
    assert part["file_data"] == f"data:{media.media_type};base64,{media.data}"


def test_chat_sends_an_inline_pdf_with_a_name() -> None:
    payload = _compiled("openai", MediaPart(media_type="application/pdf", data=PDF))
    assert payload["messages"][0]["content"][1] == {
        "type": "file",
        "file": {"filename": "attachment.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
    }


def test_a_file_by_id_or_url_gets_no_name() -> None:
    payload = _compiled(
        "responses",
        MediaPart(media_type="application/pdf", file_id="file-abc"),
        MediaPart(media_type="application/pdf", url="https://example.com/a.pdf"),
    )
    parts = payload["input"][0]["content"][1:]
    assert parts == [
        {"type": "input_file", "file_id": "file-abc"},
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
    ]


def test_a_recorded_name_is_replayed_and_carried_to_the_other_openai_wire() -> None:
    sent = {
        "type": "input_file",
        "filename": "report.pdf",
        "file_data": f"data:application/pdf;base64,{PDF}",
    }
    chef = ContextChef()
    chef.set_history(from_responses([{"role": "user", "content": [sent]}]).messages)
    payload = chef.compile("responses", model="gpt-5.5").payload
    assert payload["input"][0]["content"] == [sent]
    chat = chef.compile("openai", model="gpt-5.5").payload
    assert chat["messages"][0]["content"][0]["file"]["filename"] == "report.pdf"


def test_the_fakes_refuse_file_data_without_a_name() -> None:
    responses = FakeResponses().script(text("ok"))
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=responses.http_client(HX))
    nameless: Any = {"type": "input_file", "file_data": f"data:application/pdf;base64,{PDF}"}
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="gpt-5.5", input=[{"role": "user", "content": [nameless]}])
    assert "input[0].content[0].filename: Missing required parameter" in str(refused.value)
    chat_fake = FakeOpenAIChat().script(text("ok"))
    chat = openai.OpenAI(api_key="x", max_retries=0, http_client=chat_fake.http_client(HX))
    part: Any = {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF}"}}
    with pytest.raises(openai.BadRequestError) as refused:
        chat.chat.completions.create(
            model="gpt-5.5", messages=[{"role": "user", "content": [part]}]
        )
    assert "messages[0].content[0].file.file_id: Missing required parameter" in str(refused.value)
