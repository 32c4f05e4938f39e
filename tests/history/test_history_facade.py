"""History integrity through the ContextChef facade: compile, compact, clear, offload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextchef import (
    ContextChef,
    ToolCall,
    ToolResult,
    assistant,
    load_demo_catalog,
    tool_results,
    user,
)


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini", "deepseek"])
def test_compile_repairs_an_unanswered_call_and_reports_it(target: str) -> None:
    chef = ContextChef()
    chef.register_tools([{"name": "shell", "description": "Run a command."}])
    history = [
        user("run ls"),
        assistant("", [ToolCall(id="call_A1", name="shell", arguments="{}")]),
        user("never mind, what time is it?"),
    ]
    chef.set_history(history)
    compiled = chef.compile(target)
    assert [c.kind for c in compiled.changes] == ["synthesized_result"]
    assert compiled.changes[0].call_id == "call_A1"
    assert chef.history == tuple(history)  # the stored history is not rewritten
    text = json.dumps(compiled.payload)
    assert "interrupted" in text and text.count("call_A1") >= 2  # the call and its answer


def test_compact_summarizes_old_turns_and_reannounces_loaded_tools() -> None:
    chef = ContextChef(default_defer=True)
    chef.register_catalog(load_demo_catalog())
    wire = chef.wire_name("list_buckets", server="cloud-storage")
    search = ToolCall(id="s1", name="tool_search", arguments=json.dumps({"tool_names": [wire]}))
    found = chef.execute(search)
    assert chef.loaded_tools == (wire,)
    chef.set_history(
        [
            user("which buckets exist?"),
            assistant("", [search]),
            tool_results([found.result]),
            assistant("Loaded it."),
            user("ok, now something else"),
            assistant("Sure."),
            user("and another thing"),
            assistant("Done."),
            user("last question"),
        ]
    )
    seen: list[str] = []

    def summarize(text: str) -> str:
        seen.append(text)
        return "The user asked about buckets."

    done = chef.compact(summarize, keep_recent_turns=2)
    assert "tool_search" in seen[0] and wire in seen[0]
    first = chef.history[0]
    assert "The user asked about buckets." in first.text
    assert f"load them again before calling them): {wire}" in first.text
    assert chef.loaded_tools == ()
    assert done.plan.to_summarize and chef.history[-1].text == "last question"
    for target in ("anthropic", "openai", "responses", "gemini"):
        assert chef.compile(target).changes == ()


def test_large_results_are_offloaded_and_readable(tmp_path: Path) -> None:
    chef = ContextChef(offload_dir=tmp_path, max_inline_chars=2_000)
    log = "\n".join(f"line {i}" for i in range(5_000)) + "\nERROR: linker exited with code 1"

    def cat_log() -> str:
        """Print the build log."""
        return log

    chef.register_tools([cat_log])
    done = chef.execute(ToolCall(id="c1", name="cat_log", arguments="{}"))
    stub = done.result.content
    assert len(stub) < 2_000 + 600 and done.result.call_id == "c1"
    assert "line 0" in stub and "ERROR: linker exited with code 1" in stub
    hint = stub[stub.index("read_offloaded(") + len("read_offloaded(") : stub.rindex(")")]
    args = json.loads(hint)
    args.update(offset=0, length=20)
    read = chef.execute(ToolCall(id="r1", name="read_offloaded", arguments=json.dumps(args)))
    assert read.result.content == log.encode()[:20].decode()


def test_clear_tool_results_keeps_pairing() -> None:
    chef = ContextChef()
    chef.register_tools([{"name": "t", "description": "T"}])
    history = [user("go")]
    for i in range(6):
        call = ToolCall(id=f"c{i}", name="t", arguments="{}")
        history += [
            assistant("", [call]),
            tool_results([ToolResult(call_id=f"c{i}", name="t", content="x" * 500)]),
        ]
    history += [assistant("All done."), user("done?")]
    chef.set_history(history)
    done = chef.clear_tool_results(keep_recent=2, clear_at_least=3)
    assert list(done.cleared_call_ids) == ["c0", "c1", "c2", "c3"]
    assert chef.compile("anthropic").changes == ()
