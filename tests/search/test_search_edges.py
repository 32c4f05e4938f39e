"""Search edge cases: CJK needs more than one shared character; near names scale."""

from __future__ import annotations

import difflib
import random

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


def test_near_names_match_a_full_difflib_scan() -> None:
    rng = random.Random(3)
    words = ["create", "list", "get", "delete", "update", "issue", "file", "repo", "user"]
    tools = []
    for i in range(3_000):
        name = "_".join(rng.sample(words, 3)) + f"_{i % 37}"
        tools.append((Tool(name=name, description="d"), f"s{i % 5}__{name}"))
    idx = ToolIndex(tools)
    for tool, _ in rng.sample(tools, 40):
        typo = tool.name[:3] + tool.name[4:]
        low = typo.lower()
        expected = []
        for i, (t, w) in enumerate(tools):
            best = max(
                difflib.SequenceMatcher(None, c, low).ratio() for c in {w.lower(), t.name.lower()}
            )
            if best >= 0.8:
                expected.append((-best, i))
        want = [tools[i][1] for _, i in sorted(expected)[:5]]
        assert names(idx.near_names(typo, limit=5)) == want
