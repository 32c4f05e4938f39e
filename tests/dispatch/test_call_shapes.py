"""One accepted call shape and one argument parser for every public entry point."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import ToolUseBlock
from google.genai import types as genai_types
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from openai.types.responses import ResponseFunctionToolCall

from contextchef import (
    TARGETS,
    Allowed,
    ContextChef,
    Denied,
    ToolCall,
    UsageError,
    assistant,
    tool_results,
    user,
)

READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
}
NAMESPACE = {
    "name": "fs",
    "description": "Files.",
    "tools": [{"name": "stat", "description": "Stat a path.", "parameters": {"p": {}}}],
}


def chef() -> ContextChef:
    made = ContextChef()
    made.register_tools([READ], handlers={"read_file": lambda path: f"contents of {path}"})
    made.register_namespaces([NAMESPACE])
    return made


SDK_CALLS: list[tuple[str, Any]] = [
    (
        "anthropic ToolUseBlock",
        ToolUseBlock(type="tool_use", id="toolu_1", name="read_file", input={"path": "a"}),
    ),
    (
        "openai Chat tool call",
        ChatCompletionMessageFunctionToolCall.model_validate(
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a"}'},
            }
        ),
    ),
    (
        "openai Responses function_call",
        ResponseFunctionToolCall(
            type="function_call",
            id="fc_1",  # the item's id; its output must answer call_id
            call_id="call_1",
            name="read_file",
            arguments='{"path": "a"}',
        ),
    ),
    (
        "genai FunctionCall",
        genai_types.FunctionCall(id="fc_1", name="read_file", args={"path": "a"}),
    ),
    ("Chat dict", {"id": "c", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}),
    ("Gemini part dict", {"functionCall": {"name": "read_file", "args": {"path": "a"}}}),
    (
        "Anthropic block dict",
        {"type": "tool_use", "id": "t", "name": "read_file", "input": {"path": "a"}},
    ),
    ("Responses item dict", {"call_id": "c", "name": "read_file", "arguments": '{"path": "a"}'}),
    ("ToolCall", ToolCall(id="c", name="read_file", arguments='{"path": "a"}')),
]


@pytest.mark.parametrize(("label", "call"), SDK_CALLS, ids=[label for label, _ in SDK_CALLS])
def test_every_entry_point_accepts_every_call_shape(label: str, call: Any) -> None:
    session = chef()
    check = session.check_tool_call(call)
    assert isinstance(check, Allowed), (label, check)
    assert dict(check.arguments) == {"path": "a"}


def test_the_call_id_is_kept_from_each_shape() -> None:
    session = chef()
    done = [session.execute(call).result for _, call in SDK_CALLS[:4]]
    assert [r.call_id for r in done] == ["toolu_1", "call_1", "call_1", "fc_1"]
    assert {r.content for r in done} == {"contents of a"}


@pytest.mark.parametrize("junk", [5, None, "read_file", {"arguments": "{}"}, [1, 2]])
def test_a_value_that_is_no_call_is_a_usage_error(junk: Any) -> None:
    with pytest.raises(UsageError, match="expected a ToolCall"):
        chef().check_tool_call(junk)


BAD_ARGUMENTS = [
    ('{"path": NaN}', "NaN"),
    ('{"path": Infinity}', "Infinity"),
    ('{"path": -Infinity}', "-Infinity"),
    ('{"path": 1e999}', "NaN, Infinity or a number too large"),
    ('{"path": ' + "9" * 5000 + "}", "not valid JSON"),
    ("[" * 5000 + "]" * 5000, "not valid JSON"),
    ('{"path": ' + '{"a": ' * 3000 + "1" + "}" * 3000 + "}", "not valid JSON"),
]


@pytest.mark.parametrize(("raw", "needle"), BAD_ARGUMENTS, ids=range(len(BAD_ARGUMENTS)))
def test_unrepresentable_arguments_are_refused_and_never_break_later_compiles(
    raw: str, needle: str
) -> None:
    session = chef()
    call = ToolCall(id="c1", name="read_file", arguments=raw)
    check = session.check_tool_call(call)
    assert isinstance(check, Denied) and check.code == "malformed_arguments"
    assert check.reason.startswith('Invalid arguments for tool "read_file": ')
    assert needle in check.reason
    assert len(check.reason) < 500  # never echoes a huge number back
    result = session.execute(call).result
    assert result.is_error and result.call_id == "c1"
    # the call stays in history exactly as the model sent it; every target still compiles
    session.set_history([user("read a"), assistant("", [call]), tool_results([result])])
    for target in TARGETS:
        payload = session.compile(target).payload
        json.dumps(payload, allow_nan=False)  # nothing unrepresentable reaches the wire


def test_namespace_args_use_the_same_parser() -> None:
    session = chef()
    bad = {"name": "fs", "arguments": {"action": "stat", "args": '{"p": NaN}'}}
    check = session.check_tool_call(bad)
    assert isinstance(check, Denied) and check.code == "invalid_arguments"
    assert "'args' must be an object" in check.reason
    good = {"name": "fs", "arguments": {"action": "stat", "args": '{"p": 1}'}}
    assert isinstance(session.check_tool_call(good), Allowed)


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"path": "a"}
    for _ in range(levels):
        value = {"x": value}
    return value


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ({"path": float("nan")}, "NaN is not a JSON number"),
        ({"path": float("inf")}, "Infinity is not a JSON number"),
        ({"path": 10**5000}, "the arguments hold an integer too large to represent"),
        (deep(150), "nested more than 100 levels deep"),
        (deep(5000), "the arguments are nested more than 100 levels deep"),
        ({"path": object()}, "which is not JSON data"),
    ],
    ids=["nan", "inf", "huge-int", "deep", "very-deep", "object"],
)
def test_arguments_given_as_python_objects_get_the_right_reason(
    arguments: dict[str, Any], needle: str
) -> None:
    check = chef().check_tool_call({"id": "c", "name": "read_file", "arguments": arguments})
    assert isinstance(check, Denied) and check.code == "malformed_arguments"
    assert needle in check.reason, check.reason


def test_a_blocked_defer_execute_blocks_the_calls_made_through_it() -> None:
    session = ContextChef(default_defer=True)
    session.register_tools([READ], handlers={"read_file": lambda path: path})
    wrapped = ToolCall(
        id="c",
        name="defer_execute",
        arguments='{"tool_name": "read_file", "params": {"path": "a"}}',
    )
    assert isinstance(session.check_tool_call(wrapped), Allowed)
    session.set_blocked_tools(["^defer_execute$"])
    check = session.check_tool_call(wrapped)
    assert isinstance(check, Denied) and check.code == "blocked"
    assert check.reason == 'Tool "defer_execute" is currently blocked.'


class Hostile:
    """A call object whose attributes raise."""

    @property
    def name(self) -> str:
        raise RuntimeError("boom")


def test_a_hostile_call_object_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="cannot read a tool call from Hostile"):
        chef().check_tool_call(Hostile())


def test_an_argument_error_on_a_huge_schema_stays_bounded() -> None:
    from contextchef.dispatch._gate import MAX_PROBLEMS, MAX_SCHEMA_ECHO

    properties = {f"p{i}": {"type": "integer", "description": "x" * 50} for i in range(5_000)}
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    session = ContextChef()
    session.register_tools([{"name": "big", "description": "d", "input_schema": schema}])
    check = session.check_tool_call({"id": "c", "name": "big", "arguments": {}})
    assert isinstance(check, Denied) and check.code == "invalid_arguments"
    assert len(check.reason) < MAX_SCHEMA_ECHO + 300 * (MAX_PROBLEMS + 2)
    assert f"- ... and {5_000 - MAX_PROBLEMS} more" in check.reason
    assert 'tool_search({"tool_names": ["big"]})' in check.reason
