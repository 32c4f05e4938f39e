"""Deferred tools with no server are listed whole: past the budget, a warning says so.

Regression (breakit22): 900 deferred tools with no server made ``tool_search``'s
description 10,475 characters (671 under one server), and ``contextchef plan`` on a
23,000-tool catalog showed ``directory 241,944 / 8,000 (3024%)`` with no warning.
docs/guides/tool-search.md: only server groups share `DeferredConfig.directory_chars`.
What is rendered stays as it is (byte-stable prefixes); the warning names the cause and
the remedies.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import pytest
from typer.testing import CliRunner

from contextchef import ContextChef, tools_from_mcp, user
from contextchef.analysis import catalog_plan
from contextchef.cli import app
from contextchef.testing import FakeAnthropic, httpx_for, text

TOOLS = [
    {"name": f"tool_{i:05d}", "description": "does a thing", "inputSchema": {"type": "object"}}
    for i in range(900)
]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "deferred-name directory" in r.getMessage()
    ]


def _sent(tools: list[Any]) -> tuple[ContextChef, dict[str, Any]]:
    """One request through the SDK client against the fake; the tool_search entry sent."""
    chef = ContextChef(default_defer=True)
    chef.register_tools(tools)
    chef.set_history([user("x")])
    fake = FakeAnthropic().script(text("ok"))
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    request = chef.compile("anthropic", model="claude-opus-5-5", strategy="client")
    chef.ingest(client.messages.create(**request.payload, extra_headers=dict(request.headers)))
    assert not fake.violations
    search = next(t for t in request.payload["tools"] if t["name"] == "tool_search")
    return chef, search


def test_tools_with_no_server_past_the_budget_are_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="contextchef")
    chef, search = _sent(TOOLS)
    assert len(search["description"]) > chef.view.config.directory_chars  # rendered as before
    (warned,) = _warnings(caplog)
    assert "over its budget of 8,000 (DeferredConfig.directory_chars)" in warned
    assert "900 deferred tools with no server are listed whole" in warned
    assert "give those tools a server" in warned and "namespaces or toolkits" in warned
    assert catalog_plan(chef, "anthropic").directory_warning == warned.removeprefix("contextchef: ")


def test_the_same_tools_under_a_server_fit_and_are_not_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="contextchef")
    chef, search = _sent(tools_from_mcp({"tools": TOOLS}, server="srv"))
    assert len(search["description"]) < 1_000
    assert _warnings(caplog) == []
    assert catalog_plan(chef, "anthropic").directory_warning == ""


def test_plan_warns_on_stderr_and_in_json(tmp_path: Path) -> None:
    catalog = tmp_path / "loose.json"
    builtin = [{**t, "input_schema": t["inputSchema"]} for t in TOOLS]
    for t in builtin:
        del t["inputSchema"]
    catalog.write_text(json.dumps({"builtin_tools": builtin}), "utf-8")
    runner = CliRunner()
    shown = runner.invoke(app, ["plan", str(catalog), "--json"])
    assert shown.exit_code == 0, shown.output
    found = json.loads(shown.stdout)["directory_warning"]
    assert "900 deferred tools with no server are listed whole" in found
    # the table: the library's warning on stderr (its logger), once
    table = subprocess.run(
        [sys.executable, "-c", "from contextchef.cli import main; main()", "plan", str(catalog)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert table.returncode == 0, table.stderr
    assert table.stderr.count("contextchef: the deferred-name directory") == 1, table.stderr
    assert "directory, chars / budget" in table.stdout
