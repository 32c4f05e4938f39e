"""Retrieval metrics on hand-computed examples, tokenization, and eval-retrieval on real sets."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FULL_TESTS, shared_data
from contextchef import load_catalog
from contextchef.cli import app
from contextchef.search._index import tokenize
from contextchef.search._retrieval import LabelledQuery, bm25_ranker, evaluate, load_queries

RECALL5_FLOOR = 0.7  # the floor of benchmarks/retrieval.py --check


def q(groups: list[list[str]]) -> LabelledQuery:
    return LabelledQuery(id="x", query="x", groups=tuple(frozenset(g) for g in groups), lang="en")


def test_metrics_hand_computed() -> None:
    ranking = ["b", "a2", "c", "z", "y", "a1"]
    queries = [q([["a1", "a2"], ["c"]]), q([["nope"]])]
    m = evaluate(queries, lambda _q, _d: ranking)
    assert m["queries"] == 2
    # query 1: groups {a1,a2} (rank 2) and {c} (rank 3): r@1 = 0, r@5 = 1
    assert m["recall@1"] == 0.0
    assert m["recall@5"] == 0.5
    assert m["mrr"] == round((1 / 2 + 0) / 2, 4)
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    ideal = 1 + 1 / math.log2(3)
    assert m["ndcg@5"] == round((dcg / ideal + 0) / 2, 4)


def test_a_group_counts_once_in_ndcg() -> None:
    m = evaluate([q([["a1", "a2"]])], lambda _q, _d: ["a1", "a2"])
    assert m["ndcg@5"] == 1.0 and m["recall@1"] == 1.0


def test_tokenize_stems_splits_names_and_handles_cjk() -> None:
    assert tokenize("createIssues") == ["creat", "issu"]
    assert tokenize("list_pull_requests") == ["list", "pull", "request"]
    assert tokenize("the file") == ["file"]
    assert tokenize("图片生成") == ["图", "片", "生", "成", "图片", "片生", "生成"]
    mixed = tokenize("发送 Slack 消息")
    assert "slack" in mixed and "发送" in mixed and "消息" in mixed


def test_bilingual_query_finds_english_and_chinese_tools() -> None:
    from contextchef import ContextChef, ToolCall

    chef = ContextChef(default_defer=True)
    chef.register_tools(
        [
            {"name": "send_message", "description": "Send a chat message to a channel."},
            {"name": "fa_song_you_jian", "description": "发送电子邮件给指定的收件人。"},
            {"name": "list_files", "description": "List files in a directory."},
        ]
    )
    done = chef.execute(
        ToolCall(
            id="1",
            name="tool_search",
            arguments=json.dumps({"queries": ["发送邮件", "send email message"]}),
        )
    )
    assert set(done.loaded[:2]) == {"send_message", "fa_song_you_jian"}


def _sample(root: Path, name: str, folder: Path) -> tuple[Path, Path]:
    """Every 10th query of a real set, and its catalog cut to the tools those queries want
    plus every 8th other tool (loading and indexing the catalog is most of the cost)."""
    lines = (root / f"{name}.queries.jsonl").read_text("utf-8").splitlines()[::10]
    catalog, queries = folder / f"{name}.catalog.json", folder / f"{name}.queries.jsonl"
    queries.write_text("\n".join(lines) + "\n", "utf-8")
    wanted = {n for q in load_queries(queries) for g in q.groups for n in g}
    data = json.loads((root / f"{name}.catalog.json").read_text("utf-8"))
    data["tools"] = [t for i, t in enumerate(data["tools"]) if t["name"] in wanted or i % 8 == 0]
    catalog.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    return catalog, queries


@pytest.mark.parametrize("name", ["bfcl_multiturn", "acebench_zh"])
def test_eval_retrieval_cli_on_real_sets(name: str, tmp_path: Path) -> None:
    # The CLI scores real queries on a real catalog exactly as `evaluate` does: by default
    # on a sample of the set (`_sample`); under CONTEXTCHEF_FULL_TESTS=1 on the whole set,
    # with the recall floor that `python benchmarks/retrieval.py --check` holds.
    root: Path = shared_data() / "retrieval"
    if FULL_TESTS:
        catalog, queries = root / f"{name}.catalog.json", root / f"{name}.queries.jsonl"
    else:
        catalog, queries = _sample(root, name, tmp_path)
    result = CliRunner().invoke(
        app,
        ["eval-retrieval", "--catalog", str(catalog), "--queries", str(queries), "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    expected = evaluate(
        load_queries(queries), bm25_ranker(load_catalog(catalog, repair_schemas=True))
    )
    assert data == {"ranker": "bm25", **expected, "queries": int(expected["queries"])}
    assert data["queries"] > (500 if FULL_TESTS else 50)
    assert 0 < data["recall@1"] <= data["recall@5"] <= 1
    if FULL_TESTS:
        # floors well under the measured figures in benchmarks/RESULTS.md
        assert data["recall@5"] > RECALL5_FLOOR


def test_eval_retrieval_unknown_ranker() -> None:
    root = shared_data() / "retrieval"
    result = CliRunner().invoke(
        app,
        [
            "eval-retrieval",
            "--catalog",
            str(root / "metatool.catalog.json"),
            "--queries",
            str(root / "metatool.queries.jsonl"),
            "--ranker",
            "magic",
        ],
    )
    assert result.exit_code == 2 and "unknown ranker 'magic'" in result.output
