"""What a handler returns becomes result text deterministically, never a Python repr.

Regression (breakit1 s1): ``object()``, bytes and ``float("nan")`` returned by a handler
became ``str(value)`` in the history, e.g. ``<object object at 0x7f...>``, an address
that differs per run (so the prefix of the next request did too).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from typing import Any

import pytest

from contextchef import ContextChef, ToolCall

TAIL = "; a tool returns text, JSON data (dict, list, str, int, float, bool, None) or a ToolResult"


@dataclasses.dataclass
class Point:
    x: int
    label: str


def _loop() -> dict[str, Any]:
    d: dict[str, Any] = {}
    d["self"] = d
    return d


CASES: list[tuple[str, Any, bool, str]] = [
    ("obj", object(), True, 'Tool "t_obj" returned a value of type object, which has no JSON form'),
    ("set", {1, 2}, True, 'Tool "t_set" returned a value of type set, which has no JSON form'),
    ("nan", math.nan, True, 'Tool "t_nan" returned NaN or an infinity, which JSON cannot carry'),
    (
        "inf",
        [1, -math.inf],
        True,
        'Tool "t_inf" returned NaN or an infinity, which JSON cannot carry',
    ),
    ("bin", b"\xff\x00", True, 'Tool "t_bin" returned 2 bytes that are not UTF-8 text'),
    ("loop", _loop(), True, 'Tool "t_loop" returned a value that contains itself'),
    ("utf8", b"caf\xc3\xa9", False, "café"),
    ("nested", {"b": b"x", "a": [1.5, None]}, False, '{"b":"x","a":[1.5,null]}'),
    ("point", Point(1, "é"), False, '{"x":1,"label":"é"}'),
    ("none", None, False, "null"),
]


def _tool(name: str, value: Any) -> Any:
    def handler(s: str) -> Any:
        """Return a fixed value.

        Args:
            s: ignored
        """
        return value

    handler.__name__ = f"t_{name}"
    return handler


@pytest.mark.parametrize(("name", "value", "is_error", "content"), CASES, ids=[c[0] for c in CASES])
def test_handler_return_values_become_deterministic_text(
    name: str, value: Any, is_error: bool, content: str
) -> None:
    chef = ContextChef()
    chef.register_tools([_tool(name, value)])
    call = ToolCall(id="1", name=f"t_{name}", arguments={"s": "a"})
    expected = content + TAIL if is_error else content
    for result in (
        chef.execute(call).result,
        chef.run_tools([call], append=False)[0],
        asyncio.run(chef.arun_tools([call], append=False))[0],
    ):
        assert (result.is_error, result.content) == (is_error, expected)
        assert " at 0x" not in result.content
