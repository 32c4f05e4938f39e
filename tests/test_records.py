"""`record`: read-only deep copies of JSON values (the session's record of what was sent)."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from contextchef import ReadOnlyPayloadError, UsageError
from contextchef._json import canonical_dumps, freeze
from contextchef._records import (
    MixedDict,
    MixedList,
    RecordDict,
    RecordList,
    copier,
    plain,
    record,
)


def test_a_record_is_a_deep_read_only_copy_that_serializes_the_same() -> None:
    value = {"b": [1, {"c": (2, 3)}], "a": freeze({"x": [None, True, 1.5, "t"]})}
    recorded = record(value)
    assert recorded == {"b": [1, {"c": [2, 3]}], "a": {"x": [None, True, 1.5, "t"]}}
    assert type(recorded) is MixedDict  # it holds a float (`_json.CLOSED`)
    assert type(recorded["b"]) is RecordList and type(recorded["b"][1]["c"]) is RecordList
    assert type(recorded["a"]) is MixedDict and type(recorded["a"]["x"]) is MixedList
    assert isinstance(recorded, RecordDict) and isinstance(recorded["a"]["x"], RecordList)
    assert list(recorded) == ["b", "a"]  # key order kept
    assert json.dumps(recorded) == json.dumps(plain(value))
    assert canonical_dumps(recorded) == canonical_dumps(value)
    value["b"][1]["c"] = "changed"  # the source stays the caller's
    assert recorded["b"][1]["c"] == [2, 3]


def test_recording_a_record_again_copies_nothing() -> None:
    once = record({"a": [{"b": 1}]})
    assert record(once) is once
    again = record({"new": 1, "kept": once})
    assert again["kept"] is once


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda r: r.__setitem__("role", "x"), "cannot __setitem__ 'role' on an object"),
        (lambda r: r["content"].append(1), "cannot append on a list of 2 items"),
        (lambda r: r["content"][0].update(x=1), "cannot update on an object with keys ['text']"),
    ],
)
def test_an_edit_raises_a_clear_error(edit: object, said: str) -> None:
    recorded = record({"role": "user", "content": [{"text": "a"}, {"text": "b"}]})
    with pytest.raises(ReadOnlyPayloadError) as caught:
        edit(recorded)  # type: ignore[operator]
    assert said in str(caught.value)
    assert "mutable_payload()" in str(caught.value)
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, TypeError)
    assert recorded == {"role": "user", "content": [{"text": "a"}, {"text": "b"}]}


def test_copies_of_a_record_are_plain_and_mutable() -> None:
    recorded = record({"a": [{"b": 1}]})
    for copied in (plain(recorded), copy.deepcopy(recorded), pickle.loads(pickle.dumps(recorded))):
        assert copied == recorded
        assert type(copied) is dict and type(copied["a"]) is list and type(copied["a"][0]) is dict
        copied["a"][0]["b"] = 2
    assert recorded == {"a": [{"b": 1}]}
    shallow = copy.copy(recorded)
    assert type(shallow) is dict
    shallow["new"] = 1
    assert "new" not in recorded


class _Text(str):
    __slots__ = ()


@pytest.mark.parametrize(
    "value",
    [
        [
            {
                "name": "a",
                "input_schema": {"type": "object", "properties": {"x": {"minimum": 1e-07}}},
            }
        ],
        [{"enum": [1, -0.0, True, None, "é\U0001f600"]}, []],
        [freeze({"frozen": ["below"]})],  # a dict subclass: `plain` copies it
        [{"text": _Text("a str subclass")}],
    ],
)
def test_a_copier_makes_new_plain_copies_equal_to_plain(value: list[object]) -> None:
    make = copier(value)
    first, second = make(), make()
    assert first == second == plain(value) == value
    assert canonical_dumps(first) == canonical_dumps(value)
    assert first is not second and first[0] is not second[0]
    assert type(first[0]) is dict
    first[0]["edited"] = True  # a caller's edit of one copy never reaches the next
    assert "edited" not in make()[0]
    assert "edited" not in value[0]  # type: ignore[operator]
