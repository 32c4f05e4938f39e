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
    as_string,
    compact_dumps,
    fit_hints,
    parse_role,
    system_text,
)
from contextchef.providers.anthropic import _render as _anthropic

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
    text = block.get("thinking", "")
    return ReasoningPart(
        provider="anthropic",
        text=text if isinstance(text, str) else "",
        provider_data={"provider": _A, "block": block},
    )


def _a_tool_use(hist: HistoryBuilder, i: int, role: Role, block: Mapping[str, Any]) -> Part:
    if role != "assistant":
        raise hist.error(i, f"tool_use block in a {role} message")
    call_id = as_id(hist, i, block.get("id"), "tool_use 'id'")
    name = as_string(hist, i, block.get("name"), "tool_use 'name'")
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
    if isinstance(content, str):
        text = content
    else:
        blocks = as_list(hist, content, f"message {i}: tool_result 'content'")
        mapped = _anthropic.result_content_parts(blocks)
        found = _anthropic.result_references(blocks)
        if found is not None:
            text, references = _reference_text(found), found
        elif mapped is None:
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
        references=references,
    )
    return fit_hints(part, block, _anthropic.render_block, _A, **named)


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
