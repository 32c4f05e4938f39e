"""Argument validation: regex keywords on a linear-time engine, capped messages."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contextchef import ContextChef, Denied
from contextchef._json import freeze
from contextchef.tools._validate import (
    MAX_MESSAGE_CHARS,
    pattern_search,
    plainly_valid,
    validation_errors,
)

SLUG = {
    "type": "object",
    "properties": {"slug": {"type": "string", "pattern": "^([a-z0-9]+-?)+$"}},
}


def test_a_backtracking_pattern_cannot_stall_the_gate() -> None:
    # Python's re needs minutes for this input (exponential backtracking); this returns
    # at once, so the test would hang, not fail, if validation went back to re
    chef = ContextChef()
    chef.register_mcp_tools(
        {"tools": [{"name": "lookup", "description": "d", "inputSchema": SLUG}]}, server="cms"
    )
    check = chef.check_tool_call(
        {"id": "c", "name": "cms__lookup", "arguments": {"slug": "a" * 40 + "!"}}
    )
    assert isinstance(check, Denied) and check.code == "invalid_arguments"
    assert "does not match '^([a-z0-9]+-?)+$' (rule: pattern)" in check.reason
    assert validation_errors(SLUG, {"slug": "good-slug-1"}) == []


def test_pattern_semantics_are_json_schema_search() -> None:
    assert pattern_search("b", "abc")  # unanchored: matches anywhere
    assert not pattern_search("^b", "abc")
    assert pattern_search(r"^\d{3}$", "123")
    assert pattern_search(r"abc\Z", "xabc")  # only Python's re knows \Z: the fallback


def test_pattern_properties_use_the_same_engine() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^x_": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert validation_errors(schema, {"x_a": 1}) == []
    (problem,) = validation_errors(schema, {"x_a": "one"})
    assert problem == "x_a: 'one' is not of type 'integer' (rule: type)"
    (extra,) = validation_errors(schema, {"y": 1})
    assert "(rule: additionalProperties)" in extra


def test_messages_never_echo_a_huge_argument_whole() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    (problem,) = validation_errors(schema, {"n": "x" * 100_000})
    assert len(problem) <= MAX_MESSAGE_CHARS + len("… (100,030 chars) (rule: type)")
    assert problem.endswith("… (100,030 chars) (rule: type)")  # `echo` says what was cut


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner)
        | st.dictionaries(
            st.sampled_from(["queries", "tool_names", "limit", "x"]), inner, max_size=3
        )
    ),
    max_leaves=6,
)


@given(
    st.dictionaries(st.sampled_from(["queries", "tool_names", "limit", "x"]), _JSONISH, max_size=3)
)
def test_the_fast_yes_agrees_with_the_worded_check(arguments: dict[str, object]) -> None:
    """`plainly_valid` (jsonschema-rs) never says yes where `validation_errors` finds errors,
    and says yes for every valid plain argument object."""
    from contextchef.deferred._meta import _SEARCH_FROZEN

    errors = validation_errors(_SEARCH_FROZEN, arguments)
    fast = plainly_valid(_SEARCH_FROZEN, arguments)
    assert not (fast and errors), (arguments, errors)
    plain = not any(isinstance(v, tuple) for v in arguments.values())
    assert fast or errors or not plain, arguments


def test_the_fast_yes_is_only_for_plain_schemas() -> None:
    pattern = freeze({"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}})
    assert not plainly_valid(pattern, {"a": "x"})  # not a plain schema: ask the worded check
    assert not plainly_valid(freeze({"type": "object"}), ["not", "a", "dict"])
