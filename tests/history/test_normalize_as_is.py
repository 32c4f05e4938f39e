"""The normalizer's one-pass check for a history valid as it is gives what the steps give.

`normalize` returns a history unchanged, without running its repair steps, when one pass
finds nothing they would change (`_valid_as_is`). These tests run both ways on the
fuzz suite's histories (valid and corrupt, and each one's normalized form, which is valid)
for every preset with every target's `keeps`, from the start and as a continuation, and
compare the messages (by identity), the changes and the notes.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_history_fuzz import FUZZ, HISTORIES, valid_history

from contextchef._errors import CorruptHistoryError
from contextchef.history import _normalize
from contextchef.history._messages import Message, TextPart, ToolCall, ToolResult
from contextchef.history._normalize import Continuation, Normalized, normalize
from contextchef.providers import PRESETS, TARGETS, get_adapter


@st.composite
def near_valid(draw: st.DrawFn) -> list[Message]:
    """A valid history with one edit: a part dropped, doubled or moved, a message dropped."""
    history = draw(valid_history())
    i = draw(st.integers(0, len(history) - 1))
    parts = list(history[i].parts)
    j = draw(st.integers(0, len(parts) - 1))
    edit = draw(st.sampled_from(["drop", "double", "move", "message", "blank", "swap"]))
    if edit == "drop":
        del parts[j]
    elif edit == "double":
        parts.insert(j, parts[j])
    elif edit == "move" and i + 1 < len(history):
        history[i + 1] = Message(role=history[i + 1].role, parts=(*history[i + 1].parts, parts[j]))
        del parts[j]
    elif edit == "message":
        return history[:i] + history[i + 1 :]
    elif edit == "blank":
        parts.insert(j, TextPart(text=" "))
    else:
        parts.reverse()
    history[i] = Message(role=history[i].role, parts=tuple(parts))
    return history


def _run(history: list[Message] | tuple[Message, ...], **kwargs: Any) -> Normalized | str:
    try:
        return normalize(history, **kwargs)
    except CorruptHistoryError as exc:  # a part in a role that cannot hold it
        return str(exc)


def _both(history: list[Message] | tuple[Message, ...], **kwargs: Any) -> None:
    fast = _run(history, **kwargs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_normalize, "_valid_as_is", lambda *a: False)
        steps = _run(history, **kwargs)
    if isinstance(fast, str) or isinstance(steps, str):
        assert fast == steps
        return
    assert len(fast.messages) == len(steps.messages)
    assert all(a is b or a == b for a, b in zip(fast.messages, steps.messages, strict=True))
    assert fast.changes == steps.changes
    assert fast.notes == steps.notes


@pytest.mark.parametrize("target", TARGETS)
@FUZZ
@given(history=st.one_of(HISTORIES, near_valid()))
def test_the_check_agrees_with_the_steps(target: str, history: list[Message]) -> None:
    adapter = get_adapter(target)
    keeps = adapter.keeps
    for profile in (adapter.profile.history, *PRESETS.values()):
        _both(history, profile=profile, keeps=keeps)
        _both(history, profile=profile, keeps=keeps, after=Continuation(offset=3, calls={"v1"}))
        done = _run(history, profile=profile, keeps=keeps)
        if not isinstance(done, str):
            _both(done.messages, profile=profile, keeps=keeps)
            _both(done.messages, profile=profile)


def test_a_valid_history_is_given_back_as_it_is() -> None:
    call = ToolCall(id="c1", name="read", arguments='{"path": "a"}')
    history = (
        Message(role="user", parts=(TextPart(text="look"),)),
        Message(role="assistant", parts=(call,)),
        Message(role="user", parts=(ToolResult(call_id="c1", name="read", content="x"),)),
        Message(role="assistant", parts=(TextPart(text="done"),)),
        Message(role="user", parts=(TextPart(text="next"),)),
    )
    for target in TARGETS:
        adapter = get_adapter(target)
        assert _normalize._valid_as_is(history, adapter.profile.history, adapter.keeps, None)
        out = normalize(history, profile=adapter.profile.history, keeps=adapter.keeps)
        assert out.messages == history and all(
            a is b for a, b in zip(out.messages, history, strict=True)
        )
        assert out.changes == () and out.notes == ()
    # each of these sends the history to the steps, which repair it
    other = ToolCall(id="c2", name="read", arguments="{}")
    two = Message(role="assistant", parts=(call, other))
    result = history[2]
    with_text = Message(role="user", parts=(*result.parts, TextPart(text="and")))
    for broken, preset in (
        ((*history, Message(role="assistant", parts=(call,))), "anthropic"),  # id reused
        ((*history[:4], Message(role="user", parts=(TextPart(text=" "),))), "anthropic"),
        (history[1:], "anthropic"),  # the assistant first
        ((history[0], two, result), "anthropic"),  # one of two calls answered
        ((history[0], two, history[3]), "openai"),  # a batch and no results after it
        ((history[0], history[1], with_text), "openai"),  # results and text: split on Chat
        ((history[0], history[0]), "anthropic"),  # roles not alternating
        ((history[0], history[1]), "openai"),  # the last batch unanswered
        ((*history[:3], result), "openai"),  # a second result
        ((history[0], Message(role="assistant", parts=(ToolCall(id="c3", name="r"),))), "openai"),
    ):
        assert not _normalize._valid_as_is(broken, PRESETS[preset], None, None)
        assert normalize(broken, profile=PRESETS[preset]).changes


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_compile_leaves_the_callers_calls_as_they_were(target: str) -> None:
    """breakit9 03: the argument parse was written into the caller's `ToolCall` objects.

    A host that pickles or hashes its history to see whether it changed saw a change.
    """
    import pickle

    from contextchef import ContextChef, assistant, tool_results, user

    history = [user("go")]
    for k in range(5):
        call = ToolCall(id=f"c{k}", name="f", arguments=f'{{"k": {k}}}')
        history.append(assistant(tool_calls=[call]))
        history.append(tool_results([ToolResult(call_id=f"c{k}", name="f", content="ok")]))
    history.append(user("done?"))
    before = [pickle.dumps(m) for m in history]
    calls = [p for m in history for p in m.parts if isinstance(p, ToolCall)]
    attributes = [dict(vars(c)) for c in calls]
    chef = ContextChef()
    chef.set_history(history)
    chef.compile(target, model="m")
    assert [pickle.dumps(m) for m in history] == before
    assert [dict(vars(c)) for c in calls] == attributes


def test_a_part_in_the_wrong_role_is_refused_before_the_check_answers() -> None:
    """`normalize` runs `check_message` only when the check fails: the check must fail
    on every entry `check_message` refuses, so each still raises, naming its message."""
    from contextchef.history._as_is import placed
    from contextchef.history._forms import checked_history
    from contextchef.history._messages import ReasoningPart

    call = ToolCall(id="c1", name="read", arguments="{}")
    result = ToolResult(call_id="c1", name="read", content="x")
    first = Message(role="user", parts=(TextPart(text="go"),))
    for bad, words in (
        (Message(role="user", parts=(call,)), "tool call 'c1' is in a user message"),
        (Message(role="assistant", parts=(result,)), "belong to user messages"),
        (
            Message(role="user", parts=(ReasoningPart(provider="anthropic", text="t"),)),
            "reasoning belongs",
        ),
        (Message(role="system", parts=(TextPart(text="s"),)), "is not 'user' or 'assistant'"),  # type: ignore[arg-type]
    ):
        history = (first, Message(role="assistant", parts=(TextPart(text="ok"),)), bad)
        for target in TARGETS:
            adapter = get_adapter(target)
            rules = adapter.profile.history
            assert not _normalize._valid_as_is(history, rules, adapter.keeps, None)
            with pytest.raises(CorruptHistoryError, match=words) as info:
                normalize(history, profile=rules, keeps=adapter.keeps)
            assert info.value.index == 2
        assert not placed(bad)  # set_history's own fast test: checked, and refused
        with pytest.raises(CorruptHistoryError, match=words):
            checked_history(history)
    assert all(placed(m) for m in (first, Message(role="assistant", parts=(call,))))
