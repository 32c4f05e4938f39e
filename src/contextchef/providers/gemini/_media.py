"""The media Gemini takes, as data (`MediaRules`): in a user turn, and in a function response.

A user turn's ``inline_data`` / ``file_data`` part takes the types the Gemini API docs
list: images PNG, JPEG, WEBP, HEIC, HEIF
(https://ai.google.dev/gemini-api/docs/image-understanding); audio WAV, MP3, AIFF, AAC,
OGG, FLAC (https://ai.google.dev/gemini-api/docs/audio); video MP4, MPEG, MOV, AVI, FLV,
MPG, WEBM, WMV, 3GPP (https://ai.google.dev/gemini-api/docs/video-understanding); PDF and
text documents (https://ai.google.dev/gemini-api/docs/document-processing).

A ``function_response``'s ``parts`` (multimodal function responses, Gemini 3,
https://ai.google.dev/gemini-api/docs/gemini-3 and
https://ai.google.dev/gemini-api/docs/function-calling) take inline images PNG, JPEG,
WEBP and documents PDF and plain text; their ``file_data`` is "not supported in Gemini
API" (google-genai ``FunctionResponseFileData``), so inline data only. The Interactions
API serves the same models and takes these tables too.

Size and count limits (`GEMINI_LIMITS`, `providers._media_limits`): inline data is at most
100 MB a request, base64 encoded ("we are increasing the maximum payload size for inline
data from 20MB to 100MB (base64 encoded...)", "Increased file size limits and expanded
inputs support in Gemini API", https://blog.google/innovation-and-ai/technology/developers-tools/gemini-api-new-file-limits);
a request holds at most 3,600 images (image understanding,
https://ai.google.dev/gemini-api/docs/image-understanding); a PDF is at most 50 MB
(document processing, https://ai.google.dev/gemini-api/docs/document-processing).
"""

from __future__ import annotations

from types import MappingProxyType

from contextchef.providers._media import ALL_SOURCES, MediaLimit, MediaRules, Source

__all__ = ["GEMINI_LIMITS", "GEMINI_MEDIA"]

_MESSAGE = (
    *("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"),
    *("audio/wav", "audio/mp3", "audio/mpeg", "audio/aiff", "audio/aac", "audio/ogg"),
    "audio/flac",
    *("video/mp4", "video/mpeg", "video/mov", "video/quicktime", "video/avi", "video/x-flv"),
    *("video/mpg", "video/webm", "video/wmv", "video/3gpp"),
    *("application/pdf", "text/*"),
)
_RESULT = ("image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain")
_DATA: frozenset[Source] = frozenset({"data"})

GEMINI_LIMITS = (
    MediaLimit(kinds=frozenset({"image/*"}), one="image", many="images", count=3_600),
    MediaLimit(kinds=frozenset({"application/pdf"}), one="PDF", many="PDFs", item_bytes=50_000_000),
    MediaLimit(
        kinds=frozenset({"*/*"}), one="medium", many="inline media", total_bytes=100_000_000
    ),
)
"""The image count, PDF size and inline request size limits (module doc)."""

GEMINI_MEDIA = MediaRules(
    message=MappingProxyType(dict.fromkeys(_MESSAGE, ALL_SOURCES)),
    result=MappingProxyType(dict.fromkeys(_RESULT, _DATA)),
    source="Gemini API image, audio, video, document and function-calling docs",
    limits=GEMINI_LIMITS,
)
"""What a user turn and a function response take (see the module doc)."""
