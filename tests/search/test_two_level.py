"""Two-level retrieval: groups (servers) ranked with the tools, a strong group lifts its tools.

Built from real catalogs (shared/data): the MCP reference servers and the benchmark sets
that record groups (LiveMCPBench's servers, BFCL multi-turn's classes). No model needed:
``two-level`` ranks over BM25.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import shared_data
from contextchef import ContextChef, DeferredConfig, ToolCall, load_catalog
from contextchef._errors import UsageError
from contextchef.cli import app
from contextchef.search._index import ToolIndex
from contextchef.search._rankers import GROUP_WEIGHTS, RankerConfig, lift
from contextchef.search._retrieval import (
    RANKERS,
    evaluate,
    load_benchmark_catalog,
    load_queries,
    split_of,
)
from contextchef.tools._tool import Tool

# What a memory server's MCP ``instructions`` could say; its tools are the real ones.
MEMORY_INSTRUCTIONS = "Remember facts the user tells you, and recall them in later chats."


def pooled(*names: str) -> tuple[list[tuple[Tool, str]], dict[str, str]]:
    """Real catalogs pooled as a session names them (``server__tool``)."""
    entries: list[tuple[Tool, str]] = []
    descriptions: dict[str, str] = {}
    for name in names:
        catalog = load_catalog(shared_data() / "catalogs" / f"{name}.json")
        descriptions.update(catalog.server_descriptions)
        entries += [(t, f"{t.server}__{t.name}") for t in catalog.tools]
    return entries, descriptions


def test_lift_fuses_tool_and_group_scores() -> None:
    tools = np.array([0.5, 0.6, 0.0, 0.4])
    groups = np.array([2.0, 0.2])  # group 0 strong, group 1 weak
    members = np.array([0, 1, 0, -1])  # the last tool has no group
    out = lift(0.3, tools=tools, groups=groups, members=members)
    assert out == pytest.approx([0.7 * 0.5 + 0.3, 0.7 * 0.6 + 0.03, 0.3, 0.4])
    assert out[0] > out[1]  # the strong group lifted its tool above a better single match
    assert out[2] > 0  # a tool no query word matched is found through its group
    assert lift(0.3, tools=tools, groups=np.zeros(2), members=members) is tools
    assert lift(0.0, tools=tools, groups=groups, members=members) is tools


def test_a_matching_group_lifts_its_tools() -> None:
    entries, descriptions = pooled("mcp-memory", "mcp-filesystem", "gemini-cli", "github")
    descriptions["memory"] = MEMORY_INSTRUCTIONS
    query = ["store a fact"]  # no tool's own text has "store" or "fact"
    assert ToolIndex(entries).search(query, limit=5) == []
    two = ToolIndex(entries, ranker=RankerConfig.of("two-level"), groups=descriptions)
    top = [h.wire_name for h in two.search(query, limit=5)]
    assert len(top) == 5 and all(name.startswith("memory__") for name in top), top
    assert top == sorted(top, key=[w for _, w in entries].index)  # ties in registry order
    # without the server's instructions nothing matches, so nothing is lifted
    plain = ToolIndex(entries, ranker=RankerConfig.of("two-level"), groups={})
    assert plain.search(query, limit=5) == []
    # a tool the query matches itself still comes first
    mixed = [h.wire_name for h in two.search(["store a fact in a file"], limit=3)]
    assert not mixed[0].startswith("memory__")


def test_one_group_ranks_like_bm25() -> None:
    catalog = load_catalog(shared_data() / "catalogs" / "github.json")
    entries = [(t, t.name) for t in catalog.tools]
    two = ToolIndex(
        entries, ranker=RankerConfig.of("two-level"), groups=catalog.server_descriptions
    )
    bm25 = ToolIndex(entries)
    for query in ("open a bug report", "merge pull request", "list branches"):
        expected = [h.wire_name for h in bm25.search([query], limit=10)]
        assert [h.wire_name for h in two.search([query], limit=10)] == expected


def test_runtime_tools_keep_their_one_level_score() -> None:
    entries, descriptions = pooled("mcp-memory", "mcp-filesystem")
    index = ToolIndex(entries, ranker=RankerConfig.of("two-level"), groups=descriptions)
    index.search(["read file"], limit=3)
    extra = Tool(name="brew", description="Pull an espresso shot.", input_schema={})
    grown = index.extended([(extra, "brew")])
    assert grown.search(["espresso shot"], limit=1)[0].wire_name == "brew"
    assert grown.search(["read file"], limit=3) == index.search(["read file"], limit=3)


@pytest.mark.parametrize("name", ["livemcpbench", "bfcl_multiturn"])
def test_two_level_never_below_bm25_on_the_dev_split(name: str) -> None:
    data = shared_data() / "retrieval"
    catalog = load_benchmark_catalog(data / f"{name}.catalog.json")
    dev = [q for q in load_queries(data / f"{name}.queries.jsonl") if q.split == "dev"]
    bm25 = evaluate(dev, RANKERS["bm25"](catalog))["recall@5"]
    two = evaluate(dev, RANKERS["two-level"](catalog))["recall@5"]
    assert two >= bm25
    assert len({t.server for t in catalog.tools}) > 1


def test_benchmark_groups_come_from_the_file() -> None:
    data = shared_data() / "retrieval"
    live = load_benchmark_catalog(data / "livemcpbench.catalog.json")
    assert len(live.server_descriptions) == 70
    bing = next(t for t in live.tools if t.name == "bing_search")
    assert bing.server == "Bing_CN_MCP"
    assert "必应" in live.server_descriptions["Bing_CN_MCP"]
    turns = load_benchmark_catalog(data / "bfcl_multiturn.catalog.json")
    assert {t.server for t in turns.tools} >= {"GorillaFileSystem", "TwitterAPI"}
    plain = load_benchmark_catalog(data / "metatool.catalog.json")
    assert {t.server for t in plain.tools} == {"metatool"}


def test_split_is_deterministic_and_keeps_conversations_together() -> None:
    assert split_of("multi-3") == split_of("multi-3")
    data = shared_data() / "retrieval"
    lines = (data / "bfcl_multiturn.queries.jsonl").read_text("utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    queries = load_queries(data / "bfcl_multiturn.queries.jsonl")
    side: dict[str, set[str]] = {}
    for row, query in zip(rows, queries, strict=True):
        side.setdefault(row["conversation_id"], set()).add(query.split)
    assert all(len(s) == 1 for s in side.values())
    metatool = load_queries(data / "metatool.queries.jsonl")
    share = sum(q.split == "dev" for q in metatool) / len(metatool)
    assert 0.66 < share < 0.74


def test_ranker_names_and_settings() -> None:
    assert RankerConfig.of("two-level") == RankerConfig(
        kind="bm25", group_weight=GROUP_WEIGHTS["two-level"]
    )
    with pytest.raises(UsageError, match="group_weight"):
        RankerConfig(group_weight=1.5)
    with pytest.raises(UsageError, match="two-level"):
        RankerConfig.of("three-level")


def test_session_tool_search_with_two_level(tmp_path: Path) -> None:
    entries, _ = pooled("mcp-memory", "mcp-filesystem", "gemini-cli")
    chef = ContextChef(default_defer=True, deferred=DeferredConfig(ranker="two-level"))
    servers: dict[str, list[Tool]] = {}
    for tool, _wire in entries:
        servers.setdefault(tool.server or "", []).append(tool)
    for server, tools in sorted(servers.items()):
        text = MEMORY_INSTRUCTIONS if server == "memory" else f"The {server} server."
        chef.register_tools(tools, server=server, server_description=text)
    found = chef.execute(
        ToolCall(id="1", name="tool_search", arguments={"queries": ["store a fact"]})
    )
    assert "memory" in found.result.content.splitlines()[0]  # type: ignore[union-attr]


def test_cli_eval_retrieval_two_level() -> None:
    data = shared_data() / "retrieval"
    args = ["--catalog", str(data / "bfcl_multiturn.catalog.json")]
    args += ["--queries", str(data / "bfcl_multiturn.queries.jsonl"), "--json"]
    scores = {}
    for ranker in ("bm25", "two-level"):
        result = CliRunner().invoke(app, ["eval-retrieval", *args, "--ranker", ranker])
        assert result.exit_code == 0, result.output
        scores[ranker] = json.loads(result.output)["recall@5"]
    assert scores["two-level"] >= scores["bm25"] > 0.7
