"""The CLI is a thin shell: run it with typer's runner on the demo and real catalogs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextchef import ContextChef, load_demo_catalog
from contextchef.cli import app

runner = CliRunner()
KEYS = {
    "tools_total",
    "tools_direct",
    "tools_deferred",
    "full_chars",
    "full_tokens_est",
    "resident_chars",
    "resident_tokens_est",
    "directory_chars",
    "saved_chars_per_turn",
    "saved_ratio",
}


def test_plan_demo_prints_a_table() -> None:
    result = runner.invoke(app, ["plan"])
    assert result.exit_code == 0, result.output
    assert "saved per turn, chars" in result.output
    assert "51 / 8 / 43" in result.output


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_plan_json_on_real_catalogs(catalog_paths: list[Path], target: str) -> None:
    args = ["plan", *map(str, catalog_paths), "--target", target, "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= KEYS
    assert data["tools_total"] == 286 == data["tools_direct"] + data["tools_deferred"]
    assert data["saved_chars_per_turn"] == data["full_chars"] - data["resident_chars"]
    assert 0 < data["saved_ratio"] < 1
    # both gemini-cli files declare server "gemini-cli": they are told apart by file name
    assert {"gemini-cli", "gemini-cli-legacy"} <= set(data["servers"])


def test_plan_figures_match_the_library() -> None:
    result = runner.invoke(app, ["plan", "--json", "--target", "openai"])
    data = json.loads(result.output)
    chef = ContextChef(default_defer=True)
    chef.register_catalog(load_demo_catalog())
    report = chef.plan("openai").to_dict()
    assert data == json.loads(json.dumps(report))
    flat = len(
        json.dumps(
            chef.compile("openai", strategy="flat").payload["tools"],
            ensure_ascii=False,
            separators=(",", ":"),
        )
    )
    assert data["full_chars"] == flat


def test_plan_pin_and_defer_patterns(tmp_path: Path) -> None:
    out = runner.invoke(app, ["plan", "--json", "--no-default-defer", "--defer", "^github"])
    assert out.exit_code == 0
    assert json.loads(out.output)["tools_deferred"] == 0  # demo has no github server
    out = runner.invoke(app, ["plan", "--json", "--pin", "*"])
    data = json.loads(out.output)
    assert data["tools_deferred"] == 0 and data["directory_chars"] == 0


def test_plan_payload_out(tmp_path: Path) -> None:
    target = tmp_path / "payload.json"
    result = runner.invoke(app, ["plan", "--target", "responses", "--payload-out", str(target)])
    assert result.exit_code == 0, result.output
    payload = json.loads(target.read_text())
    assert payload["input"][0]["role"] == "user"
    assert [t["name"] for t in payload["tools"]][-2:] == ["tool_search", "defer_execute"]


def test_search_json_and_text(catalogs_dir: Path) -> None:
    result = runner.invoke(
        app,
        ["search", "list pull requests", "--catalog", str(catalogs_dir / "github.json"), "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["results"][0]["name"] == "github__list_pull_requests"
    text = runner.invoke(app, ["search", "send a chat message"])
    assert "team-chat__send_message" in text.output.splitlines()[0]


def test_cli_errors_are_clear_and_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(tmp_path / "none.json")])
    assert result.exit_code == 2
    assert "cannot read catalog" in result.output
    result = runner.invoke(app, ["plan", "--target", "claude"])
    assert result.exit_code == 2
    assert "unknown target 'claude'" in result.output


def test_benchmark_catalogs_need_and_get_repair_on_the_command_line() -> None:
    from conftest import shared_data

    path = str(shared_data() / "retrieval" / "bfcl_live.catalog.json")
    failed = runner.invoke(app, ["search", "weather", "--catalog", path])
    assert failed.exit_code == 2 and "--repair-schemas" in failed.output
    ok = runner.invoke(app, ["search", "weather", "--catalog", path, "--repair-schemas", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["results"]
    plan_ok = runner.invoke(app, ["plan", path, "--repair-schemas", "--json"])
    assert plan_ok.exit_code == 0 and json.loads(plan_ok.output)["tools_total"] == 1282
