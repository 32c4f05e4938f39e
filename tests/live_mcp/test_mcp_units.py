"""contextchef.mcp pieces that need no server: specs, content mapping, import cost."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from mcp_fixtures import fixture_stdio

from contextchef import (
    ContextChef,
    DeferredConfig,
    Tool,
    ToolCall,
    UnknownToolError,
    UsageError,
    assistant,
    user,
)
from contextchef.mcp import McpHub, McpServer, McpServerError, result_from_mcp


def test_a_server_spec_is_a_command_or_a_url() -> None:
    assert McpServer.parse("uvx mcp-server-time --local-timezone 'Europe/Paris'") == McpServer(
        command="uvx", args=("mcp-server-time", "--local-timezone", "Europe/Paris")
    )
    assert McpServer.parse("http://127.0.0.1:9/mcp", name="web").url == "http://127.0.0.1:9/mcp"
    for bad in (
        lambda: McpServer(),
        lambda: McpServer(command="x", url="http://y"),
        lambda: McpServer(command="x", timeout=0),
        lambda: McpServer(command="x", connect_timeout=True),
        lambda: McpServer(command="x", protocol="2026-07-28"),  # type: ignore[arg-type]
        lambda: McpServer.parse("python 'unbalanced"),
        lambda: McpServer.parse("   "),
    ):
        with pytest.raises(UsageError):
            bad()


def test_content_that_a_tool_result_cannot_carry_becomes_text() -> None:
    raw = {
        "content": [
            {"type": "text", "text": '{"a": 1}'},
            {
                "type": "resource",
                "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": "AAAA"},
            },
            {"type": "resource_link", "uri": "file:///x", "name": "x"},
            {"type": "hologram"},
        ],
        "structuredContent": {"a": 1},  # already in the text block: not repeated
    }
    result = result_from_mcp(raw, call_id="c", name="t")
    assert result.content == "\n\n".join(
        [
            '{"a": 1}',
            "[resource file:///r.pdf: application/pdf, 3 bytes, not shown]",
            "[resource link: x file:///x]",
            "[hologram content not shown]",
        ]
    )
    assert result.media == () and not result.is_error
    failed = result_from_mcp({"content": [], "isError": True}, call_id="c", name="t")
    assert failed.is_error and failed.content == ""


def test_a_wrapped_result_the_text_holds_is_not_repeated() -> None:
    """``{"result": value}`` (the SDK's MCPServer wrapping) held by the text is dropped."""

    def content(blocks: list[str], structured: object) -> str:
        raw = {"content": [{"type": "text", "text": t} for t in blocks]}
        return result_from_mcp(
            {**raw, "structuredContent": structured}, call_id="c", name="t"
        ).content

    assert content(["yyy"], {"result": "yyy"}) == "yyy"  # a str return
    assert content(["144"], {"result": 144}) == "144"  # a number: its JSON
    assert content(['{\n  "a": [1]\n}'], {"result": {"a": [1]}}) == '{\n  "a": [1]\n}'
    assert content(["a", "1"], {"result": ["a", 1]}) == "a\n\n1"  # a list: a block per item
    assert content(["yyy"], {"result": "yyy", "more": 1}) == 'yyy\n\n{"result":"yyy","more":1}'
    assert content(["short"], {"result": "longer"}) == 'short\n\n{"result":"longer"}'
    assert content(["a"], {"result": ["a", "b"]}) == 'a\n\n{"result":["a","b"]}'
    assert content([], {"result": []}) == '{"result":[]}'
    assert content(["144"], {"result": "144"}) == "144"  # a str return that looks like JSON
    assert content(["144"], {"value": 144}) == '144\n\n{"value":144}'


def test_import_contextchef_mcp_does_not_import_the_sdk() -> None:
    code = "import sys, contextchef, contextchef.mcp; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_hub_misuse_is_a_usage_error_and_names_must_differ() -> None:
    chef = ContextChef()
    for args in [(object(), []), (chef, 5), (chef, [5]), (chef, {"a": "b"})]:
        with pytest.raises(UsageError):
            McpHub(*args)  # type: ignore[arg-type]
    hub = McpHub(chef)
    with pytest.raises(UsageError, match="not started"):
        hub.add_server(fixture_stdio())
    with McpHub(chef, [fixture_stdio()]) as hub:
        with pytest.raises(UsageError, match="no MCP server 'other'"):
            hub.remove_server("other")
        with pytest.raises(McpServerError, match="two MCP servers are named 'fixture'"):
            hub.add_server(fixture_stdio())
        assert hub.servers == ("fixture",)


def test_replace_tool_keeps_the_prefix_of_a_deferred_tool_and_edits_a_resident_one() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    chef = ContextChef(pin=["keep"])
    chef.register_tools(
        [Tool(name="keep", input_schema=schema), Tool(name="later", defer_loading=True)]
    )
    with pytest.raises(UsageError, match="takes a Tool"):
        chef.replace_tool("later")  # type: ignore[arg-type]
    with pytest.raises(UnknownToolError):
        chef.replace_tool(Tool(name="nope"))
    chef.append(user("hi"))
    first = chef.compile("anthropic")
    old = chef.replace_tool(Tool(name="later", description="Now documented.", defer_loading=True))
    assert old.description == "" and chef.registry.by_wire_name("later").description
    chef.append(assistant("ok"), user("again"))
    second = chef.compile("anthropic")
    assert second.edits == () and second.segments["tools"] == first.segments["tools"]
    assert (
        "Now documented."
        in chef.execute(
            ToolCall(id="s", name="tool_search", arguments={"tool_names": ["later"]})
        ).result.content
    )
    # a resident tool's new schema is what the gate checks from now on; tools changes
    chef.replace_tool(Tool(name="keep", input_schema={"type": "object", "properties": {}}))
    assert chef.check_tool_call(ToolCall(id="k", name="keep", arguments={})).decision == "allowed"
    chef.append(assistant("ok"), user("once more"))
    third = chef.compile("anthropic")
    assert third.segments["tools"] != first.segments["tools"] and third.edits


def test_a_runtime_tool_keeps_its_server_through_a_snapshot() -> None:
    chef = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
    chef.register_tools([Tool(name="local")])
    added = chef.register_runtime_tool(Tool(name="lookup", server="srv", source="mcp"))
    assert (added.source, added.server, chef.wire_name("lookup", server="srv")) == (
        "runtime",
        "srv",
        "srv__lookup",
    )
    chef.append(user("hi"))
    chef.compile("anthropic")
    other = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
    other.register_tools([Tool(name="local")])
    other.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True)
    restored = other.registry.by_wire_name("srv__lookup")
    assert restored is not None and restored.server == "srv" and restored.source == "runtime"
    assert other.compile("anthropic").segments == chef.compile("anthropic").segments
