"""The cost model that matches the bill (issue 24, item 3): prices per TTL, minimum
cacheable length, expiry, and replay's estimate beside the provider's usage."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import shared_data
from contextchef import CacheReport, ContextChef, UsageError, assistant, user
from contextchef.analysis import (
    CacheCostModel,
    CacheMeter,
    ReplayPricing,
    catalog_plan,
    load_recording,
    replay,
    strategy_plan,
)
from contextchef.cli import app

TRANSCRIPTS = shared_data() / "transcripts"


@pytest.mark.parametrize(
    ("target", "model", "ttl", "write", "minimum", "lifetime"),
    [
        ("anthropic", "claude-opus-5", None, 1.25, 512, 300),
        ("anthropic", "claude-opus-5", "1h", 2.0, 512, 3600),
        ("anthropic", "claude-sonnet-4-5", None, 1.25, 1024, 300),
        ("anthropic", "claude-haiku-4-5", None, 1.25, 4096, 300),
        ("responses", "gpt-5.6", None, 1.25, 1024, 1800),
        ("responses", "gpt-5.6-mini", "12h", 1.25, 1024, 43200),
        ("openai", "gpt-5.6-mini", None, 1.25, 1024, 1800),  # Chat: 30m only
        ("responses", "gpt-5.5", None, 1.0, 1024, None),
        ("gemini", "gemini-2.5-flash", None, 1.0, 2048, None),
        ("gemini", "gemini-4-argon", None, 1.0, 4096, None),
        ("deepseek", "deepseek-chat", None, 1.0, 0, None),
    ],
)
def test_each_models_prices_per_ttl_minimum_and_lifetime(
    target: str, model: str, ttl: str | None, write: float, minimum: int, lifetime: int | None
) -> None:
    prices = ReplayPricing.for_model(target, model, ttl=ttl)
    assert (prices.cache_write, prices.min_cacheable_tokens, prices.ttl_seconds) == (
        write,
        minimum,
        lifetime,
    )
    assert prices.cache_read == 0.1 and prices.source
    plan = CacheCostModel.for_model(target, model, ttl=ttl)
    assert (plan.cache_write, plan.min_cacheable_tokens, plan.source) == (
        write,
        minimum,
        prices.source,
    )


def test_a_lifetime_the_model_lacks_is_refused_by_name() -> None:
    with pytest.raises(UsageError, match=r"no cache lifetime '12h'; valid: 5m, 1h"):
        ReplayPricing.for_model("anthropic", "claude-opus-5", ttl="12h")
    with pytest.raises(UsageError, match=r"no cache lifetime '12h'; valid: 30m"):
        ReplayPricing.for_model("openai", "gpt-5.6", ttl="12h")  # Chat Completions


def test_reported_writes_are_priced_per_ttl() -> None:
    prices = ReplayPricing.for_model("anthropic", "claude-opus-5", price_per_mtok=10.0)
    report = CacheReport(
        input_tokens=10_000, read=4_000, written=5_000, written_by_ttl={"5m": 3_000, "1h": 2_000}
    )
    expected = 10.0 * (0.1 * 4_000 + 1.25 * 3_000 + 2.0 * 2_000 + 1_000) / 1e6
    assert prices.actual(report) == pytest.approx(expected)
    # writes the response does not split by lifetime cost the default lifetime's price
    plain = CacheReport(input_tokens=10_000, read=4_000, written=5_000)
    assert prices.actual(plain) == pytest.approx(10.0 * (400 + 1.25 * 5_000 + 1_000) / 1e6)


def test_below_the_minimum_nothing_is_cached_and_idle_gaps_expire() -> None:
    prices = ReplayPricing.for_model("anthropic", "claude-sonnet-4-5")  # 1,024, 5 minutes
    assert prices.split(800, 0) == (0, 0, 800, None)  # too short: all at the base rate
    read, write, uncached, why = prices.split(2_000, 900)
    assert (read, write, uncached) == (0, 2_000, 0) and why and "minimum" in why
    assert prices.split(3_000, 2_000, idle_seconds=299) == (2_000, 1_000, 0, None)
    read, write, uncached, why = prices.split(3_000, 2_000, idle_seconds=301)
    assert (read, write, uncached) == (0, 3_000, 0) and why and "expired" in why
    # spec 002's model knows neither
    assert ReplayPricing().split(800, 700, idle_seconds=10**6) == (700, 100, 0, None)


def test_a_short_conversation_is_not_charged_cache_writes() -> None:
    # Under the old model (spec 002) every request wrote its tail at 1.25x, so a short
    # recording made every strategy look dearer than the bill; below the minimum it is
    # priced at the input rate, and nothing is read.
    chef = ContextChef()
    chef.set_history([user("hi")])
    meter = CacheMeter(ReplayPricing.for_model("anthropic", "claude-sonnet-4-5"))
    first = meter.measure(chef.compile("anthropic", model="claude-sonnet-4-5"))
    assert first.input_tokens_est < 1024
    assert (first.cache_write_tokens_est, first.uncached_tokens_est) == (0, first.input_tokens_est)
    assert first.cost_usd == pytest.approx(3.0 * first.input_tokens_est / 1e6)
    chef.append(assistant("hello"), user("again"))
    second = meter.measure(chef.compile("anthropic", model="claude-sonnet-4-5"))
    assert second.cause is None and second.cache_read_tokens_est == 0
    assert second.not_read and "minimum" in second.not_read
    old = CacheMeter(ReplayPricing())
    chef2 = ContextChef()
    chef2.set_history([user("hi")])
    assert old.measure(chef2.compile("anthropic")).cost_usd > first.cost_usd


def test_the_meter_expires_the_cache_over_an_idle_gap() -> None:
    chef = ContextChef()
    chef.set_system_prompt("Be brief. " * 600)  # above every minimum
    chef.set_history([user("hi")])
    prices = ReplayPricing.for_model("anthropic", "claude-opus-5")
    meter = CacheMeter(prices)
    meter.measure(chef.compile("anthropic", model="claude-opus-5"))
    chef.append(assistant("hello"), user("again"))
    warm = meter.measure(chef.compile("anthropic", model="claude-opus-5"), idle_seconds=60)
    assert warm.cache_read_tokens_est > 1000 and warm.not_read is None
    chef.append(assistant("hello"), user("later"))
    cold = meter.measure(chef.compile("anthropic", model="claude-opus-5"), idle_seconds=600)
    assert cold.cache_read_tokens_est == 0 and cold.cause is None
    assert cold.not_read is not None and "expired" in cold.not_read


def test_replay_reads_recorded_usage_and_timestamps(tmp_path: Path) -> None:
    recording = load_recording(TRANSCRIPTS / "pai-deepseek-reasoner-tools.json")
    last = recording.requests[-1]
    assert last.usage is not None and (last.usage.read, last.usage.input_tokens) == (896, 976)
    assert all(r.usage is None for r in recording.requests[:-1])
    report = replay([recording], strategies=["flat"])
    turn = report.turns[-1]
    assert turn.actual == last.usage
    prices = report.pricing
    assert turn.actual_cost_usd == pytest.approx(3.0 * (0.1 * 896 + 80) / 1e6)
    assert prices.source.startswith("DeepSeek")
    assert report.to_dict()["turns"][-1]["actual"]["read"] == 896
    # timestamps (epoch seconds) in request_params give idle gaps: past the lifetime,
    # nothing is read
    anthropic = json.loads((TRANSCRIPTS / "crewai-anthropic-research.json").read_text("utf-8"))
    for i, params in enumerate(anthropic["request_params"]):
        params["timestamp"] = 1_700_000_000 + 3600 * i  # an hour apart: past 5 minutes
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(anthropic), "utf-8")
    slow = replay([path], strategies=["flat"])
    quick = replay([TRANSCRIPTS / "crewai-anthropic-research.json"], strategies=["flat"])
    assert slow.totals["flat"]["cache_read_tokens_est"] == 0
    assert quick.totals["flat"]["cache_read_tokens_est"] > 0
    assert slow.totals["flat"]["cost_usd"] > quick.totals["flat"]["cost_usd"]


_CUT = re.compile(r"…")


def test_replay_prints_full_figures_at_80_columns(tmp_path: Path) -> None:
    paths = [
        str(TRANSCRIPTS / "pai-deepseek-reasoner-tools.json"),
        str(TRANSCRIPTS / "swe-agent-pydicom-1458-gpt4.json"),
    ]
    catalog = str(shared_data() / "catalogs" / "github.json")
    result = CliRunner().invoke(
        app, ["replay", *paths, "--catalog", catalog], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert not _CUT.search(result.output)  # no figure cut to an ellipsis
    report = replay(
        [load_recording(p) for p in paths],
        extra_tools=load_recording_catalog(catalog),
        pricing=lambda target, model: ReplayPricing.for_model(target, model),
    )
    for name, totals in report.totals.items():
        row = next(line for line in lines if line.split()[:1] == [name] and "%" in line)
        assert f"{int(totals['input_chars']):,}" in row
        assert f"${totals['cost_usd']:.4f}" in row
    # estimate beside actual, and the prices assumed, named
    assert "estimate (flat) vs actual" in result.output
    (actual,) = [line for line in lines if line.split()[:1] == ["actual"]]
    assert actual.split()[1:5] == ["976", "896", "0", "80"]
    assert "prices: DeepSeek context caching guide" in " ".join(result.output.split())


def load_recording_catalog(path: str) -> list[object]:
    from contextchef.tools._catalogs import load_catalog

    return list(load_catalog(Path(path)).tools)


def test_plan_says_which_prices_it_assumed() -> None:
    result = CliRunner().invoke(
        app, ["plan", "--target", "responses", "--model", "gpt-5.6"], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "prices: read 0.1x, write 1.25x (30m), minimum 1,024 tokens cached" in text
    assert "writes 1.25x per TTL (GPT-5.6+)" in text
    given = CliRunner().invoke(
        app, ["plan", "--json", "--target", "anthropic", "--ttl", "1h", "--cache-read", "0.2"]
    )
    model = json.loads(given.output)["cache_model"]
    assert (model["cache_write"], model["cache_read"], model["ttl"]) == (2.0, 0.2, "1h")
    assert model["source"].endswith("(read given)")


def _small_catalog() -> ContextChef:
    def lookup(word: str) -> str:
        """Look a word up."""
        return word

    def define(word: str) -> str:
        """Define a word."""
        return word

    chef = ContextChef(default_defer=True)
    chef.register_tools([lookup, define])
    return chef


@pytest.mark.parametrize(
    ("target", "model"), [("responses", "gpt-5.6"), ("anthropic", "claude-sonnet-4-5")]
)
def test_strategy_and_catalog_plans_price_a_prefix_below_the_minimum_at_the_base_rate(
    target: str, model: str
) -> None:
    # A short conversation and a small catalog: under the model's 1,024-token minimum the
    # provider caches nothing, so neither plan may price a cache read or write there.
    short = CacheCostModel.for_model(target, model, history_tokens=0, price_per_mtok=3.0)
    assert short.min_cacheable_tokens == 1024
    plan = strategy_plan(_small_catalog, target, model, tool="define", cache=short)
    priced = [row for row in plan.strategies if row.fits and row.resident_tokens_est is not None]
    assert priced
    for row in priced:
        assert row.resident_tokens_est < 1024
        base = 3.0 * row.resident_tokens_est / 1e6  # every token at the input price
        assert row.steady_usd == round(base, 5), row.name
        if row.reveal_cost_usd is not None:
            added = row.reveal_appended_tokens_est + row.reveal_expanded_tokens_est
            trips = row.reveal_round_trips
            assert row.reveal_cost_usd == round((1 + trips) * base + 3.0 * added / 1e6, 5)
    flat = catalog_plan(_small_catalog(), target, cache=short)
    assert flat.cache_steady_flat_usd == round(3.0 * flat.full_tokens_est / 1e6, 5)
    # above the minimum the same plan reads at the model's discount
    long = CacheCostModel.for_model(target, model, history_tokens=50_000, price_per_mtok=3.0)
    read = strategy_plan(_small_catalog, target, model, tool="define", cache=long)
    row = next(r for r in read.strategies if r.name == "client")
    assert row.steady_usd == round(0.1 * 3.0 * (row.resident_tokens_est + 50_000) / 1e6, 5)
