"""A misspelled tool name is answered with the namespace actions it may have meant.

A namespace's sub-tools are not in the tool index (they are reached only through their
namespace tool), so the gate's "Did you mean" never named them: a model that called
``read_fil`` in a session whose file tools sit in a namespace got no lead at all. The
answer now names such an action the way the model calls it, ``fs({"action": "read_file",
"args": {...}})``, and only when it is callable now (mode, blocklist, the namespace not
blocked). The catalog is the real MCP filesystem server's (../shared/data); each case is
a model's turn through the official SDK clients against the fakes, and the next turn
calls the suggestion.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import ContextChef, ToolResult, user
from contextchef.testing import FakeProvider, fake_for, text, tool_calls

READ = 'fs({"action": "read_file", "args": {...}})'


def ran(call: Any, allowed: Any) -> str:
    return f"ran {allowed.wire_name}"


def _session(catalogs_dir: Path, **kwargs: Any) -> ContextChef:
    catalog = json.loads((catalogs_dir / "mcp-filesystem.json").read_text("utf-8"))
    chef = ContextChef(**kwargs)
    chef.register_namespaces(
        [{"name": "fs", "description": catalog["description"], "tools": catalog["tools"]}]
    )
    chef.register_tools([{"name": "read_fila", "description": "A tool spelled alike."}])
    chef.set_history([user("Read the notes file.")])
    return chef


def _turn(chef: ContextChef, fake: FakeProvider, target: str, name: str, args: Any) -> ToolResult:
    """The model calls `name`; the session answers it; the model's next reply is text."""
    fake.script(tool_calls((name, args)), text("ok"))
    found = chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
    (result,) = chef.run_tools(found, fallback=ran)
    chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
    assert fake.violations == ()
    chef.append(user("next"))
    return result


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_a_misspelled_name_is_answered_with_the_namespace_action(
    target: str, catalogs_dir: Path
) -> None:
    chef, fake = _session(catalogs_dir), fake_for(target)
    denied = _turn(chef, fake, target, "read_fil", {"path": "notes.md"})
    assert denied.is_error and denied.content.startswith('Unknown tool "read_fil". Did you mean ')
    assert READ in denied.content and '"read_fila"' in denied.content
    assert denied.content.count('fs({"action"') == 1  # read_text_file is not spelled alike
    # the next turn calls it as suggested: it runs, under the sub-tool's own name
    ran_it = _turn(chef, fake, target, "fs", {"action": "read_file", "args": {"path": "n.md"}})
    assert (ran_it.is_error, ran_it.content) == (False, "ran read_file")
    # a case slip of the action's name is named too
    assert READ in _turn(chef, fake, target, "READ_FILE", {"path": "n.md"}).content


def test_only_actions_callable_now_are_named(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir, modes={"writes": ["write_file", "edit_file", "read_fila"]})
    fake = fake_for("anthropic")
    chef.set_blocked_tools(["read_file"])
    denied = _turn(chef, fake, "anthropic", "read_fil", {})
    assert READ not in denied.content and '"read_fila"' in denied.content
    assert (
        'fs({"action": "list_directory"'
        in _turn(chef, fake, "anthropic", "list_directorys", {}).content
    )
    chef.set_blocked_tools(["fs"])  # a blocked namespace blocks every action through it
    denied = _turn(chef, fake, "anthropic", "read_fil", {})
    assert 'fs({"action"' not in denied.content and '"read_fila"' in denied.content
    chef.set_blocked_tools([])
    chef.set_mode("writes")  # the read actions are outside the mode
    denied = _turn(chef, fake, "anthropic", "read_fil", {})
    assert 'fs({"action"' not in denied.content
    assert 'fs({"action": "write_file"' in _turn(chef, fake, "anthropic", "writefile", {}).content
