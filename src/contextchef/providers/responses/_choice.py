"""Responses ``tool_choice``: the shapes the API takes and the tools it forces.

The SDK's ``ToolChoice`` (``openai.types.responses.response_create_params``): ``"none"``,
``"auto"``, ``"required"``; ``{"type": "function" | "custom", "name": N}`` (flat: Chat's
nested ``{"function": {"name": N}}`` is refused); ``{"type": "allowed_tools", "mode":
"auto" | "required", "tools": [<tool objects>]}``; ``{"type": "mcp", "server_label": S,
"name": N?}``; and the hosted tools by type alone (``ToolChoiceTypesParam``:
``file_search``, ``web_search_preview``, ``computer``, ``computer_use_preview``,
``computer_use``, ``web_search_preview_2025_03_11``, ``image_generation``,
``code_interpreter``; and ``programmatic_tool_calling``, ``apply_patch``, ``shell``).
https://platform.openai.com/docs/api-reference/responses/create, ``tool_choice``.
A named choice forces a top-level function: a namespace's member is refused (research
note provider-native-disclosure.md §6 rule 24).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from contextchef.providers._tool_choice import (
    Check,
    Forced,
    ToolChoiceRules,
    ToolUnit,
    array,
    at,
    literal,
    nullable,
    obj,
    string,
    tagged,
)

__all__ = ["CHOICE"]

HOSTED = (
    "file_search",
    "web_search_preview",
    "computer",
    "computer_use_preview",
    "computer_use",
    "web_search_preview_2025_03_11",
    "image_generation",
    "code_interpreter",
    "programmatic_tool_calling",
    "apply_patch",
    "shell",
)
"""The tool types a choice names by ``type`` alone."""

_NAMED: dict[str, Check] = {
    "function": obj({"name": string}, ("name",)),
    "custom": obj({"name": string}, ("name",)),
    "mcp": obj({"server_label": string, "name": nullable(string)}, ("server_label",)),
    "allowed_tools": obj(
        {"mode": literal("auto", "required"), "tools": array(obj({}))}, ("mode", "tools")
    ),
}

_SHAPE = tagged(
    "type", {**_NAMED, **{t: obj({}) for t in HOSTED}}, strings=("none", "auto", "required")
)


def _one(choice: object, where: str) -> Iterator[Forced]:
    kind = at(choice, "type")
    if kind in ("function", "custom"):
        yield Forced(f"{where}.name", at(choice, "name"), str(kind))


def _named(extra: Mapping[str, Any]) -> Iterator[Forced]:
    choice = extra.get("tool_choice")
    yield from _one(choice, "tool_choice")
    tools = at(choice, "tools") if at(choice, "type") == "allowed_tools" else ()
    for k, tool in enumerate(tools if isinstance(tools, (list, tuple)) else ()):
        yield from _one(tool, f"tool_choice.tools.{k}")


def _tools(payload: Mapping[str, Any]) -> Iterator[ToolUnit]:
    """Entries by ``name``; a namespace's members (with it), not the namespace."""
    tools = payload.get("tools")
    for entry in tools if isinstance(tools, list) else ():
        members = at(entry, "tools") if at(entry, "type") == "namespace" else None
        space = str(at(entry, "name")) if isinstance(members, list) else None
        for unit in members if isinstance(members, list) else [entry]:
            name = at(unit, "name")
            if isinstance(name, str):
                kind = at(unit, "type")
                known = str(kind) if kind in ("function", "custom") else None
                yield ToolUnit(name, at(unit, "defer_loading") is True, space, known)


CHOICE = ToolChoiceRules(
    api="Responses",
    fields=("tool_choice",),
    strays=("tool_config", "toolConfig", "generation_config.tool_choice"),
    takes=(
        "tool_choice (openai responses ToolChoice): 'none', 'auto', 'required', "
        '{"type": "function" | "custom", "name": <tool name>}, {"type": "allowed_tools", '
        '"mode": "auto" | "required", "tools": [<tool objects>]}, {"type": "mcp", '
        '"server_label": <label>, "name"?: <tool name>} or {"type": <hosted tool>} with '
        f"one of {', '.join(HOSTED)}"
    ),
    shape={"tool_choice": _SHAPE},
    named=_named,
    tools=_tools,
)
"""Responses' `ToolChoiceRules`."""
