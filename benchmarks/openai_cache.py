"""OpenAI's prompt cache on gpt-5.6: explicit breakpoints (ours) vs implicit vs none.

Run:  python benchmarks/openai_cache.py

A 50-turn agent session on ``gpt-5.6`` through the official ``openai`` SDK against the
`contextchef.testing` fakes, once on Responses and once on Chat Completions. The filesystem
tools are resident and GitHub's deferred (client deferral); over the 50 turns the
scripted model discovers deferred tools with ``tool_search`` and calls them through
``defer_execute``, the host updates the dynamic state every 5th turn, announces and
retracts, changes the blocklist, registers a runtime tool that is then found and called,
and adds a user turn every 5th turn. Every request compiled is sent in three forms, each
to its own fake (same run, same requests; the session ingests the first one's replies):

* **explicit (ours)**: as compiled: a breakpoint at the end of each request's new
  entries, kept where it was on later requests; ``prompt_cache_options`` explicit;
* **implicit**: the same bytes without breakpoints and ``mode: implicit`` (the provider's
  default, what a byte-stable compiler without breakpoints gets: one implicit breakpoint
  at the latest message);
* **none**: no breakpoints and ``mode: explicit``: "the request does not use prompt
  caching".

The fakes' cache model is `contextchef.testing._openai_cache`: reads at the latest 80
breakpoints, at most 4 written per request, nothing under 1,024 tokens, token counts
estimated from the JSON. Cost is in units of one uncached input token: a cache read at
0.1 (assumed: the cached-input price of the GPT-5 family is a tenth of its input price)
and a write at 1.25 ("For GPT-5.6 models and later model families, cache writes cost
1.25x the uncached input token rate", research note §2.2). Output tokens are left out.
"""

from __future__ import annotations

import copy
import os
import platform
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from pydantic import BaseModel

from contextchef import ContextChef, tool_results, user
from contextchef.testing import FakeOpenAIChat, FakeProvider, FakeResponses, httpx_for
from contextchef.testing import tool_calls as scripted_calls
from contextchef.testing._openai_cache import CacheOutcome
from contextchef.testing._script import Turn
from contextchef.tools._catalogs import load_catalog

SHARED = Path(
    os.environ.get("CONTEXTCHEF_SHARED_DATA") or Path(__file__).parents[2] / "shared/data"
)
MODEL = "gpt-5.6"
TURNS = 50
READ, WRITE = 0.1, 1.25
VARIANTS = ("explicit", "implicit", "none")
DEPLOY_PREVIEW: dict[str, Any] = {
    "name": "deploy_preview",
    "description": "Deploy a preview of a branch.",
    "input_schema": {
        "type": "object",
        "properties": {"branch": {"type": "string"}},
        "required": ["branch"],
    },
}


class Workspace(BaseModel):
    branch: str
    open_files: list[str]


def answer(**args: Any) -> str:
    """Every tool's handler: its arguments, sorted, and some file-sized text."""
    listed = ", ".join(f"{k}={v}" for k, v in sorted(args.items()))
    return f"ok: {listed}\n" + "line of source code\n" * 40


def model_turn(turn: int) -> Turn:
    """The scripted model's turn `turn`: some text and its calls."""
    issue = {"owner": "acme", "repo": "app", "title": "Crash on start"}
    script: dict[int, list[tuple[str, dict[str, Any]]]] = {
        2: [("tool_search", {"queries": ["create an issue"]})],
        3: [("defer_execute", {"tool_name": "github__create_issue", "params": issue})],
        7: [("filesystem__write_file", {"path": "/repo/a.py", "content": "x"})],  # blocked
        10: [("tool_search", {"tool_names": ["github__list_pull_requests"]})],
        11: [
            (
                "defer_execute",
                {
                    "tool_name": "github__list_pull_requests",
                    "params": {"owner": "acme", "repo": "app"},
                },
            )
        ],
        14: [("tool_search", {"tool_names": ["deploy_preview"]})],
        15: [("defer_execute", {"tool_name": "deploy_preview", "params": {"branch": "fix"}})],
        22: [("filesystem__write_file", {"path": "/repo/a.py", "content": "y"})],
    }
    calls = script.get(turn, [("filesystem__read_file", {"path": f"/repo/src/m{turn}.py"})])
    return scripted_calls(*calls, text=f"Step {turn}.")


def host_changes(chef: ContextChef, turn: int) -> None:
    """What the host changes before compiling turn `turn`."""
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


def session() -> ContextChef:
    chef = ContextChef(defer=["github__*"], volatile_lint="off")
    for name in ("mcp-filesystem", "github"):
        tools = load_catalog(SHARED / "catalogs" / f"{name}.json").tools
        chef.register_tools(tools, handlers={t.name: answer for t in tools})
    chef.set_system_prompt("You are a careful coding agent. Work in small, reviewed steps.")
    chef.set_history([user("Triage the open issues and fix what you can.")])
    return chef


def _without_breakpoints(value: Any) -> Iterator[None]:
    if isinstance(value, dict):
        value.pop("prompt_cache_breakpoint", None)
        for inner in value.values():
            yield from _without_breakpoints(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _without_breakpoints(inner)


def variant(payload: dict[str, Any], name: str) -> dict[str, Any]:
    """`payload` as the `name` variant sends it (see the module docstring)."""
    if name == "explicit":
        return payload
    out = copy.deepcopy(payload)
    list(_without_breakpoints(out))
    out["prompt_cache_options"] = {"mode": "implicit" if name == "implicit" else "explicit"}
    return out


@dataclass(frozen=True)
class Figures:
    """One variant's totals over the session."""

    input_tokens: int
    cached_tokens: int
    written_tokens: int
    most_written: int
    """Most breakpoints written by one request."""
    refusals: int

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.input_tokens

    @property
    def cost(self) -> float:
        """In uncached input tokens (see the module docstring)."""
        plain = self.input_tokens - self.cached_tokens - self.written_tokens
        return plain + READ * self.cached_tokens + WRITE * self.written_tokens


def figures(outcomes: tuple[CacheOutcome, ...], refusals: int) -> Figures:
    return Figures(
        input_tokens=sum(o.input_tokens for o in outcomes),
        cached_tokens=sum(o.cached_tokens for o in outcomes),
        written_tokens=sum(o.written_tokens for o in outcomes),
        most_written=max(o.written for o in outcomes),
        refusals=refusals,
    )


def run(wire: str, turns: int = TURNS, variants: tuple[str, ...] = VARIANTS) -> dict[str, Figures]:
    """Drive the session on `wire` (``responses`` or ``chat``); figures per variant.

    The session ingests the replies of the first of `variants`.
    """
    make: Callable[[], FakeProvider] = FakeResponses if wire == "responses" else FakeOpenAIChat
    fakes = {name: make().script(*(model_turn(t) for t in range(turns))) for name in variants}
    clients = {
        name: openai.OpenAI(
            api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
        )
        for name, fake in fakes.items()
    }
    target = "responses" if wire == "responses" else "openai"
    chef = session()
    for turn in range(turns):
        host_changes(chef, turn)
        request = chef.compile(target, model=MODEL, strategy="client")
        replies = {}
        for name, client in clients.items():
            payload = variant(dict(request.payload), name)
            if wire == "responses":
                replies[name] = client.responses.create(**payload)
            else:
                replies[name] = client.chat.completions.create(**payload)
        calls = chef.ingest(replies[variants[0]])
        results = chef.run_tools(calls, append=False)
        task = f"Next task: file {turn + 1}." if turn % 5 == 4 else ""
        chef.append(tool_results(list(results), text=task))
    out = {}
    for name, fake in fakes.items():
        cache_outcomes = getattr(fake, "cache_outcomes")  # noqa: B009 - both OpenAI fakes
        out[name] = figures(cache_outcomes, len(fake.violations))
    return out


def main() -> None:
    print(
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, {os.cpu_count()} cores."
    )
    print("Command: `python benchmarks/openai_cache.py`.\n")
    print(
        "| wire | caching | input tokens | read from cache | written | cached share | "
        "most breakpoints written / request | refusals | cost (uncached = 1) | vs implicit |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for wire in ("responses", "chat"):
        found = run(wire)
        implicit = found["implicit"].cost
        for name, f in found.items():
            print(
                f"| {wire} | {name} | {f.input_tokens:,} | {f.cached_tokens:,} | "
                f"{f.written_tokens:,} | {f.cached_share:.1%} | {f.most_written} | "
                f"{f.refusals} | {f.cost:,.0f} | {f.cost / implicit:.2f}x |"
            )


if __name__ == "__main__":
    main()
