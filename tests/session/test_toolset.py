"""SessionTools regressions: reserved names across namespaces and toolkits, loads under modes."""

from __future__ import annotations

import pytest

from contextchef import ContextChef, ToolCall, ToolNameConflictError, user

KIT = {
    "name": "db",
    "description": "Database tools.",
    "tools": [
        {
            "name": "db_read",
            "description": "Read rows.",
            "parameters": {"sql": {"type": "string"}},
            "annotations": {"readOnlyHint": True},
        },
        {"name": "db_drop", "description": "Drop a table.", "parameters": {"t": {}}},
    ],
}


def test_a_namespace_named_load_toolkit_blocks_toolkits_in_either_order() -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_namespaces(
        [{"name": "load_toolkit", "description": "x", "tools": [{"name": "a", "description": "a"}]}]
    )
    with pytest.raises(ToolNameConflictError, match="'load_toolkit', which toolkits need"):
        chef.register_toolkits([KIT])
    names = [t["name"] for t in chef.compile("anthropic").payload["tools"]]
    assert names.count("load_toolkit") == 1


def test_a_toolkit_load_under_read_only_shows_only_reachable_tools() -> None:
    chef = ContextChef(mode="read_only")
    chef.register_toolkits([KIT])
    done = chef.execute(ToolCall(id="c", name="load_toolkit", arguments='{"toolkit_name": "db"}'))
    assert not done.result.is_error
    assert "## db_read" in done.result.content
    assert "db_drop" not in done.result.content  # hidden by the mode: not even described
    assert done.result.content.startswith('Loaded toolkit "db" (1 tool).')
    drop = ToolCall(
        id="d", name="defer_execute", arguments='{"tool_name": "db_drop", "params": {"t": 1}}'
    )
    assert chef.check_tool_call(drop).decision == "denied"


def test_a_bad_template_or_group_text_is_refused_at_registration() -> None:
    from contextchef import TemplateError, UsageError

    chef = ContextChef()
    chef.set_history([user("hi")])  # compile needs a message
    bad = {"name": "t", "description": "Hi {{ missing }}", "input_schema": {"type": "object"}}
    with pytest.raises(TemplateError):
        chef.register_tools([{**bad, "template": True}])
    with pytest.raises(TemplateError):
        chef.register_runtime_tool({**bad, "template": True})
    lone = "\ud800"
    with pytest.raises(UsageError, match="valid Unicode"):
        chef.register_namespaces(
            [{"name": "ns", "description": lone, "tools": [{"name": "a", "description": "a"}]}]
        )
    assert chef.tools == ()  # a session without memory has no library tools either
    assert chef.take_tool_additions() == ()
    chef.compile("anthropic")  # nothing half-registered breaks a compile


@pytest.mark.parametrize("how", ["tools", "namespace", "runtime"])
def test_a_toolkit_tool_name_stays_reserved_until_the_toolkit_loads(how: str) -> None:
    chef = ContextChef()
    chef.register_toolkits([KIT])
    clash = {"name": "db_drop", "description": "mine", "input_schema": {"type": "object"}}
    with pytest.raises(ToolNameConflictError):
        if how == "tools":
            chef.register_tools([clash])
        elif how == "namespace":
            chef.register_namespaces([{"name": "ops", "description": "o", "tools": [clash]}])
        else:
            chef.register_runtime_tool(clash)
    added = chef.load_toolkit("db")  # the load cannot fail half-way
    assert sorted(t.name for t in added) == ["db_drop", "db_read"]
    assert chef.loaded_toolkits == ("db",)


def test_a_model_load_marks_only_the_shown_schemas_loaded() -> None:
    from contextchef import DeferredConfig

    chef = ContextChef(mode="read_only", deferred=DeferredConfig(require_search=True))
    chef.register_toolkits([KIT])
    chef.execute(ToolCall(id="c", name="load_toolkit", arguments='{"toolkit_name": "db"}'))
    assert chef.loaded_tools == ("db_read",)  # db_drop was hidden, so never shown
    chef.set_mode(None)
    drop = ToolCall(
        id="d", name="defer_execute", arguments='{"tool_name": "db_drop", "params": {"t": 1}}'
    )
    check = chef.check_tool_call(drop)
    assert check.decision == "denied" and check.code == "not_loaded"
