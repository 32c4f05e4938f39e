"""Positional-only parameters are passed by position: a schema-valid call runs.

Break-it round 22: ``def add_one(n: int, /)`` registered with ``{n: integer, required}``,
and the valid call ``{"n": 1}`` was answered ``Tool "add_one" raised ValidationError ...
missing_positional_only_argument``: the model was told the tool crashed on valid input.
The runner now passes positional-only parameters by position (sync and async, through
`execute`, `run_tools` and their async forms); ``*args`` and ``**kwargs`` stay refused at
registration. Fails on main (every call below is answered as raised), passes with
``tools/_callable.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

from contextchef import (
    ContextChef,
    InvalidToolError,
    ToolCall,
    assistant,
    user,
)
from contextchef.testing import FakeOpenAIChat, httpx_for, text, tool_calls
from sdk_check import sdk_problems

SEEN: list[tuple[Any, ...]] = []


def add_one(n: int, /) -> int:
    """Add one."""
    SEEN.append((n,))
    return n + 1


async def join(a: str, b: str = "-", /, *, times: int = 1) -> str:
    """Join two strings.

    Args:
        a: The first string.
        b: The second string.
        times: How often.
    """
    await asyncio.sleep(0)
    SEEN.append((a, b, times))
    return (a + b) * times


def window(start: int = 0, stop: int = 10, /, step: int = 1) -> list[int]:
    """A range of numbers."""
    SEEN.append((start, stop, step))
    return list(range(start, stop, step))


def varargs(*numbers: int) -> int:
    """Sum."""
    return sum(numbers)


def options(name: str, **extra: str) -> str:
    """Options."""
    return name


CASES: list[tuple[str, dict[str, Any], str, tuple[Any, ...]]] = [
    ("add_one", {"n": 1}, "2", (1,)),
    ("add_one", {"n": 41.0}, "42", (41,)),  # converted to int before it is passed
    ("join", {"a": "x"}, "x-", ("x", "-", 1)),
    ("join", {"a": "x", "b": "y", "times": 2}, "xyxy", ("x", "y", 2)),
    ("window", {}, "[0,1,2,3,4,5,6,7,8,9]", (0, 10, 1)),
    ("window", {"stop": 3}, "[0,1,2]", (0, 3, 1)),  # start takes its default, by position
    ("window", {"start": 2, "stop": 9, "step": 3}, "[2,5,8]", (2, 9, 3)),
]


def session() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([add_one, join, window])
    chef.set_history([user("go")])
    return chef


def test_the_schema_lists_positional_only_parameters_by_name() -> None:
    tools = {t.name: t for t in session().tools}
    assert tools["add_one"].input_schema == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    assert tools["join"].input_schema["required"] == ["a"]
    assert set(tools["join"].input_schema["properties"]) == {"a", "b", "times"}


@pytest.mark.parametrize(("name", "arguments", "want", "seen"), CASES)
def test_a_schema_valid_call_runs_sync_and_async(
    name: str, arguments: dict[str, Any], want: str, seen: tuple[Any, ...]
) -> None:
    chef = session()
    SEEN.clear()
    result = chef.execute(ToolCall(id="c1", name=name, arguments=arguments)).result
    assert (result.is_error, result.content) == (False, want)
    outcome = asyncio.run(chef.aexecute(ToolCall(id="c2", name=name, arguments=arguments)))
    assert (outcome.result.is_error, outcome.result.content) == (False, want)
    assert [seen, seen] == SEEN


def test_types_the_parameter_refuses_still_read_as_invalid_arguments() -> None:
    chef = session()
    SEEN.clear()
    result = chef.execute(ToolCall(id="c", name="add_one", arguments='{"n": 1e20}')).result
    assert result.is_error
    assert result.content.startswith('Invalid arguments for tool "add_one":\n- n: ')
    assert SEEN == []


def test_a_model_turn_through_the_openai_sdk_runs_every_call() -> None:
    chef = session()
    SEEN.clear()
    fake = FakeOpenAIChat().script(
        tool_calls(*[(name, args) for name, args, _, _ in CASES]), text("Done.")
    )
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    payload = chef.compile("openai", model="m").payload
    assert sdk_problems("openai", payload) == []
    calls = chef.ingest(client.chat.completions.create(**payload))
    results = chef.run_tools(calls)  # the gate, then the handlers; results appended
    assert [(r.is_error, r.content) for r in results] == [(False, want) for _, _, want, _ in CASES]
    again = chef.compile("openai", model="m").payload
    assert chef.ingest(client.chat.completions.create(**again)) == ()
    assert fake.violations == ()
    sent = [m for m in fake.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in sent] == [want for _, _, want, _ in CASES]


def test_arun_tools_runs_them_concurrently_too() -> None:
    chef = session()
    calls = [ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a, _, _) in enumerate(CASES)]
    chef.append(assistant(tool_calls=calls))
    results = asyncio.run(chef.arun_tools(calls))
    assert [(r.is_error, r.content) for r in results] == [(False, want) for _, _, want, _ in CASES]


@pytest.mark.parametrize("func", [varargs, options])
def test_star_args_and_star_star_kwargs_stay_refused(func: Any) -> None:
    with pytest.raises(InvalidToolError, match=r"\*args/\*\*kwargs cannot be described"):
        ContextChef().register_tools([func])
