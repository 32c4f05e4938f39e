"""Break-it 23: the name `malformed_tool_call` and names no provider takes, on every path.

* A tool may not be registered as ``malformed_tool_call``: it is the name a call no tool
  can answer is recorded under, so such a tool was offered and never callable.
* `check_tool_call` answers a name no provider takes (checked directly, never ingested)
  as the ingest path does: the rule, and the tool the model likely meant.
* `fake_for` takes the `Ids` a session switching providers shares among its fakes.
"""

from __future__ import annotations

import pytest

from contextchef import Allowed, ContextChef, Denied, ToolNameConflictError
from contextchef.testing import fake_for, text
from contextchef.testing._replies import Ids


def grep(pattern: str) -> str:
    """Search the code base.

    Args:
        pattern: A regular expression.
    """
    return pattern


def malformed_tool_call(pattern: str) -> str:
    """A tool that takes the name calls no tool can answer are recorded under."""
    return pattern


def test_a_tool_named_malformed_tool_call_is_refused_at_registration() -> None:
    chef = ContextChef()
    with pytest.raises(ToolNameConflictError, match="'malformed_tool_call'"):
        chef.register_tools([malformed_tool_call])
    chef.register_tools([grep])  # nothing half-registered: the session goes on
    assert isinstance(
        chef.check_tool_call({"name": "grep", "arguments": {"pattern": "a"}}), Allowed
    )


@pytest.mark.parametrize("name", ["functions.grep", "grep<|channel|>commentary", "名前.grep"])
def test_check_tool_call_names_the_rule_and_the_tool_meant(name: str) -> None:
    chef = ContextChef()
    chef.register_tools([grep])
    decision = chef.check_tool_call({"name": name, "arguments": {"pattern": "a"}})
    assert isinstance(decision, Denied) and decision.code == "unknown_tool"
    assert decision.reason.startswith(f'Unknown tool "{name}": no tool can have this name')
    assert 'The tool with this name is "grep"' in decision.reason


def test_check_tool_call_caps_a_huge_illegal_name() -> None:
    chef = ContextChef()
    chef.register_tools([grep])
    decision = chef.check_tool_call({"name": "x." * 5_000, "arguments": {}})
    assert isinstance(decision, Denied)
    reason = decision.reason
    assert "(10000 chars)" in reason.replace(",", "") and len(reason) < 600


def test_fake_for_shares_ids_across_providers() -> None:
    ids = Ids()
    chat, gemini = fake_for("openai", ids=ids), fake_for("gemini", ids=ids)
    assert chat.script(text("a")) is chat and gemini.script(text("b")) is gemini
    assert fake_for("responses", ids=ids) is not None
