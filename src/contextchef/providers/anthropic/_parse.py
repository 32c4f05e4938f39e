"""Anthropic Messages history -> the message IR (see `contextchef.providers._parsing`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from contextchef.history._messages import (
    MediaPart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.providers._parsing import (
    HistoryBuilder,
    ParsedHistory,
    UnreadableArguments,
    as_id,
    as_list,
    as_mapping,
    as_messages,
    as_name,
    as_string,
    compact_dumps,
    fit_hints,
    parse_role,
    system_text,
)
from contextchef.providers._reading import (
    ReadResponse,
    RecordedPayload,
    ResponseNotice,
    WireReader,
    WireShape,
    checked_response,
    read_as,
    register_reader,
    stopped,
)
from contextchef.providers._usage import CacheReport, cache_report, tokens_at
from contextchef.providers.anthropic import _render as _anthropic
from contextchef.providers.anthropic._choice import CHOICE
from contextchef.providers.anthropic._fields import FIELDS

_A = _anthropic.FORMAT


def _a_text(hist: HistoryBuilder, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    text = as_string(hist, i, block.get("text"), "text block 'text'")
    return fit_hints(TextPart(text=text), block, _anthropic.render_block, _A)


def _a_media(hist: HistoryBuilder, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    part = _anthropic.media_part(block)
    if part is None:
        return hist.provider(i, block, f"{block['type']} block with an unmapped source")
    return part


def _a_thinking(hist: HistoryBuilder, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    if role != "assistant":
        raise hist.error(i, f"{block['type']} block in a {role} message")
    # replayed verbatim: a text of the wrong type would be refused on every later request
    # (a block without a usable signature or data is dropped and reported when rendered)
    if "thinking" in block:
        as_string(hist, i, block["thinking"], f"{block['type']} block 'thinking'")
    return ReasoningPart(
        provider="anthropic",
        text=block.get("thinking", ""),
        provider_data={"provider": _A, "block": block},
    )


def _a_tool_use(hist: HistoryBuilder, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    if role != "assistant":
        raise hist.error(i, f"tool_use block in a {role} message")
    call_id = as_id(hist, i, block.get("id"), "tool_use 'id'")
    name = as_name(hist, i, block.get("name"), "tool_use 'name'")
    raw = block.get("input", {})
    if isinstance(raw, UnreadableArguments):  # sent as {}, refused by the gate
        part = ToolCall(id=call_id, name=name, arguments=raw.text)
        return hist.call(i, fit_hints(part, {**block, "input": {}}, _anthropic.render_block, _A))
    arguments = as_mapping(hist, i, raw, "tool_use 'input'")
    part = ToolCall(id=call_id, name=name, arguments=compact_dumps(arguments))
    fitted = fit_hints(part, block, _anthropic.render_block, _A, input=arguments)
    return hist.call(i, fitted)


def _argument_slots(message: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """Each ``tool_use`` block's ``input`` (see `json_safe`)."""
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "tool_use" and "input" in block:
            yield block, "input"


def _a_tool_result(hist: HistoryBuilder, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    if role != "user":
        raise hist.error(i, f"tool_result block in a {role} message")
    call_id = as_string(hist, i, block.get("tool_use_id"), "tool_result 'tool_use_id'")
    content = block.get("content", "")
    named: dict[str, Any] = {}
    media: tuple[MediaPart, ...] = ()
    references: tuple[str, ...] = ()
    blocks: Sequence[Any] = ()
    if isinstance(content, str):
        text = content
    else:
        blocks = as_list(hist, content, f"message {i}: tool_result 'content'")
        mapped = _anthropic.result_content_parts(blocks)
        found = result_references(blocks)
        if found is not None:
            text, references = _reference_text(found), found
        elif mapped is None:
            text, named["content"] = _anthropic.result_text(blocks), blocks
            hist.notes.append(f"message {i}: tool_result content kept as recorded blocks")
        else:
            (text, media), named["list"] = mapped, bool(blocks)  # [] is refused: not a list
    part = ToolResult(
        call_id=call_id,
        name=hist.name_of(i, call_id),
        content=text,
        is_error=block.get("is_error") is True,
        media=media,
        references=references,
    )
    fitted = fit_hints(part, block, _anthropic.render_block, _A, **named)
    built = _anthropic.render_block(fitted) or {}
    if "content" in named or built.get("content") == content or not blocks:
        return fitted  # an empty list (the API refuses it) is rendered the library's way
    # several text blocks, block fields the IR has no place for: replayed as given while
    # the result says the same (an edit before a thinking block would void it)
    return fit_hints(part, block, _anthropic.render_block, _A, **named, content=blocks)


def _reference_text(names: Sequence[str]) -> str:
    """What a reveal by reference says to targets without ``tool_reference`` blocks."""
    return "Tools found (now available to call by name): " + ", ".join(names)


_ANTHROPIC_BLOCKS: dict[str, Callable[[HistoryBuilder, int, Role, Mapping[str, Any]], Part]] = {
    "text": _a_text,
    "image": _a_media,
    "document": _a_media,
    "thinking": _a_thinking,
    "redacted_thinking": _a_thinking,
    "tool_use": _a_tool_use,
    "tool_result": _a_tool_result,
}


def _a_message(hist: HistoryBuilder, i: int, msg: Mapping[str, Any]) -> None:
    role = parse_role(hist, i, msg, ("user", "assistant"))
    draft = hist.new(role, i)
    content = msg.get("content")
    if isinstance(content, str):
        draft.parts.append(
            TextPart(text=content, provider_data={"provider": _A, "as_string": True})
        )
        return
    for block in as_list(hist, content, f"message {i}: content"):
        block = as_mapping(hist, i, block, "a content block")
        kind = as_string(hist, i, block.get("type"), "block 'type'")
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
    hist = HistoryBuilder(_A)
    for i, msg in enumerate(as_messages(hist, messages, "messages", _argument_slots)):
        _a_message(hist, i, as_mapping(hist, i, msg, "a message"))
    return hist.result(system_text(hist, system, "system"))


# -- OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat/create) --


# -- responses, request payloads, message lists --------------------------------------------

_STOPS = {
    "max_tokens": "the reply was cut off at max_tokens",
    "model_context_window_exceeded": "the reply was cut off at the model's context window",
    "refusal": "the model refused to answer (stop_reason refusal)",
}
_OWN_BLOCKS = ("tool_use", "tool_result", "thinking")
_CUT = ("max_tokens", "model_context_window_exceeded")  # the reply was truncated


def detect(data: Mapping[str, Any]) -> bool:
    """Does this response dict look like an Anthropic ``Message``?"""
    return data.get("type") == "message" or data.get("role") == "assistant"


def _stops(data: Mapping[str, Any]) -> tuple[ResponseNotice, ...]:
    """``stop_reason`` ``max_tokens``, ``model_context_window_exceeded`` or ``refusal``."""
    reason = data.get("stop_reason")
    if isinstance(reason, str) and reason in _STOPS:
        return (stopped(reason, _STOPS[reason]),)
    return ()


def read_response(response: object, *, id_offset: int = 0) -> ReadResponse:
    """An Anthropic ``Message`` (SDK object or dict): its turn, id and notices.

    Raises:
        CorruptHistoryError: An error body, or a turn the parser cannot read.
    """
    data = checked_response(response, READER)
    turn = from_anthropic([{"role": "assistant", "content": data.get("content") or []}])
    return read_as(data, turn, _stops(data), read_cache(data), cut=_CUT)


def _no_failure(data: Mapping[str, Any]) -> str | None:
    return None


def detect_history(items: Sequence[Any]) -> bool:
    """A message list holding Anthropic's own blocks (tool use, results, thinking)."""
    for m in items:
        content = m.get("content") if isinstance(m, Mapping) else None
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in _OWN_BLOCKS for b in content
        ):
            return True
    return False


def _declared(tool: object) -> bool:
    return isinstance(tool, Mapping) and "input_schema" in tool


def detect_request(payload: Mapping[str, Any]) -> bool:
    """``messages`` with a top-level ``system``, ``input_schema`` tools or Anthropic blocks."""
    if "messages" not in payload:
        return False
    tools, messages = payload.get("tools"), payload.get("messages")
    return (
        "system" in payload
        or (
            isinstance(tools, list)
            and any(isinstance(t, Mapping) and "input_schema" in t for t in tools)
        )
        or (isinstance(messages, list) and detect_history(messages))
    )


def read_request(payload: Mapping[str, Any]) -> RecordedPayload:
    """``messages``, ``system``, ``tools``."""
    return RecordedPayload(payload["messages"], payload.get("system"), payload.get("tools"))


def read_cache(data: Mapping[str, Any]) -> CacheReport:
    """The cache outcome of a ``Message`` dict (`CacheReport`).

    ``usage.input_tokens`` counts only the input after the last cache breakpoint; reads
    (``cache_read_input_tokens``) and writes (``cache_creation_input_tokens``, per TTL in
    ``cache_creation``) come on top
    (https://platform.claude.com/docs/en/build-with-claude/prompt-caching#tracking-cache-performance).
    """
    usage = data.get("usage")
    read = tokens_at(usage, "cache_read_input_tokens")
    written = tokens_at(usage, "cache_creation_input_tokens")
    by_ttl = {
        "5m": tokens_at(usage, "cache_creation", "ephemeral_5m_input_tokens"),
        "1h": tokens_at(usage, "cache_creation", "ephemeral_1h_input_tokens"),
    }
    return cache_report(
        data,
        usage,
        input_tokens=tokens_at(usage, "input_tokens") + read + written,
        read=read,
        written=written,
        by_ttl=by_ttl,
    )


SHAPE = WireShape(
    needs=("role", "content"),
    bans=("type", "parts", "tool_calls", "tool_call_id"),
    parts=frozenset(_ANTHROPIC_BLOCKS),
)
"""A Messages entry has ``role`` and ``content``, none of the other wires' keys (``type``,
``parts``, ``tool_calls``, ``tool_call_id``), and no content block of a type only another
wire takes (an OpenAI part); blocks it parses as its own are `_ANTHROPIC_BLOCKS`, others
(server tool blocks) pass (anthropic SDK ``MessageParam``)."""


READER = register_reader(
    WireReader(
        wire=_anthropic.FORMAT,
        label="Anthropic Messages",
        recording="anthropic",
        conversation="messages",
        turn_key="content",
        detect=detect,
        read_response=read_response,
        failure=_no_failure,
        detect_request=detect_request,
        detect_history=detect_history,
        read_request=read_request,
        parse_history=lambda turn, system: from_anthropic(turn, system=system),
        read_cache=read_cache,
        shape=SHAPE,
        choice=CHOICE,
        fields=FIELDS,
    )
)
"""The Anthropic Messages wire's `WireReader`."""


def result_references(content: Sequence[Any]) -> tuple[str, ...] | None:
    """Tool names of a ``tool_result`` content list made only of ``tool_reference`` blocks.

    None when the list holds anything else (or nothing).
    """
    names = [
        b.get("tool_name")
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "tool_reference"
    ]
    if not content or len(names) != len(content):
        return None
    if not all(isinstance(n, str) and n for n in names):
        return None
    return tuple(str(n) for n in names)
