"""Canonical JSON for everything that reaches a payload's prefix.

Two rules make serialized payloads byte-stable:

* ``canonical_schema`` fixes the key order of a JSON Schema: object keys are sorted,
  except the entries of ``properties``, whose order is the author's and is kept (models
  tend to generate arguments in that order). Keywords known to hold subschemas are
  walked as schemas; everything else (``enum``, ``default``, ``examples``...) is walked
  as plain data with sorted keys.
* ``canonical_dumps`` serializes with UTF-8 text (``ensure_ascii=False``), compact
  separators and no NaN/Infinity, and never reorders keys, so the order that adapters
  build is the order on the wire.
"""

from __future__ import annotations

import json
import json.encoder
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from contextchef._cache import LruMap
from contextchef._json_read import floats_as_repr

if TYPE_CHECKING:
    from pathlib import Path  # not at import: `import contextchef` loads no pathlib

__all__ = [
    "CLOSED",
    "DOUBLE_MAX",
    "FAST_JSON",
    "MAX_ARGUMENT_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT_BITS",
    "FrozenDict",
    "FrozenList",
    "JsonValue",
    "canonical_dumps",
    "canonical_object_text",
    "canonical_schema",
    "canonical_texts",
    "canonical_utf8",
    "canonical_value",
    "fast_encoder",
    "fast_utf8",
    "freeze",
    "is_unicode",
    "json_problem",
    "plain_copy",
    "plain_object",
    "read_text_file",
    "sdk_object_hint",
    "shared_text",
    "sorted_utf8",
    "thaw",
    "to_unicode",
]

JsonValue = Any
"""A value made of dict/list/str/int/float/bool/None (JSON's data model)."""

MAX_INT_BITS = 14_000
"""Longest integer written as JSON (about 4,200 digits: Python refuses to print longer)."""

DOUBLE_MAX = sys.float_info.max
"""Largest magnitude of a number `json_problem` accepts, integers included (about 1.8e308:
``1e400`` reads as Infinity, and a provider that parses numbers as doubles refuses it)."""

_HUGE_INT = "hold an integer too large to represent (past a double's range, about 1.8e308)"

# Keywords whose value is a single subschema.
_SUBSCHEMA_KEYS = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
# Keywords whose value is a list of subschemas.
_SUBSCHEMA_LIST_KEYS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
# Keywords whose value maps names to subschemas and whose names have no meaningful order.
_SUBSCHEMA_MAP_KEYS = frozenset({"$defs", "definitions", "dependentSchemas", "patternProperties"})


def canonical_value(value: JsonValue) -> JsonValue:
    """Return a copy of a JSON value with every object's keys sorted."""
    if isinstance(value, Mapping):
        return {str(k): canonical_value(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [canonical_value(v) for v in value]
    return value


def canonical_schema(schema: JsonValue) -> JsonValue:
    """Return a copy of a JSON Schema with a fixed key order.

    Keys are sorted at every level except inside ``properties``, which keeps the
    author's order. The input is not modified.
    """
    if not isinstance(schema, Mapping):
        # Boolean schemas, or junk that validation reports elsewhere.
        return canonical_value(schema)
    out: dict[str, JsonValue] = {}
    for key in sorted(schema, key=str):
        value = schema[key]
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {str(name): canonical_schema(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_MAP_KEYS and isinstance(value, Mapping):
            out[key] = {str(n): canonical_schema(value[n]) for n in sorted(value, key=str)}
        elif key in _SUBSCHEMA_KEYS:
            if isinstance(value, (list, tuple)):  # draft-07 tuple form of "items"
                out[key] = [canonical_schema(v) for v in value]
            else:
                out[key] = canonical_schema(value)
        elif key in _SUBSCHEMA_LIST_KEYS and isinstance(value, (list, tuple)):
            out[key] = [canonical_schema(v) for v in value]
        else:
            out[key] = canonical_value(value)
    return out


def canonical_dumps(value: JsonValue) -> str:
    """Serialize a JSON value compactly and deterministically.

    Keys are written in the order the value holds them (build payloads in a fixed order,
    or pass them through `canonical_value` first).

    Raises:
        ValueError: If the value holds NaN or an infinity (not valid JSON).
    """
    fast = _fast_text(value)
    if fast is not None:
        return fast
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


CLOSED: set[type] = set()
"""Container types whose every value holds only these types, ``str``, ``int``, ``bool``
and None (exact types): no float, no subclass, nothing else. `contextchef._records` adds
the read-only records that `record` makes so, and only those."""

FAST_JSON: list[Any] = []
"""The optional fast encoder (``orjson.dumps``, the ``fastjson`` extra), or None; found on
first use. Tests set ``[None]`` to run without it."""


def _fast_encoder() -> Any:
    if not FAST_JSON:
        try:
            import orjson  # the fastjson extra
        except ImportError:
            FAST_JSON.append(None)
        else:
            FAST_JSON.append(orjson.dumps)
    return FAST_JSON[0]


def fast_encoder() -> Callable[[Any], bytes] | None:
    """The fast encoder (``orjson.dumps``, the ``fastjson`` extra), or None without it.

    Its bytes equal `canonical_utf8`'s only where `fast_utf8` says so (no floats).
    """
    return FAST_JSON[0] if FAST_JSON else _fast_encoder()  # type: ignore[no-any-return]


def _fast_text(value: object) -> str | None:
    r"""`canonical_dumps` of `value` by the fast encoder, where the bytes are the same.

    Only for a value of a `CLOSED` type, or a list or tuple of them: exact ``dict`` /
    ``list`` storage (no ``items`` override), text, integers, booleans and null, and
    nothing else. On those, orjson writes what ``json.dumps(ensure_ascii=False,
    separators=(",", ":"))`` writes: keys in order, the same escapes (``\"``, ``\\``,
    ``\b\f\n\r\t``, ``\u00XX`` in lower case for other controls; everything else
    as UTF-8), integers in decimal; it refuses what it would write otherwise (an integer
    past 64 bits, a lone surrogate, nesting past 255 levels), and then None sends the
    value to ``json``. Floats never qualify (orjson writes ``1e-7`` where ``json``
    writes ``1e-07``, and NaN as ``null``), nor do other types (orjson writes an enum or
    a UUID, ``json`` refuses them). tests/test_fastjson.py compares the two.
    """
    kind = type(value)
    if kind not in CLOSED and not (
        (kind is list or kind is tuple) and all(type(v) in CLOSED for v in value)  # type: ignore[attr-defined]
    ):
        return None
    dumps = FAST_JSON[0] if FAST_JSON else _fast_encoder()
    if dumps is None:
        return None
    try:
        return dumps(value).decode("utf-8")  # type: ignore[no-any-return]
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        return None


def _not_json(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_ENCODE = (
    json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None, _not_json, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
    if getattr(json.encoder, "c_make_encoder", None) is not None
    else None
)
"""One C encoder of `canonical_dumps` form, made once (no per-call encoder set-up)."""


def canonical_texts(values: Iterable[JsonValue]) -> list[str]:
    """`canonical_dumps` of each value, the same text, at the cost of one ``json.dumps``.

    For many small values (a ledger's wire entries) ``json.dumps`` spends more on making
    its encoder each call than on the text. A reference cycle raises `RecursionError`.

    Raises:
        ValueError: NaN or an infinity.
        TypeError: A value JSON cannot hold.
    """
    if _ENCODE is None:  # pragma: no cover - CPython has the C encoder
        return [canonical_dumps(v) for v in values]
    fast = _fast_text if (FAST_JSON[0] if FAST_JSON else _fast_encoder()) is not None else None
    out = []
    for v in values:
        text = fast(v) if fast is not None and type(v) in CLOSED else None
        out.append("".join(_ENCODE(v, 0)) if text is None else text)
    return out


def canonical_utf8(value: JsonValue) -> bytes:
    """`canonical_dumps` of `value` as UTF-8: the bytes a request sends, for hashing.

    Made by the fast encoder where `canonical_texts` would use it (no text made, then
    encoded), else by the C encoder.

    Raises:
        UnicodeEncodeError: Text holding a lone surrogate.
        ValueError: NaN or an infinity. TypeError: A value JSON cannot hold.
        RecursionError: A reference cycle.
    """
    dumps = FAST_JSON[0] if FAST_JSON else _fast_encoder()
    if dumps is not None and type(value) in CLOSED:
        try:
            return dumps(value)  # type: ignore[no-any-return]
        except (TypeError, ValueError):  # a surrogate or a long integer: json says which
            pass
    return canonical_texts([value])[0].encode("utf-8")


def fast_utf8(value: object) -> bytes | None:
    """The fast encoder's bytes of any value, or None (no fast encoder, or it refused).

    Equal to `canonical_utf8` on everything `_fast_text` takes; on other values (floats
    above all: ``1e-7`` against ``1e-07``, NaN as ``null``) they may differ. So only for
    comparing with a digest of canonical bytes, where a match proves the bytes equal and a
    mismatch must be checked again on `canonical_utf8` before anything is refused.
    """
    dumps = FAST_JSON[0] if FAST_JSON else _fast_encoder()
    if dumps is None:
        return None
    try:
        return dumps(value)  # type: ignore[no-any-return]
    except (TypeError, ValueError):  # a long integer, a lone surrogate, deep nesting
        return None


def _other_floats(data: bytes) -> bool:
    """Whether orjson's `data` may write a float otherwise than ``json`` (``repr``) does.

    orjson writes a float as ``repr`` does (the shortest text that reads back, the same
    switch to an exponent at 1e16), except below 1e-4: ``0.00001`` and ``1e-7`` where
    ``repr`` writes ``1e-05`` and ``1e-07`` (tests/session/test_sync_fast_signature.py
    compares them). So any ``0.0000`` or an exponent after a digit
    says maybe; the same bytes inside a string only cost the slow path.
    """
    if b"0.0000" in data:
        return True
    for mark in (b"e-", b"e+"):
        at = data.find(mark, 1)
        while at > 0:
            if 48 <= data[at - 1] <= 57:  # a digit before: an exponent
                return True
            at = data.find(mark, at + 2)
    return False


def sorted_utf8(value: object, *, floats: bool = True) -> bytes | None:
    """Sorted-key canonical JSON of `value` as UTF-8 by the fast encoder, or None.

    The bytes of ``json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",",
    ":"))`` as UTF-8 (a signature's canonical form), or None: no fast encoder, or the
    bytes might differ. The caller vouches that `value` holds no NaN or infinity (orjson
    writes ``null`` for them where ``json`` refuses them). Made by orjson with sorted keys
    (UTF-8 byte order is code point order, which ``sort_keys`` uses) and no subclass
    taken (an ``items`` override, an enum: ``json`` may write them otherwise); None when
    orjson refuses the value (a lone surrogate, an integer past 64 bits, a key that is
    not text, deep nesting) or may have written a float otherwise (`_other_floats`: bytes
    that look like such a float, and `floats_as_repr`, with msgspec, finds one among the
    numbers, not in text). ``floats=False``: the caller knows `value` holds no float (its
    reader saw none: `contextchef._json_read.strict_loads`), so no bytes are searched.
    tests/session/test_sync_fast_signature.py compares the two.
    """
    dumps = FAST_JSON[0] if FAST_JSON else _fast_encoder()
    if dumps is None:
        return None
    import orjson  # the fast encoder is orjson's

    try:
        data: bytes = dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS)
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        return None
    return None if floats and _other_floats(data) and not floats_as_repr(data) else data


def is_unicode(text: str) -> bool:
    """False when `text` holds a lone surrogate (``json.loads`` gives one for an escape).

    Such text cannot be encoded as UTF-8, so a payload holding it fails when it is sent.
    """
    if text.isascii():  # a flag on the string object: no scan, no copy
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def to_unicode(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, so it can be sent as UTF-8."""
    if is_unicode(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


FROZEN_ERROR: list[type[Exception]] = [TypeError]
"""What an edit of a frozen value raises: `contextchef._errors` puts its `FrozenToolError`
here when it is imported (it imports this module, so this one cannot import it)."""


def _read_only(self: object, *args: object, **kwargs: object) -> None:
    raise FROZEN_ERROR[0](
        "this value is read-only (tool definitions and the arguments hooks see are "
        "frozen): copy it first (copy.deepcopy gives plain, mutable dicts and lists); to "
        "change a tool, build a new one with Tool.replace()"
    )


class FrozenDict(dict):  # type: ignore[type-arg]
    """A read-only dict: equal to, and serialized like, a plain dict.

    Tool schemas are stored frozen so a caller cannot change a registered tool (and the
    cached prefix) by mutating ``tool.input_schema``; ``copy.deepcopy`` thaws.
    """

    __slots__ = ()
    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]
    __ior__ = _read_only  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, object]) -> dict[str, JsonValue]:
        return thaw(self)  # type: ignore[no-any-return]

    def __copy__(self) -> dict[str, JsonValue]:
        return dict(self)

    def __reduce__(self) -> tuple[object, ...]:
        return (dict, (dict(self),))


class FrozenList(list):  # type: ignore[type-arg]
    """A read-only list: equal to, and serialized like, a plain list."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only  # type: ignore[assignment]
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __deepcopy__(self, memo: dict[int, object]) -> list[JsonValue]:
        return thaw(self)  # type: ignore[no-any-return]

    def __copy__(self) -> list[JsonValue]:
        return list(self)

    def __reduce__(self) -> tuple[object, ...]:
        return (list, (list(self),))


def freeze(value: JsonValue) -> JsonValue:
    """A read-only deep copy of a JSON value (`FrozenDict` / `FrozenList`)."""
    if isinstance(value, Mapping):
        return FrozenDict((k, freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return FrozenList(freeze(v) for v in value)
    return value


def thaw(value: JsonValue) -> JsonValue:
    """A plain, mutable deep copy of a JSON value."""
    kind = type(value)
    if kind in _SCALARS:  # most values: checked before the ABCs below
        return value
    if kind is dict:
        return {k: v if type(v) in _SCALARS else thaw(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _SCALARS else thaw(v) for v in value]
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def plain_copy(value: JsonValue) -> JsonValue:
    """A deep copy of a value made only of plain ``dict`` / ``list`` and leaves (as parsed).

    `thaw` for values known to hold no other container type (e.g. a `plain_object` copy):
    it tests exact types instead of ABCs. Other containers are shared, not copied.
    """
    kind = type(value)
    if kind is dict:
        return {k: plain_copy(v) if type(v) in _CONTAINERS else v for k, v in value.items()}
    if kind is list:
        return [plain_copy(v) if type(v) in _CONTAINERS else v for v in value]
    return value


_CONTAINERS = frozenset({dict, list})
_SCALARS = frozenset({str, int, float, bool, type(None)})


_texts: LruMap[str, str] = LruMap(64)


def shared_text(text: str) -> str:
    """One object for equal long texts across sessions (bounded LRU of 64; issue 14).

    Sessions over the same catalog render the same tools array; each ledger keeps its
    text for prefix checks, so equal texts share one string instead of a copy each.
    """
    if len(text) < 1024:
        return text
    return _texts.setdefault(text, text)


MAX_ARGUMENT_DEPTH = 100
"""Deepest nesting of objects and arrays accepted in tool-call arguments."""


class _NotPlain(Exception):
    """`plain_object` met a value parsing JSON text could not give back as it is."""


def _plain(value: object, depth: int) -> JsonValue:
    kind = type(value)
    if depth > MAX_ARGUMENT_DEPTH:
        raise _NotPlain
    if kind is str:
        if is_unicode(value):  # type: ignore[arg-type]
            return value
    elif value is None or kind is bool:
        return value
    elif kind is int:
        if value.bit_length() <= MAX_INT_BITS:  # type: ignore[attr-defined]
            return value
    elif kind is float:
        if math.isfinite(value):  # type: ignore[arg-type]
            return value
    elif kind is dict:
        return _plain_dict(value, depth)  # type: ignore[arg-type]
    elif kind is list or kind is tuple:
        return [_plain(v, depth + 1) for v in value]  # type: ignore[attr-defined]
    raise _NotPlain


def _plain_dict(value: dict[Any, Any], depth: int) -> dict[str, JsonValue]:
    for key in value:
        if type(key) is not str or not is_unicode(key):
            raise _NotPlain
    return {key: _plain(value[key], depth + 1) for key in sorted(value)}


def plain_object(value: object) -> dict[str, JsonValue] | None:
    """A copy of the dict `value` equal to parsing its canonical JSON text, or None.

    "Equal" in every respect the argument parser (`contextchef.history._messages.
    parse_json_object`) can tell: only the exact types ``json.loads`` returns (``dict``
    with ``str`` keys, ``list``, ``str``, ``int``, ``float``, ``bool``, None; a tuple
    becomes a list as in the text), keys sorted as `canonical_value` sorts them, and
    nothing `json_problem` refuses. Anything else (a subclass such as a numpy float or
    an ``IntEnum``, another mapping type, NaN, a lone surrogate, nesting deeper than
    `MAX_ARGUMENT_DEPTH`) gives None, and the caller parses the text instead. The copy
    shares no container with `value`.
    """
    if type(value) is not dict:
        return None
    try:
        return _plain_dict(value, 0)
    except (_NotPlain, RecursionError):
        return None


def canonical_object_text(value: object) -> tuple[str, dict[str, JsonValue] | None]:
    """``canonical_texts([canonical_value(value)])[0]``, and `plain_object` of `value`.

    Raises:
        ValueError: NaN or an infinity.
        TypeError: A value JSON cannot hold.
        RecursionError: A reference cycle.
    """
    plain = plain_object(value)
    return canonical_texts([canonical_value(value) if plain is None else plain])[0], plain


def json_problem(value: object, *, max_depth: int = MAX_ARGUMENT_DEPTH, depth: int = 0) -> str:
    """Why `value` cannot be sent to a provider as JSON, or ``""`` when it can.

    The one check at the JSON boundary, for tool-call arguments (`parse_json_object`) and
    for parsed provider histories alike: non-finite numbers, integers past a double's range
    (`DOUBLE_MAX`), text that is not valid Unicode (lone surrogates), keys that are not
    such text, values of other types, and nesting deeper than `max_depth`. Lists and
    tuples are arrays.

    An integer is refused where ``1e400`` is, past what a double holds: a provider whose
    arguments are doubles cannot parse it (Gemini's and Interactions' ``args`` are a
    protobuf ``Struct``, whose numbers are doubles in the protobuf JSON mapping), and a
    call holding one, once stored, would be replayed to it. Integers past ``2**53`` are
    kept: the handlers and the JSON Schema check read them exactly, and a double-based
    provider rounds such a number when the answered call is replayed (its value was
    already used) rather than refusing the request.

    Returns:
        A lower-case fragment to follow "the arguments" or "the message", e.g. ``"hold
        NaN, Infinity or a number too large to represent"``.
    """
    if depth > max_depth:
        return f"are nested more than {max_depth} levels deep"
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, float):
        return (
            "" if math.isfinite(value) else "hold NaN, Infinity or a number too large to represent"
        )
    if isinstance(value, int):
        return "" if -DOUBLE_MAX <= value <= DOUBLE_MAX else _HUGE_INT
    if isinstance(value, str):
        return "" if is_unicode(value) else "hold text that is not valid Unicode (a lone surrogate)"
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                return f"hold a key that is not text ({type(key).__name__}; JSON keys are strings)"
            if not is_unicode(key):
                return "hold a key that is not valid Unicode text (a lone surrogate)"
        children: Iterable[object] = value.values()
    elif isinstance(value, (list, tuple)):
        children = value
    else:
        return f"hold a {type(value).__name__}, which is not JSON data"
    for child in children:
        problem = json_problem(child, max_depth=max_depth, depth=depth + 1)
        if problem:
            return problem
    return ""


MAX_FILE_BYTES = 256 * 2**20
"""Largest JSON file (bytes) the library reads: a catalog or recording past it is refused
rather than read until memory runs out (a path to ``/dev/zero``, a wrong file)."""


def read_text_file(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the file at `path`, at most `limit` bytes.

    Raises:
        OSError: The file cannot be read.
        ValueError: It is larger than `limit` bytes, or not UTF-8.
    """
    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size > limit:  # a regular file says its size
            raise ValueError(f"the file is larger than {limit:,} bytes")
        data = file.read(limit + 1)  # a device or a pipe does not
    if len(data) > limit:
        raise ValueError(f"the file is larger than {limit:,} bytes")
    return data.decode("utf-8")


def sdk_object_hint(value: object) -> str:
    """How to pass `value` when it holds an SDK's (pydantic) object, e.g. ``ToolConfig``.

    "" when none is found: bounded, and never raises (the value may be any host object).
    """
    stack, seen = [value], 0
    try:
        while stack and seen < 10_000:
            item, seen = stack.pop(), seen + 1
            if callable(getattr(type(item), "model_dump", None)):  # the class's: no hook runs
                kind = type(item).__name__
                return (
                    f" (a {kind} object: pass its JSON form, "
                    f"{kind}(...).model_dump(mode='json', exclude_none=True))"
                )
            if isinstance(item, Mapping):
                stack.extend(item.values())
            elif isinstance(item, (list, tuple)):
                stack.extend(item)
    except Exception:  # a hostile object's hooks: no hint, the refusal stands
        return ""
    return ""
