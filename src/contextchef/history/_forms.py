"""A history's JSON forms (history layer): checked on the way in, written against itself.

`checked_history` reads a history given as `Message` values or their `Message.to_dict`
form; `messages_form` writes a list of messages derived from a history (a ledger's
normalized messages) as indices of the history messages they equal, so a snapshot holds
the conversation once, and `messages_of_form` reads it back. `wire_forms` writes what was
sent (a ledger's wire entries) with each long text the history holds as a reference to it
(snapshot version 3) and digests each as stored (`wire_digest`, version 4), and
`stored_wire` checks them and puts the texts back (`wire_of_forms` for versions 1-3).
A ledger's consumed messages are recorded by `digest` (`consumed_digests`) and read back
by `consumed`, which refuses a shared one that changed and puts a placeholder for each
later one the history no longer holds (`same_message`).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from contextchef._errors import UsageError, json_reason, shown
from contextchef._json import CLOSED, canonical_dumps, canonical_utf8, fast_encoder
from contextchef._records import extend_digests, record, recorded
from contextchef.history._as_is import placed
from contextchef.history._built import built
from contextchef.history._messages import Message, ProviderPart, check_message, message_from_dict

__all__ = [
    "SHARED_TEXT",
    "checked_history",
    "consumed",
    "consumed_digests",
    "digest",
    "forms_over",
    "leading",
    "ledger_where",
    "messages_form",
    "messages_of_form",
    "recorded_digest",
    "same_message",
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
        raise UsageError(f"reading the history raised {type(exc).__name__}: {exc}") from exc
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
    return [forms[i] if i < n and m is before[i] else m.to_dict() for i, m in enumerate(messages)]


def leading(messages: Sequence[Message], history: Sequence[Message]) -> int:
    """How many of `messages` lead `history` (the same or equal messages, in order)."""
    pairs = zip(messages, history, strict=False)
    return sum(1 for _ in itertools.takewhile(lambda p: p[0] is p[1] or p[0] == p[1], pairs))


def messages_form(messages: Sequence[Message], history: Sequence[Message]) -> list[Any]:
    """`messages` as plain JSON written against `history`, which holds most of them.

    A message that is (or equals) a history message is that message's index; any other
    is its `Message.to_dict` form (`messages_of_form` reads it back). So a list of
    messages derived from a history (a ledger's normalized messages) holds no copy of it.
    """
    index: dict[int, int] | None = None  # made on the first message not where expected
    out: list[Any] = []
    at = 0  # where the next message most likely is (a few later if some were changed)
    for message in messages:
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


SHARED_TEXT = 1024
"""Shortest text (characters) a stored wire entry writes as a reference to the history.

About where a reference (checked against the form, then put back) costs what decoding
the text again would (benchmarks/RESULTS.md, "Resume: what was sent, stored once")."""

_Key = str | int


def _long_texts(value: Any, path: tuple[_Key, ...], out: dict[str, Any], at: int) -> None:
    """Each text of `value` (a message's form) of `SHARED_TEXT` or more -> ``[at, path]``."""
    if isinstance(value, str):
        if len(value) >= SHARED_TEXT and value not in out:
            out[value] = (at, list(path))
    elif isinstance(value, dict):
        for key, item in value.items():
            _long_texts(item, (*path, key), out, at)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _long_texts(item, (*path, i), out, at)


def _referred(value: Any, path: tuple[_Key, ...], texts: dict[str, Any], refs: list[Any]) -> Any:
    """A plain copy of `value` with each text `texts` holds left out (None) and referred to."""
    if isinstance(value, str):
        if len(value) < SHARED_TEXT or value not in texts:
            return value
        message, where = texts[value]
        refs.append({"at": list(path), "message": message, "path": list(where)})
        return None
    if isinstance(value, dict):
        return {k: _referred(v, (*path, k), texts, refs) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_referred(v, (*path, i), texts, refs) for i, v in enumerate(value)]
    return value


_MISSING = object()


def _at(value: Any, path: Sequence[Any]) -> Any:
    """What `path` (keys, indices >= 0 as the form says) leads to in `value`, or `_MISSING`."""
    try:
        for key in path:
            if type(value) is str:
                return _MISSING
            value = value[key]
    except (KeyError, IndexError, TypeError):
        return _MISSING
    return value


def wire_forms(
    entries: Sequence[Any],
    digests: list[str | None],
    forms: Sequence[Any],
    base: Mapping[str, Any],
    marks: Sequence[Any] = (),
    consumed: Sequence[str] = (),
    cache: dict[Any, Any] | None = None,
) -> tuple[list[Any], list[Any]]:
    """(wire entries as plain JSON, their ``texts``): each text a reference to `forms`.

    `forms` are the `Message.to_dict` forms of the snapshot's history, `consumed` the
    digests of the ledger's consumed messages that lead it (``consumed[:shared]``, one per
    message: `consumed_digests`). A text of `SHARED_TEXT` characters or more that one of
    those messages holds is left out of the entry (None where it was) and recorded in the
    entry's list of ``texts`` as ``{"at": its path in the entry, "message": the history
    index, "path": its path there}``; so a snapshot holds a tool result or a thinking
    block once, not once more per target. `digests` (the ledger's, one per entry, None
    where not made) gets each entry's `wire_digest` (version 4: over the stored entry).
    `base` is an earlier form of the ledger (``wire``, ``texts``, ``wire_digests``,
    ``consumed``): an entry at the same place with the same digest whose referred messages
    still have their digests shares that form (`SessionSync` then compares the two by
    identity). `marks` (the ledger's, each with ``wire`` and ``history`` sizes; None
    skipped) say where new entries' texts are looked for: entries past a mark render the
    history past it, so a turn's save reads the turn's messages, not the whole history.
    `cache` (the ledger's, not part of the record) keeps what each digest was made over,
    so a snapshot taken without `base` digests only the entries whose stored form changed.
    """
    held, kept = (cache or {}).get(_MADE, []), []
    old, old_digests = base.get("wire", []), base.get("wire_digests", [])
    old_texts, was = base.get("texts") or [], base.get("consumed", [])
    n, shared = min(len(old), len(old_digests), len(old_texts)), len(consumed)
    texts: dict[str, Any] | None = None
    wire, refs = [], []
    for i, entry in enumerate(entries):
        if (
            i < n
            and digests[i] is not None
            and old_digests[i] == digests[i]
            and (not old_texts[i] or _still(old_texts[i], was, consumed))
        ):
            wire.append(old[i])
            refs.append(old_texts[i])
            kept.append((entry, _over(old_texts[i], consumed)))
            continue
        if texts is None:
            texts = {}
            start = max((m.history for m in marks if m is not None and m.wire <= i), default=0)
            for at in range(min(start, shared), min(shared, len(forms))):
                _long_texts(forms[at], (), texts, at)
        made: list[Any] = []
        wire.append(_referred(entry, (), texts, made))
        refs.append(made)
        over = (made, [consumed[r["message"]] for r in made]) if made else None
        kept.append((entry, over))
        before = held[i] if i < len(held) else None
        if digests[i] is None or before is None or before[0] is not entry or before[1] != over:
            digests[i] = wire_digest(wire[-1], made, consumed, type(entry) in CLOSED)
    if cache is not None:
        cache[_MADE] = kept
    return wire, refs


_MADE = ("wire digests made over",)


def _over(refs: list[Any], consumed: Sequence[str]) -> Any:
    """What a digest is made over besides the entry: references, their messages' digests."""
    return (refs, [consumed[r["message"]] for r in refs]) if refs else None


def _still(refs: Sequence[Any], was: Sequence[str], consumed: Sequence[str]) -> bool:
    """Whether each message `refs` name still has the digest it had (`was`), and is shared."""
    held = min(len(consumed), len(was))
    return all(r["message"] < held and was[r["message"]] == consumed[r["message"]] for r in refs)


def wire_digest(stored: Any, refs: Sequence[Any], consumed: Sequence[str], exact: bool) -> str:
    """A wire entry's digest (version 4): over its stored form and what it refers to.

    The first 16 hex digits of SHA-256 over the canonical JSON (UTF-8) of `stored` (the
    entry with its referred texts null), then, if it refers to any, a newline and the
    canonical JSON of ``[refs, [the consumed digest of each referred message]]``. So an
    entry restores to what was sent when its digest matches and each message it refers
    to matches its digest in ``consumed`` (`consumed` checks that): each text is hashed
    once, in its message. `exact`: `stored` holds no float (the fast encoder's bytes are
    the canonical ones).

    Raises:
        UnicodeEncodeError: Text holding a lone surrogate.
        ValueError, TypeError, RecursionError: Not plain JSON.
    """
    data = _fast_or_none(fast_encoder() if exact else None, stored)
    data = canonical_utf8(stored) if data is None else data
    return hashlib.sha256(data + _tail(refs, consumed)).hexdigest()[:16]


def _tail(refs: Sequence[Any], consumed: Sequence[str]) -> bytes:
    """What `wire_digest` hashes after the stored entry: its references and their digests."""
    if not refs:
        return b""
    tail = [list(refs), [consumed[r["message"]] for r in refs]]
    more = _fast_or_none(fast_encoder(), tail)
    return b"\n" + (more if more is not None else canonical_utf8(tail))


def _fast_or_none(fast: Any, value: Any) -> bytes | None:
    """`fast(value)`, or None where the fast encoder is missing or refuses it."""
    if fast is None:
        return None
    try:
        return fast(value)  # type: ignore[no-any-return]
    except (TypeError, ValueError):  # a long integer, a lone surrogate: the canonical path says
        return None


def wire_of_forms(
    wire: Sequence[Any], texts: Sequence[Any] | None, forms: Sequence[Any], where: str
) -> list[Any]:
    """The entries of a `wire_forms` list as read-only records (`record`), texts put back.

    `texts` None (versions 1 and 2) records `wire` as it is. The caller's values are not
    changed, nor kept.

    Raises:
        UsageError: `texts` is not one list per entry, or a reference names a history
            message the snapshot lacks, a place there that holds no text, or a place in
            the entry that is not empty (`where` names the list and the entry).
    """
    if texts is not None and len(texts) != len(wire):
        raise UsageError(
            f"{where} texts must hold one list per wire entry ({len(wire)}), not "
            f"{len(texts)}; nothing was restored"
        )
    out = [record(e) for e in wire]
    for i, refs in enumerate(texts or ()):
        for ref in refs:
            _fill(out[i], ref, forms, f"{where} entry {i}")
    return out


def _fill(
    entry: Any, ref: Mapping[str, Any], forms: Sequence[Any], where: str, shared: int = -1
) -> None:
    """Put the history text `ref` names in `entry` (a record made here, so set in place).

    `shared` (version 4): the message must be one of the first `shared`, whose digests
    the ledger's ``consumed`` holds (-1: any message, versions 1-3).
    """
    m, path, at = ref["message"], ref["path"], ref["at"]
    text = _at(forms[m], path) if m < len(forms) else _MISSING
    if m < len(forms) and 0 <= shared <= m:
        raise UsageError(
            f"{where} refers to history message {m}, which is not one of the {shared} "
            "consumed messages the history leads with (each checked against its digest in "
            "'consumed'); nothing was restored"
        )
    if not isinstance(text, str):
        lacks = f"which the snapshot lacks (it holds {len(forms)})" if m >= len(forms) else ""
        raise UsageError(
            f"{where} refers to history message {m} at {path}, "
            f"{lacks or 'which holds no text there'}; nothing was restored"
        )
    holder = _at(entry, at[:-1])
    if not at or _at(holder, at[-1:]) is not None:
        raise UsageError(
            f"{where} has no empty place at {at} for the history text it refers to; "
            "nothing was restored"
        )
    (dict if isinstance(holder, dict) else list).__setitem__(holder, at[-1], text)


def stored_wire(
    form: Mapping[str, Any], forms: Sequence[Any], where: str, signed: bool, version: int
) -> list[Any]:
    """A ledger form's wire entries as read-only records, checked, their texts put back.

    `where` names the ledger (`ledger_where`). Version 4 (`wire_forms`): each entry's
    digest is checked against its stored form and the ``consumed`` digests of the
    messages it refers to (`wire_digest`), which must be among the ``shared`` ones
    (`consumed` checks those against the history): each text is hashed once, in its
    message. Versions 1-3: the texts put back (`wire_of_forms`),
    then each whole entry checked against its digest (`recorded`). `signed`: an HMAC
    just verified covers them; only the counts and references are checked.

    Raises:
        UsageError: Counts that differ, a reference to a message the ledger did not
            consume (or the snapshot lacks) or a place that holds no text (or, in the
            entry, is not empty), text that is not valid Unicode, or an entry that does
            not match its digest (the ledger and the entry named); a ``consumed`` list
            without a digest per consumed message (version 4).
    """
    wire, texts, digests = form["wire"], form.get("texts"), form["wire_digests"]
    ledger, where = where, f"{where} 'wire'"
    if version < 4:
        return recorded(wire_of_forms(wire, texts, forms, where), digests, where, signed)[0]
    if texts is not None and len(texts) != len(wire):
        wire_of_forms(wire, texts, forms, where)  # raises: one list per entry
    if len(digests) != len(wire):
        raise UsageError(
            f"{where}_digests must hold one digest per wire entry ({len(wire)}); nothing "
            "was restored"
        )
    refs: Sequence[Any] = texts if texts is not None else [[]] * len(wire)
    consumed, size = form["consumed"], (form["pending"] or form["marks"][-1])["history"]
    if len(consumed) != size:
        raise UsageError(
            f"{ledger} 'consumed' holds {len(consumed)} digests: it must hold one per message "
            f"consumed ({size}); nothing was restored"
        )
    shared = min(form.get("shared", 0), size)  # more is refused by `consumed`
    out = [record(e) for e in wire]
    try:
        ours = [] if signed else _digests_of(out, refs, consumed, shared)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"{where} is not plain JSON: {json_reason(exc)}") from exc
    for i, entry_refs in enumerate(refs):
        for ref in entry_refs:
            _fill(out[i], ref, forms, f"{where} entry {i}", shared)
    for i in range(len(out)) if ours != digests and not signed else ():
        if ours[i] is None:
            raise UsageError(
                f"{where} entry {i} holds text that is not valid Unicode (a lone surrogate), "
                "which no request can encode; nothing was restored"
            )
        if ours[i] != digests[i]:
            raise UsageError(
                f"{where} entry {i} differs from what was sent (its digest does not match); "
                "the snapshot was changed after it was taken, and replaying the entry would "
                "break the conversation; nothing was restored"
            )
    return out


def _digests_of(
    entries: Sequence[Any], refs: Sequence[Any], consumed: Sequence[str], shared: int
) -> list[str | None]:
    """`wire_digest` of each restored entry (None: a lone surrogate; "": a bad reference).

    In one tight loop over the fast encoder's bytes (as `extend_digests`); an entry it
    refuses, or holding a float, is digested alone on the canonical bytes. A reference
    to a message past `shared` gets "" (`_fill` then names it).

    Raises:
        ValueError, TypeError, RecursionError: Not plain JSON (a NaN).
    """
    fast, sha, n = fast_encoder(), hashlib.sha256, len(entries)
    made: list[str | None] = []
    tails: list[bytes | None] = [b""] * n
    for i, r in enumerate(refs):
        if r:
            tails[i] = _tail(r, consumed) if all(x["message"] < shared for x in r) else None
    while len(made) < n:
        if fast is not None:
            pairs = zip(entries[len(made) :], tails[len(made) :], strict=True)
            todo = itertools.takewhile(lambda p: type(p[0]) in CLOSED and p[1] is not None, pairs)
            with contextlib.suppress(TypeError, ValueError):  # orjson's error is a TypeError
                made.extend(sha(fast(e) + (t or b"")).hexdigest()[:16] for e, t in todo)
            if len(made) == n:
                break
        i = len(made)
        try:  # alone, on the canonical bytes
            made.append(
                "" if tails[i] is None else wire_digest(entries[i], refs[i], consumed, False)
            )
        except UnicodeEncodeError:
            made.append(None)
    return made


# -- consumed messages, recorded by digest ---------------------------------------------------


def text_digest(text: str) -> str:
    """SHA-256 of `text` as UTF-8, its first 16 hex digits (a snapshot's digests)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


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
        pairs = zip(held, messages, strict=False)
        same = sum(1 for _ in itertools.takewhile(lambda p: p[0] is p[1], pairs))
        digests = digests[:same] + [recorded_digest(m) for m in messages[same:]]
        cache[_DIGESTS] = (messages, digests)
    return list(digests)


_DIGESTS = ("consumed digests",)
_FORMS = ("history form digests",)


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
                raise UsageError(
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
