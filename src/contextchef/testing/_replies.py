"""Scripted turns and errors in each API's response JSON, with counter-based ids.

Bodies carry what the official SDKs parse, as the providers send it, with no clock and no
randomness: ``created`` is 0, usage counts are 0, and every id is a prefix plus a
per-fake counter (``toolu_0001``, ``call_0001``, ``fc_0001``...), so two identical runs
give identical replies.

* Anthropic Messages: https://docs.anthropic.com/en/api/messages (``thinking`` blocks with
  ``signature``: https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking);
  errors: https://docs.anthropic.com/en/api/errors.
* OpenAI Chat Completions: https://platform.openai.com/docs/api-reference/chat/object
  (``reasoning_content`` as DeepSeek's thinking mode sends it:
  https://api-docs.deepseek.com/guides/thinking_mode).
* OpenAI Responses: https://platform.openai.com/docs/api-reference/responses/object
  (``reasoning`` items with ``encrypted_content``).
* Gemini: https://ai.google.dev/api/generate-content#generatecontentresponse (thought parts
  and ``thoughtSignature``: https://ai.google.dev/gemini-api/docs/thought-signatures);
  errors: https://ai.google.dev/gemini-api/docs/troubleshooting.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef import UsageError
from contextchef.testing._body import as_list as _list
from contextchef.testing._script import ScriptedCall, Turn

__all__ = [
    "Ids",
    "anthropic_error",
    "anthropic_reply",
    "chat_reply",
    "gemini_error",
    "gemini_reply",
    "openai_error",
    "responses_reply",
]


class Ids:
    """Counter-based ids: ``take("toolu_")`` gives ``toolu_0001``, then ``toolu_0002``.

    Args:
        namespace: Letters or digits put before each counter (``Ids("b")`` gives
            ``toolu_b0001``), so a fake in another process (a resumed session) never
            repeats an id an earlier fake issued: an SDK response id seen twice is refused
            by `ContextChef.ingest`.

    Raises:
        UsageError: `namespace` is not letters and digits.
    """

    def __init__(self, namespace: str = "") -> None:
        if not (namespace == "" or (namespace.isascii() and namespace.isalnum())):
            raise UsageError(f"Ids namespace must be ASCII letters or digits, got {namespace!r}")
        self._namespace = namespace
        self._last: dict[str, int] = {}

    def take(self, prefix: str) -> str:
        """The next id with `prefix` (each prefix counts on its own, from 1)."""
        n = self._last.get(prefix, 0) + 1
        self._last[prefix] = n
        return f"{prefix}{self._namespace}{n:04d}"


def _arguments(call: ScriptedCall) -> str:
    """Arguments as the OpenAI APIs send them: compact JSON text."""
    return json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))


# -- Anthropic Messages ------------------------------------------------------------------


def anthropic_reply(
    turn: Turn, model: str, ids: Ids, searched: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """A ``message`` object for `turn` (`searched`: server search blocks, after reasoning)."""
    content: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        signature = ids.take("sig_")
        content.append({"type": "thinking", "thinking": turn.reasoning, "signature": signature})
    content += searched
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for call in turn.calls:
        use = {"type": "tool_use", "id": ids.take("toolu_"), "name": call.name}
        content.append({**use, "input": dict(call.arguments)})
    return {
        "id": ids.take("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if turn.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


_ANTHROPIC_ERRORS = {400: "invalid_request_error", 404: "not_found_error", 500: "api_error"}


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """An Anthropic error body."""
    kind = _ANTHROPIC_ERRORS.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


# -- OpenAI Chat Completions and Responses -----------------------------------------------


def chat_reply(turn: Turn, model: str, ids: Ids) -> dict[str, Any]:
    """A ``chat.completion`` object for `turn` (reasoning as ``reasoning_content``)."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None, "refusal": None}
    if turn.reasoning is not None:
        message["reasoning_content"] = turn.reasoning
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": ids.take("call_"),
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call)},
            }
            for call in turn.calls
        ]
    choice = {
        "index": 0,
        "message": message,
        "finish_reason": "tool_calls" if turn.calls else "stop",
        "logprobs": None,
    }
    return {
        "id": ids.take("chatcmpl-"),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def responses_reply(
    turn: Turn, model: str, ids: Ids, searched: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """A ``response`` object for `turn`: reasoning, `searched`, message and calls."""
    output: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        summary = [{"type": "summary_text", "text": turn.reasoning}] if turn.reasoning else []
        output.append(
            {
                "type": "reasoning",
                "id": ids.take("rs_"),
                "summary": summary,
                "encrypted_content": ids.take("enc_"),
            }
        )
    output += searched
    if turn.text:
        part = {"type": "output_text", "text": turn.text, "annotations": []}
        output.append(
            {
                "type": "message",
                "id": ids.take("msg_"),
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    for call in turn.calls:
        output.append(
            {
                "type": "function_call",
                "id": ids.take("fc_"),
                "call_id": ids.take("call_"),
                "name": call.name,
                "arguments": _arguments(call),
                "status": "completed",
            }
        )
    return response_body(output, model=model, response_id=ids.take("resp_"))


def response_body(output: list[dict[str, Any]], *, model: str, response_id: str) -> dict[str, Any]:
    """A complete Responses ``response`` object around `output` items (zero usage)."""
    usage = {
        "input_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 0,
    }
    return {
        "id": response_id,
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "usage": usage,
    }


_OPENAI_ERRORS = {400: "invalid_request_error", 404: "invalid_request_error", 500: "server_error"}


def namespace_homes(tools: object) -> dict[str, str]:
    """Function name -> the namespace a Responses call to it carries (deferred ones only).

    A function inside a ``namespace`` tool lives there; a flat function with
    ``defer_loading`` lives in a namespace named like itself.
    """
    homes: dict[str, str] = {}
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace" and isinstance(tool.get("name"), str):
            for member in _list(tool.get("tools")):
                if isinstance(member, dict) and isinstance(member.get("name"), str):
                    homes[member["name"]] = tool["name"]
        elif tool.get("defer_loading") is True and isinstance(tool.get("name"), str):
            homes[tool["name"]] = tool["name"]
    return homes


def openai_error(status: int, message: str) -> dict[str, Any]:
    """An OpenAI error body (Chat Completions and Responses)."""
    kind = _OPENAI_ERRORS.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


# -- Gemini ------------------------------------------------------------------------------


def gemini_reply(turn: Turn, model: str, ids: Ids, *, call_ids: bool = True) -> dict[str, Any]:
    """A ``GenerateContentResponse`` for `turn` (REST camelCase).

    Reasoning becomes a ``thought: true`` part (when its text is not empty) and a
    ``thoughtSignature`` (base64) on the first function call, or else on the last part.
    """
    parts: list[dict[str, Any]] = []
    if turn.reasoning:
        parts.append({"text": turn.reasoning, "thought": True})
    if turn.text:
        parts.append({"text": turn.text})
    signed = len(parts)
    for call in turn.calls:
        function_call: dict[str, Any] = {"name": call.name, "args": dict(call.arguments)}
        if call_ids:
            function_call = {"id": ids.take("call_"), **function_call}
        parts.append({"functionCall": function_call})
    if turn.reasoning is not None:
        signature = base64.b64encode(ids.take("sig_").encode("ascii")).decode("ascii")
        if not parts:
            parts.append({"text": ""})
        parts[signed if turn.calls else -1]["thoughtSignature"] = signature
    candidate = {
        "content": {"role": "model", "parts": parts},
        "finishReason": "STOP",
        "index": 0,
    }
    usage = {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0}
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": ids.take("resp_"),
    }


_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 500: "INTERNAL"}


def gemini_error(status: int, message: str) -> dict[str, Any]:
    """A Gemini (Google API) error body."""
    return {
        "error": {
            "code": status,
            "message": message,
            "status": _GEMINI_STATUS.get(status, "UNKNOWN"),
        }
    }


def client_search(tools: object) -> str | None:
    """``"tool_search"`` when `tools` declares a client-executed ``tool_search``, else None."""
    for tool in tools if isinstance(tools, list) else ():
        if (
            isinstance(tool, dict)
            and tool.get("type") == "tool_search"
            and tool.get("execution") == "client"
        ):
            return "tool_search"
    return None


def search_call(item: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tool_search_call`` output item a scripted ``function_call`` item stands for."""
    try:
        arguments = json.loads(item.get("arguments") or "{}")
    except ValueError:
        arguments = {}
    return {
        "type": "tool_search_call",
        "id": "tsc_" + str(item.get("id", "")).removeprefix("fc_"),
        "call_id": item.get("call_id"),
        "execution": "client",
        "arguments": arguments,
        "status": "completed",
    }
