"""Gemini gets each tool schema with local references inlined (no $ref, $defs, $schema)."""

from __future__ import annotations

import json
from typing import Any

from google.genai import types as genai_types

from contextchef import ContextChef
from contextchef.providers.gemini._schema import gemini_schema

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
