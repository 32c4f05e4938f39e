"""A bad entry in a long list of tools is named by its index and shown (break-it round 27).

Registering 51 tool dicts where one had ``"name": 5`` said "tool definition has no string
'name'" without saying which entry or what its name was. Every registration path now
names the entry (its index in the list, the group it is in) and shows the value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextchef import CatalogFormatError, ContextChef, ContextChefError, UsageError, load_catalog

GOOD = [
    {"name": f"t{i}", "description": "d", "input_schema": {"type": "object", "properties": {}}}
    for i in range(50)
]
NAMED_5 = {"name": 5, "description": "d", "input_schema": {"type": "object"}}
NAMELESS = {"description": "d", "input_schema": {"type": "object"}}
NEEDS = "a tool definition needs a string 'name'"


def raised(action: Callable[[], Any]) -> ContextChefError:
    with pytest.raises(ContextChefError) as caught:
        action()
    return caught.value


def test_register_tools_names_the_index_and_the_value() -> None:
    error = raised(lambda: ContextChef().register_tools([*GOOD[:25], NAMED_5, *GOOD[25:]]))
    assert isinstance(error, CatalogFormatError)
    assert str(error).startswith(f"tools[25]: {NEEDS}; its 'name' is int 5 (keys: ")
    error = raised(lambda: ContextChef().register_tools([*GOOD[:3], NAMELESS]))
    assert str(error).startswith(f"tools[3]: {NEEDS}; its 'name' is missing (keys: ")


def test_an_entry_that_is_no_tool_is_named_and_shown() -> None:
    error = raised(lambda: ContextChef().register_tools([*GOOD[:7], 42]))
    assert type(error) is UsageError
    assert str(error) == (
        "tools[7]: cannot register int 42: expected a Tool, a tool dict or a function"
    )


@pytest.mark.parametrize("kind", ["namespace", "toolkit"])
def test_a_group_names_itself_and_the_entry(kind: str) -> None:
    group = {"name": "files", "description": "d", "tools": [*GOOD[:2], NAMED_5]}
    chef = ContextChef()
    register = chef.register_namespaces if kind == "namespace" else chef.register_toolkits
    error = raised(lambda: register([group]))
    assert isinstance(error, CatalogFormatError)
    assert str(error).startswith(f"{kind} 'files': tools[2]: {NEEDS}; its 'name' is int 5")
    error = raised(lambda: register([{"name": 7, "description": "d", "tools": GOOD[:2]}]))
    assert str(error).endswith("got name 7 and a str description")


def test_a_runtime_tool_and_a_catalog_show_the_value(tmp_path: Path) -> None:
    error = raised(lambda: ContextChef().register_runtime_tool(NAMED_5))
    assert str(error).startswith(f"{NEEDS}; its 'name' is int 5")
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([*GOOD[:25], NAMED_5]), encoding="utf-8")
    error = raised(lambda: load_catalog(path))
    assert f"[25] {NEEDS}; its 'name' is int 5" in str(error)
