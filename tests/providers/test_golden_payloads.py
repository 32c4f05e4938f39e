"""Golden payloads: one known session compiled for every target, frozen in full.

Each target's complete outgoing payload is written out below as a literal and compared
exactly, key order included (the SDKs send dicts in insertion order, so key order is
part of the bytes the provider sees and caches). A change to any
adapter, the normalizer, the meta-tools or the deferred directory shows up here as a
readable diff; update the literal only after checking the new payload against the
provider's API reference.

The session: a system prompt; three tools given as plain dicts in three shapes
(Anthropic ``read_file`` resident, OpenAI Chat ``set_log_level`` with ``strict`` and an
``enum``, MCP ``search_web`` deferred, so ``tool_search`` and ``defer_execute`` join the
tools); and a history of a user question, one assistant turn (reasoning, text and two
parallel calls, the second through ``defer_execute``), both results (the second an
error), then an image and a last user text.

The assistant turn carries the reasoning each provider would have recorded: an Anthropic
``thinking`` block with its signature, a Gemini ``thought`` part with its
``thought_signature``, DeepSeek ``reasoning_content`` text, and the OpenAI Responses
reply itself (reasoning item, output message and ``function_call`` items, parsed with
`from_responses` so the items keep the ids the Responses API needs to pair a reasoning
item with the item after it). Every adapter replays its own provider's reasoning
unchanged and drops the others (reported as ``dropped_foreign_part``).

DeepSeek's golden session has no image and no ``strict`` flag: DeepSeek's Chat API takes
text content only, and ``strict`` is a beta-endpoint feature there (its profile says so:
``media=False``, ``strict_schemas=False``). The two tests at the end compile the full
session for DeepSeek and check that the image is dropped and no tool is sent strict.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from anthropic.resources.messages import Messages
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from google.genai import types as genai_types
from google.genai.models import Models
from openai.resources.chat.completions import Completions
from openai.resources.responses import Responses
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

from contextchef import (
    TARGETS,
    Allowed,
    CompiledRequest,
    ContextChef,
    MediaPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolResult,
    from_responses,
    tool_results,
    user,
)
from sdk_check import interactions_problems

MODEL = "golden-model"
MAX_TOKENS = 1024

# -- the session ----------------------------------------------------------------------------

SYSTEM = "You are a careful coding agent."
PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5Erk"
    "Jggg=="
)
PNG_DATA_URL = f"data:image/png;base64,{PNG}"

READ_FILE: dict[str, Any] = {  # Anthropic shape; resident
    "name": "read_file",
    "description": "Read a text file from the workspace.",
    "input_schema": {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Workspace-relative path."}},
        "required": ["path"],
    },
}
SEARCH_WEB: dict[str, Any] = {  # MCP shape; deferred
    "name": "search_web",
    "description": "Search the web.",
    "inputSchema": {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
}


def set_log_level(*, strict: bool) -> dict[str, Any]:
    """OpenAI Chat shape; resident; an enum, and ``strict`` when asked."""
    function: dict[str, Any] = {
        "name": "set_log_level",
        "description": "Set the service log level.",
        "parameters": {
            "type": "object",
            "properties": {
                "level": {"type": "string", "enum": ["debug", "info", "warning", "error"]}
            },
            "required": ["level"],
            "additionalProperties": False,
        },
    }
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


QUESTION = "What does this project do? Check the README and the web."
PLAN = "Read the README, then search the web."
SAY = "I'll read the README and search the web."
READ_ARGS = '{"path": "README.md"}'
SEARCH_ARGS = '{"tool_name": "search_web", "params": {"query": "contextchef"}}'
README_TEXT = "# contextchef\nCompiles agent state."
SEARCH_ERROR = "search_web failed: HTTP 503"
LAST_TEXT = "Summarize what you found."

ANTHROPIC_THINKING = ReasoningPart(
    provider="anthropic",
    text=PLAN,
    provider_data={
        "provider": "anthropic",
        "block": {"type": "thinking", "thinking": PLAN, "signature": "c2lnLWFudGhyb3BpYw=="},
    },
)
GEMINI_THOUGHT = ReasoningPart(
    provider="gemini",
    text=PLAN,
    provider_data={
        "provider": "gemini",
        "part": {"text": PLAN, "thought": True, "thought_signature": "c2lnLWdlbWluaQ=="},
    },
)
DEEPSEEK_REASONING = ReasoningPart(provider="deepseek", text=PLAN)
# The assistant turn as the Responses API returned it (output items, sent back as input).
RESPONSES_TURN: list[dict[str, Any]] = [
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": PLAN}],
        "encrypted_content": "gAAAAB-opaque",
    },
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": SAY, "annotations": []}],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "read_file",
        "arguments": READ_ARGS,
        "status": "completed",
    },
    {
        "type": "function_call",
        "id": "fc_2",
        "call_id": "call_2",
        "name": "defer_execute",
        "arguments": SEARCH_ARGS,
        "status": "completed",
    },
]


def assistant_turn() -> Message:
    """Reasoning from every provider, then the Responses turn (reasoning, text, 2 calls)."""
    parsed = from_responses(RESPONSES_TURN)
    assert parsed.notes == ()
    (turn,) = parsed.messages
    assert isinstance(turn.parts[0], ReasoningPart) and turn.parts[0].provider == "openai"
    parts = (ANTHROPIC_THINKING, GEMINI_THOUGHT, DEEPSEEK_REASONING, *turn.parts)
    return Message(role="assistant", parts=parts)


def build_session(*, image: bool = True, strict: bool = True) -> ContextChef:
    """The known session (see the module docstring); built fresh on every call."""
    chef = ContextChef(defer=["search_web"])
    chef.register_tools([READ_FILE, set_log_level(strict=strict), SEARCH_WEB])
    chef.set_system_prompt(SYSTEM)
    answer = assistant_turn()
    assert [c.name for c in answer.tool_calls] == ["read_file", "defer_execute"]
    for call in answer.tool_calls:  # a history the gate would have let through
        assert isinstance(chef.check_tool_call(call), Allowed), call
    media = (MediaPart(media_type="image/png", data=PNG),) if image else ()
    chef.set_history(
        [
            user(QUESTION),
            answer,
            tool_results(
                [
                    ToolResult(call_id="call_1", name="read_file", content=README_TEXT),
                    ToolResult(
                        call_id="call_2", name="defer_execute", content=SEARCH_ERROR, is_error=True
                    ),
                ]
            ),
            Message(role="user", parts=(*media, TextPart(text=LAST_TEXT))),
        ]
    )
    return chef


SESSION_OPTIONS: dict[str, dict[str, bool]] = {"deepseek": {"image": False, "strict": False}}


def compile_golden(target: str, chef: ContextChef | None = None) -> CompiledRequest:
    chef = chef or build_session(**SESSION_OPTIONS.get(target, {}))
    return chef.compile(target, model=MODEL, max_tokens=MAX_TOKENS)


# -- the golden payloads --------------------------------------------------------------------
#
# Generated once by printing the compiled payloads, then read against each provider's API
# reference (see the comments) before freezing.

TOOL_SEARCH_DESCRIPTION = (
    "Fetch the full parameter schemas of deferred tools. Deferred tools are listed below by name "
    "only; you must load a tool's schema with this tool before calling it with defer_execute.\n"
    "Give exactly one of:\n"
    "- tool_names: exact tool names from the list (preferred when you know the name);\n"
    "- queries: keywords describing the capability you need, written in the language of the "
    "tools' descriptions; keywords in another language (such as the user's words: "
    '["create issue", "创建问题"] for English tools) count for less.\n'
    'Results show each tool\'s parameters; then call defer_execute({"tool_name": ..., "params": '
    "{...}}).\n"
    "\n"
    "<available_deferred_tools>\n"
    "search_web\n"
    "</available_deferred_tools>"
)
DEFER_EXECUTE_DESCRIPTION = (
    "Call a deferred tool. First load its schema with tool_search, then pass its exact name as "
    "tool_name and its arguments as params (a JSON object that follows the loaded schema). "
    "Arguments are checked against that schema before the tool runs; an invalid call returns the "
    "problems and the expected schema."
)

# Anthropic Messages (https://docs.anthropic.com/en/api/messages): ``system`` as text blocks
# with the one cache breakpoint on its last block (tools render before system, so the
# breakpoint caches both); the signed thinking block first in the assistant turn, as
# recorded; tool_result blocks first in the next user turn, the error one flagged
# ``is_error``, then the image and text (the normalizer merged the two user messages).
EXPECTED_ANTHROPIC: dict[str, Any] = {
    "model": "golden-model",
    "max_tokens": 1024,
    "system": [
        {
            "type": "text",
            "text": "You are a careful coding agent.",
            "cache_control": {"type": "ephemeral"},
        },
    ],
    "tools": [
        {
            "name": "read_file",
            "description": "Read a text file from the workspace.",
            "input_schema": {
                "properties": {
                    "path": {"description": "Workspace-relative path.", "type": "string"},
                },
                "required": ["path"],
                "type": "object",
            },
        },
        {
            "name": "set_log_level",
            "description": "Set the service log level.",
            "input_schema": {
                "additionalProperties": False,
                "properties": {
                    "level": {"enum": ["debug", "info", "warning", "error"], "type": "string"},
                },
                "required": ["level"],
                "type": "object",
            },
        },
        {
            "name": "tool_search",
            "description": TOOL_SEARCH_DESCRIPTION,
            "input_schema": {
                "additionalProperties": False,
                "properties": {
                    "tool_names": {
                        "description": "Exact names of deferred tools to load.",
                        "items": {"minLength": 1, "type": "string"},
                        "minItems": 1,
                        "type": "array",
                    },
                    "queries": {
                        "description": "Search keywords, in the language of the "
                        "tools' descriptions.",
                        "items": {"minLength": 1, "type": "string"},
                        "minItems": 1,
                        "type": "array",
                    },
                    "limit": {
                        "description": "How many matches a keyword search returns.",
                        "minimum": 1,
                        "type": "integer",
                    },
                },
                "type": "object",
            },
        },
        {
            "name": "defer_execute",
            "description": DEFER_EXECUTE_DESCRIPTION,
            "input_schema": {
                "additionalProperties": False,
                "properties": {
                    "tool_name": {
                        "description": "Exact name of the deferred tool.",
                        "type": "string",
                    },
                    "params": {"description": "Arguments for that tool.", "type": "object"},
                },
                "required": ["tool_name", "params"],
                "type": "object",
            },
        },
    ],
    "messages": [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "What does this project do? Check the README and the web.",
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "Read the README, then search the web.",
                    "signature": "c2lnLWFudGhyb3BpYw==",
                },
                {"type": "text", "text": "I'll read the README and search the web."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "read_file",
                    "input": {"path": "README.md"},
                },
                {
                    "type": "tool_use",
                    "id": "call_2",
                    "name": "defer_execute",
                    "input": {"tool_name": "search_web", "params": {"query": "contextchef"}},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": "# contextchef\nCompiles agent state.",
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "search_web failed: HTTP 503",
                    "is_error": True,
                },
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
                # the conversation's last block is a prompt-cache breakpoint
                # (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching)
                {
                    "type": "text",
                    "text": "Summarize what you found.",
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        },
    ],
}

# OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat/create):
# system message first; no reasoning input (all four reasoning parts dropped); one
# ``role: tool`` message per call, in call order (Chat has no error flag); the image as an
# ``image_url`` data URL in the next user message; ``strict`` only on the strict tool, whose
# schema already meets the strict rules; the cap is ``max_completion_tokens``.
EXPECTED_OPENAI: dict[str, Any] = {
    "model": "golden-model",
    "messages": [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "What does this project do? Check the README and the web."},
        {
            "role": "assistant",
            "content": "I'll read the README and search the web.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "README.md"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {
                        "name": "defer_execute",
                        "arguments": (
                            '{"tool_name": "search_web", "params": {"query": "contextchef"}}'
                        ),
                    },
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "# contextchef\nCompiles agent state.",
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "search_web failed: HTTP 503"},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": PNG_DATA_URL}},
                {"type": "text", "text": "Summarize what you found."},
            ],
        },
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a text file from the workspace.",
                "parameters": {
                    "properties": {
                        "path": {"description": "Workspace-relative path.", "type": "string"},
                    },
                    "required": ["path"],
                    "type": "object",
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "set_log_level",
                "description": "Set the service log level.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "level": {"enum": ["debug", "info", "warning", "error"], "type": "string"},
                    },
                    "required": ["level"],
                    "additionalProperties": False,
                },
                "strict": True,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "tool_search",
                "description": TOOL_SEARCH_DESCRIPTION,
                "parameters": {
                    "additionalProperties": False,
                    "properties": {
                        "tool_names": {
                            "description": "Exact names of deferred tools to load.",
                            "items": {"minLength": 1, "type": "string"},
                            "minItems": 1,
                            "type": "array",
                        },
                        "queries": {
                            "description": "Search keywords, in the language of the "
                            "tools' descriptions.",
                            "items": {"minLength": 1, "type": "string"},
                            "minItems": 1,
                            "type": "array",
                        },
                        "limit": {
                            "description": "How many matches a keyword search returns.",
                            "minimum": 1,
                            "type": "integer",
                        },
                    },
                    "type": "object",
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "defer_execute",
                "description": DEFER_EXECUTE_DESCRIPTION,
                "parameters": {
                    "additionalProperties": False,
                    "properties": {
                        "tool_name": {
                            "description": "Exact name of the deferred tool.",
                            "type": "string",
                        },
                        "params": {"description": "Arguments for that tool.", "type": "object"},
                    },
                    "required": ["tool_name", "params"],
                    "type": "object",
                },
            },
        },
    ],
    "max_completion_tokens": 1024,
}

# DeepSeek (https://api-docs.deepseek.com/guides/thinking_mode): Chat Completions plus
# ``reasoning_content`` on the assistant message of a tool-calling turn (DeepSeek answers 400
# without it); the cap is ``max_tokens``.
EXPECTED_DEEPSEEK: dict[str, Any] = {
    "model": "golden-model",
    "messages": [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "What does this project do? Check the README and the web."},
        {
            "role": "assistant",
            "content": "I'll read the README and search the web.",
            "reasoning_content": "Read the README, then search the web.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "README.md"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {
                        "name": "defer_execute",
                        "arguments": (
                            '{"tool_name": "search_web", "params": {"query": "contextchef"}}'
                        ),
                    },
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "# contextchef\nCompiles agent state.",
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "search_web failed: HTTP 503"},
        {"role": "user", "content": "Summarize what you found."},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a text file from the workspace.",
                "parameters": {
                    "properties": {
                        "path": {"description": "Workspace-relative path.", "type": "string"},
                    },
                    "required": ["path"],
                    "type": "object",
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "set_log_level",
                "description": "Set the service log level.",
                "parameters": {
                    "additionalProperties": False,
                    "properties": {
                        "level": {"enum": ["debug", "info", "warning", "error"], "type": "string"},
                    },
                    "required": ["level"],
                    "type": "object",
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "tool_search",
                "description": TOOL_SEARCH_DESCRIPTION,
                "parameters": {
                    "additionalProperties": False,
                    "properties": {
                        "tool_names": {
                            "description": "Exact names of deferred tools to load.",
                            "items": {"minLength": 1, "type": "string"},
                            "minItems": 1,
                            "type": "array",
                        },
                        "queries": {
                            "description": "Search keywords, in the language of the "
                            "tools' descriptions.",
                            "items": {"minLength": 1, "type": "string"},
                            "minItems": 1,
                            "type": "array",
                        },
                        "limit": {
                            "description": "How many matches a keyword search returns.",
                            "minimum": 1,
                            "type": "integer",
                        },
                    },
                    "type": "object",
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "defer_execute",
                "description": DEFER_EXECUTE_DESCRIPTION,
                "parameters": {
                    "additionalProperties": False,
                    "properties": {
                        "tool_name": {
                            "description": "Exact name of the deferred tool.",
                            "type": "string",
                        },
                        "params": {"description": "Arguments for that tool.", "type": "object"},
                    },
                    "required": ["tool_name", "params"],
                    "type": "object",
                },
            },
        },
    ],
    "max_tokens": 1024,
}

# OpenAI Responses (https://platform.openai.com/docs/api-reference/responses/create):
# ``instructions``; flat function tools with an explicit ``strict`` (the API defaults it to
# true); the recorded reasoning item directly followed by the recorded output message and
# ``function_call`` items with their ids; ``function_call_output`` items joined by
# ``call_id``; ``input_image`` with a data URL; the cap is ``max_output_tokens``.
EXPECTED_RESPONSES: dict[str, Any] = {
    "model": "golden-model",
    "instructions": "You are a careful coding agent.",
    "tools": [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a text file from the workspace.",
            "parameters": {
                "properties": {
                    "path": {"description": "Workspace-relative path.", "type": "string"},
                },
                "required": ["path"],
                "type": "object",
            },
            "strict": False,
        },
        {
            "type": "function",
            "name": "set_log_level",
            "description": "Set the service log level.",
            "parameters": {
                "type": "object",
                "properties": {
                    "level": {"enum": ["debug", "info", "warning", "error"], "type": "string"},
                },
                "required": ["level"],
                "additionalProperties": False,
            },
            "strict": True,
        },
        {
            "type": "function",
            "name": "tool_search",
            "description": TOOL_SEARCH_DESCRIPTION,
            "parameters": {
                "additionalProperties": False,
                "properties": {
                    "tool_names": {
                        "description": "Exact names of deferred tools to load.",
                        "items": {"minLength": 1, "type": "string"},
                        "minItems": 1,
                        "type": "array",
                    },
                    "queries": {
                        "description": "Search keywords, in the language of the "
                        "tools' descriptions.",
                        "items": {"minLength": 1, "type": "string"},
                        "minItems": 1,
                        "type": "array",
                    },
                    "limit": {
                        "description": "How many matches a keyword search returns.",
                        "minimum": 1,
                        "type": "integer",
                    },
                },
                "type": "object",
            },
            "strict": False,
        },
        {
            "type": "function",
            "name": "defer_execute",
            "description": DEFER_EXECUTE_DESCRIPTION,
            "parameters": {
                "additionalProperties": False,
                "properties": {
                    "tool_name": {
                        "description": "Exact name of the deferred tool.",
                        "type": "string",
                    },
                    "params": {"description": "Arguments for that tool.", "type": "object"},
                },
                "required": ["tool_name", "params"],
                "type": "object",
            },
            "strict": False,
        },
    ],
    "input": [
        {
            "type": "message",
            "role": "user",
            "content": "What does this project do? Check the README and the web.",
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Read the README, then search the web."}],
            "encrypted_content": "gAAAAB-opaque",
        },
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [
                {
                    "type": "output_text",
                    "text": "I'll read the README and search the web.",
                    "annotations": [],
                },
            ],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "read_file",
            "arguments": '{"path": "README.md"}',
            "status": "completed",
        },
        {
            "type": "function_call",
            "id": "fc_2",
            "call_id": "call_2",
            "name": "defer_execute",
            "arguments": '{"tool_name": "search_web", "params": {"query": "contextchef"}}',
            "status": "completed",
        },
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": "# contextchef\nCompiles agent state.",
        },
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": "search_web failed: HTTP 503",
        },
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_image", "image_url": PNG_DATA_URL, "detail": "auto"},
                {"type": "input_text", "text": "Summarize what you found."},
            ],
        },
    ],
    "max_output_tokens": 1024,
}

# Gemini via google-genai ``generate_content``
# (https://ai.google.dev/gemini-api/docs/function-calling): keys in the SDK's snake_case;
# ``config`` holds the system instruction, one Tool with every declaration as
# ``parameters_json_schema``, automatic function calling off, and ``max_output_tokens``;
# the recorded thought part (with its signature) replayed first in the ``model`` turn;
# both ``function_response`` parts (``output`` / ``error``) in one user Content, in call
# order, followed by the image and text (roles alternate).
EXPECTED_GEMINI: dict[str, Any] = {
    "model": "golden-model",
    "contents": [
        {
            "role": "user",
            "parts": [{"text": "What does this project do? Check the README and the web."}],
        },
        {
            "role": "model",
            "parts": [
                {
                    "text": "Read the README, then search the web.",
                    "thought": True,
                    "thought_signature": "c2lnLWdlbWluaQ==",
                },
                {"text": "I'll read the README and search the web."},
                {
                    "function_call": {
                        "id": "call_1",
                        "name": "read_file",
                        "args": {"path": "README.md"},
                    },
                },
                {
                    "function_call": {
                        "id": "call_2",
                        "name": "defer_execute",
                        "args": {"tool_name": "search_web", "params": {"query": "contextchef"}},
                    },
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "function_response": {
                        "id": "call_1",
                        "name": "read_file",
                        "response": {"output": "# contextchef\nCompiles agent state."},
                    },
                },
                {
                    "function_response": {
                        "id": "call_2",
                        "name": "defer_execute",
                        "response": {"error": "search_web failed: HTTP 503"},
                    },
                },
                {"inline_data": {"mime_type": "image/png", "data": PNG}},
                {"text": "Summarize what you found."},
            ],
        },
    ],
    "config": {
        "system_instruction": "You are a careful coding agent.",
        "tools": [
            {
                "function_declarations": [
                    {
                        "name": "read_file",
                        "description": "Read a text file from the workspace.",
                        "parameters_json_schema": {
                            "properties": {
                                "path": {
                                    "description": "Workspace-relative path.",
                                    "type": "string",
                                },
                            },
                            "required": ["path"],
                            "type": "object",
                        },
                    },
                    {
                        "name": "set_log_level",
                        "description": "Set the service log level.",
                        "parameters_json_schema": {
                            "additionalProperties": False,
                            "properties": {
                                "level": {
                                    "enum": ["debug", "info", "warning", "error"],
                                    "type": "string",
                                },
                            },
                            "required": ["level"],
                            "type": "object",
                        },
                    },
                    {
                        "name": "tool_search",
                        "description": TOOL_SEARCH_DESCRIPTION,
                        "parameters_json_schema": {
                            "additionalProperties": False,
                            "properties": {
                                "tool_names": {
                                    "description": "Exact names of deferred tools to load.",
                                    "items": {"minLength": 1, "type": "string"},
                                    "minItems": 1,
                                    "type": "array",
                                },
                                "queries": {
                                    "description": (
                                        "Search keywords, in the language of the "
                                        "tools' descriptions."
                                    ),
                                    "items": {"minLength": 1, "type": "string"},
                                    "minItems": 1,
                                    "type": "array",
                                },
                                "limit": {
                                    "description": "How many matches a keyword search returns.",
                                    "minimum": 1,
                                    "type": "integer",
                                },
                            },
                            "type": "object",
                        },
                    },
                    {
                        "name": "defer_execute",
                        "description": DEFER_EXECUTE_DESCRIPTION,
                        "parameters_json_schema": {
                            "additionalProperties": False,
                            "properties": {
                                "tool_name": {
                                    "description": "Exact name of the deferred tool.",
                                    "type": "string",
                                },
                                "params": {
                                    "description": "Arguments for that tool.",
                                    "type": "object",
                                },
                            },
                            "required": ["tool_name", "params"],
                            "type": "object",
                        },
                    },
                ],
            },
        ],
        "automatic_function_calling": {"disable": True},
        "max_output_tokens": 1024,
    },
}

EXPECTED_INTERACTIONS: dict[str, Any] = {
    "model": "golden-model",
    "system_instruction": "You are a careful coding agent.",
    "tools": [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a text file from the workspace.",
            "parameters": {
                "properties": {
                    "path": {"description": "Workspace-relative path.", "type": "string"}
                },
                "required": ["path"],
                "type": "object",
            },
        },
        {
            "type": "function",
            "name": "set_log_level",
            "description": "Set the service log level.",
            "parameters": {
                "additionalProperties": False,
                "properties": {
                    "level": {"enum": ["debug", "info", "warning", "error"], "type": "string"}
                },
                "required": ["level"],
                "type": "object",
            },
        },
        {
            "type": "function",
            "name": "tool_search",
            "description": "Fetch the full parameter schemas of deferred tools. Deferred "
            "tools are listed below by name only; you must load a tool's "
            "schema with this tool before calling it with defer_execute.\n"
            "Give exactly one of:\n"
            "- tool_names: exact tool names from the list (preferred when you "
            "know the name);\n"
            "- queries: keywords describing the capability you need, written in "
            "the language of the tools' descriptions; keywords in another language "
            "(such as the user's words: "
            '["create issue", "创建问题"] for English tools) count for less.\n'
            "Results show each tool's parameters; then call "
            'defer_execute({"tool_name": ..., "params": {...}}).\n'
            "\n"
            "<available_deferred_tools>\n"
            "search_web\n"
            "</available_deferred_tools>",
            "parameters": {
                "additionalProperties": False,
                "properties": {
                    "tool_names": {
                        "description": "Exact names of deferred tools to load.",
                        "items": {"minLength": 1, "type": "string"},
                        "minItems": 1,
                        "type": "array",
                    },
                    "queries": {
                        "description": "Search keywords, in the language of the "
                        "tools' descriptions.",
                        "items": {"minLength": 1, "type": "string"},
                        "minItems": 1,
                        "type": "array",
                    },
                    "limit": {
                        "description": "How many matches a keyword search returns.",
                        "minimum": 1,
                        "type": "integer",
                    },
                },
                "type": "object",
            },
        },
        {
            "type": "function",
            "name": "defer_execute",
            "description": "Call a deferred tool. First load its schema with tool_search, "
            "then pass its exact name as tool_name and its arguments as params "
            "(a JSON object that follows the loaded schema). Arguments are "
            "checked against that schema before the tool runs; an invalid call "
            "returns the problems and the expected schema.",
            "parameters": {
                "additionalProperties": False,
                "properties": {
                    "tool_name": {
                        "description": "Exact name of the deferred tool.",
                        "type": "string",
                    },
                    "params": {"description": "Arguments for that tool.", "type": "object"},
                },
                "required": ["tool_name", "params"],
                "type": "object",
            },
        },
    ],
    "input": [
        {
            "type": "user_input",
            "content": [
                {"type": "text", "text": "What does this project do? Check the README and the web."}
            ],
        },
        {
            "type": "model_output",
            "content": [{"type": "text", "text": "I'll read the README and search the web."}],
        },
        {
            "type": "function_call",
            "id": "call_1",
            "name": "read_file",
            "arguments": {"path": "README.md"},
        },
        {
            "type": "function_call",
            "id": "call_2",
            "name": "defer_execute",
            "arguments": {"tool_name": "search_web", "params": {"query": "contextchef"}},
        },
        {
            "type": "function_result",
            "call_id": "call_1",
            "name": "read_file",
            "result": "# contextchef\nCompiles agent state.",
        },
        {
            "type": "function_result",
            "call_id": "call_2",
            "name": "defer_execute",
            "result": "search_web failed: HTTP 503",
            "is_error": True,
        },
        {
            "type": "user_input",
            "content": [
                {
                    "type": "image",
                    "data": PNG,
                    "mime_type": "image/png",
                },
                {"type": "text", "text": "Summarize what you found."},
            ],
        },
    ],
    "generation_config": {"max_output_tokens": 1024},
    "store": False,
}

GOLDEN: dict[str, dict[str, Any]] = {
    "anthropic": EXPECTED_ANTHROPIC,
    "deepseek": EXPECTED_DEEPSEEK,
    "gemini": EXPECTED_GEMINI,
    "gemini-interactions": EXPECTED_INTERACTIONS,
    "openai": EXPECTED_OPENAI,
    "responses": EXPECTED_RESPONSES,
}

# What the normalizer reported, as (kind, index in the stored history). Every target drops
# the other providers' reasoning parts of message 1; Anthropic and Gemini merge message 3
# (image and text) into the tool-results message before it.
FOREIGN_REASONING = [("dropped_foreign_part", 1)] * 3
EXPECTED_CHANGES: dict[str, list[tuple[str, int]]] = {
    "anthropic": [*FOREIGN_REASONING, ("merged_roles", 3)],
    "deepseek": FOREIGN_REASONING,
    "gemini": [*FOREIGN_REASONING, ("merged_roles", 3)],
    # generateContent's thought part too: its signature is bound to that API
    "gemini-interactions": [*FOREIGN_REASONING, ("dropped_foreign_part", 1)],
    "openai": [*FOREIGN_REASONING, ("dropped_foreign_part", 1)],  # no reasoning input at all
    "responses": FOREIGN_REASONING,
}


def test_every_target_has_a_golden_payload() -> None:
    assert sorted(GOLDEN) == sorted(TARGETS)


@pytest.mark.parametrize("target", TARGETS)
def test_golden_payload(target: str) -> None:
    compiled = compile_golden(target)
    assert compiled.target == target
    assert compiled.payload == GOLDEN[target]
    # Key order too: it is what the SDK puts on the wire.
    assert json.dumps(compiled.payload, ensure_ascii=False) == json.dumps(
        GOLDEN[target], ensure_ascii=False
    )
    assert [(c.kind, c.index) for c in compiled.changes] == EXPECTED_CHANGES[target]


@pytest.mark.parametrize("target", TARGETS)
def test_same_state_compiles_to_the_same_bytes(target: str) -> None:
    chef = build_session(**SESSION_OPTIONS.get(target, {}))
    first = compile_golden(target, chef).to_json()
    assert compile_golden(target, chef).to_json() == first
    assert compile_golden(target).to_json() == first  # a session rebuilt from scratch


# -- the SDK request types ------------------------------------------------------------------

SDK_CALLS: dict[str, Callable[..., Any]] = {
    "anthropic": Messages.create,
    "deepseek": Completions.create,  # the OpenAI SDK with DeepSeek's base_url
    "gemini": Models.generate_content,
    "openai": Completions.create,
    "responses": Responses.create,
}
REQUEST_TYPES: dict[str, Any] = {
    "anthropic": MessageCreateParamsNonStreaming,
    "deepseek": CompletionCreateParamsNonStreaming,
    "openai": CompletionCreateParamsNonStreaming,
    "responses": ResponseCreateParamsNonStreaming,
}


@functools.cache
def request_adapter(target: str) -> TypeAdapter[Any]:
    # Cached, so an adapter outlives the lazy validators it returns (pydantic-core can
    # panic when a pending ValidatorIterator outlives its adapter).
    return TypeAdapter(REQUEST_TYPES[target])


def drain(value: object) -> None:
    """Consume pydantic's lazy ``Iterable[...]`` validators so their items get validated."""
    if isinstance(value, dict):
        for item in value.values():
            drain(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            drain(item)
    elif isinstance(value, Iterator):
        for item in list(value):
            drain(item)


def check_sdk_request(target: str, payload: dict[str, Any]) -> None:
    """Raise if `payload` does not fit the SDK call and its request type.

    TypedDict validation ignores unknown keys (DeepSeek's ``reasoning_content`` passes the
    OpenAI types that way); the google-genai models forbid them.
    """
    if target == "gemini-interactions":  # google-genai's interactions.create takes **body
        assert interactions_problems(payload) == []
        return
    accepted = inspect.signature(SDK_CALLS[target]).parameters
    assert [key for key in payload if key not in accepted] == []
    if target == "gemini":
        genai_types.GenerateContentConfig.model_validate(payload["config"])
        for content in payload["contents"]:
            genai_types.Content.model_validate(content)
        return
    drain(request_adapter(target).validate_python(payload))


@pytest.mark.parametrize("target", TARGETS)
def test_golden_payload_fits_the_sdk_request_type(target: str) -> None:
    check_sdk_request(target, compile_golden(target).payload)


# -- DeepSeek: what the full session would send (not frozen: wrong for DeepSeek) ---------


def deepseek_full_payload() -> dict[str, Any]:
    return compile_golden("deepseek", build_session()).payload


def test_deepseek_receives_text_content_only() -> None:
    messages = deepseek_full_payload()["messages"]
    assert all(isinstance(m.get("content"), (str, type(None))) for m in messages)


def test_deepseek_tools_carry_no_strict_flag() -> None:
    tools = deepseek_full_payload()["tools"]
    assert [t["function"]["name"] for t in tools if "strict" in t["function"]] == []
