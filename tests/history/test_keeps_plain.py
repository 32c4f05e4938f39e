"""Plain parts are kept by every target, so the as-is check asks `keeps` about the rest only.

`valid_as_is` skips the target's ``keeps`` for a text part with visible text, a call and
a result of exactly those types when ``keeps`` is marked (`keeps_plain_parts`;
`get_adapter` marks the target table's adapters): one call less per message of a long
history (issue 27, item 2). These tests hold every target's ``keeps`` to that promise
for any text, arguments and provider data, check that the check answers the same with the
method asked about every part, and that a subclass overriding ``keeps`` is asked again.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_history_fuzz import FUZZ, HISTORIES

from contextchef.history._as_is import _PLAIN_KEPT, valid_as_is
from contextchef.history._messages import MediaPart, Message, Part, TextPart, ToolCall, ToolResult
from contextchef.providers import PRESETS, TARGETS, get_adapter
from contextchef.providers.openai_chat._render import OpenAIChatAdapter

visible = st.text(min_size=1, max_size=12).filter(lambda t: bool(t.strip()))
datas = st.sampled_from(
    [
        None,
        {"provider": "anthropic", "as_string": True},
        {"provider": "anthropic", "extra": {"cache_control": {"type": "ephemeral"}}},
        {"provider": "gemini", "extra": {"thought_signature": "@@"}},
        {"provider": "gemini", "synthetic_id": True},
        {"provider": "gemini-interactions", "step": {"type": "model_output"}},
        {"provider": "responses", "item": {"id": "msg_1"}},
        {"provider": "openai", "extra": {"index": 0}},
        {"provider": "other", "block": {"type": "thinking"}},
    ]
)


@st.composite
def plain_parts(draw: st.DrawFn) -> Part:
    kind = draw(st.sampled_from(["text", "call", "result"]))
    data = draw(datas)
    if kind == "text":
        return TextPart(text=draw(visible), provider_data=data)
    if kind == "call":
        arguments = draw(st.sampled_from(['{"a":1}', "{}", "not json", "[1]", '{"x": 1.5}']))
        return ToolCall(id="c1", name=draw(visible), arguments=arguments, provider_data=data)
    image = MediaPart(media_type="image/png", url="https://example.com/a.png")
    return ToolResult(
        call_id="c1",
        name="t",
        content=draw(st.text(max_size=8)),
        is_error=draw(st.booleans()),
        media=(image,) if draw(st.booleans()) else (),
        references=("t",) if draw(st.booleans()) else (),
        provider_data=data,
    )


@pytest.mark.parametrize("target", TARGETS)
@given(part=plain_parts())
def test_every_target_keeps_every_plain_part(target: str, part: Part) -> None:
    adapter = get_adapter(target)
    assert getattr(adapter.keeps, "__func__", None) in _PLAIN_KEPT
    assert adapter.keeps(part)


@pytest.mark.parametrize("target", TARGETS)
@FUZZ
@given(history=HISTORIES)
def test_the_check_answers_as_when_keeps_is_asked_about_every_part(
    target: str, history: list[Message]
) -> None:
    adapter = get_adapter(target)

    def every(part: Part) -> bool:  # not marked: asked about each part
        return adapter.keeps(part)

    for profile in (adapter.profile.history, *PRESETS.values()):
        for earlier in (None, {"v1"}):
            fast = valid_as_is(tuple(history), profile, adapter.keeps, earlier)
            assert fast == valid_as_is(tuple(history), profile, every, earlier)


def test_a_subclass_overriding_keeps_is_asked_about_plain_parts() -> None:
    class NoCalls(OpenAIChatAdapter):
        def keeps(self, part: Part) -> bool:
            return not isinstance(part, ToolCall)

    call = ToolCall(id="c1", name="t", arguments="{}")
    history = (
        Message(role="user", parts=(TextPart(text="go"),)),
        Message(role="assistant", parts=(call,)),
        Message(role="user", parts=(ToolResult(call_id="c1", name="t", content="ok"),)),
    )
    base: Any = get_adapter("openai")
    rules = base.profile.history
    assert valid_as_is(history, rules, base.keeps, None)
    assert not valid_as_is(history, rules, NoCalls().keeps, None)
