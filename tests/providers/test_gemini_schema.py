"""Gemini gets each tool schema with local references inlined (no $ref, $defs, $schema)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.genai import types as genai_types

from contextchef import ContextChef, user
from contextchef.providers.gemini._schema import SUPPORTED, gemini_schema, translate

ADDRESS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
OPTIONAL_MODEL = {  # what Pydantic writes for `address: Address | None`
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {"Address": ADDRESS},
    "type": "object",
    "properties": {
        "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
        "definitions": {"type": "string", "description": "a property named like a keyword"},
        "config": {"type": "object", "default": {"$ref": "#/$defs/Address"}},
    },
}
TREE = {
    "type": "object",
    "definitions": {
        "Node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}},
            },
        }
    },
    "properties": {"root": {"$ref": "#/definitions/Node"}},
}


def keys(value: Any) -> set[str]:
    """Every key in `value`, schema keywords and data alike (``default`` values skipped)."""
    if isinstance(value, dict):
        return set(value) | {k for n, v in value.items() if n != "default" for k in keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys(v)}
    return set()


def test_a_reference_inside_any_of_is_inlined() -> None:
    out = gemini_schema(OPTIONAL_MODEL)
    assert out["properties"]["address"]["anyOf"] == [ADDRESS, {"type": "null"}]
    assert "$schema" not in out and "$defs" not in out
    assert out["properties"]["definitions"]["type"] == "string"  # a name, not a keyword
    assert out["properties"]["config"]["default"] == {"$ref": "#/$defs/Address"}  # data


def test_a_recursive_reference_stops_at_its_second_appearance() -> None:
    out = gemini_schema(TREE)
    node = out["properties"]["root"]
    assert node["properties"]["name"] == {"type": "string"}
    child = node["properties"]["children"]["items"]
    assert child == {"type": "object", "description": "(recursive: Node)"}
    assert "$ref" not in keys(out) and "definitions" not in out


def test_the_gemini_payload_carries_no_reference_and_other_targets_keep_theirs() -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_tools(
        [
            {"name": "ship", "description": "Ship an order.", "input_schema": OPTIONAL_MODEL},
            {"name": "walk", "description": "Walk a tree.", "input_schema": TREE},
        ]
    )
    payload = chef.compile("gemini").payload
    declarations = payload["config"]["tools"][0]["function_declarations"]
    for declaration in declarations:
        genai_types.FunctionDeclaration.model_validate(declaration)
        assert not {"$ref", "$defs", "$schema"} & keys(declaration["parameters_json_schema"])
    anthropic = json.dumps(chef.compile("anthropic").payload["tools"])
    assert '"$ref"' in anthropic  # the tool definition itself is unchanged


def test_keywords_outside_the_gemini_subset_are_rewritten_or_dropped_and_named() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "$comment": "internal",
        "properties": {
            "mode": {"oneOf": [{"const": "fast"}, {"const": "slow"}]},
            "count": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 2},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]},
            "both": {"allOf": [{"$ref": "#/definitions/A"}, {"required": ["b"]}]},
            "not": {"type": "string", "not": {"pattern": "x"}},
        },
        "definitions": {"A": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "patternProperties": {"^x": {"type": "string"}},
    }
    result = translate(schema)
    out = result.schema
    assert out["properties"]["mode"] == {"anyOf": [{"enum": ["fast"]}, {"enum": ["slow"]}]}
    assert out["properties"]["count"] == {"type": "integer", "minimum": 0}
    assert out["properties"]["pair"] == {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "number"}],
    }
    assert out["properties"]["both"] == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["b"],
    }
    assert out["properties"]["not"] == {"type": "string"}  # a property named like a keyword
    assert keys(out) - {"a", "both", "count", "mode", "not", "pair"} <= SUPPORTED
    joined = "\n".join(result.changes)
    for named in (
        "'$comment'",
        "'multipleOf'",
        "'patternProperties'",
        "/properties/not/not: dropped",
    ):
        assert named in joined
    genai_types.FunctionDeclaration.model_validate(
        {"name": "x", "description": "d", "parameters_json_schema": out}
    )


def test_every_real_catalog_schema_fits_the_gemini_subset(catalog_paths: list[Path]) -> None:
    for path in catalog_paths:
        chef = ContextChef()
        chef.register_catalog(path)
        chef.set_history([user("hi")])
        payload = chef.compile("gemini", strategy="flat").payload
        for declaration in payload["config"]["tools"][0]["function_declarations"]:
            schema = declaration["parameters_json_schema"]
            words = _schema_keywords(schema)
            assert words <= SUPPORTED, (path.name, declaration["name"], words - SUPPORTED)


def _schema_keywords(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            found |= {k for v in value.values() for k in _schema_keywords(v)}
        elif key in ("anyOf", "prefixItems") and isinstance(value, list):
            found |= {k for v in value for k in _schema_keywords(v)}
        elif key in ("items", "additionalProperties"):
            found |= _schema_keywords(value)
    return found
