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
import gc
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
from contextchef.analysis._meter import CacheMeter
from contextchef.analysis._pricing import ReplayPricing
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
OPUS, GPT, GEMINI = "claude-opus-5-5", "gpt-5.6", "gemini-3-pro"
SWITCH = (("anthropic", OPUS), ("responses", GPT), ("gemini", GEMINI))
ROWS = [  # (row name, targets in turn (switched at thirds of the turns), native, clearing)
    ("anthropic", (("anthropic", OPUS),), True, True),
    ("anthropic", (("anthropic", OPUS),), True, False),
    ("anthropic", (("anthropic", OPUS),), False, True),
    ("responses", (("responses", GPT),), True, True),
    ("responses", (("responses", GPT),), False, True),
    ("openai", (("openai", GPT),), False, True),
    ("gemini", (("gemini", GEMINI),), False, True),
    ("anthropic -> responses -> gemini", SWITCH, True, False),
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


def run(
    targets: tuple[tuple[str, str], ...],
    native: bool,
    clearing: bool,
    turns: int,
    kb: int,
    budget: int,
) -> dict[str, Any]:
    """One session over `targets` in turn (switched at each ``turns / len(targets)``)."""
    summaries: list[int] = []

    def summarize(transcript: str) -> str:
        summaries.append(len(transcript))
        return f"Summary {len(summaries)}: {transcript.count('read_text_file')} files read."

    tools = load_catalog(DATA / "catalogs" / "mcp-filesystem.json").tools
    read = next(t.name for t in tools if t.name.endswith("read_text_file"))
    # clearing=False: the read tool's results are never cleared, so Anthropic's view
    # reaches its compaction trigger (clear_tool_uses would keep it under it)
    never = () if clearing else (read,)
    policy = ContextPolicy(budget_tokens=budget, native=native, never_clear=never)
    chef = ContextChef(context_policy=policy, on_overflow=summarize, max_inline_chars=None)
    chef.register_tools(tools, handlers={t.name: _result(kb) for t in tools})
    chef.set_history([user("Read the repository.")])
    chef.set_system_prompt("You are a careful coding agent.")
    senders = {target: _Sender(target) for target, _ in targets}
    peak, refused, edits, last_kb, cost, read_tokens, input_tokens = 0, 0, 0, 0.0, 0.0, 0, 0
    meter: CacheMeter | None = None
    start = time.perf_counter()
    for turn in range(turns):
        target, model = targets[turn * len(targets) // turns]
        sender = senders[target]
        if meter is None or meter.previous is None or meter.previous.target != target:
            meter = CacheMeter(ReplayPricing.for_model(target, model))  # a new cache
        thought = f"Step {turn}."  # signed thinking: the fakes check where it is sent
        if turn and turn % 5 == 0:
            sender.fake.script(text(f"Done with part {turn // 5}.", reasoning=thought))
        else:
            sender.fake.script(tool_calls((read, {"path": f"src/m{turn}.py"}), reasoning=thought))
        request = chef.compile(target, model=model, max_tokens=1024)
        edits += len(request.edits)
        last_kb = len(json.dumps(request.payload, separators=(",", ":"))) / 1024
        estimate = chef.context_usage(target, model=model).used
        figures = meter.measure(request)
        try:
            reply = sender.send(request.payload, dict(request.headers))
        except (anthropic.APIError, openai.APIError, genai.errors.APIError):
            refused += 1
            break
        calls = chef.ingest(reply)
        report = chef.cache_reports[-1]
        peak = max(peak, report.input_tokens or estimate)
        if report.read or report.written:  # the fake reports the cache: its figures
            cost += meter.pricing.actual(report)
            read_tokens, input_tokens = (
                read_tokens + report.read,
                input_tokens + report.input_tokens,
            )
        else:  # else the meter's estimate of the request as sent
            cost += figures.cost_usd
            read_tokens += figures.cache_read_tokens_est
            input_tokens += figures.input_tokens_est
        if calls:
            chef.run_tools(calls)
        else:
            chef.append(user(f"Now part {turn // 5 + 1}."))
    return {
        "recall": _recall(chef, read, kb),
        "peak": peak,
        "budget": budget,
        "refused": refused + sum(len(s.fake.violations) for s in senders.values()),
        "edits": edits,
        "local": len(summaries),
        "native": sum(n.kind == "compaction" for n in chef.notices),
        "last_kb": last_kb,
        "cost": cost,
        "cache_share": read_tokens / input_tokens if input_tokens else 0.0,
        "seconds": time.perf_counter() - start,
    }


def _recall(chef: ContextChef, read: str, kb: int) -> str:
    """Whether the archive gives back turn 3's result exactly (``yes``/``no``/``in view``).

    ``in view``: never compacted away by us or the provider (a provider's clearing edits
    may still hide it from the model: the archive does not see those).
    """
    expected = _result(kb)(path="src/m3.py")
    query = ToolCall(id="recall", name="search_archive", arguments={"query": "src/m3.py"})
    for line in chef.execute(query).result.content.splitlines()[:-1]:
        handle, _, rest = line.partition(" offset ")
        if not rest:
            continue
        args = {"handle": handle, "offset": int(rest.split(" ")[0]), "length": 2 * kb * 1024}
        page = chef.execute(ToolCall(id="read", name="search_archive", arguments=args))
        if f"<- result of {read} " in page.result.content and expected in page.result.content:
            return "yes"
    in_view = any(r.content == expected for m in chef.history for r in m.tool_results)
    return "in view" if in_view else "no"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--result-kb", type=int, default=4)
    parser.add_argument("--budget", type=int, default=80_000)
    parser.add_argument("--rows", default="", help="row numbers to run (1-based, a,b,...)")
    parser.add_argument("--local-only", action="store_true", help="skip the native rows")
    args = parser.parse_args()
    logging.getLogger("contextchef").setLevel(logging.ERROR)  # compactions are counted instead
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"load: {os.getloadavg()}; {args.turns} turns, {args.result_kb} KB per tool result\n")
    print(
        "| row | path | peak input tokens | budget | refused | edits | local compactions "
        "| provider compactions | last request KB | cost USD | cache share | recall turn 3 "
        "| seconds |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    chosen = {int(r) for r in args.rows.split(",") if r}
    for number, (name, targets, native, clearing) in enumerate(ROWS, start=1):
        if (chosen and number not in chosen) or (native and args.local_only):
            continue
        gc.collect()
        row = run(targets, native, clearing, args.turns, args.result_kb, args.budget)
        path = ("native" if native else "local") + ("" if clearing else ", never cleared")
        print(
            f"| {number}. {name} | {path} | {row['peak']:,} | {row['budget']:,} | "
            f"{row['refused']} | {row['edits']} | {row['local']} | {row['native']} | "
            f"{row['last_kb']:,.0f} | {row['cost']:.2f} | {row['cache_share']:.0%} | "
            f"{row['recall']} | "
            f"{row['seconds']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
