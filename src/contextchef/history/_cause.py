"""Why an unsigned snapshot's digests fail: its keys were reordered, or a value changed.

A store that keeps JSON as a value (PostgreSQL ``jsonb``, DynamoDB, Firestore,
``json.dumps(sort_keys=True)``) gives a snapshot back with its object keys in another
order; an unsigned snapshot's digests are over the writer's bytes (`history._reordered`),
so every digest over a reordered part fails, although the values are the writer's. A
failing digest is *explained* by the reordering when some order of the keys of the
stored value gives the recorded digest: the value is then the writer's. When none does
(the search tried every order) the value itself differs. So the restore reports:

* the first value change (in the order history messages, then each ledger's ``ir``,
  wire entries and record fields), adding that the keys were reordered too when another
  failing digest was explained so;
* the reordering (`reordered_error`), when it explains every failing digest it could
  decide (a value with too many objects to try every order of is not decided);
* else what the first check said (`DigestMismatch`, raised by the checks).

This runs only once a check raised (`restore_errors` wraps the restore's ledger checks): a
successful restore pays nothing. The search (`_explained`) tries the likely orders
first: an object in neither store order (sorted, jsonb) was not reordered and keeps its
order; one learned from a value explained before (the writer writes one key set in one
order, as a rule), the library's own (a part's ``kind`` then its declared fields), the
keys writers put first (`_LEAD`: ``type``, ``role``, a tool's ``name`` before its
``description``), the sorted one (canonical forms), the stored one; with the fewest
objects off their likeliest order first. Only when every order of every object fits in
`_BUDGET` are all tried, which proves a value changed when none gives the digest. A
history message is judged as `Message.to_dict` writes it (the keys it orders itself are
never searched; what its parts hold is). `_TOTAL` bounds the whole search.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextchef._errors import ContextChefError, UsageError
from contextchef._json import canonical_dumps, canonical_utf8
from contextchef._records import text_digest
from contextchef.history._forms import form_digest, ledger_where
from contextchef.history._messages import message_from_dict
from contextchef.history._reordered import (
    HOW,
    RANK,
    DigestMismatch,
    recorded_fields,
    reordered_error,
    store_order,
)
from contextchef.history._wire_forms import wire_digest

__all__ = ["restore_errors"]

_BUDGET = 4096
"""Most digests tried to explain one failing digest by a key order (each search phase)."""

_TOTAL = 4 * _BUDGET
"""Most digests tried for one snapshot (the error path stays short)."""

_Order = tuple[str, ...]


@contextlib.contextmanager
def restore_errors(data: Mapping[str, Any]) -> Iterator[None]:
    """Around the ledger checks of snapshot `data` (checked form): their errors, named.

    Raises:
        UsageError: In place of a `DigestMismatch` the checks raised: the first value
            that no key order explains (the keys reordered too, said when seen), the
            reordering (`reordered_error`) when it explains every failing digest, else
            the check's own message; in place of a `RecursionError`, a field nested too
            deep (no JSON this library writes).
    """
    try:
        yield
    except DigestMismatch as exc:
        try:
            named = cause(data, exc)
        except (RecursionError, LookupError, TypeError, ValueError, AttributeError):
            named = UsageError(str(exc))  # a form the search cannot walk: as the check said
        raise named from None
    except RecursionError:  # a field nested past what Python can walk
        raise UsageError(
            f"{_deepest(data)} is nested too deep (JSON this library writes nests a few "
            "dozen levels); nothing was restored"
        ) from None


def _deepest(data: Mapping[str, Any]) -> str:
    """Which field of snapshot `data` nests deepest, named as a restore names fields.

    Walked with a stack, not by recursion: the field is past what recursion can walk;
    each container once (a caller's dict may hold itself).
    """
    most, where, seen = -1, "a snapshot field", set[int]()
    ledgers = data.get("ledgers")
    fields: list[tuple[str, Any]] = [
        (f"snapshot field {k!r}", v) for k, v in data.items() if k != "ledgers"
    ]
    if isinstance(ledgers, Mapping):
        for name, ledger in ledgers.items():
            if isinstance(ledger, Mapping):
                fields += [(f"{ledger_where(name)} field {k!r}", v) for k, v in ledger.items()]
    for name, value in fields:
        stack = [(value, 0)]
        while stack:
            item, depth = stack.pop()
            if depth > most:
                most, where = depth, name
            if not isinstance(item, (Mapping, list, tuple)) or id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, Mapping):
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)
    return where


@dataclass
class _Item:
    """One digest of a snapshot: where, the stored value, the digest recorded over it."""

    where: str
    value: Any
    recorded: str
    digest_of: Callable[[Any], str]
    changed: str
    """What the refusal says when a value changed (after `where`)."""
    scope: Callable[[Any, list[dict[str, Any]]], list[dict[str, Any]]] = field(
        default=lambda value, out: _objects(value, out)
    )
    """The objects of `value` whose key order `digest_of` reads."""


@dataclass
class _Search:
    """What explaining the failing digests of one snapshot found so far."""

    learned: dict[frozenset[str], _Order] = field(default_factory=dict)
    moved: list[list[str]] = field(default_factory=list)
    """The stored key orders that differ from the writer's, as found."""
    first: str = ""
    """Where the first digest a key order explained is."""
    left: int = _TOTAL
    """Digests all the searches may still try (the error path stays short)."""


def cause(data: Mapping[str, Any], said: DigestMismatch) -> UsageError:
    """The error for unsigned snapshot `data` whose check raised `said`.

    See the module docstring; a `UsageError` (never raised here), never a subclass. The
    wire entries are judged first: the orders they show (a provider's, kept in both the
    entry and the history message) then explain the history; an item not decided is
    tried again once the others were.
    """
    items, search = list(_failing(data)), _Search()
    verdicts: dict[int, bool | None] = {}
    learned: dict[int, int] = {}  # how many orders were learned when an item was not decided
    for _ in range(2):
        for i in sorted(range(len(items)), key=lambda i: "'wire' entry" not in items[i].where):
            if verdicts.get(i) is None and learned.get(i, -1) < len(search.learned):
                learned[i] = len(search.learned)
                verdicts[i] = _explained(items[i], search)
    changed = next((item for i, item in enumerate(items) if verdicts[i] is False), None)
    explained = True in verdicts.values()
    if changed is not None and not explained and said.order is None:
        return UsageError(str(said))  # a value change, no reordering: as the check said it
    if changed is not None:
        order = _named(search)
        also = f"; besides, its JSON object keys were reordered: {HOW[order]}" if explained else ""
        return UsageError(f"{changed.where} {changed.changed}{also}; nothing was restored")
    if explained:
        return UsageError(str(reordered_error(search.first, _named(search))))
    return UsageError(str(said))


def _named(search: _Search) -> str:
    """The store order the moved keys are in: "sorted", "jsonb" or "another order"."""
    if all(keys == sorted(keys) for keys in search.moved):
        return "sorted"
    return "jsonb" if all(store_order(keys) for keys in search.moved) else "another order"


# -- the snapshot's digests ------------------------------------------------------------------


def _failing(data: Mapping[str, Any]) -> Iterator[_Item]:
    """Each failing digest of `data`: history messages first, then each ledger's own."""
    forms, seen = data["history"], set()
    for name, ledger in data["ledgers"].items():
        for item in _history_items(ledger, forms, name):
            index = int(item.where.rsplit(" ", 1)[1])
            if index not in seen and _digest(item.digest_of, item.value) != item.recorded:
                seen.add(index)
                yield item
    for name, ledger in data["ledgers"].items():
        yield from _ledger_failing(ledger, forms, name, data["version"])


def _ledger_failing(
    ledger: Mapping[str, Any], forms: Sequence[Any], name: str, version: int
) -> Iterator[_Item]:
    where = ledger_where(name)
    recorded = ledger.get("ir_digest")
    if version >= 5 and recorded is not None and form_digest(ledger["ir"]) != recorded:
        yield _Item(f"{where} 'ir'", None, recorded, _never, _IR)  # sorted: a value change
    for item in (*_wire_items(ledger, where, version), _record_item(ledger, where)):
        if _digest(item.digest_of, item.value) != item.recorded:
            yield item
    if isinstance(ledger.get("undo"), dict):
        yield from _ledger_failing(ledger["undo"], forms, name, version)


_IR = (
    "differs from what was recorded (its 'ir_digest', over its values, does not match): its "
    "normalized messages were edited or moved after the snapshot was taken"
)
_WIRE = (
    "differs from what was sent (its digest does not match, in any order of its JSON keys): "
    "the snapshot was changed after it was taken, and replaying the entry would break the "
    "conversation"
)
_HISTORY = (
    "differs from what the ledger consumed (its digest does not match, in any order of its "
    "JSON keys): the history was changed after the snapshot was taken"
)
_RECORD = (
    "differs from what was recorded (the record digest does not match, in any order of "
    "their JSON keys): the snapshot was changed after it was taken"
)


def _never(value: Any) -> str:
    return ""


def _history_items(ledger: Mapping[str, Any], forms: Sequence[Any], name: str) -> Iterator[_Item]:
    """The shared history messages `ledger` holds a digest of (as `consumed` checks them)."""
    mark = ledger.get("pending") or (ledger.get("marks") or [{}])[-1]
    digests, size = ledger.get("consumed") or [], mark.get("history")
    shared = min(ledger.get("shared", 0), len(forms))
    if len(digests) != size:
        return
    for i in range(shared):
        where = f"{ledger_where(name)}: history message {i}"
        if _digest(_form_digest, forms[i]) != digests[i]:  # as `consumed` checks: both
            form = _written(forms[i])  # the library's keys in its order, once
            yield _Item(where, form, digests[i], _form_digest, _HISTORY, _held)


def _form_digest(form: Any) -> str:
    return hashlib.sha256(canonical_utf8(form)).hexdigest()[:16]


def _written(form: Any) -> Any:
    """`Message.to_dict` of the message built from `form` (what `digest` hashes), or it."""
    try:
        return message_from_dict(form).to_dict()
    except (ContextChefError, TypeError, ValueError, LookupError, AttributeError):
        return form  # not a message: `Ledger.from_dict` names it


def _held(form: Any, out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects a message's parts hold (provider data, arguments): kept in their order."""
    for part in form.get("parts") or () if isinstance(form, dict) else ():
        for value in part.values() if isinstance(part, dict) else ():
            _objects(value, out)
    return out


def _wire_items(ledger: Mapping[str, Any], where: str, version: int) -> Iterator[_Item]:
    """The wire entries of `ledger` with their digests (version 4 on; older: not judged)."""
    wire, texts, digests = ledger["wire"], ledger.get("texts"), ledger["wire_digests"]
    if version < 4 or len(digests) != len(wire) or (texts and len(texts) != len(wire)):
        return
    consumed = ledger["consumed"]
    for i, entry in enumerate(wire):
        refs = texts[i] if texts else []

        def digest_of(value: Any) -> str:
            return wire_digest(value[0], value[1], consumed, exact=False)

        yield _Item(f"{where} 'wire' entry {i}", [entry, refs], digests[i], digest_of, _WIRE)


def _record_item(ledger: Mapping[str, Any], where: str) -> _Item:
    fields = recorded_fields(ledger)
    names = list(fields)

    def digest_of(values: Any) -> str:
        return text_digest(canonical_dumps(dict(zip(names, values, strict=True))))

    what = f"{where} record (its tools, system, marks and thinking bindings)"
    return _Item(what, list(fields.values()), ledger["record_digest"], digest_of, _RECORD)


def _digest(digest_of: Callable[[Any], str], value: Any) -> str | None:
    try:
        return digest_of(value)
    except (TypeError, ValueError, RecursionError, LookupError, AttributeError, ContextChefError):
        return None  # not plain JSON, not a message: the checks name it


# -- the search ------------------------------------------------------------------------------


def _explained(item: _Item, search: _Search) -> bool | None:
    """Whether a key order of `item`'s value gives its recorded digest (None: not decided).

    First one order per key set (as a writer writes them), the likely ones (`_CAP` each)
    with the fewest objects off their likeliest first; then, when every order of every
    object fits in `_BUDGET`, all of them (none giving it proves the value changed). The
    orders found are learned (`search`).
    """
    if item.digest_of is _never:
        return False
    objects = item.scope(item.value, [])
    sets: dict[frozenset[str], list[dict[str, Any]]] = {}
    for obj in objects:
        sets.setdefault(frozenset(obj), []).append(obj)
    # a store writes every object it reorders in its order: one in neither is as written
    pinned = [[o] for o in objects if store_order(list(o)) is None]
    fixed = {id(o) for group in pinned for o in group}
    kept = [[o for o in group if id(o) not in fixed] for group in sets.values()]
    found = _try(item, [*pinned, *filter(None, kept)], search, _fewest_off, len(pinned))
    if found is None and pinned:
        found = _try(item, list(sets.values()), search, _fewest_off)
    every = math.prod(math.factorial(len(o)) for o in objects)
    if found is None and every <= min(_BUDGET, search.left):
        found = _try(item, [[o] for o in objects], search, _every)
        if found is None:
            return False  # every order tried: the value changed
    if found is None:
        return None
    for obj in objects:
        order = found[id(obj)]
        search.learned[frozenset(order)] = order
        if order != tuple(obj):
            search.moved.append(list(obj))
    search.first = search.first or item.where
    return True


def _objects(value: Any, out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects of `value` with two keys or more, outer ones first."""
    if isinstance(value, dict):
        if len(value) > 1:
            out.append(value)
        for item in value.values():
            _objects(item, out)
    elif isinstance(value, list):
        for item in value:
            _objects(item, out)
    return out


_CAP = 8
"""Most orders of one key set the first search phase tries."""


def _fewest_off(sizes: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Picks (each below its size and `_CAP`), those with the fewest non-zero first."""
    caps = [min(n, _CAP) for n in sizes]
    free = [v for v, cap in enumerate(caps) if cap > 1]  # each choice below gives a pick
    for off in range(len(free) + 1):
        for chosen in itertools.combinations(free, off):
            for picks in itertools.product(*(range(1, caps[v]) for v in chosen)):
                out = [0] * len(sizes)
                for v, pick in zip(chosen, picks, strict=True):
                    out[v] = pick
                yield tuple(out)


def _every(sizes: Sequence[int]) -> Iterator[tuple[int, ...]]:
    return itertools.product(*map(range, sizes))


def _try(
    item: _Item,
    variables: Sequence[list[dict[str, Any]]],
    search: _Search,
    combos: Callable[[Sequence[int]], Iterator[tuple[int, ...]]],
    pinned: int = 0,
) -> dict[int, _Order] | None:
    """The orders (by object id) that give `item`'s digest, one per variable's objects.

    `combos` gives the candidates (`_Candidates`) to try together, at most `_BUDGET`;
    None: none of those gave it. The first `pinned` variables keep their stored order.
    """
    lists = [_Candidates(group[0], search, v < pinned) for v, group in enumerate(variables)]
    sizes = [1 if v < pinned else math.factorial(len(g[0])) for v, g in enumerate(variables)]
    for picks in itertools.islice(combos(sizes), min(_BUDGET, search.left)):
        search.left -= 1
        orders = {id(obj): lists[v][pick] for v, pick in enumerate(picks) for obj in variables[v]}
        if _digest(item.digest_of, _rebuilt(item.value, orders)) == item.recorded:
            return orders
    return None


class _Candidates:
    """The key orders of one object, likely ones first, made as asked for (all, in the end)."""

    def __init__(self, obj: dict[str, Any], search: _Search, pinned: bool = False) -> None:
        keys = tuple(obj)
        self._made: list[_Order] = []
        self._seen: set[_Order] = set()
        self._more = itertools.chain(
            [keys] if pinned else [search.learned.get(frozenset(keys), ())],
            _guesses(obj),
            [keys],
            itertools.permutations(keys),
        )

    def __getitem__(self, i: int) -> _Order:
        while len(self._made) <= i:
            order = next(self._more)
            if order and order not in self._seen:
                self._seen.add(order)
                self._made.append(order)
        return self._made[i]


def _guesses(obj: dict[str, Any]) -> Iterator[_Order]:
    """How this library and the wire formats write such an object, as far as known."""
    keys = tuple(obj)
    kind = obj.get("kind")
    rank = RANK.get(kind) if isinstance(kind, str) else None
    if rank is not None:
        yield tuple(sorted(keys, key=lambda k: rank.get(k, 99)))
    yield tuple(sorted(keys, key=lambda k: _LEAD.get(k, len(_LEAD))))
    yield tuple(sorted(keys))  # canonical forms (schemas), the keys of a sorted list
    for lead in ("role", "provider", "type"):
        if lead in obj:
            yield (lead, *(k for k in keys if k != lead))


_LEAD = {
    key: i
    for i, key in enumerate(
        [
            "type",
            "role",
            "kind",
            "provider",
            "id",
            "name",
            "description",
            "input_schema",
            "parameters",
            "content",
            "text",
        ]
    )
}
"""Keys writers put first, in this order, as a rule (a tool's name before its description)."""


def _rebuilt(value: Any, orders: Mapping[int, _Order]) -> Any:
    """`value` with each object's keys in its order in `orders` (by id; else as held)."""
    if isinstance(value, dict):
        return {k: _rebuilt(value[k], orders) for k in orders.get(id(value), value)}
    if isinstance(value, list):
        return [_rebuilt(item, orders) for item in value]
    return value
