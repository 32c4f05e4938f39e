"""A ledger's record digest, and telling a store's reordering of JSON keys from an edit.

Many stores give a JSON document back with its object keys in another order: PostgreSQL
``jsonb`` (shorter keys first, then bytewise), DynamoDB and Firestore maps,
``json.dumps(sort_keys=True)``, orjson's ``OPT_SORT_KEYS``. The values are the same, but a
snapshot's plain digests (``wire_digests``, ``consumed``, ``record_digest``) are over the
bytes in the order written, because the ledger replays what was sent byte for byte: the
prompt cache is byte-sensitive, while Anthropic's thinking check compares values ("JSON
formatting and key order don't matter; the values do", research note R8; the cache, R30).

So an unsigned snapshot whose keys were reordered cannot be checked against its digests:
`reordered` tells that case (on the error path only) so the restore says so, and what to
do, rather than that the snapshot was changed. Its checks raise `DigestMismatch`, and
`history._cause` then decides over the whole snapshot: the reordering only when some key
order explains every failing digest it decides, else the first value no order explains.

A signed snapshot's HMAC is over the sorted canonical form (`contextchef._signing`), so
its values are the signer's whatever the order: `Ledger.from_dict` restores it, takes
`reordered` as the sign that its recorded digests no longer match the bytes it holds,
and lets the next save make them again.

Why an unsigned snapshot is not checked by value instead: its digests are over the
writer's bytes, and nothing else in it says the writer's key order (a tool call's
arguments keep the model's order, provider data the provider's), so no reader can make
those bytes again; a check by value needs digests over a sorted form, a new field (a
format version) hashed on every save besides the one the replay needs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextchef._errors import ContextChefError, UsageError
from contextchef._json import canonical_dumps, fast_utf8
from contextchef._records import text_digest
from contextchef._signing import SnapshotKeys, verify
from contextchef.history._messages import _KINDS

__all__ = [
    "HOW",
    "RANK",
    "DigestMismatch",
    "check_record",
    "head_mismatch",
    "record_digest",
    "recorded_fields",
    "reordered",
    "reordered_error",
    "store_order",
]

_RECORDED = ("tools", "system", "strategy", "marks", "pending", "strip", "system_entries")


class DigestMismatch(UsageError):
    """A snapshot digest that does not match: its cause is named by `history._cause`.

    Raised by the restore's checks of an unsigned snapshot, and never out of it:
    `history._cause.restore_errors` raises a `UsageError` in its place.

    Attributes:
        order: The store order the check took the keys to be in (`reordered_error`), or
            None: it took a value to have changed.
    """

    def __init__(self, message: str, order: str | None = None) -> None:
        super().__init__(message)
        self.order = order


def recorded_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """What `record_digest` is over, by field name, in the order it hashes them."""
    fields = {k: data.get(k) for k in _RECORDED}
    for extra in ("bindings", "chain", "sent", "rebased", "ir_digest"):
        if data.get(extra) and (extra != "rebased" or "texts" in data):  # rebased: version 3
            fields[extra] = data[extra]
    return fields


def record_digest(data: Mapping[str, Any]) -> str:
    """A digest of what a ledger replays besides its wire entries.

    The `_RECORDED` fields, and ``bindings``, ``chain``, ``sent`` and ``ir_digest`` when
    present (and ``rebased`` when set, from version 3 on), over their canonical JSON in
    the order held; checked by `check_record` like ``wire_digests``.
    """
    try:
        return text_digest(canonical_dumps(recorded_fields(data)))
    except (TypeError, ValueError, RecursionError):
        return ""  # not plain JSON: the field checks name it


def check_record(data: Mapping[str, Any], forms: Sequence[Any], where: str, signed: bool) -> None:
    """Check a ledger form's ``record_digest`` (`where` names it), unless `signed`.

    `forms` are the snapshot's history forms (what `reordered` reads on a mismatch).

    A signed snapshot's HMAC covers these fields by value, so key order does not matter.

    Raises:
        DigestMismatch: The digest does not match: the keys were reordered by the store
            (`reordered_error`), or the fields changed after the snapshot was taken.
    """
    if signed:
        return
    fast = fast_utf8(recorded_fields(data))  # the same bytes as json's, but for some floats
    held = data["record_digest"]
    if fast is not None and held == hashlib.sha256(fast).hexdigest()[:16]:
        return
    if held == record_digest(data):
        return
    order = reordered(forms, data["tools"])
    if order is not None:
        raise reordered_error(f"{where} 'tools'", order)
    raise DigestMismatch(
        f"{where}: its tools, system, marks or thinking bindings differ from what was "
        "recorded (the record digest does not match): the snapshot was changed after it was "
        "taken, and replaying it would break the conversation; nothing was restored"
    )


def _jsonb(key: str) -> tuple[int, bytes]:
    raw = key.encode("utf-8", "surrogatepass")
    return len(raw), raw


def store_order(keys: list[str]) -> str | None:
    """The store order `keys` are in: "sorted", "jsonb" (or None: neither)."""
    if keys == sorted(keys):
        return "sorted"
    return "jsonb" if keys == sorted(keys, key=_jsonb) else None


def _sorted_throughout(value: Any, found: list[bool]) -> bool:
    """Whether every object in `value` has its keys sorted.

    `found[0]` is set when one the writer writes otherwise was seen: ``role`` after
    other keys, a tool's ``description`` before its ``name``.
    """
    if isinstance(value, dict):
        keys = list(value)
        if keys != sorted(keys):
            return False
        found[0] = found[0] or ("role" in value and keys[0] != "role")
        found[0] = found[0] or ("name" in value and "description" in keys[: keys.index("name")])
        return all(_sorted_throughout(v, found) for v in value.values())
    if isinstance(value, list):
        return all(_sorted_throughout(v, found) for v in value)
    return True


RANK: dict[Any, dict[str, int]] = {
    kind: {f.name: i for i, f in enumerate(dataclasses.fields(part))} | {"kind": -1}
    for kind, part in _KINDS.items()
}
"""Per part kind, where `Message.to_dict` writes each key (``kind`` first, then its fields)."""


def _form_keys(form: Any) -> list[str] | None:
    """The keys of `form`'s first object the writer writes otherwise (None: none found).

    `form` is a history message's `Message.to_dict` form: ``role`` before ``parts``, each
    part's ``kind`` then its fields in their declared order, a part's provider data its
    ``provider`` tag first (the parsers write it so); arguments keep the model's order,
    and are not judged.
    """
    if not isinstance(form, dict):
        return None
    if "role" in form and next(iter(form)) != "role":
        return list(form)
    for part in form.get("parts") or ():
        rank = RANK.get(part.get("kind")) if isinstance(part, dict) else None
        if rank is not None and list(part) != sorted(part, key=lambda k: rank.get(k, 99)):
            return list(part)
        data = part.get("provider_data") if rank is not None else None
        if isinstance(data, dict) and "provider" in data and next(iter(data)) != "provider":
            return list(data)  # the library writes its tag first
    return None


def reordered(forms: Sequence[Any], item: Any = None) -> str | None:
    """How a store reordered a snapshot's JSON object keys, if it shows it did.

    Evidence: `item` (a wire entry or tools list) has every object's keys sorted while one
    of them holds ``role`` after another key (a message is written ``role`` first), or
    one of the history `forms` (the snapshot's, in its order) has keys in another order
    than `Message.to_dict` writes them. Returns "sorted", "jsonb", "another order", or
    None: no sign of a reordering (a changed value is then the cause).
    """
    found = [False]
    if item is not None and _sorted_throughout(item, found) and found[0]:
        return "sorted"
    keys = next(filter(None, map(_form_keys, forms)), None)
    return None if keys is None else store_order(keys) or "another order"


def _message_forms(value: Any, out: list[Any]) -> None:
    """Collect the message forms (objects with ``role`` and ``parts``) `value` holds."""
    if isinstance(value, dict):
        if "role" in value and "parts" in value:
            out.append(value)
        else:
            for item in value.values():
                _message_forms(item, out)
    elif isinstance(value, list):
        for item in value:
            _message_forms(item, out)


def head_mismatch(
    texts: Sequence[str | bytes],
    snapshot: Callable[[], Mapping[str, Any]],
    keys: SnapshotKeys,
    session_id: str,
) -> str:
    """Why a keyed store's head does not match its stored `texts` (base, then turns).

    The head's chain is over the texts as stored, so it cannot tell reordered JSON keys
    from an edit; the signature of the `snapshot` they add up to (for `session_id`, under
    `keys`), over its values, can. The keys are named as reordered when a snapshot is not
    led by ``format`` (as written) or a message form a text holds has keys in another
    order than `Message.to_dict` writes (`reordered`); a value was edited too when the
    snapshot cannot be made or its signature does not verify. On the error path only.
    """
    if not _texts_reordered(texts):
        return "a turn or the base was edited, replaced or reordered"
    try:
        verify(snapshot(), keys, session_id=session_id)
    except ContextChefError:
        return (
            "a turn or the base was edited (the snapshot's signature, over its values, does "
            "not match them), and their JSON object keys were reordered too; nothing was "
            "restored"
        )
    return (
        "their JSON object keys were reordered (the head is over the texts as written: "
        "keep them so, in a text column, not jsonb); nothing was restored"
    )


def _texts_reordered(texts: Sequence[str | bytes]) -> bool:
    forms: list[Any] = []
    for text in texts:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and "format" in value and next(iter(value)) != "format":
            return True
        _message_forms(value, forms)
    return reordered(forms) is not None


HOW = {
    "sorted": "sorted (as json.dumps(sort_keys=True), orjson OPT_SORT_KEYS, Firestore)",
    "jsonb": "in PostgreSQL jsonb's order (shorter keys first)",
    "another order": "in another order than written (as DynamoDB maps, jsonb)",
}


def reordered_error(where: str, order: str) -> DigestMismatch:
    """The error for a ledger part (`where`) whose JSON object keys a store reordered."""
    return DigestMismatch(
        f"{where} does not match its digest because the snapshot's JSON object keys were "
        f"reordered after it was written: they are {HOW.get(order, order)}, as a store "
        "that keeps JSON as a value gives them back. The values may be intact, but an "
        "unsigned snapshot's digests are over the keys in the order written (the order is "
        "part of what was sent: the prompt cache compares bytes), so they cannot be checked. "
        "Keep the snapshot's JSON text as written (a text or bytea column, not jsonb; "
        "restore(text) takes it), or sign snapshots (SnapshotKeys), whose check is by "
        "value; nothing was restored",
        order,
    )
