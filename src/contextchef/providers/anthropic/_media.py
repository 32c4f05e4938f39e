"""The media Anthropic's Messages API takes, as data (`MediaRules`), and their blocks.

* ``image`` blocks: base64 data of ``image/jpeg``, ``image/png``, ``image/gif`` or
  ``image/webp`` (the SDK's ``Base64ImageSourceParam.media_type``; "Supported image
  formats", https://platform.claude.com/docs/en/build-with-claude/vision), or an image by
  ``url`` or Files API ``file`` source (``URLImageSourceParam``, ``FileImageSourceParam``:
  no media type sent, so any ``image/*`` part).
* ``document`` blocks: a PDF as base64 data, ``url`` or ``file`` source
  (``Base64PDFSourceParam.media_type`` is ``Literal["application/pdf"]``,
  ``URLPDFSourceParam``, ``FileDocumentSourceParam``;
  https://platform.claude.com/docs/en/build-with-claude/pdf-support), and plain text as a
  ``text`` source (``PlainTextSourceParam``: ``media_type: "text/plain"``, the text
  itself, not base64) or by file id (the Files API takes ``text/plain`` documents,
  https://platform.claude.com/docs/en/build-with-claude/files).

A ``tool_result`` block's content takes the same image and document blocks
(``ToolResultBlockParam.content``). Any other type (``image/bmp``, ``image/svg+xml``,
audio, video, archives) is refused: it is sent as a text note (`fit_media`). A request
holding a file source sends the ``files-api-2025-04-14`` beta (`_files`), which the
Files API docs still require.

Size and count limits (`ANTHROPIC_LIMITS`, `providers._media_limits`): "Maximum image
size: 5 MB per image" via the API, a limit on the base64 data (5,242,880 bytes), and at
most 100 images per request ("100 per request on the API, for models with a 200k-token
context window", 600 for the others: the smaller figure is kept for every model), both
from the vision guide's "General limits"
(https://platform.claude.com/docs/en/build-with-claude/vision); the request itself is at
most 32 MB ("request size limits", https://platform.claude.com/docs/en/api/overview,
and the PDF support guide's "Maximum request size: 32MB", which counts "the entire
request payload, including any other content sent alongside PDFs",
https://platform.claude.com/docs/en/build-with-claude/pdf-support), so the inline data
of a request's media is kept to 32,000,000 bytes.
"""

from __future__ import annotations

import base64
from types import MappingProxyType
from typing import Any

from contextchef.history._messages import MediaPart
from contextchef.providers._base import apply_hints, hints
from contextchef.providers._media import ALL_SOURCES, MediaLimit, MediaRules, Source

__all__ = ["ANTHROPIC_LIMITS", "ANTHROPIC_MEDIA", "media_block", "media_source"]

_BY_REFERENCE: frozenset[Source] = frozenset({"url", "file_id"})
_TEXT: frozenset[Source] = frozenset({"data", "file_id"})
_TYPES = MappingProxyType(
    {
        **dict.fromkeys(("image/jpeg", "image/png", "image/gif", "image/webp"), ALL_SOURCES),
        "image/*": _BY_REFERENCE,
        "application/pdf": ALL_SOURCES,
        "text/plain": _TEXT,
    }
)
ANTHROPIC_LIMITS = (
    MediaLimit(
        kinds=frozenset({"image/*"}),
        one="image",
        many="images",
        item_bytes=5 * 1024 * 1024,
        count=100,
    ),
    MediaLimit(kinds=frozenset({"*/*"}), one="medium", many="inline media", total_bytes=32_000_000),
)
"""The vision guide's per-image size and per-request count, the request size (module doc)."""
ANTHROPIC_MEDIA = MediaRules(
    message=_TYPES,
    result=_TYPES,
    source="vision, pdf-support and files docs; SDK source types",
    as_text=frozenset({"text/plain"}),  # a PlainTextSource holds text: UTF-8 data only
    limits=ANTHROPIC_LIMITS,
)
"""What a user message and a ``tool_result`` take (see the module doc)."""


def media_source(part: MediaPart) -> dict[str, Any]:
    """The block's ``source``: base64, plain ``text`` (``text/plain`` data), url or file."""
    if part.data is not None and part.media_type == "text/plain":
        # UTF-8 where fit_media let it through (`ANTHROPIC_MEDIA.as_text`); never a raise
        text = base64.b64decode(part.data).decode("utf-8", errors="replace")
        return {"type": "text", "media_type": "text/plain", "data": text}
    if part.data is not None:
        return {"type": "base64", "media_type": part.media_type, "data": part.data}
    if part.url is not None:
        return {"type": "url", "url": part.url}
    return {"type": "file", "file_id": part.file_id}


def media_block(part: MediaPart, fmt: str) -> dict[str, Any]:
    """An ``image`` or ``document`` block, with the hints recorded from wire `fmt`."""
    kind = "image" if part.media_type.startswith("image/") else "document"
    built = {"type": kind, "source": media_source(part)}
    return apply_hints(built, hints(part.provider_data, fmt))
