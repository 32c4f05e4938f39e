"""The provider-neutral message IR (messages layer: knows no wire format).

A history is a sequence of `Message` values, each a role and a tuple of parts:

* `TextPart` — text from the user or the assistant;
* `MediaPart` — an image or file, by reference (URL or provider file id) or inline
  base64 data;
* `ReasoningPart` — a reasoning/thinking block (Anthropic thinking and redacted
  thinking, Responses reasoning items, Gemini thoughts, DeepSeek ``reasoning_content``);
* `ToolCall` — a call the assistant made (id, wire name, arguments exactly as the model
  produced them, as a JSON string);
* `ToolResult` — the answer to one call, in a user-role message (text, optionally with
  media parts);
* `ProviderPart` — a block only one provider understands (Anthropic server-tool blocks,
  ``tool_reference``...), replayed to that provider and reported when dropped for others.

Everything a provider needs back byte-for-byte (thinking signatures, encrypted reasoning,
thought signatures, item ids) lives in one opaque, read-only ``provider_data`` mapping on
the part, tagged with the provider it came from; adapters for that provider emit it
unchanged, others leave it out. Parallel calls are several `ToolCall` parts of one
assistant message. Values are frozen; ``message_from_dict(m.to_dict()) == m`` holds.
"""

from __future__ import annotations

import dataclasses
import marshal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from contextchef._errors import (
    CorruptHistoryError,
    MalformedArgumentsError,
    UsageError,
    check_json,
    json_reason,
    shown,
)
from contextchef._json import (
    FrozenDict,
    JsonValue,
    canonical_object_text,
    freeze,
    thaw,
)
from contextchef.history._arguments import json_kind as _json_kind
from contextchef.history._arguments import parse_json_object
from contextchef.history._fields import require_base64, require_bool, require_name
from contextchef.history._fields import require_str as _require_str

__all__ = [
    "MediaPart",
    "Message",
    "Part",
    "ProviderData",
    "ProviderPart",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCall",
    "ToolResult",
    "assistant",
    "check_message",
    "message_from_dict",
    "messages_arg",
    "part_from_dict",
    "part_to_dict",
    "tool_results",
    "user",
]

Role = Literal["user", "assistant"]


ProviderData = Mapping[str, JsonValue]
"""Opaque provider fields of a part, read-only; by convention ``{"provider": name, ...}``."""


_MAX_DATA_DEPTH = 200
"""Deepest nesting kept in a part's provider data (as for a parsed provider message)."""


_HINT_ENVELOPES = ("block", "extra", "file_extra", "item", "message", "part", "step")
"""Replay-hint keys that hold a recorded wire object (a mapping) when present."""


def _check_hints(where: str, value: Mapping[str, Any]) -> None:
    """Refuse replay hints of the wrong shape (a corrupted snapshot), naming the key.

    Data tagged ``{"provider": fmt}`` keeps its recorded wire objects (block, item, ...)
    as mappings and the wire key order (``keys``) as strings: renderers read them so.
    """
    if isinstance(value.get("provider"), str):
        for key in _HINT_ENVELOPES:
            if value.get(key) is not None and not isinstance(value[key], Mapping):
                raise UsageError(
                    f"{where}[{key!r}] must be an object, got {_json_kind(value[key])}"
                )
        keys = value.get("keys") or ()
        if not isinstance(keys, list | tuple) or not all(isinstance(k, str) for k in keys):
            raise UsageError(f"{where}['keys'] must be a list of strings (wire key order)")


def _freeze_data(obj: object, attr: str = "provider_data") -> None:
    value = getattr(obj, attr)
    if value is not None:
        if not isinstance(value, Mapping):
            raise UsageError(f"{attr} must be a mapping or None, got {type(value).__name__}")
        if not isinstance(value, FrozenDict):  # frozen ones were checked when first given
            where = f"{type(obj).__name__}.{attr}"
            check_json(where, value, max_depth=_MAX_DATA_DEPTH)
            _check_hints(where, value)
        object.__setattr__(obj, attr, freeze(value))


@dataclass(frozen=True, kw_only=True)
class TextPart:
    """Plain text."""

    text: str
    """The text, as written."""
    provider_data: ProviderData | None = None
    """Provider fields to replay (e.g. a Gemini ``thoughtSignature`` on this part)."""
    kind: Literal["text"] = "text"

    def __post_init__(self) -> None:
        _require_str("TextPart.text", self.text)
        _freeze_data(self)


@dataclass(frozen=True, kw_only=True)
class MediaPart:
    """An image or file, by reference or inline.

    Exactly one of ``url``, ``file_id`` and ``data`` is set.
    """

    media_type: str
    """MIME type, e.g. ``image/png`` or ``application/pdf``; its type and subtype are kept
    in lower case (case-insensitive by RFC 6838; the APIs refuse ``IMAGE/PNG``)."""
    url: str | None = None
    """A URL the provider can fetch."""
    file_id: str | None = None
    """A provider file id (uploaded earlier)."""
    data: str | None = None
    """Base64-encoded bytes: standard alphabet, padded, non-empty (else `UsageError`)."""
    provider_data: ProviderData | None = None
    """Provider fields to replay."""
    kind: Literal["media"] = "media"

    def __post_init__(self) -> None:
        require_name("MediaPart.media_type", self.media_type)
        kind, semi, rest = self.media_type.partition(";")
        if kind != kind.lower():
            object.__setattr__(self, "media_type", kind.lower() + semi + rest)
        given = [k for k in ("url", "file_id", "data") if getattr(self, k) is not None]
        if len(given) != 1:
            raise UsageError(
                f"MediaPart needs exactly one of url, file_id or data; got {given or 'none'}"
            )
        check = require_base64 if given[0] == "data" else require_name
        check(f"MediaPart.{given[0]}", getattr(self, given[0]))
        _freeze_data(self)


@dataclass(frozen=True, kw_only=True)
class ReasoningPart:
    """A reasoning / thinking block, replayed unchanged to the provider that made it.

    ``text`` is the readable reasoning (may be empty: redacted or encrypted);
    ``provider_data`` holds the provider's block as received (signature, encrypted
    content, item id) and is never edited.
    """

    provider: str
    """The provider that produced it: ``anthropic``, ``openai``, ``gemini``, ``deepseek``."""
    text: str = ""
    """Readable reasoning text, if any."""
    provider_data: ProviderData | None = None
    """The provider's block or item, byte-for-byte."""
    kind: Literal["reasoning"] = "reasoning"

    def __post_init__(self) -> None:
        _require_str("ReasoningPart.provider", self.provider)
        _require_str("ReasoningPart.text", self.text)
        _freeze_data(self)


@dataclass(frozen=True, kw_only=True)
class ProviderPart:
    """A block only one provider understands, kept verbatim for that provider."""

    provider: str
    """The provider whose format `data` is in."""
    data: ProviderData
    """The block as the provider sent it."""
    kind: Literal["provider"] = "provider"

    def __post_init__(self) -> None:
        _require_str("ProviderPart.provider", self.provider)
        if not isinstance(self.data, Mapping):
            raise UsageError(f"ProviderPart.data must be a mapping, got {shown(self.data)}")
        _freeze_data(self, "data")


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """A tool call made by the model.

    ``arguments`` keeps the exact string the model produced so a replayed history is
    byte-identical; `parsed_arguments` decodes it. A mapping given at construction is
    serialized canonically (a plain one is also kept for the gate: ``call_arguments``).
    """

    id: str
    """The provider's call id (``tool_use.id``, ``call_id``, ``tool_calls[].id``)."""
    name: str
    """The wire name the model used (non-empty: every wire requires it)."""
    arguments: str = "{}"
    """Arguments as a JSON text (a mapping given here is serialized canonically)."""
    provider_data: ProviderData | None = None
    """Provider fields to replay (Responses item id/status, Gemini thoughtSignature)."""
    kind: Literal["tool_call"] = "tool_call"

    def __post_init__(self) -> None:
        _require_str("ToolCall.id", self.id)
        require_name("ToolCall.name", self.name)
        if not isinstance(self.arguments, str):
            try:
                text, plain = canonical_object_text(self.arguments)
            except (TypeError, ValueError, RecursionError) as exc:
                raise UsageError(
                    f"ToolCall {shown(self.id, 80)}: arguments given as an object must be plain "
                    f"JSON data (no NaN, Infinity or non-JSON values): {json_reason(exc)}"
                ) from exc
            object.__setattr__(self, "arguments", text)
            if plain is not None:  # owned by this object (a shallow copy of it checks id)
                self.__dict__["_parsed"] = (id(self), plain)
        _freeze_data(self)

    def parsed_arguments(self) -> dict[str, JsonValue]:
        """The arguments as a dict.

        Raises:
            MalformedArgumentsError: The text is not JSON or not a JSON object.
        """
        value = parse_json_object(self.arguments)
        if isinstance(value, str):
            raise MalformedArgumentsError(
                f"arguments of call {shown(self.id, 80)} to {shown(self.name, 80)}: "
                f"{value}; expected a "
                "JSON object",
                raw=self.arguments,
            )
        return value


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """The result of one tool call."""

    call_id: str
    """Id of the `ToolCall` it answers."""
    name: str
    """Wire name of the tool that was called; ``""`` where the call is unknown (a parsed
    orphan result). Gemini is sent the name of the call the result answers."""
    content: str
    """Result text shown to the model."""
    is_error: bool = False
    """The call failed (bad arguments, denied, or the tool raised); a bool (``"no"`` or
    ``0`` is refused)."""
    media: tuple[MediaPart, ...] = ()
    """Images or files returned with the text (e.g. a screenshot)."""
    references: tuple[str, ...] = ()
    """Wire names of tools this result reveals by reference (a ``tool_search`` answered
    for a provider-native strategy). Anthropic receives them as ``tool_reference``
    blocks instead of `content`, which the provider expands into the tools' definitions
    (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool,
    custom tool search); every other target receives `content`."""
    provider_data: ProviderData | None = None
    """Provider fields to replay (e.g. Anthropic result content blocks as sent)."""
    kind: Literal["tool_result"] = "tool_result"

    def __post_init__(self) -> None:
        _require_str("ToolResult.call_id", self.call_id)
        _require_str("ToolResult.name", self.name)
        _require_str("ToolResult.content", self.content)
        require_bool("ToolResult.is_error", self.is_error)
        if isinstance(self.media, (str, bytes, Mapping)) or not isinstance(self.media, Iterable):
            raise UsageError(
                f"ToolResult.media must be a tuple of MediaPart, got {shown(self.media)}"
            )
        object.__setattr__(self, "media", tuple(self.media))
        if not all(isinstance(m, MediaPart) for m in self.media):
            raise UsageError("ToolResult.media must hold MediaPart values")
        if isinstance(self.references, str) or not isinstance(self.references, (list, tuple)):
            raise UsageError("ToolResult.references must be a list of tool names")
        object.__setattr__(self, "references", tuple(self.references))
        for name in self.references:
            require_name("ToolResult.references[]", name)
        _freeze_data(self)


Part = TextPart | MediaPart | ReasoningPart | ToolCall | ToolResult | ProviderPart
_PARTS = (TextPart, MediaPart, ReasoningPart, ToolCall, ToolResult, ProviderPart)


@dataclass(frozen=True, kw_only=True)
class Message:
    """One turn of the conversation."""

    role: Role
    """``user`` (text and/or tool results) or ``assistant`` (text and/or tool calls)."""
    parts: tuple[Part, ...] = field(default_factory=tuple)
    """The content, in order."""

    def __post_init__(self) -> None:
        if type(self.parts) is not tuple and (
            isinstance(self.parts, (str, bytes, Mapping)) or not isinstance(self.parts, Iterable)
        ):
            raise UsageError(f"Message.parts must be a tuple of parts, got {shown(self.parts, 60)}")
        object.__setattr__(self, "parts", tuple(self.parts))
        for i, part in enumerate(self.parts):
            if not isinstance(part, _PARTS):
                raise UsageError(f"Message.parts[{i}] is not a part, got {shown(part, 60)}")

    @property
    def text(self) -> str:
        """All text parts joined with blank lines."""
        return "\n\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls in this message."""
        if len(self.parts) == 1:  # most messages (no generator: a ledger reads every one)
            return (part,) if isinstance(part := self.parts[0], ToolCall) else ()
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        """The tool results in this message."""
        if len(self.parts) == 1:  # most messages (see `tool_calls`)
            return (part,) if isinstance(part := self.parts[0], ToolResult) else ()
        return tuple(p for p in self.parts if isinstance(p, ToolResult))

    if not TYPE_CHECKING:  # typed as the field it stands for

        def __getattr__(self, name: str) -> Any:  # a field not set: a lazy message's parts
            lazy = self.__dict__.get("_lazy") if name == "parts" else None
            if lazy is None and name == "parts" and "parts" in self.__dict__:
                return self.__dict__["parts"]  # set by another thread since the lookup
            if lazy is None:
                raise AttributeError(f"'Message' object has no attribute {name!r}")
            return lazy[2](self)  # (form, index, `history._lazy.lazy_parts`)

    def __getstate__(self) -> dict[str, Any]:  # copies and pickles hold the parts
        return {"role": self.role, "parts": self.parts}

    def to_dict(self) -> dict[str, Any]:
        """A plain-JSON form (see `message_from_dict`); default-valued fields are omitted."""
        lazy = self.__dict__.get("_lazy")
        if lazy is not None and type(lazy[0]) is dict:  # a lazy message: a copy of its form
            return marshal.loads(marshal.dumps(lazy[0]))  # type: ignore[no-any-return]
        return {"role": self.role, "parts": [part_to_dict(p) for p in self.parts]}


def part_to_dict(part: Part) -> dict[str, Any]:
    """A part's plain-JSON form: ``{"kind": ..., <non-default fields>}``."""
    out: dict[str, Any] = {"kind": part.kind}
    for f in dataclasses.fields(part):
        if f.name == "kind":
            continue
        value = getattr(part, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        if f.name == "media":
            value = [part_to_dict(m) for m in value]
        out[f.name] = thaw(value)
    return out


_KINDS: dict[str, type[Any]] = {
    "text": TextPart,
    "media": MediaPart,
    "reasoning": ReasoningPart,
    "tool_call": ToolCall,
    "tool_result": ToolResult,
    "provider": ProviderPart,
}


_FIELDS = {kind: frozenset(f.name for f in dataclasses.fields(c)) for kind, c in _KINDS.items()}
"""Each part kind's field names (``kind`` included)."""


def part_from_dict(raw: Mapping[str, Any]) -> Part:
    """Rebuild a part from `part_to_dict` output.

    Raises:
        UsageError: Unknown kind, unknown or missing fields, or invalid values.
    """
    kind = raw.get("kind") if isinstance(raw, Mapping) else None  # media: parts as well
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise UsageError(f"unknown part kind {shown(kind)}; expected one of {sorted(_KINDS)}")
    names = _FIELDS[cls.kind]
    if not names.issuperset(raw):
        raise UsageError(f"{kind} part has unknown fields {sorted(set(raw) - names)}")
    args = dict(raw)
    del args["kind"]
    if "media" in args:
        args["media"] = tuple(part_from_dict(m) for m in args["media"])
    try:
        part: Part = cls(**args)
    except TypeError as exc:
        raise UsageError(f"{kind} part: {exc}") from exc
    return part


def message_from_dict(data: Mapping[str, Any], *, index: int = 0) -> Message:
    """Rebuild a `Message` from `Message.to_dict` output.

    Raises:
        CorruptHistoryError: Not an object, unknown role or part kind, or missing fields.
    """
    if type(data) is not dict and not isinstance(data, Mapping):
        raise CorruptHistoryError(
            f"message {index}: expected an object {{'role', 'parts'}}, got {type(data).__name__}",
            index=index,
        )
    role = data.get("role")
    if role not in ("user", "assistant"):
        raise CorruptHistoryError(
            f"message {index}: role must be 'user' or 'assistant', got {shown(role)}", index=index
        )
    if "parts" not in data:
        keys = sorted(str(k) for k in data)
        raise CorruptHistoryError(
            f"message {index}: expected contextchef's form {{'role', 'parts': [{{'kind': ...}}]}} "
            f"(see Message.to_dict), got keys {keys}; convert provider-format messages "
            "with from_anthropic / from_openai / from_responses / from_gemini",
            index=index,
        )
    if not isinstance(data["parts"], list):
        raise CorruptHistoryError(f"message {index}: 'parts' must be a list", index=index)
    parts: list[Part] = []
    for raw in data["parts"]:
        if type(raw) is not dict and not isinstance(raw, Mapping):
            raise CorruptHistoryError(f"message {index}: a part must be an object", index=index)
        try:
            parts.append(part_from_dict(raw))
        except (UsageError, TypeError, ValueError) as exc:
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
            f"message {index}: role {shown(message.role)} is not 'user' or 'assistant'; put the "
            "system prompt in set_system_prompt() and tool results in user messages",
            index=index,
        )
    for part in message.parts:
        if not isinstance(part, _PARTS):
            raise CorruptHistoryError(
                f"message {index}: part {shown(part)} is not a message part "
                f"({', '.join(c.__name__ for c in _PARTS)})",
                index=index,
            )
        if isinstance(part, ReasoningPart) and message.role != "assistant":
            raise CorruptHistoryError(
                f"message {index}: reasoning belongs to assistant messages", index=index
            )
        if isinstance(part, ToolCall) and message.role != "assistant":
            raise CorruptHistoryError(
                f"message {index}: tool call {shown(part.id)} is in a {message.role} message; "
                "tool calls belong to assistant messages",
                index=index,
            )
        if isinstance(part, ToolResult) and message.role != "user":
            raise CorruptHistoryError(
                f"message {index}: tool result for {shown(part.call_id)} is in an assistant "
                "message; tool results belong to user messages (see tool_results())",
                index=index,
            )


def user(text: str) -> Message:
    """A user message with one text part."""
    return Message(role="user", parts=(TextPart(text=text),))


def _items(value: object, kind: type, what: str) -> list[Any]:
    """`value` as a list of `kind` instances, or a `UsageError` naming `what`."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise UsageError(f"{what} must be a list of {kind.__name__}, got {type(value).__name__}")
    items = list(value)
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise UsageError(f"{what}[{i}] must be a {kind.__name__}, got {type(item).__name__}")
    return items


def messages_arg(value: object, what: str = "history") -> tuple[Message, ...]:
    """`value` as a tuple of `Message` values.

    Raises:
        UsageError: `value` is not a list (or tuple).
        CorruptHistoryError: An item is not a `Message` (its index is given).
    """
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise UsageError(f"{what} must be a list of Message, got {type(value).__name__}")
    try:
        items = tuple(value)
    except Exception as exc:  # a hostile iterable: the caller's bug, named
        raise UsageError(f"{what} could not be iterated: {type(exc).__name__}") from exc
    for i, item in enumerate(items):
        if not isinstance(item, Message):
            raise CorruptHistoryError(
                f"{what}[{i}] must be a Message, got {type(item).__name__}", index=i
            )
    return items


def assistant(text: str = "", tool_calls: Iterable[ToolCall] = ()) -> Message:
    """An assistant message: optional text, then tool calls.

    Raises:
        UsageError: `text` is not a string, or `tool_calls` not a list of `ToolCall`.
    """
    calls = _items(tool_calls, ToolCall, "tool_calls")
    parts: list[Part] = [TextPart(text=text)] if text else []
    parts.extend(calls)
    return Message(role="assistant", parts=tuple(parts))


def tool_results(results: Sequence[ToolResult], text: str = "") -> Message:
    """A user message carrying tool results, optionally followed by text.

    Raises:
        UsageError: `results` is not a list of `ToolResult`, or `text` not a string.
    """
    parts: list[Part] = list(_items(results, ToolResult, "results"))
    if text:
        parts.append(TextPart(text=text))
    return Message(role="user", parts=tuple(parts))
