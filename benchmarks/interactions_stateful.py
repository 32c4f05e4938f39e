"""Gemini Interactions: bytes sent per request, stateless vs stateful (``store: True``).

Run:  python benchmarks/interactions_stateful.py [--turns 40] [--result-kb 4]

One agent session per mode through google-genai's ``client.interactions.create`` against
`FakeGeminiInteractions`: the filesystem and GitHub catalogs of shared/data (GitHub
deferred), a user turn every 5th turn, otherwise the scripted model reads a file whose
result is ``--result-kb`` KB of text, with a thought step on every turn. Figures per mode:
the bytes of the request body (compact JSON, as the SDK sends it), at the last turn and
summed over the session, the input steps sent at the last turn, and the compile time
(median, ``gc.collect()`` before each). The fake checks every request; a refusal fails
the run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from google import genai
from google.genai import types

from contextchef import ContextChef, load_catalog, user
from contextchef.testing import FakeGeminiInteractions, httpx_for, text, tool_calls

DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", Path(__file__).parents[2] / "shared/data"))
MODEL = "gemini-4-argon"


def run(turns: int, result_kb: int, extra: dict[str, Any]) -> dict[str, float]:
    chef = ContextChef(defer=["github__*"])
    for name in ("mcp-filesystem", "github"):
        tools = load_catalog(DATA / "catalogs" / f"{name}.json").tools
        chef.register_tools(tools, handlers={t.name: _result(result_kb) for t in tools})
    chef.set_system_prompt("You are a careful coding agent.")
    chef.set_history([user("Read the repository.")])
    fake = FakeGeminiInteractions()
    client = genai.Client(
        api_key="x",
        http_options=types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai))),
    )
    sizes: list[int] = []
    compile_ms: list[float] = []
    steps = 0
    for turn in range(turns):
        if turn and turn % 5 == 0:
            fake.script(text(f"Done with part {turn // 5}.", reasoning="summing up"))
        else:
            path = f"src/m{turn}.py"
            fake.script(
                tool_calls(("filesystem__read_text_file", {"path": path}), reasoning="read")
            )
        gc.collect()
        start = time.perf_counter()
        request = chef.compile("gemini-interactions", model=MODEL, max_tokens=1024, extra=extra)
        compile_ms.append((time.perf_counter() - start) * 1000)
        sizes.append(len(json.dumps(request.payload, separators=(",", ":"))))
        steps = len(request.payload["input"])
        calls = chef.ingest(client.interactions.create(**request.payload))
        if calls:
            chef.run_tools(calls)
        else:
            chef.append(user(f"Now part {turn // 5 + 1}."))
    if fake.violations:
        raise SystemExit(f"the fake refused a request: {fake.violations[0]}")
    return {
        "last_kb": sizes[-1] / 1024,
        "total_kb": sum(sizes) / 1024,
        "last_steps": steps,
        "compile_ms": statistics.median(compile_ms),
    }


def _result(kb: int) -> Any:
    def handler(**args: Any) -> str:
        return (f"{args} " + "line of file text\n" * 60 * kb)[: kb * 1024]

    return handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--result-kb", type=int, default=4)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"load: {os.getloadavg()}; {args.turns} turns, {args.result_kb} KB per tool result\n")
    rows = {
        "stateless (store: false)": run(args.turns, args.result_kb, {}),
        "stateful (store: true)": run(args.turns, args.result_kb, {"store": True}),
    }
    print("| mode | last request KB | all requests KB | input steps, last | compile p50 ms |")
    print("|---|---:|---:|---:|---:|")
    for mode, row in rows.items():
        print(
            f"| {mode} | {row['last_kb']:.1f} | {row['total_kb']:.0f} | "
            f"{row['last_steps']:.0f} | {row['compile_ms']:.2f} |"
        )


if __name__ == "__main__":
    main()
