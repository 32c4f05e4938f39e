"""Request rules on the size and number of media, as the live APIs refuse larger requests.

Sizes are the base64 data as sent, counts take an item by any source.

* `anthropic_media_limits` (Messages): an image's base64 data is at most 5 MB
  (5,242,880 bytes; "Maximum image size: 5 MB per image" via the API), a request holds at
  most 100 images ("100 per request on the API, for models with a 200k-token context
  window"; https://platform.claude.com/docs/en/build-with-claude/vision, "General
  limits"), in messages and inside ``tool_result`` content, and the request is at most
  32 MB (33,554,432 bytes of JSON; https://platform.claude.com/docs/en/api/overview,
  "request size limits"; the PDF support guide's "Maximum request size: 32MB");
* `openai_image_limits` (Chat Completions and Responses): an image's data is at most
  20 MB, a request holds at most 500 images and 50 MB of image data
  (https://platform.openai.com/docs/guides/images-vision, "Image input requirements"),
  counting ``image_url`` parts (Chat) and ``input_image`` parts, in messages and in
  ``function_call_output`` lists (Responses);
* `gemini_media_limits` (Gemini): a request's inline data is at most 100 MB (base64; the
  Gemini API's "Increased file size limits" announcement), a request holds at most 3,600
  images (https://ai.google.dev/gemini-api/docs/image-understanding), an inline PDF is
  at most 50 MB (https://ai.google.dev/gemini-api/docs/document-processing), in contents
  and in ``functionResponse`` parts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._body import blocks, dicts
from contextchef.testing._records import RecordedRequest

__all__ = ["anthropic_media_limits", "gemini_media_limits", "openai_image_limits"]

_Body = Mapping[str, Any]
_Earlier = Sequence[RecordedRequest]

_MB = 1024 * 1024


def _anthropic_images(body: _Body) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for i, message in dicts(body.get("messages")):
        for j, block in blocks(message):
            inner = dicts(block.get("content")) if block.get("type") == "tool_result" else []
            for at, item in [(f"content.{j}", block)] + [
                (f"content.{j}.content.{k}", b) for k, b in inner
            ]:
                if item.get("type") == "image":
                    yield f"messages.{i}.{at}", item


def anthropic_media_limits(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Image size, images per request and request size are within the API's (module doc)."""
    images = 0
    for at, block in _anthropic_images(body):
        images += 1
        source = block.get("source")
        data = source.get("data") if isinstance(source, Mapping) else None
        base64 = isinstance(source, Mapping) and source.get("type") == "base64"
        if base64 and isinstance(data, str) and len(data) > 5 * _MB:
            limit = f"{len(data)} bytes > {5 * _MB} bytes"
            yield f"{at}.source.base64: image exceeds 5 MB maximum: {limit}"
    if images > 100:
        yield f"messages: too many images ({images}): at most 100 images per request"
    size = len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())
    if size > 32 * _MB:
        yield f"request_too_large: request exceeds the maximum size ({size} > {32 * _MB} bytes)"


def _data_of(url: object) -> int | None:
    """The length of a ``data:`` URL's data, or None for any other value."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    return len(url) - len(url.partition(",")[0]) - 1


def _openai_images(body: _Body) -> Iterator[tuple[str, object]]:
    """(where, url) per image part of a Chat or Responses body."""
    for i, message in dicts(body.get("messages")):
        for j, part in dicts(message.get("content")):
            image = part.get("image_url")
            if part.get("type") == "image_url":
                url = image.get("url") if isinstance(image, Mapping) else None
                yield f"messages[{i}].content[{j}].image_url", url
    for i, item in dicts(body.get("input")):
        field = "output" if item.get("type") == "function_call_output" else "content"
        for j, part in dicts(item.get(field)):
            if part.get("type") == "input_image":
                yield f"input[{i}].{field}[{j}].image_url", part.get("image_url")


def openai_image_limits(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Image size, images and image bytes per request are within OpenAI's (module doc)."""
    images = total = 0
    for at, url in _openai_images(body):
        images += 1
        size = _data_of(url) or 0
        total += size
        if size > 20_000_000:
            yield f"{at}: image is too large ({size} bytes); the limit is 20 MB per image"
    if images > 500:
        yield f"too many images in this request ({images}); the limit is 500"
    if total > 50_000_000:
        yield f"image bytes in this request ({total}) exceed the limit of 50 MB per request"


def _gemini_parts(body: _Body) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for i, content in dicts(body.get("contents")):
        for j, part in dicts(content.get("parts")):
            yield f"contents[{i}].parts[{j}]", part
            response = part.get("functionResponse", part.get("function_response"))
            if isinstance(response, Mapping):
                for k, inner in dicts(response.get("parts")):
                    yield f"contents[{i}].parts[{j}].functionResponse.parts[{k}]", inner


def gemini_media_limits(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Inline data, images per request and PDF size are within Gemini's (module doc)."""
    images = total = 0
    for at, part in _gemini_parts(body):
        for key in ("inlineData", "inline_data", "fileData", "file_data"):
            value = part.get(key)
            if not isinstance(value, Mapping):
                continue
            kind = str(value.get("mimeType", value.get("mime_type")) or "")
            data = value.get("data")
            size = len(data) if isinstance(data, str) else 0
            images += kind.startswith("image/")
            total += size
            if kind == "application/pdf" and size > 50_000_000:
                yield f"{at}.{key}: the PDF is larger than 50 MB ({size} bytes)"
    if images > 3_600:
        yield f"contents: too many images ({images}); the limit is 3600 per request"
    if total > 100_000_000:
        yield f"request payload size exceeds the limit: {total} bytes of inline data > 100 MB"
