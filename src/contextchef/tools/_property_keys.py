r"""Provider-legal top-level property keys of a tool's ``input_schema`` (tools layer).

Anthropic refuses a tool whose ``input_schema.properties`` has a key outside
``^[a-zA-Z0-9_.-]{1,64}$`` and answers the WHOLE request with a 400 ("tools.14.custom.
input_schema.properties: Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'"),
so one such tool poisons every request of the session. Real MCP servers and APIs emit
such keys: ``"Account Number"``, ``"filter[id]"``, ``"rule_name[]"``, ``"$top"``,
``"@microsoft.graph.conflictBehavior"``, non-ASCII keys (``"año_vehiculo"``), keys
over 64 characters (public reports: anthropics/claude-code#79418, ComposioHQ/composio#3067
and #3500, decocms/studio#6874, beautyfree/appstore-connect-mcp#2; the same check on
Bedrock: aws-solutions-library-samples/accelerated-intelligent-document-processing-on-aws
#709). The check is on the top-level ``properties`` keys only: keys of nested objects
(inside a property, ``items`` or a ``$defs`` entry) are accepted as they are, so they
are left untouched here.

`wire_keys` gives, once per tool (kept on the immutable `Tool`), the key each such
property is sent under, in the manner of tool names' wire forms
(`contextchef.tools._names.wire_name`):

* every character outside ``[a-zA-Z0-9_.-]`` becomes ``_`` (``"Account Number"`` ->
  ``"Account_Number"``, ``"$top"`` -> ``"_top"``, ``"filter[id]"`` -> ``"filter_id_"``);
* a result over 64 characters, empty, or equal to a key already present (the legal keys
  of the schema, then the wire keys given before it; bad keys are taken in sorted order)
  is cut to 55 characters and ``_`` plus the first 8 hex digits of the SHA-256 of the
  real key appended, so ``"a b"`` beside ``"a_b"`` goes as ``"a_b_<hash>"``.

The wire schema renames those keys in ``properties`` and in every keyword that names the
same object's properties (``required``, ``dependentRequired``, ``dependentSchemas``,
``dependencies``) or holds an arguments object (``default``, ``const``, ``examples``,
``enum``), also inside the ``allOf`` / ``anyOf`` / ``oneOf`` / ``not`` / ``if`` /
``then`` / ``else`` subschemas that apply to the arguments object itself, a local
``$ref`` there (``#/$defs/...``) being inlined renamed. Each renamed property's
description starts with its real key where the wire key lost letters or was cut
(`_told`), so ``名称`` sent as ``__`` keeps its meaning for the model. A top-level ``propertyNames``
is left out of it (its pattern is about the real keys). A schema with no bad key is
returned as it is (the same object), so its payload bytes do not change.

What the gate enforces is the tool's real schema: a call's wire keys are mapped back
first (`WireKeys.real_arguments`) and its problems are told in wire keys
(`WireKeys.in_wire_terms`), so a ``patternProperties`` or ``propertyNames`` written
for the real keys, or a ``$ref`` the wire form did not follow, still holds.

One wire form for every provider: Anthropic is the one that refuses these keys, but a
session may switch provider mid-conversation, and the calls in its history carry the
keys the model wrote; with one form a call made on OpenAI still matches the schema sent
to Claude, and cached prefixes stay interchangeable (the same reason tool names have one
wire form). The gate (`contextchef.dispatch._gate`) validates a call against the wire
schema (so its messages name the keys the model knows) and hands hooks and handlers the
arguments under the tool's real keys (`WireKeys.real_arguments`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from contextchef._json import JsonValue, freeze
from contextchef.tools._tool import Tool

__all__ = ["PROPERTY_KEY_RE", "WireKeys", "wire_keys"]

PROPERTY_KEY_RE = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
"""Top-level property keys Anthropic accepts (the pattern its 400 quotes)."""
_MAX = 64
_HASH_LEN = 8
_ILLEGAL = re.compile(r"[^a-zA-Z0-9_.-]")
_SAME_OBJECT_LISTS = ("allOf", "anyOf", "oneOf")
_SAME_OBJECT_ONE = ("not", "if", "then", "else")


@dataclass(frozen=True, kw_only=True)
class WireKeys:
    """A tool's input schema as sent, and its renamed top-level property keys.

    Attributes:
        schema: The schema the model sees (the tool's own ``input_schema`` object when
            no key is renamed).
        to_real: Wire key -> the tool's real key, for the renamed keys only.
        to_wire: Real key -> wire key, for the renamed keys only.
    """

    schema: Mapping[str, JsonValue]
    to_real: Mapping[str, str] = field(default_factory=dict)
    to_wire: Mapping[str, str] = field(default_factory=dict)

    def stray_keys(self, arguments: Mapping[str, Any]) -> list[str]:
        """Problems for real (renamed) keys the model wrote as they are, one line each.

        The schema the model saw names them by their wire keys; taking a real key too
        would let two values compete for one argument.
        """
        return [
            f"unexpected property {real!r}: this tool's parameter is {self.to_wire[real]!r}"
            for real in sorted(k for k in arguments if k in self.to_wire)
        ]

    def real_arguments(self, arguments: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """`arguments` (as the model wrote them, wire keys) under the tool's real keys."""
        if not self.to_real:
            return arguments
        return {self.to_real.get(k, k): v for k, v in arguments.items()}

    def in_wire_terms(self, problems: list[str]) -> list[str]:
        """Validation `problems` of the real arguments, each renamed key told as its wire key.

        A quoted key (``'Account Number' is a required property``) and an argument path
        that starts with one (``Account Number: 5 is not of type 'string'``) are rewritten.
        """
        if not self.to_wire:
            return problems
        out = []
        for line in problems:
            for real, wire in self.to_wire.items():
                line = line.replace(repr(real), repr(wire))
                if line.startswith((f"{real}:", f"{real}.", f"{real}[")):
                    line = wire + line[len(real) :]
            out.append(line)
        return out


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LEN]


def _wire_forms(keys: list[str]) -> dict[str, str]:
    """Bad keys of `keys` -> their wire keys, deduplicated against every key present."""
    taken = {k for k in keys if PROPERTY_KEY_RE.fullmatch(k)}
    out: dict[str, str] = {}
    for key in sorted(k for k in keys if k not in taken):
        wire = _ILLEGAL.sub("_", key)
        if not wire or len(wire) > _MAX or wire in taken:
            wire = f"{wire[: _MAX - _HASH_LEN - 1]}_{_digest(key)}"
        n = 0
        while wire in taken:  # a legal key that happens to end in the same hash
            n += 1
            wire = f"{wire[: _MAX - _HASH_LEN - 1]}_{_digest(f'{key}#{n}')}"
        taken.add(wire)
        out[key] = wire
    return out


def _local(root: Mapping[str, Any], ref: object) -> Mapping[str, Any] | None:
    """The subschema a local ``$ref`` (``#/$defs/x``, ``#/definitions/x``) names, or None."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = root
    for step in ref[2:].split("/"):
        step = step.replace("~1", "/").replace("~0", "~")
        node = node.get(step) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


def _told(key: Any, value: Any, names: Mapping[str, str]) -> Any:
    """A renamed property's schema, its description led by the real key where needed.

    Where the wire key lost letters (a non-ASCII key: ``名称`` sent as ``__``) or its tail
    (a key cut and hashed), the description starts with the real key (``"名称"``, or
    ``"名称: <its description>"``), so the model still knows what the parameter is. A
    key that only lost punctuation (``Account Number`` -> ``Account_Number``) reads the
    same and is left as it is, as is a ``$ref`` (which some providers take with no
    sibling keyword) or a ``false`` schema; a ``true`` schema becomes the equivalent
    ``{"description": <the key>}``.
    """
    wire = names.get(key) if isinstance(key, str) else None
    if wire is None or (key.isascii() and wire == _ILLEGAL.sub("_", key)):
        return value
    if value is True:  # any value: the same schema with the key as its annotation
        return {"description": key}
    if not isinstance(value, Mapping) or "$ref" in value:
        return value
    said = value.get("description")
    told = f"{key}: {said}" if isinstance(said, str) and said else key
    return {**value, "description": told}


def _named_keywords(schema: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """`schema`'s keywords that name its object's keys or hold such an object, renamed.

    ``properties``, ``required``, ``dependentRequired``, ``default``, ``const``,
    ``examples``, ``enum``; subschemas of ``dependentSchemas`` / ``dependencies`` are left
    as they are (the caller renames them).
    """

    def name(key: Any) -> Any:
        return names.get(key, key) if isinstance(key, str) else key

    def keys_of(value: Any) -> Any:  # an arguments object: a default, const, an example
        return {name(k): v for k, v in value.items()} if isinstance(value, Mapping) else value

    out: dict[str, Any] = {}
    if isinstance(schema.get("properties"), Mapping):
        out["properties"] = {name(k): _told(k, v, names) for k, v in schema["properties"].items()}
    if isinstance(schema.get("required"), (list, tuple)):
        out["required"] = [name(k) for k in schema["required"]]
    for keyword in ("dependentRequired", "dependentSchemas", "dependencies"):
        value = schema.get(keyword)
        if isinstance(value, Mapping):
            out[keyword] = {
                name(k): [name(x) for x in v] if isinstance(v, (list, tuple)) else v
                for k, v in value.items()
            }
    for keyword in ("default", "const"):
        if keyword in schema:
            out[keyword] = keys_of(schema[keyword])
    for keyword in ("examples", "enum"):
        if isinstance(schema.get(keyword), (list, tuple)):
            out[keyword] = [keys_of(v) for v in schema[keyword]]
    return out


def _renamed(
    schema: Mapping[str, Any],
    names: Mapping[str, str],
    root: Mapping[str, Any] | None = None,
    seen: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """`schema` with the property names of its own object renamed by `names`."""
    root = schema if root is None else root
    target = _local(root, schema.get("$ref"))
    if target is not None and schema["$ref"] not in seen:  # inlined, renamed
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        inlined = _renamed(target, names, root, seen | {schema["$ref"]})
        return {**inlined, **_renamed(rest, names, root, seen)} if rest else inlined
    out = {**schema, **_named_keywords(schema, names)}
    if schema is root:
        out.pop("propertyNames", None)  # a pattern for the real keys; the gate checks it

    def sub(value: Any) -> Any:
        return _renamed(value, names, root, seen) if isinstance(value, Mapping) else value

    for keyword in ("dependentSchemas", "dependencies"):
        if isinstance(out.get(keyword), Mapping):
            out[keyword] = {k: sub(v) for k, v in out[keyword].items()}
    for keyword in _SAME_OBJECT_LISTS:
        if isinstance(schema.get(keyword), (list, tuple)):
            out[keyword] = [sub(s) for s in schema[keyword]]
    for keyword in _SAME_OBJECT_ONE:
        if keyword in schema:
            out[keyword] = sub(schema[keyword])
    return out


def wire_keys(tool: Tool) -> WireKeys:
    """The wire form of `tool`'s top-level property keys (made once per tool).

    Returns:
        `WireKeys`; its ``schema`` is ``tool.input_schema`` itself when every top-level
        property key already matches `PROPERTY_KEY_RE`.
    """

    def make() -> WireKeys:
        properties = tool.input_schema.get("properties")
        keys = list(properties) if isinstance(properties, Mapping) else []
        names = _wire_forms(keys)
        if not names:
            return WireKeys(schema=tool.input_schema)
        return WireKeys(
            schema=cast("Mapping[str, JsonValue]", freeze(_renamed(tool.input_schema, names))),
            to_real={wire: real for real, wire in names.items()},
            to_wire=names,
        )

    keys: WireKeys = tool._derive("wire keys", None, make)
    return keys
