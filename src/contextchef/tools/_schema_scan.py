"""The structural scan of a tool's input schema (tools layer), before its meta-schema.

`scan` finds what jsonschema would not report clearly: too deep nesting, values JSON
cannot carry, text that is not valid Unicode, non-string keys, invalid regular
expressions (``pattern`` values, ``patternProperties`` keys), and ``$ref``s that are
remote, point nowhere or loop.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from contextchef._errors import shown
from contextchef._json import MAX_INT_BITS, JsonValue, is_unicode

__all__ = ["MAX_SCHEMA_DEPTH", "scan"]

MAX_SCHEMA_DEPTH = 64
"""Deepest nesting of objects/arrays accepted in a schema."""


_MISSING = object()

_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")
"""Applicators that apply a subschema to the same instance (no descent into its members)."""


def _resolve_pointer(root: JsonValue, ref: str) -> bool:
    return _target(root, ref) is not _MISSING


def _target(root: JsonValue, ref: str) -> Any:
    """The node a local ``$ref`` (``#`` or a JSON pointer) names, or `_MISSING`."""
    node: Any = root
    for raw in ref[1:].lstrip("/").split("/") if ref not in ("#", "#/", "") else []:
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return _MISSING
    return node


def _loops(root: JsonValue, ref: str) -> bool:
    """Whether following `ref` comes back to it without entering the instance.

    A chain of ``$ref``s (or of ``allOf``/``anyOf``/... holding one) that returns to its
    start applies forever to the same value: validation never ends. A recursive schema
    whose reference sits under ``properties`` or ``items`` descends into a smaller value
    each time and is fine.
    """
    seen: set[str] = set()
    todo: list[Any] = [_target(root, ref)]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
        if not isinstance(node, Mapping):
            continue
        inner = node.get("$ref")
        if isinstance(inner, str) and (inner == "" or inner.startswith("#")):
            if inner == ref:
                return True
            if inner not in seen:
                seen.add(inner)
                todo.append(_target(root, inner))
        for key in _IN_PLACE:
            value = node.get(key)
            if key == "dependentSchemas" and isinstance(value, Mapping):
                todo.extend(value.values())
            elif value is not None:
                todo.append(value)
    return False


def scan(root: JsonValue, node: JsonValue, path: tuple[str, ...]) -> tuple[Any, str] | None:
    """First structural problem jsonschema would not report clearly, or None.

    Too deep nesting, non-finite numbers (not JSON), integers too long to print, values
    of no JSON type, text that is not valid Unicode, non-string keys, and ``$ref``s
    that are remote, point nowhere or loop back to themselves (they would fail only when a
    call is validated).
    """
    problem = _value_problem(node, path)
    if problem is not None:
        return path, problem
    if isinstance(node, Mapping):
        for key, value in node.items():
            if not isinstance(key, str):
                return path, f"object key {shown(key)} is not a string"
            if key == "patternProperties" and isinstance(value, Mapping):
                bad = next((k for k in value if isinstance(k, str) and _regex_problem(k)), None)
                if bad is not None:
                    problem = f"patternProperties key {_regex_problem(bad)}"
                    return (*path, key, bad), problem
            problem = _keyword_problem(root, key, value)
            found = ((*path, key), problem) if problem else scan(root, value, (*path, key))
            if found is not None:
                return found
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            found = scan(root, value, (*path, str(i)))
            if found is not None:
                return found
    return None


def _value_problem(node: JsonValue, path: tuple[str, ...]) -> str | None:
    """Why one value (not its members) is no JSON a schema can hold, or None."""
    if len(path) > MAX_SCHEMA_DEPTH:
        return f"nested deeper than {MAX_SCHEMA_DEPTH} levels"
    if isinstance(node, float) and not math.isfinite(node):
        return f"{shown(node)} is not a JSON number; use a finite value"
    if isinstance(node, int) and node.bit_length() > MAX_INT_BITS:
        return f"{shown(node)} is too long to write as JSON; use a shorter number"
    if not isinstance(node, (Mapping, list, tuple, str, int, float, type(None))):
        return f"a {type(node).__name__} is not JSON data; use JSON values only"
    if isinstance(node, str) and not is_unicode(node):
        return "text holds a lone surrogate (not valid Unicode); fix the source data"
    return None


def _regex_problem(pattern: str) -> str | None:
    """Why `pattern` is no regular expression the gate can match with, or None.

    JSON Schema takes a regex in ``pattern`` and as each ``patternProperties`` key (a
    ``propertyNames`` subschema's ``pattern`` is a ``pattern``); the gate matches them
    with `pattern_search`'s engines, which Python's ``re`` must compile for the fallback.
    """
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"{shown(pattern)} is not a valid regular expression ({exc})"
    return None


def _keyword_problem(root: JsonValue, key: str, value: JsonValue) -> str | None:
    """What is wrong with a ``pattern`` or ``$ref`` keyword's value, or None."""
    if key == "pattern" and isinstance(value, str):
        problem = _regex_problem(value)
        if problem:
            return f"pattern {problem}"
    if key == "$ref" and isinstance(value, str):
        if value and not value.startswith("#"):
            return (
                f"$ref {shown(value)} points outside the schema; inline it or move it "
                "under $defs (remote references are never fetched)"
            )
        pointer = value in ("#", "") or value.startswith("#/")
        if pointer and not _resolve_pointer(root, value):
            return f"$ref {shown(value)} points to nothing in this schema"
        if pointer and _loops(root, value):
            return (
                f"$ref {shown(value)} leads back to itself without describing a value "
                "(a reference loop: validation would never end); end the chain in a schema"
            )
    return None
