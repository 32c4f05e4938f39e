"""``contextchef plan|search --mcp/--mcp-url`` read live servers' tools/list."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_fixtures import SERVER, http_server
from typer.testing import CliRunner

from contextchef.cli import app

runner = CliRunner()
TIME = shlex.join([sys.executable, "-m", "mcp_server_time"])
FIXTURE = shlex.join([sys.executable, str(SERVER), "stdio", "3"])


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The fixture server over streamable HTTP, shared by this module's tests."""
    with http_server() as (_, url):
        yield url


def test_plan_counts_the_tools_of_live_stdio_and_http_servers(http_url: str) -> None:
    out = runner.invoke(app, ["plan", "--json", "--mcp", TIME, "--mcp", FIXTURE])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["tools_total"] == 10  # 2 from mcp-server-time, 8 from the fixture (3 pages)
    assert report["largest_tool"] == "mcp-time__convert_time"
    # the same fixture over streamable HTTP
    http = runner.invoke(app, ["plan", "--json", "--mcp", TIME, "--mcp-url", http_url])
    assert http.exit_code == 0, http.output
    assert json.loads(http.output)["tools_total"] == 10


def test_search_ranks_a_live_servers_tools() -> None:
    out = runner.invoke(app, ["search", "convert a time between zones", "--json", "--mcp", TIME])
    assert out.exit_code == 0, out.output
    hits = json.loads(out.output)["results"]
    assert hits[0]["name"] == "mcp-time__convert_time" and hits[0]["origin"] == "mcp-time"


def test_a_server_that_does_not_start_is_reported_not_raised() -> None:
    out = runner.invoke(app, ["search", "x", "--mcp", "/nonexistent/mcp-server"])
    assert out.exit_code != 0
    assert "could not be connected" in out.output


@pytest.mark.parametrize("command", ["plan", "search"])
def test_an_mcp_url_that_is_not_a_url_is_refused_and_never_run(command: str, tmp_path: Any) -> None:
    """Break-it 37: ``--mcp-url "touch FILE"`` started ``touch`` (the value was taken as a
    command line, as ``--mcp`` takes it). A deployment filling the option from its settings
    would run whatever it held."""
    marker = tmp_path / "ran"
    words = [command, *(["x"] if command == "search" else [])]
    out = runner.invoke(app, [*words, "--mcp-url", f"touch {marker}"])
    assert out.exit_code == 2, out.output
    assert not marker.exists()
    assert "McpServer url must be an http:// or https:// URL" in out.output
    assert f"'touch {marker}'" in out.output


def test_an_upper_case_scheme_is_a_url_for_mcp_too() -> None:
    from contextchef.mcp import McpServer

    assert McpServer.parse("HTTPS://example.com/mcp").url == "HTTPS://example.com/mcp"
    assert McpServer(url="Http://127.0.0.1:1/mcp").command is None
