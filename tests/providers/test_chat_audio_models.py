"""Chat Completions takes ``input_audio`` on the audio models only: media rules per model.

OpenAI's audio guide puts audio input on the audio models (``gpt-audio``,
``gpt-4o-audio-preview``...), whose model pages list "Input modalities: text, audio"
("Image: Not supported"). The media table was per API, so a wav went as ``input_audio``
to every Chat model. Now each model gets its table (`providers.openai_chat._models`):
what a model does not take is the reported ``media_as_text`` note. Every request goes
through the official SDK client against the Chat fake, which enforces the rule per model.
"""

from __future__ import annotations

import base64

import pytest

from contextchef import ContextChef, MediaPart, Message, TextPart, user
from contextchef.testing import Ids, fake_for, text
from sdk_send import send

IDS = Ids()
WAV = "UklGRg=="
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
AUDIO = {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}}


def note(media_type: str) -> str:
    return f"[{media_type} attachment not shown (inline data): a type the API does not take]"


def _chef(*media: MediaPart) -> ContextChef:
    chef = ContextChef()
    chef.set_history([Message(role="user", parts=(TextPart(text="listen"), *media))])
    return chef


def _turn(chef: ContextChef, model: str) -> object:
    request = chef.compile("openai", model=model)
    fake = fake_for("openai", ids=IDS).script(text("ok"))
    chef.ingest(send("openai", fake, request.mutable_payload()))
    assert fake.violations == ()
    return request


@pytest.mark.parametrize(
    "model", ["gpt-audio", "gpt-audio-mini-2025-12-15", "gpt-4o-audio-preview"]
)
def test_an_audio_model_gets_the_audio_and_notes_the_image(model: str) -> None:
    request = _turn(
        _chef(
            MediaPart(media_type="audio/wav", data=WAV), MediaPart(media_type="image/png", data=PNG)
        ),
        model,
    )
    assert request.payload["messages"][0]["content"] == [  # type: ignore[attr-defined]
        {"type": "text", "text": "listen"},
        AUDIO,
        {"type": "text", "text": note("image/png")},
    ]
    changes = [c for c in request.changes if c.kind == "media_as_text"]  # type: ignore[attr-defined]
    assert [c.detail for c in changes] == [
        "message 0: a user message held image/png (data), which the target does not take "
        "there; sent as a text note"
    ]


@pytest.mark.parametrize("model", ["gpt-5.5", "gpt-4o", "my-finetune"])
def test_another_chat_model_gets_the_audio_as_a_reported_note(model: str) -> None:
    request = _turn(_chef(MediaPart(media_type="audio/wav", data=WAV)), model)
    content = request.payload["messages"][0]["content"]  # type: ignore[attr-defined]
    assert content == f"listen\n\n{note('audio/wav')}"
    kinds = [c.kind for c in request.changes]  # type: ignore[attr-defined]
    assert kinds == ["media_as_text"]


def test_audio_sent_to_an_audio_model_is_sent_again_as_a_note_after_a_switch() -> None:
    chef = _chef(MediaPart(media_type="audio/wav", data=WAV))
    first = _turn(chef, "gpt-audio")
    assert AUDIO in first.payload["messages"][0]["content"]  # type: ignore[attr-defined]
    chef.append(user("and now?"))
    second = _turn(chef, "gpt-5.5")  # the fake refuses input_audio for gpt-5.5
    messages = second.payload["messages"]  # type: ignore[attr-defined]
    assert messages[0]["content"] == f"listen\n\n{note('audio/wav')}"
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    edits = second.edits  # type: ignore[attr-defined]
    assert edits and "input_audio parts" in str(edits)
