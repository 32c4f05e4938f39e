"""Cost of keeping history valid: normalize and compile a 1,000-message history.

Run:  python benchmarks/history.py

The history: 250 rounds of user text -> assistant (reasoning + 1-3 parallel calls) ->
tool results -> assistant text, with every 25th call left unanswered and every 40th result
orphaned (the repairs the normalizer exists for). Baseline in the same run: copying the
messages into a new tuple (the least any pass over the history costs) and compiling the
already-valid history with normalization skipped (the adapter alone).
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time

from contextchef import (
    ReasoningPart,
    ToolCall,
    ToolResult,
    assistant,
    tool_results,
    user,
)
from contextchef.history._messages import Message
from contextchef.history._normalize import PORTABLE, normalize
from contextchef.providers import PRESETS, TARGETS, RequestOptions, get_adapter


def history(rounds: int = 250) -> list[Message]:
    out: list[Message] = []
    n = 0
    for r in range(rounds):
        out.append(user(f"step {r}: look at file {r}.py and fix the failing test"))
        calls = []
        for k in range(1 + r % 3):
            n += 1
            calls.append(
                ToolCall(id=f"c{n}", name="read_file", arguments=f'{{"path": "src/{r}_{k}.py"}}')
            )
        reasoning = ReasoningPart(
            provider="anthropic",
            text=f"plan {r}",
            provider_data={"type": "thinking", "thinking": f"plan {r}", "signature": f"sig{r}"},
        )
        out.append(Message(role="assistant", parts=(reasoning, *calls)))
        results = [
            ToolResult(call_id=c.id, name=c.name, content="x" * 400)
            for c in calls
            if int(c.id[1:]) % 25
        ]
        if r % 40 == 0:
            results.append(ToolResult(call_id=f"orphan{r}", name="read_file", content="?"))
        out.append(tool_results(results))
        out.append(assistant(f"fixed step {r}"))
    return out


def timeit(fn, repeat: int = 15) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    h = history()
    repaired = normalize(h).changes
    valid = normalize(h).messages
    lines = [
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, {os.cpu_count()} "
        f"cores. Command: `python benchmarks/history.py`. History: {len(h)} messages, "
        f"{len(repaired)} repairs needed.",
        "",
        "| step | median ms |",
        "|---|---:|",
        f"| baseline: copy the messages | {timeit(lambda: tuple(h)):.2f} |",
        f"| normalize (portable rules) | {timeit(lambda: normalize(h)):.1f} |",
        f"| normalize an already-valid history | {timeit(lambda: normalize(valid)):.1f} |",
    ]
    for target in TARGETS:
        adapter = get_adapter(target)
        rules = PRESETS.get(target, PORTABLE)

        def render(msgs=valid, adapter=adapter):  # type: ignore[no-untyped-def]
            return adapter.render_request(
                system="s", tools=[], messages=msgs, options=RequestOptions(model="m")
            )

        def full(adapter=adapter, rules=rules):  # type: ignore[no-untyped-def]
            msgs = normalize(h, profile=rules).messages
            return adapter.render_request(
                system="s", tools=[], messages=msgs, options=RequestOptions(model="m")
            )

        lines.append(f"| {target}: render only (baseline) | {timeit(render):.1f} |")
        lines.append(f"| {target}: normalize + render | {timeit(full):.1f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
