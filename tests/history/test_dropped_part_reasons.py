"""A provider part compile leaves out is reported with the reason, not only the fact.

``dropped_foreign_part`` said "dropped a provider part the target cannot receive" and no
more. The target's adapter now says why (`contextchef.history.Refused`, written on the
provider side: `providers._keeps.keeps_part`, and for Responses tool search items
`_items.item_problem`): another provider's data, an item or block without its ``type``,
an empty one. Each request then goes through the target's official SDK to its fake, for
two turns, and is accepted.
"""

from __future__ import annotations

from typing import Any

import pytest

from contextchef import ContextChef, Message, ProviderPart, assistant, user
from contextchef.testing import fake_for, text
from sdk_send import send

MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-4.1",
    "responses": "gpt-5.5",
    "gemini": "gemini-2.5-flash",
}

# (target, provider, data, what the detail names)
CASES: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "responses",
        "anthropic",
        {"type": "server_tool_use"},
        "it holds 'anthropic' data; this target takes 'responses' only",
    ),
    ("anthropic", "gemini", {"executableCode": {"code": "1"}}, "it holds 'gemini' data"),
    ("gemini", "responses", {"type": "web_search_call"}, "this target takes 'gemini' only"),
    ("openai", "responses", {"type": "web_search_call"}, "this target takes 'openai' only"),
    (
        "responses",
        "responses",
        {"id": "ws_1"},
        "'responses' input items need a string 'type' (their kind), got none",
    ),
    (
        "anthropic",
        "anthropic",
        {"type": 3},
        "'anthropic' content blocks need a string 'type' (their kind), got 3",
    ),
    ("gemini", "gemini", {}, "its 'gemini' data is empty"),
]


@pytest.mark.parametrize(("target", "provider", "data", "named"), CASES)
def test_a_left_out_provider_part_is_reported_with_its_reason(
    target: str, provider: str, data: dict[str, Any], named: str
) -> None:
    chef = ContextChef()
    chef.set_history(
        [
            user("Look it up."),
            Message(role="assistant", parts=(ProviderPart(provider=provider, data=data),)),
            assistant("Done looking."),
            user("What did you find?"),
        ]
    )
    fake = fake_for(target).script(text("Nothing."), text("Still nothing."))
    first = chef.compile(target, model=MODELS[target])
    (dropped,) = [c for c in first.changes if c.kind == "dropped_foreign_part"]
    assert dropped.index == 1
    assert dropped.detail.startswith(
        "message 1: dropped a provider part the target cannot receive: "
    ), dropped.detail
    assert named in dropped.detail, dropped.detail
    chef.ingest(send(target, fake, first.payload))
    chef.append(user("Thanks."))
    second = chef.compile(target, model=MODELS[target])
    chef.ingest(send(target, fake, second.payload))
    assert fake.violations == ()
