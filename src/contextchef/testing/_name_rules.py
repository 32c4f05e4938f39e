"""Tool names in requests: the call names a history sends back, per provider.

Each provider checks the name of every function call it is sent back (and of every tool
it is given), not only of its tools; one illegal name in the history refuses every later
request. The fakes check them as each provider documents, with the library's own
patterns (`contextchef.history._call_names`, which cites each rule; the tool definitions'
own rules are `chat_function_names_valid` and its siblings in `contextchef.testing._rules`):

* `chat_call_names_valid`: ``messages[].tool_calls[].function.name`` matches
  ``^[a-zA-Z0-9_-]+$`` (the API's 400 ``Invalid 'messages[9].tool_calls[0].function.name':
  string does not match pattern``, mcp-use/mcp-use#90), at most 64 characters (a function
  name: "a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64",
  openai SDK ``shared_params/function_definition.py``);
* `responses_call_names_valid`: ``input[]`` ``function_call`` items' ``name``, the same
  function-name rule (Responses refuses ``tools[].name`` outside it:
  openai/openai-dotnet#441);
* `anthropic_call_names_valid`: ``tool_use`` blocks' ``name`` matches
  ``^[a-zA-Z0-9_-]{1,128}$`` (the messages API's name rule; tool definitions are
  ``{1,64}``: https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools);
* `gemini_call_names_valid`: ``functionCall`` / ``functionResponse`` names follow the
  function-name rule: "Must start with a letter or an underscore. Must be a-z, A-Z, 0-9,
  or contain underscores (_), dots (.), colons (:), or dashes (-), with a maximum length
  of 64" (the API's 400 for a declaration's name: google-gemini/gemini-cli#9535);
* `interactions_names_valid`: the same rule for ``function`` tools and ``function_call``
  / ``function_result`` steps of an interaction (its own rule is not stated:
  ../shared/research/gemini-interactions.md).

Worded as the providers word them, naming the location and the name (cut at 80).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.history._call_names import ANTHROPIC_CALL_NAME, GEMINI_NAME, OPENAI_NAME
from contextchef.testing._body import blocks, dicts, gemini_function_parts
from contextchef.testing._records import RecordedRequest

__all__ = [
    "anthropic_call_names_valid",
    "chat_call_names_valid",
    "gemini_call_names_valid",
    "interactions_names_valid",
    "responses_call_names_valid",
]

_Body = Mapping[str, Any]
_Earlier = Sequence[RecordedRequest]


def _bad(at: str, name: object, pattern: re.Pattern[str]) -> Iterator[str]:
    if not (isinstance(name, str) and pattern.fullmatch(name)):
        shown = repr(name) if not isinstance(name, str) else repr(name[:80])
        yield f"Invalid '{at}': string does not match pattern '^{pattern.pattern}$' (got {shown})"


def chat_call_names_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Each ``messages[].tool_calls[].function.name`` is a legal function name."""
    for i, message in dicts(body.get("messages")):
        for j, call in dicts(message.get("tool_calls")):
            function = call.get("function")
            if isinstance(function, dict):
                at = f"messages[{i}].tool_calls[{j}].function.name"
                yield from _bad(at, function.get("name"), OPENAI_NAME)


def responses_call_names_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Each ``function_call`` input item's ``name`` is a legal function name."""
    for i, item in dicts(body.get("input")):
        if item.get("type") == "function_call":
            yield from _bad(f"input[{i}].name", item.get("name"), OPENAI_NAME)


def anthropic_call_names_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Each ``tool_use`` block's ``name`` is a legal tool name."""
    for i, message in dicts(body.get("messages")):
        for j, block in blocks(message):
            if block.get("type") == "tool_use":
                at = f"messages.{i}.content.{j}.tool_use.name"
                yield from _bad(at, block.get("name"), ANTHROPIC_CALL_NAME)


def gemini_call_names_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Each ``functionCall`` / ``functionResponse`` name is a legal function name.

    A missing name is `gemini_function_names_present`'s to report.
    """
    for at, value in gemini_function_parts(body):
        if isinstance(value, dict) and value.get("name"):
            yield from _bad(f"{at}.name", value.get("name"), GEMINI_NAME)


def interactions_names_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``function`` tools and ``function_call`` / ``function_result`` steps: legal names."""
    for t, tool in dicts(body.get("tools")):
        if tool.get("type") == "function" and tool.get("name"):
            yield from _bad(f"tools[{t}].name", tool.get("name"), GEMINI_NAME)
    for i, step in dicts(body.get("input")):
        if step.get("type") in ("function_call", "function_result") and "name" in step:
            yield from _bad(f"input[{i}].name", step.get("name"), GEMINI_NAME)
