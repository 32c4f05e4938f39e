"""Per-tool schema reports at registration (issue 12: "report what was changed per tool").

`ContextChef.schema_reports` lists, per tool and target, what the target's narrower
schema dialect (Gemini's subset) rewrites, drops and inlines; it is computed when the
tool is registered, with the translation the renderer applies.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from contextchef import ContextChef, SchemaReport, load_catalog, user
from contextchef._json import thaw
from contextchef.providers.gemini._schema import translate, unchanged

PYDANTIC_STYLE = {
    "name": "create_user",
    "description": "Create a user.",
    "input_schema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "kind": {"const": "home"}},
            }
        },
        "properties": {
            "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
            "age": {"type": "integer", "exclusiveMinimum": 0},
            "tag": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "nick": {"type": "string", "x-internal": True},
        },
    },
}
PLAIN = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Where."}},
        "required": ["path"],
    },
}


def test_registration_reports_what_gemini_changes_per_tool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chef = ContextChef()
    with caplog.at_level(logging.INFO, logger="contextchef"):
        chef.register_tools([PYDANTIC_STYLE, PLAIN])
    (report,) = chef.schema_reports  # the plain tool (only $schema dropped) is not listed
    assert report == SchemaReport(
        tool="create_user",
        server=None,
        target="gemini",
        changes=(
            "/properties/address/anyOf/0/properties/kind: sent 'const' as a one-value 'enum'",
            "/properties/age: sent 'exclusiveMinimum' as 'minimum'",
            "/properties/tag: sent 'oneOf' as 'anyOf'",
            "/properties/nick/x-internal: dropped 'x-internal' (not in Gemini's schema subset)",
        ),
        refs_resolved=("#/$defs/Address",),
    )
    # logged when registered, before anything was compiled
    assert "gemini: tool 'create_user': " in caplog.text
    assert "inlined #/$defs/Address" in caplog.text


def test_the_report_matches_what_is_sent() -> None:
    chef = ContextChef()
    chef.register_tools([PYDANTIC_STYLE])
    chef.set_history([user("hi")])
    declaration = chef.compile("gemini").payload["config"]["tools"][0]["function_declarations"][0]
    sent = declaration["parameters_json_schema"]
    assert sent == translate(PYDANTIC_STYLE["input_schema"]).schema
    assert sent["properties"]["address"]["anyOf"][0]["properties"]["kind"] == {"enum": ["home"]}
    assert "$defs" not in sent and "$schema" not in sent


def test_a_recursive_reference_is_reported_as_cut() -> None:
    tree = {
        "name": "tree",
        "description": "A tree.",
        "input_schema": {
            "type": "object",
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                    },
                }
            },
            "properties": {"root": {"$ref": "#/$defs/Node"}},
        },
    }
    chef = ContextChef()
    chef.register_tools([tree], server="forest")
    (report,) = chef.schema_reports
    assert (report.tool, report.server) == ("tree", "forest")
    assert report.refs_resolved == ("#/$defs/Node", "#/$defs/Node (recursive: cut)")


def test_reports_are_made_once_per_tool_at_registration() -> None:
    chef = ContextChef()
    (tool,) = chef.register_tools([PYDANTIC_STYLE])
    assert ("schema_reports", None) in tool.__dict__["_derived"]  # made while registering
    other = ContextChef()
    other.register_tools([tool])  # a second session over the same tool reuses it
    assert other.schema_reports[0] is chef.schema_reports[0]


def test_a_failed_registration_leaves_no_report() -> None:
    chef = ContextChef()
    chef.register_tools([PLAIN])
    clash = {**PYDANTIC_STYLE, "name": "read_file"}
    with pytest.raises(Exception, match="read_file"):
        chef.register_tools([clash])
    assert chef.schema_reports == ()


def _every_schema(paths: list[Path]) -> list[Any]:
    return [t.input_schema for p in paths for t in load_catalog(p, repair_schemas=True).tools]


def test_the_fast_check_agrees_with_the_translation_on_every_real_catalog(
    catalog_paths: list[Path],
) -> None:
    """`unchanged` (keys only, no copy) says "nothing to do" only when `translate` would
    send the schema as it is; with silent drops, only when it names no change."""
    retrieval = sorted((catalog_paths[0].parent.parent / "retrieval").glob("*.catalog.json"))
    schemas = _every_schema(catalog_paths + retrieval)
    strict = loose = 0
    for schema in schemas:
        done = translate(schema)
        if unchanged(schema):
            strict += 1
            assert done.schema == thaw(schema) and not done.changes and not done.refs
        if unchanged(schema, silent_drops=True):
            loose += 1
            assert not done.changes and not done.refs
        else:
            assert done.changes or done.refs or done.schema != thaw(schema)
    assert len(schemas) == 7_726 and (strict, loose) == (7_410, 7_632)
