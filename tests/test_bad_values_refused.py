"""Bad values refused where they are given, naming the field (a fresh user's findings).

Each was accepted silently before: a hook that is not callable (then every tool call was
denied with "a policy check failed (TypeError ...)"), a tool description that is not text
(it became ``""``), a negative or non-integer `DeferredConfig` budget.
"""

from __future__ import annotations

from typing import Any

import pytest

from contextchef import CatalogFormatError, ContextChef, DeferredConfig, ToolCall, UsageError


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
