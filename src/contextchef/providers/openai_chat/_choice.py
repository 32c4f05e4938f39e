"""Chat Completions ``tool_choice``: the shapes the API takes and the tools it forces.

The SDK's ``ChatCompletionToolChoiceOptionParam``
(``openai.types.chat.chat_completion_tool_choice_option_param``): ``"none"``, ``"auto"``,
``"required"``, ``{"type": "function", "function": {"name": N}}``, ``{"type": "custom",
"custom": {"name": N}}`` or ``{"type": "allowed_tools", "allowed_tools": {"mode": "auto" |
"required", "tools": [<tool definitions>]}}`` (https://platform.openai.com/docs/api-reference/chat/create,
``tool_choice``). Anthropic's ``{"type": "tool", ...}`` and Responses' flat
``{"type": "function", "name": N}`` are refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from contextchef.providers._tool_choice import (
    Forced,
    ToolChoiceRules,
    ToolUnit,
    array,
    at,
    literal,
    obj,
    string,
    tagged,
)

__all__ = ["CHOICE"]

_NAME = obj({"name": string}, ("name",))

_SHAPE = tagged(
    "type",
    {
        "function": obj({"function": _NAME}, ("function",)),
        "custom": obj({"custom": _NAME}, ("custom",)),
        "allowed_tools": obj(
            {
                "allowed_tools": obj(
                    {"mode": literal("auto", "required"), "tools": array(obj({}))},
                    ("mode", "tools"),
                )
            },
            ("allowed_tools",),
        ),
    },
    strings=("none", "auto", "required"),
)


def _one(choice: object, where: str) -> Iterator[Forced]:
    kind = at(choice, "type")
    if kind in ("function", "custom"):
        yield Forced(f"{where}.{kind}.name", at(choice, str(kind), "name"), str(kind))


def _named(extra: Mapping[str, Any]) -> Iterator[Forced]:
    choice = extra.get("tool_choice")
    yield from _one(choice, "tool_choice")
    tools = at(choice, "allowed_tools", "tools") if at(choice, "type") == "allowed_tools" else ()
    for k, tool in enumerate(tools if isinstance(tools, (list, tuple)) else ()):
        yield from _one(tool, f"tool_choice.allowed_tools.tools.{k}")


def _tools(payload: Mapping[str, Any]) -> Iterator[ToolUnit]:
    tools = payload.get("tools")
    for entry in tools if isinstance(tools, list) else ():
        kind = at(entry, "type")
        unit = at(entry, str(kind)) if kind in ("function", "custom") else None
        name = at(unit, "name")
        if isinstance(name, str):
            yield ToolUnit(name, at(unit, "defer_loading") is True, kind=str(kind))


CHOICE = ToolChoiceRules(
    api="Chat Completions",
    fields=("tool_choice",),
    strays=("tool_config", "toolConfig", "generation_config.tool_choice"),
    takes=(
        "tool_choice (openai ChatCompletionToolChoiceOptionParam): 'none', 'auto', "
        '\'required\', {"type": "function", "function": {"name": <tool name>}}, '
        '{"type": "custom", "custom": {"name": <tool name>}} or {"type": "allowed_tools", '
        '"allowed_tools": {"mode": "auto" | "required", "tools": [<tool objects>]}}'
    ),
    shape={"tool_choice": _SHAPE},
    named=_named,
    tools=_tools,
)
"""Chat's `ToolChoiceRules`: names in ``tools`` entries' ``function.name`` (or
``custom.name``)."""
