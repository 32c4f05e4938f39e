"""Prefix diagnostics (issue 13, item 2): where a request stops extending the last one, and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextchef import (
    ContextChef,
    UsageError,
    assistant,
    payload_break,
    prefix_break,
    user,
)
from contextchef.cli import app
from contextchef.tools._catalogs import load_catalog


def _chef(catalogs: Path) -> ContextChef:
    chef = ContextChef(defer=["github__*"], modes={"read": ["filesystem__read_*"]})
    for name in ("mcp-filesystem", "github"):
        chef.register_tools(load_catalog(catalogs / f"{name}.json").tools)
    chef.set_system_prompt("You are a careful coding agent.")
    chef.set_history([user("Hello.")])
    return chef


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_an_appended_turn_extends_the_last_request(catalogs_dir: Path, target: str) -> None:
    chef = _chef(catalogs_dir)
    first = chef.compile(target)
    chef.append(assistant("Hi."), user("Read README.md."))
    second = chef.compile(target)
    assert prefix_break(first, second) is None
    assert payload_break(first.payload, second.payload) is None


def test_a_tools_change_is_named_with_the_session_event(catalogs_dir: Path) -> None:
    chef = _chef(catalogs_dir)
    first = chef.compile("anthropic", model="claude-sonnet-4-5", strategy="client")
    chef.append(assistant("Hi."), user("Only read now."))
    chef.set_mode("read")
    second = chef.compile("anthropic", model="claude-sonnet-4-5", strategy="client")
    found = prefix_break(first, second)
    assert found is not None
    assert (found.segment, found.entry) == ("tools", None)
    system = len(first.segments["system"].encode())
    assert found.shared_bytes == system + found.byte
    old, new = first.segments["tools"].encode(), second.segments["tools"].encode()
    assert old[: found.byte] == new[: found.byte] and old[found.byte] != new[found.byte]
    assert found.cause.startswith("the session reported a tools edit")


def test_a_host_edit_of_history_names_the_entry(catalogs_dir: Path) -> None:
    chef = _chef(catalogs_dir)
    chef.append(assistant("Hi."), user("Read README.md."))
    first = chef.compile("openai")
    chef.append(assistant("Done."))
    history = list(chef.history)
    history[1] = assistant("Hello there.")  # rewrite an answered turn
    chef.set_history([*history, user("Next.")])
    second = chef.compile("openai")
    found = prefix_break(first, second)
    assert found is not None and found.segment == "messages"
    assert found.entry == 2  # system entry 0, user 1, the rewritten assistant turn 2
    assert "history edit" in found.cause


def test_a_strategy_switch_is_named(catalogs_dir: Path) -> None:
    chef = _chef(catalogs_dir)
    first = chef.compile("anthropic", model="claude-sonnet-4-5", strategy="client")
    chef.append(assistant("Hi."), user("Go on."))
    second = chef.compile("anthropic", model="claude-sonnet-4-5", strategy="anthropic-native")
    found = prefix_break(first, second)
    assert found is not None and found.segment == "tools"
    assert "tools" in found.cause or "strategy" in found.cause


def test_requests_for_two_targets_cannot_be_compared(catalogs_dir: Path) -> None:
    chef = _chef(catalogs_dir)
    with pytest.raises(UsageError, match="different targets"):
        prefix_break(chef.compile("anthropic"), chef.compile("gemini"))


def test_contextchef_diff_on_saved_payloads(tmp_path: Path, catalogs_dir: Path) -> None:
    chef = _chef(catalogs_dir)
    first = chef.compile("responses")
    chef.set_system_prompt("You are a careful coding agent. Be brief.")
    chef.append(assistant("Hi."), user("Go on."))
    second = chef.compile("responses")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(first.payload), "utf-8")
    b.write_text(json.dumps(second.payload), "utf-8")
    result = CliRunner().invoke(app, ["diff", str(a), str(b), "--json"])
    assert result.exit_code == 1, result.output  # the prefix broke: CI can fail on it
    out = json.loads(result.output)
    assert out["extends"] is False
    assert out["break"]["segment"] == "system"
    assert out["break"]["byte"] == len('"You are a careful coding agent.')
    same = CliRunner().invoke(app, ["diff", str(a), str(a)])
    assert "extends" in same.output and same.exit_code == 0
    broke = CliRunner().invoke(app, ["diff", str(a), str(b)])
    assert broke.exit_code == 1 and "system" in broke.output
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", "utf-8")
    refused = CliRunner().invoke(app, ["diff", str(a), str(bad)])
    assert refused.exit_code == 2
    assert "a request payload is a JSON object, got list" in " ".join(refused.output.split())


@pytest.mark.parametrize(
    ("junk", "named"),
    [
        ({"messages": [1, None]}, "messages[0] must be an object (a message)"),
        ({"messages": [{"role": "user", "content": "x"}, None]}, "messages[1] must be an object"),
        ({"input": [{"role": "user", "content": "x"}, "y"]}, "input[1] must be an object"),
        ({"messages": [{"role": "user"}], "tools": [3]}, "tools[0] must be an object"),
    ],
)
def test_contextchef_diff_names_a_junk_entry_not_two_targets(
    tmp_path: Path, catalogs_dir: Path, junk: dict[str, object], named: str
) -> None:
    # a junk entry made the payload look like another target's (breakit2 r_diff_cli)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_chef(catalogs_dir).compile("anthropic").payload), "utf-8")
    bad = tmp_path / "junk.json"
    bad.write_text(json.dumps(junk), "utf-8")
    for which, args in (("before", [bad, good]), ("after", [good, bad]), ("before", [bad, bad])):
        refused = CliRunner().invoke(app, ["diff", *map(str, args)])
        said = " ".join(refused.output.split())
        assert refused.exit_code == 2, said
        assert f"{which}: {named}" in said and "got " in said, said
        assert "different targets" not in said


def test_a_model_switch_shares_nothing(catalogs_dir: Path) -> None:
    chef = _chef(catalogs_dir)
    first = chef.compile("anthropic", model="claude-opus-5-5", strategy="client")
    chef.append(assistant("Hi."), user("Go on."))
    second = chef.compile("anthropic", model="claude-sonnet-5-5", strategy="client")
    found = prefix_break(first, second)
    assert found is not None and (found.shared_bytes, found.segment) == (0, "system")
    assert "model changed" in found.cause
    assert payload_break(first.payload, second.payload) == found


def test_a_tool_choice_change_breaks_the_conversation_cache() -> None:
    before = {"model": "m", "system": "s", "messages": [{"role": "user", "content": "hi"}]}
    after = {**before, "tool_choice": {"type": "any"}}
    found = payload_break(before, after)
    assert found is not None and (found.segment, found.entry) == ("messages", 0)
    assert found.shared_bytes == len(b'"s"')


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, {}),
        ({"messages": "x"}, {"messages": [1]}),
        ({"messages": [{"role": "user", "content": float("nan")}]}, {"messages": []}),
    ],
)
def test_payloads_that_cannot_be_read_are_usage_errors(before: object, after: object) -> None:
    with pytest.raises(UsageError):
        payload_break(before, after)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        ({"tools": 5, "messages": []}, {"messages": []}, "before: 'tools' must be a list"),
        ({"messages": []}, {"messages": 7}, "after: 'messages' must be a list"),
        ({"input": [1]}, {"input": []}, r"before: input\[0\] must be an object .* responses"),
        ({"contents": [], "tools": [[]]}, {"contents": []}, r"tools\[0\] must be an object"),
        ({"system": 5, "messages": []}, {"system": "s", "messages": []}, "'system' must be text"),
    ],
)
def test_payloads_with_fields_of_the_wrong_shape_name_the_field(
    before: dict[str, object], after: dict[str, object], message: str
) -> None:
    """Regression: ``{"tools": 5}`` was read as an empty tools list (``diff`` said "extends")."""
    with pytest.raises(UsageError, match=message):
        payload_break(before, after)
