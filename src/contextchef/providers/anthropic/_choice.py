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
    Forced,
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


def _named(extra: Mapping[str, Any]) -> Iterator[Forced]:
    if at(extra, "tool_choice", "type") == "tool":
        yield Forced("tool_choice.name", at(extra, "tool_choice", "name"))


def _tools(payload: Mapping[str, Any]) -> Iterator[ToolUnit]:
    tools = payload.get("tools")
    for entry in tools if isinstance(tools, list) else ():
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if isinstance(name, str):
            yield ToolUnit(name, entry.get("defer_loading") is True)


def _clash(extra: Mapping[str, Any]) -> str | None:
    """A tool forced while thinking is on, which Anthropic refuses (a 400).

    "Thinking isn't compatible with ... forced tool use" (build-with-claude/extended-thinking,
    "Feature compatibility"): with ``thinking`` on, ``tool_choice`` is ``auto`` or ``none``.
    """
    thinking, choice = extra.get("thinking"), extra.get("tool_choice")
    on = isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled")
    forced = at(choice, "type")
    if not (on and forced in ("any", "tool")):
        return None
    return (
        f"tool_choice type {forced!r} forces a tool, which Anthropic refuses while thinking is "
        f"on (thinking type {thinking.get('type')!r}): with thinking, tool_choice takes "  # type: ignore[union-attr]
        '{"type": "auto"} or {"type": "none"}; or turn thinking off for this request'
    )


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
    clash=_clash,
)
"""Anthropic's `ToolChoiceRules`: names in ``tools`` entries' ``name`` (server tools
too), deferred by ``defer_loading``."""
