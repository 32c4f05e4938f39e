"""Exposure precedence: runtime > pin > defer pattern > tool's defer_loading > default."""

from __future__ import annotations

import pytest

from contextchef import ContextChef, ExposurePolicy, Tool
from contextchef.exposure._policy import compile_pattern


def tool(name: str, defer: bool | None = None, server: str | None = None) -> Tool:
    return Tool(
        name=name, defer_loading=defer, server=server, source="mcp" if server else "builtin"
    )


@pytest.mark.parametrize(
    ("policy", "t", "expected"),
    [
        (ExposurePolicy(), tool("a"), "direct"),
        (ExposurePolicy(default_defer=True), tool("a"), "deferred"),
        (ExposurePolicy(default_defer=True), tool("a", defer=False), "direct"),
        (ExposurePolicy(default_defer=False), tool("a", defer=True), "deferred"),
        (ExposurePolicy(defer=("a",)), tool("a", defer=False), "deferred"),
        (ExposurePolicy(pin=("a",)), tool("a", defer=True), "direct"),
        (ExposurePolicy(defer=("a",), pin=("a",)), tool("a"), "direct"),
        (ExposurePolicy(pin=("*",)), Tool(name="r", source="runtime"), "deferred"),
    ],
)
def test_precedence(policy: ExposurePolicy, t: Tool, expected: str) -> None:
    assert policy.exposure_of(t, t.name) == expected


@pytest.mark.parametrize(
    ("pattern", "name", "hit"),
    [
        ("github", "github__create_issue", True),
        ("^github", "github__create_issue", True),
        ("^issue", "github__create_issue", False),
        ("issue$", "github__create_issue", True),
        ("^github__*_issue$", "github__create_issue", True),
        ("^github__*_issue$", "github__create_issue_comment", False),
        ("^read_file$", "read_file", True),
        ("^read_file$", "read_files", False),
        ("a.b", "axb", False),  # dots are literal
        ("*", "anything", True),
    ],
)
def test_patterns(pattern: str, name: str, hit: bool) -> None:
    assert bool(compile_pattern(pattern).search(name)) is hit


def test_pattern_matches_wire_name_and_own_name() -> None:
    policy = ExposurePolicy(default_defer=True, pin=("^github__get_me$", "^search$"))
    assert policy.exposure_of(tool("get_me", server="github"), "github__get_me") == "direct"
    assert policy.exposure_of(tool("search", server="x"), "x__search") == "direct"
    assert policy.exposure_of(tool("list", server="x"), "x__list") == "deferred"


def test_meta_tools_present_and_pinned_only_when_something_is_deferred() -> None:
    chef = ContextChef()
    chef.register_tools([{"name": "a", "description": "A"}, {"name": "b", "description": "B"}])
    assert [t.name for t in chef.view.resident] == ["a", "b"]
    chef = ContextChef(defer=["^b$"])
    chef.register_tools([{"name": "a", "description": "A"}, {"name": "b", "description": "B"}])
    assert [t.name for t in chef.view.resident] == ["a", "tool_search", "defer_execute"]
    # even a pattern that matches everything cannot defer the meta-tools
    chef = ContextChef(defer=["*"])
    chef.register_tools([{"name": "a", "description": "A"}])
    assert [t.name for t in chef.view.resident] == ["tool_search", "defer_execute"]
    assert "\na\n" in chef.view.directory
