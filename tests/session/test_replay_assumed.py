"""Replaying a snapshot prices the session that ran, or says what it had to assume.

Regression (breakit22): ``contextchef replay`` on the snapshot of a 16-tool session on
``gpt-5.6`` reported ``model: gpt-5.4, tools: 1`` and said nothing: the snapshot names its
tools without defining them (registered from code and catalogs) and records no model.
Now the tools come from the ledgers (the ``tools`` array each target was last sent), and
every default the replay substitutes is in ``assumed`` and logged as a warning.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import openai
import pytest

from contextchef import ContextChef, tools_from_mcp, user
from contextchef.analysis import replay
from contextchef.testing import FakeOpenAIChat, httpx_for, text, tool_calls

FILES = [
    {
        "name": f"{verb}_file",
        "description": f"{verb.title()} a file.",
        "inputSchema": {"type": "object"},
    }
    for verb in ("read", "write", "move", "delete")
]


def grep(pattern: str) -> str:
    """Search the code base."""
    return "src/app.py:12: TODO"


def _snapshot(tmp_path: Path, *, default_defer: bool = False) -> tuple[ContextChef, Path]:
    """A three-turn gpt-5.6 session through the SDK client against the fake, saved."""
    chef = ContextChef(pin=["^grep$"], default_defer=default_defer)
    chef.register_tools(tools_from_mcp({"tools": FILES}, server="filesystem"))
    chef.register_tools([grep])
    chef.set_system_prompt("You are a careful engineering agent.")
    chef.set_history([user("Find the TODOs.")])
    fake = FakeOpenAIChat()
    client = openai.OpenAI(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    for turn in range(2):
        if turn:
            chef.append(user("more"))
        fake.script(tool_calls(("grep", {"pattern": f"p{turn}"})), text("ok"))
        while True:
            request = chef.compile("openai", model="gpt-5.6")
            reply = client.chat.completions.create(**request.payload)
            if not chef.run_tools(chef.ingest(reply)):
                break
    assert not fake.violations
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(chef.snapshot()), "utf-8")
    return chef, path


def test_a_snapshot_replays_with_the_tools_it_sent_and_says_the_model_it_assumed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    chef, path = _snapshot(tmp_path)
    registered = len(chef.view.direct) + len(chef.view.deferred)
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        report = replay([path], strategies=["flat"])
    (info,) = report.transcripts
    assert info["tools"] == registered > 1  # not the one tool the model called
    assert info["target"] == "openai"
    (note,) = info["assumed"]
    assert note.startswith("all 4 requests record no model: compiled and priced as ")
    assert "pass --model" in note
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [f"contextchef: replay snap.json: {note}"]
    # the model given: nothing assumed, nothing warned
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        given = replay([path], strategies=["flat"], model="gpt-5.6")
    assert given.transcripts[0]["assumed"] == [] and given.transcripts[0]["model"] == "gpt-5.6"
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_tools_a_snapshot_names_but_never_sent_are_said(tmp_path: Path) -> None:
    _, path = _snapshot(tmp_path, default_defer=True)  # deferred tools are never sent
    report = replay([path], strategies=["flat"], model="gpt-5.6")
    (note,) = report.transcripts[0]["assumed"]
    assert "tool(s) the snapshot names have no definition in it (never sent: filesystem__" in note
    assert "pass their catalog with --catalog" in note


def test_a_transcript_with_its_models_and_tools_assumes_nothing(tmp_path: Path) -> None:
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
    assert replay([path], strategies=["flat"]).transcripts[0]["assumed"] == []
    del data["request_params"]
    path.write_text(json.dumps(data), "utf-8")
    (note,) = replay([path], strategies=["flat"]).transcripts[0]["assumed"]
    assert note.startswith("all 2 requests record no model: compiled and priced as ")
