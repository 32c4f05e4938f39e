"""Anthropic Messages ``tool_choice``: the shapes the API takes and the tool it forces.

The SDK's ``ToolChoiceParam`` (``anthropic.types.tool_choice_param``) is an object, never
a string: ``{"type": "auto"}``, ``{"type": "any"}``, ``{"type": "none"}`` or
``{"type": "tool", "name": N}``; ``auto``, ``any`` and ``tool`` also take
``disable_parallel_tool_use`` (a bool). Documented at
https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use
("Forcing tool use"). The beta types (``BetaToolChoiceParam``) are the same shapes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from contextchef.providers._tool_choice import (
    ToolChoiceRules,
    ToolUnit,
    at,
    boolean,
    obj,
    string,
    tagged,
)

__all__ = ["CHOICE"]

_ONE = {"disable_parallel_tool_use": boolean}

_SHAPE = tagged(
    "type",
    {
        "auto": obj(_ONE),
        "any": obj(_ONE),
        "none": obj({}),
        "tool": obj({"name": string, **_ONE}, ("name",)),
    },
)


def _named(extra: Mapping[str, Any]) -> Iterator[tuple[str, object]]:
    if at(extra, "tool_choice", "type") == "tool":
        yield "tool_choice.name", at(extra, "tool_choice", "name")


def _tools(payload: Mapping[str, Any]) -> Iterator[ToolUnit]:
    tools = payload.get("tools")
    for entry in tools if isinstance(tools, list) else ():
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if isinstance(name, str):
            yield ToolUnit(name, entry.get("defer_loading") is True)


CHOICE = ToolChoiceRules(
    api="Anthropic Messages",
    fields=("tool_choice",),
    strays=("tool_config", "toolConfig", "generation_config.tool_choice"),
    takes=(
        'tool_choice as an object (anthropic ToolChoiceParam): {"type": "auto"}, '
        '{"type": "any"}, {"type": "none"} or {"type": "tool", "name": <tool name>}, '
        'auto, any and tool with an optional "disable_parallel_tool_use": true/false'
    ),
    shape={"tool_choice": _SHAPE},
    named=_named,
    tools=_tools,
)
"""Anthropic's `ToolChoiceRules`: names in ``tools`` entries' ``name`` (server tools
too), deferred by ``defer_loading``."""
