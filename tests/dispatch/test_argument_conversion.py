"""Arguments the JSON Schema allows but the function's types refuse are invalid arguments.

Break-it round 6: ``{"n": 1e20}`` passes the gate's schema check for ``n: int`` (JSON
Schema counts a float with no fraction as an integer) and pydantic then refuses it as too
large; the model was told the tool *raised*. It is told its arguments are invalid, by
parameter name, and the function never runs; what the function body raises is unchanged.
Since break-it round 27 the gate itself refuses them (test_gate_agrees_with_handler.py).
"""

from __future__ import annotations

import asyncio

import pytest

from contextchef import ContextChef, ToolCall, user

RAN: list[int] = []


def calc(n: int) -> str:
    """Compute.

    Args:
        n: A whole number.
    """
    RAN.append(n)
    return f"n={n}"


async def acalc(n: int) -> str:
    """Compute, asynchronously.

    Args:
        n: A whole number.
    """
    RAN.append(n)
    return f"n={n}"


def failing(n: int) -> str:
    """Fail.

    Args:
        n: A whole number.
    """
    raise ValueError(f"no {n}")


@pytest.mark.parametrize("arguments", ['{"n": 1e20}', '{"n": 1e300}'])
def test_an_integer_too_large_for_the_type_is_answered_as_invalid_arguments(arguments: str) -> None:
    RAN.clear()
    chef = ContextChef()
    chef.register_tools([calc, acalc])
    chef.set_history([user("go")])
    for name in ("calc", "acalc"):
        result = chef.execute(ToolCall(id="c1", name=name, arguments=arguments)).result
        assert result.is_error
        assert result.content.startswith(
            f'Invalid arguments for tool "{name}":\n- n: Unable to parse input string as an '
            "integer, exceeded maximum size\nExpected input schema:"
        )
        outcome = asyncio.run(chef.aexecute(ToolCall(id="c2", name=name, arguments=arguments)))
        assert outcome.result.content == result.content
    assert RAN == []


def test_whole_floats_still_convert_and_body_errors_still_read_as_raised() -> None:
    RAN.clear()
    chef = ContextChef()
    chef.register_tools([calc, failing])
    chef.set_history([user("go")])
    ok = chef.execute(ToolCall(id="c1", name="calc", arguments='{"n": 2.0}')).result
    assert (ok.is_error, ok.content) == (False, "n=2")
    raised = chef.execute(ToolCall(id="c2", name="failing", arguments='{"n": 3}')).result
    assert raised.is_error
    assert raised.content == 'Tool "failing" raised ValueError: no 3'
    assert RAN == [2]
