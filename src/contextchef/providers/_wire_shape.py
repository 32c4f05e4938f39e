"""Whether a restored ledger's wire entries are its target's wire form (a cheap check).

Called by `contextchef.providers._chain.restore_chain` on every restored ledger.

A snapshot keeps one ledger per target, and each is replayed as is on that target's next
compile. An unsigned snapshot whose ``ledgers["openai"]`` was replaced by a copy of
``ledgers["anthropic"]`` (its digests are the copy's own, so they match) would send
Anthropic blocks to Chat Completions. `foreign_entry` reads what each entry already
holds, its keys and the ``type`` of its content parts, and names what belongs to another
wire; it renders nothing. The shapes are the ones the renderers write and the official
SDKs' request types take, per wire (`Profile.wire`; a target on another's wire, such as
DeepSeek on Chat Completions, is checked as that wire):

* ``anthropic`` (Messages): ``role`` and ``content``; no ``type``, ``parts``,
  ``tool_calls`` or ``tool_call_id``; no OpenAI part type in ``content``;
* ``openai`` (Chat Completions): ``role``; no ``type`` or ``parts``;
  content parts of the Chat types (``text``, ``image_url``, ``input_audio``, ``file``,
  ``refusal``);
* ``responses``: no ``parts``, ``tool_calls`` or ``tool_call_id``; a ``message`` item
  (or one without ``type``) has content parts of the Responses types (``input_text``,
  ``input_image``, ``input_file``, ``input_audio``, ``output_text``, ``refusal``); no
  Interactions step type; a ``function_call`` has a ``call_id``;
* ``gemini``: ``parts``; no ``type``, ``content`` or ``tool_calls``;
* ``gemini-interactions``: ``type``; no ``role`` or ``parts``; no Responses-only item type;
  a ``function_call`` has no ``call_id``.

An entry that matches several wires (a Chat user message with string content is also a
valid Anthropic one) passes: it is sent the same either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._errors import SnapshotMismatchError, UnknownTargetError
from contextchef.history._forms import ledger_where

__all__ = ["check_wire_shape", "foreign_entry"]

_CHAT_PARTS = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
_RESPONSES_PARTS = frozenset(
    {"input_text", "input_image", "input_file", "input_audio", "output_text", "refusal"}
)
_OPENAI_ONLY_PARTS = (_CHAT_PARTS | _RESPONSES_PARTS) - {"text"}
_INTERACTIONS_TYPES = frozenset({"user_input", "model_output", "function_result", "thought"})
_RESPONSES_ONLY_TYPES = frozenset({"message", "function_call_output", "reasoning"})

_ROLE, _TYPE, _PARTS, _CONTENT = "role", "type", "parts", "content"
_CHAT_KEYS = ("tool_calls", "tool_call_id")
_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # target: (keys an entry must have, keys it must not have)
    "anthropic": ((_ROLE, _CONTENT), (_TYPE, _PARTS, *_CHAT_KEYS)),
    "openai": ((_ROLE,), (_TYPE, _PARTS)),
    "responses": ((), (_PARTS, *_CHAT_KEYS)),
    "gemini": ((_PARTS,), (_TYPE, _CONTENT, *_CHAT_KEYS)),
    "gemini-interactions": ((_TYPE,), (_ROLE, _PARTS)),
}


def _part_types(entry: Mapping[str, Any]) -> list[object]:
    content = entry.get(_CONTENT)
    parts = content if isinstance(content, list) else []
    return [p.get(_TYPE) for p in parts if isinstance(p, Mapping)]


def _foreign_part(target: str, entry: Mapping[str, Any]) -> object:
    """The first content part type `target` does not take, or None."""
    kind = entry.get(_TYPE)
    if target == "anthropic":
        allowed: frozenset[object] | None = None
        denied: frozenset[object] = frozenset(_OPENAI_ONLY_PARTS)
    elif target == "openai":
        allowed, denied = frozenset(_CHAT_PARTS), frozenset()
    elif target == "responses" and kind in (None, "message"):
        allowed, denied = frozenset(_RESPONSES_PARTS), frozenset()
    else:
        return None
    for part in _part_types(entry):
        if part in denied or (allowed is not None and part not in allowed):
            return part
    return None


def foreign_entry(target: str, entry: object) -> str | None:
    """What shows `entry` is not `target`'s wire form (module docstring), or None.

    Args:
        target: A wire (`Profile.wire`); an unknown one is not checked.
        entry: One recorded wire entry (a JSON object).

    Returns:
        A short reason naming the key or part type that belongs to another wire.
    """
    if target not in _KEYS or not isinstance(entry, Mapping):
        return None
    needed, banned = _KEYS[target]
    missing = [k for k in needed if k not in entry]
    if missing:
        return f"it has no {missing[0]!r}"
    present = [k for k in banned if k in entry]
    if present:
        return f"it has {present[0]!r}"
    part = _foreign_part(target, entry)
    if part is not None:
        return f"it holds a content part of type {part!r}"
    kind = entry.get(_TYPE)
    if target == "responses" and kind in _INTERACTIONS_TYPES:
        return f"its type {kind!r} is a Gemini Interactions step"
    if target == "gemini-interactions" and kind in _RESPONSES_ONLY_TYPES:
        return f"its type {kind!r} is a Responses item"
    if kind == "function_call" and (target == "responses") != ("call_id" in entry):
        return "its function_call " + ("has no" if target == "responses" else "has a") + " call_id"
    return None


_ENDS = 32
"""Entries checked at each end of a ledger: a restore stays free of per-entry work (issue
27), and a whole ledger copied under another target's key shows its wire in its first or
last turns; an entry edited in the middle of an unsigned snapshot is what signed snapshots
rule out (`contextchef.session._snapshot`)."""


def check_wire_shape(name: str, entries: Sequence[Any]) -> None:
    """Refuse a ledger (its target `name`) whose `entries` are not that target's wire form.

    Only the first and last `_ENDS` entries are read (all of a shorter ledger).

    Raises:
        SnapshotMismatchError: The first foreign entry, with the ledger, index and reason.
    """
    from contextchef.providers._targets import get_adapter

    try:
        wire = get_adapter(name).profile.wire
    except UnknownTargetError:
        return  # not a target: nothing to check it against
    ends = range(len(entries)) if len(entries) <= 2 * _ENDS else (*range(_ENDS), *range(-_ENDS, 0))
    for i in ends:
        reason = foreign_entry(wire, entries[i])
        if reason is not None:
            raise SnapshotMismatchError(
                f"{ledger_where(name)} 'wire' entry {i % len(entries)} is not in the {name} "
                f"wire form ({reason}): the ledger was recorded for another target and would send "
                "that target's entries here; nothing was restored"
            )
