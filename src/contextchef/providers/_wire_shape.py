"""Whether a restored ledger's wire entries are its target's wire form (a cheap check).

Called by `contextchef.providers._chain.restore_chain` on every restored ledger.

A snapshot keeps one ledger per target, and each is replayed as is on that target's next
compile. An unsigned snapshot whose ``ledgers["openai"]`` was replaced by a copy of
``ledgers["anthropic"]`` (its digests are the copy's own, so they match) would send
Anthropic blocks to Chat Completions. `foreign_entry` reads what each entry already
holds, its keys and the ``type`` of it and of its content parts, and names what belongs
to another wire; it renders nothing. Each wire states its own shape, the one its renderer
writes and its official SDK's request types take, on its reader (`WireReader.shape`, a
`WireShape`, declared beside the reader in ``providers/<wire>/_parse.py``); a target on
another's wire, such as DeepSeek on Chat Completions, is checked as that wire
(`Profile.wire`). An entry is refused when it

* lacks a key its wire's entries have, or has one they never have;
* holds a content part its wire does not take (a closed set: Chat Completions, a
  Responses message item), or one an open wire (Anthropic) does not know and a closed
  wire takes (an OpenAI part in an Anthropic message);
* has a ``type`` its wire does not know and another wire has as its own (an Interactions
  step on Responses, a Responses item on Interactions);
* is a ``function_call`` with a ``call_id`` where its wire has none, or the other way.

The other wires' shapes are read (their packages loaded) only for a part or entry type
the target's own wire does not know, so restoring a ledger loads no other wire.
An entry that matches several wires (a Chat user message with string content is also a
valid Anthropic one) passes: it is sent the same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextchef._errors import SnapshotMismatchError, UnknownTargetError
from contextchef.history._forms import ledger_where
from contextchef.providers._reading import WireReader, WireShape, adapter_reader

__all__ = ["check_wire_shape", "foreign_entry"]

_TYPE, _CONTENT = "type", "content"


def _claimed(
    value: str, own: Callable[[WireShape], frozenset[str]], home: str
) -> WireReader | None:
    """The first wire (`WIRES` order) other than `home` whose `own` values hold `value`."""
    from contextchef.providers._targets import WIRES  # every wire, read only here

    return next((r for r in WIRES if r.wire != home and value in own(r.shape)), None)


def _closed_parts(shape: WireShape) -> frozenset[str]:
    return shape.parts if shape.closed else frozenset()


def _foreign_part(reader: WireReader, entry: Mapping[str, Any]) -> object:
    """The first content part type `reader`'s wire does not take, or None."""
    shape, kind = reader.shape, entry.get(_TYPE)
    if not (kind is None or isinstance(kind, str)) or kind not in shape.parts_in:
        return None
    content = entry.get(_CONTENT)
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, Mapping):
            continue
        found = part.get(_TYPE)
        if isinstance(found, str) and found in shape.parts:
            continue
        if shape.closed or (
            isinstance(found, str) and _claimed(found, _closed_parts, reader.wire) is not None
        ):
            return found
    return None


def _foreign(reader: WireReader, entry: object) -> str | None:
    """What shows `entry` is not in `reader`'s wire form (module docstring), or None."""
    if not isinstance(entry, Mapping):
        return None
    shape = reader.shape
    missing = [k for k in shape.needs if k not in entry]
    if missing:
        return f"it has no {missing[0]!r}"
    present = [k for k in shape.bans if k in entry]
    if present:
        return f"it has {present[0]!r}"
    part = _foreign_part(reader, entry)
    if part is not None:
        return f"it holds a content part of type {part!r}"
    kind = entry.get(_TYPE)
    if isinstance(kind, str) and shape.kinds and kind not in shape.kinds:
        home = _claimed(kind, lambda s: s.own_kinds, reader.wire)
        if home is not None:
            return f"its type {kind!r} is a {home.label} {home.shape.noun}"
    calls = kind == "function_call" and shape.call_ids is not None
    if calls and shape.call_ids != ("call_id" in entry):
        return "its function_call " + ("has no" if shape.call_ids else "has a") + " call_id"
    return None


def foreign_entry(target: str, entry: object) -> str | None:
    """What shows `entry` is not `target`'s wire form (module docstring), or None.

    Args:
        target: A wire (`Profile.wire`); an unknown one is not checked.
        entry: One recorded wire entry (a JSON object).

    Returns:
        A short reason naming the key or part type that belongs to another wire.
    """
    from contextchef.providers._targets import wire_reader

    try:
        reader = wire_reader(target)
    except (KeyError, TypeError):
        return None
    return _foreign(reader, entry)


_ENDS = 32
"""Entries checked at each end of a ledger: a restore stays free of per-entry work (issue
27), and a whole ledger copied under another target's key shows its wire in its first or
last turns; an entry edited in the middle of an unsigned snapshot is what signed snapshots
rule out (`contextchef.session._snapshot`)."""


def check_wire_shape(name: str, entries: Sequence[Any]) -> None:
    """Refuse a ledger (its target `name`) whose `entries` are not that target's wire form.

    Only the first and last `_ENDS` entries are read (all of a shorter ledger), against
    the shape of `name`'s wire (`WireReader.shape`).

    Raises:
        SnapshotMismatchError: The first foreign entry, with the ledger, index and reason.
    """
    from contextchef.providers._targets import get_adapter

    try:
        adapter = get_adapter(name)
    except UnknownTargetError:
        return  # not a target: nothing to check it against
    reader = adapter_reader(type(adapter), adapter.profile.wire)
    ends = range(len(entries)) if len(entries) <= 2 * _ENDS else (*range(_ENDS), *range(-_ENDS, 0))
    for i in ends:
        reason = _foreign(reader, entries[i])
        if reason is not None:
            raise SnapshotMismatchError(
                f"{ledger_where(name)} 'wire' entry {i % len(entries)} is not in the {name} "
                f"wire form ({reason}): the ledger was recorded for another target and would send "
                "that target's entries here; nothing was restored"
            )
