"""What a reveal costs per strategy: resident size, appended bytes, compile time.

Run:  python benchmarks/native_reveal.py

Every catalog in ../shared/data/catalogs registered in one session, every tool deferred
except the filesystem server's. A 40-turn agent loop on ``claude-opus-5-5`` (Anthropic:
prefix check and tool changes) and ``gpt-5.4`` (Responses): each turn appends the model's
call and its result; every 4th turn the host loads one more deferred tool (what a
``tool_search`` hit or a skill would do) and every 10th turn a mode hides GitHub's writers
for the next turns. For each strategy it reports:

* **resident**: characters of the ``tools`` entries the model sees at the start of a
  request (Anthropic: entries without ``defer_loading``; Responses: the whole array);
* **tools bytes stable**: whether the ``tools`` array sent at the first turn is a
  prefix of every later one (a reveal never rewrites it);
* **appended per reveal**: median bytes of new conversation input on the turns that
  reveal a tool, beyond the turn's own messages (measured against the same turn without
  a reveal in the ``client`` run is not possible, so the raw appended bytes are given);
* **edits**: requests that had to re-send something already sent (`CompiledRequest.edits`);
* **compile ms (x)**: median compile time, and its ratio to ``json.dumps`` of the same
  payload measured in the same run (what the SDK pays anyway).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from contextchef import ContextChef, ToolCall, ToolResult, assistant, tool_results, user
from contextchef.tools._catalogs import load_catalog

SHARED = Path(
    os.environ.get("CONTEXTCHEF_SHARED_DATA") or Path(__file__).parents[2] / "shared/data"
)
RUNS = (
    ("anthropic", "claude-opus-5-5", "client"),
    ("anthropic", "claude-opus-5-5", "anthropic-native"),
    ("anthropic", "claude-opus-5-5", "anthropic-native-client"),
    ("anthropic", "claude-opus-5-5", "anthropic-inline"),
    ("anthropic", "claude-sonnet-4-5", "anthropic-native-client"),
    ("responses", "gpt-5.4", "client"),
    ("responses", "gpt-5.4", "openai-native"),
    ("responses", "gpt-5.4", "openai-native-client"),
)
TURNS = 40


def session() -> tuple[ContextChef, list[str]]:
    modes = {
        "no_github_writes": ["filesystem__*", "github__get_*", "github__list_*", "github__search_*"]
    }
    chef = ContextChef(default_defer=True, pin=["filesystem__*"], modes=modes)
    names: list[str] = []
    for path in sorted((SHARED / "catalogs").glob("*.json")):
        catalog = load_catalog(path)
        try:
            chef.register_tools(catalog.tools)
        except Exception:
            continue
        names += [chef.wire_name(t.name, server=t.server) for t in catalog.tools]
    chef.set_system_prompt("You are a careful coding agent.")
    chef.set_history([user("Work through the backlog.")])
    deferred = sorted(n for n in names if not n.startswith("filesystem__"))
    return chef, deferred


def resident(target: str, payload: dict[str, object]) -> int:
    """Characters of what the model sees of ``tools`` at the start of a request.

    Anthropic strips ``defer_loading`` entries; OpenAI shows a deferred function's name and
    description and a namespace's name and description (its guide, "Tool search").
    """
    tools = payload.get("tools") or []
    assert isinstance(tools, list)
    seen: list[object] = []
    for tool in tools:
        if tool.get("defer_loading"):
            if target == "responses":
                seen.append({"name": tool["name"], "description": tool.get("description")})
        elif tool.get("type") == "namespace":
            seen.append({"name": tool["name"], "description": tool["description"]})
        else:
            seen.append(tool)
    return len(json.dumps(seen))


def run(target: str, model: str, strategy: str) -> dict[str, float | str]:
    chef, deferred = session()
    reveals = iter(deferred[::7])
    first_tools = ""
    stable = True
    appended: list[int] = []
    compile_ms: list[float] = []
    ratios: list[float] = []
    edits = 0
    previous = 0
    res = 0
    for turn in range(TURNS):
        revealing = turn % 4 == 3
        if revealing:
            chef._state.loaded.add(next(reveals))  # a host load (skills, toolkits do this)
        if turn % 10 == 5:
            chef.set_mode("no_github_writes")
        elif turn % 10 == 8:
            chef.set_mode(None)
        t0 = time.perf_counter()
        request = chef.compile(target, model=model, strategy=strategy)
        compile_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        json.dumps(request.payload)
        ratios.append(compile_ms[-1] / ((time.perf_counter() - t0) * 1000))
        tools = json.dumps(request.payload.get("tools"))
        if turn == 0:
            first_tools, res = tools, resident(target, request.payload)
        stable = stable and tools.startswith(first_tools[:-1])
        edits += bool(request.edits)
        size = len(request.segments["messages"])
        if revealing and turn:
            appended.append(size - previous)
        previous = size
        call = ToolCall(id=f"call_{turn}", name="filesystem__read_file", arguments={"path": "a"})
        chef.append(assistant("", [call]))
        chef.append(tool_results([ToolResult(call_id=call.id, name=call.name, content="x" * 200)]))
    return {
        "resident": res,
        "stable": "yes" if stable else "no",
        "appended": statistics.median(appended) if appended else 0,
        "edits": edits,
        "ms": statistics.median(compile_ms),
        "x": statistics.median(ratios),
    }


def main() -> None:
    print(
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, {os.cpu_count()} cores."
    )
    print("Command: `python benchmarks/native_reveal.py`.\n")
    print(
        "| target | model | strategy | resident chars | tools bytes stable | "
        "appended on a reveal turn, bytes | edits | compile ms (x json.dumps) |"
    )
    print("|---|---|---|---:|---|---:|---:|---:|")
    for target, model, strategy in RUNS:
        m = run(target, model, strategy)
        print(
            f"| {target} | {model} | {strategy} | {m['resident']:,} | {m['stable']} | "
            f"{m['appended']:,.0f} | {m['edits']} | {m['ms']:.2f} ({m['x']:.2f}x) |"
        )


if __name__ == "__main__":
    main()
