"""Announcements, channels, dynamic state, implicit context, anchor, prefill, events, audit."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import BaseModel

from contextchef import (
    TARGETS,
    Announcement,
    CompiledRequest,
    CompileEvent,
    ContextChef,
    ToolCall,
    ToolResult,
    UsageError,
    assistant,
    tool_results,
    user,
)
from contextchef.providers import CacheAuditFinding, get_adapter
from contextchef.session._chef import DEFAULT_ANCHOR
from contextchef.session._request import LedgerEdit
from sdk_check import sdk_problems

ADDED = "Tools newly available: read_file, grep"
REMOVED = "web_search has been withdrawn; calls to it will be rejected"
BLOCK_ADDED = (
    '<announcements>\n<announcement id="tools:added">\n' + ADDED + "\n</announcement>\n"
    "</announcements>"
)
BLOCK_REMOVED = (
    '<announcements>\n<announcement id="tools:removed">\n' + REMOVED + "\n</announcement>\n"
    "</announcements>"
)
BLOCK_BOTH = (
    '<announcements>\n<announcement id="tools:added">\n'
    + ADDED
    + '\n</announcement>\n\n<announcement id="tools:removed">\n'
    + REMOVED
    + "\n</announcement>\n</announcements>"
)

GONE = "<announcements>\n(none: earlier announcements no longer apply)\n</announcements>"
EPHEMERAL = {"type": "ephemeral"}
DEV_STATE = '<dynamic_state>\n{\n  "branch": "dev",\n  "open_files": []\n}\n</dynamic_state>'
SYSTEM_AND_PREFILL = "claude-opus-4-8"
"""A Claude model that takes mid-conversation system messages and prefill."""


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
    key = {"responses": "input", "gemini": "contents", "gemini-interactions": "input"}.get(
        target, "messages"
    )
    out: list[dict[str, Any]] = payload[key]
    return out


def recorded(req: CompiledRequest) -> list[dict[str, Any]]:
    """The conversation as the target's ledger recorded it (no per-request cache mark)."""
    out: list[dict[str, Any]] = json.loads(req.segments["messages"])
    return out


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "contextchef"]


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
    req = chef.compile("anthropic")
    update = (
        '<dynamic_state>\n{\n  "branch": "main",\n  "open_files": [\n    "a.py"\n'
        "  ]\n}\n</dynamic_state>\n\n<implicit_context>\ncwd: /repo\n</implicit_context>"
        f"\n\n{BLOCK_ADDED}\n\nState above."
    )
    # one text part after the user's own text; the request marks it as the cache breakpoint
    assert req.payload["messages"][-1]["content"] == [
        {"type": "text", "text": "read a.py"},
        {"type": "text", "text": update, "cache_control": EPHEMERAL},
    ]
    # the recorded message (what the next request replays) carries no mark
    assert recorded(req)[-1]["content"] == [
        {"type": "text", "text": "read a.py"},
        {"type": "text", "text": update},
    ]
    # next turn: only the kinds that changed are stated, in the same order, then the anchor
    chef.append(assistant("ok"), user("next"))
    chef.set_dynamic_state(State(branch="dev", open_files=[]))
    chef.retract_announcement("tools:added")
    later = chef.compile("anthropic")
    assert later.edits == ()
    assert later.payload["messages"][-3:] == [
        {"role": "user", "content": recorded(req)[-1]["content"]},  # kept, without the mark
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "next"},
                {
                    "type": "text",
                    "text": f"{DEV_STATE}\n\n{GONE}\n\nState above.",
                    "cache_control": EPHEMERAL,
                },
            ],
        },
    ]


def test_implicit_context_alone_does_not_trigger_the_anchor() -> None:
    chef = make_chef()
    chef.set_implicit_context(lambda: "cwd: /repo")
    last = chef.compile("openai").payload["messages"][-1]
    assert last["content"] == "read a.py\n\n<implicit_context>\ncwd: /repo\n</implicit_context>"
    # compiled again before an answer: the unanswered turn is rendered again, now without it
    chef.set_implicit_context(lambda: None)
    assert chef.compile("openai").payload["messages"][-1]["content"] == "read a.py"
    # once stated and answered, its going away is stated too (still without the anchor)
    chef.set_implicit_context(lambda: "cwd: /repo")
    chef.compile("openai")
    chef.append(assistant("ok"), user("next"))
    chef.set_implicit_context(lambda: "  ")
    assert chef.compile("openai").payload["messages"][-1] == {
        "role": "user",
        "content": "next\n\n<implicit_context>\n(none)\n</implicit_context>",
    }
    chef.append(assistant("fine"), user("more"))
    assert chef.compile("openai").payload["messages"][-1] == {"role": "user", "content": "more"}


def test_system_channel_per_target() -> None:
    chef = make_chef()
    chef.announce("tools:added", ADDED, channel="system")
    # a Claude model that takes mid-conversation system messages: an entry after the last
    # user message, before the prefill; as the last message it carries the cache mark
    anthropic = chef.compile("anthropic", model=SYSTEM_AND_PREFILL, prefill="Sure")
    assert anthropic.payload["messages"][-3:] == [
        {"role": "user", "content": [{"type": "text", "text": "read a.py"}]},
        {
            "role": "system",
            "content": [{"type": "text", "text": BLOCK_ADDED, "cache_control": EPHEMERAL}],
        },
        {"role": "assistant", "content": "Sure"},
    ]
    assert recorded(anthropic)[-1] == {
        "role": "system",
        "content": [{"type": "text", "text": BLOCK_ADDED}],
    }
    # an unknown model (the default name) may not take one: the text joins the user turn
    assert chef.compile("anthropic").payload["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "read a.py"},
            {
                "type": "text",
                "text": f"{BLOCK_ADDED}\n\n{DEFAULT_ANCHOR}",
                "cache_control": EPHEMERAL,
            },
        ],
    }
    assert chef.compile("openai").payload["messages"][-2:] == [
        {"role": "user", "content": "read a.py"},
        {"role": "system", "content": BLOCK_ADDED},
    ]
    responses = chef.compile("responses").payload
    assert responses["instructions"] == "You are careful."
    assert responses["input"][-2:] == [
        {"type": "message", "role": "user", "content": "read a.py"},
        {"type": "message", "role": "developer", "content": BLOCK_ADDED},
    ]
    gemini = chef.compile("gemini").payload["contents"]  # no prefill: Gemini refuses it
    assert gemini[-1:] == [
        {
            "role": "user",
            "parts": [{"text": "read a.py"}, {"text": f"{BLOCK_ADDED}\n\n{DEFAULT_ANCHOR}"}],
        },
    ]


def test_auto_routes_system_on_anthropic_user_tail_elsewhere() -> None:
    chef = make_chef()
    chef.announce("tools:added", ADDED)
    chef.announce("tools:removed", REMOVED, channel="user_tail")
    anthropic = chef.compile("anthropic", model="claude-sonnet-5-5").payload["messages"]
    assert anthropic[-2:] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "read a.py"},
                {"type": "text", "text": f"{BLOCK_REMOVED}\n\n{DEFAULT_ANCHOR}"},
            ],
        },
        {
            "role": "system",
            "content": [{"type": "text", "text": BLOCK_ADDED, "cache_control": EPHEMERAL}],
        },
    ]
    # a Claude model without system messages: the system block follows the user_tail one
    sonnet_5 = chef.compile("anthropic", model="claude-sonnet-5").payload["messages"]
    assert sonnet_5[-1]["content"][-1] == {
        "type": "text",
        "text": f"{BLOCK_REMOVED}\n\n{BLOCK_ADDED}\n\n{DEFAULT_ANCHOR}",
        "cache_control": EPHEMERAL,
    }
    tail = f"read a.py\n\n{BLOCK_BOTH}\n\n{DEFAULT_ANCHOR}"
    for target in ("openai", "deepseek"):
        assert chef.compile(target).payload["messages"][-1] == {"role": "user", "content": tail}
    assert chef.compile("responses").payload["input"][-1] == {
        "type": "message",
        "role": "user",
        "content": tail,
    }
    assert chef.compile("gemini").payload["contents"][-1] == {
        "role": "user",
        "parts": [{"text": "read a.py"}, {"text": f"{BLOCK_BOTH}\n\n{DEFAULT_ANCHOR}"}],
    }


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
    # on Anthropic also a model that takes the system entry (and prefill after it)
    models = ("model", SYSTEM_AND_PREFILL) if target == "anthropic" else ("model",)
    for model in models:
        # Interactions has no trailing model entry to continue: its rules refuse prefill
        takes = get_adapter(target).model_rules(model).prefill
        for prefill in (None, "Here") if takes else (None,):
            payload = chef.compile(target, model=model, prefill=prefill).payload
            assert sdk_problems(target, payload) == [], (target, channel, model, prefill)
    # an answered turn, then the next one: the replayed entries still validate
    chef.append(assistant("ok"), user("next"))
    chef.set_dynamic_state(None)
    chef.retract_announcement("tools:added")
    payload = chef.compile(target, model=models[-1]).payload
    assert sdk_problems(target, payload) == [], (target, channel, "next turn")


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


NEXT_TURN: dict[str, list[dict[str, Any]]] = {
    "anthropic": [
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
    ],
    "openai": [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}],
    "deepseek": [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}],
    "responses": [
        {"type": "message", "role": "assistant", "content": "done"},
        {"type": "message", "role": "user", "content": "next"},
    ],
    "gemini": [
        {"role": "model", "parts": [{"text": "done"}]},
        {"role": "user", "parts": [{"text": "next"}]},
    ],
    "gemini-interactions": [
        {"type": "model_output", "content": [{"type": "text", "text": "done"}]},
        {"type": "user_input", "content": [{"type": "text", "text": "next"}]},
    ],
}


UPDATE = f"{BLOCK_ADDED}\n\n{DEFAULT_ANCHOR}"
CARRIER: dict[str, dict[str, Any]] = {
    "anthropic": {
        "role": "user",
        "content": [{"type": "text", "text": "read a.py"}, {"type": "text", "text": UPDATE}],
    },
    "openai": {"role": "user", "content": f"read a.py\n\n{UPDATE}"},
    "deepseek": {"role": "user", "content": f"read a.py\n\n{UPDATE}"},
    "responses": {"type": "message", "role": "user", "content": f"read a.py\n\n{UPDATE}"},
    "gemini": {"role": "user", "parts": [{"text": "read a.py"}, {"text": UPDATE}]},
    "gemini-interactions": {
        "type": "user_input",
        "content": [{"type": "text", "text": "read a.py"}, {"type": "text", "text": UPDATE}],
    },
}
"""The recorded last message of turn n: the user's text with the update."""


@pytest.mark.parametrize("target", TARGETS)
def test_turn_n_is_a_byte_prefix_of_turn_n_plus_1(target: str) -> None:
    chef = make_chef()
    chef.announce("tools:added", ADDED, channel="user_tail")
    turn_n = chef.compile(target)
    chef.append(assistant("done"), user("next"))
    turn_n1 = chef.compile(target)
    assert turn_n1.edits == ()
    # the recorded conversation only grows: turn n without its closing bracket starts turn n+1
    assert turn_n1.segments["messages"].startswith(turn_n.segments["messages"][:-1] + ",")
    sent_n, sent_n1 = recorded(turn_n), recorded(turn_n1)
    # the message that carried the update keeps it; nothing changed, so nothing is restated
    assert sent_n[-1] == CARRIER[target]
    assert sent_n1 == [*sent_n, *NEXT_TURN[target]]
    # the payload sends the recorded dicts (only the last block gets Anthropic's cache mark)
    assert messages_of(target, turn_n1.payload)[-len(sent_n1) : -1] == sent_n1[:-1]


def test_announcements_survive_clear_history() -> None:
    chef = make_chef()
    chef.announce("tools:added", ADDED, channel="user_tail")
    first = chef.compile("openai")
    assert first.payload["messages"][-1] == {
        "role": "user",
        "content": f"read a.py\n\n{BLOCK_ADDED}\n\n{DEFAULT_ANCHOR}",
    }
    chef.append(assistant("done"), user("next"))
    assert chef.compile("openai").payload["messages"][-1] == {"role": "user", "content": "next"}
    chef.append(assistant("ok"))
    chef.clear_history()
    assert chef.history == ()
    assert chef.get_announcements() == (
        Announcement(id="tools:added", content=ADDED, channel="user_tail"),
    )
    # the ledger restarts (an explicit edit) and states everything current again
    fresh = chef.compile("openai")
    assert fresh.payload["messages"] == [
        {"role": "system", "content": "You are careful."},
        {"role": "user", "content": f"{BLOCK_ADDED}\n\n{DEFAULT_ANCHOR}"},
    ]
    assert [(e.kind, e.history_index, e.wire_index) for e in fresh.edits] == [("history", 0, 0)]
    chef.append(user("again"))  # before an answer: the same update, now with the user's text
    assert chef.compile("openai").payload["messages"][-1] == {
        "role": "user",
        "content": f"again\n\n{BLOCK_ADDED}\n\n{DEFAULT_ANCHOR}",
    }


def test_system_channel_waits_for_a_user_turn_and_is_never_hoisted() -> None:
    chef = ContextChef()
    chef.set_system_prompt("S")
    chef.announce("tools:added", ADDED, channel="system")
    system = [{"type": "text", "text": "S", "cache_control": EPHEMERAL}]
    marked = {
        "role": "system",
        "content": [{"type": "text", "text": BLOCK_ADDED, "cache_control": EPHEMERAL}],
    }
    opening = "(The conversation so far continues from an earlier context.)"
    chef.set_history([assistant("I start.")])  # the normalizer adds a user turn first
    # the history ends with the assistant: nothing is attached, and nothing is hoisted
    # (filterwarnings = error: a warning would fail this test); opus-4-8 takes system
    # messages and a trailing assistant turn, which opus-5-5 refuses
    with pytest.raises(UsageError, match="rejects a trailing assistant message"):
        chef.compile("anthropic", model="claude-opus-5-5")
    req = chef.compile("anthropic", model="claude-opus-4-8")
    assert req.payload["system"] == system
    assert req.payload["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": opening}]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "I start.", "cache_control": EPHEMERAL}],
        },
    ]
    # stated at the next user turn
    chef.append(user("go"))
    assert chef.compile("anthropic", model="claude-opus-4-8").payload["messages"][-2:] == [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        marked,
    ]
    chef.clear_history()
    with pytest.raises(UsageError, match="conversation is empty"):
        chef.compile("anthropic", model="claude-opus-4-8")
    chef.append(user("again"))
    assert chef.compile("anthropic", model="claude-opus-4-8").payload["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
        marked,
    ]


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


def test_cache_audit_reports_history_edits_not_volatile_updates(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chef = make_chef(cache_audit=True)
    chef.announce("tools:added", ADDED, channel="system")
    model = "claude-opus-5-5"
    first = chef.compile("anthropic", model=model)
    assert (first.audit, first.edits) == ((), ())
    # the system-channel breakpoint switch is kept for compatibility and changes nothing:
    # every request marks its last block, the system entry here
    chef.set_system_channel_breakpoint(True)
    again = chef.compile("anthropic", model=model)
    assert again.to_json() == first.to_json()
    assert again.payload["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    assert again.audit == ()
    # volatile updates only append: no finding, however the state changes
    chef.append(assistant("done"), user("next"))
    chef.set_dynamic_state(State(branch="dev", open_files=[]))
    chef.retract_announcement("tools:added")
    assert chef.compile("anthropic", model=model).audit == ()
    chef.append(assistant("ok"), user("third"))
    assert chef.compile("anthropic", model=model).audit == ()
    # an edit of something already sent and answered is reported, and logged
    chef.append(assistant("fine"), user("fourth"))
    history = list(chef.history)
    history[4] = user("NEXT")
    chef.set_history(history)
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        edited = chef.compile("anthropic", model=model)
    # the byte of the messages segment where wire entry 4, the first sent again, starts
    byte = (
        len(
            edited.segments["messages"]
            .split(',{"role":"assistant","content":[{"type":"text","text":"done"')[0]
            .encode()
        )
        + 1
    )
    assert edited.segments["messages"].encode()[byte:].startswith(b'{"role":"assistant"')
    detail = (
        "already-sent history changed (history message 4); the conversation is sent again "
        f"from wire entry 4, byte {byte:,} of the messages segment"
    )
    assert edited.edits == (
        LedgerEdit(kind="history", history_index=4, wire_index=4, detail=detail),
    )
    (finding,) = edited.audit
    assert finding == CacheAuditFinding(
        block="history edit", position=4, breakpoint=-1, detail=detail
    )
    assert (
        finding.message == f"cache audit: history edit: {detail}; the prompt cache restarts there"
    )
    assert logged(caplog) == [f"contextchef: anthropic: {detail}"]
    # entries before the edit are replayed unchanged; from there the conversation is sent
    # again, and what changed since that point is stated at its end
    assert recorded(edited)[:4] == recorded(first)
    assert recorded(edited)[4:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        {"role": "user", "content": [{"type": "text", "text": "NEXT"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": "third"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "fine"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "fourth"},
                {"type": "text", "text": f"{DEV_STATE}\n\n{DEFAULT_ANCHOR}"},
            ],
        },
        {"role": "system", "content": [{"type": "text", "text": GONE}]},
    ]
    # without the audit, the edit is still listed (and logged), but nothing is audited
    plain = make_chef()
    plain.compile("anthropic")
    plain.append(assistant("done"), user("next"))
    plain.compile("anthropic")
    plain.set_history([user("hey"), *plain.history[1:]])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        req = plain.compile("anthropic")
    assert [(e.kind, e.history_index, e.wire_index) for e in req.edits] == [("history", 0, 0)]
    assert req.audit == ()
    assert logged(caplog) == [f"contextchef: anthropic: {req.edits[0].detail}"]


def test_prefill_rules() -> None:
    chef = make_chef()
    with pytest.raises(UsageError, match="whitespace"):
        chef.compile("anthropic", prefill="Sure ")
    with pytest.raises(UsageError, match=r"model 'claude-opus-5-5' rejects prefill"):
        chef.compile("anthropic", model="claude-opus-5-5", prefill="Sure")
    # an unknown model: prefill is left to the provider
    assert chef.compile("anthropic", prefill="Sure").payload["messages"][-1] == {
        "role": "assistant",
        "content": "Sure",
    }
    chef.append(assistant("ok"))
    with pytest.raises(UsageError, match="ends with a user turn"):
        chef.compile("anthropic", prefill="Sure")


def test_dynamic_state_is_dumped_at_each_compile_and_stated_when_changed() -> None:
    chef = make_chef()
    state = State(branch="main", open_files=[])
    chef.set_dynamic_state(state)
    state.branch = "dev"
    assert chef.compile("openai").payload["messages"][-1] == {
        "role": "user",
        "content": f"read a.py\n\n{DEV_STATE}\n\n{DEFAULT_ANCHOR}",
    }
    # unchanged: not repeated in the next turn
    chef.append(assistant("ok"), user("next"))
    assert chef.compile("openai").payload["messages"][-1] == {"role": "user", "content": "next"}
    # changed in place: stated again
    state.open_files.append("b.py")
    chef.append(assistant("ok"), user("more"))
    assert chef.compile("openai").payload["messages"][-1] == {
        "role": "user",
        "content": 'more\n\n<dynamic_state>\n{\n  "branch": "dev",\n  "open_files": [\n'
        f'    "b.py"\n  ]\n}}\n</dynamic_state>\n\n{DEFAULT_ANCHOR}',
    }
    # cleared: stated as null
    chef.set_dynamic_state(None)
    chef.append(assistant("ok"), user("last"))
    assert chef.compile("openai").payload["messages"][-1] == {
        "role": "user",
        "content": f"last\n\n<dynamic_state>\nnull\n</dynamic_state>\n\n{DEFAULT_ANCHOR}",
    }
    with pytest.raises(UsageError, match="pydantic model"):
        chef.set_dynamic_state({"branch": "x"})  # type: ignore[arg-type]


def test_a_dynamic_state_no_json_holds_is_refused_when_set_and_at_snapshot(
    tmp_path: Any,
) -> None:
    """Break-it round 34 (#1): a model ``model_dump(mode="json")`` cannot dump (an arbitrary
    type, nesting past pydantic's depth) was taken by `set_dynamic_state`; compile refused
    it, but `snapshot()` and `SessionSync.save` raised bare pydantic errors. It is refused
    when set; one that becomes so after it was set is a `UsageError` at snapshot."""
    from pydantic import ConfigDict

    from contextchef import SessionSync, SQLiteSessionStore

    class Thing:
        pass

    class Odd(BaseModel):
        model_config = ConfigDict(arbitrary_types_allowed=True)
        t: Any = None

    deep: Any = 1.5
    for _ in range(300):
        deep = [deep]
    chef = ContextChef()
    chef.set_history([user("hi")])
    for bad in (Odd(t=Thing()), Odd(t=deep)):
        with pytest.raises(UsageError, match=r"^dynamic state is not plain JSON: "):
            chef.set_dynamic_state(bad)
    state = Odd(t=[1])
    chef.set_dynamic_state(state)
    state.t = Thing()  # the host's model changed after it was set
    store = SQLiteSessionStore(tmp_path / "s.db")
    for write in (chef.snapshot, lambda: SessionSync(store, "s").save(chef)):
        with pytest.raises(UsageError, match=r"^dynamic state is not plain JSON: "):
            write()
    state.t = [2]
    assert SessionSync(store, "s").save(chef) == 1
