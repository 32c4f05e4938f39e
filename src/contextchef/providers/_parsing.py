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

import base64
import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from contextchef._errors import CorruptHistoryError, shown
from contextchef._json import MAX_ARGUMENT_DEPTH, is_unicode, json_problem, to_unicode
from contextchef.history._arguments import unreadable_arguments
from contextchef.history._call_names import MALFORMED_CALL, legal_call
from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ProviderPart,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)

__all__ = [
    "MALFORMED_CALL",
    "Draft",
    "Hinted",
    "HistoryBuilder",
    "ParsedHistory",
    "UnreadableArguments",
    "add_hint",
    "arguments_text",
    "as_list",
    "as_mapping",
    "as_messages",
    "as_string",
    "compact_dumps",
    "envelope_hints",
    "fit_hints",
    "json_safe",
    "parse_role",
    "system_text",
    "with_data",
]

_P = TypeVar("_P", TextPart, MediaPart, ToolCall, ToolResult)
Hinted = TextPart | MediaPart | ToolCall | ToolResult
"""The parts that carry replay hints in ``provider_data``."""
_H = TypeVar("_H", bound=Hinted)
Render = Callable[[Any], Mapping[str, Any] | None]


@dataclass(frozen=True, kw_only=True)
class ParsedHistory:
    """A provider history in the IR."""

    system: str = ""
    """Text of the system prompt found in the history (``""`` if none)."""
    messages: tuple[Message, ...] = ()
    """The conversation, in order."""
    notes: tuple[str, ...] = ()
    """Anything unusual: kept as provider-only parts, unmatched ids, not reproducible."""


def compact_dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def with_data(part: _P, data: Mapping[str, Any]) -> _P:
    return dataclasses.replace(part, provider_data=dict(data) if len(data) > 1 else None)


def fit_hints(part: _P, wire: Mapping[str, Any], render: Render, fmt: str, **named: Any) -> _P:
    """`part` with the hints that make `render` give back `wire`'s keys and key order."""
    data: dict[str, Any] = {"provider": fmt, **named}
    part = with_data(part, data)
    built = render(part) or {}
    extra = {k: v for k, v in wire.items() if k not in built}
    if extra:
        data["extra"] = extra
        part = with_data(part, data)
        built = render(part) or {}
    if list(built) != list(wire):
        data["keys"] = list(wire)
        part = with_data(part, data)
    return part


def add_hint(part: _H, fmt: str, key: str, value: Any) -> _H:
    data = dict(part.provider_data or {"provider": fmt})
    data[key] = value
    return dataclasses.replace(part, provider_data=data)


@dataclass
class Draft:
    role: Role
    parts: list[Part] = field(default_factory=list)
    origin: int = 0


class HistoryBuilder:
    """Accumulates IR messages, call names and notes while one history is parsed."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.drafts: list[Draft] = []
        self.notes: list[str] = []
        self.names: dict[str, str] = {}

    def error(self, index: int, what: str) -> CorruptHistoryError:
        return CorruptHistoryError(f"{self.fmt} message {index}: {what}", index=index)

    def new(self, role: Role, index: int) -> Draft:
        self.drafts.append(Draft(role=role, origin=index))
        return self.drafts[-1]

    def current(self, role: Role, index: int) -> Draft:
        if self.drafts and self.drafts[-1].role == role:
            return self.drafts[-1]
        return self.new(role, index)

    def call(self, index: int, part: ToolCall) -> ToolCall:
        """`part` as recorded: under `MALFORMED_CALL` if no provider takes its name back.

        See `contextchef.history._call_names`: a name outside every provider's rule,
        replayed as written, would be refused (400) on every later request.
        """
        legal = legal_call(part)
        if legal is not part:
            self.notes.append(
                f"message {index}: tool name {shown(part.name, 80)} is not a name every "
                f"provider takes back, answered as {MALFORMED_CALL!r}"
            )
        self.names[legal.id] = legal.name
        return legal

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
        """The parsed history; an entry that gave no part is left out, with a note.

        An empty message would reach the history as a turn with nothing to send: every
        provider refuses an empty message, and a history ending in one cannot compile.
        """
        messages = []
        for d in self.drafts:
            if d.parts:
                messages.append(Message(role=d.role, parts=tuple(d.parts)))
            else:
                self.notes.append(f"message {d.origin}: an empty {d.role} message, left out")
        return ParsedHistory(system=system, messages=tuple(messages), notes=tuple(self.notes))


def arguments_text(hist: HistoryBuilder, index: int, value: object, what: str) -> str:
    """A call's arguments given as text (Chat, Responses), `UnreadableArguments` included.

    The wire carries a JSON text, but some OpenAI-compatible servers send the object
    itself, and a reply may leave the field out or null. Neither is a reason to fail the
    turn: missing or null becomes ``"{}"``, any other JSON value its compact JSON text
    (with a note), and the gate then answers what the tool cannot take. A value with no
    JSON form (a Python object a host put there) raises `CorruptHistoryError`.
    """
    if isinstance(value, UnreadableArguments):
        return value.text
    if isinstance(value, str):
        return value
    if value is None:
        hist.notes.append(f"message {index}: {what} missing, taken as {{}}")
        return "{}"
    try:
        text = compact_dumps(value)
    except (TypeError, ValueError) as exc:
        raise hist.error(index, f"{what} must be a JSON text, got {type(value).__name__}") from exc
    hist.notes.append(
        f"message {index}: {what} given as a JSON {type(value).__name__}, kept as text"
    )
    return text


def as_mapping(hist: HistoryBuilder, index: int, value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise hist.error(index, f"{what} must be an object, got {type(value).__name__}")
    return value


def as_string(hist: HistoryBuilder, index: int, value: object, what: str) -> str:
    if not isinstance(value, str):
        raise hist.error(index, f"{what} must be a string, got {type(value).__name__}")
    return value


def as_name(hist: HistoryBuilder, index: int, value: object, what: str) -> str:
    """A tool call's function name; a call that names none becomes `MALFORMED_CALL`.

    Every wire requires a non-empty name on a replayed call (Anthropic's
    ``^[a-zA-Z0-9_-]{1,128}$``), so a model's call with the name missing, null or ``""``,
    kept as it came, would be refused on every later request. It is recorded under
    `MALFORMED_CALL` with a note, so the gate answers it as an unknown tool (an error
    result the model can retry on) and the replay is well formed; a name of illegal
    characters or length gets the same in `HistoryBuilder.call`. A name of another
    type is a broken response and raises `CorruptHistoryError`.
    """
    if value is None or value == "":
        hist.notes.append(f"message {index}: {what} is empty, answered as {MALFORMED_CALL!r}")
        return MALFORMED_CALL
    return as_string(hist, index, value, what)


def as_id(hist: HistoryBuilder, index: int, value: object, what: str) -> str:
    """A tool call's id: a string, with JSON null read as ``""`` (no id given).

    An empty id is then handled the same way on every provider: `ContextChef.ingest`
    gives such a call an id unique in the session.
    """
    return "" if value is None else as_string(hist, index, value, what)


def as_list(hist: HistoryBuilder, value: object, what: str) -> Sequence[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise CorruptHistoryError(f"{what} must be a list, got {type(value).__name__}", index=0)
    return value


ArgumentSlots = Callable[[Any], Iterator[tuple[dict[str, Any], str]]]
"""Where a format keeps a call's arguments as an object: ``(holder, key)`` pairs of a message
(Anthropic ``tool_use.input``, Gemini ``functionCall.args``)."""


@dataclass(frozen=True)
class UnreadableArguments:
    """A call's argument object that JSON cannot carry, put in its place by `json_safe`.

    The parser makes the call's ``arguments`` this ``text``, which the gate refuses with an
    error result the model can act on, and which every renderer sends as ``{}`` with a
    reported change: one bad model output never rejects the whole turn nor breaks a
    later compile.
    """

    text: str
    problem: str


def as_messages(
    hist: HistoryBuilder,
    value: object,
    what: str,
    arguments: ArgumentSlots | None = None,
    *,
    text: bool = False,
) -> list[Any]:
    """The top-level list of a history, each entry made plain JSON first (`json_safe`).

    `text`: the format carries call arguments as JSON text (Chat, Responses), not as an
    object (Anthropic, Gemini, Interactions).
    """
    items = as_list(hist, value, what)
    return [json_safe(hist, i, item, arguments, text=text) for i, item in enumerate(items)]


_MAX_DEPTH = 200
"""Deepest nesting accepted in one parsed message (its tool arguments are inside it)."""


def json_safe(
    hist: HistoryBuilder,
    index: int,
    value: object,
    arguments: ArgumentSlots | None = None,
    *,
    text: bool = False,
) -> Any:
    """`value` as plain JSON data, so nothing parsed can break a later compile.

    SDK objects dumped with ``model_dump()`` carry ``bytes`` (Gemini's thought signatures):
    they become base64 text, the form the REST API uses on the wire. The rest is checked by
    the IR's one JSON check (`contextchef._json.json_problem`). A call's
    argument object found at one of the `arguments` slots is checked like arguments the
    gate parses (nesting up to `MAX_ARGUMENT_DEPTH`); one that fails, or that is not an
    object (a list, number or null; a string too unless the format's arguments are JSON
    `text`), is replaced by an `UnreadableArguments` and noted, since it is the model's
    output, not the history's: the gate answers it, the turn is kept.

    Raises:
        CorruptHistoryError: What `json_problem` refuses outside call arguments, named
            with the message index.
    """
    try:
        plain = _without_bytes(value, 0)
    except RecursionError:
        plain = None
        problem = f"are nested more than {_MAX_DEPTH} levels deep"
    else:
        bad = _unreadable_arguments(hist, index, plain, arguments, text)
        for holder, key, _ in bad:
            holder[key] = None
        problem = json_problem(plain, max_depth=_MAX_DEPTH)
        if problem and "not valid Unicode" in problem and _repair_text(plain):
            hist.notes.append(f"message {index}: lone surrogates in its text became U+FFFD")
            problem = json_problem(plain, max_depth=_MAX_DEPTH)
        for holder, key, unreadable in bad:
            holder[key] = unreadable
    if problem:
        raise hist.error(index, f"its values {problem}")
    return plain


def _unreadable_arguments(
    hist: HistoryBuilder, index: int, plain: Any, slots: ArgumentSlots | None, text: bool
) -> list[tuple[dict[str, Any], str, UnreadableArguments]]:
    found: list[tuple[dict[str, Any], str, UnreadableArguments]] = []
    if slots is None:
        return found
    for holder, key in slots(plain):
        value = holder[key]
        if isinstance(value, Mapping) or (text and isinstance(value, str)):
            problem = json_problem(value, max_depth=MAX_ARGUMENT_DEPTH)
            if not problem:
                continue
        else:  # a list, number or null (or a string where an object is due): the gate
            kind = "null" if value is None else type(value).__name__  # answers it by name
            problem = f"are not a JSON object (got {kind})"
        try:  # the gate parses this text and refuses it by name
            shown_as = (
                value.encode("utf-8", "backslashreplace").decode("utf-8")
                if isinstance(value, str) and not is_unicode(value)
                else json.dumps(value, sort_keys=True)
            )
        except (TypeError, ValueError, RecursionError):
            shown_as = unreadable_arguments(problem)
        hist.notes.append(
            f"message {index}: a call's arguments {problem}; kept as text the gate "
            "refuses and sent as {}"
        )
        found.append((holder, key, UnreadableArguments(text=shown_as, problem=problem)))
    return found


def _repair_text(value: Any) -> bool:
    r"""Replace lone surrogates in `value`'s text (keys too) with U+FFFD, in place.

    A provider may send the JSON escape of half a surrogate pair (``"\ud800"``), which
    decodes to text UTF-8 cannot carry; the message is kept with the replacement
    character, as a tool result's text is (`contextchef._json.to_unicode`). Returns
    whether anything changed.
    """
    if not isinstance(value, dict | list):
        return False
    changed = False
    for key, item in list(value.items() if isinstance(value, dict) else enumerate(value)):
        if isinstance(item, str) and not is_unicode(item):
            value[key], changed = to_unicode(item), True
        elif isinstance(item, dict | list):
            changed = _repair_text(item) or changed
    if isinstance(value, dict) and not all(is_unicode(k) for k in value if isinstance(k, str)):
        repaired = {to_unicode(k) if isinstance(k, str) else k: v for k, v in value.items()}
        value.clear()
        value.update(repaired)
        changed = True
    return changed


def _without_bytes(value: object, depth: int) -> Any:
    """`value` with bytes as base64 text (tuples as lists); nothing else is changed."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if depth > _MAX_DEPTH:
        return value  # json_problem reports the depth
    if isinstance(value, Mapping):
        return {k: _without_bytes(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_bytes(v, depth + 1) for v in value]
    return value


# -- shared by the parsers ------------------------------------------------------------


def system_text(hist: HistoryBuilder, system: object, what: str) -> str:
    """System text from a string or a list of text blocks / parts."""
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    blocks = as_list(hist, system, what)
    texts = [
        as_string(hist, 0, as_mapping(hist, 0, b, f"{what} block").get("text"), f"{what} text")
        for b in blocks
    ]
    if len(texts) > 1:
        hist.notes.append(f"{what}: {len(texts)} text blocks joined with blank lines")
    return "\n\n".join(texts)


def parse_role(hist: HistoryBuilder, i: int, msg: Mapping[str, Any], roles: Sequence[str]) -> Role:
    role = msg.get("role")
    if role not in roles:
        raise hist.error(i, f"role must be one of {list(roles)}, got {shown(role, 40)}")
    return "assistant" if role in ("assistant", "model") else "user"


def envelope_hints(
    parts: list[Hinted],
    wire: Mapping[str, Any],
    render: Callable[[list[Any]], Any],
    key: str,
    fmt: str,
) -> None:
    """Put the message-level hints (extra keys, key order, list content) on parts[0].

    `key` is where they go in ``provider_data`` (``message`` for Chat, ``item`` for
    Responses); `fmt` is the wire format recorded with them.
    """
    if not parts:
        return
    first = parts[0]
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
