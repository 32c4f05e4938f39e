"""Announcements, channels, dynamic state, implicit context, anchor, prefill, events, audit."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import BaseModel

from contextchef import (
    TARGETS,
    Announcement,
    CompileEvent,
    ContextChef,
    ToolCall,
    ToolResult,
    UsageError,
    assistant,
    tool_results,
    user,
)
from contextchef.session._volatile import DEFAULT_ANCHOR
from sdk_check import sdk_problems

ADDED = "Tools newly available: read_file, grep"
REMOVED = "web_search has been withdrawn; calls to it will be rejected"
BLOCK_ADDED = (
    '<announcements>\n<announcement id="tools:added">\n' + ADDED + "\n</announcement>\n"
    "</announcements>"
)
BLOCK_BOTH = (
    '<announcements>\n<announcement id="tools:added">\n'
    + ADDED
    + '\n</announcement>\n\n<announcement id="tools:removed">\n'
    + REMOVED
    + "\n</announcement>\n</announcements>"
)


class State(BaseModel):
    branch: str
    open_files: list[str]


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: File to read.
    """
    return path


def make_chef(**kwargs: Any) -> ContextChef:
    chef = ContextChef(**kwargs)
    chef.register_tools([read_file])
    chef.set_system_prompt("You are careful.")
    chef.set_history([user("hi"), assistant("hello"), user("read a.py")])
    return chef


def messages_of(target: str, payload: dict[str, Any]) -> list[dict[str, Any]]:
    key = {"responses": "input", "gemini": "contents"}.get(target, "messages")
    out: list[dict[str, Any]] = payload[key]
    return out


def test_announce_upsert_keeps_position_and_retract() -> None:
    chef = ContextChef()
    chef.announce("tools:added", "old")
    chef.announce("tools:removed", REMOVED)
    chef.announce("tools:added", ADDED, channel="user_tail")
    assert chef.get_announcements() == (
        Announcement(id="tools:added", content=ADDED, channel="user_tail"),
        Announcement(id="tools:removed", content=REMOVED, channel="auto"),
    )
    assert chef.retract_announcement("tools:added") is True
    assert chef.retract_announcement("tools:added") is False
    assert [a.id for a in chef.get_announcements()] == ["tools:removed"]


def test_bad_announcements_are_usage_errors() -> None:
    chef = ContextChef()
    with pytest.raises(UsageError, match="unknown channel 'tail'"):
        chef.announce("x", "y", channel="tail")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="non-empty string"):
        chef.announce("", "y")


def test_one_block_in_insertion_order_on_user_tail() -> None:
    chef = make_chef()
    chef.announce("tools:added", ADDED)
    chef.announce("tools:removed", REMOVED)
    last = chef.compile("openai").payload["messages"][-1]
    assert last == {"role": "user", "content": f"read a.py\n\n{BLOCK_BOTH}\n\n{DEFAULT_ANCHOR}"}
    assert len(chef.history) == 3  # nothing written into the history


def test_user_tail_order_state_context_announcements_anchor() -> None:
    chef = make_chef(anchor="State above.")
    chef.set_dynamic_state(State(branch="main", open_files=["a.py"]))
    chef.set_implicit_context(lambda: "cwd: /repo")
    chef.announce("tools:added", ADDED, channel="user_tail")
    blocks = chef.compile("anthropic").payload["messages"][-1]["content"]
    assert blocks == [
        {"type": "text", "text": "read a.py"},
        {
            "type": "text",
            "text": '<dynamic_state>\n{\n  "branch": "main",\n  "open_files": [\n    "a.py"\n'
            "  ]\n}\n</dynamic_state>\n\n<implicit_context>\ncwd: /repo\n</implicit_context>"
            f"\n\n{BLOCK_ADDED}\n\nState above.",
        },
    ]


def test_implicit_context_alone_does_not_trigger_the_anchor() -> None:
    chef = make_chef()
    chef.set_implicit_context(lambda: "cwd: /repo")
    last = chef.compile("openai").payload["messages"][-1]
    assert last["content"] == "read a.py\n\n<implicit_context>\ncwd: /repo\n</implicit_context>"
    chef.set_implicit_context(lambda: None)
    assert chef.compile("openai").payload["messages"][-1]["content"] == "read a.py"


def test_system_channel_per_target() -> None:
    chef = make_chef()
    chef.announce("tools:added", ADDED, channel="system")
    anthropic = chef.compile("anthropic", prefill="Sure").payload["messages"]
    assert anthropic[-2:] == [
        {"role": "system", "content": [{"type": "text", "text": BLOCK_ADDED}]},
        {"role": "assistant", "content": "Sure"},
    ]
    assert chef.compile("openai").payload["messages"][-1] == {
        "role": "system",
        "content": BLOCK_ADDED,
    }
    responses = chef.compile("responses").payload
    assert responses["instructions"] == "You are careful."
    assert responses["input"][-1] == {
        "type": "message",
        "role": "developer",
        "content": BLOCK_ADDED,
    }
    gemini = chef.compile("gemini", prefill="Sure").payload["contents"]
    assert gemini[-2:] == [
        {"role": "user", "parts": [{"text": "read a.py"}, {"text": BLOCK_ADDED}]},
        {"role": "model", "parts": [{"text": "Sure"}]},
    ]


def test_auto_routes_system_on_anthropic_user_tail_elsewhere() -> None:
    chef = make_chef()
    chef.announce("tools:added", ADDED)
    chef.announce("tools:removed", REMOVED, channel="user_tail")
    anthropic = chef.compile("anthropic").payload["messages"]
    assert anthropic[-1] == {"role": "system", "content": [{"type": "text", "text": BLOCK_ADDED}]}
    tail = anthropic[-2]["content"][-1]["text"]
    assert 'id="tools:removed"' in tail and 'id="tools:added"' not in tail
    assert tail.endswith(DEFAULT_ANCHOR)
    for target in ("openai", "deepseek", "responses", "gemini"):
        text = str(messages_of(target, chef.compile(target).payload)[-1])
        assert "tools:added" in text and "tools:removed" in text, target


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("channel", ["auto", "user_tail", "system"])
def test_payloads_validate_against_sdk_types(target: str, channel: str) -> None:
    chef = make_chef()
    call = ToolCall(id="call_1", name="read_file", arguments='{"path": "a.py"}')
    chef.append(
        assistant("", [call]),
        tool_results([ToolResult(call_id="call_1", name="read_file", content="x = 1")]),
    )
    chef.set_dynamic_state(State(branch="main", open_files=[]))
    chef.announce("tools:added", ADDED, channel=channel)  # type: ignore[arg-type]
    for prefill in (None, "Here"):
        payload = chef.compile(target, prefill=prefill).payload
        assert sdk_problems(target, payload) == [], (target, channel, prefill)


@pytest.mark.parametrize("target", TARGETS)
def test_prefix_is_stable_across_volatile_changes(target: str) -> None:
    chef = make_chef()
    before = chef.compile(target)
    chef.announce("tools:added", ADDED)
    chef.announce("tools:removed", REMOVED, channel="system")
    chef.set_dynamic_state(State(branch="dev", open_files=["b.py"]))
    chef.set_implicit_context(lambda: "cwd: /x")
    during = chef.compile(target)
    chef.retract_announcement("tools:added")
    chef.set_dynamic_state(None)
    after = chef.compile(target)
    for req in (during, after):
        assert req.segments["system"] == before.segments["system"]
        assert req.segments["tools"] == before.segments["tools"]
        assert req.prefix_fingerprint == before.prefix_fingerprint
    # every message before the one carrying the user tail is unchanged
    old = messages_of(target, before.payload)
    assert messages_of(target, during.payload)[: len(old) - 1] == old[:-1]


@pytest.mark.parametrize("target", ["anthropic", "gemini"])
def test_turn_n_is_a_byte_prefix_of_turn_n_plus_1_up_to_the_tail(target: str) -> None:
    chef = make_chef()
    chef.announce("tools:added", ADDED, channel="user_tail")
    turn_n = messages_of(target, chef.compile(target).payload)
    chef.append(assistant("done"), user("next"))
    turn_n1 = messages_of(target, chef.compile(target).payload)
    assert turn_n1[: len(turn_n) - 1] == turn_n[:-1]
    # the message that held the tail is now the same message without it
    tail_less = dict(turn_n[-1])
    key = "content" if target == "anthropic" else "parts"
    tail_less[key] = turn_n[-1][key][:-1]
    assert turn_n1[len(turn_n) - 1] == tail_less


def test_announcements_survive_clear_history() -> None:
    chef = make_chef()
    chef.announce("tools:added", ADDED, channel="user_tail")
    chef.clear_history()
    assert chef.history == ()
    assert chef.compile("openai").payload["messages"][-1] == {
        "role": "user",
        "content": f"{BLOCK_ADDED}\n\n{DEFAULT_ANCHOR}",
    }


def test_anthropic_hoists_once_when_no_user_message_precedes() -> None:
    chef = ContextChef()
    chef.set_system_prompt("S")
    chef.announce("tools:added", ADDED, channel="system")
    chef.set_history([assistant("I start.")])  # normalizer adds a user turn first
    assert chef.compile("anthropic").payload["messages"][-1]["role"] == "system"
    chef.clear_history()
    with pytest.warns(UserWarning, match="top-level system"):
        payload = chef.compile("anthropic").payload
    assert payload["system"] == [
        {"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": BLOCK_ADDED},
    ]
    assert payload["messages"] == []
    chef.compile("anthropic")  # no second warning (filterwarnings = error would raise)


def test_events_and_announcing_from_compile_done_lands_next_time() -> None:
    chef = make_chef()
    seen: list[tuple[str, str, bool]] = []

    def done(event: CompileEvent) -> None:
        seen.append((event.name, event.target, event.request is not None))
        chef.announce("tools:added", ADDED, channel="user_tail")

    chef.on("compile:start", lambda e: seen.append((e.name, e.target, e.request is not None)))
    chef.on("compile:done", done)
    first = chef.compile("openai")
    assert "announcements" not in first.to_json()
    assert seen == [("compile:start", "openai", False), ("compile:done", "openai", True)]
    assert "announcements" in chef.compile("openai").to_json()
    assert chef.off("compile:done", done) is True
    with pytest.raises(UsageError, match="unknown event"):
        chef.on("compile:end", done)  # type: ignore[arg-type]


def test_failing_hooks_in_compile_are_usage_errors() -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    chef.set_implicit_context(lambda: str(1 / 0))
    with pytest.raises(UsageError, match="implicit-context hook raised ZeroDivisionError"):
        chef.compile("openai")
    chef.set_implicit_context(None)

    def boom(event: Any) -> None:
        raise RuntimeError("x")

    chef.on("compile:done", boom)
    with pytest.raises(UsageError, match=r"remove it with chef\.off"):
        chef.compile("openai")


def test_cache_audit_flags_volatile_block_at_the_breakpoint(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chef = make_chef(cache_audit=True)
    chef.announce("tools:added", ADDED, channel="system")
    assert chef.compile("anthropic").audit == ()  # system breakpoint is before the tail
    chef.set_system_channel_breakpoint(True)
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        req = chef.compile("anthropic")
    assert req.payload["messages"][-1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    (finding,) = req.audit
    assert (finding.block, finding.position, finding.breakpoint) == ("announcements", 5, 5)
    assert "move the breakpoint earlier" in caplog.text
    assert make_chef().compile("anthropic").audit == ()


def test_prefill_rules() -> None:
    chef = make_chef()
    with pytest.raises(UsageError, match="whitespace"):
        chef.compile("anthropic", prefill="Sure ")
    chef.append(assistant("ok"))
    with pytest.raises(UsageError, match="ends with a user turn"):
        chef.compile("anthropic", prefill="Sure")


def test_dynamic_state_is_rendered_at_each_compile() -> None:
    chef = make_chef()
    state = State(branch="main", open_files=[])
    chef.set_dynamic_state(state)
    state.branch = "dev"
    assert '"branch": "dev"' in chef.compile("openai").payload["messages"][-1]["content"]
    with pytest.raises(UsageError, match="pydantic model"):
        chef.set_dynamic_state({"branch": "x"})  # type: ignore[arg-type]
