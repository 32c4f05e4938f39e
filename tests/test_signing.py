"""A signed snapshot's ``signature`` field, each of its fields broken in type and in value:
`restore` refuses it with the cause that is true (`SnapshotSignatureError.problem`) and a
message naming the field, the value and what would be valid, and changes nothing."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from contextchef import ContextChef, SnapshotKeys, SnapshotSignatureError, user

KEYS = SnapshotKeys({"k1": b"a" * 32, "k2": b"b" * 32}, current="k1")
ABSENT = object()


def _signed() -> dict[str, Any]:
    chef = ContextChef()
    chef.set_history([user("hi")])
    return chef.snapshot(keys=KEYS, session_id="conv-42")


# (field, value put there or ABSENT to remove it, problem, text the message must hold)
CASES: list[tuple[str, object, str, str]] = [
    ("signature", ABSENT, "missing", "carries no signature"),
    ("signature", None, "missing", "carries no signature"),
    ("signature", "HMAC", "malformed", "'HMAC' (a str), not an object"),
    ("signature", ["k1"], "malformed", "(a list), not an object"),
    ("signature", 7, "malformed", "7 (a int), not an object"),
    ("algorithm", ABSENT, "malformed", "no 'algorithm'"),
    ("algorithm", 256, "malformed", "'algorithm' is 256, not a string"),
    ("algorithm", None, "malformed", "'algorithm' is None, not a string"),
    ("algorithm", "HMAC-SHA512", "unsupported_algorithm", "'HMAC-SHA512'"),
    ("algorithm", "hmac-sha256", "unsupported_algorithm", "checks HMAC-SHA256 only"),
    ("key_id", ABSENT, "malformed", "no 'key_id'"),
    ("key_id", 1, "malformed", "'key_id' is 1, not a non-empty string"),
    ("key_id", "", "malformed", "'key_id' is '', not a non-empty string"),
    ("key_id", None, "malformed", "'key_id' is None"),
    ("key_id", "k9", "unknown_key", "key id 'k9', not one of the keys given ['k1', 'k2']"),
    ("key_id", "k2", "mismatch", "does not match its content"),
    ("mac", ABSENT, "malformed", "no 'mac'"),
    ("mac", None, "malformed", "'mac' is None (a NoneType), not 64 lowercase hex digits"),
    ("mac", 12, "malformed", "'mac' is 12 (a int), not 64 lowercase hex digits"),
    ("mac", math.nan, "malformed", "'mac' is nan (a float)"),
    ("mac", ["ab"], "malformed", "(a list), not 64 lowercase hex digits"),
    ("mac", "zz", "malformed", "'mac' is 'zz' (a str), not 64 lowercase hex digits"),
    ("mac", "0" * 64, "mismatch", "does not match its content"),
    ("session_id", ABSENT, "mismatch", "does not match its content"),
    ("session_id", 42, "malformed", "'session_id' is 42, not a non-empty string"),
    ("session_id", "", "malformed", "'session_id' is '', not a non-empty string"),
    ("session_id", None, "malformed", "'session_id' is None"),
    ("session_id", "conv-43", "mismatch", "does not match its content"),
    ("note", "mine", "malformed", "it holds 'note'; a signature holds only"),
]


def _broken(snap: dict[str, Any], field: str, value: object) -> dict[str, Any]:
    out = copy.deepcopy(snap)
    holder = out if field == "signature" else out["signature"]
    if value is ABSENT:
        del holder[field]
    else:
        holder[field] = value
    return out


@pytest.mark.parametrize(("field", "value", "problem", "text"), CASES)
def test_each_signature_field_broken_names_its_own_cause(
    field: str, value: object, problem: str, text: str
) -> None:
    snap = _signed()
    chef = ContextChef()
    chef.set_history([user("mine")])
    before = chef.snapshot()
    with pytest.raises(SnapshotSignatureError) as info:
        chef.restore(_broken(snap, field, value), keys=KEYS, session_id="conv-42")
    assert info.value.problem == problem, str(info.value)
    assert text in str(info.value)
    assert chef.snapshot() == before
    if problem not in ("missing", "malformed") or field not in ("key_id", "signature"):
        assert info.value.key_id == (value if field == "key_id" else "k1")


def test_the_mac_upper_cased_is_malformed_and_the_true_one_restores() -> None:
    snap = _signed()
    upper = _broken(snap, "mac", snap["signature"]["mac"].upper())
    with pytest.raises(SnapshotSignatureError) as info:
        ContextChef().restore(upper, keys=KEYS, session_id="conv-42")
    assert info.value.problem == "malformed"
    chef = ContextChef()
    assert chef.restore(copy.deepcopy(snap), keys=KEYS, session_id="conv-42") == ()
    assert [m.text for m in chef.history] == ["hi"]
