"""Media a target does not take are sent as reported text notes, never as refused blocks.

Break-it 35: a tool's image went to DeepSeek (text-only content) as an ``image_url`` part,
and ``image/bmp`` / audio / video / zip tool results went to Anthropic and Chat as image,
document or file parts the APIs refuse, all with ``changes == ()``; the fakes took them,
so nothing here saw it. Each request goes through the official SDK client against the
target's fake (`fake_for`), which now refuses what the API refuses.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from contextchef import (
    ContextChef,
    MediaPart,
    Message,
    TextPart,
    ToolCall,
    ToolResult,
    assistant,
    user,
)
from contextchef.testing import Ids, fake_for, text
from sdk_send import send

IDS = Ids()  # one for every fake here: no two replies share a response id
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
MODELS = {
    "anthropic": "claude-opus-5-5",
    "openai": "gpt-5.5",
    "deepseek": "deepseek-chat",
    "responses": "gpt-5.5",
    "gemini": "gemini-3-pro",
    "gemini-interactions": "gemini-3-pro",
}


def note(media_type: str, where: str = "inline data") -> str:
    return f"[{media_type} attachment not shown ({where}): a type the API does not take]"


def _chef(*media: MediaPart, content: str = "r") -> ContextChef:
    def tool(url: str) -> ToolResult:
        """Fetch something.

        Args:
            url: Where.
        """
        return ToolResult(call_id="x", name="tool", content=content, media=media)

    chef = ContextChef()
    chef.register_tools([tool])
    chef.set_history([user("look")])
    call = ToolCall(id="c1", name="tool", arguments={"url": "u"})
    chef.append(assistant("", [call]))
    chef.run_tools([call])
    return chef


def _sent(target: str, chef: ContextChef) -> tuple[Any, list[str]]:
    """Compile for `target`, send through its SDK to its fake: (request, media changes).

    The fake's reply is ingested.
    """
    request = chef.compile(target, model=MODELS[target])
    fake = fake_for(target, ids=IDS).script(text("ok"))
    chef.ingest(send(target, fake, request.mutable_payload(), request.headers))
    assert fake.violations == ()
    return request, [c.detail for c in request.changes if c.kind == "media_as_text"]


def test_deepseek_gets_a_tools_image_as_a_note_in_the_tool_message() -> None:
    chef = _chef(MediaPart(media_type="image/png", data=PNG))
    request, changes = _sent("deepseek", chef)
    messages = request.payload["messages"]
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": f"r\n\n{note('image/png')}",
    }
    assert changes == [
        "message 2: the result of call 'c1' held image/png (data), which the target does not "
        "take there; sent as a text note"
    ]
    chef.append(user("more"))
    again, later = _sent("deepseek", chef)
    assert again.payload["messages"][: len(messages)] == messages  # replayed as sent
    assert later == []


def test_deepseek_gets_a_users_image_as_a_note() -> None:
    chef = ContextChef()
    chef.set_history(
        [
            Message(
                role="user",
                parts=(TextPart(text="look"), MediaPart(media_type="image/png", data=PNG)),
            )
        ]
    )
    request, changes = _sent("deepseek", chef)
    assert request.payload["messages"] == [
        {"role": "user", "content": f"look\n\n{note('image/png')}"}
    ]
    assert len(changes) == 1 and changes[0].startswith("message 0: a user message held image/png")


def test_chat_takes_pngs_and_pdfs_and_notes_the_rest() -> None:
    chef = _chef(
        MediaPart(media_type="image/png", data=PNG),
        MediaPart(media_type="image/bmp", data="Qk0="),
        MediaPart(media_type="audio/wav", data="UklGRg=="),
        MediaPart(media_type="application/pdf", file_id="file-abc"),
        MediaPart(media_type="video/mp4", data="AAAA"),
        MediaPart(media_type="application/zip", url="https://example.com/a.zip"),
    )
    request, changes = _sent("openai", chef)
    tool, attachments = request.payload["messages"][-2:]
    notes = [
        note("image/bmp"),
        note("audio/wav"),  # gpt-5.5 takes no audio: the audio models do (test_chat_audio_models)
        note("video/mp4"),
        note("application/zip", "https://example.com/a.zip"),
    ]
    assert tool == {"role": "tool", "tool_call_id": "c1", "content": "r\n\n" + "\n".join(notes)}
    assert attachments["content"][1:] == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "file", "file": {"file_id": "file-abc"}},
    ]
    assert len(changes) == 4


@pytest.mark.parametrize(
    ("media", "block"),
    [
        (
            MediaPart(media_type="image/webp", data="UklGRg=="),
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/webp", "data": "UklGRg=="},
            },
        ),
        (
            MediaPart(media_type="application/pdf", data="JVBERg=="),
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="},
            },
        ),
        (
            MediaPart(media_type="text/plain", data=base64.b64encode(b"hello").decode()),
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "hello"},
            },
        ),
        (
            MediaPart(media_type="application/pdf", file_id="file-abc"),
            {"type": "document", "source": {"type": "file", "file_id": "file-abc"}},
        ),
    ],
)
def test_anthropic_sends_the_media_it_takes(media: MediaPart, block: dict[str, Any]) -> None:
    request, changes = _sent("anthropic", _chef(media))
    (result,) = request.payload["messages"][-1]["content"]
    assert result["content"] == [{"type": "text", "text": "r"}, block]
    assert changes == []


@pytest.mark.parametrize(
    "media",
    [
        MediaPart(media_type="image/bmp", data="Qk0="),
        MediaPart(media_type="image/svg+xml", data="PHN2Zz4="),
        MediaPart(media_type="audio/wav", data="UklGRg=="),
        MediaPart(media_type="video/mp4", data="AAAA"),
        MediaPart(media_type="application/zip", data="UEs="),
    ],
)
def test_anthropic_notes_the_media_it_refuses(media: MediaPart) -> None:
    request, changes = _sent("anthropic", _chef(media))
    (result,) = request.payload["messages"][-1]["content"]
    assert result["content"] == f"r\n\n{note(media.media_type)}"
    assert len(changes) == 1 and media.media_type in changes[0]


def test_anthropic_notes_a_users_audio_in_place() -> None:
    chef = ContextChef()
    audio = MediaPart(media_type="audio/wav", data="UklGRg==")
    chef.set_history([Message(role="user", parts=(TextPart(text="listen"), audio))])
    request, changes = _sent("anthropic", chef)
    blocks = request.payload["messages"][0]["content"]
    assert [{k: b[k] for k in ("type", "text")} for b in blocks] == [
        {"type": "text", "text": "listen"},
        {"type": "text", "text": note("audio/wav")},
    ]
    assert len(changes) == 1


def test_responses_takes_images_and_documents_and_notes_audio() -> None:
    csv = base64.b64encode(b"a,b\n1,2\n").decode()
    chef = _chef(
        MediaPart(media_type="image/png", data=PNG),
        MediaPart(media_type="text/csv", data=csv),
        MediaPart(media_type="audio/wav", data="UklGRg=="),
    )
    request, changes = _sent("responses", chef)
    output = request.payload["input"][-1]["output"]
    assert [p["type"] for p in output] == ["input_text", "input_image", "input_file"]
    assert output[0]["text"] == f"r\n\n{note('audio/wav')}"
    assert output[2]["file_data"] == f"data:text/csv;base64,{csv}"
    assert len(changes) == 1


def test_gemini_function_response_takes_png_and_notes_gif() -> None:
    chef = _chef(
        MediaPart(media_type="image/png", data=PNG),
        MediaPart(media_type="image/gif", data="R0lGOA=="),
    )
    request, changes = _sent("gemini", chef)
    (part,) = request.payload["contents"][-1]["parts"]
    reply = part["function_response"]
    assert reply["response"] == {"output": f"r\n\n{note('image/gif')}"}
    assert reply["parts"] == [{"inline_data": {"mime_type": "image/png", "data": PNG}}]
    assert len(changes) == 1


def test_gemini_takes_a_users_audio_and_notes_a_zip() -> None:
    chef = ContextChef()
    parts = (
        TextPart(text="listen"),
        MediaPart(media_type="audio/wav", data="UklGRg=="),
        MediaPart(media_type="application/zip", data="UEs="),
    )
    chef.set_history([Message(role="user", parts=parts)])
    request, changes = _sent("gemini", chef)
    assert request.payload["contents"][0]["parts"] == [
        {"text": "listen"},
        {"inline_data": {"mime_type": "audio/wav", "data": "UklGRg=="}},
        {"text": note("application/zip")},
    ]
    assert len(changes) == 1


def test_interactions_notes_a_zip_returned_by_a_tool() -> None:
    request, changes = _sent(
        "gemini-interactions", _chef(MediaPart(media_type="application/zip", data="UEs="))
    )
    result = request.payload["input"][-1]
    assert result["type"] == "function_result"
    assert result["result"] == f"r\n\n{note('application/zip')}"
    assert len(changes) == 1


def test_compile_leaves_the_history_as_it_was() -> None:
    media = MediaPart(media_type="image/bmp", data="Qk0=")
    chef = _chef(media)
    before = chef.history
    _sent("anthropic", chef)
    assert chef.history[: len(before)] == before
    assert before[-1].parts[0].media == (media,)  # type: ignore[union-attr]
    assert before[-1] is chef.history[len(before) - 1]


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_a_media_type_in_upper_case_is_sent_in_lower_case(target: str) -> None:
    # break-it 36 #4: IMAGE/PNG was taken by the tables (they compare in lower case) and
    # sent as given, which every API refuses (media types are case-insensitive, RFC 6838)
    part = MediaPart(media_type="IMAGE/PNG; Name=Shot", data=PNG)
    assert part.media_type == "image/png; Name=Shot"
    chef = _chef(MediaPart(media_type="Image/PNG", data=PNG))
    request, changes = _sent(target, chef)
    assert changes == [] and "image/png" in str(request.payload)
    assert "Image/PNG" not in str(request.payload)


def test_anthropic_notes_plain_text_data_that_is_not_utf8() -> None:
    # break-it 36 #12: latin-1 bytes were sent decoded with U+FFFD in place of what was lost
    data = base64.b64encode("café".encode("latin-1")).decode()
    chef = _chef(MediaPart(media_type="text/plain", data=data))
    request, changes = _sent("anthropic", chef)
    assert len(changes) == 1 and "text/plain" in changes[0]
    assert "\ufffd" not in json.dumps(request.payload, ensure_ascii=False)
