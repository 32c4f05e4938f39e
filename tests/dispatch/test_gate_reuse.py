"""What the gate reuses between calls never makes a stale or different decision.

Two shortcuts on the ``tool_search`` path (issue 27): a `ToolCall` built from a plain dict
hands the gate the value it checked instead of having it parse the text back, and the
session keeps its `GateContext` while everything it is made from is equal. Each test
changes something between calls and asserts the gate sees it, and that the recorded call
and the value a handler gets are what parsing the text gives.
"""

from __future__ import annotations

import copy
import enum
import json
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextchef import ContextChef, DeferredConfig, Denied, ToolCall, user
from contextchef._json import canonical_dumps, canonical_value, plain_object
from contextchef.dispatch._calls import call_arguments
from contextchef.dispatch._types import ToolCallEvent
from contextchef.history._arguments import parse_json_object

EDIT = {
    "name": "edit",
    "description": "Edit a list.",
    "input_schema": {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "integer"}},
            "opts": {"type": "object"},
            "x": {"type": "number"},
        },
    },
}
LATER = {"name": "later", "description": "Registered later.", "input_schema": {"type": "object"}}
DEFERRED = {
    "name": "lookup",
    "description": "Look a thing up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    "defer_loading": True,
}


def same_types(a: object, b: object) -> bool:
    """Equal, and of the same exact type at every level (what a handler can tell apart)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_types(a[k], b[k]) for k in a)  # type: ignore[call-overload]
    if isinstance(a, list):
        return len(a) == len(b) and all(same_types(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    return a == b or (a != a and b != b)


# --- a ToolCall built from a dict ---------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=5))
def test_the_kept_value_is_what_parsing_the_text_gives(value: dict[str, Any]) -> None:
    call = ToolCall(id="c", name="t", arguments=value)
    assert call.arguments == canonical_dumps(canonical_value(value))  # the text as before
    parsed = parse_json_object(call.arguments)
    kept = call_arguments(call)
    assert same_types(kept, parsed)
    assert same_types(call_arguments(call), parsed)  # taken once: the next read parses


def nested(levels: int) -> list[Any]:
    deep: list[Any] = []
    for _ in range(levels):
        deep = [deep]
    return deep


class Level(enum.IntEnum):
    HIGH = 2


class Name(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        {"x": np.float64(0.5)},  # a float subclass: parsed back as a float
        {"x": Level.HIGH},  # an int subclass: parsed back as 2
        {"x": Name("a")},
        {Name("k"): 1},
        {1: "int key"},  # written as "1"
        {"x": OrderedDict(a=1)},
        {"x": "\ud800"},  # a lone surrogate: the parser refuses it
        {"x": 2**14_001},  # too long to write as JSON
        {"x": nested(120)},  # nesting past the limit
    ],
)
def test_values_parsing_could_not_give_back_are_parsed(value: dict[Any, Any]) -> None:
    assert plain_object(value) is None
    try:
        call = ToolCall(id="c", name="t", arguments=value)
    except Exception:  # refused at construction as before (e.g. too long an integer)
        return
    assert "_parsed" not in call.__dict__
    assert same_types(call_arguments(call), parse_json_object(call.arguments))


def test_numpy_floats_reach_the_handler_as_floats() -> None:
    got: list[Any] = []
    chef = ContextChef()
    chef.register_tools([EDIT], handlers={"edit": lambda **kw: got.append(kw) or "ok"})
    chef.execute(ToolCall(id="c", name="edit", arguments={"x": np.float64(0.5)}))
    assert type(got[0]["x"]) is float and got[0]["x"] == 0.5


def test_a_handler_changing_its_arguments_changes_neither_the_call_nor_a_rerun() -> None:
    got: list[str] = []

    def edit(items: list[int], opts: dict[str, Any]) -> str:
        got.append(json.dumps([items, opts]))
        items.append(99)  # a handler that edits what it was given
        opts["added"] = True
        return "ok"

    chef = ContextChef()
    chef.register_tools([EDIT], handlers={"edit": edit})
    given_args = {"items": [1, 2.0], "opts": {"k": [1]}}
    call = ToolCall(id="c", name="edit", arguments=given_args)
    text = call.arguments
    given_args["items"].append(3)  # the caller's dict is not the call's
    assert not chef.execute(call).result.is_error
    assert not chef.execute(call).result.is_error  # again: parsed from the text
    assert call.arguments == text == '{"items":[1,2.0],"opts":{"k":[1]}}'
    assert got == ['[[1, 2], {"k": [1]}]'] * 2  # 2.0 handed over as 2 both times


def test_a_shallow_copy_of_a_call_does_not_share_the_kept_value() -> None:
    call = ToolCall(id="c", name="t", arguments={"a": [1]})
    twin = copy.copy(call)
    mine, theirs = call_arguments(twin), call_arguments(call)
    assert mine == theirs == {"a": [1]}
    assert mine is not theirs and mine["a"] is not theirs["a"]


def test_a_stamped_decision_is_what_replace_gives() -> None:
    from dataclasses import fields, replace

    from contextchef.dispatch._gate import _stamped
    from contextchef.dispatch._types import Allowed, GateStamp

    chef = ContextChef()
    chef.register_tools([EDIT], handlers={"edit": lambda **kw: "ok"})
    tool = chef.tools[0]
    call = ToolCall(id="c", name="edit", arguments={})
    stamp = GateStamp(view=chef.view, ctx=chef._dispatcher.context())  # type: ignore[attr-defined]
    for result in (
        Allowed(tool=tool, wire_name="edit", arguments={"a": 1}, via="namespace:n"),
        Denied(reason="no", code="blocked", tool=tool),
    ):
        mine, theirs = _stamped(result, call, stamp), replace(result, call=call, stamp=stamp)
        assert type(mine) is type(theirs)
        for f in fields(theirs):
            assert getattr(mine, f.name) is getattr(theirs, f.name), f.name


# --- the gate context, kept while nothing changed -----------------------------------------


def gated(chef: ContextChef, name: str = "edit", arguments: Any = None) -> Any:
    """The decision on a fresh call built from a dict (the reused path)."""
    return chef.check_tool_call(ToolCall(id="c", name=name, arguments=arguments or {}))


def code(check: Any) -> str:
    return check.code if isinstance(check, Denied) else "allowed"


def test_the_context_is_reused_only_while_nothing_it_reads_changed() -> None:
    chef = ContextChef()
    chef.register_tools([EDIT], handlers={"edit": lambda **kw: "ok"})
    dispatcher = chef._dispatcher  # type: ignore[attr-defined]
    first = dispatcher.context()
    assert dispatcher.context() is first
    chef.set_blocked_tools(["edit"])
    assert dispatcher.context() is not first
    assert dispatcher.context().blocked == ("edit",)


def test_blocklist_changes_between_calls_reach_the_gate() -> None:
    chef = ContextChef()
    chef.register_tools([EDIT], handlers={"edit": lambda **kw: "ok"})
    assert code(gated(chef)) == "allowed"
    chef.set_blocked_tools(["ed*"])
    assert code(gated(chef)) == "blocked"
    assert chef.execute(ToolCall(id="c", name="edit", arguments={})).result.is_error
    chef.set_blocked_tools([])
    assert code(gated(chef)) == "allowed"


def test_hooks_added_or_removed_between_calls_reach_the_gate() -> None:
    chef = ContextChef()
    chef.register_tools([EDIT], handlers={"edit": lambda **kw: "ok"})
    assert code(gated(chef)) == "allowed"

    @chef.before_tool_call
    def deny(event: ToolCallEvent) -> str:
        return "not now"

    assert code(gated(chef)) == "hook"
    chef._dispatcher.before.clear()  # type: ignore[attr-defined]  # a list changed in place
    assert code(gated(chef)) == "allowed"


def test_modes_registry_and_withdrawals_between_calls_reach_the_gate() -> None:
    chef = ContextChef(modes={"none": ["^nothing$"]})
    chef.register_tools([EDIT], handlers={"edit": lambda **kw: "ok"})
    assert code(gated(chef, "later")) == "unknown_tool"
    chef.register_tools([LATER], handlers={"later": lambda: "ok"})
    assert code(gated(chef, "later")) == "allowed"
    chef.set_mode("none")
    assert code(gated(chef)) == "not_in_mode"
    chef.set_mode(None)
    assert code(gated(chef)) == "allowed"
    chef._dispatcher.withdraw("edit", "the server removed it")  # type: ignore[attr-defined]
    check = gated(chef)
    assert code(check) == "withdrawn" and check.reason == "the server removed it"
    chef._dispatcher.withdraw("edit", None)  # type: ignore[attr-defined]
    assert code(gated(chef)) == "allowed"


def test_the_strategy_of_a_compile_between_calls_reaches_the_gate() -> None:
    chef = ContextChef()
    chef.register_tools([DEFERRED], handlers={"lookup": lambda q="": "found"})
    chef.append(user("hi"))
    assert code(gated(chef, "lookup", {"q": "a"})) == "not_loaded"  # client: defer_execute
    chef.compile("anthropic", strategy="flat")
    assert code(gated(chef, "lookup", {"q": "a"})) == "allowed"  # flat sent its definition
    chef.compile("anthropic", strategy="client")
    assert code(gated(chef, "lookup", {"q": "a"})) == "not_loaded"


def test_loads_between_calls_reach_the_gate_under_require_search() -> None:
    chef = ContextChef(deferred=DeferredConfig(require_search=True))
    chef.register_tools([DEFERRED], handlers={"lookup": lambda q="": "found"})
    via = {"tool_name": "lookup", "params": {"q": "a"}}
    assert code(gated(chef, "defer_execute", via)) == "not_loaded"
    chef.execute(ToolCall(id="s", name="tool_search", arguments={"tool_names": ["lookup"]}))
    assert code(gated(chef, "defer_execute", via)) == "allowed"
