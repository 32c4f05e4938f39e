"""History integrity through the ContextChef facade: compile, compact, clear, offload."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextchef import (
    ContextChef,
    ToolCall,
    ToolResult,
    UsageError,
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


@pytest.mark.parametrize("target", ["anthropic", "gemini", "openai", "responses", "deepseek"])
def test_one_malformed_call_in_history_does_not_break_later_compiles(target: str) -> None:
    from contextchef import assistant, tool_results, user

    chef = ContextChef()

    def read_file(path: str) -> str:
        """Read."""
        return path

    chef.register_tools([read_file])
    calls = [
        ToolCall(id="toolu_1", name="read_file", arguments='{"path": "a"'),
        ToolCall(id="toolu_2", name="read_file", arguments='{"path": "b"}'),
    ]
    results = [chef.execute(c).result for c in calls]
    assert results[0].is_error and not results[1].is_error
    chef.set_history([user("read a and b"), assistant("", calls), tool_results(results)])
    compiled = chef.compile(target)
    text = json.dumps(compiled.payload)
    assert "toolu_1" in text and "toolu_2" in text
    kinds = ["replaced_malformed_arguments"]
    if target == "gemini":  # a hand-written call of the current turn has no signature
        kinds.append("signed_foreign_call")
    assert [c.kind for c in compiled.changes] == kinds
    assert compiled.changes[0].call_id == "toolu_1"
    assert chef.history[1].tool_calls[0].arguments == '{"path": "a"'  # stored as produced


def test_history_opening_with_the_assistant_gets_a_user_turn_first() -> None:
    from contextchef import assistant, user

    chef = ContextChef()
    chef.set_history([assistant("I was saying..."), user("go on")])
    for target in ("anthropic", "gemini"):
        compiled = chef.compile(target)
        assert compiled.changes[0].kind == "inserted_leading_user"
        first = (compiled.payload.get("messages") or compiled.payload["contents"])[0]
        assert first["role"] == "user"


def test_foreign_reasoning_is_dropped_before_roles_are_merged() -> None:
    from contextchef import ReasoningPart, TextPart, assistant, user
    from contextchef.history._messages import Message

    thinking = ReasoningPart(
        provider="anthropic",
        text="hmm",
        provider_data={
            "provider": "anthropic",
            "block": {"type": "thinking", "thinking": "hmm", "signature": "s"},
        },
    )
    chef = ContextChef()
    chef.register_tools([{"name": "t", "description": "T"}])
    call = ToolCall(id="c1", name="t", arguments="{}")
    chef.set_history(
        [
            user("hi"),
            Message(role="assistant", parts=(thinking, TextPart(text="let me look"))),
            assistant("", [call]),
            tool_results_of(call),
        ]
    )
    compiled = chef.compile("gemini")
    kinds = [c.kind for c in compiled.changes]
    assert "dropped_foreign_part" in kinds and "merged_roles" in kinds
    roles = [c["role"] for c in compiled.payload["contents"]]
    assert roles == ["user", "model", "user"]
    kept = chef.compile("anthropic")
    assert "dropped_foreign_part" not in [c.kind for c in kept.changes]
    assert kept.payload["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "hmm",
        "signature": "s",
    }


def tool_results_of(call: ToolCall) -> Any:
    from contextchef import tool_results

    return tool_results([ToolResult(call_id=call.id, name=call.name, content="ok")])


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


def test_empty_summary_is_refused_and_history_kept() -> None:
    from contextchef import assistant, user

    chef = ContextChef()
    history = [user(f"q{i}") if i % 2 == 0 else assistant(f"a{i}") for i in range(10)]
    chef.set_history(history)
    with pytest.raises(UsageError, match="empty summary"):
        chef.compact(lambda text: "  ", keep_recent_turns=1)
    assert chef.history == tuple(history)
    with pytest.raises(UsageError, match="integer >= 0"):
        chef.clear_tool_results(keep_recent=1.5)  # type: ignore[arg-type]


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


def test_bad_offload_handle_is_an_error_result(tmp_path: Any) -> None:
    chef = ContextChef(offload_dir=tmp_path)
    done = chef.execute(ToolCall(id="r", name="read_offloaded", arguments='{"handle": "nope"}'))
    assert done.result.is_error and done.result.call_id == "r"


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
