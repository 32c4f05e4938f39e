"""Tool values, loaders for every input shape, schema checks, wire names, errors."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from conftest import load_case
from contextchef import (
    WIRE_NAME_RE,
    CatalogFormatError,
    ContextChef,
    ContextChefError,
    InvalidSchemaError,
    InvalidToolError,
    McpListingTooLarge,
    McpRules,
    TemplateError,
    Tool,
    ToolAnnotations,
    ToolCall,
    ToolNameConflictError,
    UnknownTargetError,
    UnknownToolError,
    UsageError,
    load_catalog,
    load_demo_catalog,
    tool_from_dict,
    tools_from_mcp,
    user,
    wire_name,
)
from contextchef.tools._schema import to_strict_schema

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


@pytest.mark.parametrize(
    "shape",
    [
        {"name": "find", "description": "Find.", "input_schema": SCHEMA},
        {
            "type": "function",
            "function": {"name": "find", "description": "Find.", "parameters": SCHEMA},
        },
        {
            "type": "function",
            "name": "find",
            "description": "Find.",
            "parameters": SCHEMA,
            "strict": False,
        },
        {
            "name": "find",
            "description": "Find.",
            "inputSchema": SCHEMA,
            "annotations": {"readOnlyHint": True},
        },
        {"name": "find", "description": "Find.", "parametersJsonSchema": SCHEMA},
    ],
)
def test_every_input_shape_gives_the_same_tool(shape: dict[str, Any]) -> None:
    tool = tool_from_dict(shape)
    assert tool.name == "find" and tool.description == "Find."
    assert tool.input_schema == {
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "type": "object",
    }


def test_mcp_tools_list_keeps_annotations_only_for_a_trusted_server() -> None:
    listing = {
        "tools": [
            {
                "name": "get",
                "inputSchema": SCHEMA,
                "annotations": {"readOnlyHint": True, "destructiveHint": False, "title": "Get"},
            }
        ]
    }
    (tool,) = tools_from_mcp(listing, server="srv", rules=McpRules(trust_annotations=True))
    assert tool.source == "mcp" and tool.server == "srv" and tool.origin == "srv"
    assert tool.annotations.read_only is True and tool.annotations.destructive is False
    assert tool.annotations.title == "Get"
    (untrusted,) = tools_from_mcp(listing, server="srv")  # issue 23: hints are data
    assert untrusted.annotations == ToolAnnotations()
    assert (untrusted.source, untrusted.server) == ("mcp", "srv")


def test_mcp_listing_of_read_only_mappings_is_taken_and_capped_in_bytes() -> None:
    frozen = MappingProxyType({"name": "get", "inputSchema": MappingProxyType(SCHEMA)})
    (tool,) = tools_from_mcp(MappingProxyType({"tools": (frozen,)}), server="srv")
    assert tool.name == "get" and tool.input_schema["required"] == ["q"]
    size = len(json.dumps({"name": "get", "inputSchema": SCHEMA}, separators=(",", ":")))
    assert tools_from_mcp([frozen], server="srv", rules=McpRules(max_listing_bytes=size))
    with pytest.raises(McpListingTooLarge, match=f"more than {size - 1} bytes"):
        tools_from_mcp([frozen], server="srv", rules=McpRules(max_listing_bytes=size - 1))


def test_python_callable_schema_from_signature_and_docstring() -> None:
    def search_docs(query: str, limit: int = 5, tags: list[str] | None = None) -> str:
        """Search the documentation.

        Args:
            query: Words to look for.
            limit: Maximum number of hits.
            tags: Only pages with these tags.
        """
        return query

    chef = ContextChef()
    (tool,) = chef.register_tools([search_docs])
    assert tool.name == "search_docs"
    assert tool.description == "Search the documentation."
    props = tool.input_schema["properties"]
    assert list(props) == ["query", "limit", "tags"]
    assert props["query"] == {"description": "Words to look for.", "type": "string"}
    assert props["limit"]["default"] == 5 and props["limit"]["type"] == "integer"
    assert tool.input_schema["required"] == ["query"]
    from contextchef import ToolCall

    done = chef.execute(ToolCall(id="1", name="search_docs", arguments='{"query": "x"}'))
    assert done.result.content == "x"


def test_callable_with_varargs_is_rejected() -> None:
    def bad(*args: Any) -> None:
        """Bad."""

    with pytest.raises(InvalidToolError, match=r"\*args"):
        ContextChef().register_tools([bad])


@pytest.mark.parametrize(
    ("schema", "path", "needle"),
    [
        (
            {"type": "object", "properties": {"limit": {"type": "int"}}},
            "/properties/limit/type",
            "'int' is not valid",
        ),
        ({"type": "array"}, "/type", "root must have"),
        (
            {"type": "object", "properties": {"a": {"minimum": "one"}}},
            "/properties/a/minimum",
            "'one' is not of type 'number'",
        ),
        ({"type": "object", "required": "a"}, "/required", "'a' is not of type 'array'"),
    ],
)
def test_invalid_schema_names_tool_and_path(schema: dict[str, Any], path: str, needle: str) -> None:
    with pytest.raises(InvalidSchemaError) as info:
        Tool(name="my_tool", input_schema=schema)
    assert info.value.tool == "my_tool"
    assert info.value.schema_path == path
    assert "my_tool" in str(info.value) and needle in str(info.value)


def test_non_object_schema_and_empty_schema() -> None:
    with pytest.raises(InvalidSchemaError):
        Tool(name="t", input_schema=[])  # type: ignore[arg-type]
    assert Tool(name="t", input_schema={}).input_schema == {"properties": {}, "type": "object"}


def test_draft07_tuple_items_accepted(catalogs_dir: Path) -> None:
    cat = load_catalog(catalogs_dir / "sentry.json")
    assert len(cat.tools) == 54
    whoami = next(t for t in cat.tools if t.name == "whoami")
    assert whoami.input_schema["type"] == "object"


def test_every_real_catalog_loads(catalog_paths: list[Path]) -> None:
    total = 0
    for path in catalog_paths:
        cat = load_catalog(path)
        raw = json.loads(path.read_text("utf-8"))
        assert [t.name for t in cat.tools] == [t["name"] for t in raw["tools"]]
        total += len(cat.tools)
    assert total == 286


def test_demo_catalog_shape() -> None:
    cat = load_demo_catalog()
    servers = {t.server for t in cat.tools if t.server}
    assert len(cat.tools) >= 40 and len(servers) >= 4
    assert sum(len(t.description) > 800 for t in cat.tools) >= 5


@pytest.mark.parametrize(
    "bad",
    [{"nothing": 1}, {"type": "web_search_20250305", "name": "web_search"}, "x", {"name": 3}],
)
def test_unknown_tool_shapes_raise_catalog_format_error(bad: Any) -> None:
    with pytest.raises(CatalogFormatError):
        tool_from_dict(bad)


def test_catalog_file_errors(tmp_path: Path) -> None:
    with pytest.raises(CatalogFormatError, match="cannot read"):
        load_catalog(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(CatalogFormatError, match="not valid JSON"):
        load_catalog(bad)
    odd = tmp_path / "odd.json"
    odd.write_text('{"x": 1}')
    with pytest.raises(CatalogFormatError, match="not a catalog"):
        load_catalog(odd)


def test_duplicate_registration_raises_and_keeps_state() -> None:
    chef = ContextChef()
    chef.register_tools([{"name": "a"}])
    with pytest.raises(ToolNameConflictError, match="'a'"):
        chef.register_tools([{"name": "b"}, {"name": "a"}])
    assert [t.name for t in chef.tools] == ["a"]


def test_meta_tool_names_are_reserved() -> None:
    with pytest.raises(ToolNameConflictError, match="tool_search"):
        ContextChef().register_tools([{"name": "tool_search"}])


def test_unknown_target_and_unknown_tool() -> None:
    chef = ContextChef()
    with pytest.raises(
        UnknownTargetError,
        match="valid targets: anthropic, deepseek, gemini, gemini-interactions, openai, responses",
    ):
        chef.compile("claude")
    with pytest.raises(UnknownToolError):
        chef.wire_name("nope")


def test_every_error_is_a_contextchef_error() -> None:
    for exc in (
        CatalogFormatError,
        InvalidSchemaError,
        ToolNameConflictError,
        UnknownTargetError,
        UnknownToolError,
    ):
        assert issubclass(exc, ContextChefError)


def test_gemini_native_declarations_with_upper_case_types() -> None:
    tool = tool_from_dict(
        {
            "name": "get_weather",
            "description": "Weather.",
            "parameters": {
                "type": "OBJECT",
                "properties": {"city": {"type": "STRING"}},
                "required": ["city"],
            },
        }
    )
    assert tool.input_schema["properties"]["city"]["type"] == "string"
    assert tool.input_schema["type"] == "object"


def test_gemini_tool_wrapper_is_flattened() -> None:
    chef = ContextChef()
    added = chef.register_tools(
        [
            {
                "functionDeclarations": [
                    {"name": "a", "description": "A"},
                    {"name": "b", "description": "B"},
                ]
            }
        ]
    )
    assert [t.name for t in added] == ["a", "b"]


def test_bad_inputs_are_usage_errors() -> None:
    chef = ContextChef()
    with pytest.raises(UsageError):
        chef.set_history(None)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        chef.set_blocked_tools(None)  # type: ignore[arg-type]
    chef.register_tools([{"name": "a"}])
    with pytest.raises(UsageError):
        chef.wire_name(chef.tools[0])  # type: ignore[arg-type]
    with pytest.raises(TemplateError):
        ContextChef(template_vars={"time": 5})
    with pytest.raises(CatalogFormatError, match="'template' must be true or false"):
        tool_from_dict({"name": "t", "template": "yes"})
    with pytest.raises(InvalidToolError, match="reserved"):
        Tool(name="t", source="mcp", server="builtin")
    with pytest.raises(InvalidSchemaError, match="not a valid regular expression"):
        Tool(
            name="t",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "string", "pattern": "(x"}},
            },
        )


# --- wire names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "name", "server", "expected"),
    [
        ("builtin", "read_file", None, "read_file"),
        ("github", "create_issue", "github", "github__create_issue"),
        ("cloudflare-radar", "get_ai_data", "cloudflare-radar", "cloudflare-radar__get_ai_data"),
    ],
)
def test_clean_names_are_readable(
    origin: str, name: str, server: str | None, expected: str
) -> None:
    assert wire_name(origin, name, server=server) == expected


def test_lossy_names_get_a_stable_hash_and_stay_legal() -> None:
    names = [
        ("edge", "a.b"),
        ("edge", "a_b"),
        ("edge", "9lives"),
        ("x" * 70, "y" * 70),
        ("s", "名前"),
        ("a__b", "c"),
        ("a", "b__c"),
        ("s_", "x"),
        ("s", "_x"),
    ]
    wires = [wire_name(o, n, server=o) for o, n in names]
    assert all(WIRE_NAME_RE.fullmatch(w) for w in wires), wires
    assert len(set(wires)) == len(wires)
    assert wire_name("edge", "a.b", server="edge") == wires[0]  # stable
    assert wire_name("builtin", "9lives", server=None)[0] == "_"


def test_strict_rewrite_refuses_open_maps_and_unsupported_keywords() -> None:
    assert (
        to_strict_schema(
            {
                "type": "object",
                "properties": {"m": {"type": "object", "additionalProperties": True}},
            }
        )
        is None
    )
    assert to_strict_schema({"type": "object", "properties": {"m": {"not": {}}}}) is None
    out = to_strict_schema(
        {"type": "object", "properties": {"e": {"enum": ["a", "b"], "type": "string"}}}
    )
    assert out is not None
    assert out["properties"]["e"] == {"enum": ["a", "b", None], "type": ["string", "null"]}


def test_register_mcp_tools_list_result() -> None:
    chef = ContextChef(default_defer=True)
    added = chef.register_mcp_tools(
        {
            "tools": [
                {
                    "name": "query",
                    "description": "Run SQL.",
                    "inputSchema": SCHEMA,
                    "annotations": {"readOnlyHint": True},
                }
            ]
        },
        server="postgres",
        description="Production replica",
    )
    assert [(t.server, t.name, t.source) for t in added] == [("postgres", "query", "mcp")]
    assert "postgres: Production replica\n  postgres__query" in chef.view.directory


# --- tooldef-16: strict schemas ------------------------------------------------------------


def payload_tools(payload: dict[str, Any], target: str) -> list[dict[str, Any]]:
    if target == "openai":
        return [t["function"] for t in payload["tools"]]
    return list(payload["tools"])


def chef_16() -> tuple[ContextChef, list[dict[str, Any]]]:
    case = load_case("tooldef-16")["input"]
    received: list[dict[str, Any]] = []

    def process(**kwargs: Any) -> str:
        received.append(kwargs)
        return "done"

    chef = ContextChef()
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_tools(case["tools"], handlers={"process": process})
    return chef, received


@pytest.mark.parametrize("target", ["responses", "openai"])
def test_tooldef_16_strict_schema_is_complete(target: str) -> None:
    chef, _ = chef_16()
    tools = {t["name"]: t for t in payload_tools(chef.compile(target).payload, target)}
    process = tools["process"]
    assert process["strict"] is True
    root = process["parameters"]
    assert root["additionalProperties"] is False
    assert root["required"] == ["a", "opts"]
    opts = root["properties"]["opts"]
    assert opts["additionalProperties"] is False
    assert opts["required"] == ["verbose"]
    assert root["properties"]["a"]["type"] == ["string", "null"]
    assert "null" in opts["type"]
    assert opts["properties"]["verbose"]["type"] == ["boolean", "null"]
    # open map: never strict
    assert tools["tag_bag"].get("strict", False) is False
    assert tools["tag_bag"]["parameters"]["properties"]["meta"]["additionalProperties"] == {}


def test_tooldef_16_strict_nulls_pass_validation_and_are_removed_for_the_handler() -> None:
    case = load_case("tooldef-16")["input"]
    chef, received = chef_16()
    for call in case["model_calls"]:
        done = chef.execute(
            ToolCall(id=call["id"], name=call["name"], arguments=json.dumps(call["arguments"]))
        )
        assert not done.result.is_error, done.result.content
        assert done.result.call_id == call["id"]
    # 'a' and 'verbose' were optional and not nullable: their nulls are removed;
    # 'opts' declared ["object", "null"], so its null is a real value and is kept.
    assert received == [{"opts": None}, {"a": "x", "opts": {}}]


def test_editing_a_registered_schema_is_a_frozen_tool_error() -> None:
    """A registered schema is read-only; an edit raises `FrozenToolError` (a
    `ContextChefError` and a `TypeError`), at any depth, and the tool is unchanged."""
    import copy

    from contextchef import ContextChef, ContextChefError, FrozenToolError

    (tool,) = ContextChef().register_tools(
        [{"name": "a", "description": "d", "input_schema": {"type": "object", "properties": {}}}]
    )
    for edit in (
        lambda: tool.input_schema.__setitem__("x", 1),
        lambda: tool.input_schema["properties"].update({"y": {}}),
        lambda: tool.input_schema.pop("type"),
    ):
        with pytest.raises(FrozenToolError, match=r"read-only \(tool definitions") as caught:
            edit()
        assert isinstance(caught.value, ContextChefError) and isinstance(caught.value, TypeError)
    assert tool.input_schema == {"type": "object", "properties": {}}
    mutable = copy.deepcopy(tool.input_schema)
    mutable["x"] = 1
    assert "x" not in tool.input_schema
