"""Where ``role: "system"`` messages may sit, what they may carry, and prefill.

Rule ids are this fake's numbering of the rules in Anthropic's documentation (see
`contextchef.testing._binding`); doc paths are under https://platform.claude.com/docs/en/
(``build-with-claude/mid-conversation-system-messages``,
``build-with-claude/preserved-thinking/change-tools-or-instructions``,
``about-claude/models/whats-new-fable-5-1``). Messages follow the API's wording where it
is known (``role 'system' must precede an 'assistant' message or end the array``, the
prefill refusal) and read close to it elsewhere.

* `anthropic_system_message_placement` (R14, known models only): a model that does not
  take system messages refuses any; otherwise one holding text or tool blocks must come
  right after a ``user`` message (one holding only tool results counts) or a paused
  assistant turn ending in a server tool result, and must end ``messages`` or be followed
  by an ``assistant`` message. Consecutive system messages are judged as one group; a
  group of effort-only messages (``content: []`` with ``output_config``) may sit anywhere.
* `anthropic_system_message_fields` (R7, R15, R19, R20, any model): ``clear_at`` needs the
  ``mid-conversation-system-clear-at-2026-08-21`` beta and, when turn-scoped
  (``next_user_message``), text blocks only without ``cache_control`` and no
  ``output_config``; ``output_config`` needs ``mid-conversation-output-config-2026-07-01``;
  ``tool_addition``/``tool_removal`` blocks need ``inline-tools-2026-09-15`` or
  ``mid-conversation-tool-changes-2026-07-01`` (inline definitions only the former), are
  not allowed after a paused turn, and a ``tool_reference`` in them names a tool declared in
  ``tools`` or by an earlier inline definition (``tool_reference_unresolved``).
* `anthropic_no_prefill` (R18, known models only): on models that refuse prefill, the last
  message is not the assistant's, unless it is a paused turn sent back to continue.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._body import NO_HEADERS, as_list, betas, dicts, server_result
from contextchef.testing._claude import claude_model
from contextchef.testing._records import RecordedRequest, provider_worded

__all__ = [
    "CLEAR_AT_BETA",
    "INLINE_TOOLS_BETA",
    "OUTPUT_CONFIG_BETA",
    "TOOL_CHANGES_BETA",
    "anthropic_no_prefill",
    "anthropic_system_message_fields",
    "anthropic_system_message_placement",
]

CLEAR_AT_BETA = "mid-conversation-system-clear-at-2026-08-21"
"""The beta for ``clear_at`` on system messages (R15)."""
OUTPUT_CONFIG_BETA = "mid-conversation-output-config-2026-07-01"
"""The beta for ``output_config`` on system messages (R7)."""
INLINE_TOOLS_BETA = "inline-tools-2026-09-15"
"""The beta for tool changes by reference and by definition (R19, R20)."""
TOOL_CHANGES_BETA = "mid-conversation-tool-changes-2026-07-01"
"""The older beta for tool changes by reference only (R19)."""
_TOOL_CHANGES = ("tool_addition", "tool_removal")


def _role(message: object) -> object:
    return message.get("role") if isinstance(message, dict) else None


def _paused(message: object) -> bool:
    """An assistant turn ending in a server tool result (``pause_turn``, sent back)."""
    if _role(message) != "assistant" or not isinstance(message, dict):
        return False
    content = as_list(message.get("content"))
    return bool(content) and server_result(content[-1])


def _effort_only(message: object) -> bool:
    return (
        isinstance(message, dict)
        and message.get("content") == []
        and isinstance(message.get("output_config"), dict)
    )


def _groups(messages: list[Any]) -> Iterator[tuple[int, int]]:
    """(first, last) indexes of each run of consecutive system messages."""
    start = None
    for i, message in enumerate([*messages, None]):
        if _role(message) == "system":
            start = i if start is None else start
        elif start is not None:
            yield start, i - 1
            start = None


@provider_worded
def anthropic_system_message_placement(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """System messages only on models taking them, and only where they may sit (R14).

    Reports the first misplaced group only, as the API does. Unknown models: not checked.
    """
    model = claude_model(body.get("model"))
    messages = as_list(body.get("messages"))
    if model is None:
        return
    for first, last in _groups(messages):
        if not model.system_messages:
            yield (
                f"messages.{first}: role 'system' is not supported by Claude {model.label}; "
                "put system instructions in the top-level `system` parameter"
            )
            return
        if all(_effort_only(m) for m in messages[first : last + 1]):
            continue
        before = messages[first - 1] if first > 0 else None
        if _role(before) != "user" and not _paused(before):
            yield (
                f"messages.{first}: role 'system' must follow a 'user' message (or an "
                "assistant turn paused after a server tool result)"
            )
            return
        after = messages[last + 1] if last + 1 < len(messages) else None
        if after is not None and _role(after) != "assistant":
            yield (
                f"messages.{last}: role 'system' must precede an 'assistant' message "
                "or end the array"
            )
            return


def _declared(body: Mapping[str, Any]) -> set[object]:
    return {tool.get("name") for _, tool in dicts(body.get("tools"))}


def _tool_change(
    where: str, block: Mapping[str, Any], active: frozenset[str], known: set[object], paused: bool
) -> Iterator[str]:
    """Problems of one ``tool_addition`` / ``tool_removal`` block; records definitions."""
    kind = block.get("type")
    if INLINE_TOOLS_BETA not in active and TOOL_CHANGES_BETA not in active:
        yield (
            f"{where}: `{kind}` blocks require the `{INLINE_TOOLS_BETA}` (or "
            f"`{TOOL_CHANGES_BETA}`) value in the `anthropic-beta` header"
        )
        return
    if paused:
        yield f"{where}: `{kind}` blocks cannot follow a paused assistant turn"
    tool = block.get("tool")
    tool_type = tool.get("type") if isinstance(tool, dict) else None
    if isinstance(tool, dict) and tool_type == "tool_definition":
        definition = tool.get("definition")
        if kind != "tool_addition" or INLINE_TOOLS_BETA not in active:
            yield (
                f"{where}.tool: a `tool_definition` goes in a `tool_addition` block, "
                f"with the `{INLINE_TOOLS_BETA}` value in the `anthropic-beta` header"
            )
        elif isinstance(definition, dict):
            known.add(definition.get("name"))
    elif isinstance(tool, dict) and tool_type == "tool_reference":
        name = tool.get("name")
        if name not in known:
            yield (
                f"{where}.tool: tool_reference names {name!r}, which is neither in `tools` nor "
                "defined by an earlier `tool_addition` (tool_reference_unresolved)"
            )


@provider_worded
def anthropic_system_message_fields(
    body: Mapping[str, Any],
    earlier: Sequence[RecordedRequest],
    *,
    headers: Mapping[str, str] = NO_HEADERS,
) -> Iterator[str]:
    """``clear_at``, ``output_config`` and tool changes on system messages (R7, R15, R19)."""
    active = betas(headers)
    known = _declared(body)
    messages = as_list(body.get("messages"))
    for i, message in dicts(messages):
        if "clear_at" in message and (
            message.get("role") != "system" or CLEAR_AT_BETA not in active
        ):
            yield f"messages.{i}.clear_at: Extra inputs are not permitted"
        if message.get("role") != "system":
            continue
        if message.get("clear_at") not in (None, "never", "next_user_message"):
            yield f"messages.{i}.clear_at: Input should be 'next_user_message' or 'never'"
        turn_scoped = message.get("clear_at") == "next_user_message"
        if "output_config" in message and OUTPUT_CONFIG_BETA not in active:
            yield f"messages.{i}.output_config: Extra inputs are not permitted"
        elif turn_scoped and message.get("output_config") is not None:
            yield f"messages.{i}.output_config: not allowed with clear_at 'next_user_message'"
        paused = _paused(messages[i - 1]) if i > 0 else False
        for j, block in dicts(message.get("content")):
            where = f"messages.{i}.content.{j}"
            if turn_scoped and block.get("type") != "text":
                yield (
                    f"{where}: a system message with clear_at 'next_user_message' holds "
                    "text blocks only"
                )
                continue
            if turn_scoped and "cache_control" in block:
                yield f"{where}.cache_control: not allowed with clear_at 'next_user_message'"
            if block.get("type") in _TOOL_CHANGES:
                yield from _tool_change(where, block, active, known, paused)


PREFILL_REFUSED = (
    "This model does not support assistant message prefill. "
    "The conversation must end with a user message."
)
"""The API's refusal of a request ending in an assistant message (R18)."""


@provider_worded
def anthropic_no_prefill(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """No assistant prefill on models that refuse it (R18); a paused turn may be continued.

    An on-demand compaction request samples nothing, and its messages may end in an
    assistant turn: compaction-keep-recent-turns.md refuses only one whose tool call has
    no result yet (`anthropic_compaction_closed_turn`).
    """
    model = claude_model(body.get("model"))
    messages = as_list(body.get("messages"))
    if model is None or not model.rejects_prefill or not messages:
        return
    if body.get("compaction") is not None:
        return
    if _role(messages[-1]) == "assistant" and not _paused(messages[-1]):
        yield PREFILL_REFUSED
