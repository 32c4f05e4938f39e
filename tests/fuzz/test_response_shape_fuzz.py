"""Fuzz the shape of each API's response: a wrong type or a missing key at any level.

tests/fuzz/test_model_output_fuzz.py varies the values a well-shaped reply carries; here
a rich reply of each API (text, thinking or reasoning, a tool call, the envelope) gets one
node anywhere in it replaced by a value of another type (a list, an object, null, a
number, a string, a list of lists), or its key deleted. `ContextChef.ingest` then either
raises a `ContextChefError` and changes nothing, or keeps the turn: every call it returns
is answered through the gate and every target compiles to a payload the official SDK
request types accept. Issue 23: a Responses content part whose ``type`` was a list raised
a bare ``TypeError``; a Chat call without ``function`` was kept verbatim and sent back in
every later request.

Examples: 4,000 under ``CONTEXTCHEF_FULL_TESTS=1``, 300 by default (tests/conftest.py).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_model_output_fuzz import TARGETS, session

from conftest import examples
from contextchef import ContextChef, ContextChefError, ProviderPart, tool_results
from sdk_check import sdk_problems

pytestmark = pytest.mark.filterwarnings("ignore")

FUZZ = settings(
    max_examples=examples(full=4_000, default=300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def anthropic() -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [
            {"type": "thinking", "thinking": "let me see", "signature": "c2ln"},
            {"type": "text", "text": "reading", "citations": None},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }


def chat() -> dict[str, Any]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a"}'},
    }
    message = {"role": "assistant", "content": "reading", "tool_calls": [call]}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }


def responses() -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "gpt-test",
        "output": [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "thinking"}],
                "encrypted_content": "ZW5j",
            },
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "reading", "annotations": []}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "read_file",
                "arguments": '{"path": "a"}',
                "status": "completed",
            },
        ],
        "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    }


def gemini() -> dict[str, Any]:
    parts = [
        {"text": "thinking", "thought": True},
        {"text": "reading"},
        {"functionCall": {"name": "read_file", "args": {"path": "a"}}, "thoughtSignature": "c2ln"},
    ]
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4},
        "modelVersion": "gemini-test",
    }


REPLIES = {"anthropic": anthropic, "openai": chat, "responses": responses, "gemini": gemini}

WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.sampled_from(
        ["", "text", "function", "message", "tool_use", "output_text", "model", "user", "tool"]
    ),
    st.lists(st.sampled_from(["text", "function", "message", "output_text"]), max_size=2),
    st.lists(st.lists(st.integers(0, 1), max_size=1), min_size=1, max_size=2),
    st.dictionaries(st.sampled_from(["type", "text", "name", "id"]), st.text(max_size=3)),
)


CALLS = {
    "anthropic": ("type", "tool_use"),
    "openai": ("tool_calls", None),
    "responses": ("type", "function_call"),
    "gemini": ("functionCall", None),
}
"""What marks a function call in each format's JSON: a key (and the value it must have, or
None for any). A part kept verbatim must hold none: a call is parsed, or the reply refused.
Responses items of a type it does not know stay verbatim (a ``computer_call`` is the
host's to answer)."""


def _nodes(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
    for child in (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    ):
        yield from _nodes(child)


def keeps_compiling(chef: ContextChef, api: str) -> None:
    """The turn's calls are answered, and every target compiles; a target other than the
    reply's own API gets a payload its SDK's request types accept. The reply's own API may
    get back, verbatim, a block the parser kept as it was (the provider's own data)."""
    turn = chef.history[-1]
    key, value = CALLS[api]
    for part in turn.parts:
        if isinstance(part, ProviderPart):
            for node in _nodes(part.data):
                assert key not in node or value not in (None, node[key]), f"a call kept: {node}"
    if turn.role == "assistant":
        chef.append(tool_results([chef.execute(c).result for c in turn.tool_calls], "go on"))
    for target in TARGETS:
        payload = chef.compile(target).payload
        json.dumps(payload, allow_nan=False)
        if target != api:
            assert sdk_problems(target, payload) == [], target


def paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every node below the top, depth first."""
    if isinstance(value, (dict, list)):
        for key, child in value.items() if isinstance(value, dict) else enumerate(value):
            yield (*at, key)
            yield from paths(child, (*at, key))


def mutated(reply: dict[str, Any], path: tuple[Any, ...], op: str, junk: Any) -> dict[str, Any]:
    out = copy.deepcopy(reply)
    holder: Any = out
    for key in path[:-1]:
        holder = holder[key]
    if op == "delete":
        del holder[path[-1]]
    else:
        holder[path[-1]] = junk
    return out


@FUZZ
@given(api=st.sampled_from(sorted(REPLIES)), data=st.data())
def test_any_response_shape_is_refused_cleanly_or_kept_and_compiles(api: str, data: Any) -> None:
    reply = REPLIES[api]()
    path = data.draw(st.sampled_from(list(paths(reply))), label="path")
    op = data.draw(st.sampled_from(["replace", "delete"]), label="op")
    junk = data.draw(WRONG, label="junk") if op == "replace" else None
    chef = session()
    before = [chef.compile(t).to_json() for t in TARGETS]
    try:
        chef.ingest(mutated(reply, path, op, junk))
    except ContextChefError:
        assert [chef.compile(t).to_json() for t in TARGETS] == before  # nothing was kept
        return
    keeps_compiling(chef, api)


@pytest.mark.parametrize("api", sorted(REPLIES))
def test_every_unmutated_reply_is_kept_with_its_call(api: str) -> None:
    chef = session()
    (call,) = chef.ingest(REPLIES[api]())
    assert (call.name, json.loads(call.arguments)) == ("read_file", {"path": "a"})
    keeps_compiling(chef, api)
    assert sdk_problems(api, chef.compile(api).payload) == []
