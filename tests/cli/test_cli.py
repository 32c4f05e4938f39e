"""The CLI is a thin shell: run it with typer's runner on the demo and real catalogs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextchef import ContextChef, estimate_tokens, load_demo_catalog, user
from contextchef._json import canonical_dumps
from contextchef.analysis import CacheCostModel, catalog_plan
from contextchef.cli import app
from contextchef.tools._catalogs import load_catalog

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
    # the default model is a Claude model with tool search and tool changes
    assert "Per strategy — target anthropic, model claude-opus-5-5" in result.output
    assert "anthropic-native-client*" in result.output
    assert "auto picks anthropic-native-client; not for this target and model: " in result.output
    assert "flat: n/a: every definition is resident" in result.output


def test_plan_with_an_unknown_model_name_says_auto_stays_client() -> None:
    result = runner.invoke(app, ["plan", "--model", "model"])
    assert result.exit_code == 0, result.output
    assert "model model (not in the model table)" in result.output
    assert "client*" in result.output and "auto picks client (a model name" in result.output
    # revealing by tool changes needs a model known to take them
    flowing = " ".join(result.output.split())
    assert "not for this target and model: anthropic-inline, openai-native" in flowing


@pytest.mark.parametrize(
    "target", ["anthropic", "openai", "responses", "gemini", "gemini-interactions"]
)
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


def test_plan_shows_what_gemini_drops_from_the_schemas() -> None:
    """The schema reports made at registration are shown per target (table and JSON)."""
    result = runner.invoke(app, ["plan", "--target", "gemini"])
    assert result.exit_code == 0, result.output
    flowing = " ".join(result.output.split())
    assert "Schema keywords gemini does not take — 1 tools" in flowing
    assert "issue-tracker__create_issue" in flowing and "uniqueItems" in flowing
    data = json.loads(runner.invoke(app, ["plan", "--target", "gemini", "--json"]).output)
    assert data["schema_reports"] == [
        {
            "tool": "create_issue",
            "server": "issue-tracker",
            "target": "gemini",
            "changes": [
                "/properties/labels/uniqueItems: dropped 'uniqueItems' (not in Gemini's "
                "schema subset)"
            ],
            "refs_resolved": [],
        }
    ]
    other = json.loads(runner.invoke(app, ["plan", "--target", "anthropic", "--json"]).output)
    assert other["schema_reports"] == []
    assert "Schema keywords" not in runner.invoke(app, ["plan"]).output


def test_plan_figures_match_the_library() -> None:
    result = runner.invoke(app, ["plan", "--json", "--target", "openai"])
    data = json.loads(result.output)
    chef = ContextChef(default_defer=True)
    chef.register_catalog(load_demo_catalog())
    chef.set_history([user("hi")])
    cache = CacheCostModel.for_model("openai", "gpt-5.4")  # the CLI's: the default model's
    report = catalog_plan(chef, "openai", cache=cache).to_dict()
    assert {k: v for k, v in data.items() if k in report} == json.loads(json.dumps(report))
    extra = {"model", "model_known", "auto", "strategies", "schema_reports"}
    assert set(data) - set(report) == extra
    assert (data["model"], data["auto"]) == ("gpt-5.4", "client")
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
    assert out.exit_code == 2  # demo has no github server: a typo is named, not ignored
    said = " ".join(out.output.split())
    assert "defer pattern '^github' matches no registered tool" in said
    # break-it 37: nothing is close, and the first names alphabetically were offered as
    # the "closest names"
    assert "no name is close to it (" in said and "closest names" not in said
    out = runner.invoke(app, ["plan", "--json", "--pin", "reed_file"])
    said = " ".join(out.output.split())
    assert "closest names: ['read_file'" in said, said
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


# -- per strategy: what each one costs for one target and model ------------------------------

H, PRICE, READ = 80_000, 3.0, 0.1
WRITES = {"anthropic": 1.25, "responses": 1.0, "openai": 1.0}
"""The model's own write price plan assumes: Anthropic's 5-minute writes, OpenAI's before
GPT-5.6 (the input rate)."""


def _plan_json(path: Path, target: str, model: str) -> dict[str, Any]:
    result = runner.invoke(app, ["plan", str(path), "--target", target, "--model", model, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def _compiled_tools(path: Path, target: str, model: str, strategy: str) -> list[Any]:
    """The ``tools`` entries a compile with `strategy` sends (canonical, as plan reads)."""
    chef = ContextChef(default_defer=True)
    chef.register_catalog(load_catalog(path))
    chef.set_history([user("hi")])
    tools: list[Any] = json.loads(
        chef.compile(target, model=model, strategy=strategy).segments["tools"]
    )
    return tools


def _seen_at_start(target: str, tools: list[Any]) -> str:
    """What the model sees at the start, by the research notes (sections 1.8 and 2.1)."""
    if target == "anthropic":  # deferred definitions are stripped before the prompt
        return canonical_dumps([t for t in tools if not t.get("defer_loading")])
    seen = []  # Responses: names and descriptions of what is searchable
    for t in tools:
        if t.get("type") == "namespace":
            assert all(f["defer_loading"] for f in t["tools"])
            seen.append({"name": t["name"], "description": t["description"]})
        elif t.get("defer_loading"):
            seen.append({"name": t["name"], "description": t["description"]})
        else:
            seen.append(t)
    return canonical_dumps(seen)


FITS = {
    ("anthropic", "claude-opus-5-5"): (
        [
            "client",
            "flat",
            "anthropic-native",
            "anthropic-native-regex",
            "anthropic-native-client",
            "anthropic-inline",
        ],
        "anthropic-native-client",
    ),
    ("anthropic", "claude-opus-4-1"): (["client", "flat"], "client"),
    ("responses", "gpt-5.4"): (
        ["client", "flat", "openai-native-client", "openai-native"],
        "openai-native",
    ),
    ("openai", "gpt-5.4"): (["client", "flat"], "client"),
}


@pytest.mark.parametrize(("target", "model"), list(FITS))
def test_plan_lists_the_strategies_that_fit_and_the_auto_pick(
    catalogs_dir: Path, target: str, model: str
) -> None:
    path = catalogs_dir / "github.json"
    data = _plan_json(path, target, model)
    WRITE = data["cache_model"]["cache_write"]
    fitting, auto = FITS[target, model]
    rows = {s["name"]: s for s in data["strategies"]}
    assert [s["name"] for s in data["strategies"] if s["fits"]] == fitting
    assert (data["target"], data["model"], data["auto"]) == (target, model, auto)
    assert data["cache_model"]["cache_write"] == WRITE == WRITES[target]
    for row in rows.values():
        if not row["fits"]:  # why not, and no figures
            assert row["note"] and row["resident_chars"] is None and row["reveal_cost_usd"] is None
    # resident figures are the compiled payload's, read as the provider shows them
    for name in fitting:
        text = _seen_at_start(target, _compiled_tools(path, target, model, name))
        assert rows[name]["resident_chars"] == len(text), name
        assert rows[name]["resident_tokens_est"] == estimate_tokens(text), name
    assert rows["flat"]["resident_chars"] == data["full_chars"]
    assert rows["client"]["resident_chars"] == data["resident_chars"]
    # one reveal of the largest deferred tool, priced with the cache model
    largest = data["largest_tool"]
    for name in fitting:
        row = rows[name]
        if name == "flat":
            assert row["reveal_cost_usd"] is None and "resident" in row["note"]
            continue
        client_side = (
            "client",
            "anthropic-native-client",
            "anthropic-inline",
            "openai-native-client",
        )
        trips = 1 if name in client_side else 0
        assert row["reveal_round_trips"] == trips, name
        expected = (1 + trips) * READ * PRICE * (row["resident_tokens_est"] + H) / 1e6 + (
            WRITE * PRICE * (row["reveal_appended_tokens_est"] + row["reveal_expanded_tokens_est"])
        ) / 1e6
        assert row["reveal_cost_usd"] == round(expected, 5), name
        assert row["steady_usd"] == round(READ * PRICE * (row["resident_tokens_est"] + H) / 1e6, 5)
        assert row["reveal_cost_usd"] < data["cache_naive_usd"]
    if target == "anthropic" and model == "claude-opus-5-5":
        tools = _compiled_tools(path, target, model, "anthropic-native")
        (entry,) = [t for t in tools if t["name"] == largest]
        definition = {k: v for k, v in entry.items() if k != "defer_loading"}
        for name in fitting[2:]:  # the provider expands the referenced definition
            expanded = rows[name]["reveal_expanded_tokens_est"]
            assert expanded == estimate_tokens(canonical_dumps(definition)), name
        assert rows["client"]["reveal_expanded_tokens_est"] == 0  # the result text has it
        # a reference is far smaller than the schema as text; the tool change adds to that
        appended = {n: rows[n]["reveal_appended_tokens_est"] for n in fitting}
        assert max(appended["anthropic-native"], appended["anthropic-native-client"]) < 150
        assert 150 < appended["client"] < appended["anthropic-inline"]
    if target == "responses":  # hosted search loads the tool's namespace, schemas included
        native = rows["openai-native"]
        assert native["reveal_expanded_tokens_est"] == 0
        tools = _compiled_tools(path, target, model, "openai-native")
        (space,) = [
            t
            for t in tools
            if t.get("type") == "namespace" and largest in {f["name"] for f in t["tools"]}
        ]
        assert native["reveal_appended_tokens_est"] > estimate_tokens(canonical_dumps(space))


def test_native_deferral_keeps_the_least_resident_on_a_real_catalog(catalogs_dir: Path) -> None:
    rows = {
        s["name"]: s["resident_tokens_est"]
        for s in _plan_json(catalogs_dir / "github.json", "anthropic", "claude-opus-5-5")[
            "strategies"
        ]
    }
    # only the server search tool / our tool_search with its directory / + defer_execute / all
    assert (
        rows["anthropic-native"] < rows["anthropic-native-client"] < rows["client"] < rows["flat"]
    )
    assert rows["anthropic-native"] * 50 < rows["flat"]
    responses = {
        s["name"]: s["resident_tokens_est"]
        for s in _plan_json(catalogs_dir / "github.json", "responses", "gpt-5.4")["strategies"]
    }
    assert responses["openai-native"] < responses["flat"]


def test_interactions_native_counts_deferred_functions_by_name(catalogs_dir: Path) -> None:
    """A deferred function shows its name (and ``short_description``), not its schema."""
    plan = _plan_json(catalogs_dir / "github.json", "gemini-interactions", "gemini-3-pro")
    rows = {s["name"]: s for s in plan["strategies"]}
    tools = _compiled_tools(
        catalogs_dir / "github.json",
        "gemini-interactions",
        "gemini-3-pro",
        "gemini-interactions-native",
    )
    deferred = [t for t in tools if t.get("defer_loading") is True]
    assert deferred  # the strategy defers the catalog
    seen = [
        {k: t[k] for k in ("type", "name") if k in t} if t.get("defer_loading") is True else t
        for t in tools
    ]
    native = rows["gemini-interactions-native"]
    assert native["resident_chars"] == len(canonical_dumps(seen))
    assert native["resident_tokens_est"] < rows["flat"]["resident_tokens_est"] / 5
