"""What was sent, written against the history (history layer): snapshot wire entries.

A ledger's wire entries are what a target was sent, replayed byte for byte. In a
snapshot (`contextchef.history._forms` writes the rest of its history forms),
`wire_forms` writes each with its long texts the history holds as references to it
(version 3) and digests each as stored (`wire_digest`, version 4: over the stored entry,
its references and their messages' consumed digests, so a restore hashes each text once,
in its message); `stored_wire` checks them and puts the texts back (`wire_of_forms` and
`_records.recorded` for versions 1-3).
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import itertools
import marshal
import operator
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._errors import UsageError, json_reason
from contextchef._json import CLOSED, canonical_utf8, fast_encoder
from contextchef._records import record, recorded
from contextchef.history._blocks import blocks_hold, blocks_of, blocks_refused
from contextchef.history._reordered import DigestMismatch, reordered, reordered_error

__all__ = [
    "SHARED_TEXT",
    "seed_stored",
    "stored_wire",
    "wire_digest",
    "wire_forms",
    "wire_of_forms",
]


SHARED_TEXT = 1024
"""Shortest text (characters) a stored wire entry writes as a reference to the history.

About where a reference (checked against the form, then put back) costs what decoding
the text again would (benchmarks/RESULTS.md, "Resume: what was sent, stored once")."""

_Key = str | int


def _long_texts(value: Any, path: tuple[_Key, ...], out: dict[str, Any], at: int) -> None:
    """Each text of `value` (message `at`'s form) of `SHARED_TEXT` or more -> its places.

    ``out[text]`` is ``(message indices, paths)``, one place per message (its first path
    there), in the order the messages are read (ascending): `_referred` takes the first
    at or after an entry's own start (`_starts`).
    """
    if isinstance(value, str):
        if len(value) >= SHARED_TEXT:
            ats, paths = out.setdefault(value, ([], []))
            if not ats or ats[-1] != at:
                ats.append(at)
                paths.append(list(path))
    elif isinstance(value, dict):
        for key, item in value.items():
            _long_texts(item, (*path, key), out, at)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _long_texts(item, (*path, i), out, at)


def _starts(marks: Sequence[Any]) -> tuple[list[int], list[int]]:
    """(wire sizes, history sizes) of `marks` sorted by wire size, history sizes the most so far.

    Entry ``i`` rendered the history from the size of the last mark at or before it (0
    before any mark; `_start`): the history its compile had already sent.
    """
    pairs = sorted((m.wire, m.history) for m in marks if m is not None)
    return [w for w, _ in pairs], list(itertools.accumulate((h for _, h in pairs), max))


def _start(wires: list[int], sizes: list[int], i: int) -> int:
    """Where entry `i`'s compile rendered the history from (`_starts`' lists; 0: no mark)."""
    j = bisect.bisect_right(wires, i)
    return sizes[j - 1] if j else 0


def _referred(
    value: Any, path: tuple[_Key, ...], texts: dict[str, Any], refs: list[Any], start: int
) -> Any:
    """A plain copy of `value` with each text `texts` holds left out (None) and referred to.

    The text's first place in a message from `start` on is the one referred to, so an
    entry refers to the same message whichever entries an earlier snapshot wrote.
    """
    if isinstance(value, str):
        if len(value) < SHARED_TEXT or value not in texts:
            return value
        ats, paths = texts[value]
        k = bisect.bisect_left(ats, start)
        if k == len(ats):  # only in messages its compile had sent before: kept inline
            return value
        refs.append({"at": list(path), "message": ats[k], "path": list(paths[k])})
        return None
    if isinstance(value, dict):
        return {k: _referred(v, (*path, k), texts, refs, start) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_referred(v, (*path, i), texts, refs, start) for i, v in enumerate(value)]
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
) -> tuple[list[Any], list[Any], list[list[str]]]:
    """(wire entries as plain JSON, their ``texts``, ``blocks``): texts refer to `forms`.

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
    history past it, so a turn's save reads the turn's messages, not the whole history,
    and an entry refers to a text's first place from its own mark on (the same message
    whether a snapshot was taken after every turn or only now).
    `cache` (the ledger's, not part of the record) keeps what each digest was made over,
    so a snapshot taken without `base` digests only the entries whose stored form changed.
    """
    owner, held = (cache or {}).get(_MADE, (None, []))
    held = held if owner is digests else []  # this ledger's (an undo shares `cache`)
    old, old_digests = base.get("wire", []), base.get("wire_digests", [])
    old_texts, was = base.get("texts") or [], base.get("consumed", [])
    n, shared = min(len(old), len(old_digests), len(old_texts)), len(consumed)
    texts: dict[str, Any] | None = None
    wires: list[int] = []  # the marks' (`_starts`), read once an entry is walked
    sizes: list[int] = []
    # the leading entries kept as stored (found in C): the same digest, and the messages
    # they refer to unchanged
    k = _same_prefix(digests[:n], old_digests[:n])
    k = digests.index(None) if None in digests[:k] else k
    k = _unreferred(old_texts, k, _same_prefix(was, consumed)) if any(old_texts[:k]) else k
    wire, refs, kept = old[:k], old_texts[:k], _kept_as(entries[:k], held)
    for i, entry in enumerate(entries[k:], k):
        before = held[i] if i < len(held) and held[i][0] is entry else None
        if (
            i < n
            and digests[i] is not None
            and old_digests[i] == digests[i]
            and (not old_texts[i] or _still(old_texts[i], was, consumed))
        ):
            wire.append(old[i])
            refs.append(old_texts[i])
            kept.append((entry, _over(old_texts[i], consumed), *(before or (0, 0, None, ()))[2:]))
            continue
        again = _again(before, consumed) if digests[i] is not None else None
        if again is not None:  # its stored form as last written, its references still hold
            wire.append(again[1])
            refs.append(again[2])
            kept.append((*before[:2], again[0], before[3]))  # type: ignore[index]
            continue
        if texts is None:  # read from the first walked entry's start on
            texts, (wires, sizes) = {}, _starts(marks)
            for at in range(min(_start(wires, sizes, i), shared), min(shared, len(forms))):
                _long_texts(forms[at], (), texts, at)
        made: list[Any] = []
        wire.append(_referred(entry, (), texts, made, _start(wires, sizes, i)))
        refs.append(made)
        over = _over(made, consumed)
        kept.append((entry, over, _frozen(wire[-1], made), consumed))
        if digests[i] is None or before is None or before[1] != over:
            digests[i] = wire_digest(wire[-1], made, consumed, type(entry) in CLOSED)
    if cache is not None:
        cache[_MADE] = (digests, kept)
    return wire, refs, blocks_of(forms, consumed, (wire, refs, digests), base, cache)


_MADE = ("wire digests made over",)
"""Key, in a ledger's cache, of ``(its digests list, per entry (the entry, what its digest
was made over, its stored form and references as written, the consumed digests then))``:
a snapshot copies an entry's stored form from there while the entry and the messages it
refers to are unchanged, instead of walking it again (`seed_stored` fills it on restore)."""


def _same_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many items `a` and `b` lead with that are equal (compared in C)."""
    same = list(map(operator.eq, a, b))
    return same.index(False) if False in same else len(same)


def _unreferred(old_texts: Sequence[Any], k: int, unchanged: int) -> int:
    """The first of the `k` entries referring to a message past the `unchanged` ones, or k.

    An entry whose references all name messages with the digests they had is stored as it
    was (`_still`, for the first `unchanged` messages at once).
    """
    for i, refs in enumerate(old_texts[:k]):
        if refs and not all(r["message"] < unchanged for r in refs):
            return i
    return k


def _kept_as(entries: Sequence[Any], held: Sequence[Any]) -> list[Any]:
    """What the cache keeps of `entries` taken as stored: as held where they are the same."""
    padded = itertools.chain(held, itertools.repeat((None,)))
    return [h if h[0] is e else (e, None, None, ()) for e, h in zip(entries, padded, strict=False)]


def _frozen(form: Any, refs: list[Any]) -> bytes | None:
    """`form` and `refs` as bytes `_again` copies them from (None: marshal cannot hold them)."""
    try:
        return marshal.dumps((form, refs))
    except ValueError:
        return None


def _again(before: Any, consumed: Sequence[str]) -> tuple[bytes, Any, list[Any]] | None:
    """(bytes, stored form, references): a fresh copy of what `before` holds, if it holds.

    It holds while each message it refers to has the consumed digest it had (`_still`
    against the digests kept with it); the entry is `before`'s (the caller checks it).
    Copies, so a caller editing a snapshot it was handed changes no later snapshot; the
    bytes they are copied from are kept for the next (a restore seeds the decoded form).
    """
    if before is None or before[2] is None:
        return None
    stored = before[2]
    try:
        data = stored if type(stored) is bytes else marshal.dumps(stored)
    except ValueError:  # nested past marshal's depth: walked again
        return None
    form, refs = marshal.loads(data)
    return (data, form, refs) if not refs or _still(refs, before[3], consumed) else None


def seed_stored(
    cache: dict[Any, Any], digests: list[str | None], entries: Sequence[Any], form: Any
) -> None:
    """Keep a ledger's stored wire entries as a restore read them, for its next snapshot.

    `form` is the ledger's checked form (version 4 or later), decoded by the restore and
    never handed to anyone (a caller's dict is not: it may change it); `entries` its wire
    entries as restored, `digests` the ledger's list of their digests (checked). The
    next snapshot copies each entry's stored form and references from here while they
    hold (`_again`), and walks only the entries compiled since.
    """
    wire, texts = form["wire"], form.get("texts")
    stored = zip(wire, texts if texts is not None else [[]] * len(wire), strict=True)
    was = form["consumed"]
    cache[_MADE] = (
        digests,
        [(e, _READ if s[1] else None, s, was) for e, s in zip(entries, stored, strict=True)],
    )


_READ = object()
"""What an entry's digest was made over, as `seed_stored` keeps it: what the restore read
(its references, which the restore checked); equal to nothing a walk makes, so an entry
walked again, its references gone, is digested again."""


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
    over = _over(list(refs), consumed)
    if over is None:
        return b""
    tail = list(over)
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
        lacks = (
            f"which the snapshot lacks (it holds {len(forms)} messages)" if m >= len(forms) else ""
        )
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
    form: Mapping[str, Any], forms: Sequence[Any], where: str, made: Any, version: int
) -> list[Any]:
    """A ledger form's wire entries as read-only records, checked, their texts put back.

    `where` names the ledger (`ledger_where`). Version 4 (`wire_forms`): each entry's
    digest is checked against its stored form and the ``consumed`` digests of the
    messages it refers to (`wire_digest`), which must be among the ``shared`` ones
    (`consumed` checks those against the history): each text is hashed once, in its
    message. Versions 1-3: the texts put back (`wire_of_forms`),
    then each whole entry checked against its digest (`recorded`). Versions 5 and 6: when its
    ``blocks`` hold (`blocks_hold`), the entries are the ones written and are not checked
    one by one; else, once they are, a block that differs refuses the ledger (its items
    were moved: `blocks_refused`), and so does a ledger without them. `made`: the dict
    the snapshot's ledgers share; None: signed, an HMAC just verified covers them, only
    the counts and references are checked.

    Raises:
        UsageError: Counts that differ, a reference to a message the ledger did not
            consume (or the snapshot lacks) or a place that holds no text (or, in the
            entry, is not empty), text that is not valid Unicode, or an entry that does
            not match its digest (the ledger and the entry named); a version 1-4 ledger
            holding ``blocks`` (its version lowered); a ``consumed`` list
            without a digest per consumed message (version 4); ``blocks`` missing or
            that differ while each item matches its digest (version 5 on).
    """
    wire, texts, digests = form["wire"], form.get("texts"), form["wire_digests"]
    ledger, where, signed = where, f"{where} 'wire'", made is None
    if version < 5 and form.get("blocks") is not None:  # lowered to skip the blocks' checks
        raise UsageError(
            f"{ledger} holds 'blocks', which only version 5 and later write, in a version "
            f"{version} snapshot: its version was changed after it was taken; nothing was "
            "restored"
        )
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
    out = list(map(record, wire))
    made_blocks = (
        blocks_hold(form, forms, out, shared, made, ledger, version)
        if version > 4 and not signed
        else []
    )
    held = signed or made_blocks is None
    try:
        ours = [] if held else _digests_of(out, refs, consumed, shared)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"{where} is not plain JSON: {json_reason(exc)}") from exc
    for i, entry_refs in enumerate(refs):
        for ref in entry_refs:
            _fill(out[i], ref, forms, f"{where} entry {i}", shared)
    for i in range(len(out)) if ours != digests and not held else ():
        if ours[i] is None:
            raise UsageError(
                f"{where} entry {i} holds text that is not valid Unicode (a lone surrogate), "
                "which no request can encode; nothing was restored"
            )
        if ours[i] != digests[i]:
            order = reordered(forms, wire[i])
            if order is not None:
                raise reordered_error(f"{where} entry {i}", order)
            raise DigestMismatch(
                f"{where} entry {i} differs from what was sent (its digest does not match); "
                "the snapshot was changed after it was taken, and replaying the entry would "
                "break the conversation; nothing was restored"
            )
    if made_blocks:
        blocks_refused(form, forms, out, made_blocks, shared, ledger, version)
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
            todo = (  # all fit, as a rule: found in C, no test per entry
                pairs
                if CLOSED.issuperset(map(type, entries)) and None not in tails
                else itertools.takewhile(lambda p: type(p[0]) in CLOSED and p[1] is not None, pairs)
            )
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
