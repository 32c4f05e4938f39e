"""`FakeResponses` answers a malformed tool search item with a 400, as the API would.

Break-it round 33 (finding 6): a ``tool_search_output`` with ``"tools": true`` made the fake's
transport raise a bare ``TypeError`` through the openai SDK call (no `Violation`), and a
namespace member whose ``name`` was a list got "the request body cannot be read
(TypeError...)". A fake must answer hand-made payloads the way the API does: a 400 naming
the field, recorded as a `Violation` (rule ``responses_search_items_valid``, or
``responses_additional_tools_valid`` for an ``additional_tools`` item), never a crash.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import openai
import pytest

from contextchef.testing import RESPONSES_RULES, FakeResponses, text
from sdk_send import send

FN = {"type": "function", "name": "get_rate", "parameters": {"type": "object", "properties": {}}}
OUTPUT = {
    "type": "tool_search_output",
    "id": "tso_1",
    "call_id": None,
    "execution": "server",
    "status": "completed",
    "tools": [{"type": "namespace", "name": "fx", "description": "FX.", "tools": [FN]}],
}
CALL = {
    "type": "tool_search_call",
    "id": "tsc_1",
    "call_id": None,
    "execution": "server",
    "status": "completed",
    "arguments": {"paths": ["fx"]},
}

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("tools-true", {**OUTPUT, "tools": True}, "'input.2.tools': expected an array, but got bool"),
    (
        "member-name-list",
        {**OUTPUT, "tools": [{**OUTPUT["tools"][0], "tools": [{**FN, "name": []}]}]},
        "'input.2.tools.0.tools.0.name': expected a non-empty string, but got list",
    ),
    (
        "namespace-name-object",
        {**OUTPUT, "tools": [{**OUTPUT["tools"][0], "name": {"a": 1}}]},
        "'input.2.tools.0.name'",
    ),
    ("tools-not-definitions", {**OUTPUT, "tools": ["fx"]}, "'input.2.tools.0'"),
    ("call_id-object", {**OUTPUT, "call_id": {"a": 1}}, "'input.2.call_id': expected a string"),
    ("status-bogus", {**OUTPUT, "status": "done"}, "'input.2.status'"),
    ("execution-list", {**OUTPUT, "execution": ["server"]}, "'input.2.execution'"),
]


def body(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "gpt-5.5",
        "input": [
            {"role": "user", "content": "rate?"},
            copy.deepcopy(CALL),
            copy.deepcopy(item),
            {"role": "user", "content": "go on"},
        ],
    }


@pytest.mark.parametrize(("label", "item", "named"), CASES, ids=[c[0] for c in CASES])
def test_a_malformed_search_item_is_a_400_naming_the_field(
    label: str, item: dict[str, Any], named: str
) -> None:
    fake = FakeResponses().script(text("ok"))
    with pytest.raises(openai.BadRequestError) as caught:
        send("responses", fake, body(item))
    assert named in str(caught.value), str(caught.value)
    assert "cannot be read" not in str(caught.value)
    assert "responses_search_items_valid" in [v.rule for v in fake.violations]
    assert all(v.status == 400 for v in fake.violations)


def test_a_hosted_call_without_arguments_is_a_400() -> None:
    call = {k: v for k, v in CALL.items() if k != "arguments"}
    fake = FakeResponses().script(text("ok"))
    payload = body(OUTPUT)
    payload["input"][1] = call
    with pytest.raises(openai.BadRequestError, match=re.escape("'input.1.arguments'")):
        send("responses", fake, payload)


def test_a_well_formed_hosted_search_is_accepted() -> None:
    fake = FakeResponses().script(text("ok"))
    send("responses", fake, body(OUTPUT))
    assert fake.violations == ()


def test_without_the_shape_rule_the_fake_still_answers_instead_of_crashing() -> None:
    """A fake given its own rules (the shape rule left out) reads the items without raising."""
    rules = tuple(r for r in RESPONSES_RULES if r.__name__ != "responses_search_items_valid")
    for _, item, _ in CASES:
        fake = FakeResponses(rules=rules).script(text("ok"))
        try:
            send("responses", fake, body(item))
        except openai.BadRequestError as exc:  # another rule may refuse: never "unreadable"
            assert "cannot be read" not in str(exc), str(exc)


def test_an_additional_tools_function_named_by_a_list_is_a_400() -> None:
    item = {"type": "additional_tools", "role": "developer", "tools": [{**FN, "name": ["x"]}]}
    fake = FakeResponses().script(text("ok"))
    payload = body(OUTPUT)
    payload["input"][2] = item
    payload["input"].pop(1)
    with pytest.raises(openai.BadRequestError, match=re.escape("'input.1.tools.0.name'")):
        send("responses", fake, payload)
    assert [v.rule for v in fake.violations] == ["responses_additional_tools_valid"]
