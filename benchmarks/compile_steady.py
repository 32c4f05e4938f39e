"""Cost of a compile once the ledger holds the conversation (append-only sessions).

Run:  python benchmarks/compile_steady.py

A session with a real catalog (the filesystem and GitHub MCP catalogs from
../shared/data, GitHub deferred), dynamic state, and a history of N messages built as an
agent loop would: user text, assistant reasoning + tool call, tool result, assistant text.
For N = 1,000 and 5,000 messages and every target, it measures:

* **cold**: the first compile of the whole history (a new session, restored from a
  snapshot taken before any compile, so nothing is recorded; its tool view is built
  first, since that is the catalog's cost, not the history's); median of 3;
* **steady**: after the ledger holds the conversation, append 2 messages (the model's
  turn and a tool result) and compile; median of 20;
* **resumed**: a new session restored from a snapshot taken after that (the ledger
  comes with it), 2 messages appended, compiled: what a worker that picks the
  conversation up pays per request; median of 3;

against the baseline measured in the same run: ``json.dumps`` of the full payload the
compile returned, as plain dicts and lists (what the SDK does with it anyway; the
Anthropic and OpenAI SDKs copy the params they know into new dicts before serializing),
best of 7. Targets (issue "Append-only sessions"): steady <= 0.2x and cold <= 1x of that
baseline.

A second table measures, in the same run, what making the recorded entries read-only
costs (`contextchef._records.record`, applied once per new wire entry): each figure with
it ("read-only") and with it replaced by the identity ("aliased", how compiles ran before
the guard, when an edit of a payload leaked into later requests), the two measured
alternately step by step (same sessions, same load); and what recording every entry
of the conversation costs (best of 7, in turns with ``json.dumps``): what a cold
compile adds, once per conversation and target; and ``json.dumps`` of the payload as
returned (read-only records) against the plain baseline.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import contextchef.providers.anthropic._render as anthropic_render
import contextchef.session._compile as compile_module
from contextchef import ContextChef, ToolCall, ToolResult, assistant, tool_results, user
from contextchef._records import plain, record
from contextchef.history._messages import Message, ReasoningPart
from contextchef.tools._catalogs import load_catalog

SHARED = Path(
    os.environ.get("CONTEXTCHEF_SHARED_DATA") or Path(__file__).parents[2] / "shared/data"
)
TARGETS = ("anthropic", "openai", "responses", "gemini")
MODEL = {"anthropic": "claude-opus-5-5"}
ENTRIES = {
    "anthropic": "messages",
    "openai": "messages",
    "responses": "input",
    "gemini": "contents",
}


class State(BaseModel):
    turn: int
    branch: str


def rounds(start: int, count: int) -> list[Message]:
    """`count` agent rounds of 4 messages each (ids from `start`)."""
    out: list[Message] = []
    for r in range(start, start + count):
        out.append(user(f"step {r}: look at src/{r}.py and fix the failing test"))
        out.extend(turn(r))
        out.append(assistant(f"fixed step {r}: the off-by-one in the loop bound"))
    return out


def turn(r: int) -> list[Message]:
    """The model's turn with one call, and its result (2 messages)."""
    reasoning = ReasoningPart(
        provider="anthropic",
        text="",
        provider_data={
            "provider": "anthropic",
            "block": {"type": "thinking", "thinking": "", "signature": f"sig{r:06d}" * 8},
        },
    )
    call = ToolCall(
        id=f"toolu_{r:06d}", name="filesystem__read_file", arguments={"path": f"{r}.py"}
    )
    result = ToolResult(call_id=call.id, name=call.name, content=f"def f{r}(x):\n" + "    y\n" * 60)
    return [Message(role="assistant", parts=(reasoning, call)), tool_results([result])]


def session(messages: list[Message]) -> ContextChef:
    chef = ContextChef(defer=["github__*"])
    for name in ("mcp-filesystem", "github"):
        chef.register_tools(load_catalog(SHARED / "catalogs" / f"{name}.json").tools)
    chef.set_system_prompt("You are a careful coding agent.")
    chef.set_dynamic_state(State(turn=0, branch="main"))
    chef.set_history(messages)
    return chef


def fastest(*fns: Any, repeat: int) -> list[float]:
    """Best time of each of `fns` in ms, run in turns (a burst of load hits all alike)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, kept in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            kept.append(time.perf_counter() - t0)
    return [min(kept) * 1000 for kept in times]


def fresh(snap: dict[str, Any]) -> ContextChef:
    """A new session restored from `snap`, its tool view built (catalog cost excluded)."""
    chef = ContextChef(defer=["github__*"])
    for name in ("mcp-filesystem", "github"):
        chef.register_tools(load_catalog(SHARED / "catalogs" / f"{name}.json").tools)
    chef.restore(snap, allow_unsigned=True)
    assert chef.view is not None
    return chef


def timed(chef: ContextChef, target: str, model: str) -> float:
    t0 = time.perf_counter()
    chef.compile(target, model=model)
    return (time.perf_counter() - t0) * 1000


def measure(target: str, size: int) -> tuple[dict[str, float], dict[str, float]]:
    """Figures with read-only records, and with aliased entries (before the guard).

    The two are measured alternately, step by step, so a change in the machine's load
    affects both alike.
    """
    history = [*rounds(0, size // 4 - 1), user("next: the flaky test in src/last.py")]
    model = MODEL.get(target, "model-x")
    runs: dict[bool, dict[str, list[float]]] = {
        on: {"cold": [], "steady": [], "resumed": []} for on in (True, False)
    }
    before = session(history).snapshot()  # nothing compiled yet
    for k in range(6):
        chef = fresh(before)
        guarded(k % 2 == 0)
        runs[k % 2 == 0]["cold"].append(timed(chef, target, model))
    guarded(True)
    chef = session(history)
    payload = chef.compile(target, model=model).payload
    mutable = plain(payload)  # plain dicts and lists, as an SDK serializes them
    entries = mutable[ENTRIES[target]]  # as rendered, before they are recorded
    gc.collect()  # the young objects the set-up left would otherwise trigger full GCs
    dumps_ms, record_ms, dumps_records_ms = fastest(
        lambda: json.dumps(mutable),
        lambda: [record(e) for e in entries],
        lambda: json.dumps(payload),
        repeat=7,
    )
    for k in range(40):
        chef.append(*turn(100_000 + k))
        chef.set_dynamic_state(State(turn=k + 1, branch="main"))
        guarded(k % 2 == 0)
        runs[k % 2 == 0]["steady"].append(timed(chef, target, model))
    after = chef.snapshot()  # the ledger holds the conversation
    for k in range(6):
        other = fresh(after)
        other.append(*turn(200_000 + k))
        guarded(k % 2 == 0)
        runs[k % 2 == 0]["resumed"].append(timed(other, target, model))
    guarded(True)
    out = tuple(
        {
            "dumps": dumps_ms,
            "dumps_records": dumps_records_ms,
            "bytes": len(json.dumps(payload)),
            "record": record_ms,
            **{name: statistics.median(times) for name, times in runs[on].items()},
        }
        for on in (True, False)
    )
    return out[0], out[1]


def guarded(on: bool) -> None:
    """Record new wire entries read-only (`on`), or hand them out as built (before)."""
    chosen = record if on else (lambda value: value)
    compile_module.record = chosen  # type: ignore[attr-defined]
    anthropic_render.record = chosen  # type: ignore[attr-defined]


def main() -> None:
    # histories are built by hand here: the unrecorded-thinking warning is expected
    logging.getLogger("contextchef").setLevel(logging.ERROR)
    print(
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, {os.cpu_count()} cores."
    )
    print("Command: `python benchmarks/compile_steady.py`.\n")
    print(
        "| target | messages | payload KB | json.dumps ms | cold compile ms (x) | "
        "steady compile ms (x) | resumed compile ms (x) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    compared: list[tuple[str, int, dict[str, float], dict[str, float]]] = []
    for size in (1000, 5000):
        for target in TARGETS:
            m, before = measure(target, size)
            compared.append((target, size, before, m))
            print(
                f"| {target} | {size} | {m['bytes'] / 1024:.0f} | {m['dumps']:.2f} | "
                f"{m['cold']:.1f} ({m['cold'] / m['dumps']:.2f}x) | "
                f"{m['steady']:.2f} ({m['steady'] / m['dumps']:.3f}x) | "
                f"{m['resumed']:.2f} ({m['resumed'] / m['dumps']:.3f}x) |"
            )

    print("\nRead-only records against aliased entries (before the guard), same run:\n")
    print(
        "| target | messages | recording every entry ms (x json.dumps) | "
        "json.dumps ms plain / read-only | "
        "cold ms aliased / read-only | steady ms aliased / read-only | "
        "resumed ms aliased / read-only |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for target, size, before, m in compared:
        print(
            f"| {target} | {size} | {m['record']:.1f} ({m['record'] / m['dumps']:.2f}x) | "
            f"{m['dumps']:.2f} / {m['dumps_records']:.2f} | "
            f"{before['cold']:.1f} / {m['cold']:.1f} | "
            f"{before['steady']:.2f} / {m['steady']:.2f} | "
            f"{before['resumed']:.2f} / {m['resumed']:.2f} |"
        )


if __name__ == "__main__":
    main()
