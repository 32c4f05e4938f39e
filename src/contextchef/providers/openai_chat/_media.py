"""The media Chat Completions takes, as data (`MediaRules`), and its audio part.

* Images (``image_url`` parts, a URL or a base64 ``data:`` URL): PNG, JPEG, WEBP and
  non-animated GIF (https://platform.openai.com/docs/guides/images-vision, "Image input
  requirements"; the SDK's ``ChatCompletionContentPartImageParam`` takes a ``url`` only,
  so no file id).
* Files (``file`` parts): PDF only, as ``file_data`` or ``file_id``; no file URL
  (https://developers.openai.com/api/docs/guides/file-inputs: "Chat Completions accepts
  only PDF files as file content parts").
* Audio (``input_audio`` parts): base64 ``data`` in ``wav`` or ``mp3`` format (the SDK's
  ``ChatCompletionContentPartInputAudioParam``, ``format: Literal["wav", "mp3"]``;
  https://platform.openai.com/docs/guides/audio), on the audio models only.

Which table a model gets is the model's (`_models.chat_media`): the audio models
(``gpt-audio``, ``gpt-4o-audio-preview``... : "Input modalities: text, audio", "Image:
Not supported", https://developers.openai.com/api/docs/models/gpt-audio and
.../models/gpt-4o-audio-preview) take `AUDIO_MEDIA`; every other Chat model
`CHAT_MEDIA`, images and PDFs but no audio (the audio guide: audio input is for the
audio models).

A tool message holds text only (``ChatCompletionToolMessageParam``): a result's media go
in a user message after the batch's tool messages, so a result takes what a user message
takes. A Chat-compatible API whose message content is text (`Profile.media` False:
DeepSeek, https://api-docs.deepseek.com/api/create-chat-completion) takes none.

Size and count limits (`IMAGE_LIMITS`, `providers._media_limits`), from the images and
vision guide's "Image input requirements": "Up to 20MB per image", "Up to 500 individual
images per request", "Up to 50 MB image bytes per request" (sizes read as the base64
data sent, the stricter reading). The Responses API takes the same images and limits.
"""

from __future__ import annotations

from types import MappingProxyType

from contextchef.providers._media import MediaLimit, MediaRules, Source

__all__ = ["AUDIO_FORMATS", "AUDIO_MEDIA", "CHAT_MEDIA", "IMAGE_LIMITS", "PART_MEDIA", "TEXT_ONLY"]

AUDIO_FORMATS = MappingProxyType(
    {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}
)
"""Media type -> the ``input_audio.format`` it is sent with."""

IMAGE_LIMITS = (
    MediaLimit(
        kinds=frozenset({"image/*"}),
        one="image",
        many="images",
        item_bytes=20_000_000,
        count=500,
        total_bytes=50_000_000,
    ),
)
"""The images and vision guide's image size and count limits (module doc)."""

_IMAGE: frozenset[Source] = frozenset({"data", "url"})
_DATA: frozenset[Source] = frozenset({"data"})
CHAT_MEDIA = MediaRules(
    message=MappingProxyType(
        {
            **dict.fromkeys(("image/png", "image/jpeg", "image/webp", "image/gif"), _IMAGE),
            "application/pdf": frozenset({"data", "file_id"}),
        }
    ),
    source="images-vision and file-inputs guides; openai SDK content part types",
    limits=IMAGE_LIMITS,
)
"""What a Chat Completions model other than the audio models takes (see the module doc)."""

AUDIO_MEDIA = MediaRules(
    message=MappingProxyType(dict.fromkeys(AUDIO_FORMATS, _DATA)),
    source="audio guide; gpt-audio and gpt-4o-audio-preview model pages (text and audio in)",
)
"""What the audio models take: wav and mp3 data, no image or file (see the module doc)."""

TEXT_ONLY = MediaRules(source="message content is text")
"""What a Chat-compatible API taking no media parts takes: nothing."""

PART_MEDIA = MappingProxyType(
    {"input_audio": "audio/wav", "image_url": "image/png", "file": "application/pdf"}
)
"""A content part type -> a media type it carries: the part is one a model refuses
when its table takes no such type (`_models.refused_parts`)."""
