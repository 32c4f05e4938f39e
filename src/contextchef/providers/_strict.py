"""OpenAI strict-mode decision shared by the Chat and Responses adapters."""

from __future__ import annotations

from typing import Any

from contextchef.providers._base import copy_schema
from contextchef.tools._schema import to_strict_schema
from contextchef.tools._tool import CompiledTool

__all__ = ["openai_parameters"]


def openai_parameters(tool: CompiledTool, *, allowed: bool) -> tuple[dict[str, Any], bool]:
    """(parameters, strict) for an OpenAI function tool.

    Strict mode is used only when the API has it (`allowed`: `Profile.strict_schemas`), the
    tool asked for it and its schema can be rewritten
    to meet every strict rule
    (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas);
    otherwise the original schema is sent with strict off.
    """
    if allowed and tool.strict:
        strict_schema = to_strict_schema(tool.input_schema)
        if strict_schema is not None:
            return strict_schema, True
    return copy_schema(tool.input_schema), False
