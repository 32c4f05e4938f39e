"""Edits to a returned payload never reach the session's record of what was sent.

Regression (breakit1 s26): on OpenAI Chat, Responses and Gemini the payload's message
dicts were the ledger's own record, so a key the caller added to a sent message was sent
again in every later request; on Anthropic only the last message was a copy (its cache
breakpoint), so earlier messages leaked the same way.
"""

from __future__ import annotations

import pytest

from contextchef import ContextChef, assistant, user
from contextchef._json import canonical_dumps

KEY = {"anthropic": "messages", "openai": "messages", "responses": "input", "gemini": "contents"}


def _session() -> ContextChef:
    chef = ContextChef()
    chef.set_history([user("hello"), assistant("hi"), user("look it up")])
    return chef


def _edit_everything(payload: dict[str, object], key: str) -> None:
    entries = payload[key]
    assert isinstance(entries, list)
    for entry in entries:
        assert isinstance(entry, dict)
        entry["EXTRA"] = "INJECTED2"
        for value in entry.values():
            if isinstance(value, list):
                for part in value:
                    if isinstance(part, dict):
                        part["EXTRA"] = "INJECTED3"
                value.append({"type": "text", "text": "INJECTED4"})
    entries.append({"role": "user", "content": "INJECTED"})


# Known gap, kept visible: payload messages alias the session's record of what was sent
# (documented read-only). Copying them on every compile fixed this but made a steady
# compile cost 0.9-1.4x json.dumps of the payload instead of 0.02-0.1x (target <= 0.2x,
# benchmarks/compile_steady.py), so that copy was withdrawn until a cheaper guard exists.
_ALIASED = pytest.mark.xfail(strict=True, reason="payload messages alias the sent record")


@_ALIASED
@pytest.mark.parametrize("target", sorted(KEY))
def test_editing_a_returned_payload_does_not_change_later_requests(target: str) -> None:
    edited, clean = _session(), _session()
    first = edited.compile(target, model="m")
    untouched = clean.compile(target, model="m").to_json()
    _edit_everything(first.payload, KEY[target])
    assert "INJECTED" in canonical_dumps(first.payload)  # the caller's copy is the caller's
    for chef in (edited, clean):
        chef.append(assistant("found it"))
        chef.append(user("thanks"))
    later = edited.compile(target, model="m").to_json()
    assert "INJECTED" not in later
    assert later == clean.compile(target, model="m").to_json()
    assert edited.compile(target, model="m").to_json() == later  # and again
    assert untouched != later
