"""OpenAI Responses adapter (``client.responses.create(**payload)``).

Follows https://platform.openai.com/docs/api-reference/responses/create: the system prompt
is ``instructions``; history is ``input``, a list of message items, ``function_call``
items and ``function_call_output`` items joined by ``call_id``; function tools are flat
``{"type": "function", "name", "description", "parameters", "strict"}`` and ``strict`` must
be given (the API defaults it to true).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._messages import Message, TextPart, ToolCall, ToolResult
from contextchef._view import CompiledTool
from contextchef.providers._base import Profile, RequestOptions, dumps_segment
from contextchef.providers._strict import openai_parameters

__all__ = ["ResponsesAdapter"]


def _message_items(role: str, texts: list[str]) -> list[dict[str, Any]]:
    """A message item for pending text, or nothing when there is none."""
    if not texts:
        return []
    # An "easy input message" with string content: the form the SDK's input types accept
    # for replayed assistant text (an output_text part would need the output item's id).
    return [{"type": "message", "role": role, "content": "\n\n".join(texts)}]


class ResponsesAdapter:
    """IR -> Responses payload."""

    profile = Profile(
        target="responses",
        sdk_call="openai.OpenAI().responses.create",
        native_tool_search=True,
        strict_schemas=True,
        positional_system=True,
        name_pattern=r"^[a-zA-Z0-9_-]{1,64}$",
    )

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """Flat function tools with an explicit ``strict`` flag."""
        out = []
        for tool in tools:
            parameters, strict = openai_parameters(tool)
            out.append(
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": parameters,
                    "strict": strict,
                }
            )
        return out

    def render_input(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """IR messages as Responses input items, in part order."""
        out: list[dict[str, Any]] = []
        for msg in messages:
            texts: list[str] = []
            for part in msg.parts:
                if isinstance(part, TextPart):
                    texts.append(part.text)
                    continue
                out += _message_items(msg.role, texts)
                texts = []
                if isinstance(part, ToolCall):
                    out.append(
                        {
                            "type": "function_call",
                            "call_id": part.id,
                            "name": part.name,
                            "arguments": part.arguments,
                        }
                    )
                elif isinstance(part, ToolResult):
                    out.append(
                        {
                            "type": "function_call_output",
                            "call_id": part.call_id,
                            "output": part.content,
                        }
                    )
            out += _message_items(msg.role, texts)
        return out

    def render_request(
        self,
        *,
        system: str,
        tools: Sequence[CompiledTool],
        messages: Sequence[Message],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The ``responses.create`` keyword arguments."""
        payload: dict[str, Any] = {"model": options.model}
        if system:
            payload["instructions"] = system
        if tools:
            payload["tools"] = self.render_tools(tools)
        payload["input"] = self.render_input(messages)
        if options.max_tokens is not None:
            payload["max_output_tokens"] = options.max_tokens
        return payload

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """Instructions / tools / input as canonical JSON."""
        return {
            "system": dumps_segment(payload.get("instructions")),
            "tools": dumps_segment(payload.get("tools")),
            "messages": dumps_segment(payload.get("input")),
        }
