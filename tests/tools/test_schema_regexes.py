"""Every regex a tool's input schema holds is checked at registration (break-it p22).

JSON Schema takes a regular expression in ``pattern`` and as each ``patternProperties``
key (``propertyNames`` holds a subschema whose ``pattern`` is one). An invalid
``pattern`` was refused with `InvalidSchemaError`, but an invalid ``patternProperties``
key was accepted and then denied every call. Both are now refused at registration,
naming the place, wherever they sit (nested, under ``$defs``, ``dependentSchemas``...).
"""

from __future__ import annotations

from typing import Any

import pytest

from contextchef import ContextChef, InvalidSchemaError, ToolCall


def _register(schema: dict[str, Any]) -> ContextChef:
    chef = ContextChef()
    chef.register_tools([{"name": "x", "description": "d", "input_schema": schema}])
    return chef


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        (
            {"type": "object", "patternProperties": {"[": {"type": "string"}}},
            "/patternProperties/[",
        ),
        (
            {"type": "object", "patternProperties": {"^a": {}, "(b": {}}},
            "/patternProperties/(b",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "n": {"type": "object", "patternProperties": {"*x": {"type": "string"}}}
                },
            },
            "/properties/n/patternProperties/*x",
        ),
        (
            {"type": "object", "$defs": {"d": {"patternProperties": {"[": {}}}}},
            "/$defs/d/patternProperties/[",
        ),
        (
            {"type": "object", "dependentSchemas": {"a": {"patternProperties": {"(": {}}}}},
            "/dependentSchemas/a/patternProperties/(",
        ),
        ({"type": "object", "propertyNames": {"pattern": "(("}}, "/propertyNames/pattern"),
        ({"type": "object", "properties": {"a": {"items": {"pattern": "(("}}}}, "/items/pattern"),
    ],
)
def test_an_invalid_regex_anywhere_is_refused_at_registration(
    schema: dict[str, Any], where: str
) -> None:
    with pytest.raises(InvalidSchemaError, match="not a valid regular expression") as info:
        _register(schema)
    assert where in str(info.value)
    assert "'x'" in str(info.value)  # the tool is named


def test_valid_pattern_properties_still_register_and_gate_calls() -> None:
    chef = _register(
        {
            "type": "object",
            "patternProperties": {"^n_": {"type": "integer"}, "^[a-z]+$": {"type": "string"}},
            "propertyNames": {"pattern": "^(n_.*|[a-z]+)$"},
        }
    )
    assert chef.check_tool_call(ToolCall(id="1", name="x", arguments={"n_a": 1})).decision == (
        "allowed"
    )
    denied = chef.check_tool_call(ToolCall(id="2", name="x", arguments={"n_a": "one"}))
    assert denied.decision == "denied"
    assert "n_a" in denied.reason
