"""A tool an MCP server adds mid-conversation, and the next worker that resumes it.

Worker 1 talks to a fresh `MCPServer` (``sdk_server.py``, a real process); the model
calls its ``grow`` tool, the server adds ``sprout`` and sends ``list_changed``, and the
session registers ``sdk__sprout`` as a runtime tool (deferred) that the snapshot
records. Worker 2 starts its own server process, which lists ``sprout`` from the start,
so its hub registers it as an ordinary server tool; restoring the conversation (from a
SQLite store, `SessionSync`) takes that tool as the conversation's runtime tool: the
worker resumes, its requests keep the cached prefix byte for byte, and worker 3 does
the same. Every request goes through the official Anthropic SDK to the fake, which
enforces the API's rules (``claude-opus-5-5``, with the ``tools`` changes of the native
strategies).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.types.beta import MessageCreateParams
from pydantic import TypeAdapter, ValidationError

from contextchef import CompiledRequest, ContextChef, DeferredConfig, ToolCall, ToolResult, user
from contextchef.mcp import McpHub, McpServer
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import FakeAnthropic, Ids, httpx_for, text, tool_calls
from sdk_check import _drain, key_problems, sdk_problems

SERVER = Path(__file__).with_name("sdk_server.py")
HX = httpx_for(anthropic)
MODEL = "claude-opus-5-5"
_BETA = TypeAdapter(MessageCreateParams)


def problems(request: CompiledRequest) -> list[str]:
    """The SDK request types' objections (tool changes: the beta types, with their header)."""
    if "anthropic-beta" not in request.headers:
        return sdk_problems("anthropic", request.payload)
    try:  # the adapter must outlive the lazy validators it returns
        _drain(_BETA.validate_python(request.payload))
    except ValidationError as exc:
        return [str(exc)]
    return key_problems(request.payload, MessageCreateParams)


def sdk_server(*args: str) -> McpServer:
    return McpServer(command=sys.executable, args=(str(SERVER), *args), timeout=30)


class Worker:
    """One worker process's turn: a new chef and hub, restored from the store."""

    def __init__(self, store: SQLiteSessionStore, server: McpServer, strategy: str) -> None:
        self.store, self.server, self.strategy = store, server, strategy
        self.requests: list[CompiledRequest] = []
        self.results: list[ToolResult] = []

    def run(self, ns: str, *script: Any) -> None:
        hubs: list[McpHub] = []

        def make() -> ContextChef:
            chef = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
            chef.set_system_prompt("You are a test agent.")
            hubs.append(McpHub(chef, [self.server]).start())
            return chef

        def turn(chef: ContextChef) -> None:
            chef.append(user(f"turn {ns}"))
            fake = FakeAnthropic(ids=Ids(ns)).script(*script)
            client = anthropic.Anthropic(
                api_key="x", max_retries=0, http_client=fake.http_client(HX)
            )
            while True:
                request = chef.compile("anthropic", model=MODEL, strategy=self.strategy)
                assert problems(request) == []
                self.requests.append(request)
                sent = client.messages.create(**request.payload, extra_headers=request.headers)
                results = chef.run_tools(chef.ingest(sent))
                self.results.extend(results or ())
                if not results:
                    break
            assert fake.violations == ()

        try:
            SessionSync(self.store, "c1").run_turn(make, turn)
        finally:
            for hub in hubs:
                hub.close()

    def answers(self) -> list[tuple[str, bool]]:
        """The tool results of the turns run, as (content, is_error)."""
        return [(r.content, r.is_error) for r in self.results]


def grown(tmp_path: Path, strategy: str) -> tuple[SQLiteSessionStore, Worker]:
    """Worker 1: the model grows ``sprout`` and searches for it; the turn is stored."""
    store = SQLiteSessionStore(str(tmp_path / "sessions.db"))
    first = Worker(store, sdk_server(), strategy)
    first.run(
        "a",
        tool_calls(("sdk__grow", {"name": "sprout"})),
        tool_calls(("tool_search", {"tool_names": ["sdk__sprout"]})),
        text("Grown."),
    )
    assert first.results[0].content == "added sprout"
    assert "sdk__sprout" in first.results[1].content
    return store, first


@pytest.mark.parametrize("strategy", ["client", "anthropic-native-client"])
def test_the_next_workers_resume_a_conversation_whose_server_added_a_tool(
    tmp_path: Path, strategy: str
) -> None:
    store, first = grown(tmp_path, strategy)
    last = first.requests[-1].segments
    for ns in ("b", "c"):  # worker 2, then worker 3: each its own server process
        worker = Worker(store, sdk_server("sprout"), strategy)
        direct = ("sdk__sprout", {"x": ns})  # loaded: the native strategy declares it
        via = ("defer_execute", {"tool_name": "sdk__sprout", "params": {"x": ns}})
        worker.run(ns, tool_calls(via if strategy == "client" else direct), text("Used."))
        assert [(r.content, r.is_error) for r in worker.results] == [(f"made{ns}", False)]
        resumed = worker.requests[0]
        assert resumed.edits == ()  # nothing sent is rewritten
        assert resumed.segments["system"] == last["system"]
        assert resumed.segments["tools"] == last["tools"]  # the cached prefix, byte for byte
        assert resumed.segments["messages"].startswith(last["messages"][:-1])
        last = worker.requests[-1].segments


def test_a_tool_the_server_now_defines_otherwise_is_taken_and_the_change_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, first = grown(tmp_path, "client")
    worker = Worker(store, sdk_server("sprout", "The sprout tool, grown up."), "client")
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        worker.run(
            "b",
            tool_calls(("tool_search", {"tool_names": ["sdk__sprout"]})),
            tool_calls(("defer_execute", {"tool_name": "sdk__sprout", "params": {}})),
            text("Used."),
        )
    assert "['sdk__sprout'] are registered here with another definition" in caplog.text
    found, used = worker.results
    assert "The sprout tool, grown up." in found.content and not used.is_error
    # the prefix stays (a deferred tool's definition lives in the search index)
    assert worker.requests[0].segments["tools"] == first.requests[-1].segments["tools"]


def test_an_mcpserver_tools_wrapped_result_is_not_sent_twice() -> None:
    """`MCPServer` wraps a ``str`` / ``int`` / ``list`` return in ``{"result": ...}``.

    The text blocks hold that value already (the text, its JSON, one block per list
    item): the result is the text alone, not the text and the same value again as JSON.
    """
    chef = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
    with McpHub(chef, [sdk_server()]) as hub:
        assert hub.definition("sdk__text")["outputSchema"]["required"] == ["result"]  # type: ignore[index]

        def call(name: str, n: int) -> str:
            return chef.execute(
                ToolCall(id=f"c_{name}", name=name, arguments={"n": n})
            ).result.content

        assert call("sdk__text", 500) == "y" * 500
        assert call("sdk__number", 12) == "144"
        assert call("sdk__numbers", 3) == "0\n\n1\n\n2"
