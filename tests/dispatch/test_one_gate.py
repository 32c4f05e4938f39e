"""Every tool the model can call passes the same gate: hooks see meta-tools and
library-owned tools as they see the user's."""

from __future__ import annotations

from typing import Any

from contextchef import ContextChef, Denied, InMemoryStore, ToolCall
from contextchef.dispatch._types import ToolCallEvent

DEFERRED = {
    "name": "lookup",
    "description": "Look a thing up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    "defer_loading": True,
}
KIT = {
    "name": "kit",
    "description": "A toolkit.",
    "tools": [{"name": "kit_tool", "description": "k", "parameters": {"x": {}}}],
}


def session(seen: list[str], deny: str | None = None) -> ContextChef:
    chef = ContextChef(memory=InMemoryStore())
    chef.register_tools([DEFERRED], handlers={"lookup": lambda q="": f"found {q}"})
    chef.register_toolkits([KIT])

    @chef.before_tool_call
    def audit(event: ToolCallEvent) -> str | None:
        seen.append(f"before:{event.wire_name}")
        return "not now" if event.wire_name == deny else None

    @chef.after_tool_call
    def after(event: ToolCallEvent, result: Any) -> None:
        seen.append(f"after:{event.wire_name}")

    return chef


def call(name: str, arguments: str) -> ToolCall:
    return ToolCall(id="c", name=name, arguments=arguments)


def test_hooks_see_meta_tools_library_tools_and_the_real_target() -> None:
    seen: list[str] = []
    chef = session(seen)
    chef.execute(call("tool_search", '{"tool_names": ["lookup"]}'))
    chef.execute(call("defer_execute", '{"tool_name": "lookup", "params": {"q": "a"}}'))
    chef.execute(call("load_toolkit", '{"toolkit_name": "kit"}'))
    chef.execute(call("create_memory", '{"key": "k", "value": "v"}'))
    assert seen == [
        "before:tool_search",
        "after:tool_search",
        "before:lookup",  # defer_execute is resolved: hooks see the real tool
        "after:lookup",
        "before:load_toolkit",
        "after:load_toolkit",
        "before:create_memory",
        "after:create_memory",
    ]


def test_a_before_hook_can_deny_a_meta_tool_call() -> None:
    seen: list[str] = []
    chef = session(seen, deny="load_toolkit")
    done = chef.execute(call("load_toolkit", '{"toolkit_name": "kit"}'))
    assert isinstance(done.check, Denied) and done.check.code == "hook"
    assert done.result.content == "not now"
    assert chef.loaded_toolkits == ()  # denied: nothing was loaded


def test_integral_floats_reach_handlers_as_integers() -> None:
    """JSON Schema counts 2.0 as an integer: the handler gets 2, also nested in lists."""
    from contextchef import ContextChef, ToolCall

    def take(n: int, ids: list[int]) -> str:
        """Echo the types.

        Args:
            n: A count.
            ids: Some ids.
        """
        return f"{n!r} {ids!r}"

    chef = ContextChef()
    chef.register_tools([take])
    call = ToolCall(id="c", name="take", arguments='{"n": 2.0, "ids": [1.0, 3]}')
    assert chef.execute(call).result.content == "2 [1, 3]"
