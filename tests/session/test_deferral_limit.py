"""More tools than a target's deferral allows: never a request the provider refuses (breakit3 F08).

Anthropic's tool search takes at most 10,000 tools per request
(https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool, "Limits";
research note rule 14); FakeAnthropic refuses more with ``defer_loading``. Past it, ``auto``
takes the ``client`` strategy and logs why, and a native strategy asked for by name is a
`UsageError` naming the limit and the strategies that fit. Requests go through the official
SDK client to the fake.
"""

from __future__ import annotations

import logging

import anthropic
import pytest

from contextchef import ContextChef, UsageError, user
from contextchef.providers import get_adapter
from contextchef.testing import FakeAnthropic, httpx_for, text

MODEL = "claude-opus-5-5"
LIMIT = 10_000


@pytest.fixture(scope="module")
def big_chef() -> ContextChef:
    chef = ContextChef(default_defer=True)
    chef.register_tools(
        [
            {
                "name": f"tool_{i}",
                "description": f"Does thing number {i}.",
                "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}},
            }
            for i in range(LIMIT + 50)
        ]
    )
    chef.set_history([user("hi")])
    return chef


def send(request_payload: dict[str, object], headers: object) -> FakeAnthropic:
    fake = FakeAnthropic().script(text("ok"))
    client = anthropic.Anthropic(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    client.messages.create(**request_payload, extra_headers=headers)
    return fake


def test_the_anthropic_profile_states_the_documented_limit() -> None:
    assert get_adapter("anthropic").profile.max_deferred_tools == LIMIT
    assert get_adapter("responses").profile.max_deferred_tools is None  # none documented


def test_auto_falls_back_to_client_past_the_limit_and_says_so(
    big_chef: ContextChef, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        request = big_chef.compile("anthropic", model=MODEL, strategy="auto")
    assert request.strategy == "client"
    assert not any(t.get("defer_loading") for t in request.payload["tools"])
    # (10,050 tools with no server also take the directory past its budget: warned too)
    assert [r.getMessage() for r in caplog.records if "auto uses" in r.getMessage()] == [
        "contextchef: auto uses 'client': strategy 'anthropic-native-client' would declare "
        "up to 10,050 tools with defer_loading, more than the 10,000 one 'anthropic' request "
        "may carry (tool search limits); the client strategies send only resident tools"
    ]
    fake = send(request.payload, request.headers)
    assert fake.violations == ()


@pytest.mark.parametrize(
    "strategy", ["anthropic-native", "anthropic-native-regex", "anthropic-native-client"]
)
def test_a_native_strategy_past_the_limit_is_refused_naming_what_fits(
    big_chef: ContextChef, strategy: str
) -> None:
    before = dict(big_chef._state.ledgers)
    with pytest.raises(UsageError) as info:
        big_chef.compile("anthropic", model=MODEL, strategy=strategy)
    assert str(info.value) == (
        f"strategy {strategy!r} would declare up to 10,050 tools with defer_loading, more "
        "than the 10,000 one 'anthropic' request may carry (tool search limits); the client "
        "strategies send only resident tools; use one of ['client', 'flat'] (or 'auto')"
    )
    assert big_chef._state.ledgers == before  # nothing changed


def test_at_the_limit_auto_stays_native_and_the_fake_accepts_it() -> None:
    chef = ContextChef(default_defer=True)
    chef.register_tools(
        [
            {"name": f"t{i}", "description": f"Tool {i}.", "input_schema": {"type": "object"}}
            for i in range(LIMIT - 2)  # plus tool_search and defer_execute: 10,000 in all
        ]
    )
    chef.set_history([user("hi")])
    request = chef.compile("anthropic", model=MODEL, strategy="auto")
    assert request.strategy == "anthropic-native-client"
    assert sum(1 for t in request.payload["tools"] if t.get("defer_loading")) == LIMIT - 2
    assert send(request.payload, request.headers).violations == ()
