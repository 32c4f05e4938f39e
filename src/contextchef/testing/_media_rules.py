"""Request rules on the media types each API takes, as the live APIs refuse the others.

* `anthropic_media_types` (Messages): an ``image`` block's ``base64`` source has
  ``media_type`` ``image/jpeg``, ``image/png``, ``image/gif`` or ``image/webp``
  (``Base64ImageSourceParam``; https://platform.claude.com/docs/en/build-with-claude/vision);
  a ``document`` block's ``base64`` source is ``application/pdf``
  (``Base64PDFSourceParam``) and its ``text`` source ``text/plain``
  (``PlainTextSourceParam``; https://platform.claude.com/docs/en/build-with-claude/pdf-support),
  in messages and inside ``tool_result`` content;
* `chat_media_types` (Chat Completions): an ``image_url`` ``data:`` URL holds PNG, JPEG,
  WEBP or GIF (https://platform.openai.com/docs/guides/images-vision); a ``file`` part's
  ``file_data`` is a PDF ("Chat Completions accepts only PDF files as file content parts",
  https://developers.openai.com/api/docs/guides/file-inputs); ``input_audio.format`` is
  ``wav`` or ``mp3`` (``ChatCompletionContentPartInputAudioParam``); a ``file_data``
  goes with a ``filename`` (the file inputs guide's base64 example; the API's 400
  "Missing required parameter: 'messages[1].content[1].file.file_id'" without one,
  openai/openai-agents-python#1513);
* `chat_model_media` (Chat Completions): ``input_audio`` parts go to the audio models
  only (``gpt-audio*``, ``gpt-4o-audio-preview*``, ``gpt-4o-mini-audio-preview*``: the
  audio guide, https://platform.openai.com/docs/guides/audio), and those take no image
  or file part ("Input modalities: text, audio", "Image: Not supported",
  https://developers.openai.com/api/docs/models/gpt-audio and
  .../models/gpt-4o-audio-preview);
* `chat_text_content` (a Chat-compatible API whose message content is text, such as
  DeepSeek's, https://api-docs.deepseek.com/api/create-chat-completion): a content list
  holds ``text`` parts only. `fake_for` adds it for a target whose `Profile.media` is
  False;
* `responses_media_types` (Responses): an ``input_image`` ``data:`` URL holds PNG, JPEG,
  WEBP or GIF; an ``input_file``'s ``file_data`` is of a type the file inputs guide lists
  (PDF, text and code, ``.docx`` / ``.pptx``, spreadsheets) and goes with a ``filename``
  (the guide's base64 example; "Missing required parameter: 'input[1].content[1]'"
  without one, laravel/ai#321), in messages and in ``function_call_output`` lists;
* `gemini_function_response_media` (Gemini): a ``functionResponse``'s ``parts`` hold
  ``inlineData`` of ``image/png``, ``image/jpeg``, ``image/webp``, ``application/pdf`` or
  ``text/plain`` (multimodal function responses, https://ai.google.dev/gemini-api/docs/gemini-3),
  and no ``fileData`` ("not supported in Gemini API", google-genai
  ``FunctionResponseFileData``);
* `interactions_result_media` (Gemini Interactions): a ``function_result``'s content
  blocks carrying media are of those same types (the same models read them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._body import blocks, dicts, gemini_function_parts
from contextchef.testing._records import RecordedRequest

__all__ = [
    "anthropic_media_types",
    "chat_media_types",
    "chat_model_media",
    "chat_text_content",
    "gemini_function_response_media",
    "interactions_result_media",
    "responses_media_types",
]

_Body = Mapping[str, Any]
_Earlier = Sequence[RecordedRequest]

_IMAGES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_OFFICE = "application/vnd.openxmlformats-officedocument."
_RESPONSES_FILES = (
    "application/pdf",
    "application/json",
    "application/xml",
    _OFFICE + "wordprocessingml.document",
    _OFFICE + "presentationml.presentation",
    _OFFICE + "spreadsheetml.sheet",
    "application/vnd.ms-excel",
)
_GEMINI_RESULT = ("image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain")


_NO_NAME = (
    "Missing required parameter (file_data is sent with a filename: the API's 400 names "
    "file_id on Chat, the part itself on Responses)"
)


def _listed(values: Sequence[str]) -> str:
    return ", ".join(repr(v) for v in values)


def _anthropic_source(block: Mapping[str, Any]) -> str | None:
    """What the API refuses in an image / document block's source, or None."""
    source = block.get("source")
    if not isinstance(source, Mapping):
        return None
    kind, media = source.get("type"), source.get("media_type")
    if block.get("type") == "image" and kind == "base64" and media not in _IMAGES:
        return f"source.media_type: Input should be {_listed(_IMAGES)} (got {media!r:.60})"
    if block.get("type") == "document" and kind == "base64" and media != "application/pdf":
        return f"source.base64.media_type: Input should be 'application/pdf' (got {media!r:.60})"
    if block.get("type") == "document" and kind == "text" and media != "text/plain":
        return f"source.text.media_type: Input should be 'text/plain' (got {media!r:.60})"
    return None


def anthropic_media_types(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Image and document sources carry a media type the API takes (module doc)."""
    for i, message in dicts(body.get("messages")):
        for j, block in blocks(message):
            inner = dicts(block.get("content")) if block.get("type") == "tool_result" else []
            for at, item in [(f"content.{j}", block)] + [
                (f"content.{j}.content.{k}", b) for k, b in inner
            ]:
                problem = _anthropic_source(item)
                if problem is not None:
                    yield f"messages.{i}.{at}.{problem}"


def _data_type(url: object) -> str | None:
    """The media type of a ``data:`` URL, or None for any other value."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    return url[5:].partition(";")[0].partition(",")[0].lower()


def _chat_part(part: Mapping[str, Any]) -> str | None:
    kind = part.get("type")
    image = part.get("image_url")
    file = part.get("file")
    audio = part.get("input_audio")
    if kind == "image_url" and isinstance(image, Mapping):
        media = _data_type(image.get("url"))
        if media is not None and media not in _IMAGES:
            return f"image_url.url: unsupported image type {media!r:.60}"
    if kind == "file" and isinstance(file, Mapping):
        media = _data_type(file.get("file_data"))
        if media is not None and media != "application/pdf":
            return f"file.file_data: only PDF files are supported, got {media!r:.60}"
        if "file_data" in file and not file.get("filename"):
            return f"file.file_id: {_NO_NAME}"
    audio_format = audio.get("format") if isinstance(audio, Mapping) else None
    if kind == "input_audio" and audio_format not in ("wav", "mp3"):
        return f"input_audio.format: must be 'wav' or 'mp3', got {audio_format!r:.40}"
    return None


def chat_media_types(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Image, file and audio parts hold a type Chat Completions takes (module doc)."""
    for i, message in dicts(body.get("messages")):
        for j, part in dicts(message.get("content")):
            problem = _chat_part(part)
            if problem is not None:
                yield f"messages[{i}].content[{j}].{problem}"


_AUDIO_MODELS = ("gpt-audio", "gpt-4o-audio-preview", "gpt-4o-mini-audio-preview")


def chat_model_media(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Audio parts go to an audio model, image and file parts to any other (module doc)."""
    model = body.get("model")
    audio = isinstance(model, str) and model.lower().startswith(_AUDIO_MODELS)
    refused = ("image_url", "file") if audio else ("input_audio",)
    for i, message in dicts(body.get("messages")):
        for j, part in dicts(message.get("content")):
            if part.get("type") in refused:
                takes = "text and audio only" if audio else "no audio: use gpt-audio"
                yield (
                    f"messages[{i}].content[{j}]: {part.get('type')} is not supported by "
                    f"model {model!r:.60} ({takes})"
                )


def chat_text_content(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Every content list holds ``text`` parts only (an API whose content is text)."""
    for i, message in dicts(body.get("messages")):
        for j, part in dicts(message.get("content")):
            if part.get("type") != "text":
                yield (
                    f"messages[{i}].content[{j}]: unknown variant {part.get('type')!r:.40}, "
                    "expected `text`"
                )


def _responses_part(part: Mapping[str, Any]) -> str | None:
    kind = part.get("type")
    if kind == "input_image":
        media = _data_type(part.get("image_url"))
        if media is not None and media not in _IMAGES:
            return f"image_url: unsupported image type {media!r:.60}"
    if kind == "input_file":
        media = _data_type(part.get("file_data"))
        taken = media is None or media in _RESPONSES_FILES or media.startswith("text/")
        if not taken:
            return f"file_data: unsupported file type {media!r:.60}"
        if "file_data" in part and not part.get("filename"):
            return f"filename: {_NO_NAME}"
    return None


def responses_media_types(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``input_image`` / ``input_file`` data hold a type Responses takes (module doc)."""
    for i, item in dicts(body.get("input")):
        field = "output" if item.get("type") == "function_call_output" else "content"
        for j, part in dicts(item.get(field)):
            problem = _responses_part(part)
            if problem is not None:
                yield f"input[{i}].{field}[{j}].{problem}"


def gemini_function_response_media(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A ``functionResponse``'s parts are inline data of a type it takes (module doc)."""
    for at, value in gemini_function_parts(body):
        if not at.endswith("functionResponse") or not isinstance(value, Mapping):
            continue
        for k, part in dicts(value.get("parts")):
            if "fileData" in part or "file_data" in part:
                yield f"{at}.parts[{k}].fileData: not supported in Gemini API"
            inline = part.get("inlineData", part.get("inline_data"))
            if not isinstance(inline, Mapping):
                continue
            media = inline.get("mimeType", inline.get("mime_type"))
            if media not in _GEMINI_RESULT:
                yield (
                    f"{at}.parts[{k}].inlineData.mimeType: {media!r:.60} is not supported "
                    f"in a function response; supported: {_listed(_GEMINI_RESULT)}"
                )


def interactions_result_media(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A ``function_result``'s media blocks are of a type a function response takes."""
    for i, step in dicts(body.get("input")):
        if step.get("type") != "function_result":
            continue
        for k, block in dicts(step.get("result")):
            media = block.get("mime_type")
            if block.get("type") != "text" and "mime_type" in block and media not in _GEMINI_RESULT:
                yield (
                    f"input[{i}].result[{k}].mime_type: {media!r:.60} is not supported in a "
                    f"function result; supported: {_listed(_GEMINI_RESULT)}"
                )
