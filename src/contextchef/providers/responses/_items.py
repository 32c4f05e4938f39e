"""The shape of the Responses items contextchef keeps whole: tool search and added tools.

A ``tool_search_call``, a ``tool_search_output`` (hosted, or a client output answering no
call) and an ``additional_tools`` item are kept as provider parts and replayed as they
came; one of the wrong shape would be refused on every later request, and a field of the
wrong type (an object as ``call_id``) would break the code that pairs them. The fields
and their types follow the openai SDK's input item params
(``response_input_item_param.ToolSearchCall`` and ``AdditionalTools``,
``response_tool_search_output_item_param_param``, ``tool_search_output_namespace_tool_param``;
research provider-native-disclosure.md 2.1 and 2.2):

* ``id`` and ``call_id``: a string or null; ``execution``: ``"server"`` or ``"client"``;
  ``status``: ``"in_progress"``, ``"completed"``, ``"incomplete"`` or null;
* a hosted ``tool_search_call`` has ``arguments`` (a client one's are read as the call's
  arguments, any JSON, by the parser);
* ``tools`` (an output's, an ``additional_tools`` item's, non-empty there): a list of
  tool definitions, each an object with a string ``type``; a function or custom tool has
  a non-empty string ``name``; a namespace a ``name``, a ``description`` and a ``tools``
  list of such functions;
* an ``additional_tools`` item's ``role`` is ``"developer"``, the only one it takes.

`item_problem` says what is wrong; the parser refuses such an item
(`CorruptHistoryError`), the adapter leaves a stored one out of what it sends
(``dropped_foreign_part``), and both read nothing else of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextchef._errors import shown

__all__ = ["CHECKED", "REASONING_NEEDS", "item_problem"]

REASONING_NEEDS = "its recorded reasoning item (as returned: 'id', 'encrypted_content')"
"""What Responses needs to take reasoning back (`providers._keeps.reasoning_refused`): the
reasoning item OpenAI returned, replayed as it came
(https://platform.openai.com/docs/guides/reasoning#keeping-reasoning-items-in-context);
another provider's reasoning, or one without its item, is left out."""

CHECKED = frozenset({"tool_search_call", "tool_search_output", "additional_tools"})
"""The item types `item_problem` checks (any other is not read by contextchef)."""

_STATUSES = (None, "in_progress", "completed", "incomplete")
_MEMBERS = ("function", "custom")


_JSON_TYPES = ((bool, "a boolean"), (str, "a string"), (int, "a number"), (float, "a number"))


def _type_name(value: object) -> str:
    """`value`'s JSON type, as it was given (a stored part holds frozen copies)."""
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return next((n for t, n in _JSON_TYPES if isinstance(value, t)), type(value).__name__)


def _name_problem(tool: Mapping[str, Any], where: str) -> str | None:
    name = tool.get("name")
    if isinstance(name, str) and name:
        return None
    return f"{where}.name must be a non-empty string, got {_type_name(name)} {shown(name, 40)}"


def _tool_problem(tool: object, where: str) -> str | None:
    """What is wrong with one tool definition of a ``tools`` list, or None."""
    if not isinstance(tool, Mapping):
        return f"{where} must be a tool definition (an object), got {_type_name(tool)}"
    kind = tool.get("type")
    if not isinstance(kind, str) or not kind:
        return f"{where}.type must be a tool type such as 'function' or 'namespace'"
    if kind in _MEMBERS:
        return _name_problem(tool, where)
    if kind != "namespace":
        return None  # (mcp, web_search...: contextchef reads no more of them)
    if not isinstance(tool.get("description"), str):
        return f"{where}.description must be a string (a namespace needs one)"
    members = tool.get("tools")
    if not isinstance(members, list) or not members:
        return f"{where}.tools must be a non-empty list of function or custom tools"
    for k, member in enumerate(members):
        inner = f"{where}.tools[{k}]"
        if not isinstance(member, Mapping) or member.get("type") not in _MEMBERS:
            return f"{inner} must be a function or custom tool (an object with that 'type')"
        problem = _name_problem(member, inner)
        if problem:
            return problem
    return _name_problem(tool, where)


def _tools_problem(item: Mapping[str, Any], kind: str) -> str | None:
    tools = item.get("tools")
    if not isinstance(tools, list) or (kind == "additional_tools" and not tools):
        need = "a non-empty list" if kind == "additional_tools" else "a list"
        return f"{kind} 'tools' must be {need} of tool definitions, got {_type_name(tools)}"
    for j, tool in enumerate(tools):
        problem = _tool_problem(tool, f"{kind} 'tools'[{j}]")
        if problem:
            return problem
    return None


def item_problem(item: Mapping[str, Any]) -> str | None:
    """What makes `item` (a Responses input item) one the API refuses, or None.

    Only the `CHECKED` types are read; any other item gives None. The text names the
    field, what it holds and what would be valid.
    """
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in CHECKED:
        return None  # (an untyped item: `keeps_part` leaves it out)
    for key in ("id", "call_id"):
        value = item.get(key)
        if value is not None and not isinstance(value, str):
            return f"{kind} '{key}' must be a string or null, got {_type_name(value)}"
    if item.get("execution") not in (None, "server", "client"):
        return f"{kind} 'execution' must be 'server' or 'client', got {shown(item['execution'])}"
    if item.get("status") not in _STATUSES:
        valid = "'in_progress', 'completed', 'incomplete' or null"
        return f"{kind} 'status' must be {valid}, got {shown(item['status'], 40)}"
    if kind == "tool_search_call":
        if "arguments" not in item and item.get("execution") != "client":
            return "a hosted tool_search_call needs its 'arguments' (an object)"
        return None
    if kind == "additional_tools" and item.get("role") != "developer":
        return f"additional_tools 'role' must be 'developer', got {shown(item.get('role'), 40)}"
    return _tools_problem(item, str(kind))
