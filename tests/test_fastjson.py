"""The fastjson extra writes the bytes ``json`` writes, or leaves the value to ``json``.

`contextchef._json.canonical_dumps` / `canonical_texts` hand read-only records (what a
session sends) to orjson when it is installed; everything else, and whatever orjson would
write differently, goes to ``json``. These tests compare both ways byte for byte: on the
payloads of real sessions (catalogs from ../shared/data, every target), and on generated
values (any Unicode text, lone surrogates included, integers past 64 bits, floats such
as 1e16, -0.0, 5e-324 and NaN, deep nesting, other types). ``CONTEXTCHEF_NO_FASTJSON=1``
runs the whole suite without the encoder (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import enum
import json
import math
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import shared_data
from contextchef import ContextChef, ToolCall, ToolResult, _json, assistant, tool_results, user
from contextchef._json import canonical_dumps, canonical_texts, canonical_utf8, is_unicode
from contextchef._records import MixedDict, MixedList, RecordDict, RecordList, record
from contextchef.history._messages import Message, ReasoningPart
from contextchef.providers import TARGETS
from contextchef.tools._catalogs import load_catalog

orjson = pytest.importorskip("orjson")  # the extra (in the test extra, so CI has it)


def _json_dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@pytest.fixture
def without_fast() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_json, "FAST_JSON", [None])
        yield


def _utf8(value: Any) -> Any:
    try:
        return canonical_utf8(value)
    except UnicodeEncodeError:
        return "surrogate"
    except (TypeError, ValueError, RecursionError) as exc:
        return type(exc)


def _both(value: Any) -> None:
    """canonical_dumps / canonical_texts with and without orjson: same text, same error.

    `canonical_utf8` (what restore hashes) gives that text's UTF-8 bytes, or the error.
    """
    outcomes = []
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_json, "FAST_JSON", [orjson.dumps if fast else None])
            try:
                outcomes.append((canonical_dumps(value), canonical_texts([value])[0]))
            except (TypeError, ValueError, RecursionError) as exc:
                outcomes.append((type(exc), type(exc)))
            text = outcomes[-1][0]  # canonical_utf8: its UTF-8 bytes, or the same error
            if isinstance(text, str):
                assert _utf8(value) == (text.encode("utf-8") if is_unicode(text) else "surrogate")
            else:
                assert _utf8(value) == text
    assert outcomes[0] == outcomes[1]
    with contextlib.suppress(TypeError, ValueError, RecursionError):
        assert outcomes[1][0] == _json_dumps(value)


# -- generated values -------------------------------------------------------------------------

TEXT = st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=40)
"""Any code point, lone surrogates (U+D800-U+DFFF) included."""
FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e16, 1e15, -0.0, 0.0, 5e-324, 1e-5, 1e-7, 1e-4, 1.5e300, 1e22, 0.1]),
)
INTS = st.one_of(
    st.integers(),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**400]),
)


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    INTS,
    FLOATS,
    TEXT,
    st.sampled_from([Color.RED, Level.HIGH, uuid.UUID(int=1), b"bytes"]),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(TEXT, st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=30,
)


@given(value=VALUES)
def test_generated_values_are_written_alike(value: Any) -> None:
    _both(value)
    try:
        made = record(value)
    except RecursionError:
        return
    _both(made)
    _both([made, made])


@given(text=TEXT, number=INTS)
def test_text_and_integers_in_records(text: str, number: int) -> None:
    made = record({"t": text, "k": [number, {"n": None, "b": True}], text: number})
    assert type(made) is RecordDict  # pure: orjson writes it where it can
    _both(made)


@given(number=FLOATS)
def test_a_float_makes_the_record_mixed_and_json_writes_it(number: float) -> None:
    made = record({"content": [{"x": number}]})
    assert type(made) is MixedDict and type(made["content"]) is MixedList
    _both(made)
    if not math.isfinite(number):
        with pytest.raises(ValueError):
            canonical_dumps(made)


def test_values_orjson_writes_and_json_refuses_are_refused() -> None:
    for leaf in (Color.RED, uuid.UUID(int=1)):
        made = record({"v": [leaf]})
        assert type(made) is MixedDict
        with pytest.raises(TypeError):
            canonical_dumps(made)
    deep: Any = "x"
    for _ in range(300):  # past orjson's 255 levels: json writes it
        deep = [deep]
    made = record(deep)
    assert canonical_dumps(made) == _json_dumps(deep)
    assert type(record({"n": 2**70})) is RecordDict
    assert canonical_dumps(record({"n": 2**70})) == '{"n":1180591620717411303424}'
    assert canonical_dumps(record({"s": "\ud800"})) == '{"s":"\ud800"}'


def test_the_fast_encoder_is_used_for_records() -> None:
    made = record({"a": ["é", 1, None]})
    calls: list[Any] = []

    def counting(value: Any) -> bytes:
        calls.append(value)
        return orjson.dumps(value)  # type: ignore[no-any-return]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_json, "FAST_JSON", [counting])
        assert canonical_dumps(made) == '{"a":["é",1,null]}'
        assert canonical_texts([made, {"plain": 1}]) == ['{"a":["é",1,null]}', '{"plain":1}']
        assert canonical_dumps({"plain": [made]}) == '{"plain":[{"a":["é",1,null]}]}'
    assert calls == [made, made]  # plain dicts go to json
    assert isinstance(RecordList([]), RecordList)


# -- real payloads ------------------------------------------------------------------------------


def _session(target: str) -> tuple[ContextChef, Any]:
    chef = ContextChef(defer=["github__*"])
    for name in ("mcp-filesystem", "github"):
        chef.register_tools(load_catalog(shared_data() / "catalogs" / f"{name}.json").tools)
    chef.set_system_prompt("You are a careful coding agent.")
    text = (shared_data() / "catalogs" / "github.json").read_text("utf-8")
    history: list[Message] = []
    for r in range(6):
        history.append(user(f"step {r}: look at src/{r}.py — «fix» it 🙂"))
        thinking = ReasoningPart(
            provider="anthropic",
            text="think",
            provider_data={
                "provider": "anthropic",
                "block": {"type": "thinking", "thinking": "think", "signature": f"s{r}"},
            },
        )
        call = ToolCall(id=f"c{r}", name="filesystem__read_file", arguments={"path": f"{r}.py"})
        parts = (thinking, call) if target == "anthropic" else (call,)
        history.append(Message(role="assistant", parts=parts))
        result = ToolResult(
            call_id=call.id, name=call.name, content=text[r * 4000 : r * 4000 + 4000]
        )
        history.append(tool_results([result]))
        history.append(assistant(f"fixed step {r} ({r / 3:.3f})"))
    history.append(user("next"))
    chef.set_history(history)
    return chef, chef.compile(target, model="m", max_tokens=100)


@pytest.mark.parametrize("target", TARGETS)
def test_real_payloads_are_written_alike(target: str) -> None:
    chef, request = _session(target)
    payload = request.payload
    entries = payload.get("messages") or payload.get("input") or payload.get("contents")
    assert any(type(e) is RecordDict for e in entries)  # the fast encoder has work here
    _both(entries)
    for entry in entries:
        _both(entry)
    fast = canonical_texts(entries)
    snapshot = json.dumps(chef.snapshot(), sort_keys=True)  # digests of the wire entries
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_json, "FAST_JSON", [None])
        assert canonical_texts(entries) == fast
        again, _ = _session(target)
        assert json.dumps(again.snapshot(), sort_keys=True) == snapshot
    assert fast == [_json_dumps(e) for e in entries]


def test_without_the_encoder_nothing_changes(without_fast: None) -> None:
    _, request = _session("anthropic")
    entries = request.payload["messages"]
    assert canonical_texts(entries) == [_json_dumps(e) for e in entries]
