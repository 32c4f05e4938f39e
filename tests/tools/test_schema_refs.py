"""``$ref``s that validation could never finish are refused when the tool is registered.

A fresh user registered ``a -> b -> a``: it was accepted, listed as ``x (any)`` by
tool_search, and every call was then refused with a RecursionError text, so the model
could never use the tool.
"""

from __future__ import annotations

from typing import Any

import pytest

from contextchef import ContextChef, InvalidSchemaError, ToolCall


def _tool(schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": "loop_tool", "description": "d", "input_schema": {"type": "object", **schema}}


LOOPS = {
    "two refs": {
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "properties": {"x": {"$ref": "#/$defs/a"}},
    },
    "itself": {"$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {"x": {"$ref": "#/$defs/a"}}},
    "through allOf": {
        "$defs": {
            "a": {"allOf": [{"type": "object"}, {"$ref": "#/$defs/b"}]},
            "b": {"$ref": "#/$defs/a"},
        },
        "properties": {"x": {"$ref": "#/$defs/a"}},
    },
    "through anyOf and not": {
        "$defs": {"a": {"anyOf": [{"not": {"$ref": "#/$defs/a"}}]}},
        "properties": {"x": {"$ref": "#/$defs/a"}},
    },
    "the root": {"allOf": [{"$ref": "#"}]},
}


@pytest.mark.parametrize("schema", LOOPS.values(), ids=LOOPS.keys())
def test_a_reference_loop_is_refused_naming_the_tool_and_the_path(schema: dict[str, Any]) -> None:
    chef = ContextChef()
    with pytest.raises(InvalidSchemaError) as caught:
        chef.register_tools([_tool(schema)])
    message = str(caught.value)
    assert "'loop_tool'" in message and "/$ref" in message and "reference loop" in message
    assert len(chef.registry) == 0  # nothing half-registered


RECURSIVE = {
    "a tree": {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            }
        },
        "properties": {"root": {"$ref": "#/$defs/node"}},
    },
    "the root under properties": {"properties": {"next": {"$ref": "#"}}},
    "a chain that ends": {
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"type": "integer"}},
        "properties": {"x": {"$ref": "#/$defs/a"}},
    },
}


@pytest.mark.parametrize("schema", RECURSIVE.values(), ids=RECURSIVE.keys())
def test_a_recursive_schema_that_descends_is_kept_and_validates(schema: dict[str, Any]) -> None:
    chef = ContextChef()
    chef.register_tools([_tool(schema)])
    decision = chef.check_tool_call(ToolCall(id="c", name="loop_tool", arguments={}))
    assert decision.decision == "allowed", decision
