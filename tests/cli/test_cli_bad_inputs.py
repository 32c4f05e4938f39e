"""Every CLI file loader and option answers bad input with one ``error: ...`` line, exit 2.

Regressions (breakit1): JSON nested thousands of levels deep crashed ``replay`` and
``diff`` with an uncaught RecursionError and a traceback (s9); ``--cache-read inf``,
``--cache-write inf`` and ``--price 1e308`` were accepted and ``--json`` printed
Infinity/NaN, which is not JSON.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextchef import UsageError
from contextchef.analysis._accounting import CacheCostModel
from contextchef.analysis._replay import ReplayPricing
from contextchef.cli import app

runner = CliRunner()
DEMO = Path(__file__).parents[2] / "src" / "contextchef" / "data" / "demo_catalog.json"


def _deep(tmp_path: Path, depth: int) -> Path:
    path = tmp_path / f"deep{depth}.json"
    inner = "[" * depth + "]" * depth
    path.write_text('{"messages": [{"role": "user", "content": ' + inner + "}]}", "utf-8")
    return path


def _one_error_line(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("depth", [100_000, 950])
def test_deeply_nested_json_is_one_error_line_in_every_file_loader(
    tmp_path: Path, depth: int
) -> None:
    deep = str(_deep(tmp_path, depth))
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "x", "relevant": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    for args in (
        ["replay", deep],
        ["replay", deep, "--json"],
        ["diff", deep, deep],
        ["diff", deep, deep, "--json"],
        ["plan", deep],
        ["search", "read a file", "--catalog", deep],
        ["eval-retrieval", "--catalog", str(DEMO), "--queries", str(queries)],
    ):
        line = _one_error_line(args)
        assert "nested too deeply" in line or "not a" in line, (args, line)


def test_deeply_nested_json_names_the_file(tmp_path: Path) -> None:
    deep = _deep(tmp_path, 100_000)
    assert _one_error_line(["replay", str(deep)]) == (
        f"error: {deep}: the JSON is nested too deeply to read"
    )
    assert _one_error_line(["diff", str(deep), str(deep)]) == (
        f"error: {deep}: the JSON is nested too deeply to read"
    )


def test_an_unreadable_query_file_is_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    line = _one_error_line(["eval-retrieval", "--catalog", str(DEMO), "--queries", str(missing)])
    assert line.startswith(f"error: cannot read the query file {str(missing)!r}")


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    data = {
        "format": "anthropic",
        "turns_kind": "per_request",
        "system": "Be brief.",
        "request_params": [{"model": "claude-sonnet-4-6"}] * 2,
        "turns": [
            [{"role": "user", "content": "Define cache."}],
            [
                {"role": "user", "content": "Define cache."},
                {"role": "assistant", "content": "A store."},
                {"role": "user", "content": "Thanks."},
            ],
        ],
    }
    path.write_text(json.dumps(data), "utf-8")
    return path


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"--json printed {constant}, which is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--cache-read", "inf", "error: cache_read must be a finite number >= 0, got inf"),
        ("--cache-write", "inf", "error: cache_write must be a finite number >= 0, got inf"),
        ("--price", "inf", "error: price_per_mtok must be a finite number >= 0, got inf"),
        (
            "--price",
            "1e308",
            "error: price_per_mtok x cache multiplier (1e+308 x 1.25) is too large to price "
            "tokens without overflowing; give realistic USD per million tokens and multipliers",
        ),
    ],
)
def test_non_finite_or_overflowing_prices_are_refused_by_replay_and_plan(
    tmp_path: Path, option: str, value: str, message: str
) -> None:
    transcript = str(_transcript(tmp_path))
    assert _one_error_line(["replay", transcript, option, value, "--json"]) == message
    assert _one_error_line(["plan", option, value, "--json"]) == message  # nan: typer refuses


def test_replay_and_plan_json_with_large_finite_prices_is_strict_json(tmp_path: Path) -> None:
    args = ["--price", "1e200", "--cache-read", "1e6", "--cache-write", "1e6", "--json"]
    replayed = runner.invoke(app, ["replay", str(_transcript(tmp_path)), *args])
    assert replayed.exit_code == 0, replayed.output
    costs = [t["cost_usd"] for t in _strict(replayed.stdout)["totals"].values()]
    assert costs and all(math.isfinite(c) and c > 0 for c in costs)
    planned = runner.invoke(app, ["plan", *args])
    assert planned.exit_code == 0, planned.output
    assert math.isfinite(_strict(planned.stdout)["cache_naive_usd"])


def test_cost_models_refuse_non_finite_values_in_the_library() -> None:
    with pytest.raises(UsageError, match=r"^cache_read must be a finite number >= 0, got inf$"):
        ReplayPricing(cache_read=math.inf)
    with pytest.raises(UsageError, match=r"^history_tokens must be 0\.\.1e\+15, got 10{20}$"):
        CacheCostModel(history_tokens=10**20)
    with pytest.raises(UsageError, match=r"^price_per_mtok must be a finite number >= 0"):
        CacheCostModel(price_per_mtok=math.nan)


def test_replay_runs_a_strategy_named_twice_once(tmp_path: Path) -> None:
    transcript = str(_transcript(tmp_path))
    args = ["replay", transcript, "--json", "--strategy", "flat", "--strategy", "flat"]
    twice = runner.invoke(app, args)
    assert twice.exit_code == 0, twice.output
    data = _strict(twice.stdout)
    assert data["strategies"] == ["flat"] and list(data["totals"]) == ["flat"]
    assert [list(t["strategies"]) for t in data["turns"]] == [["flat"], ["flat"]]


@pytest.mark.parametrize("name", ["out.svg", "out.pdf", "out"])
def test_replay_plot_refuses_a_path_not_ending_in_png(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    line = _one_error_line(["replay", str(_transcript(tmp_path)), "--plot", str(out)])
    assert line == f"error: the plot is a PNG: give a path ending in .png, got {str(out)!r}"
    assert not out.exists()


def test_a_file_past_the_size_limit_is_refused_before_it_fills_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # break-it round 13, f9: `contextchef plan zero.json` (a link to /dev/zero) read until
    # memory ran out. Every JSON file the library reads is read to a limit.
    import contextchef._json as json_module

    assert json_module.read_text_file(DEMO).startswith("{")  # the default limit: 256 MiB
    assert json_module.MAX_FILE_BYTES == 256 * 2**20
    big = tmp_path / "big.json"
    big.write_text(json.dumps([{"name": "x" * 400}]), "utf-8")
    monkeypatch.setattr(json_module.read_text_file, "__defaults__", (100,))
    message = _one_error_line(["plan", str(big)])
    assert "larger than 100 bytes" in message
    message = _one_error_line(["diff", str(big), str(big)])
    assert "larger than 100 bytes" in message
    with pytest.raises(ValueError, match="larger than 10 bytes"):
        json_module.read_text_file(big, 10)


def test_out_of_memory_is_one_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import contextchef.cli as cli

    def boom() -> None:
        raise MemoryError

    monkeypatch.setattr(cli, "app", boom)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 2


def test_a_big_regular_file_is_refused_by_its_size_before_it_is_read(tmp_path: Path) -> None:
    import contextchef._json as json_module

    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as file:
        file.truncate(json_module.MAX_FILE_BYTES + 1)  # no data written: a sparse file
    with pytest.raises(ValueError, match="larger than"):
        json_module.read_text_file(sparse)
