"""Tool calls in: the one accepted call shape, argument parser and namespace resolver.

Every public entry point that takes a model's tool call (`ContextChef.check_tool_call`,
`execute`, `handle_tool`, the pruner's namespace helpers) normalizes it here, so they all
accept the same inputs (`CallLike`) and parse arguments the same way:

* a `ToolCall`;
* a mapping ``{"id"?, "name", "arguments" | "input" | "args"}`` (arguments as JSON text or
  an object), which covers an Anthropic ``tool_use`` block (``input``), a Responses
  ``function_call`` item (``call_id``) and a Gemini ``functionCall`` (``args``);
* a Chat Completions ``tool_calls`` entry ``{"id", "function": {"name", "arguments"}}``;
* a Gemini part ``{"functionCall": {...}}`` / ``{"function_call": {...}}``;
* an SDK object of any of those shapes (pydantic models of the official SDKs are read
  through ``model_dump()``, `contextchef._sdk.sdk_json`; other objects through their attributes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from contextchef._errors import UsageError
from contextchef._json import JsonValue, canonical_dumps, json_problem
from contextchef._sdk import sdk_json
from contextchef.history._arguments import parse_json_object, unreadable_arguments
from contextchef.history._messages import ToolCall

__all__ = ["CallLike", "as_tool_call", "call_arguments", "parse_arguments"]

CallLike = ToolCall | Mapping[str, Any] | Any
"""A model's tool call in any accepted shape (see the module docstring)."""

_ARGUMENT_KEYS = ("arguments", "input", "args")
# A Responses function_call item has both: ``id`` names the item, ``call_id`` the call
# its function_call_output must answer (https://platform.openai.com/docs/api-reference/responses)
_ID_KEYS = ("call_id", "id", "tool_use_id")
_WRAPPERS = ("function", "functionCall", "function_call")


def _as_mapping(call: object) -> Mapping[str, Any] | None:
    """`call` as a mapping: itself, a pydantic model's dump, or its public attributes."""
    if isinstance(call, Mapping):
        return call
    if callable(getattr(call, "model_dump", None)):
        try:  # arguments nested past pydantic's depth limit come as parsed (`sdk_json`)
            value = sdk_json(call)
        except Exception:  # a foreign object's dump failing is a bad input, said below
            return None
        return value if isinstance(value, Mapping) else None
    if hasattr(call, "name"):
        keys = ("name", *_ARGUMENT_KEYS, *_ID_KEYS, *_WRAPPERS)
        return {k: getattr(call, k) for k in keys if getattr(call, k, None) is not None}
    return None


def _raw_text(raw: object) -> str:
    """Arguments given as an object -> JSON text.

    Values canonical JSON refuses (NaN, Infinity) are written as Python's ``json`` writes
    them, so the parser names them; what cannot be written at all (objects, runaway
    nesting, integers too long to print) becomes text the parser reports with the reason.
    """
    if isinstance(raw, str):
        return raw
    try:
        return canonical_dumps(raw)
    except (TypeError, ValueError, RecursionError):
        pass
    try:
        return json.dumps(raw, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError) as exc:
        try:
            problem = json_problem(raw) or f"cannot be written ({type(exc).__name__})"
        except RecursionError:
            problem = "are nested too deep to read"
        return unreadable_arguments(problem)


def as_tool_call(call: CallLike, *, default_id: str = "call") -> ToolCall:
    """Normalize an accepted call shape to a `ToolCall` (arguments as JSON text).

    Args:
        call: The call (see the module docstring for the accepted shapes).
        default_id: Id given to a call that carries none.

    Raises:
        UsageError: `call` has no string ``name`` in any accepted place.
    """
    if isinstance(call, ToolCall):
        return call
    try:
        return _as_tool_call(call, default_id)
    except UsageError:
        raise
    except Exception as exc:  # a hostile object (raising properties, odd mappings)
        raise UsageError(
            f"cannot read a tool call from {type(call).__name__}: {type(exc).__name__}"
        ) from exc


def has_own_id(call: CallLike) -> bool:
    """Whether `call` carries an id of its own (a `ToolCall` does; a dict may not).

    A call without one gets a default id (`as_tool_call`); the model's own id, whatever
    it is (``call_0`` too), is the call's. False for what `as_tool_call` cannot read.
    """
    if isinstance(call, ToolCall):
        return True
    try:
        outer, body = _bodies(call)
        return outer is not None and body is not None and bool(_ident(outer, body))
    except Exception:  # a hostile object: `as_tool_call` names it
        return False


def _bodies(call: object) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """(the call as a mapping, its body: a Chat ``function`` / Gemini ``functionCall``)."""
    outer = _as_mapping(call)
    body = outer
    if outer is not None:
        inner = next((outer[k] for k in _WRAPPERS if isinstance(outer.get(k), Mapping)), None)
        body = inner if inner is not None else outer
    return outer, body


def _ident(outer: Mapping[str, Any], body: Mapping[str, Any]) -> Any:
    """The call's own id: on the call, else on its body (None: it has none)."""
    ident = next((outer[k] for k in _ID_KEYS if outer.get(k) is not None), None)
    return (
        ident
        if ident is not None
        else next((body[k] for k in _ID_KEYS if body.get(k) is not None), None)
    )


def _as_tool_call(call: object, default_id: str) -> ToolCall:
    outer, body = _bodies(call)
    name = body.get("name") if body is not None else None
    if outer is None or body is None or not isinstance(name, str):
        raise UsageError(
            f"expected a ToolCall, or a tool-call dict with 'name' and 'arguments' (or "
            f"'input' / 'args'), or a Chat {{'function': {{...}}}} entry; got "
            f"{type(call).__name__}"
        )
    raw = next((body[k] for k in _ARGUMENT_KEYS if k in body), "{}")
    ident = _ident(outer, body)
    return ToolCall(id=str(ident) if ident else default_id, name=name, arguments=_raw_text(raw))


def call_arguments(call: ToolCall) -> dict[str, JsonValue] | str:
    """``parse_json_object(call.arguments)``, without parsing for a call built from a dict.

    The copy `ToolCall` kept of a plain dict (equal to parsing its text; see
    `contextchef._json.plain_object`) is handed over once and dropped, so whoever takes it
    owns it: a handler that changes its arguments changes neither the call nor a later
    parse. Every later read parses the text.
    """
    kept = call.__dict__.pop("_parsed", None)
    if kept is not None and kept[0] == id(call):
        return kept[1]  # type: ignore[no-any-return]
    return parse_json_object(call.arguments)


def parse_arguments(call: ToolCall) -> dict[str, JsonValue] | str:
    """A call's arguments as a dict, or the model-readable reason they are not one.

    The reason reads ``Invalid arguments for tool "<name>": <why>; send one JSON object.``
    """
    parsed = call_arguments(call)
    if isinstance(parsed, str):
        return f'Invalid arguments for tool "{call.name}": {parsed}; send one JSON object.'
    return parsed
