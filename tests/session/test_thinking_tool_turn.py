"""A tool turn without its thinking on a request that enables thinking (issue 23, item 8).

Anthropic requires the final assistant tool turn to start with its thinking block when
the request enables thinking, and answers 400 otherwise ("Expected `thinking` or
`redacted_thinking`, but found `tool_use` ... To avoid this requirement, disable
`thinking`"). A store that kept only text and calls loses that block. By default compile
follows the API's own advice (that request goes without ``thinking``, logged);
``missing_thinking="raise"`` gives `MissingThinkingError` before anything is sent. The
fake (`FakeAnthropic`, rule ``anthropic_thinking_leads_tool_turn``) enforces the rule, and
every request goes through the official ``anthropic`` SDK.
"""

from __future__ import annotations

import logging
from typing import Any

import anthropic
import pytest
from test_ingest import HX

from contextchef import (
    ContextChef,
    MissingThinkingError,
    ToolCall,
    ToolResult,
    UsageError,
    assistant,
    tool_results,
    user,
)
from contextchef.testing import FakeAnthropic, text, tool_calls

THINKING = {"type": "enabled", "budget_tokens": 1024}
READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def _stored_without_thinking() -> ContextChef:
    """A session resumed from a store that kept the tool turn's text and call only."""
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    call = ToolCall(id="toolu_1", name="read_file", arguments={"path": "a"})
    chef.set_history(
        [
            user("Read a."),
            assistant("Reading it.", tool_calls=[call]),
            tool_results([ToolResult(call_id="toolu_1", name="read_file", content="read a")]),
        ]
    )
    return chef


def _send(fake: FakeAnthropic, payload: dict[str, Any], headers: Any = None) -> Any:
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    return client.messages.create(**payload, extra_headers=headers or {})


def _compile(chef: ContextChef, **options: Any) -> Any:
    return chef.compile(
        "anthropic", model="m", max_tokens=2048, extra={"thinking": THINKING}, **options
    )


def test_by_default_that_request_goes_without_thinking_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeAnthropic().script(
        tool_calls(("read_file", {"path": "b"}), reasoning="next, b"), text("Done.", reasoning="ok")
    )
    chef = _stored_without_thinking()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        req = _compile(chef)
    assert "thinking" not in req.payload and req.dropped == ("thinking",)
    assert any(
        "messages[1]" in r.getMessage() and "without 'thinking'" in r.getMessage()
        for r in caplog.records
    )
    calls = chef.ingest(_send(fake, req.payload, req.headers))
    chef.run_tools(calls)
    # the new tool turn has its thinking: the next request enables thinking again
    req = _compile(chef)
    assert req.payload["thinking"] == THINKING and req.dropped == ()
    assert req.payload["messages"][-2]["content"][0]["type"] == "thinking"
    chef.ingest(_send(fake, req.payload, req.headers))
    assert fake.violations == () and len(fake.requests) == 2


def test_the_fake_refuses_the_request_as_it_would_have_been_sent() -> None:
    fake = FakeAnthropic().script(text("ok"))
    payload = {**_compile(_stored_without_thinking()).mutable_payload(), "thinking": THINKING}
    with pytest.raises(
        anthropic.BadRequestError, match="Expected `thinking` or `redacted_thinking`"
    ):
        _send(fake, payload)


def test_raise_gives_a_typed_error_before_anything_is_sent_and_changes_nothing() -> None:
    chef = _stored_without_thinking()
    with pytest.raises(MissingThinkingError, match=r"messages\[1\]") as caught:
        _compile(chef, missing_thinking="raise")
    assert caught.value.message_index == 1
    first = _compile(chef)  # the failed compile left the session as it was
    assert first.appended == len(first.payload["messages"]) and "thinking" not in first.payload
    with pytest.raises(UsageError, match="missing_thinking must be"):
        _compile(chef, missing_thinking="ignore")


@pytest.mark.parametrize(
    ("target", "model"),
    [
        ("anthropic", "claude-opus-5-5"),
        ("openai", "gpt-5.6"),
        ("responses", "gpt-5.6"),
        ("gemini", "gemini-3-pro"),
        ("deepseek", "deepseek-reasoner"),
    ],
)
@pytest.mark.parametrize("choice", ["bogus", "", None, True, ["drop"]])
def test_a_bad_choice_is_refused_on_every_target_before_anything_changes(
    target: str, model: str, choice: object
) -> None:
    # the option is checked with the others, whether or not the request enables thinking
    chef = _stored_without_thinking()
    before = chef.snapshot()
    with pytest.raises(UsageError, match=r"missing_thinking must be 'drop' or 'raise', got"):
        chef.compile(target, model=model, missing_thinking=choice)  # type: ignore[arg-type]
    assert chef.snapshot() == before
    assert chef.compile(target, model=model).dropped == ()


@pytest.mark.parametrize(
    "history",
    [
        # a new user message closes the tool loop: no thinking needed before it
        [
            user("Read a."),
            assistant("Reading.", tool_calls=[ToolCall(id="t1", name="read_file", arguments={})]),
            tool_results([ToolResult(call_id="t1", name="read_file", content="x")]),
            assistant("It says x."),
            user("Thanks; now b?"),
        ],
        # no tool turn at all
        [user("Hi."), assistant("Hello."), user("How are you?")],
    ],
)
def test_thinking_stays_where_the_rule_does_not_apply(history: list[Any]) -> None:
    chef = ContextChef()
    chef.register_tools([READ])
    chef.set_history(history)
    req = _compile(chef)
    assert req.payload["thinking"] == THINKING
    fake = FakeAnthropic().script(text("ok", reasoning="fine"))
    _send(fake, req.payload, req.headers)
    assert fake.violations == ()


def _opus_loop(fake: FakeAnthropic, chef: ContextChef, **options: Any) -> Any:
    req = chef.compile(
        "anthropic", model="claude-opus-5-5", extra={"thinking": THINKING}, **options
    )
    chef.run_tools(chef.ingest(_send(fake, req.payload, req.headers)))
    return req


def test_thinking_the_session_strips_after_an_edit_is_not_blamed_on_the_store(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Break-it find: after ``set_system_prompt`` mid tool loop on a prefix-check model,
    the session leaves out the thinking the edit invalidates; the request must go without
    ``thinking`` (even with ``raise``, which is about a store that lost it), and the log
    names the edit, not the store."""
    fake = FakeAnthropic().script(
        *(tool_calls(("read_file", {"path": p}), reasoning=f"read {p}") for p in "abc"),
        text("Done.", reasoning="ok"),
    )
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.set_system_prompt("Be careful.")
    chef.append(user("Read a, b and c."))
    _opus_loop(fake, chef, missing_thinking="raise")
    _opus_loop(fake, chef, missing_thinking="raise")
    chef.set_system_prompt("Be terse.")
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        req = _opus_loop(fake, chef, missing_thinking="raise")
    assert [e.kind for e in req.edits] == ["system"] and req.edits[0].thinking_stripped == 2
    assert "thinking" not in req.payload and req.dropped == ("thinking",)
    logged = [r.getMessage() for r in caplog.records if "without 'thinking'" in r.getMessage()]
    assert len(logged) == 1 and "after an edit" in logged[0]
    assert "lost before it was stored" not in logged[0]
    # every stored turn kept its thinking; the turn after the edit brings thinking back
    assert all(m.parts[0].kind == "reasoning" for m in chef.history if m.role == "assistant")
    req = _opus_loop(fake, chef, missing_thinking="raise")
    assert req.payload["thinking"] == THINKING and req.dropped == ()
    assert fake.violations == () and len(fake.requests) == 4


def test_a_turn_stored_without_thinking_after_an_edit_still_raises() -> None:
    """Only the turns the edit stripped are excused: a later turn the store lost is not."""
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    fake = FakeAnthropic().script(
        tool_calls(("read_file", {"path": "a"}), reasoning="a"),
        tool_calls(("read_file", {"path": "b"}), reasoning="b"),
    )
    chef.append(user("Read a."))
    _opus_loop(fake, chef)
    chef.set_system_prompt("Be terse.")
    _opus_loop(fake, chef)  # sent with the new system: its thinking is bound to it
    call = ToolCall(id="toolu_9", name="read_file", arguments={"path": "c"})
    chef.append(assistant("Reading c.", tool_calls=[call]))  # a store lost its thinking
    chef.append(tool_results([ToolResult(call_id="toolu_9", name="read_file", content="c")]))
    with pytest.raises(MissingThinkingError, match="lost before it was stored") as caught:
        chef.compile(
            "anthropic",
            model="claude-opus-5-5",
            extra={"thinking": THINKING},
            missing_thinking="raise",
        )
    assert caught.value.message_index == 5
    assert fake.violations == ()


def test_a_tool_turn_from_another_provider_is_said_so(caplog: pytest.LogCaptureFixture) -> None:
    # break-it 35 #4: after a Gemini tool turn, the warning guessed the thinking "lost
    # before it was stored?"; it now names the other case too (nothing was lost)
    from contextchef.testing import FakeGemini
    from sdk_send import send

    fake = FakeGemini().script(tool_calls(("read_file", {"path": "a"})))
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.append(user("Read a."))
    req = chef.compile("gemini", model="gemini-3-pro")
    calls = chef.ingest(send("gemini", fake, req.payload))
    chef.append(tool_results([chef.execute(c).result for c in calls]))
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        req = chef.compile("anthropic", model="claude-opus-5-5", extra={"thinking": THINKING})
    assert "thinking" not in req.payload
    logged = [r.getMessage() for r in caplog.records if "without 'thinking'" in r.getMessage()]
    assert len(logged) == 1 and "came from another provider" in logged[0]
