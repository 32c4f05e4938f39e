"""The shape of Responses tool search items and the tool definitions they load.

The openai SDK's input item params (``response_input_item_param.ToolSearchCall``,
``response_tool_search_output_item_param_param.ResponseToolSearchOutputItemParamParam``,
``tool_search_output_namespace_tool_param``): ``id`` and ``call_id`` are strings or null,
``execution`` is ``"server"`` or ``"client"``, ``status`` one of ``in_progress``,
``completed``, ``incomplete`` (or null); a call has ``arguments``; an output's ``tools``
is a list of tool definitions (a function or custom tool with a string ``name``, a
namespace with a ``name``, a ``description`` and its functions). The API answers any other
shape with a 400 naming the field; so does `responses_search_items_valid`, before any
other rule reads the items.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._body import dicts
from contextchef.testing._records import RecordedRequest

__all__ = ["responses_search_items_valid", "tool_definition_problems"]

_STATUSES = (None, "in_progress", "completed", "incomplete")
_MEMBERS = ("function", "custom")


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _named(where: str, tool: Mapping[str, Any]) -> Iterator[str]:
    name = tool.get("name")
    if not (isinstance(name, str) and name):
        yield f"Invalid type for '{where}.name': expected a non-empty string, but got {_kind(name)}"


def tool_definition_problems(where: str, tool: object) -> Iterator[str]:
    """What the API would refuse in one tool definition at `where` (``input.3.tools.0``)."""
    if not isinstance(tool, Mapping):
        yield f"Invalid type for '{where}': expected a tool definition object, got {_kind(tool)}"
        return
    kind = tool.get("type")
    if not isinstance(kind, str):
        yield f"Missing required parameter: '{where}.type'"
    elif kind in _MEMBERS:
        yield from _named(where, tool)
    elif kind == "namespace":
        yield from _named(where, tool)
        if not isinstance(tool.get("description"), str):
            yield f"Invalid type for '{where}.description': expected a string"
        members = tool.get("tools")
        if not isinstance(members, list):
            yield f"Invalid type for '{where}.tools': expected an array of function tools"
            return
        for k, member in enumerate(members):
            inner = f"{where}.tools.{k}"
            if not isinstance(member, Mapping) or member.get("type") not in _MEMBERS:
                yield f"Invalid value for '{inner}': a namespace holds function or custom tools"
            else:
                yield from _named(inner, member)


def _field_problems(i: int, item: Mapping[str, Any]) -> Iterator[str]:
    for key in ("id", "call_id"):
        value = item.get(key)
        if value is not None and not isinstance(value, str):
            yield f"Invalid type for 'input.{i}.{key}': expected a string, but got {_kind(value)}"
    if item.get("execution") not in (None, "server", "client"):
        yield f"Invalid value for 'input.{i}.execution': expected 'server' or 'client'"
    if item.get("status") not in _STATUSES:
        yield (
            f"Invalid value for 'input.{i}.status': expected 'in_progress', 'completed' or "
            "'incomplete'"
        )


def responses_search_items_valid(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """Every ``tool_search_call`` / ``tool_search_output`` input item is of the SDK's shape."""
    for i, item in dicts(body.get("input")):
        kind = item.get("type")
        if kind not in ("tool_search_call", "tool_search_output"):
            continue
        yield from _field_problems(i, item)
        if kind == "tool_search_call":
            if "arguments" not in item:
                yield f"Missing required parameter: 'input.{i}.arguments'"
            continue
        tools = item.get("tools")
        if not isinstance(tools, list):
            yield f"Invalid type for 'input.{i}.tools': expected an array, but got {_kind(tools)}"
            continue
        for j, tool in enumerate(tools):
            yield from tool_definition_problems(f"input.{i}.tools.{j}", tool)
