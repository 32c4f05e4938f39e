"""Append-only sessions: the ledger replays what was sent and only appends (issue: append-only).

The done-when session: 30 turns on ``claude-opus-5-5``, every answer signed thinking plus
tool calls, dynamic state changing every turn, announcements made and retracted,
memories written, the blocklist changed, a runtime tool added, deferred tools found and
called; it passes the fake's prefix check and an independent one on every request, for
the default and the ``anthropic-native`` strategy; the same session holds on the other
targets through their SDKs.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from long_session import TURNS, build, drive, script

from contextchef import (
    ContextChef,
    InMemoryStore,
    ToolCall,
    ToolResult,
    UsageError,
    assistant,
    tool_results,
    user,
)
from contextchef.session._request import CompiledRequest
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeGeminiInteractions,
    FakeOpenAIChat,
    FakeResponses,
    httpx_for,
    text,
    tool_calls,
)
from prefix_check import prefix_problems

HX = httpx_for(anthropic)
OPUS = "claude-opus-5-5"
THINKING = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "error"}}


def _messages_json(request: CompiledRequest) -> str:
    return request.segments["messages"]


def _check_append_only(requests: list[CompiledRequest]) -> None:
    for before, after in itertools.pairwise(requests):
        assert after.edits == ()
        assert _messages_json(after).startswith(_messages_json(before)[:-1])
        assert after.segments["system"] == before.segments["system"]
        assert after.prefix_fingerprint == before.prefix_fingerprint


@pytest.mark.parametrize("strategy", ["client", "anthropic-native"])
def test_thirty_turns_pass_the_prefix_check(catalogs_dir: Path, strategy: str) -> None:
    native = strategy == "anthropic-native"
    chef = build(catalogs_dir)
    fake = FakeAnthropic().script(*script(native))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))

    def compile_one(c: ContextChef) -> CompiledRequest:
        return c.compile("anthropic", model=OPUS, strategy=strategy, extra={"thinking": THINKING})

    def send(request: CompiledRequest) -> Any:
        assert request.headers == {"anthropic-beta": "thinking-binding-controls-2026-08-01"}
        return client.messages.create(**request.payload, extra_headers=dict(request.headers))

    requests = list(drive(chef, fake, send, compile_one))
    client.close()
    assert len(requests) == TURNS and fake.pending == 0
    assert fake.violations == ()
    bodies = [(r.body, r.reply) for r in fake.requests]
    assert prefix_problems(bodies) == []
    _check_append_only(requests)
    sent = [json.dumps(r.body) for r in fake.requests]
    # what the session went through, visible in what was sent
    assert "GitHub tools are searchable." in sent[2]
    assert '"role": "system"' in sent[4]  # opus-5-5 takes mid-conversation system messages
    assert "(none: earlier announcements no longer apply)" in sent[20]
    # thinking on: memories join the user text, no made-up read_memories turn (break-it 37)
    assert "<memories>" in sent[-1] and "acme/app" in sent[-1]
    assert "contextchef_memories_" not in sent[-1]
    assert "(no memories stored)" in sent[-1]
    assert "is currently blocked" in sent[-1]
    assert sent[-1].count('"thinking"') >= TURNS
    assert "deploy_preview" in sent[-1] and "branch=fix" in sent[-1]
    # every answer's thinking went back as returned, the newest included
    last = fake.requests[-1].body["messages"]
    assert sum(1 for m in last for b in m["content"] if b.get("type") == "thinking") == TURNS - 1


def test_prefix_checker_catches_a_re_rendered_tail(catalogs_dir: Path) -> None:
    """The independent checker is not vacuous: the old re-rendered tail fails it."""
    chef = build(catalogs_dir)
    fake = FakeAnthropic(rules=()).script(*script(False)[:3])
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))

    def moving_tail(c: ContextChef) -> CompiledRequest:
        request = c.compile("anthropic", model=OPUS)
        c._state.ledgers.clear()  # forget what was sent: every compile renders from scratch
        return request

    def send(request: CompiledRequest) -> Any:
        return client.messages.create(**request.payload)

    list(zip(range(3), drive(chef, fake, send, moving_tail), strict=False))
    client.close()
    problems = prefix_problems([(r.body, r.reply) for r in fake.requests])
    assert problems and "earlier messages differ" in problems[0]


def _genai(fake: FakeGemini) -> genai.Client:
    return genai.Client(
        api_key="x",
        http_options=genai_types.HttpOptions(httpx_client=fake.http_client(HX)),
    )


@pytest.mark.parametrize(
    "target", ["openai", "deepseek", "responses", "gemini", "gemini-interactions", "stateful"]
)
def test_the_same_session_on_other_targets(catalogs_dir: Path, target: str) -> None:
    chef = build(catalogs_dir)
    extra: dict[str, Any] = {}
    if target in ("gemini-interactions", "stateful"):  # Interactions, stateless and chained
        fake: Any = FakeGeminiInteractions().script(*script(False))
        client: Any = _genai(fake)
        create = client.interactions.create
        extra = {"store": True} if target == "stateful" else {}
        target = "gemini-interactions"
    elif target == "gemini":
        fake = FakeGemini().script(*script(False))
        client = _genai(fake)
        create = client.models.generate_content
    elif target == "responses":
        fake = FakeResponses().script(*script(False))
        client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
        create = client.responses.create
    else:
        fake = FakeOpenAIChat().script(*script(False))
        client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
        create = client.chat.completions.create

    def send(request: CompiledRequest) -> Any:
        return create(**request.payload)

    def compile_one(c: ContextChef) -> CompiledRequest:
        return c.compile(target, model="model-x", extra=extra)

    requests = list(drive(chef, fake, send, compile_one))
    client.close()
    assert fake.violations == ()
    assert len(requests) == TURNS
    _check_append_only(requests)
    if extra:  # every request after the first was chained to the answer before it
        ids = [r.reply["id"] for r in fake.requests]
        assert [r.body.get("previous_interaction_id") for r in fake.requests] == [None, *ids[:-1]]
    if target == "gemini-interactions":  # issue 26: interaction-scoped, sent byte-identical
        for key in ("system_instruction", "tools"):
            sent = {json.dumps(r.body.get(key), sort_keys=True) for r in fake.requests}
            assert len(sent) == 1 and "null" not in sent, key


# -- the ledger's rules, one at a time ----------------------------------------------------


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.set_system_prompt("S")
    chef.set_history([user("hi")])
    return chef


def test_a_second_compile_of_the_same_turn_renders_its_tail_again() -> None:
    chef = _chef()
    chef.announce("a", "one", channel="user_tail")
    first = chef.compile("openai")
    chef.announce("a", "two", channel="user_tail")
    second = chef.compile("openai")  # not answered yet: nothing is bound to the first
    assert second.edits == ()
    text = second.payload["messages"][-1]["content"]
    assert "two" in text and "one" not in text
    chef.append(assistant("hello"), user("more"))
    third = chef.compile("openai")
    assert third.segments["messages"].startswith(second.segments["messages"][:-1])
    assert first.segments["messages"] != second.segments["messages"]


def test_an_unchanged_state_is_not_stated_again() -> None:
    chef = _chef()
    chef.announce("a", "one", channel="user_tail")
    chef.compile("openai")
    chef.append(assistant("hello"), user("more"))
    messages = chef.compile("openai").payload["messages"]
    assert messages[-1] == {"role": "user", "content": "more"}
    assert "one" in messages[-3]["content"]


def test_editing_a_sent_message_is_a_reported_edit() -> None:
    chef = _chef()
    chef.compile("anthropic")
    chef.append(assistant("hello"), user("more"))
    chef.compile("anthropic")
    chef.append(assistant("ok"), user("again"))
    chef.set_history([user("HI"), *chef.history[1:]])
    request = chef.compile("anthropic")
    (edit,) = request.edits
    assert (edit.kind, edit.history_index, edit.wire_index) == ("history", 0, 0)
    assert request.payload["messages"][0]["content"][0]["text"] == "HI"


def test_an_edit_strips_the_thinking_it_invalidated_on_prefix_check_models() -> None:
    thinking = {"type": "thinking", "thinking": "", "signature": "sig"}
    chef = _chef()
    chef.compile("anthropic", model=OPUS)
    chef.ingest({"type": "message", "role": "assistant", "content": [thinking, _text("a")]})
    chef.append(user("more"))
    chef.compile("anthropic", model=OPUS)
    chef.set_history([user("HI"), *chef.history[1:]])
    for model, kept in ((OPUS, 0), ("claude-opus-5", 1)):
        other = ContextChef()
        other.restore(chef.snapshot(), allow_unsigned=True)
        request = other.compile("anthropic", model=model)
        blocks = [b for m in request.payload["messages"] for b in m["content"]]
        assert sum(b["type"] == "thinking" for b in blocks) == kept, model
        assert request.edits[0].thinking_stripped == 1 - kept


def test_five_gemini_turns_parsed_one_at_a_time_keep_all_five() -> None:
    chef = _chef()
    for turn in range(5):
        chef.compile("gemini")
        response = {
            "candidates": [
                {"content": {"role": "model", "parts": [{"functionCall": {"name": "f"}}]}}
            ]
        }
        (call,) = chef.ingest(response)
        chef.append(tool_results([ToolResult(call_id=call.id, name="f", content=f"r{turn}")]))
    request = chef.compile("gemini")
    # the fake's calls carry no thought signature: the current turn's get the placeholder
    assert {c.kind for c in request.changes} <= {"signed_foreign_call"}
    contents = request.payload["contents"]
    calls = [p for c in contents for p in c["parts"] if "function_call" in p]
    assert len(calls) == 5 and all("id" not in p["function_call"] for p in calls)
    assert len({c.id for m in chef.history for c in m.tool_calls}) == 5


def test_a_snapshot_resumes_append_only() -> None:
    chef = _chef()
    chef.set_dynamic_state(None)
    chef.announce("a", "one", channel="user_tail")
    first = chef.compile("anthropic", model=OPUS)
    chef.append(assistant("hello"), user("more"))
    snap = json.loads(json.dumps(chef.snapshot()))
    resumed = ContextChef()
    resumed.restore(snap, allow_unsigned=True)
    second = resumed.compile("anthropic", model=OPUS)
    assert second.edits == ()
    assert second.segments["messages"].startswith(first.segments["messages"][:-1])


def test_a_corrupt_ledger_in_a_snapshot_changes_nothing() -> None:
    chef = _chef()
    chef.compile("openai")
    snap = chef.snapshot()
    for bad in ({"wire": 5}, {"marks": []}, {"strip": [[2, 1]]}, {"answered": "yes"}):
        broken = json.loads(json.dumps(snap))
        broken["ledgers"]["openai"].update(bad)
        other = _chef()
        before = other.snapshot()
        with pytest.raises(UsageError, match="snapshot ledger"):
            other.restore(broken, allow_unsigned=True)
        assert other.snapshot() == before


def test_prefill_is_refused_on_models_that_reject_it() -> None:
    chef = _chef()
    with pytest.raises(UsageError, match=r"claude-opus-5-5.*rejects prefill"):
        chef.compile("anthropic", model=OPUS, prefill="Sure")
    assert "Sure" in chef.compile("anthropic", model="m", prefill="Sure").to_json()


def test_extra_fields_pass_through_and_written_ones_are_refused() -> None:
    chef = _chef()
    request = chef.compile("anthropic", extra={"thinking": THINKING, "output_config": {}})
    assert request.payload["thinking"] == THINKING
    assert request.headers == {"anthropic-beta": "thinking-binding-controls-2026-08-01"}
    with pytest.raises(UsageError, match="written by compile"):
        chef.compile("anthropic", extra={"messages": []})
    with pytest.raises(UsageError, match="no beta header"):
        chef.compile("openai", betas=["x"])


def test_ingest_keeps_notices_and_the_response_id_for_diagnostics() -> None:
    chef = _chef()
    heard: list[tuple[str, str]] = []
    chef.on(
        "response:notice", lambda e: heard.append((e.target, e.notice.kind if e.notice else ""))
    )
    chef.compile("anthropic", model=OPUS)
    chef.ingest(
        {
            "id": "msg_7",
            "type": "message",
            "role": "assistant",
            "content": [_text("a")],
            "input_transformations": [
                {"type": "thinking_dropped", "path": "messages.1.content.0", "reason": "x"}
            ],
            "diagnostics": {"cache_miss_reason": {"type": "tools_changed"}},
        }
    )
    assert [(n.kind, n.reason) for n in chef.notices] == [
        ("thinking_dropped", "x"),
        ("cache_miss", "tools_changed"),
    ]
    assert heard == [("anthropic", "thinking_dropped"), ("anthropic", "cache_miss")]
    chef.append(user("more"))
    request = chef.compile("anthropic", model=OPUS, diagnostics=True)
    assert request.payload["diagnostics"] == {"previous_message_id": "msg_7"}


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


@pytest.mark.parametrize("maintenance", ["compact", "clear_tool_results", "clear_history"])
def test_our_own_compaction_keeps_the_prefix_check(catalogs_dir: Path, maintenance: str) -> None:
    """Compaction and clearing are reported edits; the thinking they invalidate is dropped."""
    chef = build(catalogs_dir)
    fake = FakeAnthropic().script(*script(False)[:12])
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))

    def compile_one(c: ContextChef) -> CompiledRequest:
        return c.compile("anthropic", model=OPUS, extra={"thinking": THINKING})

    def send(request: CompiledRequest) -> Any:
        return client.messages.create(**request.payload, extra_headers=dict(request.headers))

    requests = []
    for turn, request in enumerate(drive(chef, fake, send, compile_one)):
        requests.append(request)
        if turn == 7:
            if maintenance == "compact":
                chef.compact(lambda text: "Summary: files read, issue filed.", keep_recent_turns=1)
            elif maintenance == "clear_tool_results":
                chef.clear_tool_results(keep_recent=1)
            else:
                chef.clear_history()
                chef.append(user("Start again."))
        if turn == 11:
            break
    client.close()
    assert fake.violations == ()
    assert prefix_problems([(r.body, r.reply) for r in fake.requests]) == []
    (edit,) = requests[8].edits
    assert edit.kind == "history"
    # compaction keeps recent turns and clearing keeps every turn: their thinking goes;
    # after clear_history nothing is left to strip
    assert (edit.thinking_stripped > 0) == (maintenance != "clear_history")
    assert all(r.edits == () for r in requests[9:])


def test_one_long_task_compacts_inside_its_loop_and_keeps_going() -> None:
    """Break-it find: one user message and a long tool loop on opus with thinking; compact
    summarized nothing, silently. It now cuts inside the loop (model steps), the next
    request goes once without thinking (the edit stripped it, logged as such) and every
    request passes the fake's prefix and thinking rules."""
    chef = ContextChef()
    chef.register_tools(
        [{"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}],
        handlers={"grep": lambda **_: "hit " * 500},
    )
    chef.append(user("Fix every failing test."))
    fake = FakeAnthropic().script(
        *(tool_calls(("grep", {"pattern": f"p{i}"}), reasoning=f"step {i}") for i in range(15))
    )
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    requests: list[CompiledRequest] = []
    for turn in range(15):
        if turn == 12:
            done = chef.compact(lambda text: "Summary: grepped p0-p9.", keep_recent_turns=2)
            assert done.plan.counted == "steps" and len(chef.history) == 5
        request = chef.compile("anthropic", model=OPUS, extra={"thinking": THINKING})
        requests.append(request)
        reply = client.messages.create(**request.payload, extra_headers=dict(request.headers))
        chef.run_tools(chef.ingest(reply))
    client.close()
    assert fake.violations == ()
    assert prefix_problems([(r.body, r.reply) for r in fake.requests]) == []
    assert [e.kind for e in requests[12].edits] == ["history"]
    assert requests[12].dropped == ("thinking",)
    assert [r.dropped for r in requests[13:]] == [(), ()]
    assert all(r.payload["thinking"] == THINKING for r in requests[13:])


def test_server_blocks_are_passed_back_untouched() -> None:
    """A compaction block and server tool blocks come back exactly as the API sent them."""
    chef = _chef()
    chef.compile("anthropic", model=OPUS)
    blocks = [
        {"type": "compaction", "content": "summary", "encrypted_content": "e=="},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        _text("done"),
    ]
    chef.ingest({"type": "message", "role": "assistant", "content": blocks})
    chef.append(user("more"))
    sent = chef.compile("anthropic", model=OPUS).payload["messages"]
    # sent from the compaction block's message on: the API drops what precedes it
    assert sent[0] == {"role": "assistant", "content": blocks} and len(sent) == 2
    assert all(b["type"] != "tool_result" for m in sent for b in m["content"])


def test_an_edit_right_after_the_first_answered_compile_is_seen() -> None:
    """The answer to the pending compile binds it, even before the next compile."""
    thinking = {"type": "thinking", "thinking": "", "signature": "sig"}
    for change in ("edit", "clear"):
        chef = _chef()
        chef.compile("anthropic", model=OPUS)
        chef.ingest({"type": "message", "role": "assistant", "content": [thinking, _text("a")]})
        chef.append(user("more"))
        if change == "edit":
            chef.set_history([user("HI"), *chef.history[1:]])
        else:
            chef.clear_history()
            chef.append(user("again"))
        request = chef.compile("anthropic", model=OPUS)
        (edit,) = request.edits
        assert (edit.kind, edit.history_index) == ("history", 0)
        assert '"thinking"' not in request.to_json()


def test_compiling_twice_with_memories_gives_the_same_bytes() -> None:
    chef = ContextChef(memory=InMemoryStore({"tz": "UTC"}))
    chef.set_history([user("hi")])
    first = chef.compile("openai").to_json()
    assert chef.compile("openai").to_json() == first
    assert "contextchef_memories_0001" in first


@pytest.mark.parametrize("cut", ["compact", "clear_history", "set_history"])
def test_a_snapshot_taken_right_after_a_cut_restores(cut: str) -> None:
    chef = _chef()
    for turn in range(3):
        chef.compile("anthropic", model=OPUS)
        chef.compile("openai")
        chef.append(assistant(f"a{turn}"), user(f"u{turn}"))
    if cut == "compact":
        chef.compact(lambda text: "summary", keep_recent_turns=1)
    elif cut == "clear_history":
        chef.clear_history()
        chef.append(user("again"))
    else:
        chef.set_history(chef.history[:3])
    other = ContextChef()
    other.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True)
    for target in ("anthropic", "openai"):
        assert other.compile(target).to_json() == chef.compile(target).to_json()
        assert other.compile(target).edits == chef.compile(target).edits


def test_switching_to_a_model_without_system_messages_folds_them_into_user_text() -> None:
    """Claude models differ: the sent system entries are an edit for one that has none."""
    chef = _chef()
    chef.announce("mode", "Writes need review.", channel="system")
    fake = FakeAnthropic().script(*[text(f"a{i}", reasoning="") for i in range(6)])
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    requests = []
    for model in (OPUS, OPUS, "claude-haiku-5-5", "claude-haiku-5-5", OPUS, OPUS):
        request = chef.compile("anthropic", model=model)
        requests.append(request)
        chef.ingest(client.messages.create(**request.payload))
        chef.append(user("next"))
    client.close()
    assert fake.violations == ()
    assert '"role": "system"' in json.dumps(requests[1].payload)
    (edit,) = requests[2].edits
    assert edit.kind == "model" and edit.wire_index == 0
    assert '"role": "system"' not in json.dumps(requests[3].payload)
    stated = [m for m in requests[3].payload["messages"] if "Writes need review." in json.dumps(m)]
    assert [m["role"] for m in stated] == ["user"]  # stated again, now in the user turn
    assert all(r.edits == () for r in requests[3:])


@pytest.mark.parametrize(
    "blank",
    [
        {"type": "message", "role": "assistant", "content": [{"type": "text", "text": ""}]},
        {"type": "message", "role": "assistant", "content": []},
        {
            "id": "c",
            "object": "chat.completion",
            "choices": [{"message": {"role": "assistant", "content": ""}}],
        },
    ],
)
def test_a_blank_answer_never_leaves_two_user_turns(blank: dict[str, Any]) -> None:
    """The blank turn renders to nothing: the next user message joins the unanswered one."""
    chef = _chef()
    fake = FakeAnthropic().script(text("fine", reasoning=""))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    chef.compile("anthropic", model=OPUS)
    chef.ingest(blank)
    chef.append(user("hello? please answer"))
    request = chef.compile("anthropic", model=OPUS)
    client.messages.create(**request.payload)
    client.close()
    assert fake.violations == () and request.edits == ()
    assert [m["role"] for m in request.payload["messages"]] == ["user"]


def test_an_unanswered_edit_is_decided_again_at_the_retry() -> None:
    """A retry reports the edit again; taking the change back before sending undoes it."""
    thinking = {"type": "thinking", "thinking": "", "signature": "sig"}
    chef = _chef()
    for _ in range(2):
        chef.compile("anthropic", model=OPUS)
        chef.ingest({"type": "message", "role": "assistant", "content": [thinking, _text("a")]})
        chef.append(user("more"))
    sent = chef.compile("anthropic", model=OPUS)
    chef.set_system_prompt("S2")
    first = chef.compile("anthropic", model=OPUS)  # say the request fails
    retry = chef.compile("anthropic", model=OPUS)
    assert [e.kind for e in first.edits] == [e.kind for e in retry.edits] == ["system"]
    assert retry.to_json() == first.to_json()
    chef.set_system_prompt("S")  # taken back before anything was sent
    again = chef.compile("anthropic", model=OPUS)
    assert again.edits == ()
    assert again.to_json() == sent.to_json()
    assert again.to_json().count('"type":"thinking"') == 2


def test_a_history_ending_with_the_model_is_refused_where_prefill_is() -> None:
    chef = _chef()
    chef.append(assistant("partial"))
    with pytest.raises(UsageError, match=r"claude-opus-5-5.*trailing assistant message"):
        chef.compile("anthropic", model=OPUS)
    assert chef.compile("anthropic", model="claude-opus-4-8").payload["messages"][-1]["role"] == (
        "assistant"
    )


@pytest.mark.parametrize("extra", [{"x": float("nan")}, {"x": object()}, {1: 2}, {"": 1}])
def test_extra_must_be_plain_json_with_text_keys(extra: dict[Any, Any]) -> None:
    chef = _chef()
    with pytest.raises(UsageError, match="extra field"):
        chef.compile("anthropic", extra=extra)


def test_reused_or_empty_call_ids_are_made_unique_at_ingest() -> None:
    """An OpenAI-compatible server that sends "" or "call_0" every turn loses nothing."""
    chef = _chef()
    seen = []
    for turn, call_id in enumerate(["call_0", "call_0", "", ""]):
        chef.compile("openai")
        reply = {
            "id": f"c{turn}",
            "object": "chat.completion",
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": "f", "arguments": "{}"},
                            }
                        ],
                    }
                }
            ],
        }
        (call,) = chef.ingest(reply)
        seen.append(call.id)
        chef.append(tool_results([ToolResult(call_id=call.id, name="f", content=f"r{turn}")]))
    assert len(set(seen)) == 4 and seen[0] == "call_0"
    request = chef.compile("openai")
    assert request.changes == ()
    assert sum(m["role"] == "tool" for m in request.payload["messages"]) == 4


def test_call_ids_anthropic_refuses_are_sent_in_a_form_it_accepts() -> None:
    chef = _chef()
    chef.register_tools([{"name": "read_file", "description": "Read.", "input_schema": {}}])
    call = ToolCall(id="functions.read_file:0", name="read_file", arguments="{}")
    chef.append(assistant("", [call]))
    chef.append(tool_results([ToolResult(call_id=call.id, name="read_file", content="x")]))
    fake = FakeAnthropic().script(text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    payload = chef.compile("anthropic").payload
    messages = payload["messages"]
    client.messages.create(model="m", max_tokens=10, messages=messages, tools=payload["tools"])
    client.close()
    assert fake.violations == ()
    use, result = messages[1]["content"][0], messages[2]["content"][0]
    assert use["id"] == result["tool_use_id"] and use["id"].startswith(
        "toolu_functions_read_file_0_"
    )


def test_a_response_is_ingested_once() -> None:
    chef = _chef()
    chef.compile("anthropic", model=OPUS)
    reply = {"id": "msg_1", "type": "message", "role": "assistant", "content": [_text("a")]}
    chef.ingest(reply)
    with pytest.raises(UsageError, match="'msg_1' was ingested already"):
        chef.ingest(reply)
    assert len(chef.history) == 2
    resumed = _chef()  # a worker resuming from a snapshot knows the last answer too
    resumed.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True)
    with pytest.raises(UsageError, match="'msg_1' was ingested already"):
        resumed.ingest(reply)
    assert resumed.history == chef.history


@pytest.mark.parametrize("bad", [-1, "NaN", [None], [[]], {"a": 1}, 1.5])
@pytest.mark.parametrize("field", ["keys", "extra", "message", "block", "input"])
def test_unreadable_provider_data_is_a_library_error(field: str, bad: Any) -> None:
    """Replay hints from a corrupt snapshot never escape as TypeError or AttributeError."""
    from contextchef import ContextChefError

    chef = _chef()
    chef.compile("anthropic", model=OPUS)
    chef.ingest(
        {
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "", "signature": "s"},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}},
            ],
        }
    )
    chef.append(tool_results([ToolResult(call_id="t1", name="f", content="r")]))
    snap = json.loads(json.dumps(chef.snapshot()))
    for part in snap["history"][1]["parts"]:
        part["provider_data"][field] = bad
    other = ContextChef()
    for target in ("anthropic", "openai", "responses", "gemini", "deepseek"):
        try:
            other.restore(snap, allow_unsigned=True)
            other.compile(target, model=OPUS if target == "anthropic" else "m").to_json()
        except ContextChefError:
            pass
