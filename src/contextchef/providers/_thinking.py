"""Thinking blocks in sent messages, by key: what the prefix check's bindings are keyed on.

A ``thinking`` block is known by its ``signature``, a ``redacted_thinking`` block by its
``data`` (`block_key`); the session's bindings (`contextchef.session._binding`) record,
per key, the request the block was produced after, and a compile strips a block sent
after another prefix. `repeat_cause` names the one case where the block is not the
problem but its place: the same block sent again later in the conversation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

__all__ = ["block_key", "repeat_cause", "thinking_keys"]

THINKING = {"thinking": "signature", "redacted_thinking": "data"}
"""Thinking block types and the field that identifies one."""


def block_key(block: object) -> str | None:
    """``type:signature`` (or ``type:data``) of a thinking block; None for another block."""
    if not isinstance(block, (dict, Mapping)):  # a dict (records are) without the ABC check
        return None
    field = THINKING.get(str(block.get("type")))
    value = block.get(field) if field else None
    return f"{block.get('type')}:{value}" if isinstance(value, str) and value else None


def thinking_keys(entry: object) -> list[str]:
    """Keys of the thinking blocks of one wire message (none for other shapes)."""
    if not isinstance(entry, (dict, Mapping)) or entry.get("role") != "assistant":
        return []
    content = entry.get("content")
    if not isinstance(content, list):
        return []
    return [k for k in map(block_key, content) if k is not None]


def repeat_cause(entries: Sequence[object], at: int, keys: Collection[str]) -> str:
    """Why entry `at` cannot send its thinking, when one of `keys` is sent before it too.

    A block repeated byte for byte later in a conversation (hand-made or copied history;
    no model does this) comes after another prefix than the one it was produced after,
    so it is stripped like any block bound elsewhere; the cause to report is the
    repetition, not a change of what was sent. ``""`` when no earlier entry holds one.
    """
    for i in range(at):
        same = [k for k in thinking_keys(entries[i]) if k in keys]
        if same:
            kind, _, value = same[0].partition(":")
            return (
                f"wire entry {at} repeats, byte for byte, the {kind} block of wire entry {i} "
                f"(the same {THINKING[kind]}, ending {value[-12:]!r}); a thinking block is "
                "bound to the request it was produced after, so the repeat is sent without "
                "its thinking"
            )
    return ""
