"""Functions from a module with ``from __future__ import annotations`` register and run.

Break-it round 22: under PEP 563 every annotation is a string; they were handed to
pydantic unresolved, so ``n: Optional[int]`` (``Optional`` imported at module level),
``typing.Optional[int]``, ``datetime.date`` and a module-level pydantic model were all
refused (``a_args is not fully defined; you should define Optional``). They are resolved
in the function's own module, as `typing.get_type_hints` does, through bound methods,
``functools.partial``, ``functools.wraps`` wrappers and async functions; a name that
cannot be resolved is refused naming the tool, the parameter and the name.

This module itself uses postponed annotations: that is the point. Fails on main (every
registration below raises `InvalidToolError`), passes with ``tools/_callable.py``.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import json
import typing
from collections.abc import Callable
from typing import Annotated, Any, Optional

import anthropic
import pytest
from pydantic import BaseModel, Field

from contextchef import TARGETS, ContextChef, InvalidToolError, ToolCall, user
from contextchef.testing import fake_for, httpx_for, text, tool_calls
from sdk_check import sdk_problems
from sdk_send import send

HX = httpx_for(anthropic)


def find(n: Optional[int] = None) -> str:  # noqa: UP045 - the spelling the bug report used
    """Find things.

    Args:
        n: How many.
    """
    return f"find n={n!r}"


def count(t: typing.Optional[int] = None) -> str:  # noqa: UP045
    """Count things."""
    return f"count t={t!r}"


def on_day(when: datetime.date) -> str:
    """Plan a day.

    Args:
        when: The day.
    """
    return f"{type(when).__name__} {when.isoformat()}"


def describe(item: Item, tags: list[Tag] | None = None) -> str:
    """Describe an item (Item and Tag are defined below: forward references)."""
    return f"{type(item).__name__} {item.name} {[t.label for t in tags or []]}"


def rate(stars: Annotated[int, Field(description="Stars, 1 to 5.", ge=1, le=5)]) -> str:
    """Rate something."""
    return f"{stars} stars"


def scale(factor: int, value: Optional[float] = None) -> str:  # noqa: UP045
    """Scale a value.

    Args:
        factor: The factor.
        value: The value.
    """
    return f"{factor * (value or 0):g}"


async def fetch(when: datetime.date | None = None) -> str:
    """Fetch a day's notes."""
    await asyncio.sleep(0)
    return f"fetched {when}"


def logged(func: Callable[..., str]) -> Callable[..., str]:
    """A decorator as users write them: ``(*args, **kwargs)`` under `functools.wraps`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        return "logged " + func(*args, **kwargs)

    return wrapper


@logged
def stamp(item: Item, when: datetime.date) -> str:
    """Stamp an item with a day."""
    return f"{item.name}@{when.isoformat()}"


class Shelf:
    """Tools as bound methods."""

    def take(self, item: Item, count: Optional[int] = None) -> str:  # noqa: UP045
        """Take items off the shelf.

        Args:
            item: What to take.
            count: How many.
        """
        return f"took {count} {item.name}"


def broken(x: NoSuchType) -> str:  # type: ignore[name-defined]  # noqa: F821
    """Its annotation names nothing the module defines."""
    return "never"


class Item(BaseModel):
    name: str


class Tag(BaseModel):
    label: str


def functions() -> list[Callable[..., Any]]:
    return [
        find,
        count,
        on_day,
        describe,
        rate,
        functools.partial(scale, 3),
        fetch,
        stamp,
        Shelf().take,
    ]


CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("find", {"n": 2}, "find n=2"),
    ("count", {}, "count t=None"),
    ("on_day", {"when": "2026-12-05"}, "date 2026-12-05"),
    ("describe", {"item": {"name": "cup"}, "tags": [{"label": "red"}]}, "Item cup ['red']"),
    ("rate", {"stars": 4}, "4 stars"),
    ("scale", {"value": 1.5}, "4.5"),
    ("fetch", {"when": "2026-01-02"}, "fetched 2026-01-02"),
    ("stamp", {"item": {"name": "box"}, "when": "2026-03-04"}, "logged box@2026-03-04"),
    ("take", {"item": {"name": "pen"}, "count": 2}, "took 2 pen"),
]


def test_the_break_it_functions_register_with_the_schema_their_types_give() -> None:
    chef = ContextChef()
    tools = {t.name: t for t in chef.register_tools(functions())}
    assert sorted(tools) == sorted(name for name, _, _ in CALLS)
    assert tools["find"].input_schema == {
        "type": "object",
        "properties": {
            "n": {
                "anyOf": [{"type": "integer"}, {"type": "null"}],
                "default": None,
                "description": "How many.",
            },
        },
        "additionalProperties": False,
    }
    assert tools["on_day"].input_schema["properties"]["when"] == {
        "type": "string",
        "format": "date",
        "description": "The day.",
    }
    assert tools["rate"].input_schema["properties"]["stars"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 5,
        "description": "Stars, 1 to 5.",  # from Annotated[..., Field(...)], kept
    }
    item = {"properties": {"name": {"type": "string"}}, "required": ["name"], "type": "object"}
    assert tools["describe"].input_schema["$defs"]["Item"] == item
    assert tools["take"].input_schema["required"] == ["item"]  # no self
    assert set(tools["scale"].input_schema["properties"]) == {"value"}  # 3 is bound
    assert tools["scale"].description == "Scale a value."  # not functools.partial's doc
    assert tools["stamp"].description == "Stamp an item with a day."
    assert set(tools["stamp"].input_schema["properties"]) == {"item", "when"}


@pytest.mark.parametrize("target", TARGETS)
def test_a_model_calls_every_postponed_annotation_tool_through_the_sdk(target: str) -> None:
    chef = ContextChef()
    chef.register_tools(functions())
    chef.set_history([user("Use every tool once.")])
    fake = fake_for(target).script(
        tool_calls(*[(name, args) for name, args, _ in CALLS]), text("All done.")
    )
    payload = chef.compile(target, model="m").payload
    assert sdk_problems(target, payload) == []
    calls = chef.ingest(send(target, fake, payload))
    assert [c.name for c in calls] == [name for name, _, _ in CALLS]
    results = chef.run_tools(calls)  # the gate, then each handler
    assert [(r.is_error, r.content) for r in results] == [(False, want) for _, _, want in CALLS]
    payload = chef.compile(target, model="m").payload
    assert sdk_problems(target, payload) == []
    assert chef.ingest(send(target, fake, payload)) == ()
    assert fake.violations == ()
    assert len(fake.requests) == 2


def test_async_execution_converts_the_same_way() -> None:
    chef = ContextChef()
    chef.register_tools(functions())
    chef.set_history([user("go")])
    for i, (name, args, want) in enumerate(CALLS):
        call = ToolCall(id=f"c{i}", name=name, arguments=json.dumps(args))
        result = asyncio.run(chef.aexecute(call)).result
        assert (result.is_error, result.content) == (False, want)


def test_a_name_the_module_does_not_define_is_refused_naming_tool_parameter_and_name() -> None:
    chef = ContextChef()
    with pytest.raises(InvalidToolError) as caught:
        chef.register_tools([broken])
    message = str(caught.value)
    assert "tool 'broken'" in message
    assert "parameter 'x'" in message
    assert "'NoSuchType' is not defined" in message
    assert __name__ in message  # the module it was looked up in
    assert chef.tools == ()  # nothing half-registered


def test_a_closure_sees_the_names_it_captures_and_refuses_the_others() -> None:
    class Local(BaseModel):
        size: int

    def inner(box: Local) -> str:
        """Inner."""
        return f"{Local.__name__} {box.size}"  # captured: resolvable

    def hidden(box: Local) -> str:
        """Hidden."""
        return "never"  # not captured: no namespace holds Local

    chef = ContextChef()
    chef.register_tools([inner])
    chef.set_history([user("go")])
    result = chef.execute(ToolCall(id="c", name="inner", arguments={"box": {"size": 3}})).result
    assert (result.is_error, result.content) == (False, "Local 3")
    with pytest.raises(InvalidToolError, match=r"parameter 'box'.*'Local' is not defined"):
        ContextChef().register_tools([hidden])
