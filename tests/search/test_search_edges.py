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


def _scan(tools: list[tuple[Tool, str]], typo: str, *, prune: bool) -> list[str]:
    """The oracle: every tool scored with difflib (ratio >= 0.8), best 5, registry order."""
    matcher = difflib.SequenceMatcher(None, "", typo.lower())  # caches the typo's side
    expected = []
    for i, (t, w) in enumerate(tools):
        best = 0.0
        for c in {w.lower(), t.name.lower()}:
            matcher.set_seq1(c)
            # difflib documents both as upper bounds of ratio(): skipping below 0.8 is exact
            if prune and (matcher.real_quick_ratio() < 0.8 or matcher.quick_ratio() < 0.8):
                continue
            best = max(best, matcher.ratio())
        if best >= 0.8:
            expected.append((-best, i))
    return [tools[i][1] for _, i in sorted(expected)[:5]]


def test_near_names_match_a_full_difflib_scan() -> None:
    rng = random.Random(3)
    words = ["create", "list", "get", "delete", "update", "issue", "file", "repo", "user"]
    tools = []
    for i in range(3_000):
        name = "_".join(rng.sample(words, 3)) + f"_{i % 37}"
        tools.append((Tool(name=name, description="d"), f"s{i % 5}__{name}"))
    idx = ToolIndex(tools)
    typos = [tool.name[:3] + tool.name[4:] for tool, _ in rng.sample(tools, 40)]
    for typo in typos:
        assert names(idx.near_names(typo, limit=5)) == _scan(tools, typo, prune=True)
    # the pruned oracle against the plain full scan, on a sample (a full scan is ~0.5 s)
    for typo in rng.sample(typos, 3):
        assert _scan(tools, typo, prune=True) == _scan(tools, typo, prune=False)
