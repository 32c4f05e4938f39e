"""Every loader reveals what it makes callable, per strategy; the gate and the fakes agree.

A tool declared with ``defer_loading: true`` is callable only once something revealed it
(research note provider-native-disclosure.md §1.1, §1.4, §2.1). ``load_toolkit`` on a
Claude model with tool search but no tool changes (``claude-sonnet-4-5``) used to say
"Call them directly by name" with nothing revealing them, and the gate let the call run.
Each test drives the conversation through the official SDK client against a fake, which
refuses a scripted call to a deferred tool nothing revealed (`contextchef.testing._reveals`).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from contextchef import ContextChef, Skill, ToolCall, user
from contextchef.session._request import CompiledRequest
from contextchef.testing import (
    FakeAnthropic,
    FakeProvider,
    FakeResponses,
    httpx_for,
    provider_search,
    text,
    tool_calls,
)

HX = httpx_for(anthropic)
SONNET45 = "claude-sonnet-4-5"  # tool search, no mid-conversation tool changes
OPUS48 = "claude-opus-4-8"  # tool search and tool changes
KIT = {
    "name": "Weather",
    "description": "Weather tools",
    "tools": [
        {
            "name": "tk_forecast",
            "description": "Weather forecast for a city",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ],
}
PARIS = {"city": "Paris"}


def _chef() -> ContextChef:
    chef = ContextChef(default_defer=True, pin=["^keep$"])
    chef.register_tools(
        [
            {"name": "keep", "description": "Keep", "input_schema": {"type": "object"}},
            {"name": "other", "description": "Other tool", "input_schema": {"type": "object"}},
            {"name": "sk_tool", "description": "Skill tool", "input_schema": {"type": "object"}},
        ]
    )
    chef.register_toolkits([KIT])
    chef.register_skills([Skill(name="triage", instructions="Triage.", tools=("sk_tool",))])
    chef.set_history([user("go")])
    return chef


class _Loop:
    """Compile, send through the SDK, ingest, run the calls: one model turn a step."""

    def __init__(self, chef: ContextChef, fake: FakeProvider, target: str, model: str) -> None:
        self.chef, self.fake, self.target, self.model = chef, fake, target, model
        http = fake.http_client(HX)
        if target == "anthropic":
            self.claude = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http)
        else:
            self.gpt = openai.OpenAI(api_key="x", max_retries=0, http_client=http)
        self.requests: list[CompiledRequest] = []

    def send(self, request: CompiledRequest) -> Any:
        if self.target == "anthropic":
            headers = dict(request.headers)
            return self.claude.messages.create(**request.payload, extra_headers=headers)
        return self.gpt.responses.create(**request.payload)

    def step(self, strategy: str) -> list[Any]:
        request = self.chef.compile(self.target, model=self.model, strategy=strategy)
        self.requests.append(request)
        calls = self.chef.ingest(self.send(request))
        results = self.chef.run_tools(calls, fallback=lambda call, allowed: "sunny")
        self.chef.append(*([] if results else [user("next")]))
        return list(results)


def _contents(request: CompiledRequest) -> list[Any]:
    return [
        b.get("content")
        for m in request.payload["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else ())
        if b.get("type") == "tool_result"
    ]


@pytest.mark.parametrize("strategy", ["auto", "anthropic-native-client"])
def test_load_toolkit_reveals_its_tools_by_reference_where_results_carry_them(
    strategy: str,
) -> None:
    chef = _chef()
    fake = FakeAnthropic().script(
        tool_calls(("load_toolkit", {"toolkit_name": "Weather"})),
        tool_calls(("tk_forecast", PARIS)),
        text("Sunny in Paris."),
    )
    loop = _Loop(chef, fake, "anthropic", SONNET45)
    loaded = loop.step(strategy)
    assert loaded[0].references == ("tk_forecast",) and not loaded[0].is_error
    assert "Call them directly by name." in loaded[0].content
    ran = loop.step(strategy)
    assert [(r.name, r.is_error, r.content) for r in ran] == [("tk_forecast", False, "sunny")]
    loop.step(strategy)
    assert fake.violations == () and fake.pending == 0
    # the load's answer is the tool_reference the provider expands into the definition
    assert _contents(loop.requests[1])[-1] == [
        {"type": "tool_reference", "tool_name": "tk_forecast"}
    ]
    tools = {t.get("name"): t for t in loop.requests[1].payload["tools"]}
    assert tools["tk_forecast"]["defer_loading"] is True
    assert loop.requests[1].strategy == "anthropic-native-client"


def test_load_toolkit_under_the_server_search_says_to_search_and_the_gate_waits() -> None:
    chef = _chef()
    fake = FakeAnthropic().script(
        tool_calls(("load_toolkit", {"toolkit_name": "Weather"})),
        provider_search("tk_forecast", then=tool_calls(("tk_forecast", PARIS))),
        text("Sunny."),
    )
    loop = _Loop(chef, fake, "anthropic", SONNET45)
    loaded = loop.step("anthropic-native")
    assert loaded[0].references == ()
    assert "Find them by these exact names with your tool search" in loaded[0].content
    assert "Call them directly" not in loaded[0].content
    early = chef.check_tool_call(ToolCall(id="x", name="tk_forecast", arguments=PARIS))
    assert early.decision == "denied" and early.code == "not_loaded"
    assert "has not been revealed yet" in early.reason
    ran = loop.step("anthropic-native")  # the provider's search reveals it, then the call
    assert [(r.name, r.is_error) for r in ran] == [("tk_forecast", False)]
    loop.step("anthropic-native")
    assert fake.violations == () and fake.pending == 0


def test_load_toolkit_on_a_model_with_tool_changes_is_revealed_by_the_next_request() -> None:
    chef = _chef()
    fake = FakeAnthropic().script(
        tool_calls(("load_toolkit", {"toolkit_name": "Weather"})),
        tool_calls(("tk_forecast", PARIS)),
        text("Sunny."),
    )
    loop = _Loop(chef, fake, "anthropic", OPUS48)
    loaded = loop.step("anthropic-native")
    assert "Call them directly by name." in loaded[0].content and loaded[0].references == ()
    # the same batch cannot call it yet: no request revealed it
    early = chef.check_tool_call(ToolCall(id="x", name="tk_forecast", arguments=PARIS))
    assert early.decision == "denied"
    ran = loop.step("anthropic-native")
    assert [(r.name, r.is_error) for r in ran] == [("tk_forecast", False)]
    assert "tool_addition" in json.dumps(loop.requests[1].payload["messages"][-1])
    loop.step("anthropic-native")
    assert fake.violations == () and fake.pending == 0


def test_load_skill_and_load_toolkit_in_one_turn_each_say_how_to_reach_their_tools() -> None:
    chef = _chef()
    fake = FakeAnthropic().script(
        tool_calls(
            ("load_toolkit", {"toolkit_name": "Weather"}), ("load_skill", {"name": "triage"})
        ),
        tool_calls(("tool_search", {"tool_names": ["sk_tool"]})),
        tool_calls(("sk_tool", {}), ("tk_forecast", PARIS)),
        text("Done."),
    )
    loop = _Loop(chef, fake, "anthropic", SONNET45)
    kit, skill = loop.step("auto")
    assert kit.references == ("tk_forecast",)
    assert 'Load them with tool_search({"tool_names": ["sk_tool"]})' in skill.content
    found = loop.step("auto")
    assert found[0].references == ("sk_tool",)
    ran = loop.step("auto")
    assert [(r.name, r.is_error) for r in ran] == [("sk_tool", False), ("tk_forecast", False)]
    loop.step("auto")
    assert fake.violations == () and fake.pending == 0


@pytest.mark.parametrize("strategy", ["anthropic-native", "anthropic-native-client"])
def test_the_gate_refuses_a_deferred_tool_no_request_revealed(strategy: str) -> None:
    """Host reveals and loads without tool changes reveal nothing to the provider."""
    chef = _chef()
    fake = FakeAnthropic().script(text("ok"))
    loop = _Loop(chef, fake, "anthropic", SONNET45)
    loop.step(strategy)
    chef.reveal_tools("other")
    chef.load_toolkit("Weather")
    for name in ("other", "tk_forecast"):
        denied = chef.check_tool_call(ToolCall(id="x", name=name, arguments={}))
        assert denied.decision == "denied" and denied.code == "not_loaded", name
    assert fake.violations == ()


def test_the_fakes_refuse_a_scripted_call_nothing_revealed() -> None:
    """The kind the gate used to let through: the fake plays a model that cannot call it."""
    chef = _chef()
    fake = FakeAnthropic().script(tool_calls(("other", {})), text("ok"))
    loop = _Loop(chef, fake, "anthropic", SONNET45)
    with pytest.raises(anthropic.BadRequestError, match="tool_not_revealed"):
        loop.step("anthropic-native")
    assert [(v.rule, v.status) for v in fake.violations] == [("tool_not_revealed", 400)]
    assert "'other'" in fake.violations[0].message and fake.pending == 2  # still queued

    responses = FakeResponses().script(tool_calls(("other", {})), text("ok"))
    chef = _chef()
    loop = _Loop(chef, responses, "responses", "gpt-5.5")
    with pytest.raises(openai.BadRequestError, match="tool_not_revealed"):
        loop.step("openai-native")
    assert [v.rule for v in responses.violations] == ["tool_not_revealed"]
    # revealed by the hosted search first, the same call is answered
    responses = FakeResponses().script(
        provider_search("other", then=tool_calls(("other", {}))), text("ok")
    )
    chef = _chef()
    loop = _Loop(chef, responses, "responses", "gpt-5.5")
    assert [(r.name, r.is_error) for r in loop.step("openai-native")] == [("other", False)]
    loop.step("openai-native")
    assert responses.violations == () and responses.pending == 0


def test_load_toolkit_on_responses_is_revealed_by_additional_tools() -> None:
    chef = _chef()
    fake = FakeResponses().script(
        tool_calls(("load_toolkit", {"toolkit_name": "Weather"})),
        tool_calls(("tk_forecast", PARIS)),
        text("Sunny."),
    )
    loop = _Loop(chef, fake, "responses", "gpt-5.5")
    loaded = loop.step("openai-native")
    assert "Call them directly by name." in loaded[0].content
    ran = loop.step("openai-native")
    assert [(r.name, r.is_error) for r in ran] == [("tk_forecast", False)]
    loop.step("openai-native")
    assert fake.violations == () and fake.pending == 0
    items = [i["type"] for i in loop.requests[1].payload["input"]]
    assert "additional_tools" in items
