"""Reading stored JSON text (snapshots, store records): strict, and fast where it can be.

`strict_loads` reads what this library wrote back: plain JSON, with NaN, the infinities
and numbers past a float refused (`contextchef._json.canonical_dumps` never writes them).
With the ``fastjson`` extra it first asks msgspec's decoder, which reads such text in C
about twice as fast as ``json`` (benchmarks/RESULTS.md, "Stored text read by msgspec").
Only a value both readers agree on is taken from it: msgspec reads integers of any
length (orjson reads those past 64 bits as floats, so it is not used here), keeps the
last of repeated keys at the first one's place as ``json`` does, and refuses everything
else ``json`` reads otherwise (NaN, ``1e400``, an escaped lone surrogate, UTF-16 bytes,
a byte-order mark); on any refusal ``json`` reads the text again, so what is refused and
the error raised are ``json``'s. tests/test_json_read.py compares the two readers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

__all__ = [
    "FAST_DECODE",
    "as_repr",
    "each_float",
    "fast_decoder",
    "floats_as_repr",
    "read_floats",
    "strict_loads",
]

FAST_DECODE: list[Any] = []
"""The optional fast decoder (msgspec's, the ``fastjson`` extra), or None; found on first
use. Tests set ``[None]`` to read by ``json`` alone."""

_REFUSALS = (ValueError, TypeError, RecursionError)
"""What the fast decoder raises on what it does not read as ``json`` would: msgspec's
``DecodeError`` / ``ValidationError`` and ``UnicodeEncodeError`` are ``ValueError``s."""


def fast_decoder() -> Callable[[str | bytes | bytearray], Any] | None:
    """The fast decoder: msgspec's (the ``fastjson`` extra), or None without it."""
    if not FAST_DECODE:
        try:
            import msgspec  # the fastjson extra
        except ImportError:
            FAST_DECODE.append(None)
        else:
            FAST_DECODE.append(msgspec.json.Decoder().decode)
    return FAST_DECODE[0]  # type: ignore[no-any-return]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"{text[:40]} is past what a float holds")
    return number


def strict_loads(text: str | bytes | bytearray, floats: list[str] | None = None) -> Any:
    """``json.loads`` of `text` refusing NaN, the infinities and numbers past a float.

    What this library writes never holds them (`canonical_dumps`), so what it reads back
    is plain JSON; ``bytes`` are read as ``json.loads`` reads them (UTF-8, -16 or -32).
    The value is ``json``'s, read by msgspec where the extra is installed (see above).
    `floats`, when given, gets the text of each float read (a number written with a
    fraction or an exponent; empty: the value holds none), at no cost to the read: a
    signature's check then skips its float scans (`contextchef._signing`).

    Raises:
        ValueError: `text` is not such JSON (``json``'s reason; UnicodeDecodeError for
            bytes in no UTF encoding, RecursionError past Python's nesting limit).
    """
    number: Callable[[str], float] = _finite
    if floats is not None:

        def seen(token: str) -> float:
            floats.append(token)
            return _finite(token)

        number = seen

    fast = FAST_DECODE[0] if FAST_DECODE else fast_decoder()
    if fast is not None:
        try:
            if floats is None:
                return fast(text)
            import msgspec  # the fastjson extra

            return msgspec.json.Decoder(float_hook=number).decode(text)
        except _REFUSALS:
            if floats is not None:
                floats.clear()  # json reads it again, or says why not
    return json.loads(text, parse_constant=_no_constant, parse_float=number)


def each_float(data: bytes, number: Callable[[str], Any]) -> Any:
    """`data` decoded, each float given to `number` as its text (what it returns stands).

    Only numbers reach `number`, never text that looks like one. By msgspec's decoder
    where the ``fastjson`` extra is installed (in C), else by ``json``.

    Raises:
        ValueError, TypeError, RecursionError: Not JSON (whatever `number` raises, too).
    """
    if fast_decoder() is not None:
        import msgspec  # the fastjson extra

        return msgspec.json.Decoder(float_hook=number).decode(data)
    return json.loads(data, parse_float=number)


def read_floats(data: bytes) -> tuple[Any, list[str]] | None:
    """(`data` read, the text of each float in it in order); None without msgspec.

    Read by `strict_loads` with msgspec's decoder (in C; only numbers reach the float
    texts, never text that looks like one). None also when `data` is not such JSON.
    Without the extra, reading `data` by ``json`` would cost more than the answer saves.
    """
    if fast_decoder() is None:
        return None
    floats: list[str] = []
    try:
        return strict_loads(data, floats), floats
    except (ValueError, RecursionError):
        return None


def as_repr(floats: list[str]) -> bool:
    """Whether each float text is as ``repr`` (and so ``json``) writes that float."""
    return all(repr(float(t)) == t for t in floats)


def floats_as_repr(data: bytes) -> bool:
    """Whether each float in JSON `data` is written as ``repr`` (and so ``json``) writes it.

    False without msgspec, or when it cannot read `data` (`read_floats`). For
    `contextchef._json.sorted_utf8`, which takes orjson's bytes only where ``json`` would
    write the same: orjson writes a float below 1e-4 otherwise (``1e-7``, ``json``
    ``1e-07``), and a byte search cannot tell a number from text that looks like one.
    """
    read = read_floats(data)
    return read is not None and as_repr(read[1])
