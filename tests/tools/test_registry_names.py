"""Wire names and server qualification on real failures: cases tooldef-13 and tooldef-14.

Each case is ../shared/cases/tooldef-*.json with its expected values.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import load_case
from contextchef import (
    WIRE_NAME_RE,
    Allowed,
    ContextChef,
    Denied,
    Tool,
    ToolCall,
    ToolNameConflictError,
    user,
)

TARGETS = ("anthropic", "openai", "responses", "gemini")


def payload_tool_names(payload: dict[str, Any], target: str) -> list[str]:
    if target == "anthropic":
        return [t["name"] for t in payload.get("tools", [])]
    if target == "openai":
        return [t["function"]["name"] for t in payload.get("tools", [])]
    if target == "responses":
        return [t["name"] for t in payload.get("tools", [])]
    decls = payload["config"].get("tools", [{"function_declarations": []}])
    return [d["name"] for d in decls[0]["function_declarations"]]


# --- tooldef-13: MCP names that providers reject -------------------------------------------

SCHEMA_13 = {
    "type": "object",
    "properties": {"eventId": {"type": "string"}, "response": {"type": "string"}},
}


def chef_13(**kwargs: Any) -> ContextChef:
    case = load_case("tooldef-13")
    chef = ContextChef(**kwargs)
    chef.set_history([user("hi")])  # compile needs a message
    for server, names in case["input"]["mcp_servers"].items():
        chef.register_tools(
            [{"name": n, "description": f"{n} tool", "inputSchema": SCHEMA_13} for n in names],
            server=server,
        )
    return chef


@pytest.mark.parametrize("default_defer", [False, True])
def test_tooldef_13_every_compiled_name_is_legal_distinct_and_stable(default_defer: bool) -> None:
    chef = chef_13(default_defer=default_defer)
    per_target = {}
    for target in TARGETS:
        names = payload_tool_names(chef.compile(target).payload, target)
        assert names, target
        assert all(WIRE_NAME_RE.fullmatch(n) for n in names), names
        assert len(set(names)) == len(names)
        per_target[target] = names
    # identical across providers sharing the rule, and across repeated compiles
    assert len({tuple(v) for v in per_target.values()}) == 1
    again = chef_13(default_defer=default_defer)
    assert (
        payload_tool_names(again.compile("anthropic").payload, "anthropic")
        == per_target["anthropic"]
    )
    # every registered tool's wire name (listed directly or in the directory) is legal
    wires = chef.view.wire_names
    assert all(WIRE_NAME_RE.fullmatch(w) for w in wires.values())
    assert len(set(wires.values())) == len(wires) == 7
    assert wires[("edge", "a.b")] != wires[("edge", "a_b")]
    assert not wires[("edge", "9lives")][0].isdigit()
    if default_defer:  # a wire name that lost its own name's letters shows that name after it
        for (_, own), wire in wires.items():
            line = wire if wire.endswith(own) else f"{wire} ({own})"
            assert f"\n  {line}\n" in chef.view.directory + "\n"


def test_tooldef_13_call_is_routed_to_the_original_server_and_name() -> None:
    chef = chef_13()
    case = load_case("tooldef-13")
    call_spec = case["input"]["ops"][-1]["calls"][0]
    wire = chef.wire_name("calendar.respondToEvent", server="google-workspace")
    check = chef.check_tool_call(
        ToolCall(id=call_spec["id"], name=wire, arguments=json.dumps(call_spec["arguments"]))
    )
    assert isinstance(check, Allowed)
    assert check.tool.server == "google-workspace"
    assert check.tool.name == "calendar.respondToEvent"
    assert dict(check.arguments) == {"eventId": "e1", "response": "accepted"}


def test_tooldef_13_unknown_compiled_name_is_an_error_result_not_a_guess() -> None:
    chef = chef_13()
    # a plausible-looking but unregistered name, and the raw MCP name with its dot
    for name in ("google-workspace__calendar_respondToEvent", "nope"):
        done = chef.execute(ToolCall(id="x1", name=name, arguments="{}"))
        assert done.result.is_error
        assert done.result.call_id == "x1"
        assert isinstance(done.check, Denied) and done.check.code == "unknown_tool"


def test_wire_name_does_not_change_when_another_server_is_registered() -> None:
    chef = chef_13()
    before = dict(chef.view.wire_names)
    chef.register_tools(
        [{"name": "a.b", "description": "x", "input_schema": SCHEMA_13}], server="edge2"
    )
    after = chef.view.wire_names
    assert all(after[k] == v for k, v in before.items())


# --- tooldef-14: same tool name on two servers ---------------------------------------------


def chef_14(*, qualify: bool = True) -> tuple[ContextChef, dict[str, list[dict[str, Any]]]]:
    case = load_case("tooldef-14")["input"]
    chef = ContextChef(qualify=qualify)
    chef.set_history([user("hi")])  # compile needs a message
    calls: dict[str, list[dict[str, Any]]] = {}

    def spy(label: str) -> Any:
        def handler(**kwargs: Any) -> str:
            calls.setdefault(label, []).append(kwargs)
            return f"ran on {label}"

        return handler

    chef.register_tools(
        [
            {"name": t["name"], "description": "Read a file.", "input_schema": t["parameters"]}
            for t in case["builtin_tools"]
        ]
    )
    for server, tools in sorted(case["mcp_servers"].items()):
        chef.register_tools(
            [
                {
                    "name": t["name"],
                    "description": f"Run {t['name']}.",
                    "input_schema": t["parameters"],
                }
                for t in tools
            ],
            server=server,
            handlers={t["name"]: spy(f"{server}.{t['name']}") for t in tools},
        )
    return chef, calls


def test_tooldef_14_both_execute_sql_tools_are_sent_distinct_and_labelled() -> None:
    chef, _ = chef_14()
    payload = chef.compile("anthropic").payload
    tools = payload["tools"]
    names = [t["name"] for t in tools]
    assert len(tools) == 4 and len(set(names)) == 4
    sql = [t for t in tools if t["name"].endswith("execute_sql")]
    assert {t["name"] for t in sql} == {"clickhouse__execute_sql", "oceanbase__execute_sql"}
    assert {t["description"] for t in sql} == {
        "[clickhouse] Run execute_sql.",
        "[oceanbase] Run execute_sql.",
    }
    assert sum(1 for n in names if n.endswith("read_file")) == 2


def test_tooldef_14_call_goes_to_clickhouse_only() -> None:
    chef, calls = chef_14()
    q1 = ToolCall(
        id="q1",
        name="clickhouse__execute_sql",
        arguments='{"query": "select count(*) from t_user"}',
    )
    done = chef.execute(q1)
    assert not done.result.is_error
    assert done.result.call_id == "q1"
    assert len(calls.get("clickhouse.execute_sql", [])) == 1
    assert len(calls.get("oceanbase.execute_sql", [])) == 0
    assert calls["clickhouse.execute_sql"][0] == {"query": "select count(*) from t_user"}


def test_tooldef_14_bare_ambiguous_name_is_not_routed() -> None:
    chef, calls = chef_14()
    done = chef.execute(ToolCall(id="q2", name="execute_sql", arguments='{"query": "x"}'))
    assert done.result.is_error
    assert calls == {}


def test_tooldef_14_namespacing_disabled_raises_naming_both_origins() -> None:
    case = load_case("tooldef-14")["input"]
    tools = [Tool(name=t["name"], input_schema=t["parameters"]) for t in case["builtin_tools"]]
    for server, defs in case["mcp_servers"].items():
        tools += [
            Tool(name=t["name"], input_schema=t["parameters"], source="mcp", server=server)
            for t in defs
        ]
    chef = ContextChef(qualify=False)
    with pytest.raises(ToolNameConflictError) as info:
        chef.register_tools(tools)
    message = str(info.value)
    for origin in ("clickhouse", "oceanbase", "builtin", "files"):
        assert origin in message
    assert dict(info.value.conflicts) == {
        "execute_sql": ("clickhouse", "oceanbase"),
        "read_file": ("builtin", "files"),
    }
    assert chef.tools == ()  # nothing silently kept or dropped


def test_tooldef_14_namespacing_disabled_later_registration_also_raises() -> None:
    chef = ContextChef(qualify=False)
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    chef.register_tools([{"name": "execute_sql", "input_schema": schema}], server="oceanbase")
    with pytest.raises(ToolNameConflictError, match="clickhouse and oceanbase"):
        chef.register_tools([{"name": "execute_sql", "input_schema": schema}], server="clickhouse")
    assert [t.origin for t in chef.tools] == ["oceanbase"]
