"""Break-it 23: the name `malformed_tool_call` and names no provider takes, on every path.

* A tool may not be registered as ``malformed_tool_call``: it is the name a call no tool
  can answer is recorded under, so such a tool was offered and never callable.
* `check_tool_call` answers a name no provider takes (checked directly, never ingested)
  as the ingest path does: the rule, and the tool the model likely meant.
* `fake_for` takes the `Ids` a session switching providers shares among its fakes.
"""

from __future__ import annotations

import pytest

from contextchef import Allowed, ContextChef, Denied, ToolNameConflictError, user
from contextchef.testing import FakeProvider, fake_for, text
from contextchef.testing._replies import Ids
from sdk_send import send


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


def _reply_id(fake: FakeProvider, target: str) -> str:
    chef = ContextChef()
    chef.register_tools([grep])
    chef.append(user("Find the TODOs."))
    reply = send(target, fake, chef.compile(target, model=MODELS[target]).payload)
    return str(getattr(reply, "id", None) or reply.response_id)


MODELS = {"responses": "gpt-5.6", "gemini": "gemini-2.5-pro"}


@pytest.mark.parametrize("shared", [True, False])
def test_fake_for_shares_ids_across_providers(shared: bool) -> None:
    """Round 23: one fake per target, each counting from 1, gave two providers' replies
    one response id; fakes given one `Ids` never repeat one."""
    ids = Ids() if shared else None
    first = fake_for("responses", ids=ids).script(text("a"), text("b"))
    second = fake_for("gemini", ids=ids).script(text("c"))
    taken = [_reply_id(first, "responses"), _reply_id(first, "responses")]
    taken.append(_reply_id(second, "gemini"))
    assert (len(set(taken)) == len(taken)) is shared


def test_a_defer_execute_target_that_is_no_wire_name_is_not_called_impossible() -> None:
    """Break-it 37: ``defer_execute`` of "I" + U+0307 (no tool's name, but a tool's own name
    may be any text: "İ" and "i̇" are registered and run) was answered "no tool can have
    this name"."""
    mk = lambda n: {"name": n, "description": "tool", "input_schema": {"type": "object"}}  # noqa: E731
    chef = ContextChef(default_defer=True)
    chef.register_tools([mk("İ"), mk("i̇")])
    call = {"name": "defer_execute", "arguments": {"tool_name": "I\u0307", "params": {}}}
    decision = chef.check_tool_call(call)
    assert isinstance(decision, Denied) and decision.code == "unknown_tool"
    assert decision.reason.startswith('Unknown tool "I\u0307": no tool has this name, nor')
    assert "no tool can have" not in decision.reason
    for name in ("İ", "i̇"):  # the registered own names still run
        call = {"name": "defer_execute", "arguments": {"tool_name": name, "params": {}}}
        assert not isinstance(chef.check_tool_call(call), Denied)
