"""Interactions ``generation_config.tool_choice``: the shapes it takes, the functions it forces.

google-genai's ``GenerationConfig.tool_choice`` (``_gaos/types/interactions``:
``toolchoicetype``, ``toolchoiceconfig``, ``allowedtools``): ``"auto"``, ``"any"``,
``"none"`` or ``"validated"``, or ``{"allowed_tools": {"mode": <one of those>, "tools":
[<function names>]}}``, each key optional. The SDK's enum is open (another string passes
its lax reading, its strict reading refuses it); the API documents only those four
(research note gemini-interactions.md §1.2; https://ai.google.dev/gemini-api/docs/interactions/function-calling).
Its models keep keys they do not define, so those pass here too. There is no top-level
``tool_choice`` or ``tool_config`` (the SDK's ``create`` refuses both keywords).
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
    nullable,
    obj,
    string,
    strings_or,
)

__all__ = ["CHOICE"]

MODES = ("auto", "any", "none", "validated")
"""``ToolChoiceType``'s values."""

_ALLOWED = obj({"mode": nullable(literal(*MODES)), "tools": nullable(array(string))})

_SHAPE = obj(
    {"tool_choice": nullable(strings_or(MODES, obj({"allowed_tools": nullable(_ALLOWED)})))}
)


def _named(extra: Mapping[str, Any]) -> Iterator[Forced]:
    names = at(extra, "generation_config", "tool_choice", "allowed_tools", "tools")
    for k, name in enumerate(names if isinstance(names, (list, tuple)) else ()):
        yield Forced(f"generation_config.tool_choice.allowed_tools.tools.{k}", name)


def _tools(payload: Mapping[str, Any]) -> Iterator[ToolUnit]:
    tools = payload.get("tools")
    for entry in tools if isinstance(tools, list) else ():
        name = at(entry, "name")
        if isinstance(name, str):
            yield ToolUnit(name, at(entry, "defer_loading") is True)


CHOICE = ToolChoiceRules(
    api="Gemini Interactions",
    fields=("generation_config",),
    strays=("tool_choice", "tool_config", "toolConfig"),
    takes=(
        "generation_config.tool_choice (google-genai interactions ToolChoice): 'auto', "
        "'any', 'none', 'validated' or {\"allowed_tools\": {\"mode\": <one of those>, "
        '"tools": [<function names>]}}'
    ),
    shape={"generation_config": _SHAPE},
    named=_named,
    tools=_tools,
)
"""The Interactions wire's `ToolChoiceRules` (``tools`` entries by ``name``)."""
