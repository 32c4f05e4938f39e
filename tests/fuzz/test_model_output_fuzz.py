"""Fuzz what models and stored histories send: responses, parsed histories, the gate.

A session that compiled once must keep compiling after any further model output:

* `ContextChef.ingest` of a response of each API whose calls carry any arguments (NaN,
  1e999, 5,000-digit integers, runaway nesting, lone surrogates, wrong types) and whose
  text carries junk: either a `CorruptHistoryError`, or the turn is kept, every call
  is answered through the gate, and every target compiles to a payload the official SDK
  request types accept;
* each parser (`from_anthropic`, `from_openai`, `from_responses`, `from_gemini`) on
  message lists of any shape: only `CorruptHistoryError` escapes, and a parsed history
  compiles on every target.

Examples per test: 2,000 under ``CONTEXTCHEF_FULL_TESTS=1`` (3 tests), times 3/4 for the
well-formed-reply test (it ingests four replies per example) and 3/2 for the parsers
(cheap): 6,500 in all; a tenth of that by default (tests/conftest.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fuzz_values import ARGUMENTS, JUNK, TEXTS, raw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from contextchef import (
    ContextChef,
    ContextChefError,
    CorruptHistoryError,
    from_anthropic,
    from_gemini,
    from_openai,
    from_responses,
    tool_results,
    user,
)
from contextchef._json import is_unicode
from sdk_check import sdk_problems

pytestmark = pytest.mark.filterwarnings("ignore")

EXAMPLES = examples(full=2_000, default=200)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ_FOUR = settings(FUZZ, max_examples=EXAMPLES * 3 // 4)
FUZZ_CHEAP = settings(FUZZ, max_examples=EXAMPLES * 3 // 2)
TARGETS = ("anthropic", "openai", "responses", "gemini", "gemini-interactions")
READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
NAMES = st.one_of(st.sampled_from(["read_file", "tool_search", "defer_execute", "nope"]), TEXTS)


def session() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.set_history([user("hello")])
    for target in TARGETS:
        chef.compile(target)  # compiled once: it must keep compiling
    return chef


def keeps_compiling(chef: ContextChef) -> None:
    last = chef.history[-1]
    if last.role == "assistant":
        chef.append(tool_results([chef.execute(c).result for c in last.tool_calls], "go on"))
    for target in TARGETS:
        payload = chef.compile(target).payload
        json.dumps(payload, allow_nan=False)
        assert sdk_problems(target, payload) == [], target


def _as_text(arguments: Any) -> Any:
    """Chat / Responses carry arguments as text; other values stay as they are (junk)."""
    if isinstance(arguments, str):
        return arguments
    try:
        return json.dumps(arguments)
    except Exception:
        return arguments


def anthropic_reply(name: str, arguments: Any, text: Any) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments},
        ],
        "stop_reason": "tool_use",
    }


def chat_reply(name: str, arguments: Any, text: Any) -> dict[str, Any]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": _as_text(arguments)},
    }
    message = {"role": "assistant", "content": text, "tool_calls": [call]}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message}],
    }


def responses_reply(name: str, arguments: Any, text: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": name,
                "arguments": _as_text(arguments),
            },
        ],
    }


def gemini_reply(name: str, arguments: Any, text: Any) -> dict[str, Any]:
    parts = [{"text": text}, {"functionCall": {"name": name, "args": arguments}}]
    return {"candidates": [{"content": {"role": "model", "parts": parts}}]}


def interactions_reply(name: str, arguments: Any, text: Any) -> dict[str, Any]:
    output = {"type": "model_output", "content": [{"type": "text", "text": text}]}
    call = {"type": "function_call", "id": "call_1", "name": name, "arguments": arguments}
    return {"id": "v1_1", "status": "requires_action", "steps": [output, call]}


REPLIES = {
    "anthropic": anthropic_reply,
    "openai": chat_reply,
    "responses": responses_reply,
    "gemini": gemini_reply,
    "gemini-interactions": interactions_reply,
}


@FUZZ
@given(
    api=raw(st.sampled_from(sorted(REPLIES))),
    name=raw(NAMES),
    arguments=raw(ARGUMENTS),
    text=raw(st.one_of(st.text(max_size=20), JUNK)),
)
def test_any_model_reply_keeps_the_session_compiling(
    api: Any, name: Any, arguments: Any, text: Any
) -> None:
    api, name, arguments, text = api.value, name.value, arguments.value, text.value
    chef = session()
    before = [chef.compile(t).to_json() for t in TARGETS]
    try:
        chef.ingest(REPLIES[api](name, arguments, text))
    except CorruptHistoryError:
        assert [chef.compile(t).to_json() for t in TARGETS] == before  # nothing was kept
        chef.append(user("again"))
    keeps_compiling(chef)


@FUZZ_FOUR
@given(name=raw(NAMES), arguments=raw(ARGUMENTS))
def test_a_well_formed_reply_with_any_arguments_is_kept_and_answered(
    name: Any, arguments: Any
) -> None:
    """Plain-text replies carrying only bad arguments are never refused as a whole: the
    model's call gets an error result it can act on."""
    name, arguments = name.value, arguments.value
    for api, reply in REPLIES.items():
        if api in ("anthropic", "gemini", "gemini-interactions") and not isinstance(
            arguments, dict
        ):
            continue  # those APIs carry an object; other shapes are corrupt
        if api in ("openai", "responses") and not isinstance(_as_text(arguments), str):
            continue  # those carry text; an object that cannot be written is corrupt
        if not isinstance(name, str) or not name or not is_unicode(name):
            continue
        chef = session()
        try:
            (call,) = chef.ingest(reply(name, arguments, "ok"))
        except CorruptHistoryError as exc:
            raise AssertionError(f"{api}: a reply refused for its arguments: {exc}") from exc
        assert chef.check_tool_call(call).decision in ("allowed", "denied")
        keeps_compiling(chef)


MESSAGES = st.lists(
    st.one_of(
        JUNK,
        st.fixed_dictionaries(
            {
                "role": st.sampled_from(["user", "assistant", "model", "system", "tool"]),
                "content": JUNK,
            },
        ),
        st.fixed_dictionaries(
            {
                "role": st.sampled_from(["user", "model"]),
                "parts": st.lists(
                    st.one_of(
                        JUNK,
                        st.fixed_dictionaries({"text": JUNK}),
                        st.builds(
                            lambda a: {"functionCall": {"name": "read_file", "args": a}}, ARGUMENTS
                        ),
                    ),
                    max_size=3,
                ),
            }
        ),
        st.builds(
            lambda a: {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "read_file", "input": a}],
            },
            ARGUMENTS,
        ),
        st.builds(
            lambda a: {
                "type": "function_call",
                "call_id": "c",
                "name": "read_file",
                "arguments": a,
            },
            ARGUMENTS,
        ),
    ),
    max_size=4,
)
PARSERS = {
    "anthropic": from_anthropic,
    "openai": from_openai,
    "responses": from_responses,
    "gemini": from_gemini,
}


@FUZZ_CHEAP
@given(parser=raw(st.sampled_from(sorted(PARSERS))), messages=raw(st.one_of(MESSAGES, JUNK)))
def test_parsers_refuse_or_give_a_history_that_compiles(parser: Any, messages: Any) -> None:
    parser, messages = parser.value, messages.value
    try:
        parsed = PARSERS[parser](messages)
    except CorruptHistoryError:
        return
    chef = session()
    try:
        chef.set_history([user("start"), *parsed.messages])
    except ContextChefError:
        return  # a shape the IR refuses (named); the session is unchanged
    keeps_compiling(chef)
