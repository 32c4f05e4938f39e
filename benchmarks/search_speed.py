"""tool_search speed at scale: every catalog in shared/data pooled (about 7,700 tools).

Run:  python benchmarks/search_speed.py [--out benchmarks/RESULTS-speed.md]

Measured side by side in one run:
  * index build: contextchef's ToolIndex vs rank_bm25.BM25Okapi over the same tools
    and the same tokens (contextchef's tokenizer: stemming, CJK unigrams + bigrams), each
    including tokenization;
  * p50 / p95 latency of one tool_search call for English and Chinese queries:
    contextchef includes tokenization and rendering the model-facing result text;
    rank_bm25 includes tokenization, scoring and picking the top 5;
  * registering one runtime tool in a ContextChef session holding all tools, until a
    tool_search call finds it;
  * one tool_search call through ``chef.execute`` (gate, search, rendering), without and
    with a blocklist (blocked tools are left out of results, decided per hit).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from contextchef import ContextChef, DeferredConfig, ToolCall, load_catalog
from contextchef.deferred._meta import run_tool_search
from contextchef.search._index import ToolIndex, _document, tokenize
from contextchef.tools._tool import Tool

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))

QUERIES_EN = [
    "list open pull requests in a repository",
    "get the current weather forecast for a city",
    "read a text file from disk",
    "search issues by label",
    "convert currency amounts",
    "send an email to a colleague",
    "book a flight ticket",
    "take a screenshot of a web page",
]
QUERIES_ZH = [
    "查询天气预报 weather forecast",
    "发送电子邮件",
    "预订机票",
    "读取文件内容",
    "计算贷款利息",
    "搜索新闻",
    "翻译文本",
    "查询股票价格",
]


BLOCKED = ["github__*", "*delete*", "*_create_*"]
"""Blocklist patterns for the gated measure (each matches tools of the pooled catalogs)."""


def pooled_tools() -> list[Tool]:
    tools: list[Tool] = []
    files = sorted((DATA / "retrieval").glob("*.catalog.json"))
    files += sorted((DATA / "catalogs").glob("*.json"))
    for path in files:
        cat = load_catalog(path, server=path.name.split(".")[0], repair_schemas=True)
        tools += cat.tools
    return tools


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def time_calls(fn, queries: list[str], repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(repeat):
        for q in queries:
            start = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    tools = pooled_tools()
    chef = ContextChef(default_defer=True, deferred=DeferredConfig(always_meta_tools=True))
    chef.register_tools(tools)
    entries = [(t, chef.registry.wire_name_for(t)) for t in tools]

    builds = []
    for _ in range(3):
        start = time.perf_counter()
        index = ToolIndex(entries)
        index.search(["warm"], limit=1)  # the corpus is built lazily, on the first search
        builds.append(time.perf_counter() - start)
    baseline_builds = []
    for _ in range(3):
        start = time.perf_counter()
        baseline = BM25Okapi([_document(t, w) or [w] for t, w in entries])
        baseline_builds.append(time.perf_counter() - start)
    baseline_build = min(baseline_builds)
    names = [t.name for t in tools]

    config = DeferredConfig()

    def ours(q: str) -> None:
        run_tool_search({"queries": [q]}, index, config)

    def theirs(q: str) -> None:
        scores = baseline.get_scores(tokenize(q))
        top = np.argsort(-scores)[:5]
        [names[i] for i in top]

    rows = []
    for label, queries in (("en", QUERIES_EN), ("zh", QUERIES_ZH)):
        ours_p = percentiles(time_calls(ours, queries, args.repeat))
        theirs_p = percentiles(time_calls(theirs, queries, args.repeat))
        rows.append((label, ours_p, theirs_p))

    _ = chef.view  # build once, as a live session would have
    chef.execute(ToolCall(id="w", name="tool_search", arguments='{"queries": ["warm"]}'))
    start = time.perf_counter()
    chef.register_runtime_tool(
        {"name": "zorblax_report", "description": "Summarise zorblax telemetry for a cluster."}
    )
    found = chef.execute(
        ToolCall(id="r", name="tool_search", arguments=json.dumps({"queries": ["zorblax"]}))
    )
    runtime_ms = (time.perf_counter() - start) * 1000
    assert found.loaded and found.loaded[0] == "zorblax_report", found.result.content

    calls = itertools.count()

    def gated(q: str) -> None:  # the whole call: gate, search, rendering
        arguments = json.dumps({"queries": [q]})
        chef.execute(ToolCall(id=f"g{next(calls)}", name="tool_search", arguments=arguments))

    open_p = percentiles(time_calls(gated, QUERIES_EN, args.repeat))
    chef.set_blocked_tools(BLOCKED)  # blocked tools are left out of every search result
    blocked_p = percentiles(time_calls(gated, QUERIES_EN, args.repeat))
    chef.set_blocked_tools([])

    lines = [
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores. Command: `python benchmarks/search_speed.py`. "
        f"Tools pooled: {len(tools)}.",
        "",
        "| measure | contextchef | rank_bm25 | ratio |",
        "|---|---:|---:|---:|",
        f"| index build, s (best of 3) | {min(builds):.2f} | {baseline_build:.2f} | "
        f"{baseline_build / min(builds):.1f}x |",
    ]
    for label, (o50, o95), (t50, t95) in rows:
        lines.append(
            f"| tool_search p50, ms ({label}) | {o50:.2f} | {t50:.2f} | {t50 / o50:.1f}x |"
        )
        lines.append(
            f"| tool_search p95, ms ({label}) | {o95:.2f} | {t95:.2f} | {t95 / o95:.1f}x |"
        )
    lines.append(
        f"| runtime tool registered -> found by tool_search, ms | {runtime_ms:.1f} | n/a | |"
    )
    lines.append(
        f"| chef.execute(tool_search) p50 / p95, ms (en), no blocklist | "
        f"{open_p[0]:.2f} / {open_p[1]:.2f} | n/a | |"
    )
    lines.append(
        f"| the same with {len(BLOCKED)} blocklist patterns | "
        f"{blocked_p[0]:.2f} / {blocked_p[1]:.2f} | n/a | {blocked_p[0] / open_p[0]:.1f}x |"
    )
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
