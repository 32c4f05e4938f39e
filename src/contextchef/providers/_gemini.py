"""Gemini adapter (``client.models.generate_content(**payload)``, google-genai SDK).

Follows https://ai.google.dev/gemini-api/docs/function-calling: the system prompt is
``config.system_instruction``; tools are one ``Tool`` with ``function_declarations``,
each schema sent as ``parameters_json_schema`` (plain JSON Schema); the model's turns
have role ``model``; calls are ``function_call`` parts and answers ``function_response``
parts, all answers of a batch in one user ``Content``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._errors import CorruptHistoryError
from contextchef._messages import Message, Part, TextPart, ToolCall, ToolResult
from contextchef._view import CompiledTool
from contextchef.providers._base import Profile, RequestOptions, copy_schema, dumps_segment

__all__ = ["GeminiAdapter"]


class GeminiAdapter:
    """IR -> google-genai ``generate_content`` keyword arguments."""

    profile = Profile(
        target="gemini",
        sdk_call="google.genai.Client().models.generate_content",
        native_tool_search=False,
        strict_schemas=False,
        positional_system=False,
        name_pattern=r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$",
    )

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """One ``Tool`` holding every function declaration (empty list if no tools)."""
        if not tools:
            return []
        declarations = [
            {
                "name": tool.name,
                "description": tool.description,
                "parameters_json_schema": copy_schema(tool.input_schema),
            }
            for tool in tools
        ]
        return [{"function_declarations": declarations}]

    def _part(self, part: Part) -> dict[str, Any]:
        if isinstance(part, TextPart):
            return {"text": part.text}
        if isinstance(part, ToolCall):
            return {
                "function_call": {
                    "id": part.id,
                    "name": part.name,
                    "args": part.parsed_arguments(),
                }
            }
        if not isinstance(part, ToolResult):
            raise CorruptHistoryError(f"{part.kind} parts are not supported yet", index=-1)
        key = "error" if part.is_error else "output"
        return {
            "function_response": {
                "id": part.call_id,
                "name": part.name,
                "response": {key: part.content},
            }
        }

    def render_contents(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """IR messages as ``Content`` dicts (assistant -> role ``model``)."""
        return [
            {
                "role": "model" if msg.role == "assistant" else "user",
                "parts": [self._part(p) for p in msg.parts],
            }
            for msg in messages
        ]

    def render_request(
        self,
        *,
        system: str,
        tools: Sequence[CompiledTool],
        messages: Sequence[Message],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """``model``, ``contents`` and ``config`` for ``generate_content``."""
        config: dict[str, Any] = {}
        if system:
            config["system_instruction"] = system
        rendered = self.render_tools(tools)
        if rendered:
            config["tools"] = rendered
            # The SDK would otherwise try to run Python callables; we pass declarations.
            config["automatic_function_calling"] = {"disable": True}
        if options.max_tokens is not None:
            config["max_output_tokens"] = options.max_tokens
        return {
            "model": options.model,
            "contents": self.render_contents(messages),
            "config": config,
        }

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """system_instruction / tools / contents as canonical JSON."""
        config = payload.get("config") or {}
        return {
            "system": dumps_segment(config.get("system_instruction")),
            "tools": dumps_segment(config.get("tools")),
            "messages": dumps_segment(payload.get("contents")),
        }
