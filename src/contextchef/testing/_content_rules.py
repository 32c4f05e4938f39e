"""Request rules on what a message's content may hold: part types per role, blank text.

* `chat_content_part_types` (Chat Completions): a message's content list holds only the
  part types the official ``openai`` SDK's request types list for its role, the API
  answering 400 to any other (``Invalid value: 'tool_use'. Supported values are: ...``):

  - ``user``: ``text``, ``image_url``, ``input_audio``, ``file``
    (``openai/types/chat/chat_completion_content_part_param.py``,
    ``ChatCompletionContentPartParam``, the content of
    ``chat_completion_user_message_param.py``);
  - ``assistant``: ``text``, ``refusal``
    (``chat_completion_assistant_message_param.py``, ``ContentArrayOfContentPart``);
  - ``system``, ``developer``, ``tool``: ``text``
    (``chat_completion_system_message_param.py``, ``..._developer_message_param.py``,
    ``..._tool_message_param.py``: ``Iterable[ChatCompletionContentPartTextParam]``).

* `responses_content_part_types` (Responses): a ``message`` item's content list holds
  ``input_text``, ``input_image``, ``input_file`` for the ``user``, ``system`` and
  ``developer`` roles (``openai/types/responses/response_input_param.py``, ``Message``,
  and ``response_input_message_content_list_param.py``, ``ResponseInputContentParam``),
  and ``output_text``, ``refusal`` for ``assistant`` (``response_output_message_param.py``,
  ``Content``; the API refuses ``input_text`` there: ``Supported values are:
  'output_text' and 'refusal'``). A ``function_call_output`` whose ``output`` is a list
  holds the input types (``response_input_param.py``, ``FunctionCallOutput``, and
  ``response_function_call_output_item_list_param.py``).

* `anthropic_text_blocks_non_blank` (Messages): a ``text`` block in ``messages`` carries
  text with a non-whitespace character; the API answers ``messages: text content blocks
  must be non-empty`` (anthropics/anthropic-sdk-python#461, anthropics/claude-code#59812)
  and ``messages: text content blocks must contain non-whitespace text``
  (anthropics/claude-code#23440). The optional final assistant turn (a prefill) is left
  out, as the API's ``all messages must have non-empty content except for the optional
  final assistant message`` (anthropics/claude-code#3196) leaves it out; whether a prefill
  may be sent at all, and may end with whitespace, are `anthropic_no_prefill` (R18 of
  ``anthropic-preserved-thinking.md``) and `anthropic_no_trailing_whitespace`. Text inside
  ``tool_result`` content and in ``system`` is not checked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._body import as_list, dicts
from contextchef.testing._records import RecordedRequest

__all__ = [
    "CHAT_PART_TYPES",
    "RESPONSES_PART_TYPES",
    "anthropic_text_blocks_non_blank",
    "chat_content_part_types",
    "responses_content_part_types",
]

_Body = Mapping[str, Any]
_Earlier = Sequence[RecordedRequest]

CHAT_PART_TYPES: Mapping[str, frozenset[str]] = {
    "user": frozenset({"text", "image_url", "input_audio", "file"}),
    "assistant": frozenset({"text", "refusal"}),
    "system": frozenset({"text"}),
    "developer": frozenset({"text"}),
    "tool": frozenset({"text"}),
}
"""Chat Completions content part types per message role (the ``openai`` SDK's types)."""

_INPUT = frozenset({"input_text", "input_image", "input_file"})
RESPONSES_PART_TYPES: Mapping[str, frozenset[str]] = {
    "user": _INPUT,
    "system": _INPUT,
    "developer": _INPUT,
    "assistant": frozenset({"output_text", "refusal"}),
}
"""Responses ``message`` item content part types per role (the ``openai`` SDK's types)."""


def _wrong_parts(at: str, content: object, allowed: frozenset[str], whose: str) -> Iterator[str]:
    for k, part in dicts(content):
        kind = part.get("type")
        if kind not in allowed:
            yield (
                f"{at}[{k}]: part type {kind!r} is not valid in {whose}; supported "
                f"values are {', '.join(sorted(allowed))}"
            )


def chat_content_part_types(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Each message's content parts are of a type its role takes (see the module doc)."""
    for i, message in dicts(body.get("messages")):
        role = message.get("role")
        allowed = CHAT_PART_TYPES.get(role) if isinstance(role, str) else None
        if allowed is not None:
            yield from _wrong_parts(
                f"messages[{i}].content", message.get("content"), allowed, f"{role} messages"
            )


def responses_content_part_types(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Message items' and tool outputs' content parts are of a type their role takes."""
    for i, item in dicts(body.get("input")):
        kind, role = item.get("type", "message"), item.get("role")
        if kind == "message" and isinstance(role, str) and role in RESPONSES_PART_TYPES:
            allowed = RESPONSES_PART_TYPES[role]
            where = f"input[{i}].content"
            yield from _wrong_parts(where, item.get("content"), allowed, f"{role} items")
        elif kind == "function_call_output":
            where, output = f"input[{i}].output", item.get("output")
            yield from _wrong_parts(where, output, _INPUT, "function call outputs")


def anthropic_text_blocks_non_blank(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Text blocks hold non-whitespace text, the final assistant turn aside (module doc)."""
    messages = as_list(body.get("messages"))
    for i, message in dicts(messages):
        if message.get("role") == "assistant" and _prefill(messages, i):
            continue
        content = message.get("content")
        blocks = [(0, {"type": "text", "text": content})] if isinstance(content, str) else []
        for j, block in blocks or dicts(content):
            text = block.get("text")
            if block.get("type") != "text" or not isinstance(text, str) or text.strip():
                continue
            problem = "must contain non-whitespace text" if text else "must be non-empty"
            yield f"messages[{i}].content[{j}]: text content blocks {problem}"


def _prefill(messages: list[Any], i: int) -> bool:
    """Whether messages[i] and all after it are assistant or system: the final turn."""
    return all(isinstance(m, dict) and m.get("role") != "user" for m in messages[i:])
