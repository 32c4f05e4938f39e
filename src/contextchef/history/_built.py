"""History messages built straight from decoded JSON, checked as they are built (history layer).

A restore reads every history message of a snapshot from its `Message.to_dict` form, as
``json.loads`` gave it. `message_from_dict` builds it through the parts' constructors,
which check each field (as for a caller's values: any mapping, any `str` subclass), then
freezes each part's provider data after walking it once to check it is JSON a provider
accepts, then checks the message's roles (`check_message`): about 5-9 us per message.

`built` does the same checks in one walk over a form made only of what ``json.loads``
makes (exact ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, None), and sets
each part's fields directly: the provider data is checked while it is frozen. Anything
it does not take as it is (another type, a missing or unknown field, a value of another
type, a lone surrogate, an empty tool name, a non-finite number, an integer past a
double's range, deep nesting, a part in a message of the wrong role, media) gives None, and the
caller builds that message with `message_from_dict`, which raises the error naming the
message and field, or builds the value (the two give equal messages with the same
fields: tests compare them). The two take the same values: anything `message_from_dict`
refuses is sent to it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from contextchef._errors import UsageError
from contextchef._json import DOUBLE_MAX, FrozenDict, FrozenList, is_unicode
from contextchef.history._messages import (
    _HINT_ENVELOPES,
    Message,
    Part,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
    _check_hints,
)

__all__ = ["built"]

_DEPTH = 100
"""Deepest provider data `built` takes; deeper data goes to `message_from_dict` (200)."""


class _Other(Exception):
    """Raised inside `built`: this form is `message_from_dict`'s to build (or refuse)."""


def _text(value: object) -> str:
    if type(value) is not str or not (value.isascii() or is_unicode(value)):
        raise _Other
    return value


def _name(value: object) -> str:
    """A wire name: a non-empty `_text` (`require_name`), else `_Other`."""
    if not value:
        raise _Other
    return _text(value)


def _leaf(value: object) -> None:
    """A leaf of provider data that `json_problem` accepts as it is, else `_Other`."""
    kind = type(value)
    if kind is str:
        _text(value)
    elif kind is int:
        if not -DOUBLE_MAX <= value <= DOUBLE_MAX:  # type: ignore[operator]
            raise _Other
    elif kind is float:
        if not math.isfinite(value):  # type: ignore[arg-type]
            raise _Other
    elif kind is not bool and value is not None:
        raise _Other


def _frozen(value: Any, depth: int) -> Any:
    """`freeze` of decoded provider data, checked as `check_json` does in the same walk."""
    if depth > _DEPTH:
        raise _Other
    if type(value) is dict:
        out = FrozenDict(value)  # one copy in C; containers below are swapped in
        for key, item in value.items():
            if type(key) is not str or not key.isascii():
                _text(key)
            if type(item) is dict or type(item) is list:
                dict.__setitem__(out, key, _frozen(item, depth + 1))
            elif type(item) is not str or not item.isascii():
                _leaf(item)
        return out
    if type(value) is list:
        items = FrozenList(value)
        for i, item in enumerate(value):
            if type(item) is dict or type(item) is list:
                list.__setitem__(items, i, _frozen(item, depth + 1))
            elif type(item) is not str or not item.isascii():
                _leaf(item)
        return items
    raise _Other


def _data(value: Any, where: str) -> Any:
    """Provider data, frozen and checked (`_freeze_data`, `_check_hints`); None stays None."""
    if value is None:
        return None
    if type(value) is not dict:
        raise _Other
    frozen = _frozen(value, 0)
    if type(value.get("provider")) is str and not _hints_plain(value):
        try:
            _check_hints(where, value)
        except UsageError:
            raise _Other from None
    return frozen


def _hints_plain(value: dict[str, Any]) -> bool:
    """True: `_check_hints` passes `value` (decoded: envelopes objects, ``keys`` text)."""
    keys = value.get("keys")
    if keys is not None and (type(keys) is not list or set(map(type, keys)) - {str}):
        return False
    return _ENVELOPE.issuperset(map(type, map(value.get, _HINT_ENVELOPES)))  # read in C


_ENVELOPE = frozenset({dict, type(None)})


_new = object.__new__
"""Parts and messages are made without their constructors: the walk checked the fields."""

_TEXT = frozenset({"kind", "text", "provider_data"})
_REASONING = frozenset({"kind", "provider", "text", "provider_data"})
_CALL = frozenset({"kind", "id", "name", "arguments", "provider_data"})
_RESULT = frozenset(
    {"kind", "call_id", "name", "content", "is_error", "references", "provider_data"}
)  # no media: `message_from_dict` builds those
_PROVIDER = frozenset({"kind", "provider", "data"})


def _text_part(raw: dict[str, Any], role: str) -> Part:
    if not _TEXT.issuperset(raw) or "text" not in raw:
        raise _Other
    part = _new(TextPart)
    text, data, fields = raw["text"], raw.get("provider_data"), part.__dict__
    fields["text"] = text if type(text) is str and text.isascii() else _text(text)
    fields["provider_data"] = None if data is None else _data(data, "")
    fields["kind"] = "text"
    return part


def _reasoning(raw: dict[str, Any], role: str) -> Part:
    if not _REASONING.issuperset(raw) or role != "assistant" or "provider" not in raw:
        raise _Other
    part = _new(ReasoningPart)
    fields = part.__dict__  # set one by one: faster than update(**) (a dict made)
    fields["provider"] = _text(raw["provider"])
    fields["text"] = _text(raw.get("text", ""))
    fields["provider_data"] = _data(raw.get("provider_data"), "")
    fields["kind"] = "reasoning"
    return part


def _call(raw: dict[str, Any], role: str) -> Part:
    if not _CALL.issuperset(raw) or role != "assistant" or "id" not in raw or "name" not in raw:
        raise _Other
    part = _new(ToolCall)
    fields = part.__dict__
    fields["id"], fields["name"] = _text(raw["id"]), _name(raw["name"])
    fields["arguments"] = _text(raw.get("arguments", "{}"))  # a mapping: its text, there
    fields["provider_data"] = _data(raw.get("provider_data"), "")
    fields["kind"] = "tool_call"
    return part


def _result(raw: dict[str, Any], role: str) -> Part:
    if not _RESULT.issuperset(raw) or role != "user" or "call_id" not in raw:
        raise _Other
    if "name" not in raw or "content" not in raw:
        raise _Other
    error, references = raw.get("is_error", False), raw.get("references", ())
    if type(error) is not bool or type(references) not in (list, tuple):
        raise _Other
    part = _new(ToolResult)
    fields = part.__dict__
    fields["call_id"], fields["name"] = _text(raw["call_id"]), _text(raw["name"])
    fields["content"], fields["is_error"], fields["media"] = _text(raw["content"]), error, ()
    fields["references"] = tuple(_name(r) for r in references) if references else ()
    fields["provider_data"] = _data(raw.get("provider_data"), "")
    fields["kind"] = "tool_result"
    return part


def _provider(raw: dict[str, Any], role: str) -> Part:
    if not _PROVIDER.issuperset(raw) or "provider" not in raw or type(raw.get("data")) is not dict:
        raise _Other
    part = _new(ProviderPart)
    part.__dict__.update(
        provider=_text(raw["provider"]), data=_data(raw["data"], ""), kind="provider"
    )
    return part


_BUILD: dict[object, Callable[[dict[str, Any], str], Part]] = {
    "text": _text_part,
    "reasoning": _reasoning,
    "tool_call": _call,
    "tool_result": _result,
    "provider": _provider,
}


def built(data: object) -> Message | None:
    """The `Message` of a decoded `Message.to_dict` form, or None: not one `built` takes.

    None is no verdict: `message_from_dict` then builds the message or says what is
    wrong with it (see the module docstring).
    """
    if type(data) is not dict:
        return None
    role, raw_parts = data.get("role"), data.get("parts")
    if (role != "user" and role != "assistant") or type(raw_parts) is not list or len(data) != 2:
        return None
    parts = []
    try:
        for raw in raw_parts:
            kind = raw.get("kind") if type(raw) is dict else None
            make = _BUILD.get(kind) if type(kind) is str else None
            if make is None:
                return None
            parts.append(make(raw, role))
    except _Other:
        return None
    except RecursionError:  # provider data nested past what Python walks: refused there
        return None
    message = _new(Message)
    fields = message.__dict__  # set one by one: faster than update(**) (a dict made)
    fields["role"], fields["parts"] = role, tuple(parts)
    return message
