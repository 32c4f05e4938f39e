"""Fake rules on whole tool calls and the turn that makes them (`contextchef.testing`).

OpenAI Chat: each call is whole, answered right after it, and each tool message answers
one; Responses: each ``function_call`` is answered once, each output follows its call;
on both, call ids are in the length range the API accepts; Anthropic, thinking on: a
final tool turn starts with its thinking. In `CHAT_RULES`, `RESPONSES_RULES` and
`ANTHROPIC_RULES` (`contextchef.testing._rules`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._body import as_list, blocks, dicts
from contextchef.testing._records import RecordedRequest

__all__ = [
    "anthropic_thinking_leads_tool_turn",
    "chat_call_ids_in_range",
    "chat_tool_calls_answered",
    "chat_tool_calls_well_formed",
    "chat_tool_message_has_call",
    "responses_call_ids_in_range",
    "responses_function_call_answered",
    "responses_item_ids_unique",
    "responses_output_has_call",
]

_Body = Mapping[str, Any]
_Earlier = Sequence[RecordedRequest]


def _has(message: Mapping[str, Any], kind: str) -> bool:
    return any(b.get("type") == kind for _, b in blocks(message))


def _call_ids(message: Mapping[str, Any]) -> list[object]:
    if message.get("role") != "assistant":
        return []
    return [c.get("id") for _, c in dicts(message.get("tool_calls"))]


def _role_of(message: object) -> object:
    return message.get("role") if isinstance(message, dict) else None


def chat_tool_calls_answered(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Each assistant ``tool_calls`` id is answered by a ``tool`` message right after it."""
    messages = as_list(body.get("messages"))
    for i, message in dicts(messages):
        ids = _call_ids(message)
        if not ids:
            continue
        end, answered = i + 1, set()
        while end < len(messages) and _role_of(messages[end]) == "tool":
            answered.add(messages[end].get("tool_call_id"))
            end += 1
        missing = [x for x in ids if x not in answered]
        if missing:
            where = f"before messages[{end}]" if end < len(messages) else "at the end"
            yield (
                f"messages[{i}]: tool_calls ids {missing} have no response message; an "
                "assistant message with tool_calls must be followed by role 'tool' messages "
                f"answering each tool_call_id ({where})"
            )


def chat_tool_message_has_call(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A ``tool`` message answers an unanswered call of the assistant message before it."""
    open_ids: set[object] = set()
    for i, message in enumerate(as_list(body.get("messages"))):
        if _role_of(message) != "tool":
            open_ids = set(_call_ids(message)) if isinstance(message, dict) else set()
            continue
        call_id = message.get("tool_call_id")
        if call_id not in open_ids:
            yield (
                f"messages[{i}]: role 'tool' message for {call_id!r} must be a response to "
                "a tool call of the preceding assistant message (missing or already answered)"
            )
        open_ids.discard(call_id)


_CHAT_CALL_FIELDS = {"function": ("name", "arguments"), "custom": ("name", "input")}
"""An assistant ``tool_calls`` entry by ``type``: the object it carries and its string fields."""


def chat_tool_calls_well_formed(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Each assistant ``tool_calls`` entry is a whole call.

    A string ``id`` and ``type`` ``function`` with ``function: {name, arguments}``
    (strings), or ``custom`` with ``custom: {name, input}`` (OpenAI API reference, Chat
    Completions, create: the assistant message's ``tool_calls``, every field required).
    """
    for i, message in dicts(body.get("messages")):
        if message.get("role") != "assistant":
            continue
        for j, call in enumerate(as_list(message.get("tool_calls"))):
            kind = call.get("type") if isinstance(call, dict) else None
            fields = _CHAT_CALL_FIELDS.get(kind) if isinstance(kind, str) else None
            inner = call.get(kind) if fields is not None and isinstance(call, dict) else None
            if not (
                fields is not None
                and isinstance(call.get("id"), str)
                and isinstance(inner, dict)
                and all(isinstance(inner.get(f), str) for f in fields)
            ):
                yield (
                    f"messages[{i}].tool_calls[{j}]: a tool call needs 'id', 'type' "
                    "('function' or 'custom') and its object: 'function' with 'name' and "
                    "'arguments' (strings), or 'custom' with 'name' and 'input'"
                )


def anthropic_thinking_leads_tool_turn(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """With ``thinking`` enabled, a final assistant tool turn starts with its thinking.

    The last ``assistant`` message, when the ``tool_result`` blocks after it answer its
    ``tool_use`` (a tool loop under way), must start with a ``thinking`` or
    ``redacted_thinking`` block (Anthropic, extended thinking, "Preserving thinking
    blocks"; the 400 says: "Expected `thinking` or `redacted_thinking`, but found
    `tool_use`... To avoid this requirement, disable `thinking`").
    """
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") in (None, "disabled"):
        return
    conversation = [(i, m) for i, m in dicts(body.get("messages")) if m.get("role") != "system"]
    turns = [k for k, (_, m) in enumerate(conversation) if m.get("role") == "assistant"]
    if not turns or not _has(conversation[turns[-1]][1], "tool_use"):
        return
    later = [m for _, m in conversation[turns[-1] + 1 :] if m.get("role") == "user"]
    if not any(_has(m, "tool_result") for m in later):
        return
    i, message = conversation[turns[-1]]
    found = blocks(message)
    first = found[0][1].get("type") if found else None
    if first not in ("thinking", "redacted_thinking"):
        yield (
            f"messages[{i}].content.0.type: Expected `thinking` or `redacted_thinking`, but "
            f"found `{first}`. When `thinking` is enabled, a final `assistant` message must "
            "start with a thinking block (preceding the lastmost set of `tool_use` and "
            "`tool_result` blocks). To avoid this requirement, disable `thinking`."
        )


def _items_of(body: _Body, kind: str) -> list[tuple[int, dict[str, Any]]]:
    return [(i, item) for i, item in dicts(body.get("input")) if item.get("type") == kind]


def responses_function_call_answered(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Every ``function_call`` has exactly one ``function_call_output`` later in ``input``."""
    outputs = _items_of(body, "function_call_output")
    seen: set[object] = set()
    for i, call in _items_of(body, "function_call"):
        call_id = call.get("call_id")
        if call_id in seen:
            yield f"input[{i}]: function_call call_id {call_id!r} is used twice"
            continue
        seen.add(call_id)
        answers = [k for k, out in outputs if out.get("call_id") == call_id and k > i]
        if len(answers) != 1:
            yield (
                f"input[{i}]: function_call {call_id!r} ({call.get('name')!r}) has "
                f"{len(answers)} function_call_output items after it; exactly one is needed"
            )


def responses_output_has_call(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Every ``function_call_output`` follows a ``function_call`` with its ``call_id``.

    Skipped with ``previous_response_id``: the calls are then stored by the provider.
    """
    if body.get("previous_response_id") is not None:
        return
    calls = _items_of(body, "function_call")
    for i, out in _items_of(body, "function_call_output"):
        if not any(c.get("call_id") == out.get("call_id") and k < i for k, c in calls):
            yield (
                f"input[{i}]: no tool call found for function_call_output with call_id "
                f"{out.get('call_id')!r}"
            )


def _out_of_range(call_id: object, limit: int) -> bool:
    return isinstance(call_id, str) and not 0 < len(call_id) <= limit


def chat_call_ids_in_range(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Call ids hold 1 to 40 characters (``tool_calls[].id`` and ``tool_call_id``).

    The API's own 400s: "Invalid 'messages[2].tool_calls[0].id': string too long.
    Expected a string with maximum length 40", and "empty string" for ``""``.
    """
    for i, message in dicts(body.get("messages")):
        found = [(f"tool_calls[{j}].id", c.get("id")) for j, c in dicts(message.get("tool_calls"))]
        found.append(("tool_call_id", message.get("tool_call_id")))
        for where, call_id in found:
            if _out_of_range(call_id, 40):
                yield (
                    f"Invalid 'messages[{i}].{where}': expected a string of 1 to 40 "
                    f"characters, got {len(str(call_id))}"
                )


def responses_call_ids_in_range(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``call_id`` of ``function_call`` and ``function_call_output`` items is 1 to 64 chars.

    The API's own 400s: "Invalid 'input[4].call_id': empty string. Expected a string with
    minimum length 1", and "string too long. Expected a string with maximum length 64".
    """
    for kind in ("function_call", "function_call_output"):
        for i, item in _items_of(body, kind):
            if _out_of_range(item.get("call_id"), 64):
                yield (
                    f"Invalid 'input[{i}].call_id': expected a string of 1 to 64 characters, "
                    f"got {len(item['call_id'])}"
                )


def responses_item_ids_unique(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """No two ``input`` items carry one ``id``.

    The API's own 400: "Duplicate item found with id fc_...: Remove duplicate items from
    your input and try again" (public reports: continuedev/continue#10723,
    OpenRouterTeam/ai-sdk-provider#254).
    """
    first: dict[str, int] = {}
    for i, item in dicts(body.get("input")):
        item_id = item.get("id")
        if isinstance(item_id, str) and item_id in first:
            yield (
                f"Duplicate item found with id {item_id} (input[{first[item_id]}] and "
                f"input[{i}]): remove duplicate items from your input"
            )
        elif isinstance(item_id, str):
            first[item_id] = i
