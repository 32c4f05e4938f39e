"""Stored JSON read by msgspec (the fastjson extra) is what ``json`` reads, or ``json`` reads it.

`contextchef._json_read.strict_loads` reads snapshots and store records. With the extra
it asks msgspec's decoder first and takes its value only where msgspec reads the text at
all; on any refusal ``json`` reads it again. These tests run both readers on the same
texts and want the same outcome: the same value (types, key order and float bits
included) or the same error with the same message. The texts are generated (any JSON
value, integers of any length, any float, any Unicode text with lone surrogates, keys
repeated) and written every way a host or a store may write them (``ensure_ascii`` on
and off, indented, sorted, as str, as UTF-8 / UTF-8 with a byte-order mark / UTF-16 /
UTF-32 bytes), plus a list of texts either reader might read otherwise (NaN, ``1e400``,
leading zeros, control characters, long digit strings, deep nesting). A snapshot of a
real session restores to the same session by either reader.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextchef import ContextChef, ToolCall, ToolResult, _json_read, assistant, tool_results, user
from contextchef._errors import UsageError
from contextchef._json_read import strict_loads
from contextchef.history._messages import Message

msgspec = pytest.importorskip("msgspec")  # the extra (in the test extra, so CI has it)


@pytest.fixture(autouse=True)
def _fast_decoder() -> Iterator[None]:
    """The decoder is msgspec's for each test, whatever the suite was run with."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_json_read, "FAST_DECODE", [msgspec.json.Decoder().decode])
        yield


def _same(value: Any) -> Any:
    """`value` with each float as its bits and each object as its items in order."""
    if isinstance(value, float):
        return ("float", math.copysign(1.0, value), value.hex())
    if isinstance(value, dict):
        return ("dict", [(k, _same(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_same(v) for v in value])
    return (type(value).__name__, value)


def _outcome(text: str | bytes, fast: bool) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        if not fast:
            patch.setattr(_json_read, "FAST_DECODE", [None])
        try:
            return _same(strict_loads(text))
        except (ValueError, RecursionError) as exc:
            return (type(exc).__name__, str(exc))


def _floats_in(value: Any) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [f for v in value for f in _floats_in(v)] if isinstance(value, list) else []


def _both(text: str | bytes) -> Any:
    fast, slow = _outcome(text, True), _outcome(text, False)
    assert fast == slow, text[:200]
    for reader in ([msgspec.json.Decoder().decode], [None]):  # the floats seen, by each
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_json_read, "FAST_DECODE", reader)
            floats: list[str] = []
            try:
                value = strict_loads(text, floats)
            except (ValueError, RecursionError) as exc:
                assert (type(exc).__name__, str(exc)) == fast
                continue
        assert _same(value) == fast  # the same value, and each float's own text
        assert [_same(float(t)) for t in floats] == [_same(f) for f in _floats_in(value)]
    return fast


_floats = st.floats(allow_nan=True, allow_infinity=True)
_ints = st.one_of(
    st.integers(), st.integers(min_value=2**60, max_value=2**70), st.integers(max_value=-(2**62))
)
_texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=20)
_values = st.recursive(
    st.none() | st.booleans() | _ints | _floats | _texts,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_texts, inner, max_size=5),
    max_leaves=25,
)


@given(
    value=_values,
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 0, 2, "\t"]),
    sort_keys=st.booleans(),
    encoding=st.sampled_from(["str", "utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32"]),
)
def test_generated_texts_read_alike(
    value: Any, ascii_only: bool, indent: Any, sort_keys: bool, encoding: str
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent, sort_keys=sort_keys)
    if encoding == "str":
        _both(text)
        return
    try:
        data = text.encode(encoding, "surrogatepass")
    except UnicodeEncodeError:
        return
    _both(data)


@given(pairs=st.lists(st.tuples(st.sampled_from("abc"), _ints), min_size=1, max_size=6))
def test_repeated_keys_read_alike(pairs: list[tuple[str, int]]) -> None:
    text = "{" + ",".join(f'"{k}":{v}' for k, v in pairs) + "}"
    assert _both(text)[0] == "dict"


@given(st.text(alphabet="0123456789-+.eE", min_size=1, max_size=40))
def test_number_like_texts_read_alike(text: str) -> None:
    _both(text)
    _both(f'{{"n":{text}}}')


EDGES = [
    "NaN",
    "-Infinity",
    '{"a": Infinity}',
    "1e400",
    "-1e400",
    "1e-400",
    "[1e308, 2.2250738585072014e-308, 5e-324, -0.0, 0.1]",
    "18446744073709551616",
    "-9223372036854775809",
    "9" * 4300,
    "-" + "9" * 4300,
    "9" * 4301,
    "0." + "1" * 600,
    "01",
    "-01",
    "1.",
    ".5",
    "+1",
    '"\\ud800"',
    '"\\udc00\\ud800"',
    '"\\ud83d\\ude00"',
    '"\x01"',
    '"\t"',
    '"\\u0000"',
    '"\\x"',
    '"\\u12"',
    '"\u2028"',
    "\ufeff{}",
    '{"a":1,}',
    "[1,]",
    "[1 2]",
    '{"a" 1}',
    "",
    " ",
    "\x00",
    "1 2",
    "true",
    "True",
    "null",
    "[" * 50_000 + "]" * 50_000,
    '{"a":' * 3_000 + "1" + "}" * 3_000,
]


@pytest.mark.parametrize("text", EDGES, ids=range(len(EDGES)))
def test_edge_texts_read_alike(text: str) -> None:
    _both(text)
    _both(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize(
    "data", [b'"\xff"', b'"\xed\xa0\x80"', b"\xc3", b'{"a":"\xe9"}', b"\xef\xbb\xbf[1]"]
)
def test_bytes_outside_utf8_read_alike(data: bytes) -> None:
    """Not UTF-8, an encoded lone surrogate (``json`` reads it), a UTF-8 byte-order mark."""
    _both(data)


def _session() -> ContextChef:
    chef = ContextChef()
    chef.set_system_prompt("You are a careful agent.")
    history: list[Message] = []
    for r in range(40):
        history.append(user(f"step {r}: 数据 {2**70 + r} \U0001f600"))
        call = ToolCall(id=f"c{r}", name="read_file", arguments={"n": 2**66 + r, "x": r / 7})
        history.append(Message(role="assistant", parts=(call,)))
        history.append(
            tool_results([ToolResult(call_id=call.id, name=call.name, content="y" * 2000)])
        )
        history.append(assistant(f"done {r}"))
    history.append(user("next"))
    chef.set_history(history)
    return chef


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_a_snapshot_restores_alike_by_either_reader(target: str) -> None:
    chef = _session()
    chef.compile(target, model="m", max_tokens=100)
    text = json.dumps(chef.snapshot())
    payloads = []
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            if not fast:
                patch.setattr(_json_read, "FAST_DECODE", [None])
            again = ContextChef()
            again.restore(text, allow_unsigned=True)
            again.append(user("and then?"))
            payloads.append(json.dumps(again.compile(target, model="m", max_tokens=100).payload))
    assert payloads[0] == payloads[1]
    assert str(2**66) in payloads[0]  # an integer, not a float (orjson would read a float)


def test_an_edited_snapshot_is_refused_alike() -> None:
    chef = _session()
    chef.compile("openai", model="m", max_tokens=100)
    text = json.dumps(chef.snapshot()).replace(str(2**66 + 3), str(2**66 + 4), 1)
    errors = []
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            if not fast:
                patch.setattr(_json_read, "FAST_DECODE", [None])
            with pytest.raises(UsageError) as caught:
                ContextChef().restore(text, allow_unsigned=True)
            errors.append(str(caught.value))
    assert errors[0] == errors[1]


def test_a_snapshot_is_read_by_msgspec_alone() -> None:
    """The fast path is taken: a real snapshot's text never reaches ``json.loads``."""
    chef = _session()
    chef.compile("anthropic", model="m", max_tokens=100)
    text = json.dumps(chef.snapshot())

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("json.loads was asked")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_json_read.json, "loads", refuse)
        assert strict_loads(text)["format"] == "contextchef.snapshot"
        ContextChef().restore(text, allow_unsigned=True)
        with pytest.raises(AssertionError):
            strict_loads("NaN")  # msgspec refuses it: json reads it again (and refuses)


def test_text_that_looks_like_a_float_keeps_the_fast_bytes() -> None:
    """`sorted_utf8` (a signature's canonical bytes) reads the numbers to tell text apart."""
    from contextchef._json import sorted_utf8
    from contextchef._json_read import floats_as_repr

    pytest.importorskip("orjson")
    worded = {"t": "ratio 2e-5, step 0.00001 and 1e-7", "n": [1, 2.5, 1e20, -0.0]}
    want = json.dumps(worded, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert sorted_utf8(worded) == want.encode()
    assert sorted_utf8({"n": 1e-7}) is None and sorted_utf8({"n": [0.00001]}) is None
    assert not floats_as_repr(b'{"n":1e-7}') and floats_as_repr(b'{"n":1e-07,"t":"1e-7"}')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_json_read, "FAST_DECODE", [None])
        assert sorted_utf8(worded) is None  # without msgspec: the byte search alone says maybe
