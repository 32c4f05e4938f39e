"""Anthropic Messages adapter (``client.messages.create(**payload)``).

Follows https://docs.anthropic.com/en/api/messages: ``system`` is a list of text blocks;
tool calls are ``tool_use`` blocks in assistant turns and answers are ``tool_result``
blocks in the next user turn, before any text; tools are
``{"name", "description", "input_schema"}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._errors import CorruptHistoryError
from contextchef._messages import Message, Part, TextPart, ToolCall, ToolResult
from contextchef._view import CompiledTool
from contextchef.providers._base import (
    ANTHROPIC_DEFAULT_MAX_TOKENS,
    Profile,
    RequestOptions,
    copy_schema,
    dumps_segment,
)

__all__ = ["AnthropicAdapter"]


class AnthropicAdapter:
    """IR -> Anthropic Messages payload."""

    profile = Profile(
        target="anthropic",
        sdk_call="anthropic.Anthropic().messages.create",
        native_tool_search=True,
        strict_schemas=False,
        positional_system=False,
        name_pattern=r"^[a-zA-Z0-9_-]{1,64}$",
    )

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """Tools as ``{"name", "description", "input_schema"}`` (+ ``defer_loading``)."""
        out = []
        for tool in tools:
            item: dict[str, Any] = {
                "name": tool.name,
                "description": tool.description,
                "input_schema": copy_schema(tool.input_schema),
            }
            if tool.defer_loading:
                item["defer_loading"] = True
            out.append(item)
        return out

    def _block(self, part: Part) -> dict[str, Any]:
        if isinstance(part, TextPart):
            return {"type": "text", "text": part.text}
        if isinstance(part, ToolCall):
            return {
                "type": "tool_use",
                "id": part.id,
                "name": part.name,
                "input": part.parsed_arguments(),
            }
        if not isinstance(part, ToolResult):
            raise CorruptHistoryError(f"{part.kind} parts are not supported yet", index=-1)
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": part.call_id,
            "content": part.content,
        }
        if part.is_error:
            block["is_error"] = True
        return block

    def render_messages(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """IR messages as Anthropic ``messages`` (tool results first in a user turn)."""
        out = []
        for msg in messages:
            parts = list(msg.parts)
            if msg.role == "user":  # tool_result blocks must lead the user content
                parts.sort(key=lambda p: not isinstance(p, ToolResult))
            out.append({"role": msg.role, "content": [self._block(p) for p in parts]})
        return out

    def render_request(
        self,
        *,
        system: str,
        tools: Sequence[CompiledTool],
        messages: Sequence[Message],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The ``messages.create`` keyword arguments."""
        cap = options.max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS
        payload: dict[str, Any] = {"model": options.model, "max_tokens": cap}
        if system:
            block: dict[str, Any] = {"type": "text", "text": system}
            if options.cache_system:
                block["cache_control"] = {"type": "ephemeral"}
            payload["system"] = [block]
        if tools:
            payload["tools"] = self.render_tools(tools)
        payload["messages"] = self.render_messages(messages)
        return payload

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """System / tools / messages as canonical JSON."""
        return {
            "system": dumps_segment(payload.get("system")),
            "tools": dumps_segment(payload.get("tools")),
            "messages": dumps_segment(payload.get("messages")),
        }
