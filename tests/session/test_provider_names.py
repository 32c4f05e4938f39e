"""Tool definitions a provider would take otherwise than the session (break-it round 27).

* A registered tool named like Anthropic's server tool search (``tool_search_tool_bm25``,
  ``tool_search_tool_regex``) would sit beside it under ``anthropic-native``: two tools of
  one name, a 400. Those names are reserved like contextchef's own tools.
* ``{"type": "custom"}`` without an ``input_schema`` is a Responses custom tool (free-form
  text input): it was registered as a function with no parameters. It is refused, naming
  the tool; Anthropic's ``type: custom`` client tools (with a schema) register as before.
"""

from __future__ import annotations

import pytest

from contextchef import CatalogFormatError, ContextChef, ToolNameConflictError, user
from contextchef.providers._server_names import SERVER_TOOL_NAMES
from contextchef.providers.anthropic._render import SEARCH_TOOLS
from contextchef.testing import FakeAnthropic, text
from sdk_send import send

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def test_the_reserved_names_are_the_server_tools_the_renderer_declares() -> None:
    assert {tool["name"] for tool in SEARCH_TOOLS.values()} == SERVER_TOOL_NAMES


@pytest.mark.parametrize("name", sorted(SERVER_TOOL_NAMES))
@pytest.mark.parametrize("how", ["tools", "runtime"])
def test_a_tool_named_like_a_server_tool_is_refused(name: str, how: str) -> None:
    chef = ContextChef(default_defer=True)
    chef.register_tools([{"name": "fetch", "description": "Fetch a URL.", "input_schema": SCHEMA}])
    tool = {"name": name, "description": "Mine.", "input_schema": SCHEMA}
    with pytest.raises(ToolNameConflictError, match=name):
        if how == "tools":
            chef.register_tools([tool])
        else:
            chef.register_runtime_tool(tool)
    # the session is as before: its native request is one the API takes
    chef.set_history([user("fetch it")])
    for strategy in ("anthropic-native", "anthropic-native-regex"):
        request = chef.compile("anthropic", model="claude-opus-5-5", strategy=strategy)
        names = [t["name"] for t in request.payload["tools"]]
        assert len(names) == len(set(names)) and "fetch" in names
        fake = FakeAnthropic().script(text("ok"))
        send("anthropic", fake, request.payload)
        assert fake.violations == ()


def test_a_responses_custom_tool_is_refused_naming_it() -> None:
    chef = ContextChef()
    custom = {"type": "custom", "name": "apply_patch", "description": "A free-form patch."}
    with pytest.raises(CatalogFormatError, match="'apply_patch': type 'custom' without"):
        chef.register_tools([custom])
    with pytest.raises(CatalogFormatError, match="apply_patch"):
        chef.register_tools([{**custom, "format": {"type": "text"}}])
    assert chef.tools == ()


def test_an_anthropic_custom_tool_with_a_schema_registers() -> None:
    chef = ContextChef()
    (tool,) = chef.register_tools(
        [{"type": "custom", "name": "lookup", "description": "Look up.", "input_schema": SCHEMA}]
    )
    assert (tool.name, tool.input_schema["properties"]) == ("lookup", SCHEMA["properties"])
    chef.set_history([user("look it up")])
    fake = FakeAnthropic().script(text("done"))
    send("anthropic", fake, chef.compile("anthropic", model="claude-opus-5-5").payload)
    assert fake.violations == ()
