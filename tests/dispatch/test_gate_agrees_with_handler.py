"""The gate allows only what the handler then runs (break-it round 27).

A 401-digit integer literal passed the gate while ``1e400`` was refused, and was replayed
to Gemini, Interactions and Anthropic as a 401-digit JSON number; for a ``float``
parameter `check_tool_call` said Allowed and `run_tools` refused ("Input should be a
valid number"), and ``1e20`` for an ``int`` parameter alike. Now the one JSON check
refuses integers past a double's range as it refuses ``1e400``, and the gate asks a
function tool's parameter types after its schema, so before-hooks never approve a call
that never runs.
"""

from __future__ import annotations

import datetime
import json
import sys
from typing import Any

import pytest

from contextchef import Allowed, ContextChef, Denied, ToolCall, user
from contextchef.dispatch._types import ToolCallEvent
from contextchef.testing import FakeAnthropic, FakeOpenAIChat, raw, text
from sdk_send import send

BIG = 10**400
"""An integer no double holds (what ``1e400`` is refused for)."""

SEEN: list[Any] = []


def scale(x: float) -> str:
    """Scale a number.

    Args:
        x: The number.
    """
    SEEN.append(x)
    return repr(x * 2)


def count(n: int, day: datetime.date) -> str:
    """Count up to a number on a day.

    Args:
        n: A whole number.
        day: The day.
    """
    SEEN.append(n)
    return f"{n} on {day}"


LIMIT = {
    "name": "set_limit",
    "description": "Set the limit.",
    "input_schema": {"type": "object", "properties": {"v": {"type": "number"}}, "required": ["v"]},
}


def session() -> tuple[ContextChef, list[str]]:
    """A chef with the tools above, and the names its before-hook approved."""
    chef = ContextChef()
    chef.register_tools([scale, count, LIMIT], handlers={"set_limit": lambda v: f"v={v}"})
    chef.set_history([user("go")])
    approved: list[str] = []

    @chef.before_tool_call
    def hook(event: ToolCallEvent) -> None:
        approved.append(event.tool.name)

    return chef, approved


@pytest.mark.parametrize("literal", ["1e400", str(BIG), "-" + str(BIG)])
def test_a_number_no_double_holds_is_refused_by_the_gate(literal: str) -> None:
    chef, approved = session()
    for name, key in (("set_limit", "v"), ("scale", "x")):
        call = ToolCall(id="c", name=name, arguments=f'{{"{key}": {literal}}}')
        check = chef.check_tool_call(call)
        assert isinstance(check, Denied) and check.code == "malformed_arguments", check
        assert "too large to represent" in check.reason
        result = chef.run_tools([call], append=False)[0]
        assert result.is_error and "too large to represent" in result.content
    assert approved == []
    assert SEEN == []


def test_the_boundary_is_a_doubles_range_and_past_2_53_is_kept_exactly() -> None:
    chef, _ = session()
    top = int(sys.float_info.max)
    allowed = chef.check_tool_call(ToolCall(id="c", name="set_limit", arguments=f'{{"v": {top}}}'))
    assert isinstance(allowed, Allowed) and allowed.arguments == {"v": top}
    over = chef.check_tool_call(ToolCall(id="c", name="set_limit", arguments=f'{{"v": {top + 1}}}'))
    assert isinstance(over, Denied) and "too large to represent" in over.reason
    # integers past 2**53 are not refused (see `contextchef._json.json_problem`): the
    # handler gets the exact value the model wrote
    SEEN.clear()
    day = '"2026-12-05"'
    (result,) = chef.run_tools(
        [ToolCall(id="c", name="count", arguments=f'{{"n": {2**53 + 1}, "day": {day}}}')],
        append=False,
    )
    assert (result.is_error, SEEN) == (False, [2**53 + 1])


@pytest.mark.parametrize(
    ("name", "arguments", "problem"),
    [
        ("count", '{"n": 1e20, "day": "2026-12-05"}', "- n: Unable to parse input string"),
        ("count", '{"n": 2, "day": "not a day"}', "- day: Input should be a valid date"),
    ],
    ids=["1e20-for-int", "bad-date"],
)
def test_what_the_parameter_types_refuse_is_refused_before_the_hooks(
    name: str, arguments: str, problem: str
) -> None:
    chef, approved = session()
    SEEN.clear()
    call = ToolCall(id="c", name=name, arguments=arguments)
    check = chef.check_tool_call(call)
    assert isinstance(check, Denied) and check.code == "invalid_arguments", check
    assert check.reason.startswith(f'Invalid arguments for tool "{name}":\n{problem}')
    result = chef.run_tools([call], append=False)[0]
    assert result.is_error and result.content == check.reason
    assert approved == [] and SEEN == []


def test_what_the_types_take_is_allowed_and_run_as_the_gate_said() -> None:
    chef, approved = session()
    SEEN.clear()
    calls = [
        ToolCall(id="a", name="count", arguments='{"n": 2.0, "day": "2026-12-05"}'),
        ToolCall(id="b", name="scale", arguments='{"x": 3}'),
        ToolCall(id="c", name="set_limit", arguments='{"v": 1e300}'),
    ]
    assert all(isinstance(chef.check_tool_call(c), Allowed) for c in calls)
    results = chef.run_tools(calls, append=False)
    assert [r.content for r in results] == ["2 on 2026-12-05", "6.0", "v=1e+300"]
    assert SEEN == [2, 3.0]
    assert approved == ["count", "scale", "set_limit"] * 2  # checked, then run


def test_a_stored_call_with_a_huge_integer_is_answered_and_replayed_as_empty() -> None:
    """Two turns through the official SDKs: the call is kept, answered, sent as ``{}``."""
    chef, _ = session()
    big_call = {"type": "tool_use", "id": "toolu_1", "name": "set_limit", "input": {"v": BIG}}
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [big_call],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    fake = FakeAnthropic().script(raw(reply), text("Done."))
    payload = chef.compile("anthropic", model="claude-sonnet-4-5").payload
    calls = chef.ingest(send("anthropic", fake, payload))
    (result,) = chef.run_tools(calls)
    assert result.is_error and "too large to represent" in result.content
    second = chef.compile("anthropic", model="claude-sonnet-4-5").payload
    chef.ingest(send("anthropic", fake, second))
    assert fake.violations == ()
    chef.append(user("next"))
    for target in ("anthropic", "gemini", "gemini-interactions"):
        sent = json.dumps(chef.compile(target, model="m").payload)
        assert str(BIG) not in sent, target


def test_a_chat_call_with_a_huge_integer_is_answered_and_kept_as_written() -> None:
    chef, _ = session()
    arguments = f'{{"v": {BIG}}}'
    reply = {
        "id": "cc",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-5.5",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "set_limit", "arguments": arguments},
                        }
                    ],
                },
            }
        ],
    }
    fake = FakeOpenAIChat().script(raw(reply), text("Done."))
    calls = chef.ingest(send("openai", fake, chef.compile("openai", model="gpt-5.5").payload))
    (result,) = chef.run_tools(calls)
    assert result.is_error and "too large to represent" in result.content
    chef.ingest(send("openai", fake, chef.compile("openai", model="gpt-5.5").payload))
    assert fake.violations == ()
    assert chef.history[1].parts[0].arguments == arguments  # type: ignore[union-attr]
    chef.append(user("next"))
    assert str(BIG) not in json.dumps(chef.compile("gemini", model="m").payload)
