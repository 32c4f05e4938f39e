"""Switching model or strategy within one target keeps every request valid and reports edits.

The ledger is per target, not per model: a model that cannot take what was sent (system
messages, tool changes) gets it re-rendered, and a model with the prefix check must then not
get thinking bound to the old rendering (`contextchef.session._binding`). Each scenario is a
breakit3 report (F06, F07, F10, F11) sent through the official SDK clients against the fakes,
which enforce the prefix check, system-message placement and the tool-change rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel

from contextchef import ContextChef, Skill, load_demo_catalog, user
from contextchef.session._request import CompiledRequest
from contextchef.testing import (
    FakeAnthropic,
    FakeResponses,
    httpx_for,
    provider_search,
    text,
    tool_calls,
)

OPUS = "claude-opus-5-5"  # prefix check, system messages, tool changes
SONNET55 = "claude-sonnet-5-5"  # prefix check, system messages, no tool changes
SONNET45 = "claude-sonnet-4-5"  # no prefix check, no system messages
OPUS41 = "claude-opus-4-1"  # no prefix check, no tool search
TOOL_BETAS = ("inline-tools-2026-09-15", "mid-conversation-tool-changes-2026-07-01")


class _Branch(BaseModel):
    branch: str


def run_sql(sql: str) -> str:
    """Run SQL.

    Args:
        sql: Statement.
    """
    return "1 row"


def _claude(
    chef: ContextChef, fake: FakeAnthropic, strategy: str = "client"
) -> Callable[[str], CompiledRequest]:
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )

    def turn(model: str) -> CompiledRequest:
        request = chef.compile("anthropic", model=model, strategy=strategy)
        calls = chef.ingest(
            client.messages.create(**request.payload, extra_headers=request.headers)
        )
        if calls:
            chef.run_tools(calls)
        else:
            chef.append(user("next"))
        return request

    return turn


def _thinking(request: CompiledRequest) -> int:
    return sum(
        1
        for m in request.payload["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "thinking"
    )


def _dba_chef() -> ContextChef:
    chef = ContextChef(default_defer=True, modes={"ro": ["postgres-db__query"]})
    chef.register_catalog(load_demo_catalog())
    chef.register_skills(
        [
            Skill(
                name="dba",
                description="DB work.",
                instructions="Never DROP.",
                tools=("postgres-db__execute_sql",),
            )
        ]
    )
    chef.set_history([user("go")])
    return chef


def test_an_announcement_rendered_for_a_model_without_system_messages_is_not_bound_back() -> None:
    """F11: the thinking after the system message is not sent after its user-text rendering."""
    chef = ContextChef()
    chef.set_history([user("go")])
    fake = FakeAnthropic().script(*[text(f"t{i}", reasoning="r") for i in range(4)])
    turn = _claude(chef, fake)
    turn(OPUS)
    chef.announce("build", "The build is green.")
    announced = turn(OPUS)
    assert announced.payload["messages"][-1]["role"] == "system"
    detour = turn(SONNET45)
    assert [(e.kind, e.history_index, e.thinking_stripped) for e in detour.edits] == [
        ("model", 1, 0)
    ]
    back = turn(OPUS)
    assert fake.violations == ()
    assert [(e.kind, e.history_index) for e in back.edits] == [("model", 1)]
    # stripped from the last mark before the first unbound block: the detour rendered
    # from the first reply on, so its (still bound) thinking goes too; a trailing run
    assert back.edits[0].thinking_stripped == 3
    assert _thinking(back) == 0
    assert [m["role"] for m in back.payload["messages"]][-1] == "system"  # stated again


@pytest.mark.parametrize("trigger", ["announce", "dynamic", "host_skill", "mode"])
@pytest.mark.parametrize("detour", [SONNET45, SONNET55, OPUS41])
def test_a_detour_through_another_model_keeps_every_request_valid(
    trigger: str, detour: str
) -> None:
    """F11 and its variants (breakit3 t32): whatever the first model was sent, the way back is
    valid and states its edit."""
    chef = _dba_chef()
    fake = FakeAnthropic().script(*[text(f"t{i}", reasoning="r") for i in range(6)])
    turn = _claude(chef, fake, strategy="auto")
    turn(OPUS)
    if trigger == "announce":
        chef.announce("build", "The build is green.")
    elif trigger == "dynamic":
        chef.set_dynamic_state(_Branch(branch="main"))
    elif trigger == "host_skill":
        chef.load_skill("dba")
    else:
        chef.set_mode("ro")
    before = turn(OPUS)
    for model in (detour, OPUS, OPUS):
        after = turn(model)
        _check_reported(before, after)
        before = after
    assert after.edits == ()  # settled: the last turn only appended
    assert fake.violations == ()


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _check_reported(before: CompiledRequest, after: CompiledRequest) -> None:
    """Messages `before` sent are sent again unchanged, or `after` reports an edit."""
    old, new = before.payload["messages"], after.payload["messages"]
    # the last message sent may take the next turn's text (a user turn continued)
    kept = _plain(new[: len(old) - 1]) == _plain(old[:-1])
    assert kept or after.edits, f"sent differently without an edit: {old} -> {new}"


def test_a_tool_change_a_detour_dropped_is_stated_again() -> None:
    """F06: a skill loaded by the model on opus-5-5 (tool_addition), a turn on a model
    without tool changes, then opus-5-5 again: valid, reported, the tools added again."""
    chef = ContextChef(default_defer=True)
    chef.register_tools([run_sql])
    chef.register_skills(
        [
            Skill(
                name="dba",
                description="Database work.",
                instructions="Never DROP.",
                tools=("run_sql",),
            )
        ]
    )
    chef.set_history([user("go")])
    fake = FakeAnthropic().script(
        tool_calls(("load_skill", {"name": "dba"}), reasoning="r"),
        text("loaded", reasoning="r"),
        text("ok", reasoning="r"),
        text("back", reasoning="r"),
    )
    turn = _claude(chef, fake, strategy="auto")
    turn(OPUS)
    loaded = turn(OPUS)
    assert any(b.get("type") == "tool_addition" for b in _blocks(loaded))
    detour = turn(SONNET45)  # the report's opus-4-5 alike (deprecated in the SDK)
    assert [e.kind for e in detour.edits] == ["model"]
    assert not any(b.get("type") == "tool_addition" for b in _blocks(detour))
    back = turn(OPUS)
    assert fake.violations == ()
    assert [(e.kind, e.thinking_stripped) for e in back.edits] == [("model", 3)]
    assert any(b.get("type") == "tool_addition" for b in _blocks(back))
    assert any(beta in back.headers.get("anthropic-beta", "") for beta in TOOL_BETAS)


def _blocks(request: CompiledRequest) -> list[dict[str, Any]]:
    return [
        b
        for m in request.payload["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict)
    ]


def test_a_model_without_tool_changes_never_gets_one_replayed() -> None:
    """F10: host load_skill on opus-5-5, then sonnet-5-5 (system messages, no tool changes):
    the tool_addition is not replayed (no beta to send it under); the edit is reported."""
    chef = _dba_chef()
    fake = FakeAnthropic().script(*[text(f"t{i}", reasoning="r") for i in range(5)])
    turn = _claude(chef, fake, strategy="auto")
    turn(OPUS)
    chef.load_skill("dba")
    loaded = turn(OPUS)
    assert any(b.get("type") == "tool_addition" for b in _blocks(loaded))
    switched = turn(SONNET55)
    assert not any(b.get("type") in ("tool_addition", "tool_removal") for b in _blocks(switched))
    assert not any(beta in switched.headers.get("anthropic-beta", "") for beta in TOOL_BETAS)
    assert [e.kind for e in switched.edits] in (["model"], ["tools"])
    assert switched.edits[0].thinking_stripped == 2
    assert turn(SONNET55).edits == ()
    assert fake.violations == ()


@pytest.mark.parametrize(
    ("model", "strategy"), [("gpt-5.5", "flat"), ("gpt-5.5", "client"), ("gpt-4.1", "auto")]
)
def test_a_responses_call_made_before_a_mode_round_trip_replays_in_a_declared_namespace(
    model: str, strategy: str
) -> None:
    """F07: a namespaced call on gpt-5.5 (after the hosted search loaded it: the model
    cannot call a deferred function nothing loaded), set_mode('ro') / set_mode(None) (its
    tools come back by additional_tools, after the call), then another strategy or model:
    the call is not replayed in a namespace nothing before it declares; the edit is
    reported."""
    chef = ContextChef(default_defer=True, modes={"ro": ["read_file", "grep"]})
    chef.register_catalog(load_demo_catalog())
    chef.set_history([user("go")])
    fake = FakeResponses().script(
        provider_search(
            "postgres-db__execute_sql",
            then=tool_calls(("postgres-db__execute_sql", {"sql": "select 1"}), reasoning="r"),
        ),
        *[text(f"t{i}", reasoning="r") for i in range(6)],
    )
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )

    def turn(model: str, strategy: str) -> CompiledRequest:
        request = chef.compile("responses", model=model, strategy=strategy)
        calls = chef.ingest(client.responses.create(**request.payload))
        if calls:
            chef.run_tools(calls, fallback=lambda call, allowed: "1 row")
        else:
            chef.append(user("next"))
        return request

    turn("gpt-5.5", "auto")
    turn("gpt-5.5", "auto")
    chef.set_mode("ro")
    turn("gpt-5.5", "auto")
    chef.set_mode(None)
    turn("gpt-5.5", "auto")
    switched = turn(model, strategy)
    assert fake.violations == ()
    assert [(e.kind, e.history_index) for e in switched.edits] == [("tools", 0)]
    calls = [i for i in switched.payload["input"] if i.get("type") == "function_call"]
    # the hosted search's output before the call declares its namespace: it may keep it
    loads = [i for i in switched.payload["input"] if i.get("type") == "tool_search_output"]
    kept = [c.get("namespace") for c in calls] == ["postgres-db"]
    assert not kept or strategy == "auto" or loads[0]["tools"][0]["name"] == "postgres-db"
    assert turn(model, strategy).edits == ()
    assert fake.violations == ()


def test_bindings_survive_a_snapshot() -> None:
    """What each thinking block is bound to is part of the ledger's record."""
    chef = ContextChef()
    chef.set_history([user("go")])
    fake = FakeAnthropic().script(*[text(f"t{i}", reasoning="r") for i in range(4)])
    turn = _claude(chef, fake)
    turn(OPUS)
    chef.announce("build", "The build is green.")
    turn(OPUS)
    turn(SONNET45)
    restored = ContextChef()
    restored.restore(chef.snapshot(), allow_unsigned=True)
    back = _claude(restored, fake)(OPUS)
    assert fake.violations == ()
    assert [e.kind for e in back.edits] == ["model"]


@pytest.mark.parametrize("trigger", ["announce", "host_skill", "mode"])
@pytest.mark.parametrize("detour", ["client", "anthropic-native", "anthropic-inline"])
def test_a_detour_through_another_strategy_keeps_every_request_valid(
    trigger: str, detour: str
) -> None:
    """The same for a strategy switch on one prefix-check model: valid, edits reported."""
    chef = _dba_chef()
    fake = FakeAnthropic().script(*[text(f"t{i}", reasoning="r") for i in range(6)])
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )

    def turn(strategy: str) -> CompiledRequest:
        request = chef.compile("anthropic", model=OPUS, strategy=strategy)
        chef.ingest(client.messages.create(**request.payload, extra_headers=request.headers))
        chef.append(user("next"))
        return request

    turn("auto")
    if trigger == "announce":
        chef.announce("build", "The build is green.")
    elif trigger == "host_skill":
        chef.load_skill("dba")
    else:
        chef.set_mode("ro")
    before = turn("auto")
    for strategy in (detour, "auto", "auto"):
        after = turn(strategy)
        _check_reported(before, after)
        before = after
    assert after.edits == ()
    assert fake.violations == ()
