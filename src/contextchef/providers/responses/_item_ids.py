"""Responses item ids, one item each: what a reply or a replayed history reuses goes.

OpenAI refuses an input with two items of one id ("Duplicate item found with id fc_...:
Remove duplicate items from your input and try again"; public reports:
continuedev/continue#10723, OpenRouterTeam/ai-sdk-provider#254), on every later request.
Two ways a history comes to hold one id twice:

* a server that reuses ids (``fc_0`` and ``msg_0`` every turn): `unique_item_ids` records
  such a reply's items without the ids the history holds already (`ContextChef.ingest`);
* a host that stored one turn twice (a retry appended again, a merge): `unique_items`, the
  history repair before a request, keeps the first item of each id as it is and sends
  every later one without its ``id``, reported as ``dropped_duplicate_id``.

The ``id`` is optional on the items whose openai SDK input params say ``id: Optional[str]``
(message, ``function_call``, ``function_call_output``, ``tool_search_call``,
``tool_search_output``, ``additional_tools``; ``response_input_item_param``). A reasoning
item's is required (``ResponseReasoningItemParam.id: Required[str]``) and its encrypted
content is bound to it: a later copy is left out, reported as ``dropped_thinking`` (the
first copy carries the same reasoning); so is any other item of a reused id
(``dropped_search_block``: a hosted tool's item, whose id the API requires).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import replace
from operator import is_
from typing import Any

from contextchef._errors import shown
from contextchef.history._lazy import parts_or_forms
from contextchef.history._messages import Message, Part, ProviderPart, ReasoningPart, TextPart
from contextchef.history._normalize import Change, ChangeKind

__all__ = ["unique_item_ids", "unique_items"]

FORMAT = "responses"

_OPTIONAL_ID = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "tool_search_call",
        "tool_search_output",
        "additional_tools",
    }
)
"""Item types whose ``id`` the API takes left out (openai SDK ``response_input_item_param``)."""

_FLAT = ("tool_call", "tool_result")
"""Part kinds recording their item's extra fields in their own hints (the rest: under
``item``, the message item a text or media part starts)."""


def _holder(part: object) -> Mapping[str, Any] | None:
    """Where `part` (or a lazy message's part form) keeps its Responses item's ``extra``.

    Reasoning keeps its whole item instead (the id at the top); None: nothing recorded.
    """
    if type(part) is dict:  # a part's form (`parts_or_forms`), read as the part
        kind, data = part.get("kind"), part.get("provider_data")
    else:
        kind, data = getattr(part, "kind", None), getattr(part, "provider_data", None)
    if not isinstance(data, Mapping) or data.get("provider") != FORMAT:
        return None
    holder = data if kind in _FLAT else data.get("item")
    return holder if isinstance(holder, Mapping) else None


def _recorded(part: Part) -> bool:
    """Whether `part` may carry a recorded item (and so an id): most parts carry none."""
    return isinstance(part, ProviderPart) or part.provider_data is not None


def item_id(part: object) -> str | None:
    """The Responses item id `part` (a part, or a lazy message's part form) is sent with."""
    if isinstance(part, ProviderPart):
        found = part.data.get("id") if part.provider == FORMAT else None
    else:
        holder = _holder(part)
        if holder is None:
            return None
        reasoning = isinstance(part, ReasoningPart) or (
            type(part) is dict and part.get("kind") == "reasoning"
        )
        extra = holder if reasoning else holder.get("extra")
        found = extra.get("id") if isinstance(extra, Mapping) else None
    return found if isinstance(found, str) else None


def _without_id(part: Part) -> Part | None:
    """`part` sent without its item's ``id``; None when its item needs one (`_OPTIONAL_ID`)."""
    if isinstance(part, ProviderPart):
        if str(part.data.get("type")) not in _OPTIONAL_ID:
            return None
        return replace(part, data={k: v for k, v in part.data.items() if k != "id"})
    holder = _holder(part)
    if isinstance(part, ReasoningPart) or holder is None:
        return None
    fixed = dict(holder)
    fixed["extra"] = {k: v for k, v in holder["extra"].items() if k != "id"}
    if isinstance(holder.get("keys"), (list, tuple)):
        fixed["keys"] = [k for k in holder["keys"] if k != "id"]
    data = dict(part.provider_data or {})
    data = fixed if part.kind in _FLAT else {**data, "item": fixed}
    return replace(part, provider_data=data)


def _ids(messages: Sequence[Message]) -> set[str]:
    """The item ids `messages` are sent with (each message's read once: `_message_ids`)."""
    out: set[str] = set()
    for message in messages:
        out.update(_message_ids(message))
    return out


def _message_ids(message: Message) -> tuple[str, ...]:
    """The item ids of `message`'s parts (plain text parts skipped), kept while it lives.

    Messages are immutable: a session's compiles read the same ones again (`_ids` of the
    messages sent), each once here, whatever sessions a process serves in turn.
    """
    key = id(message)
    hit = _MESSAGE_IDS.get(key)
    if hit is not None and hit[0]() is message:
        return hit[1]
    found = (
        item_id(p) for p in parts_or_forms(message) if type(p) is not TextPart or p.provider_data
    )
    ids = tuple(i for i in found if i is not None)
    with contextlib.suppress(TypeError):  # not weakly referable: read again next time
        _MESSAGE_IDS[key] = (weakref.ref(message, lambda _: _MESSAGE_IDS.pop(key, None)), ids)
    return ids


_MESSAGE_IDS: dict[int, tuple[weakref.ref[Message], tuple[str, ...]]] = {}


_SENT = ("responses item ids sent",)
"""Key, in a ledger's cache, of the last `before` list read and its item ids (`_sent_ids`)."""


def _sent_ids(before: Sequence[Message], cache: dict[Any, Any] | None) -> frozenset[str]:
    """`_ids` of `before`, the messages a session sent before this request.

    Each compile of a session passes them again, and more: with the ledger's `cache`, the
    ids of the list the last compile passed are taken as read when `before` leads with it
    (the same objects, compared in C), and only the messages past it are read, so a steady
    compile reads its new turn only. Without a cache, every message (`_message_ids`).
    """
    held = tuple(before)
    old: tuple[Message, ...]
    made: frozenset[str]
    old, made = (cache or {}).get(_SENT, ((), frozenset()))
    n = len(old)
    if n and n <= len(held) and old[-1] is held[n - 1] and all(map(is_, old, held)):
        made = made | _ids(held[n:]) if n < len(held) else made
    else:
        made = frozenset(_ids(held))
    if cache is not None:
        cache[_SENT] = (held, made)
    return made


def unique_item_ids(history: Sequence[Message], messages: Sequence[Message]) -> tuple[Message, ...]:
    """`messages` (a reply's turn) without the item ids the history (or the turn) holds.

    Each item whose ``id`` may be left out (a ``function_call``, a message...) and that
    reuses one is recorded, and sent, without it; a reasoning item is left as it is (the
    repair before a request, `unique_items`, reports it). Parts of one reply sharing an
    item (a message's texts) keep it alike: only the first records the item.
    """
    if not any(map(_recorded, (p for m in messages for p in m.parts))):
        return tuple(messages)  # no item id to look for (any other wire's reply)
    seen = _ids(history)
    out = []
    for message in messages:
        parts: list[Part] = []
        for part in message.parts:
            found = item_id(part)
            if found is not None and found in seen:
                part = _without_id(part) or part
            elif found is not None:
                seen.add(found)
            parts.append(part)
        changed = any(a is not b for a, b in zip(parts, message.parts, strict=True))
        out.append(replace(message, parts=tuple(parts)) if changed else message)
    return tuple(out)


def unique_items(
    messages: Sequence[Message],
    before: Sequence[Message] = (),
    *,
    offset: int = 0,
    cache: dict[Any, Any] | None = None,
) -> tuple[tuple[Message, ...], tuple[Change, ...]]:
    """`messages` with no item reusing an id sent `before` or earlier in `messages`.

    The first item of an id is sent as it is; a later one without its ``id`` where the
    API takes none (``dropped_duplicate_id``), else left out (reasoning:
    ``dropped_thinking``; any other item: ``dropped_search_block``). What was sent before
    is never edited: `before` only says which ids are taken. `offset` is the history
    index of `messages[0]` (for the changes); `cache` the ledger's (`_sent_ids`).
    """
    if not any(map(_recorded, (p for m in messages for p in m.parts))):
        return tuple(messages), ()  # nothing recorded with an id (no scan of `before`)
    seen = set(_sent_ids(before, cache))
    out: list[Message] = []
    changes: list[Change] = []
    for i, message in enumerate(messages, start=offset):
        parts: list[Part] = []
        for part in message.parts:
            found = item_id(part)
            if found is None or found not in seen:
                if found is not None:
                    seen.add(found)
                parts.append(part)
                continue
            fixed = _without_id(part)
            where = f"message {i}: a {part.kind} part's item id {shown(found, 80)} is taken"
            if fixed is not None:
                detail = f"{where} by an earlier item; sent without it"
                changes.append(Change(kind="dropped_duplicate_id", index=i, detail=detail))
                parts.append(fixed)
                continue
            kind: ChangeKind = (
                "dropped_thinking" if isinstance(part, ReasoningPart) else "dropped_search_block"
            )
            detail = f"{where} by an earlier item, a copy of it; left out (the API needs its id)"
            changes.append(Change(kind=kind, index=i, detail=detail))
        if len(parts) == len(message.parts) and all(
            a is b for a, b in zip(parts, message.parts, strict=True)
        ):
            out.append(message)
        elif parts:
            out.append(replace(message, parts=tuple(parts)))
    return tuple(out), tuple(changes)
