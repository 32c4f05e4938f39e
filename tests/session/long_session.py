"""A long agent session driven through an official SDK against a `contextchef.testing` fake.

Every turn the host changes something (dynamic state always; announcements, the
blocklist, a runtime tool, memories at set turns) and the scripted model answers with a
signed thinking block and tool calls: reads, ``tool_search`` + ``defer_execute`` (or,
under ``anthropic-native``, the provider's search then the deferred tool by name: the
model cannot call a deferred tool nothing revealed), memory writes, a blocked call, the
runtime tool. Used by the append-only tests for every target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from contextchef import ContextChef, InMemoryStore, tool_results, user
from contextchef.session._request import CompiledRequest
from contextchef.testing import FakeProvider, Turn, provider_search, text, tool_calls
from contextchef.tools._catalogs import load_catalog

TURNS = 30


class Workspace(BaseModel):
    turn: int
    branch: str
    open_files: list[str]


def answer(**args: Any) -> str:
    """Every scripted tool's handler: its arguments, sorted."""
    return "ok: " + ", ".join(f"{k}={v}" for k, v in sorted(args.items()))


DEPLOY_PREVIEW: dict[str, Any] = {
    "name": "deploy_preview",
    "description": "Deploy a preview of a branch.",
    "input_schema": {
        "type": "object",
        "properties": {"branch": {"type": "string"}},
        "required": ["branch"],
    },
}
"""The runtime tool both scripted scenarios register mid-session."""


def build(catalogs: Path) -> ContextChef:
    """Filesystem tools resident, GitHub's deferred, a memory store, a system prompt."""
    chef = ContextChef(defer=["github__*"], memory=InMemoryStore())
    for name in ("mcp-filesystem", "github"):
        tools = load_catalog(catalogs / f"{name}.json").tools
        chef.register_tools(tools, handlers={t.name: answer for t in tools})
    chef.set_system_prompt("You are a careful coding agent.")
    chef.set_history([user("Triage the open issues and fix what you can.")])
    return chef


def script(native: bool) -> list[Turn]:
    """The model's 30 turns (every one signed; text-only turns end a task)."""
    issue = {"owner": "acme", "repo": "app", "title": "Crash on start"}
    find = (
        [
            provider_search(
                "github__create_issue",
                then=tool_calls(("github__create_issue", issue), reasoning=""),
            )
        ]
        if native
        else [
            tool_calls(("tool_search", {"queries": ["create issue"]}), reasoning=""),
            tool_calls(
                ("defer_execute", {"tool_name": "github__create_issue", "params": issue}),
                reasoning="Now file it.",
            ),
        ]
    )
    runtime = (
        [
            provider_search(
                "deploy_preview",
                then=tool_calls(("deploy_preview", {"branch": "fix"}), reasoning=""),
            )
        ]
        if native
        else [
            tool_calls(("tool_search", {"tool_names": ["deploy_preview"]}), reasoning=""),
            tool_calls(
                ("defer_execute", {"tool_name": "deploy_preview", "params": {"branch": "fix"}}),
                reasoning="",
            ),
        ]
    )
    turns: list[Turn] = [
        tool_calls(("filesystem__list_directory", {"path": "/repo"}), reasoning=""),
        tool_calls(
            ("filesystem__read_file", {"path": "/repo/a.py"}),
            ("filesystem__read_file", {"path": "/repo/b.py"}),
            reasoning="Read both.",
        ),
        *find,
        tool_calls(("create_memory", {"key": "repo", "value": "acme/app"}), reasoning=""),
        text("Filed the issue.", reasoning=""),
        tool_calls(
            ("filesystem__write_file", {"path": "/repo/a.py", "content": "x"}), reasoning=""
        ),
        tool_calls(
            ("filesystem__write_file", {"path": "/repo/b.py", "content": "y"}), reasoning=""
        ),
        tool_calls(("read_memories", {}), reasoning=""),
        *runtime,
        tool_calls(("modify_memory", {"key": "repo", "action": "delete"}), reasoning=""),
        text("Preview deployed.", reasoning="Done."),
    ]
    n = 0
    while len(turns) < TURNS:
        n += 1
        path = f"/repo/src/m{n}.py"
        turns.append(tool_calls(("filesystem__read_file", {"path": path}), reasoning=""))
    return turns[:TURNS]


@dataclass
class Run:
    """What one session sent and received."""

    requests: list[CompiledRequest] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)


def host_changes(chef: ContextChef, turn: int) -> None:
    """What the host changes before compiling `turn`."""
    chef.set_dynamic_state(Workspace(turn=turn, branch="fix", open_files=[f"m{turn}.py"]))
    if turn == 2:
        chef.announce("tools:added", "GitHub tools are searchable.")
    if turn == 4:
        chef.announce("mode", "Writes need review.", channel="system")
    if turn == 6:
        chef.set_blocked_tools(["filesystem__write_file"])
    if turn == 7:
        chef.register_runtime_tool(DEPLOY_PREVIEW, handler=answer)
    if turn == 12:
        chef.retract_announcement("tools:added")
    if turn == 20:
        chef.retract_announcement("mode")
        chef.set_blocked_tools([])


def drive(
    chef: ContextChef,
    fake: FakeProvider,
    send: Callable[[CompiledRequest], Any],
    compile_one: Callable[[ContextChef], CompiledRequest],
) -> Iterator[CompiledRequest]:
    """Run the session turn by turn; yield each compiled request after it was answered."""
    for turn in range(TURNS):
        host_changes(chef, turn)
        request = compile_one(chef)
        response = send(request)
        calls = chef.ingest(response)
        if calls:
            chef.append(tool_results([chef.execute(call).result for call in calls]))
        else:
            chef.append(user(f"Next task {turn}."))
        yield request
