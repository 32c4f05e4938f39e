"""Cost of the hybrid ranker at scale: embedding builds, query latency, memory.

Run:  python benchmarks/semantic_speed.py [--out FILE]
Needs the semantic extra. Tools: every catalog in shared/data pooled (7,726) and its
first 2,000. Baseline in the same run: the default BM25 ranker.

* model load: sha256 check of the ONNX file + onnxruntime session, once per process;
* cold build: no vector in memory or on disk, every tool embedded (foreground);
* warm (disk): a new process's view: nothing in memory, the .npz written by the cold
  build loaded;
* warm (memory): a second session with the same catalog in the same process;
* first search during a background build: the latency of the first tool_search while
  the tools are still being embedded (BM25 answers);
* tool_search p50 / p95 (ms) through `run_tool_search`, English and Chinese queries, the
  query-vector cache cleared before each call so every English query is embedded;
* a runtime tool registered -> found by tool_search;
* memory: resident set growth (VmRSS) for loading the model and for the vectors.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from contextchef import ContextChef, DeferredConfig, ToolCall, load_catalog
from contextchef.deferred._meta import run_tool_search
from contextchef.search import _model, _vectors
from contextchef.search._index import ToolIndex
from contextchef.search._rankers import RankerConfig
from contextchef.tools._tool import Tool

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))
sys.path.insert(0, str(REPO / "benchmarks"))
from search_speed import QUERIES_EN, QUERIES_ZH  # noqa: E402


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pooled_tools() -> list[Tool]:
    tools: list[Tool] = []
    files = sorted((DATA / "retrieval").glob("*.catalog.json"))
    files += sorted((DATA / "catalogs").glob("*.json"))
    for path in files:
        cat = load_catalog(path, server=path.name.split(".")[0], repair_schemas=True)
        tools += cat.tools
    return tools


def forget_vectors() -> None:
    """Drop every in-memory vector (the ONNX session stays loaded)."""
    _vectors._STORES.clear()


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    cache = Path(tmp.name)
    rows: list[tuple[str, str, str]] = []

    tools = pooled_tools()
    chef = ContextChef(default_defer=True, deferred=DeferredConfig(always_meta_tools=True))
    chef.register_tools(tools)
    all_entries = [(t, chef.registry.wire_name_for(t)) for t in tools]

    rss0 = rss_mb()
    start = time.perf_counter()
    encoder = _model.Encoder()
    encoder.encode(["warm up"])
    load = time.perf_counter() - start
    rss_model = rss_mb() - rss0
    rows.append(("model load (hash check + onnxruntime session), s", f"{load:.2f}", "n/a"))
    _model._ENCODERS[(None, None, None, 0)] = encoder
    hybrid = RankerConfig(kind="hybrid", background=False, cache_dir=cache)

    rss_vectors = 0.0
    for n in (2000, len(all_entries)):
        entries = all_entries[:n]
        start = time.perf_counter()
        ToolIndex(entries)
        bm25_build = time.perf_counter() - start
        forget_vectors()
        before = rss_mb()
        start = time.perf_counter()
        index = ToolIndex(entries, ranker=hybrid)
        index.wait_for_vectors()
        cold = time.perf_counter() - start
        if n == len(all_entries):
            rss_vectors = rss_mb() - before
        forget_vectors()
        start = time.perf_counter()
        index = ToolIndex(entries, ranker=hybrid)
        assert index.wait_for_vectors()
        warm_disk = time.perf_counter() - start
        start = time.perf_counter()
        again = ToolIndex(entries, ranker=hybrid)
        assert again.wait_for_vectors()
        warm_memory = time.perf_counter() - start
        base = f"{bm25_build:.2f}"
        rows += [
            (f"{n} tools: index build, cold (embed all), s", f"{cold:.1f}", base),
            (f"{n} tools: index build, warm from disk, s", f"{warm_disk:.2f}", base),
            (f"{n} tools: index build, warm in memory, s", f"{warm_memory:.2f}", base),
        ]
        print(rows[-3:], flush=True)

    # the first search while a background build runs (fresh cache: really cold)
    forget_vectors()
    background = dataclasses.replace(hybrid, background=True, cache_dir=cache / "bg")
    index = ToolIndex(all_entries, ranker=background)
    config = DeferredConfig()
    start = time.perf_counter()
    run_tool_search({"queries": [QUERIES_EN[0]]}, index, config)
    first = (time.perf_counter() - start) * 1000
    index.wait_for_vectors()
    rows.append(("first tool_search during a background build, ms", f"{first:.1f}", "n/a"))

    bm25_index = ToolIndex(all_entries)
    hybrid_index = ToolIndex(all_entries, ranker=hybrid)
    hybrid_index.wait_for_vectors()
    for label, queries in (("en", QUERIES_EN), ("zh", QUERIES_ZH)):
        timings: dict[str, list[float]] = {"bm25": [], "hybrid": []}
        for _ in range(args.repeat):
            for q in queries:
                for name, idx in (("bm25", bm25_index), ("hybrid", hybrid_index)):
                    encoder._queries.clear()
                    start = time.perf_counter()
                    run_tool_search({"queries": [q]}, idx, config)
                    timings[name].append((time.perf_counter() - start) * 1000)
        b50, b95 = percentiles(timings["bm25"])
        h50, h95 = percentiles(timings["hybrid"])
        rows.append((f"tool_search p50, ms ({label})", f"{h50:.2f}", f"{b50:.2f}"))
        rows.append((f"tool_search p95, ms ({label})", f"{h95:.2f}", f"{b95:.2f}"))

    def brew_espresso(strength: int) -> str:
        """Pull an espresso shot on the office coffee machine."""
        return "ok"

    found = {}
    for name, ranker in (("bm25", RankerConfig()), ("hybrid", hybrid)):
        session = ContextChef(
            default_defer=True, deferred=DeferredConfig(always_meta_tools=True, ranker=ranker)
        )
        session.register_tools(tools)
        session.execute(ToolCall(id="0", name="tool_search", arguments={"queries": ["x"]}))
        session.view.index.wait_for_vectors()
        start = time.perf_counter()
        session.register_runtime_tool(brew_espresso)
        result = session.execute(
            ToolCall(id="1", name="tool_search", arguments={"queries": ["espresso coffee"]})
        )
        found[name] = (time.perf_counter() - start) * 1000
        assert "brew_espresso" in str(result.result.content)
    rows.append(
        (
            "runtime tool registered -> found by tool_search, ms",
            f"{found['hybrid']:.1f}",
            f"{found['bm25']:.1f}",
        )
    )
    rows.append(("memory: model loaded, MB (RSS growth)", f"{rss_model:.0f}", "0"))
    rows.append(
        (f"memory: {len(all_entries)} tool vectors, MB (RSS growth)", f"{rss_vectors:.0f}", "0")
    )
    tmp.cleanup()

    lines = [
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores. Command: `python benchmarks/semantic_speed.py`. "
        f"Model: {_model.DEFAULT_MODEL.model_id}.",
        "",
        "| measure | hybrid | bm25 (baseline) |",
        "|---|---:|---:|",
        *(f"| {a} | {b} | {c} |" for a, b, c in rows),
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
