"""The agent loop of the README with a real MCP server (issue 11, "done when").

Per provider, through the official SDK client against the `contextchef.testing` fake:
one parallel batch calls ``tool_search``, a registered handler, a tool of a live MCP
server (the fixture server, through `McpHub`; one server over streamable HTTP for the
module, as the tests keep no state in it: its stdio transport is tested in
test_mcp_servers.py) and a blocked tool; each is
answered correctly, every hook runs once per call the gate lets through (none for the
blocked one), and the follow-up request passes the fake's pairing rules.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_fixtures import http_server

from contextchef import ContextChef, ToolCall, user
from contextchef.mcp import McpHub, McpServer
from contextchef.testing import fake_for, text, tool_calls

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "session"))
from test_ingest import send
from test_run_tools import Hooks, delete_file, get_weather, loop, read_file, sent_results

TARGETS = ("anthropic", "openai", "responses", "gemini", "gemini-interactions")

BATCH = (
    ("tool_search", {"queries": ["weather forecast"]}),
    ("read_file", {"path": "a.txt"}),
    ("fixture__echo", {"text": "hello from mcp"}),
    ("delete_file", {"path": "a.txt"}),
)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The fixture server over streamable HTTP, shared by this module's tests."""
    with http_server() as (_, url):
        yield url


@pytest.mark.parametrize("run", ["sync", "async"])
@pytest.mark.parametrize("target", TARGETS)
def test_one_batch_with_a_live_mcp_tool_is_answered_once_each(
    target: str, run: str, http_url: str
) -> None:
    chef = ContextChef(default_defer=True, pin=["^read_file$", "^delete_file$", "^fixture__echo$"])
    chef.register_tools([read_file, delete_file, get_weather])
    chef.set_blocked_tools(["^delete_file$"])
    chef.set_system_prompt("You are careful.")
    chef.set_history([user("Weather, a.txt, and say hello through the server.")])
    hooks = Hooks(chef)
    fake = fake_for(target).script(
        tool_calls(*BATCH),
        tool_calls(("defer_execute", {"tool_name": "get_weather", "params": {"city": "Oslo"}})),
        text("Done."),
    )
    with McpHub(chef, [McpServer(url=http_url, name="fixture")]):
        answered = loop(chef, target, fake, run)
    assert fake.violations == ()
    assert len(fake.requests) == 3
    first, second = answered
    search, read, echo, blocked = first
    assert not search.is_error and "get_weather" in search.content
    assert (read.content, read.is_error) == ("contents of a.txt", False)
    assert (echo.content, echo.is_error) == ("hello from mcp", False)
    assert blocked.is_error and "blocked" in blocked.content
    assert (second[0].content, second[0].is_error) == ("sunny in Oslo", False)
    turns = [m for m in chef.history if m.role == "assistant"]
    ids = [p.id for p in turns[0].parts if isinstance(p, ToolCall)]
    assert [r.call_id for r in first] == ids
    ran = [ids[0], ids[1], ids[2], second[0].call_id]
    assert hooks.before == Counter(ran) and hooks.after == Counter(ran)
    expected: list[Any] = ids if target != "gemini" else [name for name, _ in BATCH]
    assert sent_results(target, fake.requests[1].body) == expected


def test_a_live_mcp_tool_on_stateful_interactions(http_url: str) -> None:
    """Issue 26: an MCP tool in a chained (``store: True``) Interactions session."""
    chef = ContextChef(default_defer=True, pin=["^read_file$", "^fixture__echo$"])
    chef.register_tools([read_file, get_weather])
    chef.set_history([user("Say hello through the server, then read a.txt.")])
    fake = fake_for("gemini-interactions").script(
        tool_calls(("fixture__echo", {"text": "hello from mcp"}), reasoning="echo"),
        tool_calls(("read_file", {"path": "a.txt"}), reasoning="read"),
        text("Done."),
    )
    bodies = []
    with McpHub(chef, [McpServer(url=http_url, name="fixture")]):
        for _ in range(3):
            request = chef.compile("gemini-interactions", model="m", extra={"store": True})
            bodies.append(request.payload)
            if not chef.run_tools(chef.ingest(send("gemini-interactions", fake, request.payload))):
                break
    assert fake.violations == () and len(bodies) == 3
    ids = [r.reply["id"] for r in fake.requests]
    assert [b.get("previous_interaction_id") for b in bodies] == [None, *ids[:2]]
    echoed = bodies[1]["input"]
    assert [s["type"] for s in echoed] == ["function_result"]
    assert "hello from mcp" in str(echoed[0]["result"])
