"""Argument validation: model-readable messages for arguments that fail a tool's schema.

Validation runs the jsonschema validator of the schema's draft (see `validator_for`), with
two keywords replaced so that no argument the model writes can stall the gate: ``pattern``
and ``patternProperties`` match with the regex engine of ``jsonschema-rs`` (Rust, no
catastrophic backtracking; a pattern it cannot compile falls back to Python's ``re``).
A schema ``"pattern": "^([a-z0-9]+-?)+$"`` takes Python's ``re`` seconds on a 30-character
string; here it is microseconds. Messages are capped in length so a huge argument is never
echoed back whole.

``format`` is an annotation, not asserted: JSON Schema 2020-12's default and jsonschema's
(no ``format_checker``). Servers disagree on every format (pydantic's ``AnyUrl`` and WHATWG
URLs accept ``https://x.com/a|b`` and IRIs an RFC 3986 check refuses; pydantic accepts a
date-time without an offset), so a refusal here could block a call the tool accepts, while
a value the tool refuses costs the turn its own error would.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from contextchef._cache import LruMap, lru_cache
from contextchef._echo import echo
from contextchef._errors import shown
from contextchef._json import FrozenDict, JsonValue, thaw
from contextchef.tools._schema import validator_for

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

# jsonschema, jsonschema-rs and referencing are imported where they are used, so that
# ``import contextchef`` does not pay for them (benchmarks/import_time.py).

__all__ = [
    "MAX_MESSAGE_CHARS",
    "pattern_search",
    "plainly_valid",
    "validation_errors",
]

MAX_MESSAGE_CHARS = 300
"""Longest single validation message, in characters (a longer one is cut by `echo`, which
says its length)."""


@lru_cache(maxsize=2048)
def _compiled(pattern: str) -> Any | None:
    import jsonschema_rs

    try:
        return jsonschema_rs.validator_for({"type": "string", "pattern": pattern})
    except Exception:  # a pattern the Rust engine cannot compile: Python's re decides
        return None


def pattern_search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text` (JSON Schema ``pattern`` semantics)."""
    compiled = _compiled(pattern)
    if compiled is not None:
        return bool(compiled.is_valid(text))
    return re.search(pattern, text) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not pattern_search(pattern, instance):
        yield ValidationError(f"{shown(instance)} does not match {shown(pattern)}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if pattern_search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


_LINEAR: dict[type[Any], type[Any]] = {}


def _linear(cls: type[Any]) -> type[Any]:
    """`cls` with the regex keywords on the linear-time engine (one class per draft)."""
    if cls not in _LINEAR:
        import jsonschema.validators

        keywords = {"pattern": _pattern, "patternProperties": _pattern_properties}
        _LINEAR[cls] = jsonschema.validators.extend(cls, keywords)
    return _LINEAR[cls]


def _cap(text: str) -> str:
    return echo(text, MAX_MESSAGE_CHARS)


def _arg_path(path: Any) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "(root)"


VALIDATORS = 512
"""Validators kept for frozen schemas (a registered tool's), by schema identity (LRU)."""

_validators: LruMap[int, tuple[Mapping[str, JsonValue], Any]] = LruMap(VALIDATORS)


def _validator(schema: Mapping[str, JsonValue]) -> Any:
    """The schema's validator, made once per frozen (immutable) schema object (issue 27).

    The entry keeps the schema alive, so its id is not reused while it is remembered.
    """
    hit = _validators.get(id(schema)) if isinstance(schema, FrozenDict) else None
    if hit is not None and hit[0] is schema:
        return hit[1]
    made = _linear(validator_for(schema))(schema)
    if isinstance(schema, FrozenDict):
        _validators.put(id(schema), (schema, made))
    return made


_PLAIN_KEYWORDS = frozenset(
    {"type", "properties", "items", "minItems", "minLength", "minimum", "description"}
    | {"additionalProperties"}
)
"""Keywords on which jsonschema-rs and jsonschema agree for plain JSON values."""

_fast: dict[int, tuple[Mapping[str, JsonValue], Any]] = {}
"""id(schema) -> (schema, its jsonschema-rs validator or None); a plain dict, emptied at
16 entries (one schema, ``tool_search``'s, in practice): no lock or LRU step per call."""


def _plain(node: object) -> bool:
    """`node` is a schema of `_PLAIN_KEYWORDS` only (``additionalProperties`` a boolean)."""
    if not isinstance(node, Mapping) or not node.keys() <= _PLAIN_KEYWORDS:
        return False
    props = node.get("properties", {})
    return (
        isinstance(node.get("additionalProperties", False), bool)
        and isinstance(props, Mapping)
        and all(_plain(sub) for sub in props.values())
        and ("items" not in node or _plain(node["items"]))
    )


def plainly_valid(schema: FrozenDict, arguments: object) -> bool:
    """True when jsonschema-rs finds `arguments` valid under `schema` (a fast yes, issue 27).

    Only for a schema of `_PLAIN_KEYWORDS` (``tool_search``'s) and a dict whose values
    are no tuples (jsonschema-rs takes a tuple as an array, jsonschema does not); False
    means "ask `validation_errors`", which words the errors.
    """
    hit = _fast.get(id(schema))
    if hit is None or hit[0] is not schema:
        import jsonschema_rs

        made = jsonschema_rs.validator_for(thaw(schema)) if _plain(schema) else None
        hit = (schema, made)
        if len(_fast) >= 16:
            _fast.clear()
        _fast[id(schema)] = hit
    if hit[1] is None or type(arguments) is not dict:
        return False
    if any(type(v) is tuple for v in arguments.values()):
        return False
    try:
        return bool(hit[1].is_valid(arguments))
    except (ValueError, TypeError, OverflowError):  # not plain JSON (a lone surrogate, NaN)
        return False


def validation_errors(schema: Mapping[str, JsonValue], arguments: object) -> list[str]:
    """Validate arguments and return readable errors, empty when valid.

    Each message names the argument path (``path``, ``opts.verbose``, ``(root)``), what
    is wrong, and the JSON Schema rule that failed, e.g.
    ``max_lines: 0 is less than the minimum of 1 (rule: minimum)``. Messages are sorted
    so the same call always gives the same text.
    """
    from jsonschema.exceptions import SchemaError, UnknownType
    from referencing.exceptions import Unresolvable

    try:
        errors: list[ValidationError] = list(_validator(schema).iter_errors(arguments))
    except (SchemaError, UnknownType, Unresolvable, re.error, RecursionError) as exc:
        return [f"(root): the tool's schema cannot check these arguments ({exc})"]
    lines = {
        _cap(f"{_arg_path(err.absolute_path)}: {err.message}") + f" (rule: {err.validator})"
        for err in errors
    }
    return sorted(lines)


def integral(schema: Mapping[str, JsonValue], value: Any) -> Any:
    """`value` with each integral float (``2.0``) made an int where `schema` wants integers.

    JSON Schema counts ``2.0`` as an integer, so validated arguments may hold floats a
    handler then uses as an index or a count; this walks ``properties``, ``items`` and
    ``additionalProperties`` (no ``$ref``) and converts them. Anything else is returned
    as it is. Only floats, objects and arrays are visited (nothing else can change).
    """
    types = schema.get("type")
    wants_int = types == "integer" or (isinstance(types, list) and "integer" in types)
    if wants_int and isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = props.get(key, extra)
            changes = isinstance(item, _CHANGING) and isinstance(sub, Mapping)
            out[key] = integral(sub, item) if changes else item
        return out
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        return [integral(items, v) if isinstance(v, _CHANGING) else v for v in value]
    return value


_CHANGING = (float, dict, list)
"""What `integral` may change: a float, or an object or array holding one."""
