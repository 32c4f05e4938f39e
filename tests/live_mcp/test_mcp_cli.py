"""``contextchef plan|search --mcp/--mcp-url`` read live servers' tools/list."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator

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
