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

Gemini also reads only a subset of JSON Schema (`SUPPORTED`: the keywords of its
``Schema`` type and of the JSON-Schema subset its function-calling guide lists). The
rest is rewritten where an equivalent exists and dropped otherwise, each change named
in `GeminiSchema.changes`: ``oneOf`` becomes ``anyOf`` (how Gemini reads it),
``allOf`` is merged into the schema holding it, ``const`` becomes a one-value ``enum``,
``exclusiveMinimum`` / ``exclusiveMaximum`` become ``minimum`` / ``maximum``, the
tuple form of ``items`` becomes ``prefixItems``. Dropping loosens only what the model is
told: the gate still validates every call against the tool's full schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextchef._json import JsonValue, thaw

__all__ = ["SUPPORTED", "GeminiSchema", "gemini_schema", "translate", "unchanged"]

_DROPPED = frozenset({"$schema", "$id", "$defs", "definitions"})
_SILENT = frozenset({"$schema", "$id"})
_NESTING = frozenset({"items", "additionalProperties", "properties", "anyOf", "prefixItems"})
"""Dropped without a change line: they say nothing about the arguments."""

SUPPORTED = frozenset(
    {
        "additionalProperties",
        "anyOf",
        "default",
        "description",
        "enum",
        "example",
        "format",
        "items",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "nullable",
        "pattern",
        "prefixItems",
        "properties",
        "propertyOrdering",
        "required",
        "title",
        "type",
    }
)
"""Schema keywords sent to Gemini as they are (see the module docstring)."""


@dataclass(frozen=True)
class GeminiSchema:
    """A schema translated for Gemini and what the translation changed."""

    schema: dict[str, Any]
    """The ``parameters_json_schema`` to send."""
    changes: tuple[str, ...]
    """One line per rewritten or dropped keyword, with its JSON-pointer path."""
    refs: tuple[str, ...] = ()
    """Each local reference inlined (``#/$defs/Name``), once, in order of appearance; a
    recursive one cut short reads ``"#/$defs/Name (recursive: cut)"``."""


def gemini_schema(schema: Mapping[str, JsonValue]) -> dict[str, Any]:
    """A copy of `schema` in Gemini's subset (see the module docstring)."""
    return translate(schema).schema


def unchanged(schema: Any, *, silent_drops: bool = False) -> bool:
    """True when `translate` would send `node` as it is (nothing to rewrite or drop).

    Every keyword is supported, there is no ``$ref`` and no list-form ``items``. Reads keys
    only (no copy), so a registry can ask it of every tool cheaply; most real schemas pass
    (7,410 of the 7,726 in ../shared/data). With `silent_drops`, ``$schema`` and ``$id``
    are allowed too: `translate` drops them without naming a change (7,632 pass).
    """
    allowed = SUPPORTED | _SILENT if silent_drops else SUPPORTED
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            if isinstance(node, Mapping):
                return False  # not the registry's own dicts: let translate decide
            continue
        keys = node.keys()
        if not keys <= allowed:
            return False
        if keys.isdisjoint(_NESTING):  # a leaf, as most nodes are
            continue
        items = node.get("items")
        if isinstance(items, list):
            return False
        if items is not None:
            stack.append(items)
        extra = node.get("additionalProperties")
        if extra is not None:
            stack.append(extra)
        props = node.get("properties")
        if isinstance(props, dict):
            stack.extend(props.values())
        for key in ("anyOf", "prefixItems"):
            subs = node.get(key)
            if isinstance(subs, list):
                stack.extend(subs)
    return True


def translate(schema: Mapping[str, JsonValue]) -> GeminiSchema:
    """`schema` in Gemini's subset, and what was rewritten or dropped to get there.

    Local ``$ref`` are inlined and keywords outside `SUPPORTED` rewritten or dropped (see
    the module docstring). The input is not modified.
    """
    root = thaw(schema)
    assert isinstance(root, dict)
    defs: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        found = root.get(key)
        if isinstance(found, dict):
            defs.update({f"#/{key}/{name}": value for name, value in found.items()})
    defs["#"] = {k: v for k, v in root.items() if k not in _DROPPED}
    changes: list[str] = []
    refs: list[str] = []
    out = _subset(_inline(root, defs, (), refs), "", changes)
    assert isinstance(out, dict)
    return GeminiSchema(
        schema=out, changes=tuple(dict.fromkeys(changes)), refs=tuple(dict.fromkeys(refs))
    )


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


def _inline(node: Any, defs: Mapping[str, Any], path: tuple[str, ...], refs: list[str]) -> Any:
    """One schema (a dict or a boolean) with its local references inlined.

    Only schema positions are walked: values such as ``enum``, ``const``, ``default`` and
    ``examples`` are data and are kept as they are, and the names under ``properties``
    are never taken for keywords.
    """
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref in defs:
        rest = _inline({k: v for k, v in node.items() if k != "$ref"}, defs, path, refs)
        if ref in path:  # recursive: stop here
            name = ref.rsplit("/", 1)[-1] if ref != "#" else "the whole schema"
            refs.append(f"{ref} (recursive: cut)")
            return {"type": "object", "description": f"(recursive: {name})", **rest}
        refs.append(ref)
        target = _inline(defs[ref], defs, (*path, ref), refs)
        return {**target, **rest} if isinstance(target, dict) else target
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _inline(sub, defs, path, refs) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_inline(sub, defs, path, refs) for sub in value]
        elif key in _SCHEMAS:
            out[key] = _inline(value, defs, path, refs)
        else:
            out[key] = value
    return out


def _subset(node: Any, path: str, changes: list[str]) -> Any:
    """One inlined schema restricted to `SUPPORTED`, its changes appended to `changes`."""
    if not isinstance(node, dict):
        return node
    node = _rewritten(node, path, changes)
    out: dict[str, Any] = {}
    for key, value in node.items():
        at = f"{path}/{key}"
        if key not in SUPPORTED:
            changes.append(f"{at or '/'}: dropped {key!r} (not in Gemini's schema subset)")
        elif key == "properties" and isinstance(value, dict):
            out[key] = {n: _subset(v, f"{at}/{n}", changes) for n, v in value.items()}
        elif key in ("anyOf", "prefixItems") and isinstance(value, list):
            out[key] = [_subset(v, f"{at}/{i}", changes) for i, v in enumerate(value)]
        elif key in ("items", "additionalProperties"):
            out[key] = _subset(value, at, changes)
        else:
            out[key] = value
    return out


def _rewritten(node: dict[str, Any], path: str, changes: list[str]) -> dict[str, Any]:
    """`node` with the keywords that have a Gemini equivalent rewritten to it."""
    node = dict(node)
    where = path or "/"
    subs = node.pop("allOf", None)
    if isinstance(subs, list):
        changes.append(f"{where}: merged 'allOf' into the schema")
        for sub in subs:
            for key, value in (sub if isinstance(sub, dict) else {}).items():
                if key == "properties" and isinstance(value, dict):
                    node["properties"] = {**value, **(node.get("properties") or {})}
                elif key == "required" and isinstance(value, list):
                    node["required"] = list(dict.fromkeys([*(node.get("required") or []), *value]))
                else:
                    node.setdefault(key, value)
    if "oneOf" in node and "anyOf" not in node:
        changes.append(f"{where}: sent 'oneOf' as 'anyOf'")
        node["anyOf"] = node.pop("oneOf")
    if "const" in node and "enum" not in node:
        changes.append(f"{where}: sent 'const' as a one-value 'enum'")
        node["enum"] = [node.pop("const")]
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        value = node.get(exclusive)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and bound not in node:
            changes.append(f"{where}: sent {exclusive!r} as {bound!r}")
            node[bound] = node.pop(exclusive)
    if isinstance(node.get("items"), list) and "prefixItems" not in node:
        changes.append(f"{where}: sent the list form of 'items' as 'prefixItems'")
        node["prefixItems"] = node.pop("items")
    return node
