"""Gemini ``tool_config``: how generateContent chooses tools, and the functions it forces.

Gemini has no ``tool_choice``: the choice is ``config.tool_config.function_calling_config``
(google-genai ``ToolConfig`` / ``FunctionCallingConfig``): ``mode`` a
``FunctionCallingConfigMode`` (``AUTO``, ``ANY``, ``NONE``, ``VALIDATED``; the SDK reads it
in any case, and only warns of another value, which the API refuses) and
``allowed_function_names`` (declared functions). Both models forbid keys they do not
define, and take each in camelCase too (``toolConfig.functionCallingConfig``).
https://ai.google.dev/gemini-api/docs/function-calling ("Function calling modes").
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
    fields,
    literal,
    nullable,
    obj,
    string,
    unchecked,
)

__all__ = ["CHOICE"]

MODES = ("AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED")
"""``FunctionCallingConfigMode`` values (compared in upper case, as the SDK does)."""

_CALLING = obj(
    {
        "mode": nullable(literal(*MODES, fold=str.upper)),
        "allowed_function_names": nullable(array(string)),
        "stream_function_call_arguments": unchecked,
    },
    closed="FunctionCallingConfig",
    camel=True,
)

_SHAPE = nullable(
    obj(
        {
            "function_calling_config": nullable(_CALLING),
            "retrieval_config": unchecked,
            "include_server_side_tool_invocations": unchecked,
        },
        closed="ToolConfig",
        camel=True,
    )
)


def _named(extra: Mapping[str, Any]) -> Iterator[Forced]:
    for where, config in fields(extra, "", "tool_config", "toolConfig"):
        for place, calling in fields(
            config, where, "function_calling_config", "functionCallingConfig"
        ):
            for key, names in fields(
                calling, place, "allowed_function_names", "allowedFunctionNames"
            ):
                for k, name in enumerate(names if isinstance(names, (list, tuple)) else ()):
                    yield Forced(f"{key}.{k}", name)


def _tools(payload: Mapping[str, Any]) -> Iterator[ToolUnit]:
    """``config.tools`` entries' ``function_declarations`` (camelCase too)."""
    tools = at(payload, "config", "tools")
    for entry in tools if isinstance(tools, list) else ():
        decls = at(entry, "function_declarations") or at(entry, "functionDeclarations")
        for decl in decls if isinstance(decls, list) else ():
            name = at(decl, "name")
            if isinstance(name, str):
                yield ToolUnit(name)


CHOICE = ToolChoiceRules(
    api="Gemini",
    fields=("tool_config", "toolConfig"),
    strays=("tool_choice", "generation_config.tool_choice"),
    takes=(
        'tool_config (google-genai ToolConfig): {"function_calling_config": {"mode": '
        "'AUTO' | 'ANY' | 'NONE' | 'VALIDATED', \"allowed_function_names\": [<function "
        "names>]}} (each optional), camelCase keys too"
    ),
    shape={"tool_config": _SHAPE, "toolConfig": _SHAPE},
    named=_named,
    tools=_tools,
)
"""Gemini's `ToolChoiceRules`."""
