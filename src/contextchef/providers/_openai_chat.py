"""OpenAI Chat Completions adapter (``client.chat.completions.create(**payload)``).

Follows https://platform.openai.com/docs/api-reference/chat/create: the system prompt is
the first message (role ``system``); tool calls are ``tool_calls`` on an assistant
message, each answered by a ``role: "tool"`` message with its ``tool_call_id``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._messages import Message, TextPart, ToolResult
from contextchef._view import CompiledTool
from contextchef.providers._base import Profile, RequestOptions, dumps_segment
from contextchef.providers._strict import openai_parameters

__all__ = ["OpenAIChatAdapter"]


class OpenAIChatAdapter:
    """IR -> Chat Completions payload."""

    profile = Profile(
        target="openai",
        sdk_call="openai.OpenAI().chat.completions.create",
        native_tool_search=False,
        strict_schemas=True,
        positional_system=True,
        name_pattern=r"^[a-zA-Z0-9_-]{1,64}$",
    )

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """Tools as ``{"type": "function", "function": {...}}``; ``strict`` only when on."""
        out = []
        for tool in tools:
            parameters, strict = openai_parameters(tool)
            function: dict[str, Any] = {
                "name": tool.name,
                "description": tool.description,
                "parameters": parameters,
            }
            if strict:
                function["strict"] = True
            out.append({"type": "function", "function": function})
        return out

    def render_messages(self, system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """System message, then IR messages; tool results become ``role: tool`` messages."""
        out: list[dict[str, Any]] = []
        if system:
            out.append({"role": "system", "content": system})
        for msg in messages:
            if msg.role == "assistant":
                item: dict[str, Any] = {"role": "assistant", "content": msg.text or None}
                calls = msg.tool_calls
                if calls:
                    item["tool_calls"] = [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in calls
                    ]
                out.append(item)
                continue
            for part in msg.parts:
                if isinstance(part, ToolResult):
                    out.append(
                        {"role": "tool", "tool_call_id": part.call_id, "content": part.content}
                    )
            texts = [p.text for p in msg.parts if isinstance(p, TextPart)]
            if texts:
                out.append({"role": "user", "content": "\n\n".join(texts)})
        return out

    def render_request(
        self,
        *,
        system: str,
        tools: Sequence[CompiledTool],
        messages: Sequence[Message],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The ``chat.completions.create`` keyword arguments."""
        payload: dict[str, Any] = {
            "model": options.model,
            "messages": self.render_messages(system, messages),
        }
        if tools:
            payload["tools"] = self.render_tools(tools)
        if options.max_tokens is not None:
            payload["max_completion_tokens"] = options.max_tokens
        return payload

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """The leading system message, tools, and the remaining messages."""
        msgs = list(payload.get("messages") or [])
        system = msgs[:1] if msgs and msgs[0].get("role") == "system" else []
        return {
            "system": dumps_segment(system or None),
            "tools": dumps_segment(payload.get("tools")),
            "messages": dumps_segment(msgs[len(system) :]),
        }
