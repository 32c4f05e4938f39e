"""Servers that change mid-conversation: the cached prefix and the history keep their bytes.

The fixture server adds, removes and changes tools when its ``admin`` tool is called
(and sends ``notifications/tools/list_changed``); a second server connects and
disconnects mid-session. After every turn the compiled payload's ``system`` and
``tools`` segments are byte-identical to the first request's, and every earlier message
is unchanged (the messages segment of the previous request is a prefix of the next).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import pytest
from anthropic.types.beta import MessageCreateParams
from mcp_fixtures import fixture_stdio, time_server
from pydantic import TypeAdapter, ValidationError

from contextchef import (
    CompiledRequest,
    ContextChef,
    DeferredConfig,
    ToolCall,
    ToolResult,
    assistant,
    tool_results,
    user,
)
from contextchef.mcp import McpChanges, McpHub, McpServer
from sdk_check import _drain, key_problems, sdk_problems

MODERN = Path(__file__).with_name("modern_server.py")
TARGETS = [("anthropic", "claude-opus-5-5"), ("responses", "gpt-5.4")]


class Conversation:
    """A scripted model: each turn is one tool call, answered through ``chef.execute``."""

    def __init__(
        self, chef: ContextChef, target: str, model: str, strategy: str = "client"
    ) -> None:
        self.chef, self.target, self.model, self.strategy = chef, target, model, strategy
        self.requests: list[CompiledRequest] = []
        self.turn = 0

    def compile(self) -> CompiledRequest:
        request = self.chef.compile(self.target, model=self.model, strategy=self.strategy)
        if self.requests:
            first, before = self.requests[0], self.requests[-1]
            assert request.edits == ()
            assert request.segments["system"] == first.segments["system"]
            assert request.segments["tools"] == first.segments["tools"]
            assert request.segments["messages"].startswith(before.segments["messages"][:-1])
        self.requests.append(request)
        return request

    def call(self, tool: str, **arguments: object) -> ToolResult:
        self.turn += 1
        call = ToolCall(id=f"call_{self.turn}", name=tool, arguments=arguments)
        self.chef.append(assistant(tool_calls=[call]))
        result = self.chef.execute(call).result
        self.chef.append(tool_results([result]))
        return result


@pytest.mark.parametrize(("target", "model"), TARGETS)
def test_tools_added_removed_and_changed_mid_conversation(
    target: str, model: str, caplog: pytest.LogCaptureFixture
) -> None:
    chef = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
    chef.set_system_prompt("You are a test agent.")
    chef.append(user("Set up a weather tool, then use it."))
    with McpHub(chef, [fixture_stdio()]) as hub:
        talk = Conversation(chef, target, model)
        first = talk.compile()
        assert "fixture__weather" not in json.dumps(first.payload)

        # the server adds a tool: registered at the next compile, tools bytes unchanged
        talk.call("fixture__admin", op="add", name="weather", field="city")
        second = talk.compile()
        assert 'MCP server \\"fixture\\": new tools: fixture__weather' in json.dumps(second.payload)
        weather = chef.registry.by_wire_name("fixture__weather")
        assert weather is not None and weather.server == "fixture" and weather.name == "weather"
        assert hub.definition("fixture__weather") == {
            "name": "weather",
            "description": "The weather tool.",
            "inputSchema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
        found = talk.call("tool_search", queries=["weather"])
        assert "fixture__weather" in found.content
        answer = talk.call("defer_execute", tool_name="fixture__weather", params={"city": "Oslo"})
        assert not answer.is_error and answer.content == "weather: {'city': 'Oslo'}"
        talk.compile()

        # the server removes a tool: still in `tools`, refused by the gate, announced
        assert "fixture__echo" in talk.call("tool_search", queries=["echo text back"]).content
        talk.call("fixture__admin", op="remove", name="echo")
        removed = talk.compile()
        assert "removed (calls are refused): fixture__echo" in json.dumps(removed.payload)
        refused = talk.call("fixture__echo", text="hi")
        assert refused.is_error
        assert refused.content == 'Tool "fixture__echo" was removed by MCP server "fixture".'
        # ...and no longer found by tool_search: by name it says why, by query it is left out
        by_name = talk.call("tool_search", tool_names=["fixture__echo"]).content
        assert 'Tool "fixture__echo" was removed by MCP server "fixture".' in by_name
        by_query = talk.call("tool_search", queries=["echo text back"]).content
        assert "fixture__echo" not in by_query and "fixture__" in by_query
        talk.compile()

        # the server changes a schema: the new one applies from the next call on
        talk.call("fixture__admin", op="change", name="weather", field="town")
        talk.compile()
        assert (
            "town (string, required)"
            in talk.call("tool_search", tool_names=["fixture__weather"]).content
        )
        old_args = talk.call("defer_execute", tool_name="fixture__weather", params={"city": "Oslo"})
        assert old_args.is_error and "town" in old_args.content
        new_args = talk.call("defer_execute", tool_name="fixture__weather", params={"town": "Oslo"})
        assert new_args.content == "weather: {'town': 'Oslo'}"
        talk.compile()

        # a definition the session cannot take is logged and left out; the compile goes on
        with caplog.at_level(logging.WARNING, logger="contextchef"):
            talk.call("fixture__admin", op="add-invalid", name="broken")
            talk.compile()
        assert "MCP server 'fixture': tool 'broken' ignored" in caplog.text
        assert chef.registry.by_wire_name("fixture__broken") is None
        assert len(talk.requests) == 8


@pytest.mark.parametrize(("target", "model"), TARGETS)
def test_a_server_connecting_and_disconnecting_mid_session(target: str, model: str) -> None:
    chef = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
    chef.append(user("What time is it in Tokyo?"))
    with McpHub(chef, [fixture_stdio()]) as hub:
        talk = Conversation(chef, target, model)
        talk.compile()
        assert hub.add_server(time_server()) == "mcp-time"
        talk.call("fixture__echo", text="connecting a clock")
        joined = talk.compile()
        tool = chef.registry.by_wire_name("mcp-time__convert_time")
        assert tool is not None and tool.server == "mcp-time" and tool.source == "runtime"
        assert "mcp-time__convert_time" in json.dumps(joined.payload)  # announced
        params = {"source_timezone": "UTC", "time": "09:30", "target_timezone": "Asia/Tokyo"}
        answer = talk.call("defer_execute", tool_name="mcp-time__convert_time", params=params)
        assert json.loads(answer.content)["target"]["datetime"][11:16] == "18:30"
        talk.compile()

        hub.remove_server("mcp-time")
        assert hub.apply_changes() == McpChanges(
            removed=("mcp-time__convert_time", "mcp-time__get_current_time")
        )
        gone = talk.call("defer_execute", tool_name="mcp-time__convert_time", params=params)
        assert gone.is_error and gone.content == (
            'Tool "mcp-time__convert_time" is unavailable: disconnected MCP server "mcp-time".'
        )
        talk.compile()


def test_responses_native_search_reveals_a_new_tool_in_additional_tools() -> None:
    """Under openai-native a new tool is stated in an ``additional_tools`` item, not ``tools``."""
    chef = ContextChef(default_defer=True, pin=["fixture__admin"])
    chef.append(user("Add a weather tool."))
    with McpHub(chef, [fixture_stdio()]):
        talk = Conversation(chef, "responses", "gpt-5.4", strategy="openai-native")
        talk.compile()
        talk.call("fixture__admin", op="add", name="weather", field="city")
        request = talk.compile()
        assert sdk_problems("responses", request.payload) == []
        (item,) = [i for i in request.payload["input"] if i.get("type") == "additional_tools"]
        assert "weather" in json.dumps(item)
        assert "weather" not in request.segments["tools"]


def test_a_2026_server_reports_changes_through_subscriptions_listen() -> None:
    modern = McpServer(command=sys.executable, args=(str(MODERN),), protocol="auto")
    chef = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
    chef.append(user("Grow a tool."))
    with McpHub(chef, [modern]) as hub:
        talk = Conversation(chef, "anthropic", "claude-opus-5-5")
        talk.compile()
        talk.call("modern__grow", name="sprout")
        # the change event travels on its own stream: wait until the hub has re-listed
        deadline = time.monotonic() + 30
        while not hub.apply_changes().added and time.monotonic() < deadline:
            time.sleep(0.05)
        talk.compile()
        made = talk.call("defer_execute", tool_name="modern__sprout", params={})
        assert made.content == "made"  # the text; its {"result": "made"} wrapping not again
        talk.compile()


_BETA = TypeAdapter(MessageCreateParams)


def _problems(target: str, request: CompiledRequest) -> list[str]:
    """The SDK request types' objections (Anthropic tool changes: the beta types)."""
    if target != "anthropic":
        return sdk_problems(target, request.payload)
    assert "anthropic-beta" in request.headers  # tool changes need their beta header
    try:  # the adapter must outlive the lazy validators it returns
        _drain(_BETA.validate_python(request.payload))
    except ValidationError as exc:
        return [str(exc)]
    return key_problems(request.payload, MessageCreateParams)


@pytest.mark.parametrize(
    ("target", "model", "strategy"),
    [
        ("anthropic", "claude-opus-5-5", "anthropic-native-client"),
        ("anthropic", "claude-opus-5-5", "anthropic-inline"),
        ("responses", "gpt-5.4", "openai-native"),
    ],
)
def test_a_removed_tool_is_withdrawn_the_providers_way(
    target: str, model: str, strategy: str
) -> None:
    """Tools a server takes back are withdrawn like tools a mode hides, and come back.

    On models with mid-conversation tool changes: Anthropic ``tool_removal`` /
    ``tool_addition`` by reference; Responses has no withdrawal item, so a developer
    message names them, and their return is an ``additional_tools`` item. ``tools``,
    ``system`` and every earlier message keep their bytes (`Conversation.compile`).
    """
    # the clock is offered (pinned): a deferred tool never offered is not withdrawn where
    # our ranker searches (it leaves it out), only where the provider's search runs
    chef = ContextChef(default_defer=True, pin=["fixture__echo", "mcp-time__*"])
    chef.append(user("What time is it in Tokyo?"))
    clock = "mcp-time__get_current_time"
    with McpHub(chef, [fixture_stdio(), time_server()]) as hub:
        talk = Conversation(chef, target, model, strategy=strategy)
        talk.compile()
        talk.call("fixture__echo", text="dropping the clock")
        hub.remove_server("mcp-time")
        gone = talk.compile()
        assert _problems(target, gone) == []
        last = json.dumps(gone.payload["messages" if target == "anthropic" else "input"][-1])
        if target == "anthropic":
            removal = {"type": "tool_removal", "tool": {"type": "tool_reference", "name": clock}}
            assert json.dumps(removal)[:-1] in last
        else:
            assert f"do not call them: mcp-time__convert_time, {clock}." in last
        talk.call("fixture__echo", text="bringing it back")
        hub.add_server(time_server())
        back = talk.compile()
        assert _problems(target, back) == []
        last = json.dumps(back.payload["messages" if target == "anthropic" else "input"][-1])
        if target == "anthropic":
            assert '"type": "tool_addition"' in last and clock in last
        else:
            assert '"type": "additional_tools"' in last and clock in last
        assert not talk.call(clock, timezone="UTC").is_error
        talk.compile()
