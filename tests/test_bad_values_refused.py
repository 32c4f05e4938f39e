"""Bad values refused where they are given, naming the field (a fresh user's findings).

Each was accepted silently before: a hook that is not callable (then every tool call was
denied with "a policy check failed (TypeError ...)"), a tool description that is not text
(it became ``""``), a negative or non-integer `DeferredConfig` budget.
"""

from __future__ import annotations

from typing import Any

import pytest

from contextchef import (
    CatalogFormatError,
    ContextChef,
    DeferredConfig,
    ToolCall,
    ToolNameConflictError,
    UsageError,
    user,
)


def ping() -> str:
    """Ping."""
    return "pong"


@pytest.mark.parametrize("method", ["before_tool_call", "after_tool_call"])
@pytest.mark.parametrize("hook", [5, "not a function", None, {"a": 1}])
def test_a_hook_that_is_not_callable_is_refused_when_added(method: str, hook: Any) -> None:
    chef = ContextChef()
    chef.register_tools([ping])
    with pytest.raises(UsageError, match=method):
        getattr(chef, method)(hook)
    (result,) = chef.run_tools([ToolCall(id="c", name="ping", arguments={})], append=False)
    assert (result.is_error, result.content) == (False, "pong")  # nothing was added


@pytest.mark.parametrize("description", [12345, ["not", "text"], {"a": 1}, True])
def test_a_description_that_is_not_text_is_refused_naming_the_tool(description: Any) -> None:
    chef = ContextChef()
    tool = {"name": "t", "description": description, "input_schema": {"type": "object"}}
    with pytest.raises(CatalogFormatError, match=r"'t'.*'description' must be text"):
        chef.register_tools([tool])
    assert len(chef.registry) == 0


def test_a_missing_description_is_still_empty_text() -> None:
    chef = ContextChef()
    (tool,) = chef.register_tools([{"name": "t", "input_schema": {"type": "object"}}])
    assert tool.description == ""


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("directory_chars", -1),
        ("result_chars", 1.5),
        ("max_results", 0),
        ("default_results", True),
        ("header_chars", "80"),
        ("require_search", "yes"),
        ("always_meta_tools", 1),
    ],
)
def test_a_bad_deferred_config_value_is_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(UsageError, match=f"DeferredConfig.{field} must be"):
        DeferredConfig(**{field: value})


def test_the_defaults_and_zero_budgets_stay_valid() -> None:
    DeferredConfig()
    DeferredConfig(directory_chars=0, overflow_results=0, brief_results=0)


def grep(pattern: str) -> str:
    """Search."""
    return "hit"


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"pattern": "x"}
    for _ in range(levels):
        value = {"a": value}
    return value


def test_arguments_json_cannot_carry_are_answered_with_the_real_reason() -> None:
    """They were answered "not valid JSON (Expecting value)", which names no cause."""
    chef = ContextChef()
    chef.register_tools([grep])
    (deep,) = chef.run_tools([{"id": "c1", "name": "grep", "arguments": _deep(3000)}], append=False)
    assert deep.is_error and "nested more than" in deep.content
    response = {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "content": [
            {"type": "tool_use", "id": "t1", "name": "grep", "input": {"pattern": 10**5000}}
        ],
    }
    chef.set_history([])
    (huge,) = chef.run_tools(chef.ingest(response), append=False)
    assert huge.is_error and "integer too large to represent" in huge.content
    for result in (deep, huge):
        assert "Expecting value" not in result.content


def test_a_hook_editing_the_arguments_is_told_they_are_read_only() -> None:
    chef = ContextChef()
    chef.register_tools([grep])

    @chef.before_tool_call
    def edit(event: Any) -> None:
        event.arguments["pattern"] = "changed"

    (result,) = chef.run_tools([{"id": "c", "name": "grep", "arguments": {"pattern": "x"}}])
    assert result.is_error and "read-only" in result.content
    assert "arguments hooks see" in result.content


def test_one_call_given_to_run_tools_is_told_to_be_put_in_a_list() -> None:
    chef = ContextChef()
    chef.register_tools([grep])
    one = {"id": "c", "name": "grep", "arguments": {"pattern": "x"}}
    for given in (one, ToolCall(id="c", name="grep", arguments={"pattern": "x"})):
        with pytest.raises(UsageError, match="put one call in a list"):
            chef.run_tools(given)  # type: ignore[arg-type]


def test_a_wire_name_clash_names_both_tools() -> None:
    tool = {"name": "a.b", "description": "d", "input_schema": {"type": "object"}}
    chef = ContextChef()
    chef.register_tools([tool])
    wire = chef.wire_name("a.b")
    with pytest.raises(ToolNameConflictError) as caught:
        chef.register_tools([{**tool, "name": wire}])
    assert f"(tools 'a.b' and '{wire}')" in str(caught.value)
    assert dict(caught.value.conflicts) == {wire: ("builtin",)}


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_compile_diagnostics_must_be_a_bool(value: Any) -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    with pytest.raises(UsageError, match="diagnostics must be True or False"):
        chef.compile("anthropic", model="claude-opus-5-5", diagnostics=value)
    assert chef.compile("anthropic", model="claude-opus-5-5").payload["messages"]
