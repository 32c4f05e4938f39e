"""`history._built.built`: a restore's messages made straight from decoded JSON (issue 27).

`built` takes a `Message.to_dict` form as ``json.loads`` gives it and either makes the
message, with the same checks `message_from_dict` makes, or returns None, and the form
goes to `message_from_dict` (which refuses it naming the message and field, or builds
it). So the two must agree: where `built` makes a message it equals the one
`message_from_dict` makes, field by field (provider data frozen at every depth), and
every form `message_from_dict` refuses is one `built` leaves to it.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextchef import ContextChefError
from contextchef._json import FrozenDict, FrozenList
from contextchef.history._built import built
from contextchef.history._forms import checked_history
from contextchef.history._messages import (
    MediaPart,
    Message,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
    message_from_dict,
)

THINKING = {
    "provider": "anthropic",
    "block": {"type": "thinking", "thinking": "plan é", "signature": "c2ln" * 20},
    "keys": ["type", "thinking", "signature"],
}

MESSAGES = [
    Message(role="user", parts=(TextPart(text="hi"),)),
    Message(role="user", parts=(TextPart(text="ünïcode ✓", provider_data={"n": [1, 2.5]}),)),
    Message(
        role="assistant",
        parts=(
            ReasoningPart(provider="anthropic", text="plan", provider_data=THINKING),
            ReasoningPart(provider="openai"),
            TextPart(text="calling"),
            ToolCall(id="c1", name="read", arguments='{"path": "a.py"}'),
            ToolCall(id="c2", name="read", provider_data={"id": "fc_1", "status": None}),
        ),
    ),
    Message(
        role="user",
        parts=(
            ToolResult(call_id="c1", name="read", content="x" * 3000),
            ToolResult(call_id="c2", name="read", content="", is_error=True, references=("a",)),
            TextPart(text="and?"),
        ),
    ),
    Message(role="user", parts=(ToolResult(call_id="c3", name="find", content="found"),)),
    Message(
        role="assistant",
        parts=(ProviderPart(provider="anthropic", data={"type": "x", "deep": [[{"a": {}}]]}),),
    ),
    Message(role="user", parts=(ProviderPart(provider="p", data={"v": True, "w": -(2**70)}),)),
    Message(role="assistant", parts=()),
]


def decoded(message: Message) -> Any:
    return json.loads(json.dumps(message.to_dict()))


def _frozen_alike(a: Any, b: Any) -> None:
    """`a` and `b` hold equal values of the same container types at every depth."""
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _frozen_alike(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _frozen_alike(x, y)
    else:
        assert a == b


def same(made: Message, slow: Message) -> None:
    assert made == slow and type(made) is Message
    assert list(vars(made)) == list(vars(slow))
    for p, q in zip(made.parts, slow.parts, strict=True):
        assert type(p) is type(q) and list(vars(p)) == list(vars(q))
        for name in vars(q):
            _frozen_alike(getattr(p, name), getattr(q, name))


@pytest.mark.parametrize("message", MESSAGES, ids=range(len(MESSAGES)))
def test_a_decoded_form_builds_the_message_message_from_dict_builds(message: Message) -> None:
    form = decoded(message)
    made = built(form)
    assert made is not None
    same(made, message_from_dict(form))
    assert made == message
    assert form == decoded(message)  # the form is not changed
    for part in made.parts:
        data = getattr(part, "provider_data", None) or getattr(part, "data", None)
        if data:
            assert isinstance(data, FrozenDict)
            with pytest.raises(ContextChefError):
                data["new"] = 1  # type: ignore[index]


def test_frozen_provider_data_is_frozen_at_every_depth() -> None:
    made = built(decoded(MESSAGES[5]))
    assert made is not None
    data = made.parts[0].data  # type: ignore[union-attr]
    assert isinstance(data["deep"], FrozenList) and isinstance(data["deep"][0][0], FrozenDict)


def _parts(form: Any) -> Any:
    return form["parts"]


LEFT = {
    # each is a change to a decoded form that `built` leaves to `message_from_dict`
    "lone surrogate in text": (0, lambda f: _parts(f)[0].update(text="a\ud800")),
    "lone surrogate in a key": (1, lambda f: _parts(f)[0]["provider_data"].update({"\udc00": 1})),
    "NaN in provider data": (1, lambda f: _parts(f)[0]["provider_data"]["n"].append(math.nan)),
    "infinity": (1, lambda f: _parts(f)[0]["provider_data"].update(x=math.inf)),
    "integer too long": (6, lambda f: _parts(f)[0]["data"].update(w=10**5000)),
    "unknown field": (0, lambda f: _parts(f)[0].update(colour="red")),
    "missing text": (0, lambda f: _parts(f)[0].pop("text")),
    "missing call id": (2, lambda f: _parts(f)[3].pop("id")),
    "missing result content": (3, lambda f: _parts(f)[0].pop("content")),
    "text of another type": (0, lambda f: _parts(f)[0].update(text=5)),
    "arguments as an object": (2, lambda f: _parts(f)[3].update(arguments={"path": "a"})),
    "is_error not a bool": (3, lambda f: _parts(f)[1].update(is_error="yes")),
    "references not a list": (3, lambda f: _parts(f)[1].update(references="a")),
    "reference not text": (3, lambda f: _parts(f)[1].update(references=[1])),
    "reference empty": (3, lambda f: _parts(f)[1].update(references=[""])),
    "call name empty": (2, lambda f: _parts(f)[3].update(name="")),
    "is_error a number": (3, lambda f: _parts(f)[1].update(is_error=0)),
    "media data not base64": (
        3,
        lambda f: _parts(f)[0].update(media=[{"kind": "media", "media_type": "i/p", "data": "!"}]),
    ),
    "media": (3, lambda f: _parts(f)[0].update(media=[{"kind": "media", "media_type": "i/p"}])),
    "reasoning in a user message": (0, lambda f: f.update(parts=[_parts(decoded(MESSAGES[2]))[0]])),
    "tool call in a user message": (0, lambda f: f.update(parts=[_parts(decoded(MESSAGES[2]))[3]])),
    "result in an assistant message": (
        2,
        lambda f: _parts(f).append(_parts(decoded(MESSAGES[4]))[0]),
    ),
    "unknown role": (0, lambda f: f.update(role="system")),
    "unknown kind": (0, lambda f: _parts(f)[0].update(kind="video")),
    "unhashable kind": (0, lambda f: _parts(f)[0].update(kind=["text"])),
    "part not an object": (0, lambda f: _parts(f).append("text")),
    "parts not a list": (0, lambda f: f.update(parts={"kind": "text"})),
    "an extra message key": (0, lambda f: f.update(extra=1)),
    "hint envelope not an object": (2, lambda f: _parts(f)[0]["provider_data"].update(block=[])),
    "hint keys not text": (2, lambda f: _parts(f)[0]["provider_data"].update(keys=[1])),
    "provider data not an object": (0, lambda f: _parts(f)[0].update(provider_data=[1])),
    "provider part data not an object": (6, lambda f: _parts(f)[0].update(data="x")),
    "nested deeper than built walks": (
        6,
        lambda f: _parts(f)[0]["data"].update(d=json.loads("[" * 150 + "]" * 150)),
    ),
    "nested deeper than JSON data may be": (
        6,
        lambda f: _parts(f)[0]["data"].update(d=json.loads("[" * 250 + "]" * 250)),
    ),
}


@pytest.mark.parametrize("case", sorted(LEFT))
def test_a_form_built_does_not_take_goes_to_message_from_dict(case: str) -> None:
    index, change = LEFT[case]
    form = decoded(MESSAGES[index])
    change(form)
    assert built(form) is None
    kept = copy.deepcopy(form)
    try:
        slow = message_from_dict(form, index=7)
    except ContextChefError as exc:
        with pytest.raises(type(exc)) as info:  # a restore's history: the same error
            checked_history([decoded(MESSAGES[0]), *[decoded(MESSAGES[0])] * 6, form])
        assert str(info.value) == str(exc) and "message 7" in str(exc)
    else:  # message_from_dict takes it: the history holds that message
        assert checked_history([form]) == (slow,)
    assert form == kept


def test_media_parts_are_built_by_message_from_dict_and_restored_alike() -> None:
    message = Message(
        role="user",
        parts=(
            ToolResult(
                call_id="c", name="shot", content="", media=(MediaPart(media_type="i/p", url="u"),)
            ),
        ),
    )
    assert built(decoded(message)) is None
    assert checked_history([decoded(message)]) == (message,)


# -- any decoded JSON: built agrees with message_from_dict ------------------------------------

_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["\ud800", "a\udfff", "é", "text", "tool_call", "user", "assistant"]),
    st.sampled_from(["", "QUJD", "QUI=", "QUJ", "!!", "QU JD", "image/png", "media"]),
)
_JSON = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["a", "type", "block", "keys", "\ud800"]), inner, max_size=3
        )
    ),
    max_leaves=12,
)
_FIELDS = [
    "kind",
    "text",
    "provider",
    "provider_data",
    "id",
    "name",
    "arguments",
    "call_id",
    "content",
    "is_error",
    "references",
    "data",
    "media",
    "url",
    "file_id",
    "media_type",
]
_PART = st.one_of(
    st.sampled_from([p for m in MESSAGES for p in decoded(m)["parts"]]),
    st.dictionaries(st.sampled_from(_FIELDS), _JSON, max_size=5).map(
        lambda d: {"kind": "text", **d} if "kind" not in d else d
    ),
)


@st.composite
def _forms(draw: Any) -> Any:
    base = draw(st.sampled_from(MESSAGES))
    form = decoded(base)
    if draw(st.booleans()):
        form["parts"] = draw(st.lists(_PART, max_size=4))
    if draw(st.booleans()):
        form["role"] = draw(st.sampled_from(["user", "assistant", "tool", 3]))
    if draw(st.booleans()) and form["parts"]:
        key = draw(st.sampled_from(_FIELDS))
        form["parts"][0] = {**form["parts"][0], key: draw(_JSON)}
    return json.loads(json.dumps(form, allow_nan=True))  # as json.loads gives it


@settings(max_examples=400, deadline=None)
@given(_forms())
def test_built_and_message_from_dict_agree_on_any_decoded_form(form: Any) -> None:
    made = built(form)
    try:
        slow = message_from_dict(form)
    except ContextChefError:
        assert made is None  # refused: by message_from_dict, with its message
        return
    if made is not None:
        same(made, slow)
