"""Search edge cases: CJK needs more than one shared character; near names scale."""

from __future__ import annotations

import difflib
import random

from rapidfuzz import fuzz

from contextchef import Tool
from contextchef.search._index import ToolIndex

TOOLS = [
    Tool(name="send_email", description="发送邮件给联系人"),
    Tool(name="read_file", description="读取本地文件内容"),
    Tool(name="weather", description="查询天气预报"),
]


def index() -> ToolIndex:
    return ToolIndex([(t, t.name) for t in TOOLS])


def names(hits: list[object]) -> list[str]:
    return [h.wire_name for h in hits]  # type: ignore[attr-defined]


def test_one_shared_cjk_character_is_no_match() -> None:
    # 文件 (file) and 邮件 (mail) share only 件
    assert names(index().search(["读取文件内容"], limit=5)) == ["read_file"]
    assert names(index().search(["发送"], limit=5)) == ["send_email"]
    # a word next to CJK text counts, and a shared bigram brings its characters with it
    assert names(index().search(["天气 email"], limit=5)) == ["weather", "send_email"]


def test_a_query_of_single_characters_still_matches_them() -> None:
    assert names(index().search(["读 写"], limit=5)) == ["read_file"]
    assert set(names(index().search(["件"], limit=5))) == {"send_email", "read_file"}


def test_exact_lookup_by_wire_own_and_case_insensitive_name() -> None:
    tools = [(Tool(name="Create_Issue", description="d"), "github__Create_Issue")]
    tools.append((Tool(name="Create_Issue", description="d"), "gitlab__Create_Issue"))
    idx = ToolIndex(tools)
    assert names(idx.exact(["gitlab__Create_Issue"])[0]) == ["gitlab__Create_Issue"]
    assert len(idx.exact(["Create_Issue"])[0]) == 2
    assert names(idx.exact(["GITHUB__create_issue"])[0]) == ["github__Create_Issue"]
    assert idx.exact(["nope"]) == ([], ["nope"])


def _scan(tools: list[tuple[Tool, str]], typo: str) -> list[str]:
    """The oracle: every tool scored with rapidfuzz (ratio >= 80), best 5, registry order."""
    expected = []
    for i, (t, w) in enumerate(tools):
        best = max(fuzz.ratio(typo.lower(), c) for c in {w.lower(), t.name.lower()})
        if best >= 80:
            expected.append((-best, i))
    return [tools[i][1] for _, i in sorted(expected)[:5]]


def test_near_names_match_a_full_rapidfuzz_scan() -> None:
    rng = random.Random(3)
    words = ["create", "list", "get", "delete", "update", "issue", "file", "repo", "user"]
    tools = []
    for i in range(3_000):
        name = "_".join(rng.sample(words, 3)) + f"_{i % 37}"
        tools.append((Tool(name=name, description="d"), f"s{i % 5}__{name}"))
    idx = ToolIndex(tools)
    typos = [tool.name[:3] + tool.name[4:] for tool, _ in rng.sample(tools, 40)]
    for typo in typos:
        assert names(idx.near_names(typo, limit=5)) == _scan(tools, typo)
    # tools added at run time are found too, from their own small name index
    added = [(Tool(name="zorblax_report", description="d"), "zorblax_report")]
    bigger = idx.extended(added)
    assert names(bigger.near_names("zorblax_reprot", limit=5)) == ["zorblax_report"]
    assert names(bigger.near_names(typos[0], limit=5)) == _scan(tools, typos[0])
    assert names(bigger.exact(["ZORBLAX_REPORT"])[0]) == ["zorblax_report"]
    # the ratio is the similarity difflib approximates (2 * matches / total length)
    assert fuzz.ratio("create_issue", "create_isue") / 100 == 2 * 11 / 23
    assert difflib.SequenceMatcher(None, "create_issue", "create_isue").ratio() == 2 * 11 / 23
