"""One-part messages rendered straight into records equal the general renderers' records.

A cold compile renders every message once; Responses and Chat render a message of one
text part, call or result with nothing recorded from their wire straight into read-only
records (`_lone_item`, `_lone_message`) instead of building dicts for `record` to copy.
These tests render each such message both ways, the general renderer's output then
`record` (as the session records what it renders), and compare the values and the
record types at every depth (`RecordDict` vs `MixedDict`: which JSON backend may write
it), for any text, any ids, hinted and foreign provider data, media, errors and
subclassed parts (which take the general way). Every renderer's entries, as the session
records them, hold the record types `record` gives their plain copies (Anthropic and
Gemini render every plain block and envelope straight into records).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextchef._records import plain, record
from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.providers import get_adapter
from contextchef.providers._base import object_arguments
from contextchef.providers.openai_chat._render import OpenAIChatAdapter
from contextchef.providers.responses._render import ResponsesAdapter, _InputBuilder


class _Text(str):
    """A text subclass: a record of it is mixed (not written by the fast encoder)."""


class _Call(ToolCall):
    """A call subclass: rendered the general way."""


def shape(value: Any) -> Any:
    """`value`'s types at every depth, with its values."""
    if isinstance(value, dict):
        return (type(value), [(k, shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return (type(value), [shape(v) for v in value])
    return (type(value), value)


texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", "\n\t", "héllo 😀"]),
    st.text(max_size=6).map(_Text),
)
ids = st.from_regex(r"[A-Za-z0-9_]{1,10}", fullmatch=True)
datas = st.sampled_from(
    [
        None,
        {"provider": "responses", "extra": {"id": "fc_1", "status": "completed"}},
        {"provider": "responses", "item": {"id": "msg_1", "content": "list"}},
        {"provider": "openai", "message": {"content": "list"}},
        {"provider": "openai", "extra": {"index": 0}},
        {"provider": "gemini", "extra": {"thought_signature": "c2ln"}},
        {"provider": "anthropic", "extra": {"cache_control": {"type": "ephemeral"}}},
    ]
)
media = st.lists(
    st.builds(MediaPart, media_type=st.sampled_from(["image/png", "application/pdf"]), url=ids),
    max_size=1,
)


@st.composite
def lone_messages(draw: st.DrawFn) -> Message:
    kind = draw(st.sampled_from(["text", "call", "sub_call", "result"]))
    data = draw(datas)
    part: Part
    if kind == "text":
        part = TextPart(text=draw(texts), provider_data=data)
        return Message(role=draw(st.sampled_from(["user", "assistant"])), parts=(part,))
    if kind in ("call", "sub_call"):
        made = _Call if kind == "sub_call" else ToolCall
        arguments = draw(st.sampled_from(['{"a":1}', "{}", '{"x": 1.5}', "not json", "[1]"]))
        part = made(id=draw(ids), name=draw(ids), arguments=arguments, provider_data=data)
        return Message(role="assistant", parts=(part,))
    part = ToolResult(
        call_id=draw(ids),
        name=draw(ids),
        content=draw(texts),
        is_error=draw(st.booleans()),
        media=tuple(draw(media)),
        provider_data=data,
    )
    return Message(role="user", parts=(part,))


@settings(max_examples=400, deadline=None)
@given(lone_messages())
def test_responses_renders_a_lone_part_as_the_builder_and_record_would(message: Message) -> None:
    adapter = get_adapter("responses")
    assert isinstance(adapter, ResponsesAdapter)
    builder = _InputBuilder(message.role, set())
    for part in message.parts:
        builder.add(part)
    builder.flush()
    general = [record(item) for item in builder.items]
    made = [record(item) for item in adapter.render_messages([message])]  # as a session records
    assert shape(made) == shape(general)


@settings(max_examples=400, deadline=None)
@given(lone_messages(), st.sampled_from(["openai", "deepseek"]))
def test_chat_renders_a_lone_part_as_its_renderers_and_record_would(
    message: Message, target: str
) -> None:
    adapter = get_adapter(target)
    assert isinstance(adapter, OpenAIChatAdapter)
    (reasoning,) = adapter.reasoning_content([message], ())
    if message.role == "assistant":
        general = adapter.render_assistant(message, reasoning)
    else:
        general = adapter.render_user(message)
    made = [record(item) for item in adapter.render_messages([message])]  # as a session records
    assert shape(made) == shape([record(item) for item in general])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(['{"a":[1,{"b":null}]}', '{"x": 1.5}', "{}", "oops", "[1]"]))
def test_read_only_arguments_are_the_record_of_the_plain_ones(arguments: str) -> None:
    for call in (ToolCall(id="c", name="f", arguments=arguments), ToolCall(id="c", name="f")):
        assert shape(object_arguments(call, read_only=True)) == shape(
            record(object_arguments(call))
        )
    built = ToolCall(id="c", name="f", arguments={"k": [1, {"z": True}]})  # a kept copy
    assert shape(object_arguments(built, read_only=True)) == shape(record(object_arguments(built)))


def reasoning(draw: st.DrawFn) -> Part:
    """An Anthropic thinking part (sealed or not) or another provider's reasoning."""
    signature = draw(st.sampled_from(["sig", "", None]))
    block: dict[str, Any] = {"type": "thinking", "thinking": draw(st.text(max_size=4))}
    if signature is not None:
        block["signature"] = signature
    provider = draw(st.sampled_from(["anthropic", "gemini"]))
    return ReasoningPart(provider=provider, provider_data={"provider": provider, "block": block})


@st.composite
def turns(draw: st.DrawFn) -> list[Message]:
    """A few messages of one or more parts: texts, thinking, calls (odd ids, float and broken
    arguments, kept copies), results (errors, media), hinted and plain."""
    out: list[Message] = []
    for _ in range(draw(st.integers(1, 3))):
        out.append(draw(lone_messages()))
        calls: list[Part] = [reasoning(draw)] if draw(st.booleans()) else []
        for k in range(draw(st.integers(0, 2))):
            arguments = draw(st.sampled_from(['{"a":1}', '{"x": 1.5}', "oops", {"k": [1, None]}]))
            call_id = draw(st.sampled_from([f"call_{k}", f"functions.read:{k}", ""]))
            calls.append(ToolCall(id=call_id, name="f", arguments=arguments))
        if calls:
            out.append(Message(role="assistant", parts=tuple(calls)))
    return out


@settings(max_examples=300, deadline=None)
@given(turns(), st.sampled_from(["anthropic", "gemini", "openai", "responses"]))
def test_rendered_entries_are_the_records_record_makes_of_them(
    messages: list[Message], target: str
) -> None:
    """Renderers build records straight away (no `entry` call for plain values): each entry
    as the session records it has, at every depth, the record types `record` gives its
    plain copy (pure or mixed). Anthropic and Gemini give records already."""
    rendered = get_adapter(target).render_messages(messages)
    recorded = [record(entry) for entry in rendered]  # as a session records what it renders
    assert shape(recorded) == shape([record(plain(entry)) for entry in rendered])
    if target in ("anthropic", "gemini"):
        assert all(made is entry for made, entry in zip(recorded, rendered, strict=True))
