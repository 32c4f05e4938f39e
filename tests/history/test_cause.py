"""The key-order search that names why an unsigned snapshot's digest fails (`history._cause`).

`_explained` says True only when a key order of the stored value gives the recorded
digest (a proof the value is the writer's), False only when it tried every order (a proof
it changed), and None otherwise; a restore that succeeds never runs it.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from contextchef import ContextChef, UsageError, user
from contextchef._records import text_digest
from contextchef.history import _cause
from contextchef.history._cause import _explained, _Item, _Search


def digest(value: Any) -> str:
    return text_digest(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def item(stored: Any, written: Any) -> _Item:
    return _Item("value", stored, digest(written), digest, "changed")


def shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


WRITTEN = {
    "role": "assistant",
    "parts": [
        {"kind": "text", "text": "hi", "meta": {"z": 1, "a": 2, "m": 3}},
        {"kind": "tool_call", "id": "c1", "name": "read", "arguments": "{}"},
    ],
}


def test_a_reordered_value_is_explained_and_its_orders_learned() -> None:
    stored = json.loads(json.dumps(WRITTEN, sort_keys=True))
    search = _Search()
    assert _explained(item(stored, WRITTEN), search) is True
    assert search.learned[frozenset({"z", "a", "m"})] == ("z", "a", "m")
    assert search.moved and search.first == "value"


def test_a_changed_value_with_few_orders_is_proven_changed() -> None:
    stored = json.loads(json.dumps(WRITTEN, sort_keys=True))
    stored["parts"][0]["text"] = "ho"
    assert _explained(item(stored, WRITTEN), _Search()) is False


def test_a_changed_value_with_too_many_orders_is_not_decided() -> None:
    rng = random.Random(7)
    written = [{f"k{i}{j}": j for j in range(7)} for i in range(6)]  # 5040 orders each
    stored = shuffled(written, rng)
    stored[0]["k00"] = 99
    assert _explained(item(stored, written), _Search()) is None


def test_a_restore_that_succeeds_never_looks_for_a_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    chef = ContextChef()
    chef.set_history([user("hello")])
    chef.compile("anthropic", model="claude-opus-5-5")
    text = json.dumps(chef.snapshot())

    def refuse(*args: object) -> UsageError:
        raise AssertionError("cause searched on the success path")

    monkeypatch.setattr(_cause, "cause", refuse)
    fresh = ContextChef()
    fresh.restore(text, allow_unsigned=True)
    assert fresh.history == chef.history
    edited = text.replace("hello", "hullo")
    with pytest.raises(AssertionError, match="success path"):  # the error path does
        ContextChef().restore(edited, allow_unsigned=True)
