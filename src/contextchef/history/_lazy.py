"""A restored history whose vouched-for messages build their parts when first read.

A restore reads every history message of a snapshot and builds it (`history._built`):
about 1.2 us a message, a quarter of a restore on short messages, although the first
compile after it reads the parts of the few newest messages only. A message whose form
the snapshot vouches for is as its writer wrote it, from a message that was valid:

* a version 5 or 6 snapshot vouches for the history forms a ledger's consumed blocks cover
  (`history._blocks`: the digest of each 64 forms and their consumed digests), where the
  block holds, from the first block on: those are the writer's bytes, key order included
  (a signed snapshot's HMAC is over values only: a store may have reordered its keys).

`vouched` counts those, and `lazy_history` makes each of them a `Message` holding only its
role and its form; its ``parts`` are built on first read (`Message.__getattr__`) by the
same builder a restore uses, and it is then the message a restore would have made
(tests compare them). Every other message is built and checked at once, as before, so a
malformed form still gets its `CorruptHistoryError`, naming it, before anything changes.

The scans of a whole history that a turn runs read a lazy message's form instead of its
parts (`call_index`, `call_names`, `parts_or_forms`; a compaction part is never in a
lazy message), and `Message.to_dict` of one is a copy of its form (what ``to_dict`` of
the built message gives: the form was written by it). Any other read builds the parts.

Only for a snapshot the restore owns (its own decode of the text, or a store's record
that the store keeps read-only): the forms are kept, not copied, until read. The blocks
hashed here are kept for `blocks_hold`, which then hashes none of them again.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef.history._blocks import BLOCK, CONSUMED_BLOCKS, CRC_FROM, block_digest
from contextchef.history._built import built
from contextchef.history._forms import checked_history
from contextchef.history._messages import Message, ToolCall, message_from_dict

__all__ = [
    "built_all",
    "call_ids",
    "call_index",
    "is_lazy",
    "lazy_history",
    "lazy_parts",
    "parts_or_forms",
    "vouched",
]

_new = object.__new__


def vouched(data: Mapping[str, Any], made: dict[Any, Any] | None) -> int:
    """How many leading history forms of snapshot `data` (checked form) are as written.

    The most that any version 5 or 6 ledger's consumed blocks cover where they hold, from its
    first block on: those forms are the writer's bytes, so `Message.to_dict` of the
    message built from one gives it back, key order included. A verified signature
    vouches for the values only (a store may have reordered keys: `history._reordered`),
    so a signed snapshot is judged by its blocks too. `made` is the dict the snapshot's
    ledgers share on restore (`SessionState.from_dict`; None: signed): each block's
    digest is kept there (`CONSUMED_BLOCKS`) for `blocks_hold`.
    """
    forms = data["history"]
    if data["version"] < 5:
        return 0
    memo = {} if made is None else made.setdefault(CONSUMED_BLOCKS, {})
    most, crc = 0, data["version"] >= CRC_FROM
    for ledger in data["ledgers"].values():
        consumed, blocks = ledger["consumed"], (ledger.get("blocks") or [[]])[0]
        mark = ledger["pending"] or (ledger["marks"] or [None])[-1]
        if mark is None:  # no marks: `Ledger.from_dict` refuses it, naming the field
            continue
        size = mark["history"]
        shared = min(ledger.get("shared", 0), size, len(forms))
        if len(consumed) != size or type(blocks) is not list:
            continue
        for b, lo in enumerate(range(0, shared, BLOCK)):
            hi = min(lo + BLOCK, shared)
            key = (lo, tuple(consumed[lo:hi]))
            if key not in memo:
                memo[key] = block_digest([forms[lo:hi], consumed[lo:hi]], crc, lo)
            if b >= len(blocks) or not memo[key] or memo[key] != blocks[b]:
                break
            most = max(most, hi)
    return most


def lazy_history(forms: Sequence[Any], vouched_for: int) -> tuple[Message, ...]:
    """The messages of a snapshot's history `forms`; the first `vouched_for` lazy.

    The others are built and checked at once (`checked_history`'s way), and so is a
    message holding a provider part (rare: server tools, compaction), which whole-history
    scans look for: a lazy message holds none (`is_lazy`).

    Raises:
        CorruptHistoryError: A message past them is malformed (its index is named).
    """
    if not all(type(form) is dict for form in forms):
        return checked_history(forms)  # not all `to_dict` forms: all checked as given
    out: list[Message] = []
    append, kind = out.append, _KIND
    for i, form in enumerate(forms):
        if i < vouched_for:  # lazy: a role, parts, none a provider part (else built now)
            role, parts = form.get("role"), form.get("parts")
            if (role == "user" or role == "assistant") and type(parts) is list:
                try:
                    plain = "provider" not in map(kind, parts)  # read in C
                except AttributeError:  # a part that is not an object: refused at once
                    plain = False
                if plain:
                    message = _new(Message)
                    fields = message.__dict__
                    fields["role"], fields["_lazy"] = role, (form, i, lazy_parts)
                    append(message)
                    continue
        append(built(form) or message_from_dict(form, index=i))
    return tuple(out)


_KIND = operator.methodcaller("get", "kind")


def is_lazy(message: Message) -> bool:
    """Whether `message`'s parts are not built yet (then it holds no provider part)."""
    return "_lazy" in message.__dict__


def lazy_parts(message: Message) -> Any:
    """Build a lazy `message`'s parts from its form (vouched for: as a restore builds them).

    `Message.__getattr__` calls it on the first read of ``parts``; the form is dropped.
    """
    fields = message.__dict__
    lazy = fields.get("_lazy")
    if lazy is None:  # another thread built them since
        return fields["parts"]
    form, index, _ = lazy
    fields["parts"] = (built(form) or message_from_dict(form, index=index)).parts
    fields.pop("_lazy", None)
    return fields["parts"]


def built_all(history: tuple[Message, ...]) -> tuple[Message, ...]:
    """`history` with every lazy message's parts built: what a caller is handed.

    A lazy message's ``__dict__`` lacks ``parts`` (it holds the form): ``vars()``, orjson
    and other readers of an instance's dict would not see them. Found in C when none is.
    """
    if any(map(_HOLDS_LAZY, map(vars, history))):
        for message in history:
            if "_lazy" in message.__dict__:
                lazy_parts(message)
    return history


_HOLDS_LAZY = operator.methodcaller("__contains__", "_lazy")


def parts_or_forms(message: Message) -> Sequence[Any]:
    """`message`'s parts, or a lazy message's part forms (its parts are not built).

    For a scan of a whole history whose test reads a part or its form alike.
    """
    lazy = message.__dict__.get("_lazy")
    return message.parts if lazy is None else lazy[0]["parts"]


def call_index(messages: Sequence[Message]) -> dict[str, int]:
    """Each tool call's id -> the index of the first of `messages` holding it.

    A lazy message's calls are read from its form: its parts are not built.
    """
    out: dict[str, int] = {}
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role != "assistant":  # calls are the assistant's (`check_message`)
            continue
        lazy = messages[i].__dict__.get("_lazy")
        if lazy is not None:
            for raw in lazy[0]["parts"]:
                if type(raw) is dict and raw.get("kind") == "tool_call" and "id" in raw:
                    out[raw["id"]] = i
            continue
        for part in messages[i].parts:
            if isinstance(part, ToolCall):
                out[part.id] = i
    return out


def call_ids(messages: Sequence[Message]) -> set[str]:
    """The ids of every tool call `messages` hold (a lazy message's read from its form)."""
    return set(call_names(messages))


def call_names(messages: Sequence[Message]) -> dict[str, str]:
    """Each tool call's id -> its name, over `messages` (the last of an id wins).

    A lazy message's calls are read from its form: its parts are not built.
    """
    names: dict[str, str] = {}
    for message in messages:
        lazy = message.__dict__.get("_lazy")
        if lazy is None:
            for part in message.parts:
                if isinstance(part, ToolCall):
                    names[part.id] = part.name
            continue
        for raw in lazy[0]["parts"]:
            if type(raw) is dict and raw.get("kind") == "tool_call" and "id" in raw:
                names[raw["id"]] = raw.get("name", "")
    return names
