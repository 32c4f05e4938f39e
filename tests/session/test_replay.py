"""`contextchef replay`: recorded conversations through a session, per strategy."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import shared_data
from contextchef import ContextChef, MissingExtraError, ToolCall, assistant, tool_results, user
from contextchef.analysis._plot import plot_cumulative_cost
from contextchef.analysis._replay import (
    REPLAY_STRATEGIES,
    ReplayPricing,
    ReplayReport,
    replay,
)
from contextchef.analysis._transcripts import load_recording
from contextchef.cli import app
from contextchef.providers import TARGETS, get_adapter
from contextchef.tools._catalogs import load_catalog

TRANSCRIPTS = shared_data() / "transcripts"
FILES = sorted(p.name for p in TRANSCRIPTS.glob("*.json"))
FIGURES = (
    "input_chars",
    "input_tokens_est",
    "shared_prefix_bytes",
    "cache_read_tokens_est",
    "cache_write_tokens_est",
    "uncached_tokens_est",
    "cost_usd",
)

LOOKUP = {
    "name": "lookup",
    "description": "Look a word up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
}
CALL = {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "cache"}}
RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "a store"}


def hand_made(tmp_path: Path) -> Path:
    """Three requests: a question; the answer appended; the question edited afterwards."""
    first = {"role": "user", "content": "Define cache."}
    edited = {"role": "user", "content": "Define caches."}
    exchange = [{"role": "assistant", "content": [CALL]}, {"role": "user", "content": [RESULT]}]
    data = {
        "format": "anthropic",
        "turns_kind": "per_request",
        "system": "Be brief.",
        "tools": [LOOKUP],
        "request_params": [{"model": "claude-sonnet-4-6"}] * 3,
        "turns": [[first], [first, *exchange], [edited, *exchange]],
    }
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(data), "utf-8")
    return path


# The request in the cache's order, as the Anthropic adapter writes it (no closing "]").
SYSTEM = '[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}]'
TOOLS = (
    '[{"name":"lookup","description":"Look a word up.","input_schema":'
    '{"properties":{"q":{"type":"string"}},"type":"object"}}]'
)
FIRST = '[{"role":"user","content":"Define cache."}'  # a string content stays a string


def test_shared_prefix_bytes_on_a_hand_made_transcript(tmp_path: Path) -> None:
    report = replay([load_recording(hand_made(tmp_path))], strategies=["flat", "naive"])
    flat = [t.strategies["flat"] for t in report.turns]
    naive = [t.strategies["naive"] for t in report.turns]
    # 1: the answer was appended, so the whole first request is shared.
    assert (
        flat[0].shared_prefix_bytes == 0 and flat[0].input_chars == len(SYSTEM + TOOLS + FIRST) + 1
    )
    assert flat[1].shared_prefix_bytes == len(SYSTEM + TOOLS + FIRST) == 236
    assert flat[1].cause is None
    # 2: "Define cache." became "Define caches.": shared up to the "." it replaced.
    cut = SYSTEM + TOOLS + FIRST.removesuffix('."}')
    assert flat[2].shared_prefix_bytes == len(cut) == 233
    assert "history edit" in (flat[2].cause or "")
    # naive: no tool at first; the call to lookup adds it, so only the system is shared.
    assert (naive[0].tools, naive[1].tools, naive[1].revealed) == (0, 1, ("lookup",))
    assert naive[1].shared_prefix_bytes == len(SYSTEM) == 73
    assert "tools edit" in (naive[1].cause or "")
    assert "history edit" in (naive[2].cause or "")


def test_cache_split_and_cost_follow_the_pricing(tmp_path: Path) -> None:
    pricing = ReplayPricing(price_per_mtok=2.0, cache_read=0.5, cache_write=2.0)
    report = replay([load_recording(hand_made(tmp_path))], strategies=["flat"], pricing=pricing)
    first, second = (t.strategies["flat"] for t in report.turns[:2])
    assert first.cache_read_tokens_est == 0
    assert first.cache_write_tokens_est == first.input_tokens_est == 60  # ceil(237 / 4)
    assert second.cache_read_tokens_est == 59  # ceil(236 / 4): the shared text
    assert second.cache_read_tokens_est + second.cache_write_tokens_est == 107
    assert second.cost_usd == pytest.approx(2.0 * (0.5 * 59 + 2.0 * 48) / 1e6)


def test_client_deferral_reveals_through_tool_search(tmp_path: Path) -> None:
    report = replay([load_recording(hand_made(tmp_path))], strategies=["client"])
    client = [t.strategies["client"] for t in report.turns]
    assert client[0].revealed == () and client[1].revealed == ("lookup",)
    assert client[1].cause is None  # the search exchange is appended: the prefix holds
    assert client[1].shared_prefix_bytes > 0 and client[0].tools == client[1].tools == 2


def totals_are_the_sum(report: ReplayReport) -> None:
    for name, totals in report.totals.items():
        rows = [t.strategies[name] for t in report.turns if name in t.strategies]
        assert totals["requests"] == len(rows)
        for key in FIGURES:
            assert totals[key] == pytest.approx(sum(getattr(r, key) for r in rows)), key


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", FILES)
def test_every_transcript_replays_on_every_target(name: str, target: str) -> None:
    recording = load_recording(TRANSCRIPTS / name)
    adapter = get_adapter(target)
    if not adapter.model_rules(adapter.profile.default_model).prefill and any(
        r.messages and r.messages[-1].role == "assistant" for r in recording.requests
    ):  # Anthropic's pause_turn continues the model's turn: a prefill these models refuse
        pytest.skip(f"{name} resends the model's turn; {target} takes no prefill (issue 26)")
    report = replay([recording], target=target)
    (info,) = report.transcripts
    ran = [s for s in REPLAY_STRATEGIES if s not in info["skipped"]]
    assert ran[:3] == ["flat", "naive", "client"]
    sendable = len(recording.requests) - len(info["empty_requests"])
    assert len(report.turns) == len(recording.requests)
    for turn in report.turns:
        if turn.request not in info["empty_requests"]:
            assert sorted(turn.strategies) == sorted(ran)
    assert all(report.totals[s]["requests"] == sendable for s in ran)
    totals_are_the_sum(report)
    flat = [t.strategies["flat"] for t in report.turns if t.strategies]
    assert flat[0].shared_prefix_bytes == 0
    assert all(f.cache_read_tokens_est <= f.input_tokens_est for f in flat)
    assert flat[0].tools == len(recording.tools)


def test_native_runs_where_the_target_has_its_own_deferral() -> None:
    recording = load_recording(TRANSCRIPTS / "crewai-anthropic-parallel.json")  # sonnet 4.6
    assert "native" in replay([recording]).totals
    gemini = replay([recording], target="gemini")
    assert "native" not in gemini.totals
    assert "no tool deferral" in gemini.transcripts[0]["skipped"]["native"]
    # Interactions has a server search (unverified), but nothing our tool_search reveals into
    interactions = replay([recording], target="gemini-interactions")
    assert "native" not in interactions.totals
    skipped = interactions.transcripts[0]["skipped"]["native"]
    assert (
        skipped
        == "target 'gemini-interactions' has no tool deferral that our tool_search reveals into"
    )


def test_interactions_payloads_replay_and_diff(tmp_path: Path) -> None:
    chef = session_with_history()
    first = chef.compile("gemini-interactions", model="gemini-4-argon").payload
    chef.append(assistant("Done."), user("Again."))
    second = chef.compile("gemini-interactions", model="gemini-4-argon").payload
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path, payload in zip(paths, (first, second), strict=True):
        path.write_text(json.dumps(payload), "utf-8")
    recording = load_recording(paths[1])
    assert recording.system == "Be brief." and [t.name for t in recording.tools] == ["lookup"]
    assert [m.role for m in recording.requests[-1].messages][-2:] == ["assistant", "user"]
    report = replay([recording], strategies=["flat", "client"])
    assert report.transcripts[0]["target"] == "gemini-interactions"
    assert report.totals["flat"]["requests"] == len(recording.requests)
    extends = CliRunner().invoke(app, ["diff", *map(str, paths), "--json"])
    assert extends.exit_code == 0, extends.output
    assert json.loads(extends.output)["extends"] is True


def test_catalogs_enlarge_the_replayed_catalog() -> None:
    extra = load_catalog(shared_data() / "catalogs" / "github.json").tools
    recording = load_recording(TRANSCRIPTS / "llm-openai-chat-tool-chain.json")
    report = replay([recording], extra_tools=extra, strategies=["flat", "client"])
    assert report.transcripts[0]["tools"] == len(extra) + 2 >= 100
    flat = report.turns[0].strategies["flat"]
    client = report.turns[0].strategies["client"]
    assert flat.tools == len(extra) + 2 and client.tools == 2  # tool_search, defer_execute
    assert report.totals["client"]["cost_usd"] < report.totals["flat"]["cost_usd"]


def test_json_shape_and_totals(tmp_path: Path) -> None:
    paths = [str(hand_made(tmp_path)), str(TRANSCRIPTS / "llm-gemini-tools.json")]
    result = CliRunner().invoke(app, ["replay", *paths, "--json", "--strategy", "flat"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) == {"transcripts", "strategies", "pricing", "turns", "totals"}
    assert len(out["turns"]) == 3 + 3
    # the first recording's prices: its model's own (Anthropic: 5-minute writes)
    pricing = {"price_per_mtok": 3.0, "cache_read": 0.1, "cache_write": 1.25, "ttl": "5m"}
    assert pricing.items() <= out["pricing"].items()
    assert out["pricing"]["cache_write_by_ttl"] == {"5m": 1.25, "1h": 2.0}
    assert out["transcripts"][0]["pricing"] == out["pricing"]
    assert "Anthropic prompt caching" in out["pricing"]["source"]
    turn = out["turns"][1]
    assert set(turn) == {"transcript", "request", "messages", "strategies", "actual"}
    assert set(turn["strategies"]["flat"]) == {*FIGURES, "tools", "revealed", "cause", "not_read"}
    for key in FIGURES:
        total = sum(t["strategies"]["flat"][key] for t in out["turns"])
        assert out["totals"]["flat"][key] == pytest.approx(total)
    assert out["turns"][1]["strategies"]["flat"]["shared_prefix_bytes"] == 236


def unwrapped(text: str) -> str:
    """`text` with rich's line wrapping undone."""
    return " ".join(text.split())


def test_cli_table_and_errors(tmp_path: Path) -> None:
    ok = CliRunner().invoke(app, ["replay", str(hand_made(tmp_path)), "--strategy", "naive"])
    assert ok.exit_code == 0 and "Replay totals per strategy" in ok.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}', "utf-8")
    failed = CliRunner().invoke(app, ["replay", str(bad)])
    assert failed.exit_code == 2 and "not a recorded conversation" in unwrapped(failed.output)
    odd = CliRunner().invoke(app, ["replay", str(hand_made(tmp_path)), "--strategy", "lazy"])
    assert odd.exit_code == 2 and "unknown replay strategies ['lazy']" in unwrapped(odd.output)


def test_plot_is_a_png_with_one_line_per_strategy(tmp_path: Path) -> None:
    out = tmp_path / "cost.png"
    result = CliRunner().invoke(
        app, ["replay", str(TRANSCRIPTS / "crewai-anthropic-research.json"), "--plot", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    height, width, _ = matplotlib.image.imread(out).shape
    assert (width, height) == (800, 450)


def test_plot_without_matplotlib_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = replay([load_recording(hand_made(tmp_path))], strategies=["flat"])
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError, match=r'pip install "contextchef\[plot\]"') as caught:
        plot_cumulative_cost(report, tmp_path / "x.png")
    assert caught.value.extra == "plot" and caught.value.missing == ("matplotlib",)


def session_with_history() -> ContextChef:
    chef = ContextChef(volatile_lint="off")
    chef.register_tools([LOOKUP])
    chef.set_system_prompt("Be brief.")
    call = ToolCall(id="t1", name="lookup", arguments={"q": "cache"})
    from contextchef import ToolResult

    result = ToolResult(call_id="t1", name="lookup", content="a store")
    chef.set_history([user("Define cache."), assistant(tool_calls=[call]), tool_results([result])])
    return chef


def test_stored_payloads_message_lists_and_snapshots_replay(tmp_path: Path) -> None:
    chef = session_with_history()
    payload = chef.compile("anthropic", model="claude-sonnet-4-6").payload
    files: dict[str, Any] = {
        "payload.json": payload,
        "messages.json": payload["messages"],
        "snapshot.json": chef.snapshot(),
    }
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data), "utf-8")
        recording = load_recording(tmp_path / name)
        assert recording.cut and [len(r.messages) for r in recording.requests] == [1, 3]
        assert [t.name for t in recording.tools] == ["lookup"]
        report = replay([recording], strategies=["flat", "naive"])
        assert len(report.turns) == 2
        assert report.turns[1].strategies["naive"].revealed == ("lookup",)
    assert load_recording(tmp_path / "payload.json").system == "Be brief."
    assert load_recording(tmp_path / "snapshot.json").system == "Be brief."


def test_the_public_replay_api_returns_what_replay_json_prints() -> None:
    # contextchef.analysis.replay is the library form of `contextchef replay --json`: same
    # arguments, the same records (no private module needed)
    import contextchef.analysis as analysis

    path = TRANSCRIPTS / "llm-anthropic-thinking-tool-chain.json"
    result = CliRunner().invoke(
        app, ["replay", str(path), "--json", "--target", "responses", "--price", "2.5"]
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    report = analysis.replay(
        [path],
        target="responses",
        pricing=lambda target, model: analysis.ReplayPricing.for_model(
            target, model, price_per_mtok=2.5
        ),
    )
    assert isinstance(report, analysis.ReplayReport)
    assert report.to_dict() == printed
    assert printed["turns"] and set(printed["strategies"]) == set(REPLAY_STRATEGIES)
    # a path as text and a loaded Recording give the same records
    assert analysis.replay(str(path), target="responses").to_dict() == (
        analysis.replay([analysis.load_recording(path)], target="responses").to_dict()
    )


@pytest.mark.parametrize("junk", [[], [3], [None], "missing.json"])
def test_the_public_replay_api_refuses_junk(junk: Any) -> None:
    import contextchef.analysis as analysis
    from contextchef import UsageError

    with pytest.raises(UsageError):
        analysis.replay(junk)
