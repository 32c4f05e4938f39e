"""Read-only JSON records: what a session sent, shared with every payload that replays it.

A session keeps, per target, the wire entries it sent and replays them by reference in
every later payload (a steady compile then costs only the new turn). Those entries are
made read-only once, when first recorded (`record`): an edit of a returned payload's
message, at any depth, raises `ReadOnlyPayloadError` instead of reaching every later
request. They are `dict` / `list` subclasses, so ``json.dumps``, ``isinstance`` checks and
the providers' SDKs see plain JSON data; ``copy.deepcopy`` and pickling give plain,
mutable dicts and lists.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import marshal
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

from contextchef._errors import ReadOnlyPayloadError, UsageError, json_reason, shown, shown_keys
from contextchef._json import (
    CLOSED,
    FrozenDict,
    FrozenList,
    JsonValue,
    canonical_utf8,
    fast_encoder,
)

__all__ = [
    "RecordDict",
    "RecordList",
    "entry",
    "extend_digests",
    "plain",
    "record",
    "record_items",
    "recorded",
    "text_digest",
]

_HOW = (
    "payload message entries are read-only: they are the session's record of what was "
    "sent, replayed unchanged in every later request, so an edit would reach all of them. "
    "Edit a copy: request.mutable_payload() (or copy.deepcopy(request.payload)) gives "
    "plain, mutable dicts and lists"
)


def _refuse(op: str) -> Callable[..., NoReturn]:
    def refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
        what = (
            f"an object with keys {shown_keys(self)}"
            if isinstance(self, Mapping)
            else f"a list of {len(self)} items"  # type: ignore[arg-type]
        )
        key = f" {shown(args[0], 60)}" if args and op in _KEYED else ""
        raise ReadOnlyPayloadError(f"cannot {op}{key} on {what}: {_HOW}")

    refuse.__name__ = op
    return refuse


_KEYED = frozenset({"__setitem__", "__delitem__", "pop", "setdefault"})


class RecordDict(FrozenDict):
    """A recorded JSON object: equal to, and serialized like, a plain dict; read-only."""

    __slots__ = ()
    __setitem__ = _refuse("__setitem__")
    __delitem__ = _refuse("__delitem__")
    __ior__ = _refuse("__ior__")
    clear = _refuse("clear")
    pop = _refuse("pop")
    popitem = _refuse("popitem")
    setdefault = _refuse("setdefault")
    update = _refuse("update")


class RecordList(FrozenList):
    """A recorded JSON array: equal to, and serialized like, a plain list; read-only."""

    __slots__ = ()
    __setitem__ = _refuse("__setitem__")
    __delitem__ = _refuse("__delitem__")
    __iadd__ = _refuse("__iadd__")
    __imul__ = _refuse("__imul__")
    append = _refuse("append")
    extend = _refuse("extend")
    insert = _refuse("insert")
    pop = _refuse("pop")
    remove = _refuse("remove")
    clear = _refuse("clear")
    sort = _refuse("sort")
    reverse = _refuse("reverse")


class MixedDict(RecordDict):
    """A `RecordDict` holding, at some depth, a float or a value of another type."""

    __slots__ = ()


class MixedList(RecordList):
    """A `RecordList` holding, at some depth, a float or a value of another type."""

    __slots__ = ()


_LEAVES = frozenset({str, int, float, bool, type(None)})
"""Types shared as they are (immutable); checked first, as most values are text."""
_PURE = frozenset({str, int, bool, type(None), RecordDict, RecordList})
"""What a `RecordDict` / `RecordList` (exactly those types) holds: `contextchef._json`
may write it with its fast encoder (`CLOSED`)."""
_RECORDS = frozenset({RecordDict, RecordList, MixedDict, MixedList})
CLOSED.update({RecordDict, RecordList})


def record(value: JsonValue) -> Any:
    """A read-only deep copy of a JSON value (itself when it is already a record).

    Objects become `RecordDict`, arrays and tuples `RecordList`, key order kept; other
    values are immutable already (str, int, float, bool, None) and are shared. About
    one to two times ``json.dumps`` of the same value (benchmarks/compile_steady.py). A
    container holding, at any depth, a float or any value other than text, an integer,
    a boolean or null is a `MixedDict` / `MixedList` instead (the same to every reader).
    """
    kind = type(value)
    if kind in _RECORDS:
        return value
    if kind is dict or (
        kind not in _LEAVES and kind is not list and isinstance(value, (dict, Mapping))
    ):
        out = RecordDict(value)  # one copy in C; containers below are swapped in place
        mixed = False
        for k, v in value.items():
            if type(v) in _PURE:
                continue
            child = record(v)
            mixed = mixed or type(child) not in _PURE
            if child is not v:
                _set_item(out, k, child)
        return MixedDict(out) if mixed else out
    if kind is list or (kind not in _LEAVES and isinstance(value, (list, tuple))):
        items = RecordList(value)
        mixed = False
        for i, v in enumerate(value):
            if type(v) in _PURE:
                continue
            child = record(v)
            mixed = mixed or type(child) not in _PURE
            if child is not v:
                _set_index(items, i, child)
        return MixedList(items) if mixed else items
    return value


def record_items(items: list[Any]) -> RecordList:
    """`items`, a list just built, as a record: `RecordDict` items taken as they are.

    For renderers writing straight into records (a cold compile renders every message
    once: `record` would copy and walk each again). Any other item: `record(items)`.
    """
    for item in items:
        if type(item) is not RecordDict:
            return record(items)  # type: ignore[no-any-return]
    return RecordList(items)


def entry(**fields: Any) -> RecordDict:
    """A JSON object of `fields` as a record, not copied below when they are records.

    Text, integers, booleans, null and records are taken as they are; any other value
    (a float, a plain dict, a mixed record below) makes it `record(fields)`.
    """
    for value in fields.values():
        if type(value) not in _PURE:
            return record(fields)  # type: ignore[no-any-return]
    return RecordDict(fields)


_set_item = dict.__setitem__
_set_index = list.__setitem__
"""The plain setters, for filling a record while it is made (its own refuse)."""


def copier(value: Any) -> Callable[[], Any]:
    """A maker of fresh copies of `value`, equal to `plain(value)`.

    `marshal`'s (one pass in C, ~6x faster than `plain` on a session's rendered tools)
    where it takes `value` (exact dicts, lists, text, numbers, booleans and null; it also
    copies what `plain` would share, such as tuples), else `plain`'s.
    """
    try:
        return functools.partial(marshal.loads, marshal.dumps(value))
    except ValueError:  # a subclass or another type anywhere: `plain` copies it
        return functools.partial(plain, value)


def plain(value: Any) -> Any:
    """A copy of `value` whose dicts and lists (records included) are new, plain ones.

    Anything else (text, numbers, tuples, other objects) is shared, not copied.
    """
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def recorded(
    entries: Sequence[Mapping[str, Any]], digests: Sequence[str], where: str, signed: bool
) -> tuple[list[Any], list[str | None]]:
    """Stored entries as records, checked against their digests, and None per entry.

    Each entry's canonical JSON must be valid Unicode (a lone surrogate cannot be encoded
    for any request) and the SHA-256 of its UTF-8 bytes (first 16 hex digits) the recorded
    digest; the bytes hashed are not kept as text (None: a ledger makes an entry's text
    when first asked for). `signed`: an HMAC just verified covers them; only their count
    is checked and nothing is encoded.

    Raises:
        UsageError: Not plain JSON, a digest count that differs, text that is not valid
            Unicode, or an entry whose digest does not match (`where` names the list).
    """
    made: list[str | None] = []  # each entry's digest, hashed as it is encoded
    try:
        # a `CLOSED` record holds no float: the fast encoder's bytes are the canonical ones
        extend_digests(
            () if signed else entries, made, functools.partial(_canonical_digest, entries), _closed
        )
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"{where} is not plain JSON: {json_reason(exc)}") from exc
    if len(digests) != len(entries):
        raise UsageError(
            f"{where}_digests must hold one digest per wire entry ({len(entries)}); nothing "
            "was restored"
        )
    same = signed or made == digests  # compared in C; one by one only to name the entry
    for i, (ours, digest) in enumerate(zip(made, digests, strict=True) if not same else ()):
        if ours is None:  # one pass: the UTF-8 bytes hashed are what a request would send
            raise UsageError(
                f"{where} entry {i} holds text that is not valid Unicode (a lone surrogate), "
                "which no request can encode; nothing was restored"
            )
        if ours != digest:
            raise UsageError(
                f"{where} entry {i} differs from what was sent (its digest does not match); "
                "the snapshot was changed after it was taken, and replaying the entry would "
                "break the conversation; nothing was restored"
            )
    jsons: list[str | None] = [None] * len(entries)  # made when first asked for
    return [e if type(e) in _RECORDS else record(e) for e in entries], jsons


def extend_digests(
    values: Sequence[Any],
    made: list[Any],
    slow: Callable[[int], Any],
    fast_when: Callable[[object], bool] | None = None,
) -> list[Any]:
    """`made` extended to one digest per item of `values` (the first 16 hex of SHA-256).

    The digests already in `made` are kept (a caller may pass the ones made earlier). The
    rest are made in one tight loop from the fast encoder's bytes (`fast_encoder`), for
    each value `fast_when` accepts (every value when None); a value the encoder refuses
    (a lone surrogate, a long integer) or `fast_when` turns down gets `slow(index)`
    instead, then the loop goes on. Without the fast encoder every value gets `slow`.
    """
    fast, sha, n = fast_encoder(), hashlib.sha256, len(values)
    while len(made) < n:
        if fast is not None:
            todo: Iterator[Any] = itertools.islice(values, len(made), n)
            if fast_when is not None:
                todo = itertools.takewhile(fast_when, todo)
            # the digests made before a refusal stay (extend appends as it goes)
            with contextlib.suppress(TypeError, ValueError):  # orjson's error is a TypeError
                made.extend(sha(fast(v)).hexdigest()[:16] for v in todo)
            if len(made) == n:
                break
        made.append(slow(len(made)))
    return made


def _canonical_digest(entries: Sequence[Any], i: int) -> str | None:
    """`entries[i]`'s digest on its canonical UTF-8 (None: a lone surrogate)."""
    try:
        return hashlib.sha256(canonical_utf8(entries[i])).hexdigest()[:16]
    except UnicodeEncodeError:
        return None  # named by `recorded`, after the count


def _closed(value: object) -> bool:
    return type(value) in CLOSED


def text_digest(text: str) -> str:
    """SHA-256 of `text` as UTF-8, its first 16 hex digits (a snapshot's digests)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
