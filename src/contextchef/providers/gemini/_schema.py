"""Tool schemas for Gemini: local references inlined, meta keys dropped.

Gemini reads ``parameters_json_schema`` as a plain JSON Schema describing one object
(https://ai.google.dev/api/caching#FunctionDeclaration), but it does not follow ``$ref``
into ``$defs`` everywhere: a reference inside ``anyOf`` (as Pydantic and many MCP servers
write optional models) is answered with a 400 "reference to undefined schema". So each
local reference (``#/$defs/Name``, ``#/definitions/Name``, ``#``) is replaced by a copy of
what it points to, and ``$schema``, ``$id``, ``$defs`` and ``definitions`` are dropped.

A recursive reference cannot be inlined without end: at its second appearance on one
path it becomes ``{"type": "object"}`` with a description naming the definition (the
model can still send the value; the gate validates it against the full schema).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextchef._json import JsonValue, thaw

__all__ = ["gemini_schema"]

_DROPPED = frozenset({"$schema", "$id", "$defs", "definitions"})


def gemini_schema(schema: Mapping[str, JsonValue]) -> dict[str, Any]:
    """A copy of `schema` with every local ``$ref`` inlined (see the module docstring)."""
    root = thaw(schema)
    assert isinstance(root, dict)
    defs: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        found = root.get(key)
        if isinstance(found, dict):
            defs.update({f"#/{key}/{name}": value for name, value in found.items()})
    defs["#"] = {k: v for k, v in root.items() if k not in _DROPPED}
    out = _inline(root, defs, ())
    assert isinstance(out, dict)
    return out


_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMAS = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)


def _inline(node: Any, defs: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """One schema (a dict or a boolean) with its local references inlined.

    Only schema positions are walked: values such as ``enum``, ``const``, ``default`` and
    ``examples`` are data and are kept as they are, and the names under ``properties``
    are never taken for keywords.
    """
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref in defs:
        rest = _inline({k: v for k, v in node.items() if k != "$ref"}, defs, path)
        if ref in path:  # recursive: stop here
            name = ref.rsplit("/", 1)[-1] if ref != "#" else "the whole schema"
            return {"type": "object", "description": f"(recursive: {name})", **rest}
        target = _inline(defs[ref], defs, (*path, ref))
        return {**target, **rest} if isinstance(target, dict) else target
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _inline(sub, defs, path) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_inline(sub, defs, path) for sub in value]
        elif key in _SCHEMAS:
            out[key] = _inline(value, defs, path)
        else:
            out[key] = value
    return out
