"""`ModelRules` say what an adapter can render, and the fake's Claude table agrees.

Compile reads `ModelRules.system_messages` and `ModelRules.tool_changes` instead of
probing the adapter (rendering an empty entry): so a target's adapter must render a
mid-conversation system entry (`Adapter.system_message`) for every model whose rules
allow one, and must have none where no model of it allows one; the same for tool
changes (`Adapter.tool_change_message`). The Claude rules of the library
(`providers/anthropic/_models.py`) and of `FakeAnthropic` (`testing/_claude.py`) are
two tables of the same documented behaviour: they must agree model by model.
"""

from __future__ import annotations

import pytest

from contextchef.providers import TARGETS, get_adapter
from contextchef.testing._claude import CLAUDE_MODELS, claude_model

_CLAUDE_NAMES = sorted(
    f"claude-{family}-{'-'.join(map(str, version))}" for family, version in CLAUDE_MODELS
)
"""Every model of the fake's table, as a Claude API name."""


def _spellings(name: str) -> list[str]:
    """`name` on the Claude API (dated), on Bedrock and on Vertex AI."""
    return [
        name,
        f"{name}-20261001",
        f"anthropic.{name}-v1:0",
        f"us.anthropic.{name}-v1:0",
        f"{name}@20261001",
    ]


_MODELS: dict[str, list[str]] = {
    "anthropic": [s for n in _CLAUDE_NAMES for s in _spellings(n)]
    + ["claude-opus-9-9", "claude-3-5-sonnet-20241022", "m", "gpt-5.4"],
    "responses": ["gpt-4o", "gpt-4.1", "gpt-5", "gpt-5.2", "gpt-5.4", "gpt-5.5", "o3", "m"],
    "openai": ["gpt-4o", "gpt-5.4", "o3", "m"],
    "deepseek": ["deepseek-chat", "deepseek-reasoner", "m"],
    "gemini": ["gemini-2.5-pro", "gemini-3-pro", "m"],
    "gemini-interactions": ["gemini-4-argon", "gemini-3.8-flash", "m"],
}


def test_every_target_has_models() -> None:
    assert sorted(_MODELS) == sorted(TARGETS)


@pytest.mark.parametrize("target", TARGETS)
def test_system_messages_exist_exactly_where_the_rules_say(target: str) -> None:
    adapter = get_adapter(target)
    rules = [adapter.model_rules(m) for m in _MODELS[target]]
    entry = adapter.system_message("note")
    for r in rules:
        if r.system_messages:
            assert entry is not None, f"{target} {r.model}: rules allow system entries"
    if not any(r.system_messages for r in rules):
        assert entry is None, f"{target}: no model takes system entries, yet one renders"


@pytest.mark.parametrize("target", TARGETS)
def test_tool_changes_exist_exactly_where_the_rules_say(target: str) -> None:
    adapter = get_adapter(target)
    rules = [adapter.model_rules(m) for m in _MODELS[target]]
    entry = adapter.tool_change_message("", add=("a",))
    for r in rules:
        if r.tool_changes:
            assert entry is not None, f"{target} {r.model}: rules allow tool changes"
            assert r.system_messages, f"{target} {r.model}: tool changes need system entries"
        else:
            assert r.tool_change_beta is None and not r.inline_tools, (target, r.model)
    if not any(r.tool_changes for r in rules):
        assert entry is None, f"{target}: no model takes tool changes, yet one renders"


@pytest.mark.parametrize("name", _CLAUDE_NAMES)
def test_the_claude_tables_agree(name: str) -> None:
    adapter = get_adapter("anthropic")
    fake = claude_model(name)
    assert fake is not None
    for spelling in _spellings(name):
        assert claude_model(spelling) == fake, spelling
        rules = adapter.model_rules(spelling)
        assert rules.known, spelling
        assert rules.prefix_check == fake.prefix_check, spelling
        assert rules.system_messages == fake.system_messages, spelling
        assert rules.prefill == (not fake.rejects_prefill), spelling
        assert ("compact" in rules.native_context) == fake.compaction, spelling
        bedrock = "anthropic." in spelling
        on_demand = fake.compaction_on_demand and not bedrock
        assert ("compact_on_demand" in rules.native_context) == on_demand, spelling
        # the fake refuses system entries where the library would send tool changes
        assert not rules.tool_changes or fake.system_messages, spelling


@pytest.mark.parametrize("name", ["claude-opus-9-9", "claude-3-5-sonnet-20241022", "m"])
def test_models_outside_the_fake_table_get_no_model_dependent_rules(name: str) -> None:
    rules = get_adapter("anthropic").model_rules(name)
    fake = claude_model(name)
    assert fake is None or not (fake.prefix_check or fake.system_messages or fake.rejects_prefill)
    assert not (rules.prefix_check or rules.system_messages or rules.tool_changes)
    assert rules.prefill
