"""MCP ``tools/call`` results -> `ToolResult` (MCP spec revision 2025-11-25, "Tool Result").

A `ToolResult` carries text, images and files (`MediaPart`), and an error flag. The MCP
content kinds map onto it as follows, in the server's order:

* ``text`` -> text;
* ``image`` -> a `MediaPart` (base64 ``data``, the block's ``mimeType``);
* ``audio`` -> a text note ``[audio: <mimeType>, <n> bytes]``: no provider takes audio in
  a tool result;
* ``resource`` (embedded) with ``text`` -> ``[resource <uri> (<mimeType>)]`` then the
  text; with a ``blob`` of an ``image/*`` type -> a `MediaPart`; any other blob -> a
  text note ``[resource <uri>: <mimeType>, <n> bytes, not shown]``;
* ``resource_link`` -> ``[resource link: <name> <uri> (<mimeType>)]`` (the model may ask
  for it through another tool; nothing is fetched);
* ``structuredContent`` -> its canonical JSON, appended unless the text blocks already
  hold the same value (the spec asks servers to send that text too): a block whose JSON
  is that value, or, for ``{"result": value}`` (the SDK's ``MCPServer`` wraps a tool's
  non-object return so, mcp 2.x ``func_metadata.convert_result``), a block holding
  ``value`` (the text itself for a string, its JSON otherwise), or for a list one block
  per item in order (the SDK's ``_convert_to_content`` spreads a list so);
* ``isError`` -> ``ToolResult.is_error``; the text stays the server's.

Text blocks are joined with blank lines. Sizes in notes are decoded bytes.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._errors import UsageError
from contextchef._json import canonical_dumps, to_unicode
from contextchef.history._messages import MediaPart, ToolResult

__all__ = ["result_from_mcp"]


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _holds(text: str, value: Any) -> bool:
    """Whether `text` is `value`: the string itself, or its JSON (the SDK's forms)."""
    return text == value if isinstance(value, str) else _parsed(text) == value


def _held(structured: Any, texts: Sequence[str]) -> bool:
    """Whether the text blocks already hold `structured` (see the module doc)."""
    if any(_parsed(t) == structured for t in texts):
        return True
    if not isinstance(structured, Mapping) or set(structured) != {"result"}:
        return False
    value = structured["result"]  # an MCPServer tool's return, wrapped
    if any(_holds(t, value) for t in texts):
        return True
    spread = isinstance(value, list) and len(value) == len(texts) > 0
    return spread and all(map(_holds, texts, value))


def _media(mime: str, data: str, texts: list[str], media: list[MediaPart]) -> None:
    """Inline media, or a note where the server's data is not base64 (providers refuse it)."""
    try:
        media.append(MediaPart(media_type=mime, data=data))
    except UsageError:
        texts.append(f"[{mime} content not shown: its data is not valid base64]")


def _block(block: Mapping[str, Any], texts: list[str], media: list[MediaPart]) -> None:
    kind = block.get("type")
    mime = str(block.get("mimeType") or "application/octet-stream")
    if kind == "text":
        texts.append(str(block.get("text", "")))
    elif kind == "image" and isinstance(block.get("data"), str):
        _media(mime, block["data"], texts, media)
    elif kind == "audio":
        texts.append(f"[audio: {mime}, {_size(str(block.get('data', '')))} bytes]")
    elif kind == "resource" and isinstance(block.get("resource"), Mapping):
        res = block["resource"]
        uri, rmime = res.get("uri", "?"), str(res.get("mimeType") or "application/octet-stream")
        if isinstance(res.get("text"), str):
            texts.append(f"[resource {uri} ({rmime})]\n{res['text']}")
        elif isinstance(res.get("blob"), str) and rmime.startswith("image/"):
            _media(rmime, res["blob"], texts, media)
        else:
            texts.append(
                f"[resource {uri}: {rmime}, {_size(str(res.get('blob', '')))} bytes, not shown]"
            )
    elif kind == "resource_link":
        label = f"[resource link: {block.get('name', '')} {block.get('uri', '?')}"
        texts.append(label + (f" ({block['mimeType']})]" if block.get("mimeType") else "]"))
    else:
        texts.append(f"[{kind} content not shown]")


def result_from_mcp(raw: Mapping[str, Any], *, call_id: str, name: str) -> ToolResult:
    """One MCP ``CallToolResult`` (its JSON form, camelCase keys) as a `ToolResult`.

    Args:
        raw: ``{"content": [...], "structuredContent"?: {...}, "isError"?: bool}``.
        call_id: The id of the call it answers.
        name: The wire name the model called.
    """
    texts: list[str] = []
    media: list[MediaPart] = []
    content = raw.get("content") or []
    for block in content if isinstance(content, Sequence) else ():
        if isinstance(block, Mapping):
            _block(block, texts, media)
    structured = raw.get("structuredContent")
    if structured is not None and not _held(structured, texts):
        texts.append(canonical_dumps(structured))
    return ToolResult(
        call_id=call_id,
        name=name,
        content=to_unicode("\n\n".join(texts)),
        is_error=raw.get("isError") is True,
        media=tuple(media),
    )
