"""Chat Completions model rules as data: the media each model takes.

The media tables are per model where OpenAI's model pages say so: the audio models
take text and audio in ("Input modalities: text, audio", and "Image: Not supported" for
``gpt-4o-audio-preview``: https://developers.openai.com/api/docs/models/gpt-audio,
https://developers.openai.com/api/docs/models/gpt-4o-audio-preview; the SDK's
``ChatModel`` names ``gpt-4o-audio-preview*``, ``gpt-4o-mini-audio-preview*`` and
``gpt-audio-mini*``), and ``input_audio`` parts are for them only (the audio guide,
https://platform.openai.com/docs/guides/audio). Every other model, a made-up name
included, gets `CHAT_MEDIA`. A new family is a new row of `MODEL_MEDIA`.
"""

from __future__ import annotations

from contextchef.providers._media import MediaRules
from contextchef.providers.openai_chat._media import AUDIO_MEDIA, CHAT_MEDIA, PART_MEDIA

__all__ = ["MODEL_MEDIA", "chat_media", "refused_parts"]

MODEL_MEDIA: tuple[tuple[str, MediaRules], ...] = (
    ("gpt-4o-audio-preview", AUDIO_MEDIA),
    ("gpt-4o-mini-audio-preview", AUDIO_MEDIA),
    ("gpt-audio", AUDIO_MEDIA),  # gpt-audio, gpt-audio-mini and their dated snapshots
)
"""Model-name prefix -> the media the model takes; the first match wins."""


def chat_media(model: str) -> MediaRules:
    """The media `model` takes in a Chat message (`MODEL_MEDIA`, else `CHAT_MEDIA`).

    The name is matched in lower case, after any router prefix (``openai/gpt-audio``).
    """
    name = model.lower().rpartition("/")[2]
    return next((rules for prefix, rules in MODEL_MEDIA if name.startswith(prefix)), CHAT_MEDIA)


def refused_parts(model: str) -> frozenset[str]:
    """The content part types `model` refuses: those whose media its table lacks."""
    message = chat_media(model).message
    return frozenset(kind for kind, media in PART_MEDIA.items() if media not in message)
