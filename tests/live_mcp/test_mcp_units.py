"""contextchef.mcp pieces that need no server: specs, content mapping, import cost."""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp_fixtures import fixture_stdio

from contextchef import ContextChef, UsageError
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


def test_import_contextchef_mcp_does_not_import_the_sdk() -> None:
    code = "import sys, contextchef, contextchef.mcp; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_hub_misuse_is_a_usage_error_and_names_must_differ() -> None:
    chef = ContextChef()
    hub = McpHub(chef)
    with pytest.raises(UsageError, match="not started"):
        hub.add_server(fixture_stdio())
    with McpHub(chef, [fixture_stdio()]) as hub:
        with pytest.raises(UsageError, match="no MCP server 'other'"):
            hub.remove_server("other")
        with pytest.raises(McpServerError, match="two MCP servers are named 'fixture'"):
            hub.add_server(fixture_stdio())
        assert hub.servers == ("fixture",)
