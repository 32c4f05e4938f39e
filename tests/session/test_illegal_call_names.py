"""Call names no provider takes back (break-it 22): recorded legal, never re-sent as written.

A model wrote ``functions.grep``, ``grep<|channel|>commentary``, a 100-character name...;
each was answered "Unknown tool", but every later request carried the name in its
history, which OpenAI refuses (``400 Invalid 'messages[9].tool_calls[0].function.name':
string does not match pattern '^[a-zA-Z0-9_-]+$'``, mcp-use/mcp-use#90), so the
conversation was dead from then on, on every target. Such a call is now recorded under
``malformed_tool_call`` as the reply is read (`contextchef.history._call_names`), its
written name quoted (capped) in the gate's answer; a history a host sets is renamed by
the normalizer before it is first sent. The fakes check each provider's name rule for
the calls sent back (`contextchef.testing._name_rules`), so on main these loops fail.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import given
from hypothesis import strategies as st

from contextchef import (
    ContextChef,
    Message,
    ToolCall,
    ToolResult,
    from_openai,
    user,
)
from contextchef.history._call_names import (
    GEMINI_NAME,
    MALFORMED_CALL,
    PROVIDER_NAMES,
    WRITTEN,
    legal_call,
    legal_name,
)
from contextchef.testing import FakeProvider, fake_for, httpx_for, text, tool_calls
from contextchef.testing._name_rules import (
    anthropic_call_names_valid,
    chat_call_names_valid,
    gemini_call_names_valid,
    interactions_names_valid,
    responses_call_names_valid,
)
from contextchef.tools._names import WIRE_NAME_RE

HX = httpx_for(anthropic)
TARGETS5 = ("openai", "responses", "anthropic", "gemini", "gemini-interactions")
MODEL = {"gemini-interactions": "gemini-4-argon"}

NAMES = (
    "functions.grep",  # dotted, as models do
    "grep<|channel|>commentary",  # a gpt-oss channel leak
    "x" * 100,
    "a.b",  # legal on Gemini, not on OpenAI or Anthropic
    "名前",
    "g" * 65,  # one over OpenAI's and Gemini's 64
    "h" * 129,  # one over Anthropic's 128
    "",
)
LEGAL = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


def grep(pattern: str) -> str:
    """Search the code base."""
    return f"hit {pattern}"


def _sender(target: str, fake: FakeProvider) -> Callable[[dict[str, Any]], Any]:
    """Payloads through `target`'s official SDK client, against `fake`."""
    http = fake.http_client(HX)
    if target in ("gemini", "gemini-interactions"):
        client = genai.Client(api_key="x", http_options=genai_types.HttpOptions(httpx_client=http))
        if target == "gemini":
            return lambda payload: client.models.generate_content(**payload)
        return lambda payload: client.interactions.create(**payload)
    if target == "anthropic":
        claude = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http)
        return lambda payload: claude.messages.create(**payload)
    gpt = openai.OpenAI(api_key="x", max_retries=0, http_client=http)
    if target == "responses":
        return lambda payload: gpt.responses.create(**payload)
    return lambda payload: gpt.chat.completions.create(**payload)


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_history([user("find it")])
    return chef


def _loop(chef: ContextChef, target: str, fake: FakeProvider) -> list[str]:
    """The agent loop until the model answers in text; the answers the gate gave."""
    send, answers = _sender(target, fake), []
    while True:
        payload = chef.compile(target, model=MODEL.get(target, "m")).payload
        calls = chef.ingest(send(payload))
        if not calls:
            return answers
        answers += [str(r.content) for r in chef.run_tools(calls)]


def _call_names(chef: ContextChef) -> list[str]:
    return [c.name for m in chef.history for c in m.tool_calls]


@pytest.mark.parametrize("target", TARGETS5)
def test_a_loop_with_illegal_names_stays_valid_on_every_target(target: str) -> None:
    chef = _chef()
    fake = fake_for(target).script(
        *[tool_calls((n, {"pattern": "a"})) for n in NAMES],
        tool_calls(("grep", {"pattern": "b"})),
        text("done"),
    )
    answers = _loop(chef, target, fake)

    assert fake.violations == ()
    assert len(fake.requests) == len(NAMES) + 2
    assert _call_names(chef) == [MALFORMED_CALL] * len(NAMES) + ["grep"]
    assert all(LEGAL.fullmatch(n) for n in _call_names(chef))
    # the model is told the name it wrote (capped), the rule, and what it may have meant
    assert answers[0].startswith('Unknown tool "functions.grep": no tool can have this name')
    assert '"grep"' in answers[0]
    assert 'Unknown tool "a.b"' in answers[3] and 'Unknown tool "名前"' in answers[4]
    assert "x" * 100 in answers[2] and "h" * 129 not in answers[6]
    assert "(129 chars)" in answers[6] and len(answers[6]) < 400
    assert answers[7].startswith("This call named no tool")
    assert answers[8] == "hit b"  # a legal call after them still runs
    # the written name stays out of every request: only the capped quote is sent
    for request in fake.requests:
        assert "grep<|channel|>commentary" not in str(request.body).replace(
            'Unknown tool "grep<|channel|>commentary"', ""
        )


@pytest.mark.parametrize("first", TARGETS5)
def test_a_provider_switch_after_an_illegal_call_is_valid(first: str) -> None:
    chef = _chef()
    fake = fake_for(first).script(tool_calls(("a.b", {"pattern": "a"})), text("ok"))
    _loop(chef, first, fake)
    assert fake.violations == ()
    for target in TARGETS5:
        if target == first:
            continue
        chef.append(user(f"now on {target}"))
        other = fake_for(target).script(text("fine"))
        assert _loop(chef, target, other) == []
        assert other.violations == (), target


@pytest.mark.parametrize("target", TARGETS5)
def test_a_history_the_host_set_with_illegal_names_compiles_valid(target: str) -> None:
    """Set by the host (not read from a reply): renamed by the normalizer, reported."""
    chef = ContextChef()
    chef.register_tools([grep])
    turns: list[Message] = [user("go")]
    for i, name in enumerate(NAMES[:-1]):  # ToolCall refuses "" itself
        turns.append(Message(role="assistant", parts=(ToolCall(id=f"c{i}", name=name),)))
        turns.append(
            Message(role="user", parts=(ToolResult(call_id=f"c{i}", name=name, content="no"),))
        )
    turns.append(user("again"))
    chef.set_history(turns)
    assert [c.name for m in chef.history for c in m.tool_calls] == list(NAMES[:-1])  # as set

    compiled = chef.compile(target, model=MODEL.get(target, "m"))
    renamed = [c for c in compiled.changes if c.kind == "renamed_illegal_call"]
    assert [c.call_id for c in renamed] == [f"c{i}" for i in range(len(NAMES) - 1)]
    # compiling again gives the same bytes (nothing re-rendered differently)
    assert chef.compile(target, model=MODEL.get(target, "m")).payload == compiled.payload
    fake = fake_for(target).script(tool_calls(("grep", {"pattern": "a"})), text("fine"))
    _loop(chef, target, fake)  # and the conversation goes on
    assert fake.violations == () and len(fake.requests) == 2


def test_an_imported_history_renames_illegal_calls_with_a_note() -> None:
    parsed = from_openai(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "functions.grep", "arguments": '{"pattern": "a"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "no"},
        ]
    )
    call = parsed.messages[1].tool_calls[0]
    assert (call.name, call.arguments, call.id) == (MALFORMED_CALL, '{"pattern": "a"}', "c1")
    assert call.provider_data is not None and call.provider_data[WRITTEN] == "functions.grep"
    assert any("'functions.grep'" in n and MALFORMED_CALL in n for n in parsed.notes)


def test_legal_call_keeps_legal_names_and_caps_the_written_one() -> None:
    fine = ToolCall(id="a", name="read_file")
    assert legal_call(fine) is fine
    named = ToolCall(id="b", name="malformed_tool_call")
    assert legal_call(named) is named
    long = legal_call(ToolCall(id="c", name="q" * 50_000, arguments='{"x": 1}'))
    assert long.name == MALFORMED_CALL and long.arguments == '{"x": 1}'
    written = str((long.provider_data or {})[WRITTEN])
    assert len(written) < 200 and written.endswith("(50,000 chars)")
    assert legal_call(ToolCall(id="d", name="1grep")).name == MALFORMED_CALL  # Gemini: letter first
    assert legal_call(ToolCall(id="e", name="g" * 64)).name == "g" * 64


RULES = {
    "openai": (
        chat_call_names_valid,
        {"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "a.b"}}]}]},
        "messages[0].tool_calls[0].function.name",
    ),
    "responses": (
        responses_call_names_valid,
        {"input": [{"type": "function_call", "name": "g" * 65}]},
        "input[0].name",
    ),
    "anthropic": (
        anthropic_call_names_valid,
        {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "h" * 129}]}]},
        "messages.0.content.0.tool_use.name",
    ),
    "gemini": (
        gemini_call_names_valid,
        {"contents": [{"role": "model", "parts": [{"functionCall": {"name": "名前"}}]}]},
        "contents[0].parts[0].functionCall.name",
    ),
    "gemini-interactions": (
        interactions_names_valid,
        {"input": [{"type": "function_call", "name": "x<|y|>"}]},
        "input[0].name",
    ),
}


@pytest.mark.parametrize("target", TARGETS5)
def test_each_fake_refuses_an_illegal_call_name_in_a_history(target: str) -> None:
    rule, body, where = RULES[target]
    problems = list(rule(body, ()))
    assert len(problems) == 1 and where in problems[0] and "does not match pattern" in problems[0]
    assert fake_for(target).rules.count(rule) == 1  # on by default


@pytest.mark.parametrize(
    ("target", "name"),
    [("anthropic", "g" * 128), ("gemini", "a.b"), ("gemini", "ns:f"), ("openai", "a-b_1")],
)
def test_the_fake_rules_take_what_the_provider_takes(target: str, name: str) -> None:
    rule = RULES[target][0]
    legal = {
        "anthropic": {"messages": [{"content": [{"type": "tool_use", "name": name}]}]},
        "gemini": {"contents": [{"parts": [{"functionCall": {"name": name}}]}]},
        "openai": {"messages": [{"tool_calls": [{"function": {"name": name}}]}]},
    }[target]
    assert list(rule(legal, ())) == []


def test_normalize_renames_an_illegal_call_once_and_keeps_its_provider_data() -> None:
    from contextchef.history._normalize import normalize

    data = {"provider": "gemini", "thought_signature": "c2ln"}
    history = [
        user("go"),
        Message(role="assistant", parts=(ToolCall(id="c1", name="a.b", provider_data=data),)),
        Message(role="user", parts=(ToolResult(call_id="c1", name="a.b", content="no"),)),
    ]
    done = normalize(history)
    call = done.messages[1].tool_calls[0]
    assert (call.name, call.id, dict(call.provider_data or {})) == (MALFORMED_CALL, "c1", data)
    assert [c.kind for c in done.changes] == ["renamed_illegal_call"]
    assert normalize(done.messages).changes == ()
    assert history[1].tool_calls[0].name == "a.b"  # the caller's history is not touched


GEMINI_EDGES = [  # (name, whether Gemini takes it: `_call_names.GEMINI_NAME`)
    ("ns.read:file", True),
    ("_a.b:" + "c" * 59, True),  # 64 characters
    ("_a.b:" + "c" * 60, False),  # 65
    ("g" * 64, True),
    ("g" * 65, False),
    ("1ns.read", False),  # a letter or underscore first
    (".read", False),
    ("ns/read", False),
]


@pytest.mark.parametrize(("name", "gemini_takes"), GEMINI_EDGES)
def test_the_gemini_name_rule_at_its_edges_in_the_fake_and_the_library(
    name: str, gemini_takes: bool
) -> None:
    """One Gemini rule (dots and colons, at most 64): the fakes check the library's pattern,
    and the library keeps a call's name only where every provider takes it."""
    body = {"contents": [{"role": "model", "parts": [{"functionCall": {"name": name}}]}]}
    assert (list(gemini_call_names_valid(body, ())) == []) is gemini_takes
    steps = {"input": [{"type": "function_call", "name": name}]}
    assert (list(interactions_names_valid(steps, ())) == []) is gemini_takes
    assert bool(GEMINI_NAME.fullmatch(name)) is gemini_takes
    everywhere = gemini_takes and not {".", ":"} & set(name)  # OpenAI's rule has neither
    assert legal_name(name) is everywhere
    kept = legal_call(ToolCall(id="c", name=name)).name
    assert kept == (name if everywhere else MALFORMED_CALL)


@pytest.mark.parametrize("target", ["gemini", "gemini-interactions"])
def test_a_gemini_call_named_with_dots_and_colons_is_recorded_legal(target: str) -> None:
    chef = _chef()
    fake = fake_for(target).script(tool_calls(("ns.read:file", {"pattern": "a"})), text("ok"))
    answers = _loop(chef, target, fake)
    assert fake.violations == ()
    assert _call_names(chef) == [MALFORMED_CALL]
    assert answers[0].startswith('Unknown tool "ns.read:file"')


@given(st.text(alphabet="aZ09_-.:/é", max_size=130))
def test_legal_name_is_every_providers_rule_at_once(name: str) -> None:
    every = all(rule.fullmatch(name) for rule in PROVIDER_NAMES)
    assert legal_name(name) is every is bool(WIRE_NAME_RE.fullmatch(name))
