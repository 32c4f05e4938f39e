"""A history's JSON forms (history layer): checked on the way in, written against itself.

`checked_history` reads a history given as `Message` values or their `Message.to_dict`
form; `messages_form` writes a list of messages derived from a history (a ledger's
normalized messages) as indices of the history messages they equal, so a snapshot holds
the conversation once, and `messages_of_form` reads it back. A ledger's wire entries
are written and read by `contextchef.history._wire_forms` (re-exported here).
A ledger's consumed messages are recorded by `digest` (`consumed_digests`) and read back
by `consumed`, which refuses a shared one that changed and puts a placeholder for each
later one the history no longer holds (`same_message`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from contextchef._echo import printed
from contextchef._errors import UsageError, shown
from contextchef._json import canonical_dumps, canonical_utf8, sorted_utf8
from contextchef._records import extend_digests, text_digest
from contextchef.history._as_is import placed
from contextchef.history._blocks import FORM_DIGESTS
from contextchef.history._built import built
from contextchef.history._messages import Message, ProviderPart, check_message, message_from_dict
from contextchef.history._reordered import DigestMismatch, reordered, reordered_error
from contextchef.history._wire_forms import (
    SHARED_TEXT,
    stored_wire,
    wire_digest,
    wire_forms,
    wire_of_forms,
)

__all__ = [
    "SHARED_TEXT",
    "check_ledger_fields",
    "checked_history",
    "consumed",
    "consumed_digests",
    "digest",
    "form_digest",
    "forms_over",
    "ir_form",
    "ir_of_form",
    "leading",
    "ledger_where",
    "messages_form",
    "messages_of_form",
    "recorded_digest",
    "same_message",
    "same_prefix",
    "seed_digests",
    "stored_wire",
    "text_digest",
    "wire_digest",
    "wire_forms",
    "wire_of_forms",
]


def checked_history(messages: object) -> tuple[Message, ...]:
    """A history given as `Message` values or their `Message.to_dict` form, checked.

    Raises:
        UsageError: `messages` is not a list (or other iterable), or iterating it raised.
        CorruptHistoryError: An entry is malformed (its index is named).
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        hint = ""
        if type(messages).__name__ == "ParsedHistory":  # from_anthropic(...) and the like
            hint = (
                ": pass its .messages (and its .system, if any, to set_system_prompt), e.g. "
                "set_history(from_anthropic(stored).messages)"
            )
        raise UsageError(
            f"a history is a list of Message values, got {type(messages).__name__}{hint}"
        )
    try:
        given = list(messages)
    except Exception as exc:  # the caller's iterable raised: nothing is replaced
        raise UsageError(
            f"reading the history raised {type(exc).__name__}: {printed(exc)}"
        ) from exc
    if given and type(given[0]) is dict:  # decoded forms (a restore): built in one C map
        forms = list(map(built, given))
        if type(None) not in set(map(type, forms)):
            return tuple(forms)  # type: ignore[arg-type]  # no None: checked above
    out = []
    for i, item in enumerate(given):
        if placed(item):  # the common case, found in C
            out.append(item)
        elif isinstance(item, Mapping):  # checked as it is built
            out.append(built(item) or message_from_dict(item, index=i))
        else:
            check_message(item, i)  # passes it, or names what is wrong
            out.append(item)
    return tuple(out)


def forms_over(
    messages: Sequence[Message], before: Sequence[Message], forms: Sequence[Any]
) -> list[Any]:
    """`Message.to_dict` of each of `messages`; ``forms[i]`` itself where it is ``before[i]``.

    `forms` is an earlier list of these forms and `before` the messages it was written
    from (or built from): an unchanged message shares its form (`SessionSync` then
    compares the two lists by identity, and writes no message twice).
    """
    n = min(len(before), len(forms))
    k = same_prefix(messages, before[:n])  # the unchanged ones, found in C
    rest = enumerate(messages[k:], k)
    return [*forms[:k], *(forms[i] if i < n and m is before[i] else m.to_dict() for i, m in rest)]


def same_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many items `a` and `b` lead with that are the same objects (compared in C)."""
    same = list(map(operator.is_, a, b))
    return same.index(False) if False in same else len(same)


def leading(messages: Sequence[Message], history: Sequence[Message]) -> int:
    """How many of `messages` lead `history` (the same or equal messages, in order)."""
    k = same_prefix(messages, history)
    pairs = zip(messages[k:], history[k:], strict=False)
    return k + sum(1 for _ in itertools.takewhile(lambda p: p[0] is p[1] or p[0] == p[1], pairs))


def messages_form(messages: Sequence[Message], history: Sequence[Message]) -> list[Any]:
    """`messages` as plain JSON written against `history`, which holds most of them.

    A message that is (or equals) a history message is that message's index; any other
    is its `Message.to_dict` form (`messages_of_form` reads it back). So a list of
    messages derived from a history (a ledger's normalized messages) holds no copy of it.
    """
    index: dict[int, int] | None = None  # made on the first message not where expected
    at = same_prefix(messages, history)  # the common case, in step: found in C
    out: list[Any] = list(range(at))
    for message in messages[at:]:  # `at`: where it most likely is (later if some changed)
        if at < len(history) and history[at] is message:  # the common case: in step
            out.append(at)
            at += 1
            continue
        if index is None:
            index = {id(m): i for i, m in enumerate(history)}
        i = index.get(id(message))
        if i is None:
            near = range(at, min(at + 4, len(history)))
            i = next((k for k in near if history[k] == message), None)
        out.append(message.to_dict() if i is None else i)
        at = at if i is None else i + 1
    return out


def messages_of_form(form: Sequence[Any], history: Sequence[Message], where: str) -> list[Message]:
    """The messages of a `messages_form` list (an index is that history message).

    Raises:
        UsageError: An index past `history` (`where` names the list).
        CorruptHistoryError: A malformed message.
    """
    bad = next((i for i, m in enumerate(form) if type(m) is int and m >= len(history)), None)
    if bad is not None:
        raise UsageError(
            f"{where} entry {bad} refers to history message {form[bad]}, which the snapshot "
            f"lacks (it holds {len(history)}); nothing was restored"
        )
    return [
        history[m] if type(m) is int else built(m) or message_from_dict(m, index=i)
        for i, m in enumerate(form)
    ]


def check_ledger_fields(data: Mapping[str, Any], where: str) -> None:
    """What a ledger's snapshot form cannot say: ordered ranges, wire indices, tool names.

    `where` names the ledger (`ledger_where`): ``strip`` ranges with lo <= hi,
    ``system_entries`` within its wire, ``tools`` with text names.

    Raises:
        UsageError: The first field that does not hold, named with what it must hold.
    """
    if not all(lo <= hi for lo, hi in data["strip"]):
        raise UsageError(f"{where} 'strip' must hold [lo, hi] pairs with lo <= hi")
    if not all(i < len(data["wire"]) for i in data["system_entries"]):
        raise UsageError(
            f"{where} 'system_entries' must hold wire indices (below {len(data['wire'])})"
        )
    tools = data["tools"]
    if tools is not None and not all(isinstance(t.get("name", ""), str) for t in tools):
        raise UsageError(f"{where} 'tools' must hold tool objects with text names")


def ir_form(ir: Sequence[Message], history: Sequence[Message]) -> dict[str, Any]:
    """A ledger's ``ir`` (`messages_form` of its normalized messages) and ``ir_digest``.

    The digest (`form_digest`) ties each item to its place: a restore refuses an ``ir``
    edited or reordered after the snapshot was taken (`ir_of_form`).
    """
    form = messages_form(ir, history)
    return {"ir": form, "ir_digest": form_digest(form)}


def ir_of_form(
    data: Mapping[str, Any], history: Sequence[Message], name: str, made: object, version: int
) -> list[Message]:
    """A ledger form's normalized messages (``ir``, `messages_of_form`), checked.

    Against its ``ir_digest`` (`ir_form`) when the snapshot is not signed (`made` is not
    None; a signed one's HMAC covers it) and the ledger has one: a `version` 5 field that
    snapshots written before it lack (the record digest covers it, so it cannot be
    dropped alone). One encoder call and one SHA-256 over the list, mostly history indices.

    Raises:
        UsageError: The digest does not match (the ledger `name` and the field named), or
            an index past `history`.
        CorruptHistoryError: A malformed message.
    """
    where, recorded = f"{ledger_where(name)} 'ir'", data.get("ir_digest")
    messages = messages_of_form(data["ir"], history, where)  # a bad item: named there
    checked = made is not None and recorded is not None and version >= 5
    if checked and form_digest(data["ir"]) != recorded:
        raise DigestMismatch(
            f"{where} differs from what was recorded (its 'ir_digest' does not match): its "
            "normalized messages were edited or moved after the snapshot was taken, and "
            "replaying them would break the conversation; nothing was restored"
        )
    return messages


def form_digest(form: object) -> str:
    """SHA-256 (first 16 hex) of `form`'s sorted-key canonical JSON as UTF-8.

    Written by the fast encoder where its bytes are ``json``'s (`sorted_utf8`), else by
    ``json``: a reader with or without the ``fastjson`` extra gets the writer's digest.
    ``""`` for what is not plain JSON (NaN, a lone surrogate), which no digest matches.
    """
    data = sorted_utf8(form)
    if data is None:
        try:
            text = json.dumps(
                form, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            )
            data = text.encode("utf-8")
        except (TypeError, ValueError, RecursionError):
            return ""
    return hashlib.sha256(data).hexdigest()[:16]


# -- consumed messages, recorded by digest ---------------------------------------------------


def digest(message: Message) -> str:
    """A short digest of a message's JSON form (how snapshots record what was consumed)."""
    return text_digest(canonical_dumps(message.to_dict()))


_EDITED = "contextchef:edited"
"""Provider of the placeholder part for a consumed message the restored history lacks."""


def _placeholder_digest(message: Message) -> str | None:
    parts = message.parts
    if len(parts) == 1 and isinstance(parts[0], ProviderPart) and parts[0].provider == _EDITED:
        value = parts[0].data.get("digest")
        return value if isinstance(value, str) else None
    return None


def recorded_digest(message: Message) -> str:
    """`digest` of a consumed message; a restored placeholder's is the one it stands for."""
    held = _placeholder_digest(message)
    return digest(message) if held is None else held


def same_message(message: Message, consumed: Message) -> bool:
    """Whether `message` is the `consumed` one (a restored placeholder: by its digest)."""
    if message is consumed or message == consumed:
        return True
    held = _placeholder_digest(consumed)
    return held is not None and digest(message) == held


def ledger_where(name: str) -> str:
    """How a message names a snapshot's ledger (`name`: its target; "" for none)."""
    return f"snapshot ledger {name!r}" if name else "snapshot ledger"


def consumed_digests(messages: tuple[Message, ...], cache: dict[Any, Any]) -> list[str]:
    """`recorded_digest` of each of a ledger's consumed `messages` (its ``consumed`` field).

    `cache` (the ledger's, not part of the record) keeps the last list made and the
    messages it was made for: the messages they lead with (the same objects) reuse their
    digests, so a turn's save digests the turn's messages only.
    """
    held, digests = cache.get(_DIGESTS, ((), []))
    if held is not messages:
        same = same_prefix(held, messages)
        digests = digests[:same] + [recorded_digest(m) for m in messages[same:]]
        cache[_DIGESTS] = (messages, digests)
    return list(digests)


_DIGESTS = ("consumed digests",)
_FORMS = FORM_DIGESTS


def seed_digests(cache: dict[Any, Any], messages: tuple[Message, ...], digests: list[str]) -> None:
    """Keep a restored ledger's ``consumed`` digests for `consumed_digests` (its next save).

    `digests` were just checked against `messages` by `consumed` (or are covered by the
    snapshot's signature), one per message; an older form's partial list is not kept.
    """
    if len(digests) == len(messages):
        cache[_DIGESTS] = (messages, list(digests))


def _form_digests(forms: Sequence[Any], history: Sequence[Message], n: int, made: Any) -> Any:
    """`digest` of each of the first `n` messages, read from `forms` (their JSON forms).

    `made` (a list, shared by a snapshot's ledgers) holds those made so far and is
    extended (`extend_digests`). The fast encoder's bytes differ from the canonical ones
    only on floats, so a digest that matches proves the message the same, and `consumed`
    checks a mismatch again on the canonical bytes. A form it refuses (a long integer, a
    lone surrogate) is digested alone on the canonical bytes.
    """

    def slow(i: int) -> str:
        try:
            return hashlib.sha256(canonical_utf8(forms[i])).hexdigest()[:16]
        except (TypeError, ValueError, RecursionError):  # a lone surrogate, or not to_dict's
            return _any_digest(history[i])

    return extend_digests(forms[:n] if len(forms) > n else forms, made, slow)


def _any_digest(message: Message) -> str:
    """`digest` of `message`; "" for one no JSON can hold (NaN), which no digest matches."""
    try:
        return digest(message)
    except (TypeError, ValueError, RecursionError):
        return ""


def consumed(
    form: Mapping[str, Any],
    size: int,
    history: tuple[Message, ...],
    forms: Sequence[Any] = (),
    cache: dict[Any, Any] | None = None,
    name: str = "",
) -> tuple[Message, ...]:
    """A ledger form's consumed messages: `history`'s first ``shared``, then by digest.

    (Version 1 shares none.) ``consumed`` holds a digest per message past the ``shared``
    ones (as written before the check below), or one per consumed message (now):
    then each shared message is checked against its digest, read from its form in
    `forms` (the snapshot's history, parallel to `history`; `cache` keeps the digests
    made, shared by the snapshot's ledgers; None: a signed snapshot, not checked). A
    history message edited after the snapshot was taken would be sent as edited to a
    target that never saw it and replayed as it was to the others. Messages past the
    shared ones that no longer match get placeholders holding the digest
    (`same_message`): the history was cut or replaced after the last compile.

    Raises:
        UsageError: Not `size` messages in all, more shared than `history` holds, or a
            shared message that differs from its digest (the ledger's `name` is named).
    """
    where = ledger_where(name)
    shared, digests = form.get("shared", 0), form["consumed"]
    if shared > min(size, len(history)):
        raise UsageError(
            f"{where} 'shared' is {shown(shared)}: it counts the consumed messages that lead "
            f"the history, so at most {min(size, len(history))} ({size} consumed, "
            f"{len(history)} in the history); nothing was restored"
        )
    if len(digests) not in (size, size - shared):
        raise UsageError(
            f"{where} 'consumed' holds {len(digests)} digests: it must hold one per message "
            f"consumed ({size}), or per message past the {shared} 'shared'; nothing was "
            "restored"
        )
    if len(digests) == size and shared:  # every consumed message has its digest
        made = [] if cache is None else cache.setdefault(_FORMS, [])
        ours = _form_digests(forms, history, shared, made) if cache is not None else []
        for i in range(shared) if cache is not None and ours[:shared] != digests[:shared] else ():
            if ours[i] != digests[i] and _any_digest(history[i]) != digests[i]:
                if order := reordered([forms[i], *forms]):
                    raise reordered_error(f"{where}: history message {i}", order)
                raise DigestMismatch(
                    f"{where}: history message {i} differs from what the ledger consumed "
                    "(its digest does not match): the history was changed after the "
                    "snapshot was taken, and this target would replay the message as it "
                    "was while others are sent it as it is now; nothing was restored"
                )
        digests = digests[shared:]
    pairs = zip(history[shared:], digests, strict=False)
    same = sum(1 for _ in itertools.takewhile(lambda p: _any_digest(p[0]) == p[1], pairs))
    edited = (ProviderPart(provider=_EDITED, data={"digest": d}) for d in digests[same:])
    return history[: shared + same] + tuple(Message(role="user", parts=(p,)) for p in edited)
