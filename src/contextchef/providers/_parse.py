"""Parsers: a provider's request history (what you would send) -> the message IR.

``from_anthropic``, ``from_openai`` (Chat Completions, with DeepSeek
``reasoning_content``), ``from_responses`` and ``from_gemini`` each return a
`ParsedHistory`: the system text found in the history, the IR messages and notes on
anything unusual. Compiling the messages back for the same provider gives the recorded
history again:

* values come from the IR fields; what the IR has no field for is kept in each part's
  ``provider_data``, tagged with the wire format (``{"provider": "anthropic" | "openai" |
  "responses" | "gemini", ...}``): ``extra`` (unmodelled keys such as ``is_error:
  false``, Responses item ids, Gemini ``thought_signature``), ``keys`` (the recorded key
  order, when it differs from the adapter's), ``message`` / ``item`` (the same for the
  enclosing Chat message or Responses item, on its first part), and a few named hints:
  ``input`` / ``args`` (a tool call's recorded object), ``response`` (a Gemini
  function response object), ``content`` (an Anthropic tool_result block list with
  blocks the IR cannot hold), ``as_string`` (Anthropic string content),
  ``synthetic_id`` (a Gemini call recorded without id), ``reasoning_id`` (the Responses
  reasoning item a call's item id depends on);
* reasoning (Anthropic thinking and redacted thinking, Responses reasoning items, Gemini
  ``thought`` parts) is a `ReasoningPart` whose ``provider_data`` holds the recorded
  block byte-for-byte; DeepSeek ``reasoning_content`` is ``ReasoningPart(provider=
  "deepseek")``;
* blocks the IR cannot map (Anthropic server tool blocks, Responses tool-search items,
  mid-history system messages...) are `ProviderPart` values at their position.

Every parsed part is rendered back once while parsing; a part that would not come out
as recorded is named in ``notes``. Malformed input raises `CorruptHistoryError` with the
index of the offending message.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from contextchef._errors import CorruptHistoryError
from contextchef._messages import (
    MediaPart,
    Message,
    Part,
    ProviderPart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.providers import _anthropic, _gemini, _openai_chat, _responses
from contextchef.providers._base import split_data_url

__all__ = ["ParsedHistory", "from_anthropic", "from_gemini", "from_openai", "from_responses"]

_P = TypeVar("_P", TextPart, MediaPart, ToolCall, ToolResult)
_Hinted = TextPart | MediaPart | ToolCall | ToolResult
"""The parts that carry replay hints in ``provider_data``."""
_H = TypeVar("_H", bound=_Hinted)
_Render = Callable[[Any], Mapping[str, Any] | None]


@dataclass(frozen=True, kw_only=True)
class ParsedHistory:
    """A provider history in the IR."""

    system: str = ""
    """Text of the system prompt found in the history (``""`` if none)."""
    messages: tuple[Message, ...] = ()
    """The conversation, in order."""
    notes: tuple[str, ...] = ()
    """Anything unusual: kept as provider-only parts, unmatched ids, not reproducible."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _with_data(part: _P, data: Mapping[str, Any]) -> _P:
    return dataclasses.replace(part, provider_data=dict(data) if len(data) > 1 else None)


def _fit(part: _P, wire: Mapping[str, Any], render: _Render, fmt: str, **named: Any) -> _P:
    """`part` with the hints that make `render` give back `wire`'s keys and key order."""
    data: dict[str, Any] = {"provider": fmt, **named}
    part = _with_data(part, data)
    built = render(part) or {}
    extra = {k: v for k, v in wire.items() if k not in built}
    if extra:
        data["extra"] = extra
        part = _with_data(part, data)
        built = render(part) or {}
    if list(built) != list(wire):
        data["keys"] = list(wire)
        part = _with_data(part, data)
    return part


def _hint(part: _H, fmt: str, key: str, value: Any) -> _H:
    data = dict(part.provider_data or {"provider": fmt})
    data[key] = value
    return dataclasses.replace(part, provider_data=data)


@dataclass
class _Draft:
    role: Role
    parts: list[Part] = field(default_factory=list)
    origin: int = 0


class _History:
    """Accumulates IR messages, call names and notes while one history is parsed."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.drafts: list[_Draft] = []
        self.notes: list[str] = []
        self.names: dict[str, str] = {}

    def error(self, index: int, what: str) -> CorruptHistoryError:
        return CorruptHistoryError(f"{self.fmt} message {index}: {what}", index=index)

    def new(self, role: Role, index: int) -> _Draft:
        self.drafts.append(_Draft(role=role, origin=index))
        return self.drafts[-1]

    def current(self, role: Role, index: int) -> _Draft:
        if self.drafts and self.drafts[-1].role == role:
            return self.drafts[-1]
        return self.new(role, index)

    def call(self, index: int, part: ToolCall) -> ToolCall:
        self.names[part.id] = part.name
        return part

    def name_of(self, index: int, call_id: str) -> str:
        name = self.names.get(call_id)
        if name is None:
            self.notes.append(f"message {index}: result for unknown call {call_id!r}")
            return ""
        return name

    def check(self, index: int, rendered: Any, wire: Any, what: str) -> None:
        if rendered != wire:
            self.notes.append(f"message {index}: {what} does not render back as recorded")

    def provider(self, index: int, data: Mapping[str, Any], what: str) -> ProviderPart:
        self.notes.append(f"message {index}: {what} kept as a {self.fmt} provider part")
        return ProviderPart(provider=self.fmt, data=data)

    def result(self, system: str) -> ParsedHistory:
        messages = tuple(Message(role=d.role, parts=tuple(d.parts)) for d in self.drafts)
        return ParsedHistory(system=system, messages=messages, notes=tuple(self.notes))


def _mapping(hist: _History, index: int, value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise hist.error(index, f"{what} must be an object, got {type(value).__name__}")
    return value


def _string(hist: _History, index: int, value: object, what: str) -> str:
    if not isinstance(value, str):
        raise hist.error(index, f"{what} must be a string, got {type(value).__name__}")
    return value


def _list(hist: _History, value: object, what: str) -> Sequence[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise CorruptHistoryError(f"{what} must be a list, got {type(value).__name__}", index=0)
    return value


# -- Anthropic Messages (https://docs.anthropic.com/en/api/messages) -----------------------

_A = _anthropic.FORMAT


def _system_text(hist: _History, system: object, what: str) -> str:
    """System text from a string or a list of text blocks / parts."""
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    blocks = _list(hist, system, what)
    texts = [
        _string(hist, 0, _mapping(hist, 0, b, f"{what} block").get("text"), f"{what} text")
        for b in blocks
    ]
    if len(texts) > 1:
        hist.notes.append(f"{what}: {len(texts)} text blocks joined with blank lines")
    return "\n\n".join(texts)


def _a_text(hist: _History, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    text = _string(hist, i, block.get("text"), "text block 'text'")
    return _fit(TextPart(text=text), block, _anthropic.render_block, _A)


def _a_media(hist: _History, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    part = _anthropic.media_part(block)
    if part is None:
        return hist.provider(i, block, f"{block['type']} block with an unmapped source")
    return part


def _a_thinking(hist: _History, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    if role != "assistant":
        raise hist.error(i, f"{block['type']} block in a {role} message")
    text = block.get("thinking", "")
    return ReasoningPart(
        provider="anthropic",
        text=text if isinstance(text, str) else "",
        provider_data={"provider": _A, "block": block},
    )


def _a_tool_use(hist: _History, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    if role != "assistant":
        raise hist.error(i, f"tool_use block in a {role} message")
    call_id = _string(hist, i, block.get("id"), "tool_use 'id'")
    name = _string(hist, i, block.get("name"), "tool_use 'name'")
    arguments = _mapping(hist, i, block.get("input", {}), "tool_use 'input'")
    part = ToolCall(id=call_id, name=name, arguments=_dumps(arguments))
    fitted = _fit(part, block, _anthropic.render_block, _A, input=arguments)
    return hist.call(i, fitted)


def _a_tool_result(hist: _History, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    if role != "user":
        raise hist.error(i, f"tool_result block in a {role} message")
    call_id = _string(hist, i, block.get("tool_use_id"), "tool_result 'tool_use_id'")
    content = block.get("content", "")
    named: dict[str, Any] = {}
    media: tuple[MediaPart, ...] = ()
    if isinstance(content, str):
        text = content
    else:
        blocks = _list(hist, content, f"message {i}: tool_result 'content'")
        mapped = _anthropic.result_content_parts(blocks)
        if mapped is None:
            text, named["content"] = _anthropic.result_text(blocks), blocks
            hist.notes.append(f"message {i}: tool_result content kept as recorded blocks")
        else:
            (text, media), named["list"] = mapped, True
    part = ToolResult(
        call_id=call_id,
        name=hist.name_of(i, call_id),
        content=text,
        is_error=block.get("is_error") is True,
        media=media,
    )
    return _fit(part, block, _anthropic.render_block, _A, **named)


_ANTHROPIC_BLOCKS: dict[str, Callable[[_History, int, Role, Mapping[str, Any]], Part]] = {
    "text": _a_text,
    "image": _a_media,
    "document": _a_media,
    "thinking": _a_thinking,
    "redacted_thinking": _a_thinking,
    "tool_use": _a_tool_use,
    "tool_result": _a_tool_result,
}


def _role(hist: _History, i: int, msg: Mapping[str, Any], roles: Sequence[str]) -> Role:
    role = msg.get("role")
    if role not in roles:
        raise hist.error(i, f"role must be one of {list(roles)}, got {role!r}")
    return "assistant" if role in ("assistant", "model") else "user"


def _a_message(hist: _History, i: int, msg: Mapping[str, Any]) -> None:
    role = _role(hist, i, msg, ("user", "assistant"))
    draft = hist.new(role, i)
    content = msg.get("content")
    if isinstance(content, str):
        draft.parts.append(
            TextPart(text=content, provider_data={"provider": _A, "as_string": True})
        )
        return
    for block in _list(hist, content, f"message {i}: content"):
        block = _mapping(hist, i, block, "a content block")
        kind = _string(hist, i, block.get("type"), "block 'type'")
        parse = _ANTHROPIC_BLOCKS.get(kind)
        if parse is None:
            draft.parts.append(hist.provider(i, block, f"{kind} block"))
            continue
        part = parse(hist, i, role, block)
        hist.check(i, _anthropic.render_block(part), block, f"{kind} block")
        draft.parts.append(part)
    if not draft.parts:
        hist.notes.append(f"message {i}: empty content (not sent back)")


def from_anthropic(
    messages: Sequence[Mapping[str, Any]], *, system: str | Sequence[Any] | None = None
) -> ParsedHistory:
    """Parse an Anthropic Messages history (the ``messages`` and ``system`` you would send).

    Args:
        messages: The ``messages`` list.
        system: The ``system`` parameter: a string or a list of text blocks.

    Returns:
        The history in the IR; ``system`` is the system text (blocks joined).

    Raises:
        CorruptHistoryError: A message is malformed (index and reason given).
    """
    hist = _History(_A)
    for i, msg in enumerate(_list(hist, messages, "messages")):
        _a_message(hist, i, _mapping(hist, i, msg, "a message"))
    return hist.result(_system_text(hist, system, "system"))


# -- OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat/create) --

_O = _openai_chat.FORMAT
_CHAT = _openai_chat.OpenAIChatAdapter()


def _o_media(hist: _History, i: int, raw: Mapping[str, Any]) -> MediaPart | None:
    kind = raw.get("type")
    if kind == "image_url" and isinstance(raw.get("image_url"), Mapping):
        image = raw["image_url"]
        url = image.get("url")
        if not isinstance(url, str):
            return None
        inline = split_data_url(url)
        part = (
            MediaPart(media_type=inline[0], data=inline[1])
            if inline
            else MediaPart(media_type="image/*", url=url)
        )
        extra = {k: v for k, v in image.items() if k != "url"}
        return _fit(part, raw, _CONTENT_PART, _O, **({"image_url_extra": extra} if extra else {}))
    if kind == "file" and isinstance(raw.get("file"), Mapping):
        file = raw["file"]
        inline = split_data_url(str(file.get("file_data", "")))
        if isinstance(file.get("file_id"), str):
            part = MediaPart(media_type="application/octet-stream", file_id=file["file_id"])
            extra = {k: v for k, v in file.items() if k != "file_id"}
        elif inline:
            part = MediaPart(media_type=inline[0], data=inline[1])
            extra = {k: v for k, v in file.items() if k != "file_data"}
        else:
            return None
        return _fit(part, raw, _CONTENT_PART, _O, **({"file_extra": extra} if extra else {}))
    return None


def _content_part(part: TextPart | MediaPart) -> dict[str, Any]:
    return _openai_chat.CONTENT_PARTS[part.kind](part)


_CONTENT_PART: _Render = _content_part


def _o_content(hist: _History, i: int, content: object) -> list[TextPart | MediaPart] | None:
    """IR parts of a Chat ``content`` (None when a part cannot be mapped)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(text=content)]
    parts: list[TextPart | MediaPart] = []
    for raw in _list(hist, content, f"message {i}: content"):
        raw = _mapping(hist, i, raw, "a content part")
        if raw.get("type") == "text" and isinstance(raw.get("text"), str):
            parts.append(_fit(TextPart(text=raw["text"]), raw, _CONTENT_PART, _O))
            continue
        media = _o_media(hist, i, raw)
        if media is None:
            return None
        parts.append(media)
    return parts


def _envelope(
    parts: list[_Hinted], wire: Mapping[str, Any], render: Callable[[list[Any]], Any], key: str
) -> None:
    """Put the message-level hints (extra keys, key order, list content) on parts[0]."""
    if not parts:
        return
    first = parts[0]
    fmt = "responses" if key == "item" else _O
    base = dict(first.provider_data or {"provider": fmt})
    envelope: dict[str, Any] = {}
    if isinstance(wire.get("content"), list):
        envelope["content"] = "list"

    def rebuild() -> None:
        parts[0] = dataclasses.replace(first, provider_data={**base, key: dict(envelope)})

    rebuild()
    built = render(parts)
    extra = {k: v for k, v in wire.items() if k not in built and k != "reasoning_content"}
    if extra:
        envelope["extra"] = extra
        rebuild()
        built = render(parts)
    if list(built) != list(wire):
        envelope["keys"] = list(wire)
    if envelope:
        rebuild()
    else:
        parts[0] = first


def _o_assistant(hist: _History, i: int, msg: Mapping[str, Any]) -> None:
    content = _o_content(hist, i, msg.get("content"))
    calls = msg.get("tool_calls") or []
    parsed_calls = [_o_call(hist, i, c) for c in _list(hist, calls, f"message {i}: tool_calls")]
    mapped: list[_Hinted] = [*(content or ()), *(c for c in parsed_calls if c is not None)]
    if content is None or None in parsed_calls or not mapped:
        # unknown shapes, and messages with neither text nor calls (e.g. a refusal), are
        # kept verbatim for this provider
        hist.new("assistant", i).parts.append(hist.provider(i, msg, "assistant message"))
        return
    reasoning = msg.get("reasoning_content")
    if reasoning is not None:
        reasoning = _string(hist, i, reasoning, "'reasoning_content'")

    def render(parts: Sequence[Part]) -> Any:
        return _CHAT.render_assistant(Message(role="assistant", parts=tuple(parts)), reasoning)[0]

    _envelope(mapped, msg, render, "message")
    draft = hist.new("assistant", i)
    if reasoning:  # "" carries nothing: the deepseek target sends "" where it is required
        draft.parts.append(ReasoningPart(provider="deepseek", text=reasoning))
    draft.parts.extend(mapped)
    hist.check(i, render(mapped), dict(msg), "assistant message")


def _o_call(hist: _History, i: int, raw: object) -> ToolCall | None:
    raw = _mapping(hist, i, raw, "a tool call")
    function = raw.get("function")
    if raw.get("type", "function") != "function" or not isinstance(function, Mapping):
        return None
    call = ToolCall(
        id=_string(hist, i, raw.get("id"), "tool call 'id'"),
        name=_string(hist, i, function.get("name"), "function 'name'"),
        arguments=_string(hist, i, function.get("arguments", "{}"), "function 'arguments'"),
    )
    return hist.call(i, _fit(call, raw, _openai_chat.render_tool_call, _O))


def _o_user(hist: _History, i: int, msg: Mapping[str, Any]) -> None:
    content = _o_content(hist, i, msg.get("content"))
    if not content:
        hist.new("user", i).parts.append(hist.provider(i, msg, "user message"))
        return
    parts: list[_Hinted] = list(content)

    def render(ps: Sequence[Part]) -> Any:
        return _CHAT.render_user(Message(role="user", parts=tuple(ps)))[0]

    _envelope(parts, msg, render, "message")
    hist.new("user", i).parts.extend(parts)
    hist.check(i, render(parts), dict(msg), "user message")


def _o_tool(hist: _History, i: int, msg: Mapping[str, Any]) -> None:
    call_id = _string(hist, i, msg.get("tool_call_id"), "'tool_call_id'")
    content = msg.get("content")
    named: dict[str, Any] = {}
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping)]
        if len(texts) != 1 or not isinstance(texts[0], str):
            raise hist.error(i, "tool message content must be a string or one text part")
        content, named["content"] = texts[0], "list"
    text = _string(hist, i, content, "tool message 'content'")
    part = ToolResult(call_id=call_id, name=hist.name_of(i, call_id), content=text)
    part = _fit(part, msg, _openai_chat.render_tool_message, _O, **named)
    draft = hist.drafts[-1] if hist.drafts else None
    if (
        draft is None
        or draft.role != "user"
        or not (draft.parts and isinstance(draft.parts[-1], ToolResult))
    ):
        draft = hist.new("user", i)
    draft.parts.append(part)
    hist.check(i, _openai_chat.render_tool_message(part), dict(msg), "tool message")


def _o_positional(hist: _History, i: int, msg: Mapping[str, Any]) -> None:
    role = msg.get("role")
    draft = hist.new("assistant" if role == "assistant" else "user", i)
    draft.parts.append(hist.provider(i, msg, f"{role} message"))


_CHAT_ROLES: dict[str, Callable[[_History, int, Mapping[str, Any]], None]] = {
    "user": _o_user,
    "assistant": _o_assistant,
    "tool": _o_tool,
    "system": _o_positional,
    "developer": _o_positional,
    "function": _o_positional,
}


def from_openai(messages: Sequence[Mapping[str, Any]]) -> ParsedHistory:
    """Parse a Chat Completions history (the ``messages`` you would send).

    A leading ``system`` message with string content becomes ``system``; later system or
    developer messages stay in place as provider parts. ``reasoning_content`` on an
    assistant message (DeepSeek and compatible APIs) becomes
    ``ReasoningPart(provider="deepseek")``; compile with target ``deepseek`` to send it.

    Raises:
        CorruptHistoryError: A message is malformed (index and reason given).
    """
    hist = _History(_O)
    items = _list(hist, messages, "messages")
    system = ""
    for i, msg in enumerate(items):
        msg = _mapping(hist, i, msg, "a message")
        role = msg.get("role")
        if i == 0 and role == "system" and isinstance(msg.get("content"), str):
            # extra keys (e.g. SWE-agent's "agent") are bookkeeping, not prompt
            system = msg["content"]
            continue
        handler = _CHAT_ROLES.get(role) if isinstance(role, str) else None
        if handler is None:
            raise hist.error(i, f"role must be one of {sorted(_CHAT_ROLES)}, got {role!r}")
        handler(hist, i, msg)
    return hist.result(system)


# -- OpenAI Responses (https://platform.openai.com/docs/api-reference/responses/create) ----

_R = _responses.FORMAT
_RESPONSES = _responses.ResponsesAdapter()


def _r_content_part(hist: _History, i: int, role: Role, raw: object) -> TextPart | MediaPart | None:
    raw = _mapping(hist, i, raw, "a content part")
    kind = raw.get("type")

    def render(p: TextPart | MediaPart) -> dict[str, Any]:
        return _responses.render_content_part(p, role)

    if kind in ("input_text", "output_text") and isinstance(raw.get("text"), str):
        return _fit(TextPart(text=raw["text"]), raw, render, _R)
    part: MediaPart | None = None
    if isinstance(raw.get("file_id"), str):
        default = "image/*" if kind == "input_image" else "application/octet-stream"
        part = MediaPart(media_type=default, file_id=raw["file_id"])
    elif kind == "input_image" and isinstance(raw.get("image_url"), str):
        inline = split_data_url(raw["image_url"])
        part = (
            MediaPart(media_type=inline[0], data=inline[1])
            if inline
            else MediaPart(media_type="image/*", url=raw["image_url"])
        )
    elif kind == "input_file" and isinstance(raw.get("file_url"), str):
        part = MediaPart(media_type="application/octet-stream", url=raw["file_url"])
    elif kind == "input_file" and isinstance(raw.get("file_data"), str):
        inline = split_data_url(raw["file_data"])
        part = MediaPart(media_type=inline[0], data=inline[1]) if inline else None
    return None if part is None else _fit(part, raw, render, _R)


def _r_message(hist: _History, i: int, item: Mapping[str, Any]) -> None:
    role = item.get("role")
    content = item.get("content")
    if role not in ("user", "assistant"):
        hist.new("user", i).parts.append(hist.provider(i, item, f"{role} message item"))
        return
    parts: list[TextPart | MediaPart | None]
    if isinstance(content, str):
        parts = [TextPart(text=content)]
    else:
        raws = _list(hist, content, f"item {i}: content")
        parts = [_r_content_part(hist, i, role, raw) for raw in raws]
    if not parts or None in parts:
        hist.new(role, i).parts.append(hist.provider(i, item, "message item"))
        return
    mapped: list[_Hinted] = [p for p in parts if p is not None]
    draft = hist.current(role, i)
    split = bool(draft.parts) and isinstance(draft.parts[-1], (TextPart, MediaPart))

    def render(ps: Sequence[Any]) -> Any:
        return _responses.render_message_item(role, ps)

    _envelope(mapped, item, render, "item")
    first = mapped[0]
    if split and "item" not in (first.provider_data or {}):
        mapped[0] = _hint(first, _R, "item", {})  # starts a new item after text
    draft.parts.extend(mapped)
    hist.check(i, render(mapped), dict(item), "message item")


def _r_reasoning(hist: _History, i: int, item: Mapping[str, Any]) -> None:
    summary = item.get("summary") or []
    texts = [s.get("text", "") for s in summary if isinstance(s, Mapping)]
    part = ReasoningPart(
        provider="openai",
        text="\n\n".join(t for t in texts if isinstance(t, str)),
        provider_data={"provider": _R, "item": item},
    )
    hist.current("assistant", i).parts.append(part)


def _last_reasoning_id(draft: _Draft) -> str | None:
    for part in reversed(draft.parts):
        if isinstance(part, ReasoningPart) and part.provider == "openai":
            item = (part.provider_data or {}).get("item") or {}
            return item.get("id") if isinstance(item.get("id"), str) else None
    return None


def _render_item(part: Part) -> dict[str, Any]:
    return _RESPONSES.render_input([Message(role=_side(part), parts=(part,))])[0]


def _side(part: Part) -> Role:
    return "user" if isinstance(part, ToolResult) else "assistant"


def _r_function_call(hist: _History, i: int, item: Mapping[str, Any]) -> None:
    call = ToolCall(
        id=_string(hist, i, item.get("call_id"), "function_call 'call_id'"),
        name=_string(hist, i, item.get("name"), "function_call 'name'"),
        arguments=_string(hist, i, item.get("arguments"), "function_call 'arguments'"),
    )
    call = hist.call(i, _fit(call, item, _render_item, _R))
    hist.check(i, _render_item(call), dict(item), "function_call item")
    draft = hist.current("assistant", i)
    link = _last_reasoning_id(draft)
    if link is not None and "id" in item:
        call = _hint(call, _R, "reasoning_id", link)
    draft.parts.append(call)


def _r_output(hist: _History, i: int, item: Mapping[str, Any]) -> None:
    call_id = _string(hist, i, item.get("call_id"), "function_call_output 'call_id'")
    output = item.get("output")
    named: dict[str, Any] = {}
    media: list[MediaPart] = []
    if isinstance(output, str):
        text = output
    else:
        texts: list[str] = []
        for raw in _list(hist, output, f"item {i}: output"):
            part = _r_content_part(hist, i, "user", raw)
            if part is None:
                hist.current("user", i).parts.append(hist.provider(i, item, "output item"))
                return
            if isinstance(part, TextPart):
                texts.append(part.text)
            else:
                media.append(part)
        text, named["output"] = "\n\n".join(texts), "list"
    result = ToolResult(
        call_id=call_id, name=hist.name_of(i, call_id), content=text, media=tuple(media)
    )
    result = _fit(result, item, _render_item, _R, **named)
    hist.check(i, _render_item(result), dict(item), "function_call_output item")
    hist.current("user", i).parts.append(result)


def _r_other(hist: _History, i: int, item: Mapping[str, Any]) -> None:
    kind = str(item.get("type"))
    side: Role = "user" if kind.endswith("_output") or kind == "additional_tools" else "assistant"
    hist.current(side, i).parts.append(hist.provider(i, item, f"{kind} item"))


_RESPONSES_ITEMS: dict[str, Callable[[_History, int, Mapping[str, Any]], None]] = {
    "message": _r_message,
    "reasoning": _r_reasoning,
    "function_call": _r_function_call,
    "function_call_output": _r_output,
}


def from_responses(
    input_items: Sequence[Mapping[str, Any]], *, instructions: str | None = None
) -> ParsedHistory:
    """Parse a Responses ``input`` list (what you would send).

    Args:
        input_items: The ``input`` items.
        instructions: The ``instructions`` parameter, if any (becomes ``system``).
            System and developer message items stay in place as provider parts.

    Raises:
        CorruptHistoryError: An item is malformed (index and reason given).
    """
    hist = _History(_R)
    for i, item in enumerate(_list(hist, input_items, "input")):
        item = _mapping(hist, i, item, "an input item")
        kind = item.get("type", "message" if "role" in item else None)
        if not isinstance(kind, str):
            raise hist.error(i, "an input item needs a 'type' (or a 'role' for a message)")
        _RESPONSES_ITEMS.get(kind, _r_other)(hist, i, item)
    return hist.result(instructions or "")


# -- Gemini (https://ai.google.dev/api/caching#Content) ------------------------------------

_G = _gemini.FORMAT


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


_NESTED = ("function_call", "function_response", "inline_data", "file_data")


def _normalize(part: Mapping[str, Any]) -> dict[str, Any]:
    """A Gemini part with SDK snake_case keys (``args`` / ``response`` values untouched)."""
    out = {_snake(k): v for k, v in part.items()}
    for key in _NESTED:
        if isinstance(out.get(key), Mapping):
            out[key] = {_snake(k): v for k, v in out[key].items()}
    reply = out.get("function_response")
    if isinstance(reply, dict) and isinstance(reply.get("parts"), list):
        reply["parts"] = [_normalize(p) if isinstance(p, Mapping) else p for p in reply["parts"]]
    return out


class _Calls:
    """Gemini calls waiting for their response, for ids and responses without one."""

    def __init__(self) -> None:
        self.open: list[ToolCall] = []

    def take(self, call_id: str | None, name: str) -> ToolCall | None:
        for call in self.open:
            if call.id == call_id or (call_id is None and call.name == name):
                self.open.remove(call)
                return call
        return None


def _g_call(hist: _History, i: int, j: int, part: dict[str, Any], calls: _Calls) -> Part:
    raw = _mapping(hist, i, part["function_call"], "function_call")
    args = _mapping(hist, i, raw.get("args", {}), "function_call 'args'")
    named: dict[str, Any] = {"args": args}
    call_id = raw.get("id")
    if call_id is None:
        call_id, named["synthetic_id"] = f"gemini_call_{i}_{j}", True
    call = ToolCall(
        id=_string(hist, i, call_id, "function_call 'id'"),
        name=_string(hist, i, raw.get("name"), "function_call 'name'"),
        arguments=_dumps(args),
    )
    call = hist.call(i, _fit(call, part, _gemini.render_part, _G, **named))
    calls.open.append(call)
    return call


def _g_response(hist: _History, i: int, j: int, part: dict[str, Any], calls: _Calls) -> Part:
    raw = _mapping(hist, i, part["function_response"], "function_response")
    name = _string(hist, i, raw.get("name"), "function_response 'name'")
    response = _mapping(hist, i, raw.get("response", {}), "function_response 'response'")
    call = calls.take(raw.get("id"), name)
    named: dict[str, Any] = {}
    call_id = raw.get("id")
    if call_id is None:
        named["synthetic_id"] = True
        if call is None:
            hist.notes.append(f"message {i}: function_response {name!r} matches no call")
        call_id = call.id if call is not None else f"gemini_result_{i}_{j}"
    text = _gemini.response_text(response)
    is_error = list(response) == ["error"] and isinstance(response["error"], str)
    if dict(response) != {"error" if is_error else "output": text}:
        named["response"] = response
    media = [_g_media_part(hist, i, p) for p in raw.get("parts") or []]
    if None in media:
        raise hist.error(i, "function_response 'parts' must hold inline_data or file_data")
    result = ToolResult(
        call_id=_string(hist, i, call_id, "function_response 'id'"),
        name=name,
        content=text,
        is_error=is_error,
        media=tuple(m for m in media if m is not None),
    )
    return _fit(result, part, _gemini.render_part, _G, **named)


def _g_media_part(hist: _History, i: int, part: Mapping[str, Any]) -> MediaPart | None:
    if isinstance(part.get("inline_data"), Mapping):
        blob = part["inline_data"]
        media_type = _string(hist, i, blob.get("mime_type"), "inline_data 'mime_type'")
        return MediaPart(media_type=media_type, data=_string(hist, i, blob.get("data"), "data"))
    if isinstance(part.get("file_data"), Mapping):
        ref = part["file_data"]
        media_type = str(ref.get("mime_type", "application/octet-stream"))
        return MediaPart(media_type=media_type, url=_string(hist, i, ref.get("file_uri"), "uri"))
    return None


def _g_media(hist: _History, i: int, j: int, part: dict[str, Any], calls: _Calls) -> Part:
    media = _g_media_part(hist, i, part)
    if media is None:
        return hist.provider(i, part, "media part")
    return _fit(media, part, _gemini.render_part, _G)


def _g_text(hist: _History, i: int, j: int, part: dict[str, Any], calls: _Calls) -> Part:
    text = _string(hist, i, part["text"], "part 'text'")
    return _fit(TextPart(text=text), part, _gemini.render_part, _G)


_GEMINI_PARTS: dict[str, Callable[[_History, int, int, dict[str, Any], _Calls], Part]] = {
    "function_call": _g_call,
    "function_response": _g_response,
    "inline_data": _g_media,
    "file_data": _g_media,
    "text": _g_text,
}


def _g_part(hist: _History, i: int, j: int, role: Role, raw: object, calls: _Calls) -> Part:
    raw = _mapping(hist, i, raw, "a part")
    part = _normalize(raw)
    if part.get("thought") is True:
        if role != "assistant":
            raise hist.error(i, "a thought part in a user content")
        text = part.get("text", "")
        return ReasoningPart(
            provider="gemini",
            text=text if isinstance(text, str) else "",
            provider_data={"provider": _G, "part": raw},
        )
    kind = next((k for k in _GEMINI_PARTS if k in part), None)
    if kind is None:
        return hist.provider(i, raw, f"part with keys {sorted(raw)}")
    parsed = _GEMINI_PARTS[kind](hist, i, j, part, calls)
    if isinstance(parsed, ToolCall) and role != "assistant":
        raise hist.error(i, "a function_call part in a user content")
    if isinstance(parsed, ToolResult) and role != "user":
        raise hist.error(i, "a function_response part in a model content")
    hist.check(i, _gemini.render_part(parsed), part, f"{kind} part")
    return parsed


def from_gemini(
    contents: Sequence[Mapping[str, Any]], *, system_instruction: object = None
) -> ParsedHistory:
    """Parse Gemini ``contents`` (REST camelCase or google-genai snake_case keys).

    Args:
        contents: The ``contents`` list.
        system_instruction: The system instruction, if any: a string or a ``Content``
            dict (becomes ``system``).

    Raises:
        CorruptHistoryError: A content is malformed (index and reason given).
    """
    hist = _History(_G)
    calls = _Calls()
    for i, content in enumerate(_list(hist, contents, "contents")):
        content = _mapping(hist, i, content, "a content")
        role = _role(hist, i, {"role": content.get("role", "user")}, ("user", "model", "function"))
        draft = hist.new(role, i)
        for j, raw in enumerate(_list(hist, content.get("parts") or [], f"content {i}: parts")):
            draft.parts.append(_g_part(hist, i, j, role, raw, calls))
    system = system_instruction
    if isinstance(system, Mapping):
        system = system.get("parts") or []
    return hist.result(_system_text(hist, system, "system_instruction"))
