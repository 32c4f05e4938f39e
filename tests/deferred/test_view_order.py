"""The view's tool order depends on the registered tools, never on when they came."""

from __future__ import annotations

import json

from contextchef import TARGETS, ContextChef, user

OPEN = {"type": "object"}


def build(extend_first: bool) -> ContextChef:
    chef = ContextChef()
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_tools([{"name": "read_file", "description": "r", "input_schema": OPEN}])
    chef.register_namespaces(
        [{"name": "fs", "description": "f", "tools": [{"name": "ls", "description": "l"}]}]
    )
    if extend_first:
        chef.compile("anthropic")  # a built view: later runtime tools extend it in place
    for name in ("zz_tool", "aa_tool", "mm_tool"):
        chef.register_runtime_tool({"name": name, "description": name, "input_schema": OPEN})
    return chef


def test_runtime_tools_land_where_a_rebuild_puts_them() -> None:
    extended, rebuilt = build(True), build(False)
    for strategy in ("flat", "client"):
        for target in TARGETS:
            a = extended.compile(target, strategy=strategy).payload.get("tools")
            b = rebuilt.compile(target, strategy=strategy).payload.get("tools")
            assert json.dumps(a) == json.dumps(b), (target, strategy)
    names = [t["name"] for t in extended.compile("anthropic", strategy="flat").payload["tools"]]
    assert names == ["read_file", "aa_tool", "mm_tool", "zz_tool", "fs"]
    native = extended.compile("anthropic", strategy="anthropic-native").payload["tools"]
    fresh = ContextChef()
    fresh.register_tools([{"name": "read_file", "description": "r", "input_schema": OPEN}])
    fresh.register_namespaces(
        [{"name": "fs", "description": "f", "tools": [{"name": "ls", "description": "l"}]}]
    )
    for name in ("zz_tool", "aa_tool", "mm_tool"):
        fresh.register_runtime_tool({"name": name, "description": name, "input_schema": OPEN})
    fresh.restore(json.loads(json.dumps(extended.snapshot())), allow_unsigned=True)
    assert fresh.compile("anthropic", strategy="anthropic-native").payload["tools"] == native
