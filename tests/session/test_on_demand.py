"""On-demand compaction driven by the session (issue 25 item 2): Anthropic and Responses.

The host asks for it between turns: ``chef.compile(target, model=m,
extra=native_context(...).on_demand)`` sends the conversation so far with a top-level
``compaction: {"type": "summarize"}`` and the ``compact-2026-09-04`` beta, never with the
policy's ``context_management`` (research provider-context-management.md 2.1: "cannot be
combined") and never ending with a tool call that has no result (compaction-keep-recent-
turns.md). The reply's block (``stop_reason: "compaction"``) is ingested; later requests
start at it, block first (anthropic-preserved-thinking.md R22), and what it stands for is
archived. Multi-turn with thinking on claude-opus-5-5 through the official SDK against
`FakeAnthropic`, which checks every request (the thinking prefix check included).

On Responses the same ``extra`` makes the payload the keyword arguments of
``client.responses.compact`` (openai 3.60 ``ResponseCompactParams``); its window, "all user
messages, followed by a single compaction item", is ingested as one turn and is the next
request's whole input, then the conversation goes on from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming
from context_tools import OPUS, read_log
from openai.types.responses.response_compact_params import ResponseCompactParams

from contextchef import ContextChef, ContextPolicy, UsageError, native_context, user
from contextchef.history._messages import ToolCall
from contextchef.providers._compacted import ON_DEMAND_BETA, from_base
from contextchef.testing import FakeAnthropic, FakeResponses, httpx_for, text, tool_calls
from sdk_check import key_problems

POLICY = ContextPolicy(budget_tokens=120_000, summary_instructions="Keep the file names.")
ON_DEMAND = native_context("anthropic", model=OPUS, policy=POLICY).on_demand


def _client(fake: FakeAnthropic) -> anthropic.Anthropic:
    http = fake.http_client(httpx_for(anthropic))
    return anthropic.Anthropic(api_key="x", max_retries=0, http_client=http)


def _session() -> tuple[FakeAnthropic, ContextChef, Callable[..., Any]]:
    fake = FakeAnthropic()
    client = _client(fake)
    chef = ContextChef(max_inline_chars=None, context_policy=POLICY)
    chef.register_tools([read_log])
    chef.set_history([user("Find why the build fails.")])

    def send(**extra: Any) -> Any:
        request = chef.compile("anthropic", model=OPUS, max_tokens=1024, **extra)
        return request, client.beta.messages.create(
            **request.payload, extra_headers=request.headers
        )

    return fake, chef, send


def _turn(chef: ContextChef, send: Callable[..., Any], k: int) -> dict[str, Any]:
    """One user turn: a log read, its result, the answer; the answer's payload."""
    _, reply = send()
    chef.run_tools(chef.ingest(reply))
    request, reply = send()
    assert not chef.ingest(reply)
    return request.payload


def _three_turns() -> tuple[FakeAnthropic, ContextChef, Callable[..., Any]]:
    """A session after three closed user turns (a log read and an answer each)."""
    fake, chef, send = _session()
    for k in range(3):
        _script(fake, k)
        _turn(chef, send, k)
        if k < 2:
            chef.append(user(f"and then {k}?"))
    return fake, chef, send


def _script(fake: FakeAnthropic, k: int) -> None:
    fake.script(
        tool_calls(("read_log", {"path": f"log{k}"}), reasoning=f"read {k}"),
        text(f"answer {k}", reasoning=f"thought {k}"),
    )


def test_on_demand_compaction_between_turns_then_requests_start_at_the_block() -> None:
    fake, chef, send = _three_turns()  # the model answered: the turn is closed
    request, reply = send(extra=ON_DEMAND)
    payload = request.payload
    assert key_problems(payload, MessageCreateParamsNonStreaming) == []  # the beta type
    assert payload["compaction"] == {"type": "summarize", "instructions": "Keep the file names."}
    assert "context_management" not in payload  # the policy's edits: not combinable
    assert ON_DEMAND_BETA in request.headers["anthropic-beta"]
    assert payload["messages"][-1]["role"] == "assistant"  # closed: no open tool call
    assert reply.stop_reason == "compaction"
    assert chef.ingest(reply) == ()
    compacted = len(chef.history) - 1
    payloads = []
    for k in range(3, 6):
        chef.append(user(f"and then {k}?"))
        _script(fake, k)
        payloads.append(_turn(chef, send, k))
    assert fake.violations == ()
    for p in payloads:
        first = p["messages"][0]
        assert first["role"] == "assistant" and [b["type"] for b in first["content"]] == [
            "compaction"
        ]
        assert p["context_management"]  # the policy's edits are back on ordinary requests
    thinking = [
        b for m in payloads[-1]["messages"] for b in m["content"] if b["type"] == "thinking"
    ]
    assert thinking, "thinking after the block is sent back and passes the prefix check"
    # the host's history keeps every message; what the block stands for is archived
    assert chef.history[0].text == "Find why the build fails." and compacted > 8
    found = chef.execute(ToolCall(id="s", name="search_archive", arguments={"query": "log0"}))
    assert "compaction" in found.result.content
    # a second one: the newest block is the base, the first never sent again
    request, reply = send(extra=ON_DEMAND)
    chef.ingest(reply)
    chef.append(user("last?"))
    fake.script(text("done", reasoning="end"))
    last, _ = send()
    blocks = [
        b for m in last.payload["messages"] for b in m["content"] if b["type"] == "compaction"
    ]
    assert len(blocks) == 1 and blocks[0]["signature"] == reply.content[0].signature
    assert fake.violations == ()
    restored = ContextChef(max_inline_chars=None, context_policy=POLICY)
    restored.register_tools([read_log])
    restored.restore(chef.snapshot(), allow_unsigned=True)
    restored.append(user("after restore?"))
    chef.append(user("after restore?"))
    mine = chef.compile("anthropic", model=OPUS, max_tokens=1024).payload
    assert restored.compile("anthropic", model=OPUS, max_tokens=1024).payload == mine


def _unmarked(value: Any) -> Any:
    """`value` without ``cache_control`` markers (a moved breakpoint is no change)."""
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    return [_unmarked(v) for v in value] if isinstance(value, list) else value


def test_background_swap_replaces_exactly_the_compacted_messages_and_keeps_the_rest() -> None:
    """compaction-background.md: the conversation goes on while the compaction runs; the
    first request after the block arrives replaces exactly the messages its request sent,
    and the turns after them stay with their thinking (R22), as a reported edit."""
    fake, chef, send = _three_turns()
    held, reply = send(extra=ON_DEMAND)  # its reply is held: the conversation goes on
    summarized, sent = chef.history, len(held.payload["messages"])
    chef.append(user("and then 3?"))
    _script(fake, 3)
    went_on = _turn(chef, send, 3)  # on the full history, with new thinking
    assert went_on["messages"][0]["content"][0]["text"] == "Find why the build fails."
    assert chef.ingest(reply) == () and reply.stop_reason == "compaction"
    n = len(summarized)
    assert chef.history[:n] == summarized and chef.history[n].parts[0].data["type"] == "compaction"
    chef.append(user("and then 4?"))
    _script(fake, 4)
    request, answer = send()
    assert request.edits and "history changed" in request.edits[0].detail  # the cache restarts
    messages = request.payload["messages"]
    assert messages[0] == {"role": "assistant", "content": [reply.content[0].to_dict()]}
    kept = went_on["messages"][sent:]
    assert kept[0]["content"][0]["text"] == "and then 3?"
    assert _unmarked(messages[1 : len(kept) + 1]) == _unmarked(kept)  # verbatim, with thinking
    assert sum(b["type"] == "thinking" for m in messages for b in m["content"]) == 2
    assert fake.violations == ()
    chef.run_tools(chef.ingest(answer))
    later, answer = send()
    assert not later.edits and _unmarked(later.payload["messages"][: len(messages)]) == _unmarked(
        messages
    )
    chef.ingest(answer)
    chef.append(user("and then 5?"))
    _script(fake, 5)
    assert _turn(chef, send, 5)["messages"][0] == messages[0]
    assert fake.violations == ()
    found = chef.execute(ToolCall(id="s", name="search_archive", arguments={"query": "log0"}))
    assert "compaction" in found.result.content  # what the block replaced is archived
    restored = ContextChef(max_inline_chars=None, context_policy=POLICY)
    restored.register_tools([read_log])
    restored.restore(chef.snapshot(), allow_unsigned=True)
    for session in (chef, restored):
        session.append(user("after restore?"))
    mine = chef.compile("anthropic", model=OPUS, max_tokens=1024).payload
    assert restored.compile("anthropic", model=OPUS, max_tokens=1024).payload == mine
    # the fake checks the kept turns: one changed breaks the thinking after it (R22)
    edited = [dict(m) for m in messages]
    edited[1] = {"role": "user", "content": [{"type": "text", "text": "and then 3?!"}]}
    with pytest.raises(anthropic.BadRequestError, match="signature"):
        _client(fake).beta.messages.create(
            **{**request.payload, "messages": edited}, extra_headers=request.headers
        )


def test_an_open_tool_call_is_refused_by_compile_by_name() -> None:
    fake, chef, send = _session()
    fake.script(tool_calls(("read_log", {"path": "a"}), reasoning="r"))
    _, reply = send()
    chef.ingest(reply)  # the call has no result yet
    with pytest.raises(UsageError, match=r"no result yet \(read_log\)"):
        chef.compile("anthropic", model=OPUS, extra=ON_DEMAND)
    assert fake.violations == ()  # nothing was sent


def test_the_fake_refuses_compaction_with_context_management_and_an_open_call() -> None:
    fake = FakeAnthropic()
    client = _client(fake)
    messages = [
        {"role": "user", "content": "read a"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "read_log", "input": {}}],
        },
    ]
    both = {"compaction": {"type": "summarize"}, "context_management": {"edits": []}}
    betas = {"anthropic-beta": f"{ON_DEMAND_BETA},context-management-2025-06-27"}
    for extra, shown in ((both, messages[:1]), ({"compaction": {"type": "summarize"}}, messages)):
        with pytest.raises(anthropic.BadRequestError):
            client.beta.messages.create(
                model=OPUS, max_tokens=9, messages=shown, extra_headers=betas, extra_body=extra
            )
    rules = [v.rule for v in fake.violations]
    assert rules[0] == "anthropic_context_management_valid" and len(fake.violations) >= 2
    assert "anthropic_compaction_closed_turn" in rules[1:]


def test_a_model_without_on_demand_compaction_is_refused_by_name() -> None:
    chef = ContextChef(context_policy=POLICY)
    chef.set_history([user("hi")])
    assert native_context("anthropic", model="claude-opus-4-1", policy=POLICY).on_demand == {}
    with pytest.raises(UsageError, match="'claude-opus-4-1' has no on-demand compaction"):
        chef.compile(
            "anthropic", model="claude-opus-4-1", extra={"compaction": {"type": "summarize"}}
        )
    assert (
        native_context("anthropic", model=OPUS, policy=ContextPolicy(native=False)).on_demand == {}
    )


def test_from_base_sends_the_merged_message_from_its_block_on() -> None:
    block = {"type": "compaction", "content": "s", "encrypted_content": "e", "signature": "g"}
    answer = {"role": "assistant", "content": [{"type": "text", "text": "a"}, block]}
    entries = [{"role": "user", "content": "q"}, answer, {"role": "user", "content": "next"}]
    sent = from_base(entries, {})
    assert sent == [{"role": "assistant", "content": [block]}, entries[2]]
    assert answer["content"][0]["type"] == "text"  # the record is not changed
    assert from_base(entries[:1], {}) == entries[:1]


GPT = "gpt-5.6-sol"


def test_responses_compact_window_is_the_next_input_then_the_session_goes_on() -> None:
    fake = FakeResponses()
    http = fake.http_client(httpx_for(openai))
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=http)
    chef = ContextChef(max_inline_chars=None, context_policy=POLICY)
    chef.register_tools([read_log])
    chef.set_history([user("Find why the build fails.")])
    native = native_context("responses", model=GPT, policy=POLICY)

    def turn(k: int) -> Any:
        fake.script(
            tool_calls(("read_log", {"path": f"log{k}"}), reasoning=f"read {k}"),
            text(f"answer {k}", reasoning=f"thought {k}"),
        )
        request = chef.compile("responses", model=GPT)
        chef.run_tools(chef.ingest(client.responses.create(**request.payload)))
        request = chef.compile("responses", model=GPT)
        assert not chef.ingest(client.responses.create(**request.payload))
        return request.payload

    turn(0)
    chef.append(user("and the tests?"))
    request = chef.compile("responses", model=GPT, extra=native.on_demand)
    assert set(request.payload) <= set(ResponseCompactParams.__annotations__)
    assert key_problems(request.payload, ResponseCompactParams) == []
    assert request.dropped == () and "tools" not in request.payload
    window = client.responses.compact(**request.payload)
    assert [item.type for item in window.output] == ["message", "message", "compaction"]
    assert chef.ingest(window) == ()
    fake.script(text("the tests pass", reasoning="t"))
    answer = chef.compile("responses", model=GPT).payload
    sent = [dict(item) for item in answer["input"]]
    # the whole window, as returned, and nothing from before it
    assert [i.get("role", i["type"]) for i in sent] == ["user", "user", "compaction"]
    assert sent == [item.model_dump(exclude_unset=True, warnings=False) for item in window.output]
    assert answer["context_management"] == native.extra["context_management"]
    restored = ContextChef(max_inline_chars=None, context_policy=POLICY)
    restored.register_tools([read_log])
    restored.restore(chef.snapshot(), allow_unsigned=True)
    again = restored.compile("responses", model=GPT).payload["input"]
    assert again == answer["input"]  # a restored session sends from the same window
    chef.ingest(client.responses.create(**answer))
    chef.append(user("and then?"))
    later = turn(1)
    assert later["input"][:3] == sent  # later requests start at the window too
    assert fake.violations == ()
    found = chef.execute(ToolCall(id="s", name="search_archive", arguments={"query": "log0"}))
    assert "compaction" in found.result.content  # what the window replaced is archived
    # a foreign or edited compaction item is refused by the fake
    edited = {**sent[2], "encrypted_content": "other"}
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model=GPT, input=[*sent[:2], edited])
    assert [v.rule for v in fake.violations] == ["responses_compaction_items_known"]
