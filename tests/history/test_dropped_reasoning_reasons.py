"""Reasoning compile leaves out is reported with who made it and what the target needs.

``dropped_foreign_part`` said "dropped a reasoning part the target cannot receive" and
no more for reasoning, while other parts left out named their reason. Each adapter now
says it (`contextchef.providers._keeps.reasoning_refused`, written on the provider side):
another provider's reasoning names that provider and what the target takes back; the
target's own reasoning without what it is verified by names what it lacks (Anthropic's
signature, Responses' reasoning item, a Gemini signature that is not base64, an
Interactions thought step without a signature). Every target is covered; the request
then goes through the target's official SDK to its fake, which accepts it.
"""

from __future__ import annotations

from typing import Any

import pytest

from contextchef import ContextChef, Message, ProviderPart, ReasoningPart, TextPart, user
from contextchef.providers import TARGETS
from contextchef.testing import fake_for, text
from sdk_send import send

MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-4.1",
    "deepseek": "deepseek-chat",
    "responses": "gpt-5.5",
    "gemini": "gemini-2.5-flash",
    "gemini-interactions": "gemini-4-argon",
}

ANTHROPIC = (
    "its recorded 'thinking' block and the 'signature' the API verifies it by "
    "('redacted_thinking': its 'data')"
)
RESPONSES = "its recorded reasoning item (as returned: 'id', 'encrypted_content')"
GEMINI = "its recorded thought part ('thought': true, its 'thought_signature' as sent)"
INTERACTIONS = (
    "its recorded thought step and that step's 'signature' (a generateContent thought "
    "signature is bound to that API)"
)

# (target, the reasoning part, the reason the change gives after "cannot receive: ")
CASES: list[tuple[str, ReasoningPart, str]] = [
    (
        "anthropic",
        ReasoningPart(provider="openai", text="plan", provider_data={"provider": "responses"}),
        f"it is reasoning made by 'openai'; this target takes back only 'anthropic' "
        f"reasoning, with {ANTHROPIC}",
    ),
    (
        "anthropic",
        ReasoningPart(
            provider="anthropic",
            text="plan",
            provider_data={"provider": "anthropic", "block": {"type": "thinking"}},
        ),
        f"it is 'anthropic' reasoning without {ANTHROPIC}",
    ),
    (
        "openai",
        ReasoningPart(provider="anthropic", text="plan"),
        "it is reasoning made by 'anthropic'; this target takes no reasoning back",
    ),
    (
        "deepseek",
        ReasoningPart(provider="gemini", text="plan"),
        "it is reasoning made by 'gemini'; this target takes back only 'deepseek' "
        "reasoning, with its 'reasoning_content'",
    ),
    (
        "responses",
        ReasoningPart(provider="deepseek", text="plan"),
        f"it is reasoning made by 'deepseek'; this target takes back only 'openai' "
        f"reasoning, with {RESPONSES}",
    ),
    (
        "responses",
        ReasoningPart(provider="openai", text="plan"),
        f"it is 'openai' reasoning without {RESPONSES}",
    ),
    (
        "gemini",
        ReasoningPart(provider="gemini-interactions", text="plan"),
        f"it is reasoning made by 'gemini-interactions'; this target takes back only "
        f"'gemini' reasoning, with {GEMINI}",
    ),
    (
        "gemini",
        ReasoningPart(
            provider="gemini",
            text="plan",
            provider_data={
                "provider": "gemini",
                "part": {"text": "plan", "thought": True, "thought_signature": "@@"},
            },
        ),
        "its 'thought_signature' ('@@') is not base64 text, which the google-genai SDK "
        "refuses on every request it is sent in",
    ),
    (
        "gemini-interactions",
        ReasoningPart(
            provider="gemini",
            text="plan",
            provider_data={"provider": "gemini", "part": {"text": "plan", "thought": True}},
        ),
        f"it is reasoning made by 'gemini'; this target takes back only "
        f"'gemini-interactions' reasoning, with {INTERACTIONS}",
    ),
    (
        "gemini-interactions",
        ReasoningPart(
            provider="gemini-interactions",
            text="plan",
            provider_data={"provider": "gemini-interactions", "step": {"type": "thought"}},
        ),
        "its thought step needs a string 'signature' (the API gives each one), got none",
    ),
]


def test_every_target_is_covered() -> None:
    assert {target for target, _, _ in CASES} == set(TARGETS)


@pytest.mark.parametrize(("target", "part", "reason"), CASES)
def test_left_out_reasoning_is_reported_with_who_made_it_and_what_is_needed(
    target: str, part: ReasoningPart, reason: str
) -> None:
    chef = ContextChef()
    answer = Message(role="assistant", parts=(part, TextPart(text="It is 4.")))
    chef.set_history([user("What is 2 + 2?"), answer, user("And 3 + 3?")])
    fake = fake_for(target).script(text("6."), text("8."))
    first = chef.compile(target, model=MODELS[target])
    dropped = [(c.kind, c.index, c.detail) for c in first.changes]
    assert dropped == [
        (
            "dropped_foreign_part",
            1,
            f"message 1: dropped a reasoning part the target cannot receive: {reason}",
        )
    ]
    chef.ingest(send(target, fake, first.payload))
    chef.append(user("And 4 + 4?"))
    second: Any = chef.compile(target, model=MODELS[target])
    chef.ingest(send(target, fake, second.payload))
    assert fake.violations == ()


def test_the_interactions_target_reports_another_wires_provider_part() -> None:
    """Its ``keeps`` goes through `keeps_part` now: a provider part names its reason too."""
    chef = ContextChef()
    block = ProviderPart(provider="anthropic", data={"type": "server_tool_use"})
    said = TextPart(text="Found it.")
    chef.set_history([user("Look."), Message(role="assistant", parts=(block, said)), user("So?")])
    request = chef.compile("gemini-interactions", model=MODELS["gemini-interactions"])
    assert [(c.kind, c.detail) for c in request.changes] == [
        (
            "dropped_foreign_part",
            "message 1: dropped a provider part the target cannot receive: it holds "
            "'anthropic' data; this target takes 'gemini-interactions' only",
        )
    ]
