"""The provider-neutral message IR (messages layer: knows no wire format).

A history is a sequence of `Message` values, each a role and a tuple of parts:

* `TextPart` — text from the user or the assistant;
* `ToolCall` — a call the assistant made (id, wire name, arguments exactly as the model
  produced them, as a JSON string);
* `ToolResult` — the answer to one call, in a user-role message.

Parallel calls are several `ToolCall` parts of one assistant message. Values are frozen;
``from_dict(to_dict(x)) == x`` holds for every message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from contextchef._errors import CorruptHistoryError, MalformedArgumentsError, UsageError
from contextchef._json import JsonValue, canonical_dumps

__all__ = [
    "Message",
    "Part",
    "Role",
    "TextPart",
    "ToolCall",
    "ToolResult",
    "assistant",
    "check_message",
    "message_from_dict",
    "tool_results",
    "user",
]

Role = Literal["user", "assistant"]


def _require_str(field_name: str, value: object) -> None:
    if not isinstance(value, str):
        raise UsageError(f"{field_name} must be a string, got {type(value).__name__}")


@dataclass(frozen=True, kw_only=True)
class TextPart:
    """Plain text."""

    text: str
    """The text, as written."""
    kind: Literal["text"] = "text"

    def __post_init__(self) -> None:
        _require_str("TextPart.text", self.text)


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """A tool call made by the model.

    ``arguments`` keeps the exact string the model produced so a replayed history is
    byte-identical; `parsed_arguments` decodes it. A mapping given at construction is
    serialized canonically.
    """

    id: str
    """The provider's call id (``tool_use.id``, ``call_id``, ``tool_calls[].id``)."""
    name: str
    """The wire name the model used."""
    arguments: str = "{}"
    """Arguments as a JSON text."""
    kind: Literal["tool_call"] = "tool_call"

    def __post_init__(self) -> None:
        _require_str("ToolCall.id", self.id)
        _require_str("ToolCall.name", self.name)
        if not isinstance(self.arguments, str):
            object.__setattr__(self, "arguments", canonical_dumps(self.arguments))

    def parsed_arguments(self) -> dict[str, JsonValue]:
        """The arguments as a dict.

        Raises:
            MalformedArgumentsError: The text is not JSON or not a JSON object.
        """
        text = self.arguments.strip() or "{}"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MalformedArgumentsError(
                f"arguments of call {self.id!r} to {self.name!r} are not valid JSON "
                f"({exc.msg} at character {exc.pos}); expected a JSON object",
                raw=self.arguments,
            ) from exc
        if not isinstance(value, dict):
            raise MalformedArgumentsError(
                f"arguments of call {self.id!r} to {self.name!r} must be a JSON object, got "
                f"{type(value).__name__}",
                raw=self.arguments,
            )
        return value


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """The result of one tool call."""

    call_id: str
    """Id of the `ToolCall` it answers."""
    name: str
    """Wire name of the tool that was called (Gemini needs it)."""
    content: str
    """Result text shown to the model."""
    is_error: bool = False
    """The call failed (bad arguments, denied, or the tool raised)."""
    kind: Literal["tool_result"] = "tool_result"

    def __post_init__(self) -> None:
        _require_str("ToolResult.call_id", self.call_id)
        _require_str("ToolResult.name", self.name)
        _require_str("ToolResult.content", self.content)


Part = TextPart | ToolCall | ToolResult


@dataclass(frozen=True, kw_only=True)
class Message:
    """One turn of the conversation."""

    role: Role
    """``user`` (text and/or tool results) or ``assistant`` (text and/or tool calls)."""
    parts: tuple[Part, ...] = field(default_factory=tuple)
    """The content, in order."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))

    @property
    def text(self) -> str:
        """All text parts joined with blank lines."""
        return "\n\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls in this message."""
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        """The tool results in this message."""
        return tuple(p for p in self.parts if isinstance(p, ToolResult))

    def to_dict(self) -> dict[str, Any]:
        """A plain-JSON form (see `message_from_dict`)."""
        parts: list[dict[str, Any]] = []
        for p in self.parts:
            if isinstance(p, TextPart):
                parts.append({"kind": "text", "text": p.text})
            elif isinstance(p, ToolCall):
                parts.append(
                    {"kind": "tool_call", "id": p.id, "name": p.name, "arguments": p.arguments}
                )
            else:
                parts.append(
                    {
                        "kind": "tool_result",
                        "call_id": p.call_id,
                        "name": p.name,
                        "content": p.content,
                        "is_error": p.is_error,
                    }
                )
        return {"role": self.role, "parts": parts}


def message_from_dict(data: Mapping[str, Any], *, index: int = 0) -> Message:
    """Rebuild a `Message` from `Message.to_dict` output.

    Raises:
        CorruptHistoryError: Unknown role or part kind, or missing fields.
    """
    role = data.get("role")
    if role not in ("user", "assistant"):
        raise CorruptHistoryError(
            f"message {index}: role must be 'user' or 'assistant', got {role!r}", index=index
        )
    if "parts" not in data:
        keys = sorted(str(k) for k in data)
        raise CorruptHistoryError(
            f"message {index}: expected contextchef's form {{'role', 'parts': [{{'kind': ...}}]}} "
            f"(see Message.to_dict), got keys {keys}; provider-format messages (with "
            "'content') must be converted to Message values first",
            index=index,
        )
    if not isinstance(data["parts"], list):
        raise CorruptHistoryError(f"message {index}: 'parts' must be a list", index=index)
    parts: list[Part] = []
    for raw in data["parts"]:
        kind = raw.get("kind") if isinstance(raw, Mapping) else None
        try:
            if kind == "text":
                parts.append(TextPart(text=raw["text"]))
            elif kind == "tool_call":
                parts.append(ToolCall(id=raw["id"], name=raw["name"], arguments=raw["arguments"]))
            elif kind == "tool_result":
                parts.append(
                    ToolResult(
                        call_id=raw["call_id"],
                        name=raw["name"],
                        content=raw["content"],
                        is_error=bool(raw.get("is_error", False)),
                    )
                )
            else:
                raise CorruptHistoryError(
                    f"message {index}: unknown part kind {kind!r}; expected text, tool_call "
                    "or tool_result",
                    index=index,
                )
        except KeyError as exc:
            raise CorruptHistoryError(
                f"message {index}: {kind} part lacks field {exc.args[0]!r}", index=index
            ) from exc
        except UsageError as exc:
            raise CorruptHistoryError(f"message {index}: {exc}", index=index) from exc
    message = Message(role=role, parts=tuple(parts))
    check_message(message, index)
    return message


def check_message(message: object, index: int) -> None:
    """Check one history entry's structure (roles and which parts each role may hold).

    Pairing of calls and results is not checked here.

    Raises:
        CorruptHistoryError: Not a `Message`, an unknown role, a tool call in a user
            message, or a tool result in an assistant message.
    """
    if not isinstance(message, Message):
        raise CorruptHistoryError(
            f"history entry {index} is a {type(message).__name__}, expected a Message",
            index=index,
        )
    if message.role not in ("user", "assistant"):
        raise CorruptHistoryError(
            f"message {index}: role {message.role!r} is not 'user' or 'assistant'; put the "
            "system prompt in set_system_prompt() and tool results in user messages",
            index=index,
        )
    for part in message.parts:
        if not isinstance(part, (TextPart, ToolCall, ToolResult)):
            raise CorruptHistoryError(
                f"message {index}: part {part!r} is not a TextPart, ToolCall or ToolResult",
                index=index,
            )
        if isinstance(part, ToolCall) and message.role != "assistant":
            raise CorruptHistoryError(
                f"message {index}: tool call {part.id!r} is in a {message.role} message; "
                "tool calls belong to assistant messages",
                index=index,
            )
        if isinstance(part, ToolResult) and message.role != "user":
            raise CorruptHistoryError(
                f"message {index}: tool result for {part.call_id!r} is in an assistant "
                "message; tool results belong to user messages (see tool_results())",
                index=index,
            )


def user(text: str) -> Message:
    """A user message with one text part."""
    return Message(role="user", parts=(TextPart(text=text),))


def assistant(text: str = "", tool_calls: Iterable[ToolCall] = ()) -> Message:
    """An assistant message: optional text, then tool calls."""
    parts: list[Part] = [TextPart(text=text)] if text else []
    parts.extend(tool_calls)
    return Message(role="assistant", parts=tuple(parts))


def tool_results(results: Sequence[ToolResult], text: str = "") -> Message:
    """A user message carrying tool results, optionally followed by text."""
    parts: list[Part] = list(results)
    if text:
        parts.append(TextPart(text=text))
    return Message(role="user", parts=tuple(parts))
