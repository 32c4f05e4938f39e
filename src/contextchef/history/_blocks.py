"""A ledger's digests checked a block at a time (history layer): snapshot version 5.

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
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef._errors import UsageError
from contextchef._json import CLOSED, canonical_utf8, fast_encoder

__all__ = [
    "BLOCK",
    "CONSUMED_BLOCKS",
    "FORM_DIGESTS",
    "block_digest",
    "blocks_hold",
    "blocks_of",
    "blocks_refused",
    "seed_blocks",
]

BLOCK = 64
"""Items per block (64 short messages: about 12 KB hashed at once)."""

FORM_DIGESTS = ("history form digests",)
"""Key, in the dict a snapshot's ledgers share on restore, of the history forms' digests."""

_MEMO = ("blocks made",)
CONSUMED_BLOCKS = ("consumed blocks",)
"""Key, in that dict, of the consumed blocks' digests `history._lazy.vouched` made."""


def block_digest(columns: Sequence[Sequence[Any]]) -> str:
    """SHA-256 (first 16 hex) of ``[columns...]`` as the fast encoder writes it, else canonical.

    "" when neither encodes it (a lone surrogate, NaN): `blocks_hold` never takes that.
    """
    return next(_digests(columns), "")


def _digests(columns: Sequence[Sequence[Any]]) -> Iterator[str]:
    """`block_digest` of `columns` by each encoder there is, fast first, made as asked.

    `block_digest` takes the first; an encoder that refuses the value gives none.
    """
    value = list(columns)
    for encode in (fast_encoder(), canonical_utf8):
        if encode is None:
            continue
        try:
            yield hashlib.sha256(encode(value)).hexdigest()[:16]
        except (TypeError, ValueError, RecursionError):  # a long integer, a lone surrogate
            continue


def _blocks(
    columns: Sequence[Sequence[Any]],
    index: Sequence[Any],
    old: tuple[Sequence[Any], Sequence[Any]],
    memo: dict[tuple[Any, ...], str],
    made: dict[tuple[Any, ...], str],
) -> list[str]:
    """One `block_digest` per `BLOCK` of `columns`; `index` (their digests) keys each."""
    old_index, old_blocks = old
    out = []
    for b, k in enumerate(range(0, len(index), BLOCK)):
        key = (k, tuple(index[k : k + BLOCK]))
        hit = memo.get(key)
        if hit is None and b < len(old_blocks) and tuple(old_index[k : k + BLOCK]) == key[1]:
            hit = old_blocks[b]  # the base's block over the same digests
        made[key] = hit if hit is not None else block_digest([c[k : k + BLOCK] for c in columns])
        out.append(made[key])
    return out


def blocks_of(
    forms: Sequence[Any],
    consumed: Sequence[str],
    wire: tuple[Sequence[Any], Sequence[Any], Sequence[Any]],
    base: Mapping[str, Any],
    cache: dict[Any, Any] | None,
) -> list[list[str]]:
    """A ledger's ``blocks``: over its ``consumed[:shared]`` (`consumed`) and its `wire`.

    `wire` is (stored entries, their texts, their digests); `base` an earlier form of the
    ledger (its blocks over the same digests are taken as they are), `cache` the ledger's
    (it keeps the blocks made, so a snapshot without a base makes only the changed ones).
    """
    memo: dict[tuple[Any, ...], str] = (cache or {}).get(_MEMO, {})
    made: dict[tuple[Any, ...], str] = {}
    old = base.get("blocks") or [[], []]
    old_consumed = base.get("consumed", [])[: base.get("shared", 0)]
    out = [
        _blocks([forms[: len(consumed)], consumed], consumed, (old_consumed, old[0]), memo, made),
        _blocks(wire, wire[2], (base.get("wire_digests", []), old[1]), memo, made),
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
) -> list[list[str]] | None:
    """The blocks a version 5 ledger `form`'s items give; None when its ``blocks`` hold.

    `out` are its wire entries as records (a float in one: they never hold, the
    canonical bytes are read one by one), `shared` its checked count of shared messages,
    `made` the dict the snapshot's ledgers share: None seeds its form digests with the
    ledger's consumed ones, which the blocks show are the forms' (`history._forms.consumed`).
    Blocks that differ are judged by `blocks_refused` once the one-by-one checks passed.

    Raises:
        UsageError: A ledger without ``blocks`` (`where` names it): every version 5 save
            writes them, and without them the items' order would go unchecked.
    """
    blocks, consumed = form.get("blocks"), form["consumed"]
    if blocks is None:
        raise UsageError(
            f"{where} has no 'blocks', which every version 5 snapshot holds (the digests "
            "that tie each message and wire entry to its place); nothing was restored"
        )
    texts = form.get("texts") or [[]] * len(out)
    memo = {_MEMO: made.get(CONSUMED_BLOCKS, {})}  # the consumed blocks `vouched` hashed
    ours = blocks_of(
        forms[:shared], consumed[:shared], (form["wire"], texts, form["wire_digests"]), {}, memo
    )
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
            if mine in ("", theirs) or not _judged(c, form, forms, out, (lo, hi), theirs):
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
    span: tuple[int, int],
    theirs: str,
) -> bool:
    """Whether block `span` of column `c` (0: consumed, 1: wire), digest `theirs`, is refused.

    A consumed block whose forms do not each hash to their consumed digest is left to
    `history._forms.consumed`, which names the message. A block holding a float is
    written otherwise by each encoder (orjson ``1e-7``, ``json`` ``1e-07``), and its
    writer may have had either: it is refused only when no encoder gives `theirs`, and
    left to the one-by-one checks by a reader without the fast encoder (the ``fastjson``
    extra), which cannot tell what a writer that had it wrote.
    """
    lo, hi = span
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
    return fast_encoder() is not None and theirs not in _digests(columns)


def _has_float(value: Any) -> bool:
    """Whether a JSON `value` holds a float anywhere."""
    if isinstance(value, dict):
        return any(map(_has_float, value.values()))
    if isinstance(value, list):
        return any(map(_has_float, value))
    return isinstance(value, float)
