"""Tool management (spec 001): pruning, blocklist gate, namespaces, toolkits, native search."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from pydantic import TypeAdapter

from contextchef import (
    Allowed,
    ContextChef,
    Denied,
    MalformedArgumentsError,
    NestedNamespaceError,
    ResolvedAction,
    ToolCall,
    ToolNameConflictError,
    UnknownActionError,
    UnknownToolError,
    UnknownToolkitError,
    UsageError,
    load_demo_catalog,
    user,
)
from contextchef.dispatch._types import ToolCallEvent
from spec001_example import NAMESPACES


def call(name: str, args: Any, id: str = "c") -> ToolCall:
    return ToolCall(id=id, name=name, arguments=args if isinstance(args, str) else json.dumps(args))


def names(chef: ContextChef, tools: Any) -> list[str]:
    return [chef.registry.wire_name_for(t) for t in tools]


SPEC_TOOLS: list[dict[str, Any]] = [
    {"name": "read_file", "description": "Read a file", "tags": ["file", "read"]},
    {"name": "run_bash", "description": "Run a command", "tags": ["shell"]},
    {"name": "get_time", "description": "Get timestamp"},
]

TOOLKITS: list[dict[str, Any]] = [
    {
        "name": "Weather",
        "description": "Weather forecast APIs",
        "tools": [
            {
                "name": "get_forecast",
                "description": "Forecast for a city",
                "parameters": {"city": {"type": "string"}},
            }
        ],
    },
    {
        "name": "Database",
        "description": "SQL query & schema inspection",
        "tools": [
            {
                "name": "run_query",
                "description": "Run a SQL query",
                "parameters": {"sql": {"type": "string"}},
            }
        ],
    },
]


def two_layer(**kw: Any) -> ContextChef:
    chef = ContextChef(**kw)
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_namespaces(
        NAMESPACES,
        handlers={
            "read_file": lambda path: f"contents of {path}",
            "write_file": lambda path, content: "ok",
            "run_bash": lambda command: "done",
        },
    )
    chef.register_toolkits(TOOLKITS, handlers={"get_forecast": lambda city: f"sunny in {city}"})
    return chef


# --- flat mode: pruning --------------------------------------------------------------------


def test_prune_by_task_spec_example() -> None:
    chef = ContextChef()
    chef.register_tools(SPEC_TOOLS)
    result = chef.pruner.prune_by_task("Read the auth.ts file")
    assert names(chef, result.tools) == ["get_time", "read_file"]
    assert result.removed == ("run_bash",)
    assert (result.kept, result.total) == (2, 3)


@pytest.mark.parametrize(
    ("task", "kept"),
    [
        ("open the FILE", True),
        ("file:", True),
        ("use read_file now", True),  # `_` is a boundary
        ("Read-File please", True),  # the name's words, any separator
        ("list the files", False),  # no stemming: "files" is another word
        ("edit my profile", False),
        ("读取文件", True),  # CJK never extends a word
        ("shell", False),
    ],
)
def test_word_boundaries(task: str, kept: bool) -> None:
    chef = ContextChef()
    chef.register_tools([{"name": "read_file", "tags": ["file", "文件"]}])
    assert chef.pruner.prune_by_task(task).kept == int(kept)


def test_prune_demo_catalog_exact() -> None:
    chef = ContextChef()
    chef.register_catalog(load_demo_catalog())
    result = chef.pruner.prune_by_task("Query the database schema and read the logs")
    assert names(chef, result.tools) == [
        "list_directory",
        "read_file",
        "web_fetch",
        "cloud-storage__download_object",
        "observability__query_logs",
        "postgres-db__describe_table",
        "postgres-db__execute_sql",
        "postgres-db__explain_query",
        "postgres-db__get_table_stats",
        "postgres-db__list_indexes",
        "postgres-db__list_schemas",
        "postgres-db__list_tables",
        "warehouse__list_datasets",
        "warehouse__list_tables",
    ]
    assert (result.kept, result.total, len(result.removed)) == (14, 51, 37)
    assert result.removed[:5] == ("edit_file", "glob", "grep", "run_shell", "write_file")


def test_allow_only_and_combined_strategies() -> None:
    chef = ContextChef()
    chef.register_tools(SPEC_TOOLS)
    assert names(chef, chef.pruner.allow_only(["run_bash"]).tools) == ["run_bash"]
    union = chef.pruner.prune_by_task_and_allowlist("read the file", ["run_bash"])
    assert names(chef, union.tools) == ["get_time", "read_file", "run_bash"]
    both = chef.pruner.prune_by_task_and_allowlist(
        "read the file", ["read_file", "run_bash"], strategy="intersection"
    )
    assert names(chef, both.tools) == ["read_file"]  # untagged get_time is not allowlisted
    with pytest.raises(UnknownToolError, match="nope"):
        chef.pruner.allow_only(["nope"])
    with pytest.raises(UsageError, match="unknown strategy"):
        chef.pruner.prune_by_task_and_allowlist("x", [], strategy="xor")  # type: ignore[arg-type]


def test_applied_prune_is_structural_and_clearable() -> None:
    chef = ContextChef(default_defer=True)
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_catalog(load_demo_catalog())
    before = chef.compile("anthropic").segments["tools"]
    result = chef.pruner.prune_by_task("read the logs")
    chef.pruner.apply(result)
    assert chef.mode == "pruned"
    kept = set(names(chef, result.tools))
    view = chef.view
    assert {view.wire_names[t.key] for t in (*view.direct, *view.deferred)} == kept
    denied = chef.check_tool_call(call("defer_execute", {"tool_name": "grep", "params": {}}))
    assert isinstance(denied, Denied)
    assert denied.reason == 'Tool "grep" is not available in mode "pruned".'
    chef.pruner.clear()
    assert chef.mode is None
    assert chef.compile("anthropic").segments["tools"] == before


def test_pruner_apply_needs_a_prune_result() -> None:
    with pytest.raises(UsageError, match="PruneResult"):
        ContextChef().pruner.apply("x")  # type: ignore[arg-type]


# --- blocklist -----------------------------------------------------------------------------


def test_blocklist_through_pruner_keeps_bytes() -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_tools(SPEC_TOOLS)
    before = chef.compile("anthropic").to_json()
    chef.pruner.set_blocked_tools(["run_*"])
    check = chef.check_tool_call(call("run_bash", {}))
    assert isinstance(check, Denied) and check.reason == 'Tool "run_bash" is currently blocked.'
    assert chef.compile("anthropic").to_json() == before
    chef.pruner.set_blocked_tools([])
    assert isinstance(chef.check_tool_call(call("run_bash", {})), Allowed)


# --- namespaces ----------------------------------------------------------------------------

FILE_OPS_DESCRIPTION = (
    "File system operations\n"
    "\n"
    'Call with {"action": <one of the actions below>, "args": {<that action\'s arguments>}}.\n'
    "\n"
    "Actions:\n"
    "- read_file: Read a file\n"
    "  path (string, required)\n"
    "- write_file: Write to a file\n"
    "  path (string, required)\n"
    "  content (string, required)"
)


def test_namespace_compiles_to_one_stable_tool() -> None:
    chef = two_layer()
    compiled = chef.pruner.compile()
    assert [t.name for t in compiled.tools] == ["file_ops", "terminal", "load_toolkit"]
    file_ops = compiled.tools[0]
    assert file_ops.description == FILE_OPS_DESCRIPTION
    assert json.loads(json.dumps(file_ops.input_schema)) == {
        "additionalProperties": False,
        "properties": {
            "action": {
                "description": "The action to run.",
                "enum": ["read_file", "write_file"],
                "type": "string",
            },
            "args": {
                "description": "Arguments of the chosen action, as listed in the description.",
                "type": "object",
            },
        },
        "required": ["action", "args"],
        "type": "object",
    }
    payload_names = [t["name"] for t in chef.compile("anthropic").payload["tools"]]
    assert payload_names == ["file_ops", "terminal", "load_toolkit", "tool_search", "defer_execute"]


def test_namespace_bytes_stable_across_turns_and_blocklist() -> None:
    chef = two_layer()
    chef.set_history([user("hi")])
    first = chef.compile("anthropic")
    chef.append(user("again"))
    chef.set_blocked_tools(["write_file"])
    second = chef.compile("anthropic")
    assert second.segments["tools"] == first.segments["tools"]
    assert second.segments["system"] == first.segments["system"]
    assert second.prefix_fingerprint == first.prefix_fingerprint
    assert two_layer().compile("anthropic").segments["tools"] == first.segments["tools"]


def test_gate_resolves_namespace_to_the_sub_tool() -> None:
    chef = two_layer()
    seen: list[ToolCallEvent] = []

    def record(event: ToolCallEvent) -> None:
        seen.append(event)

    chef.before_tool_call(record)
    ok = chef.check_tool_call(call("file_ops", {"action": "read_file", "args": {"path": "a"}}))
    assert isinstance(ok, Allowed)
    assert (ok.wire_name, ok.via, dict(ok.arguments)) == (
        "read_file",
        "namespace:file_ops",
        {"path": "a"},
    )
    assert [(e.wire_name, e.via) for e in seen] == [("read_file", "namespace:file_ops")]
    done = chef.execute(call("file_ops", {"action": "read_file", "args": {"path": "a"}}))
    assert done.result.content == "contents of a" and not done.result.is_error


def test_gate_blocks_and_validates_namespace_sub_tools() -> None:
    chef = two_layer()
    chef.set_blocked_tools(["write_file"])
    blocked = chef.check_tool_call(
        call("file_ops", {"action": "write_file", "args": {"path": "a", "content": "b"}})
    )
    assert isinstance(blocked, Denied)
    assert blocked.reason == 'Tool "write_file" is currently blocked.'
    invalid = chef.check_tool_call(call("file_ops", {"action": "read_file", "args": {}}))
    assert isinstance(invalid, Denied) and invalid.code == "invalid_arguments"
    assert invalid.reason == (
        'Invalid arguments for tool "read_file":\n'
        "- (root): 'path' is a required property (rule: required)\n"
        "Expected input schema:\n"
        '{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}'
    )
    unknown = chef.check_tool_call(call("file_ops", {"action": "delete_file", "args": {}}))
    assert isinstance(unknown, Denied)
    assert unknown.reason == (
        'Unknown action "delete_file" for "file_ops". Available actions: read_file.'
    )  # write_file is blocked: the list holds what the model may call now
    direct = chef.check_tool_call(call("read_file", {"path": "a"}))
    assert isinstance(direct, Denied) and direct.code == "namespace"
    hook = ContextChef()
    hook.register_namespaces(NAMESPACES)
    hook.before_tool_call(lambda e: "no shell" if e.tool.name == "run_bash" else None)
    denied = hook.check_tool_call(
        call("terminal", {"action": "run_bash", "args": {"command": "x"}})
    )
    assert isinstance(denied, Denied) and (denied.reason, denied.code) == ("no shell", "hook")


def test_mode_shrinks_the_namespace_enum() -> None:
    chef = ContextChef(modes={"reader": ["^read_file$"]})
    chef.register_namespaces(NAMESPACES)
    chef.set_mode("reader")
    [file_ops] = chef.pruner.compile().tools
    assert file_ops.input_schema["properties"]["action"]["enum"] == ["read_file"]
    check = chef.check_tool_call(call("file_ops", {"action": "write_file", "args": {}}))
    assert isinstance(check, Denied)
    assert check.reason == 'Tool "write_file" is not available in mode "reader".'


def test_resolve_namespace_accepts_every_call_shape() -> None:
    chef = two_layer()
    expected = ResolvedAction("file_ops", "read_file", {"path": "a"})
    args = {"action": "read_file", "args": {"path": "a"}}
    shapes: list[Any] = [
        call("file_ops", args),
        {"name": "file_ops", "arguments": json.dumps(args)},
        {"name": "file_ops", "input": args},
        {"id": "x", "type": "function", "function": {"name": "file_ops", "arguments": args}},
        {"name": "file_ops", "arguments": {"action": "read_file", "args": '{"path": "a"}'}},
    ]
    for shape in shapes:
        assert chef.pruner.is_namespace_call(shape)
        assert chef.pruner.resolve_namespace(shape) == expected
    assert not chef.pruner.is_namespace_call(call("load_toolkit", {}))
    with pytest.raises(UnknownActionError) as info:
        chef.pruner.resolve_namespace(call("file_ops", {"action": "rm", "args": {}}))
    assert info.value.available == ("read_file", "write_file")
    assert "available actions: read_file, write_file" in str(info.value)
    with pytest.raises(MalformedArgumentsError):
        chef.pruner.resolve_namespace(call("file_ops", "{not json"))
    with pytest.raises(UsageError, match="not a namespace tool"):
        chef.pruner.resolve_namespace(call("terminalx", {}))


def test_namespace_registration_errors() -> None:
    chef = ContextChef()
    nested = {"name": "outer", "tools": [{"name": "inner", "tools": [{"name": "x"}]}]}
    with pytest.raises(NestedNamespaceError, match="one level only") as info:
        chef.register_namespaces([nested])
    assert (info.value.tool, info.value.namespace) == ("inner", "outer")
    chef.register_tools([{"name": "file_ops"}])
    with pytest.raises(ToolNameConflictError, match="file_ops"):
        chef.register_namespaces(NAMESPACES)
    assert len(chef.tools) == 1  # nothing registered
    with pytest.raises(UsageError, match="provider-legal"):
        chef.register_namespaces([{"name": "bad name", "tools": [{"name": "x"}]}])
    ok = ContextChef()
    ok.register_namespaces(NAMESPACES)
    with pytest.raises(ToolNameConflictError, match="terminal"):
        ok.register_tools([{"name": "terminal"}])


# --- lazy toolkits -------------------------------------------------------------------------


def test_toolkit_directory_and_loader() -> None:
    chef = two_layer()
    assert chef.pruner.compile().directory_xml == (
        "<available_toolkits>\n"
        '<toolkit name="Database">SQL query &amp; schema inspection</toolkit>\n'
        '<toolkit name="Weather">Weather forecast APIs</toolkit>\n'
        "</available_toolkits>"
    )
    assert chef.pruner.is_toolkit_loader(call("load_toolkit", {"toolkit_name": "Weather"}))
    assert not chef.pruner.is_toolkit_loader(call("file_ops", {}))
    with pytest.raises(UnknownToolkitError) as info:
        chef.pruner.extract_toolkit("Nope")
    assert info.value.available == ("Database", "Weather")


def test_loading_a_toolkit_keeps_the_tools_array() -> None:
    chef = two_layer()
    before = chef.compile("anthropic")
    done = chef.execute(call("load_toolkit", {"toolkit_name": "Weather"}))
    assert done.result.content == (
        'Loaded toolkit "Weather" (1 tool). Call them with defer_execute({"tool_name": <name>, '
        '"params": {...}}).\n'
        "\n"
        "## get_forecast\n"
        "Forecast for a city\n"
        'Input schema: {"properties":{"city":{"type":"string"}},"required":["city"],'
        '"type":"object"}'
    )
    assert chef.loaded_toolkits == ("Weather",)
    assert chef.compile("anthropic").segments["tools"] == before.segments["tools"]
    ran = chef.execute(
        call("defer_execute", {"tool_name": "get_forecast", "params": {"city": "Oslo"}})
    )
    assert ran.result.content == "sunny in Oslo"
    assert [t.name for t in chef.pruner.extract_toolkit("Database")] == ["run_query"]
    assert list(chef.loaded_toolkits) == ["Database", "Weather"]
    assert [w for w, _ in chef.take_tool_additions()] == ["get_forecast", "run_query"]
    unknown = chef.check_tool_call(call("load_toolkit", {"toolkit_name": "Mail"}))
    assert isinstance(unknown, Denied)
    assert unknown.reason == 'Unknown toolkit "Mail". Available toolkits: Database, Weather.'


def test_toolkit_tool_clash_is_rejected_up_front() -> None:
    chef = ContextChef()
    chef.register_tools([{"name": "get_forecast"}])
    with pytest.raises(ToolNameConflictError, match="get_forecast"):
        chef.register_toolkits(TOOLKITS)
    assert chef.toolkits == ()


# --- anthropic-native ----------------------------------------------------------------------


def native_chef() -> ContextChef:
    chef = ContextChef(defer=["^cloud-storage__*", "^team-chat__*"])
    chef.register_catalog(load_demo_catalog())
    chef.register_toolkits(TOOLKITS)
    chef.set_system_prompt("You are careful.")
    chef.set_history([user("hi")])
    return chef


def test_anthropic_native_payload_validates_against_the_sdk() -> None:
    chef = native_chef()
    request = chef.compile("anthropic", strategy="anthropic-native")
    tools = request.payload["tools"]
    deferred = [t["name"] for t in tools if t.get("defer_loading")]
    assert deferred == [
        chef.view.wire_names[t.key] for t in chef.view.deferred
    ]  # cloud-storage and team-chat
    assert len(deferred) == 14
    assert "tool_search" not in [t.get("name") for t in tools]
    assert tools[-1] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    validated = TypeAdapter(MessageCreateParamsNonStreaming).validate_python(request.payload)
    assert len(list(validated["tools"])) == len(tools)


def test_deferred_definitions_do_not_change_the_prefix_fingerprint() -> None:
    chef = native_chef()
    first = chef.compile("anthropic", strategy="anthropic-native")
    chef.register_runtime_tool({"name": "made_up", "description": "x"})
    chef.pruner.extract_toolkit("Weather")
    second = chef.compile("anthropic", strategy="anthropic-native")
    assert second.segments["tools"] != first.segments["tools"]
    assert second.prefix_fingerprint == first.prefix_fingerprint
    client = chef.compile("anthropic")
    assert client.prefix_fingerprint != first.prefix_fingerprint


def test_native_strategy_gate_and_other_targets() -> None:
    chef = native_chef()
    wire = "cloud-storage__list_buckets"
    assert isinstance(chef.check_tool_call(call(wire, {})), Denied)  # client: use defer_execute
    chef.compile("anthropic", strategy="anthropic-native")
    early = chef.check_tool_call(call(wire, {}))  # declared deferred, nothing revealed it yet
    assert isinstance(early, Denied) and early.code == "not_loaded"
    found = {"type": "tool_reference", "tool_name": wire}
    chef.ingest(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-8",
            "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25"}
                | {"input": {"query": "buckets"}},
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [found],
                    },
                },
            ],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    assert isinstance(chef.check_tool_call(call(wire, {})), Allowed)  # provider expanded it
    for target in ("openai", "responses", "gemini"):
        with pytest.raises(UsageError, match="anthropic-native"):
            chef.compile(target, strategy="anthropic-native")
    assert "defer_loading" not in chef.compile("anthropic").to_json()
