"""The 50-turn cache scenario of issue 13: a long session whose prefix should stay cached.

A coding agent with the filesystem tools resident and GitHub's deferred (client
deferral). Over 50 turns the host and the scripted model do everything that could break
a prompt cache: discover deferred tools through ``tool_search`` and call them through
``defer_execute``, change the blocklist (and hit it), announce and retract, update the
dynamic state, make a runtime tool that is found and called, and compact the history once
(`COMPACTION_TURN`). Each compiled request is measured with `CacheMeter`. Used by
tests/session/test_replay_scenario.py (values) and benchmarks/replay.py (figures).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from long_session import DEPLOY_PREVIEW, answer
from pydantic import BaseModel

from contextchef import ContextChef, ToolCall, assistant, tool_results, user
from contextchef.analysis._replay import CacheMeter, ReplayPricing, TurnFigures
from contextchef.session._request import CompiledRequest
from contextchef.tools._catalogs import load_catalog

TURNS = 50
COMPACTION_TURN = 30
"""The turn whose request is the first after the compaction."""


class Workspace(BaseModel):
    branch: str
    open_files: list[str]


def _summary(transcript: str) -> str:
    return f"Summary of {transcript.count(chr(10)) + 1} lines: issues triaged, two files fixed."


@dataclass
class ScenarioRun:
    """What the scenario sent, and each request's figures."""

    requests: list[CompiledRequest] = field(default_factory=list)
    figures: list[TurnFigures] = field(default_factory=list)

    @property
    def cached_share(self) -> float:
        """Estimated cached input tokens over all input tokens, every turn."""
        read = sum(f.cache_read_tokens_est for f in self.figures)
        return read / sum(f.input_tokens_est for f in self.figures)


def _model_turn(turn: int) -> list[ToolCall]:
    """The scripted model's calls at `turn` (ids unique per turn)."""

    def call(name: str, **arguments: Any) -> ToolCall:
        return ToolCall(id=f"call_{turn}_{name}", name=name, arguments=arguments)

    issue = {"owner": "acme", "repo": "app", "title": "Crash on start"}
    script: dict[int, list[ToolCall]] = {
        2: [call("tool_search", queries=["create an issue"])],
        3: [call("defer_execute", tool_name="github__create_issue", params=issue)],
        7: [call("filesystem__write_file", path="/repo/a.py", content="x")],  # blocked
        10: [call("tool_search", tool_names=["github__list_pull_requests"])],
        11: [
            call(
                "defer_execute",
                tool_name="github__list_pull_requests",
                params={"owner": "acme", "repo": "app"},
            )
        ],
        14: [call("tool_search", tool_names=["deploy_preview"])],
        15: [call("defer_execute", tool_name="deploy_preview", params={"branch": "fix"})],
        22: [call("filesystem__write_file", path="/repo/a.py", content="y")],  # allowed again
    }
    return script.get(turn, [call("filesystem__read_file", path=f"/repo/src/m{turn}.py")])


def _host_changes(chef: ContextChef, turn: int) -> None:
    if turn % 5 == 0:
        chef.set_dynamic_state(Workspace(branch="fix", open_files=[f"m{turn}.py"]))
    if turn == 4:
        chef.announce("tools:added", "GitHub tools are searchable.")
    if turn == 6:
        chef.set_blocked_tools(["filesystem__write_file"])
    if turn == 12:
        chef.register_runtime_tool(DEPLOY_PREVIEW, handler=answer)
    if turn == 18:
        chef.retract_announcement("tools:added")
    if turn == 20:
        chef.set_blocked_tools([])
    if turn == COMPACTION_TURN:
        done = chef.compact(_summary, keep_recent_turns=2)
        assert done.summary_text, "the scenario's compaction summarized nothing"


def run_scenario(
    catalogs: Path, target: str = "anthropic", *, pricing: ReplayPricing | None = None
) -> ScenarioRun:
    """Drive the 50 turns for `target` under client deferral; measure every request."""
    chef = ContextChef(defer=["github__*"], volatile_lint="off")
    for name in ("mcp-filesystem", "github"):
        tools = load_catalog(catalogs / f"{name}.json").tools
        chef.register_tools(tools, handlers={t.name: answer for t in tools})
    chef.set_system_prompt("You are a careful coding agent. Work in small, reviewed steps.")
    chef.set_history([user("Triage the open issues and fix what you can.")])
    meter = CacheMeter(pricing)
    run = ScenarioRun()
    for turn in range(TURNS):
        _host_changes(chef, turn)
        request = chef.compile(target, model="model", strategy="client")
        run.requests.append(request)
        run.figures.append(meter.measure(request))
        calls = _model_turn(turn)
        chef.append(assistant(f"Step {turn}.", tool_calls=calls))
        task = f"Next task: file {turn + 1}." if turn % 5 == 4 else ""  # a user turn
        chef.append(tool_results([chef.execute(c).result for c in calls], text=task))
    return run
