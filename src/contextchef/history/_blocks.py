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
the message or entry: a block is a shortcut, never a verdict. A block's items' digests
decide its content (a consumed digest is over the form, a wire digest over the stored
entry and its texts), so a save makes only the blocks whose digests changed (`blocks_of`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._json import CLOSED, canonical_utf8, fast_encoder

__all__ = ["BLOCK", "FORM_DIGESTS", "block_digest", "blocks_hold", "blocks_of"]

BLOCK = 64
"""Items per block (64 short messages: about 12 KB hashed at once)."""

FORM_DIGESTS = ("history form digests",)
"""Key, in the dict a snapshot's ledgers share on restore, of the history forms' digests."""

_MEMO = ("blocks made",)


def block_digest(columns: Sequence[Sequence[Any]]) -> str:
    """SHA-256 (first 16 hex) of ``[columns...]`` as the fast encoder writes it, else canonical.

    "" when neither encodes it (a lone surrogate, NaN): `blocks_hold` never takes that.
    """
    value, fast = list(columns), fast_encoder()
    for encode in (fast, canonical_utf8) if fast is not None else (canonical_utf8,):
        try:
            return hashlib.sha256(encode(value)).hexdigest()[:16]
        except (TypeError, ValueError, RecursionError):  # a long integer, a lone surrogate
            continue
    return ""


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
        key = tuple(index[k : k + BLOCK])
        hit = memo.get(key)
        if hit is None and b < len(old_blocks) and tuple(old_index[k : k + BLOCK]) == key:
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
    form: Mapping[str, Any], forms: Sequence[Any], out: Sequence[Any], shared: int, made: Any
) -> bool:
    """Whether a version 5 ledger `form`'s ``blocks`` are the ones its items give.

    `out` are its wire entries as records (a float in one: False, the canonical bytes
    are read one by one), `shared` its checked count of shared messages, `made` the
    dict the snapshot's ledgers share: True seeds its form digests with the ledger's
    consumed ones, which the blocks show are the forms' (`history._forms.consumed`).
    """
    blocks, consumed = form.get("blocks"), form["consumed"]
    if not blocks or len(blocks) != 2 or not CLOSED.issuperset(map(type, out)):
        return False
    texts = form.get("texts") or [[]] * len(out)
    ours = blocks_of(
        forms[:shared], consumed[:shared], (form["wire"], texts, form["wire_digests"]), {}, None
    )
    if ours != blocks or "" in ours[0] or "" in ours[1]:
        return False
    digests = made.setdefault(FORM_DIGESTS, [])
    if len(digests) < shared:
        digests[len(digests) :] = consumed[len(digests) : shared]
    return True
