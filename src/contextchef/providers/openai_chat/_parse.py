"""OpenAI Chat Completions history (and DeepSeek) -> the message IR."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from contextchef._errors import CorruptHistoryError, shown
from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.providers._base import split_data_url
from contextchef.providers._parsing import (
    MALFORMED_CALL,
    Hinted,
    HistoryBuilder,
    ParsedHistory,
    Render,
    arguments_text,
    as_id,
    as_list,
    as_mapping,
    as_messages,
    as_name,
    as_string,
    envelope_hints,
    fit_hints,
)
from contextchef.providers._reading import (
    ReadResponse,
    RecordedPayload,
    ResponseNotice,
    WireReader,
    WireShape,
    checked_response,
    first_item,
    others_left,
    read_as,
    register_reader,
    stopped,
)
from contextchef.providers._usage import CacheReport, cache_report, tokens_at
from contextchef.providers.openai_chat import _render as _openai_chat
from contextchef.providers.openai_chat._choice import CHOICE
from contextchef.providers.openai_chat._fields import FIELDS

_O = _openai_chat.FORMAT
_CHAT = _openai_chat.OpenAIChatAdapter()


def _o_media(hist: HistoryBuilder, i: int, raw: Mapping[str, Any]) -> MediaPart | None:
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
        return fit_hints(
            part, raw, _CONTENT_PART, _O, **({"image_url_extra": extra} if extra else {})
        )
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
        return fit_hints(part, raw, _CONTENT_PART, _O, **({"file_extra": extra} if extra else {}))
    return None


def _content_part(part: TextPart | MediaPart) -> dict[str, Any]:
    return _openai_chat.CONTENT_PARTS[part.kind](part)


_CONTENT_PART: Render = _content_part


def _o_content(hist: HistoryBuilder, i: int, content: object) -> list[TextPart | MediaPart] | None:
    """IR parts of a Chat ``content`` (None when a part cannot be mapped)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(text=content)]
    parts: list[TextPart | MediaPart] = []
    for raw in as_list(hist, content, f"message {i}: content"):
        raw = as_mapping(hist, i, raw, "a content part")
        if raw.get("type") == "text" and isinstance(raw.get("text"), str):
            parts.append(fit_hints(TextPart(text=raw["text"]), raw, _CONTENT_PART, _O))
            continue
        if not isinstance(raw.get("type"), str) or raw["type"] not in _PART_TYPES:
            raise hist.error(
                i, f"content part type {shown(raw.get('type'), 40)} is not a Chat Completions part"
            )
        media = _o_media(hist, i, raw)
        if media is None:
            return None
        parts.append(media)
    return parts


_PART_TYPES = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
"""Content part types of Chat Completions messages (others are another API's blocks)."""


def _o_assistant(hist: HistoryBuilder, i: int, msg: Mapping[str, Any]) -> None:
    if refused(msg) and not msg.get("content") and not msg.get("tool_calls"):
        # a refusal is kept as it is sent back, ``content: ""`` beside the ``refusal`` (the
        # API requires content without calls; `ChatCompletionAssistantMessageParam`), so
        # the stored form and the sent form are one from the first request on
        kept = {**msg, "content": ""}
        hist.new("assistant", i).parts.append(hist.provider(i, kept, "refusal"))
        return
    content = _o_content(hist, i, msg.get("content"))
    calls = msg.get("tool_calls") or []
    parsed_calls = [_o_call(hist, i, c) for c in as_list(hist, calls, f"message {i}: tool_calls")]
    mapped: list[Hinted] = [*(content or ()), *parsed_calls]
    if content is None or not mapped:
        # unknown shapes, and messages with neither text nor calls (e.g. a refusal), are
        # kept verbatim for this provider
        hist.new("assistant", i).parts.append(hist.provider(i, msg, "assistant message"))
        return
    reasoning = msg.get("reasoning_content")
    if reasoning is not None:
        reasoning = as_string(hist, i, reasoning, "'reasoning_content'")

    def render(parts: Sequence[Part]) -> Any:
        return _CHAT.render_assistant(Message(role="assistant", parts=tuple(parts)), reasoning)[0]

    envelope_hints(mapped, msg, render, "message", _O)
    draft = hist.new("assistant", i)
    if reasoning:  # "" carries nothing: the deepseek target sends "" where it is required
        draft.parts.append(ReasoningPart(provider="deepseek", text=reasoning))
    draft.parts.extend(mapped)
    hist.check(i, render(mapped), dict(msg), "assistant message")


def refused(message: object) -> bool:
    """Whether a Chat assistant message is a refusal (a non-empty ``refusal`` text)."""
    refusal = message.get("refusal") if isinstance(message, Mapping) else None
    return isinstance(refusal, str) and bool(refusal)


def _o_call(hist: HistoryBuilder, i: int, raw: object) -> ToolCall:
    """A Chat tool call; one that is no function call is answered, never replayed as sent.

    The API takes back only ``type: "function"`` calls with a ``function`` object, each
    answered by a tool message; a call without one (or of another type), kept verbatim,
    would go back with every later request and be refused (400). It becomes a call of
    the tool `MALFORMED_CALL`, its arguments saying what came, so the gate answers it
    with an error result the model can act on and the replay is a well-formed call.
    """
    raw = as_mapping(hist, i, raw, "a tool call")
    function = raw.get("function")
    if raw.get("type") not in (None, "function") or not isinstance(function, Mapping):
        hist.notes.append(f"message {i}: a tool call that is no function call, answered")
        what = f"not a function call: {shown(dict(raw), 300)}"
        call_id = as_id(hist, i, raw.get("id"), "tool call 'id'")
        return hist.call(i, ToolCall(id=call_id, name=MALFORMED_CALL, arguments=what))
    arguments = arguments_text(hist, i, function.get("arguments", "{}"), "function 'arguments'")
    if "arguments" in function:  # the text itself, where an unreadable object was
        raw = {**raw, "function": {**function, "arguments": arguments}}
    call = ToolCall(
        id=as_id(hist, i, raw.get("id"), "tool call 'id'"),
        name=as_name(hist, i, function.get("name"), "function 'name'"),
        arguments=arguments,
    )
    return hist.call(i, fit_hints(call, raw, _openai_chat.render_tool_call, _O))


def _o_user(hist: HistoryBuilder, i: int, msg: Mapping[str, Any]) -> None:
    if msg.get("content") is None:  # the API requires it: replayed, it would be a 400
        raise hist.error(i, "a user message needs 'content' (text or a list of parts)")
    content = _o_content(hist, i, msg.get("content"))
    if not content:
        hist.new("user", i).parts.append(hist.provider(i, msg, "user message"))
        return
    parts: list[Hinted] = list(content)

    def render(ps: Sequence[Part]) -> Any:
        return _CHAT.render_user(Message(role="user", parts=tuple(ps)))[0]

    envelope_hints(parts, msg, render, "message", _O)
    hist.new("user", i).parts.extend(parts)
    hist.check(i, render(parts), dict(msg), "user message")


def _o_tool(hist: HistoryBuilder, i: int, msg: Mapping[str, Any]) -> None:
    call_id = as_string(hist, i, msg.get("tool_call_id"), "'tool_call_id'")
    content = msg.get("content")
    named: dict[str, Any] = {}
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping)]
        if len(texts) != 1 or not isinstance(texts[0], str):
            raise hist.error(i, "tool message content must be a string or one text part")
        content, named["content"] = texts[0], "list"
    text = as_string(hist, i, content, "tool message 'content'")
    part = ToolResult(call_id=call_id, name=hist.name_of(i, call_id), content=text)
    part = fit_hints(part, msg, _openai_chat.render_tool_message, _O, **named)
    draft = hist.drafts[-1] if hist.drafts else None
    if (
        draft is None
        or draft.role != "user"
        or not (draft.parts and isinstance(draft.parts[-1], ToolResult))
    ):
        draft = hist.new("user", i)
    draft.parts.append(part)
    hist.check(i, _openai_chat.render_tool_message(part), dict(msg), "tool message")


def _o_positional(hist: HistoryBuilder, i: int, msg: Mapping[str, Any]) -> None:
    role = msg.get("role")
    content = msg.get("content")
    texts = content if isinstance(content, list) else []
    if role != "function" and (
        not isinstance(content, (str, list))
        or not all(isinstance(p, Mapping) and isinstance(p.get("text"), str) for p in texts)
    ):
        raise hist.error(i, f"a {role} message needs 'content': text or a list of text parts")
    draft = hist.new("assistant" if role == "assistant" else "user", i)
    draft.parts.append(hist.provider(i, msg, f"{role} message"))


_CHAT_ROLES: dict[str, Callable[[HistoryBuilder, int, Mapping[str, Any]], None]] = {
    "user": _o_user,
    "assistant": _o_assistant,
    "tool": _o_tool,
    "system": _o_positional,
    "developer": _o_positional,
    "function": _o_positional,
}


def _argument_slots(message: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """Each ``tool_calls[].function.arguments`` (see `json_safe`)."""
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and "arguments" in function:
            yield function, "arguments"


def from_openai(messages: Sequence[Mapping[str, Any]]) -> ParsedHistory:
    """Parse a Chat Completions history (the ``messages`` you would send).

    A leading ``system`` message with string content becomes ``system``; later system or
    developer messages stay in place as provider parts. ``reasoning_content`` on an
    assistant message (DeepSeek and compatible APIs) becomes
    ``ReasoningPart(provider="deepseek")``; compile with target ``deepseek`` to send it.

    Raises:
        CorruptHistoryError: A message is malformed (index and reason given).
    """
    hist = HistoryBuilder(_O)
    items = as_messages(hist, messages, "messages", _argument_slots, text=True)
    system = ""
    for i, msg in enumerate(items):
        msg = as_mapping(hist, i, msg, "a message")
        role = msg.get("role")
        if i == 0 and role == "system" and isinstance(msg.get("content"), str):
            # extra keys (e.g. SWE-agent's "agent") are bookkeeping, not prompt
            system = msg["content"]
            continue
        handler = _CHAT_ROLES.get(role) if isinstance(role, str) else None
        if handler is None:
            raise hist.error(i, f"role must be one of {sorted(_CHAT_ROLES)}, got {shown(role, 40)}")
        handler(hist, i, msg)
    return hist.result(system)


# -- OpenAI Responses (https://platform.openai.com/docs/api-reference/responses/create) ----


# -- responses, request payloads, message lists --------------------------------------------

_STOPS = {
    "length": "the reply was cut off at the token limit (finish_reason length)",
    "content_filter": "the reply was withheld by the content filter (finish_reason content_filter)",
}


def detect(data: Mapping[str, Any]) -> bool:
    """Does this response dict look like a ``ChatCompletion`` (DeepSeek's included)?"""
    return "choices" in data


def _stops(data: Mapping[str, Any]) -> tuple[ResponseNotice, ...]:
    """``finish_reason`` ``length`` or ``content_filter``, and a ``refusal`` text."""
    first = (data.get("choices") or [{}])[0]
    if not isinstance(first, Mapping):
        return ()
    found = []
    reason = first.get("finish_reason")
    if isinstance(reason, str) and reason in _STOPS:
        found.append(stopped(reason, _STOPS[reason]))
    message = first.get("message")
    refusal = message.get("refusal") if isinstance(message, Mapping) else None
    if isinstance(refusal, str) and refusal:
        found.append(stopped("refusal", f"the model refused: {refusal[:200]}"))
    return (*found, *others_left(data, "choices", "n"))


def read_response(response: object, *, id_offset: int = 0) -> ReadResponse:
    """A ``ChatCompletion`` (SDK object or dict): its first choice's turn, id and notices.

    Raises:
        CorruptHistoryError: An error body, no choice or message, or a turn the parser
            cannot read.
    """
    data = checked_response(response, READER)
    message = first_item(data, "choices", "Chat Completions").get("message")
    if not isinstance(message, Mapping):
        raise CorruptHistoryError("the Chat Completions choice has no message", index=0)
    # the choice's message is the model's turn whatever its role says (as on the other wires);
    # one with nothing in it (no content, calls or refusal) is no turn, as an empty
    # Anthropic content or Responses output: replayed, its null content would be refused
    empty = not any(v for k, v in message.items() if k != "role")
    return read_as(
        data,
        from_openai([] if empty else [{**message, "role": "assistant"}]),
        _stops(data),
        read_cache(data),
        cut=("length",),  # the token limit
        # a refusal continues no prefill; text beside it does (`history.continue_turn`)
        refused=refused(message) and not message.get("content"),
    )


def _no_failure(data: Mapping[str, Any]) -> str | None:
    return None


def read_request(payload: Mapping[str, Any]) -> RecordedPayload:
    """``messages`` (the system prompt is its first message) and ``tools``."""
    return RecordedPayload(payload["messages"], payload.get("system"), payload.get("tools"))


def read_cache(data: Mapping[str, Any]) -> CacheReport:
    """The cache outcome of a ``ChatCompletion`` dict (`CacheReport`).

    ``usage.prompt_tokens`` counts every input token; reads are
    ``prompt_tokens_details.cached_tokens``, writes ``cache_write_tokens``
    (https://developers.openai.com/api/docs/guides/prompt-caching); DeepSeek reports
    ``prompt_cache_hit_tokens`` and ``prompt_cache_miss_tokens`` instead
    (https://api-docs.deepseek.com/guides/kv_cache).
    """
    usage = data.get("usage")
    read = tokens_at(usage, "prompt_tokens_details", "cached_tokens")
    hit, miss = (
        tokens_at(usage, "prompt_cache_hit_tokens"),
        tokens_at(usage, "prompt_cache_miss_tokens"),
    )
    return cache_report(
        data,
        usage,
        input_tokens=tokens_at(usage, "prompt_tokens") or hit + miss,
        read=read or hit,
        written=tokens_at(usage, "prompt_tokens_details", "cache_write_tokens"),
    )


SHAPE = WireShape(needs=("role",), bans=("type", "parts"), parts=_PART_TYPES, closed=True)
"""A Chat Completions message has a ``role``, no ``type`` or ``parts``, and content parts
of the Chat types only (`_PART_TYPES`; openai SDK ``ChatCompletionMessageParam``)."""


READER = register_reader(
    WireReader(
        wire=_openai_chat.FORMAT,
        label="Chat Completions",
        recording="openai_chat",
        conversation="messages",
        turn_key="choices",
        detect=detect,
        read_response=read_response,
        failure=_no_failure,
        # asked last: any ``messages`` payload or message list the others left
        detect_request=lambda payload: "messages" in payload,
        detect_history=lambda items: True,
        read_request=read_request,
        parse_history=lambda turn, system: from_openai(turn),
        read_cache=read_cache,
        shape=SHAPE,
        choice=CHOICE,
        fields=FIELDS,
    )
)
"""The Chat Completions wire's `WireReader`."""
