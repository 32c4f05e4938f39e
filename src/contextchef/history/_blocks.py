"""A ledger's digests checked a block at a time (history layer): snapshot versions 5 and 6.

A version 4 ledger holds a digest per consumed message (``consumed``) and per wire entry
(``wire_digests``), and a restore hashes every message form and stored entry one by one
to check them (`history._forms.consumed`, `history._wire_forms.stored_wire`): on short
messages that is one encoder call and one SHA-256 per item, the per-call cost larger than
the bytes'. Version 5 adds ``blocks``: ``[consumed blocks, wire blocks]``, the digest of
each `BLOCK` items, as `block_digest` writes them:

* a consumed block: ``[the shared messages' forms, their consumed digests]``, both cut to
  the block;
* a wire block: ``[the stored entries, their ``texts``, their wire digests]``, likewise.

A restore hashes each block at once (`blocks_hold`); when every block is the one written,
the items are the writer's, digests included, and the one-by-one checks are not run (the
forms' digests are taken as made). Any block that differs, one that cannot be encoded,
or a float in a wire entry sends the whole ledger to the one-by-one checks, which name
the message or entry; as those tie no digest to its place, once they pass, a block that
differs refuses the ledger (`blocks_refused`: its items were moved, or the block digest
edited; a block holding a float, which each encoder writes otherwise, only when no
encoder gives its digest), and so does a ledger without ``blocks``. A block's items' digests
decide its content (a consumed digest is over the form, a wire digest over the stored
entry and its texts), so a save makes only the blocks whose digests changed (`blocks_of`).

A block digest is a checksum, not a seal: a version 6 block is the CRC-32 of its bytes
with its first position (8 hex digits; a block moved whole with its digests is refused),
a version 5 block the first 16 hex digits of their SHA-256 (no position: a version 5
snapshot's whole blocks can be swapped unseen, which the next save, a version 6, closes).
An unsigned snapshot can be rewritten digests and all by whoever edits it, so what its
digests catch is an accidental change (a store or a host editing one message, entries
moved); CRC-32 is made for that, at a third of SHA-256's time on the megabytes a restore
hashes. Against tampering a snapshot is signed (`contextchef._signing`: an HMAC over its
values).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef._errors import UsageError
from contextchef._json import CLOSED, canonical_utf8, fast_encoder

__all__ = [
    "BLOCK",
    "CONSUMED_BLOCKS",
    "CRC_FROM",
    "FORM_DIGESTS",
    "block_digest",
    "blocks_hold",
    "blocks_of",
    "blocks_refused",
    "seed_blocks",
]

BLOCK = 64
"""Items per block (64 short messages: about 12 KB hashed at once)."""

CRC_FROM = 6
"""The first snapshot version whose block digests are CRC-32 (what every save writes)."""

FORM_DIGESTS = ("history form digests",)
"""Key, in the dict a snapshot's ledgers share on restore, of the history forms' digests."""

_MEMO = ("blocks made",)
CONSUMED_BLOCKS = ("consumed blocks",)
"""Key, in that dict, of the consumed blocks' digests `history._lazy.vouched` made."""


def block_digest(columns: Sequence[Sequence[Any]], crc: bool = True, at: int = 0) -> str:
    """The digest of ``[at, columns...]`` as the fast encoder writes it, else canonical.

    `crc` (version 6 on): the CRC-32, 8 hex digits, of the block with its first position
    `at`, so a block moved whole with its digests is not the one written there; else
    (version 5) the first 16 hex digits of the SHA-256 of ``[columns...]``, which no
    position enters. "" when neither encoder writes it (a lone surrogate, NaN):
    `blocks_hold` never takes that.
    """
    return next(_digests(columns, crc, at), "")


def _digests(columns: Sequence[Sequence[Any]], crc: bool, at: int) -> Iterator[str]:
    """`block_digest` of `columns` by each encoder there is, fast first, made as asked.

    `block_digest` takes the first; an encoder that refuses the value gives none.
    """
    value = [at, *columns] if crc else list(columns)
    for encode in (fast_encoder(), canonical_utf8):
        if encode is None:
            continue
        try:
            data = encode(value)
        except (TypeError, ValueError, RecursionError):  # a long integer, a lone surrogate
            continue
        yield f"{zlib.crc32(data):08x}" if crc else hashlib.sha256(data).hexdigest()[:16]


def _blocks(
    columns: Sequence[Sequence[Any]],
    index: Sequence[Any],
    old: tuple[Sequence[Any], Sequence[Any]],
    memo: dict[tuple[Any, ...], str],
    made: dict[tuple[Any, ...], str],
    crc: bool,
) -> list[str]:
    """One `block_digest` per `BLOCK` of `columns`; `index` (their digests) keys each.

    A digest kept from before (`memo`, the base's blocks) is taken only when it is of the
    kind made here (`crc`: 8 hex digits): a session restored from a version 5 snapshot
    holds SHA-256 blocks, which a version 6 save makes again.
    """
    old_index, old_blocks = old
    out, size = [], 8 if crc else 16
    for b, k in enumerate(range(0, len(index), BLOCK)):
        key = (k, tuple(index[k : k + BLOCK]))
        hit = memo.get(key)
        if hit is None and b < len(old_blocks) and tuple(old_index[k : k + BLOCK]) == key[1]:
            hit = old_blocks[b]  # the base's block over the same digests
        if hit is None or len(hit) != size:
            hit = block_digest([c[k : k + BLOCK] for c in columns], crc, k)
        made[key] = hit
        out.append(hit)
    return out


def blocks_of(
    forms: Sequence[Any],
    consumed: Sequence[str],
    wire: tuple[Sequence[Any], Sequence[Any], Sequence[Any]],
    base: Mapping[str, Any],
    cache: dict[Any, Any] | None,
    crc: bool = True,
) -> list[list[str]]:
    """A ledger's ``blocks``: over its ``consumed[:shared]`` (`consumed`) and its `wire`.

    `wire` is (stored entries, their texts, their digests); `base` an earlier form of the
    ledger (its blocks over the same digests are taken as they are), `cache` the ledger's
    (it keeps the blocks made, so a snapshot without a base makes only the changed ones);
    `crc`: CRC-32 blocks, as every save writes (False: version 5's, to check one).
    """
    memo: dict[tuple[Any, ...], str] = (cache or {}).get(_MEMO, {})
    made: dict[tuple[Any, ...], str] = {}
    old = base.get("blocks") or [[], []]
    old_consumed = base.get("consumed", [])[: base.get("shared", 0)]
    forms = forms[: len(consumed)]
    out = [
        _blocks([forms, consumed], consumed, (old_consumed, old[0]), memo, made, crc),
        _blocks(wire, wire[2], (base.get("wire_digests", []), old[1]), memo, made, crc),
    ]
    if cache is not None:
        cache[_MEMO] = made
    return out


def blocks_hold(
    form: Mapping[str, Any],
    forms: Sequence[Any],
    out: Sequence[Any],
    shared: int,
    made: Any,
    where: str,
    version: int,
) -> list[list[str]] | None:
    """The blocks a version 5 or 6 ledger `form`'s items give; None when its ``blocks`` hold.

    `out` are its wire entries as records (a float in one: they never hold, the
    canonical bytes are read one by one), `shared` its checked count of shared messages,
    `made` the dict the snapshot's ledgers share: None seeds its form digests with the
    ledger's consumed ones, which the blocks show are the forms' (`history._forms.consumed`).
    Blocks that differ are judged by `blocks_refused` once the one-by-one checks passed.

    Raises:
        UsageError: A ledger without ``blocks`` (`where` names it): every save from version 5
            writes them, and without them the items' order would go unchecked.
    """
    blocks, consumed = form.get("blocks"), form["consumed"]
    if blocks is None:
        raise UsageError(
            f"{where} has no 'blocks', which every snapshot from version 5 holds (the digests "
            "that tie each message and wire entry to its place); nothing was restored"
        )
    texts = form.get("texts") or [[]] * len(out)
    memo = {_MEMO: made.get(CONSUMED_BLOCKS, {})}  # the consumed blocks `vouched` hashed
    wire, crc = (form["wire"], texts, form["wire_digests"]), version >= CRC_FROM
    ours = blocks_of(forms[:shared], consumed[:shared], wire, {}, memo, crc)
    if ours != blocks or "" in ours[0] or "" in ours[1] or not CLOSED.issuperset(map(type, out)):
        return ours
    digests = made.setdefault(FORM_DIGESTS, [])
    if len(digests) < shared:
        digests[len(digests) :] = consumed[len(digests) : shared]
    made[(_HELD, where)] = memo[_MEMO]  # for `seed_blocks`: this ledger's blocks, as checked
    return None


_HELD = "blocks held"


def seed_blocks(cache: dict[Any, Any], made: dict[Any, Any] | None, where: str) -> None:
    """Keep the blocks a restore checked of ledger `where` for its next save (`blocks_of`).

    `made` is the dict the snapshot's ledgers share on restore (None: signed, whose blocks
    are not hashed); `blocks_hold` left there the blocks it found to hold. The next save
    then hashes only the blocks whose items changed since, not the whole history again.
    """
    held = made.pop((_HELD, where), None) if made is not None else None
    if held is not None:
        cache[_MEMO] = held


def blocks_refused(
    form: Mapping[str, Any],
    forms: Sequence[Any],
    out: Sequence[Any],
    ours: Any,
    shared: int,
    where: str,
    version: int,
) -> None:
    """Refuse a ledger whose items each match their digests but not their ``blocks``.

    Called once its wire entries passed their one-by-one checks; `ours` is what
    `blocks_hold` made (`out`: the entries as records, `shared` the count of consumed
    messages the consumed blocks cover). A block's digest is over its
    items in order, so a block that differs while each item matches its own digest
    means the items were moved or the block digest edited: the snapshot was changed
    after it was taken. A block holding a float is refused only when no encoder writes
    its digest (`_judged`; "" is never taken); a consumed block holding a message
    that differs from its digest is left to `history._forms.consumed`, which names it.

    Raises:
        UsageError: A block count, or a block, that differs (`where` names the ledger;
            the message names the block and its positions).
    """
    blocks, kinds = form["blocks"], (("consumed", "history messages"), ("wire", "wire entries"))
    for c, (kind, items) in enumerate(kinds):
        got = blocks[c] if len(blocks) == 2 else []
        if len(blocks) != 2 or len(got) != len(ours[c]):
            raise UsageError(
                f"{where} 'blocks' must hold [consumed blocks, wire blocks] with "
                f"{len(ours[c])} {kind} block digests (one per {BLOCK} {items}), got "
                f"{len(blocks)} lists, {len(got)} {kind} ones; the snapshot was changed after "
                "it was taken; nothing was restored"
            )
        for b, (mine, theirs) in enumerate(zip(ours[c], got, strict=True)):
            lo, hi = b * BLOCK, min((b + 1) * BLOCK, len(out) if c else shared)
            span = (lo, hi, version >= CRC_FROM)
            if mine in ("", theirs) or not _judged(c, form, forms, out, span, theirs):
                continue
            raise UsageError(
                f"{where} {kind} block {b} ({items} {lo}-{hi - 1}) differs from its digest "
                f"in 'blocks' while each of them matches its own digest: they were reordered "
                "(or the block digest edited) after the snapshot was taken, and replaying "
                "them would break the conversation; nothing was restored"
            )


def _judged(
    c: int,
    form: Mapping[str, Any],
    forms: Sequence[Any],
    out: Sequence[Any],
    span: tuple[int, int, bool],
    theirs: str,
) -> bool:
    """Whether block `span` of column `c` (0: consumed, 1: wire), digest `theirs`, is refused.

    `span`: its first and last-plus-one positions, and whether its digest is CRC-32.

    A consumed block whose forms do not each hash to their consumed digest is left to
    `history._forms.consumed`, which names the message. A block holding a float is
    written otherwise by each encoder (orjson ``1e-7``, ``json`` ``1e-07``), and its
    writer may have had either: it is refused only when no encoder gives `theirs`, and
    left to the one-by-one checks by a reader without the fast encoder (the ``fastjson``
    extra), which cannot tell what a writer that had it wrote.
    """
    lo, hi, crc = span
    if c:
        texts = form.get("texts") or [[]] * len(out)
        columns = [form["wire"][lo:hi], texts[lo:hi], form["wire_digests"][lo:hi]]
        if CLOSED.issuperset(map(type, out[lo:hi])):
            return True
    else:
        columns = [list(forms[lo:hi]), form["consumed"][lo:hi]]
        try:
            made = [hashlib.sha256(canonical_utf8(f)).hexdigest()[:16] for f in forms[lo:hi]]
        except (TypeError, ValueError, RecursionError):  # `consumed` checks them one by one
            return False
        if made != list(columns[1]):
            return False
        if not _has_float(columns[0]):
            return True
    return fast_encoder() is not None and theirs not in _digests(columns, crc, lo)


def _has_float(value: Any) -> bool:
    """Whether a JSON `value` holds a float anywhere."""
    if isinstance(value, dict):
        return any(map(_has_float, value.values()))
    if isinstance(value, list):
        return any(map(_has_float, value))
    return isinstance(value, float)
