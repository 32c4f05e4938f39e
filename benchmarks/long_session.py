"""A long coding session per target under one `ContextPolicy`: native vs local (issue 25).

Run:  python benchmarks/long_session.py [--turns 300] [--result-kb 4] [--budget 80000]

One session per row through the official SDK clients against the `contextchef.testing`
fakes (each checks every request): the filesystem catalog of shared/data, a user turn
every 5th turn, otherwise the scripted model reads a file whose result is ``--result-kb``
KB of text. The session is made with ``ContextChef(context_policy=ContextPolicy(
budget_tokens=B), on_overflow=<summarizer>)``: compile adds the provider's own context
management where the model has it (Anthropic ``compact_20260112`` and
``clear_tool_uses_20250919``, Responses ``compaction``) and applies the summarizer (a
stub: the library never calls a model) past the policy's compaction point elsewhere;
``native=False`` rows force the local path on the same model.

Figures per row: the peak input tokens of a request (the provider's reported
``usage`` where the fake reports it, else our estimate of the payload; `ContextUsage`),
against the budget; requests refused (the fake's violations or an SDK error: must be 0);
local compactions run; provider compactions returned; the last request's size in KB
(the ledger still replays history from before a provider compaction: issue 25 item 3);
and recall (issue 25 item 4): at the end of a local-path row, the ``search_archive`` tool
is asked (through the gate, ``chef.execute``) for the path read on turn 3, and the row says
``yes`` when a hit read back by its handle holds that turn's tool result exactly
(``in view``: still in the history, not compacted; ``-``: a native row, whose provider
compactions the archive does not hold yet).
``--local-only`` skips the native rows (the Responses one is slow).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types

from contextchef import ContextChef, ContextPolicy, ToolCall, load_catalog, user
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeOpenAIChat,
    FakeResponses,
    httpx_for,
    text,
    tool_calls,
)

DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", Path(__file__).parents[2] / "shared/data"))
ROWS = [  # (target, model, native)
    ("anthropic", "claude-opus-5-5", True),
    ("anthropic", "claude-opus-5-5", False),
    ("responses", "gpt-5.6", True),
    ("responses", "gpt-5.6", False),
    ("openai", "gpt-5.6", False),
    ("gemini", "gemini-3-pro", False),
]


def _result(kb: int) -> Any:
    def handler(**args: Any) -> str:
        return (f"{args} " + "line of file text\n" * 60 * kb)[: kb * 1024]

    return handler


class _Sender:
    """One SDK client per target against its fake; `send` returns the SDK response."""

    def __init__(self, target: str) -> None:
        if target == "anthropic":
            self.fake: Any = FakeAnthropic()
            self.client: Any = anthropic.Anthropic(
                api_key="x", max_retries=0, http_client=self.fake.http_client(httpx_for(anthropic))
            )
        elif target in ("responses", "openai"):
            self.fake = FakeResponses() if target == "responses" else FakeOpenAIChat()
            self.client = openai.OpenAI(
                api_key="x", max_retries=0, http_client=self.fake.http_client(httpx_for(openai))
            )
        else:
            self.fake = FakeGemini()
            http = types.HttpOptions(httpx_client=self.fake.http_client(httpx_for(genai)))
            self.client = genai.Client(api_key="x", http_options=http)
        self.target = target

    def send(self, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        if self.target == "anthropic":
            return self.client.beta.messages.create(**payload, extra_headers=headers)
        if self.target == "responses":
            return self.client.responses.create(**payload)
        if self.target == "openai":
            return self.client.chat.completions.create(**payload)
        return self.client.models.generate_content(**payload)


def run(target: str, model: str, native: bool, turns: int, kb: int, budget: int) -> dict[str, Any]:
    summaries: list[int] = []

    def summarize(transcript: str) -> str:
        summaries.append(len(transcript))
        return f"Summary {len(summaries)}: {transcript.count('read_text_file')} files read."

    policy = ContextPolicy(budget_tokens=budget, native=native)
    chef = ContextChef(context_policy=policy, on_overflow=summarize, max_inline_chars=None)
    tools = load_catalog(DATA / "catalogs" / "mcp-filesystem.json").tools
    chef.register_tools(tools, handlers={t.name: _result(kb) for t in tools})
    chef.set_system_prompt("You are a careful coding agent.")
    chef.set_history([user("Read the repository.")])
    sender = _Sender(target)
    read = next(t.name for t in chef.view.resident if t.name.endswith("read_text_file"))
    peak, refused, last_kb = 0, 0, 0.0
    start = time.perf_counter()
    for turn in range(turns):
        if turn and turn % 5 == 0:
            sender.fake.script(text(f"Done with part {turn // 5}."))
        else:
            sender.fake.script(tool_calls((read, {"path": f"src/m{turn}.py"})))
        request = chef.compile(target, model=model, max_tokens=1024)
        last_kb = len(json.dumps(request.payload, separators=(",", ":"))) / 1024
        estimate = chef.context_usage(target, model=model).used
        try:
            reply = sender.send(request.payload, dict(request.headers))
        except (anthropic.APIError, openai.APIError, genai.errors.APIError):
            refused += 1
            break
        calls = chef.ingest(reply)
        reported = chef.cache_reports[-1].input_tokens
        peak = max(peak, reported or estimate)
        if calls:
            chef.run_tools(calls)
        else:
            chef.append(user(f"Now part {turn // 5 + 1}."))
    return {
        "recall": _recall(chef, read, kb) if not native else "-",
        "peak": peak,
        "budget": budget,
        "refused": refused + len(sender.fake.violations),
        "local": len(summaries),
        "native": sum(n.kind == "compaction" for n in chef.notices),
        "last_kb": last_kb,
        "seconds": time.perf_counter() - start,
    }


def _recall(chef: ContextChef, read: str, kb: int) -> str:
    """Whether the archive gives back turn 3's result exactly (``yes``/``no``/``in view``)."""
    expected = _result(kb)(path="src/m3.py")
    if any(r.content == expected for m in chef.history for r in m.tool_results):
        return "in view"  # never compacted away: nothing to recall
    query = ToolCall(id="recall", name="search_archive", arguments={"query": "src/m3.py"})
    for line in chef.execute(query).result.content.splitlines()[:-1]:
        handle, _, rest = line.partition(" offset ")
        if not rest:
            continue
        args = {"handle": handle, "offset": int(rest.split(" ")[0]), "length": 2 * kb * 1024}
        page = chef.execute(ToolCall(id="read", name="search_archive", arguments=args))
        if f"<- result of {read} " in page.result.content and expected in page.result.content:
            return "yes"
    return "no"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--result-kb", type=int, default=4)
    parser.add_argument("--budget", type=int, default=80_000)
    parser.add_argument("--local-only", action="store_true", help="skip the native rows")
    args = parser.parse_args()
    logging.getLogger("contextchef").setLevel(logging.ERROR)  # compactions are counted instead
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"load: {os.getloadavg()}; {args.turns} turns, {args.result_kb} KB per tool result\n")
    print(
        "| target | model | path | peak input tokens | budget | refused | local compactions "
        "| provider compactions | last request KB | recall turn 3 | seconds |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for target, model, native in ROWS:
        if native and args.local_only:
            continue
        row = run(target, model, native, args.turns, args.result_kb, args.budget)
        path = "native" if native else "local"
        print(
            f"| {target} | {model} | {path} | {row['peak']:,} | {row['budget']:,} | "
            f"{row['refused']} | {row['local']} | {row['native']} | {row['last_kb']:,.0f} | "
            f"{row['recall']} | {row['seconds']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
