"""The Responses ``additional_tools`` input item (first-party Responses, role ``developer``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._body import dicts
from contextchef.testing._records import RecordedRequest
from contextchef.testing._search_items import tool_definition_problems

__all__ = ["responses_additional_tools_valid"]

_KINDS = frozenset({"function", "namespace", "custom", "mcp"})


def responses_additional_tools_valid(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """An ``additional_tools`` item has role ``developer`` and a list of tool definitions.

    The SDK's ``response_input_item_param.AdditionalTools``: ``role`` is only
    ``"developer"``; every entry of ``tools`` is a tool definition (functions, namespaces
    of functions...), never a bare name; a namespace needs a name, a description and
    its tools (`tool_definition_problems`: string names, function or custom members).
    """
    for i, item in dicts(body.get("input")):
        if item.get("type") != "additional_tools":
            continue
        if item.get("id") is not None and not isinstance(item.get("id"), str):
            yield f"Invalid type for 'input.{i}.id': expected a string"
        if item.get("role") != "developer":
            yield f"input.{i}.role: an additional_tools item takes role 'developer' only"
        tools = item.get("tools")
        if not isinstance(tools, list) or not tools:
            yield f"input.{i}.tools: an additional_tools item needs a non-empty list of tools"
            continue
        for j, tool in enumerate(tools):
            kind = tool.get("type") if isinstance(tool, Mapping) else None
            if kind not in _KINDS:
                yield f"input.{i}.tools.{j}: not a tool definition (type {kind!r})"
            elif kind == "namespace" and not (
                isinstance(tool.get("tools"), list) and tool["tools"]
            ):
                yield f"input.{i}.tools.{j}: a namespace needs a name, a description and tools"
            else:  # names, descriptions and members of the types the API takes
                yield from tool_definition_problems(f"input.{i}.tools.{j}", tool)
