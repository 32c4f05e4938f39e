"""The ``gemini-interactions`` target (issue 26, stateless slice) through google-genai.

Every loop sends ``client.interactions.create(**request.payload)`` through the official
SDK (3.6.1) to `FakeGeminiInteractions`, which enforces pairing by ``call_id``, a
homogeneous ``input`` and the replay of thought signatures; every payload is validated
against the SDK's ``CreateModelInteraction`` request type as well.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import anthropic
import pytest
from google import genai
from google.genai import _interactions_errors, types
from pydantic import BaseModel

from contextchef import (
    ContextChef,
    CorruptHistoryError,
    SessionSync,
    SnapshotKeys,
    SnapshotSignatureError,
    SQLiteSessionStore,
    ToolCall,
    UsageError,
    assistant,
    user,
)
from contextchef._json import canonical_dumps
from contextchef.history._reordered import record_digest as _record_digest
from contextchef.providers import from_interactions, get_adapter, read_response
from contextchef.providers.gemini._signatures import SKIP_SIGNATURE
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeGeminiInteractions,
    Ids,
    fake_for,
    httpx_for,
    raw,
    text,
    tool_calls,
)
from contextchef.testing._interactions import (
    interactions_input_homogeneous,
    interactions_results_paired,
    interactions_signatures_replayed,
    interactions_store_chaining,
    interactions_tools_flat,
)
from contextchef.tools._catalogs import load_catalog
from sdk_check import interactions_problems

TARGET = "gemini-interactions"
MODEL = "gemini-4-argon"
KEYS = SnapshotKeys({"k1": b"0123456789abcdef0123456789abcdef"})


def _client(fake: Any) -> genai.Client:
    hx = httpx_for(genai)
    return genai.Client(
        api_key="x", http_options=types.HttpOptions(httpx_client=fake.http_client(hx))
    )


def sdk_problems(payload: dict[str, Any]) -> list[str]:
    """What google-genai's ``CreateModelInteraction`` (and its TypedDict form) has against it."""
    return interactions_problems(payload)


class Workspace(BaseModel):
    branch: str
    open_files: list[str]


def _answer(**args: Any) -> str:
    return "ok: " + json.dumps(args, sort_keys=True)


def _session(catalogs: Path) -> ContextChef:
    chef = ContextChef(defer=["github__*"])
    for name in ("mcp-filesystem", "github"):
        tools = load_catalog(catalogs / f"{name}.json").tools
        chef.register_tools(tools, handlers={t.name: _answer for t in tools})
    chef.set_system_prompt("You are a careful coding agent.")
    chef.set_history([user("File an issue about the crash in a.py.")])
    return chef


def _loop(chef: ContextChef, client: genai.Client, *, turns: int = 10) -> list[Any]:
    """Compile, send through the SDK, ingest, run the calls; until the model answers."""
    requests = []
    for _ in range(turns):
        request = chef.compile(TARGET, model=MODEL, max_tokens=1024)
        requests.append(request)
        assert sdk_problems(request.payload) == []
        interaction = client.interactions.create(**request.payload)
        if not chef.run_tools(chef.ingest(interaction)):
            return requests
    raise AssertionError("the model never answered")


def test_a_multi_turn_agent_loop_with_search_parallel_calls_and_state(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    chef.set_dynamic_state(Workspace(branch="main", open_files=["a.py"]))
    issue = {"owner": "acme", "repo": "app", "title": "Crash in a.py"}
    fake = FakeGeminiInteractions().script(
        tool_calls(("tool_search", {"tool_names": ["github__create_issue"]}), reasoning="find"),
        tool_calls(  # parallel: a deferred tool through defer_execute, and a direct one
            ("defer_execute", {"tool_name": "github__create_issue", "params": issue}),
            ("filesystem__read_text_file", {"path": "a.py"}),
            reasoning="",
        ),
        text("Filed the issue.", reasoning="done"),
        tool_calls(
            ("filesystem__list_directory", {"path": "."}),
            ("filesystem__list_allowed_directories", {}),
        ),
        text("Listed."),
    )
    client = _client(fake)
    first = _loop(chef, client)
    chef.append(user("Now list the directories."))
    chef.set_dynamic_state(Workspace(branch="fix", open_files=["a.py", "b.py"]))  # a change
    second = _loop(chef, client)
    assert fake.violations == () and fake.pending == 0
    assert [r.path for r in fake.requests] == ["/v1/interactions"] * 5
    bodies = [r.body for r in fake.requests]
    # interaction-scoped fields resent, byte-identical (the tools never change)
    for key in ("system_instruction", "tools", "generation_config", "model"):
        assert len({canonical_dumps(b[key]) for b in bodies}) == 1, key
    assert all(b["store"] is False for b in bodies)
    # stateless and append-only: each input extends the one before it
    for before, after in itertools.pairwise(bodies):
        assert after["input"][: len(before["input"])] == before["input"]
    steps = bodies[-1]["input"]
    kinds = [s["type"] for s in steps]
    assert kinds[:2] == ["user_input", "thought"]
    # every call answered by call_id, parallel results after their calls, in call order
    calls = [s["id"] for s in steps if s["type"] == "function_call"]
    results = [s["call_id"] for s in steps if s["type"] == "function_result"]
    assert calls == results == [f"call_{n:04d}" for n in range(1, 6)]
    created = next(s for s in steps if s.get("call_id") == "call_0002")
    assert created["name"] == "defer_execute" and "Crash in a.py" in str(created["result"])
    searched = next(s for s in steps if s.get("call_id") == "call_0001")
    assert "github__create_issue" in str(searched["result"])
    # the thought steps come back whole, signatures unchanged
    issued = [s for r in fake.requests for s in r.reply["steps"] if s["type"] == "thought"]
    assert [s for s in steps if s["type"] == "thought"] == issued
    # the state change is stated at the end of the new user turn
    last_user = [s for s in second[0].payload["input"] if s["type"] == "user_input"][-1]
    said = " ".join(c["text"] for c in last_user["content"])
    assert "Now list the directories." in said and '"b.py"' in said
    assert len(first) == 3 and len(second) == 2
    assert chef.notices == ()


def test_the_rules_refuse_what_the_api_refuses(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    fake = FakeGeminiInteractions().script(
        tool_calls(("filesystem__read_text_file", {"path": "a.py"}), reasoning="r")
    )
    client = _client(fake)
    chef.run_tools(
        chef.ingest(client.interactions.create(**chef.compile(TARGET, model=MODEL).payload))
    )
    payload = chef.compile(TARGET, model=MODEL).mutable_payload()
    steps = payload["input"]
    thought = next(s for s in steps if s["type"] == "thought")
    thought["signature"] = "Zm9yZ2Vk"  # forged
    with pytest.raises(_interactions_errors.BadRequestError) as caught:
        client.interactions.create(**payload)
    assert "was not issued" in str(caught.value.body)
    assert fake.violations[-1].rule == "interactions_signatures_replayed"


def _body(*steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "input": list(steps), **fields}


USER = {"type": "user_input", "content": [{"type": "text", "text": "hi"}]}
CALL = {"type": "function_call", "id": "c1", "name": "f", "arguments": {}}
RESULT = {"type": "function_result", "call_id": "c1", "name": "f", "result": "ok"}


def test_each_rule_names_its_problem_and_passes_a_valid_body() -> None:
    good = _body(USER, CALL, RESULT, {**USER})
    for rule in (
        interactions_results_paired,
        interactions_input_homogeneous,
        interactions_tools_flat,
        interactions_store_chaining,
    ):
        assert list(rule(good, ())) == [], rule.__name__
    assert "matches no call" in next(
        iter(interactions_results_paired(_body(USER, {**RESULT, "call_id": "zz"}), ()))
    )
    assert "have no function_result" in next(
        iter(interactions_results_paired(_body(USER, CALL, USER), ()))
    )
    assert "answered already" in next(
        iter(interactions_results_paired(_body(USER, CALL, RESULT, RESULT), ()))
    )
    mixed = _body(USER, {"type": "text", "text": "x"})
    assert "mixes" in next(iter(interactions_input_homogeneous(mixed, ())))
    decl = {"tools": [{"function_declarations": []}]}
    assert list(interactions_tools_flat(decl, ()))
    dup = {"tools": [{"type": "function", "name": "f"}, {"type": "function", "name": "f"}]}
    assert "duplicate" in next(iter(interactions_tools_flat(dup, ())))
    chained = _body(USER, previous_interaction_id="v1_9", store=False)
    assert len(list(interactions_store_chaining(chained, ()))) == 2
    unsigned = _body(USER, {"type": "thought", "signature": "x"})
    assert list(interactions_signatures_replayed(unsigned, ()))


STEPS: list[dict[str, Any]] = [
    {"type": "user_input", "content": [{"type": "text", "text": "Weather?"}]},
    {"type": "thought", "signature": "U0lH", "summary": [{"type": "text", "text": "hm"}]},
    {
        "type": "google_search_call",
        "id": "gs1",
        "arguments": {"queries": ["paris"]},
        "signature": "c2c=",
    },
    {
        "type": "google_search_result",
        "call_id": "gs1",
        "result": [{"search_suggestions": "<p>paris</p>"}],
        "signature": "c2Q=",
    },
    {
        "type": "function_call",
        "id": "c1",
        "name": "get_weather",
        "arguments": {"city": "Paris"},
        "signature": "Zg==",
    },
    {"type": "function_call", "id": "c2", "name": "get_time", "arguments": {"tz": "CET"}},
    {
        "type": "function_result",
        "call_id": "c1",
        "name": "get_weather",
        "result": [{"type": "text", "text": "21C"}],
    },
    {
        "type": "function_result",
        "call_id": "c2",
        "name": "get_time",
        "result": {"now": "12:00"},
        "is_error": True,
    },
    {"type": "thought", "signature": "U0lHMg=="},
    {
        "type": "model_output",
        "content": [
            {
                "type": "text",
                "text": "Sunny",
                "annotations": [{"type": "url_citation", "url": "https://w.example"}],
            },
            {"type": "image", "data": "aGk=", "mime_type": "image/png"},
        ],
    },
    {
        "type": "user_input",
        "content": [
            {"type": "image", "uri": "gs://b/a.png", "mime_type": "image/png"},
            {"type": "text", "text": "And this?"},
        ],
    },
]


def test_steps_parse_and_render_back_whole_and_in_order() -> None:
    parsed = from_interactions(STEPS, system_instruction="sys")
    assert parsed.system == "sys" and parsed.notes[:2] == (
        "message 2: google_search_call step kept as a gemini-interactions provider part",
        "message 3: google_search_result step kept as a gemini-interactions provider part",
    )
    assert [m.role for m in parsed.messages] == ["user", "assistant", "user", "assistant", "user"]
    adapter = get_adapter(TARGET)
    assert adapter.render_messages(parsed.messages) == STEPS
    call = parsed.messages[1].tool_calls[0]
    assert (call.id, call.name, json.loads(call.arguments)) == (
        "c1",
        "get_weather",
        {"city": "Paris"},
    )
    results = parsed.messages[2].tool_results
    assert [r.content for r in results] == ["21C", '{"now":"12:00"}'] and results[1].is_error
    payload = adapter.render_request(
        system="sys", tools=(), messages=parsed.messages, options=_options()
    )
    assert payload["input"] == STEPS
    # SDK 3.6.1's FunctionCallStep declares no ``signature`` (the research's CONFLICT: some
    # Google pages and Vertex put one there); its models keep it, and so do we
    assert sdk_problems(payload) == [
        "$.input[4]: unknown key 'signature' for FunctionCallStepParam"
    ]


def _options() -> Any:
    from contextchef.providers import RequestOptions

    return RequestOptions(model=MODEL)


def _interaction(status: str, **extra: Any) -> dict[str, Any]:
    steps = [{"type": "model_output", "content": [{"type": "text", "text": "part"}]}]
    return {"id": "v1_x", "status": status, "steps": steps, **extra}


@pytest.mark.parametrize("status", ["incomplete", "requires_continuation", "budget_exceeded"])
def test_a_reply_that_ended_early_is_kept_with_a_notice(status: str) -> None:
    read = read_response(_interaction(status))
    assert [n.kind for n in read.notices] == ["incomplete"] and read.notices[0].reason == status
    assert read.turn.messages[0].parts[0].text == "part"  # type: ignore[union-attr]


@pytest.mark.parametrize("status", ["failed", "cancelled", "in_progress", "queued"])
def test_a_failed_interaction_leaves_the_history_unchanged(status: str) -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    fake = FakeGeminiInteractions().script(
        raw(_interaction(status, errors=[{"code": "quota", "message": "over"}]))
    )
    interaction = _client(fake).interactions.create(**chef.compile(TARGET, model=MODEL).payload)
    before = chef.history
    with pytest.raises(CorruptHistoryError, match=status):
        chef.ingest(interaction)
    assert chef.history == before


def test_the_sdk_object_and_its_dict_read_alike() -> None:
    fake = FakeGeminiInteractions().script(tool_calls(("f", {"a": 1}), ("g", {}), reasoning="why"))
    chef = ContextChef()
    chef.set_history([user("hi")])
    obj = _client(fake).interactions.create(**chef.compile(TARGET, model=MODEL).payload)
    from_obj = read_response(obj)
    from_dict = read_response(fake.requests[0].reply)
    adapter = get_adapter(TARGET)
    rendered = [adapter.render_messages(r.turn.messages) for r in (from_obj, from_dict)]
    assert rendered[0] == rendered[1] and from_obj.id == from_dict.id == "v1_0001"
    assert rendered[0] == fake.requests[0].reply["steps"]  # whole, in order
    assert [p.name for p in from_obj.turn.messages[0].parts if isinstance(p, ToolCall)] == [
        "f",
        "g",
    ]


def test_fake_for_the_target_and_a_switch_with_generate_content(catalogs_dir: Path) -> None:
    """generateContent -> Interactions -> generateContent, one conversation, 0 refusals."""
    assert isinstance(fake_for(TARGET), FakeGeminiInteractions)
    ids = Ids()
    gemini = FakeGemini(ids=ids).script(
        tool_calls(("filesystem__read_text_file", {"path": "a.py"}), reasoning="look"),
        text("It crashes on line 3."),
    )
    interactions = FakeGeminiInteractions(ids=ids).script(
        tool_calls(("filesystem__read_text_file", {"path": "b.py"}), reasoning="more"),
        text("b.py is fine."),
    )
    gemini_again = FakeGemini(ids=ids).script(
        tool_calls(("filesystem__list_directory", {"path": "."})),
        text("Two files."),
    )
    chef = _session(catalogs_dir)
    for fake, target, ask in (
        (gemini, "gemini", None),
        (interactions, TARGET, "And b.py?"),
        (gemini_again, "gemini", "How many files?"),
    ):
        if ask:
            chef.append(user(ask))
        client = _client(fake)
        for _ in range(3):
            request = chef.compile(target, model=MODEL)
            if target == TARGET:
                reply = client.interactions.create(**request.payload)
            else:
                reply = client.models.generate_content(**request.payload)
            if not chef.run_tools(chef.ingest(reply)):
                break
    for fake in (gemini, interactions, gemini_again):
        assert fake.violations == () and fake.pending == 0
    moved = interactions.requests[0].body["input"]
    # generateContent's thought parts are not sent to Interactions; its call and result are
    assert [s["type"] for s in moved] == [
        "user_input",
        "function_call",
        "function_result",
        "model_output",
        "user_input",
    ]
    assert moved[1]["id"] == moved[2]["call_id"] == "call_0001"


def test_a_switch_with_anthropic_and_back(catalogs_dir: Path) -> None:
    """Anthropic -> Interactions -> Anthropic, with reasoning on both sides: 0 refusals."""
    ids = Ids()
    first = FakeAnthropic(ids=ids).script(
        tool_calls(("filesystem__read_text_file", {"path": "a.py"}), reasoning="look"),
        text("It crashes on line 3."),
    )
    middle = FakeGeminiInteractions(ids=ids).script(
        tool_calls(("filesystem__read_text_file", {"path": "b.py"}), reasoning="more"),
        text("b.py is fine."),
    )
    last = FakeAnthropic(ids=ids).script(
        tool_calls(("filesystem__list_directory", {"path": "."}), reasoning="count"),
        text("Two files."),
    )
    chef = _session(catalogs_dir)
    for fake, target, ask in (
        (first, "anthropic", None),
        (middle, TARGET, "And b.py?"),
        (last, "anthropic", "How many files?"),
    ):
        if ask:
            chef.append(user(ask))
        if target == TARGET:
            client: Any = _client(fake)
            send = client.interactions.create
        else:
            http = fake.http_client(httpx_for(anthropic))
            send = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http).messages.create
        for _ in range(3):
            if not chef.run_tools(chef.ingest(send(**chef.compile(target, model="m").payload))):
                break
    for fake in (first, middle, last):
        assert fake.violations == () and fake.pending == 0
    moved = middle.requests[0].body["input"]
    # Anthropic's thinking is not sent to Interactions; the calls and results are
    assert [s["type"] for s in moved] == [
        "user_input", "function_call", "function_result", "model_output", "user_input"
    ]  # fmt: skip
    back = last.requests[0].body["messages"]
    assert any(
        b.get("type") == "tool_use" and b["id"] == "call_0001"
        for m in back
        if isinstance(m["content"], list)
        for b in m["content"]
    )


def test_generation_config_merges_the_cap_and_thinking_and_the_api_version_is_the_sdks() -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    thinking = {"generation_config": {"thinking_level": "high", "max_output_tokens": 5}}
    payload = chef.compile(TARGET, model=MODEL, max_tokens=64, extra=thinking).payload
    assert payload["generation_config"] == {"thinking_level": "high", "max_output_tokens": 64}
    assert sdk_problems(payload) == []
    fake = FakeGeminiInteractions().script(text("hello", reasoning=""))
    hx = httpx_for(genai)
    options = types.HttpOptions(api_version="v1beta", httpx_client=fake.http_client(hx))
    client = genai.Client(api_key="x", http_options=options)
    chef.ingest(client.interactions.create(**payload))
    assert fake.requests[0].path == "/v1beta/interactions" and fake.violations == ()
    assert fake.requests[0].body["generation_config"]["thinking_level"] == "high"


def test_an_incomplete_reply_is_ingested_with_a_notice() -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    fake = FakeGeminiInteractions().script(raw(_interaction("incomplete")))
    chef.ingest(_client(fake).interactions.create(**chef.compile(TARGET, model=MODEL).payload))
    assert [(n.kind, n.reason) for n in chef.notices] == [("incomplete", "incomplete")]
    assert chef.history[-1].role == "assistant"
    chef.append(user("go on"))
    steps = chef.compile(TARGET, model=MODEL).payload["input"]
    assert [s["type"] for s in steps] == ["user_input", "model_output", "user_input"]


def test_chaining_needs_an_interaction_that_was_stored() -> None:
    # store: false keeps nothing server-side: a later request cannot chain to it, while one
    # created with the default (store: true) can
    fake = FakeGeminiInteractions().script(text("one"), text("two"), text("three"))
    client = _client(fake)
    first = client.interactions.create(model=MODEL, input="hi", store=False)
    with pytest.raises(_interactions_errors.BadRequestError, match="created with store: false"):
        client.interactions.create(model=MODEL, input="and?", previous_interaction_id=first.id)
    stored = client.interactions.create(model=MODEL, input="hi")
    chained = client.interactions.create(
        model=MODEL, input="and?", previous_interaction_id=stored.id
    )
    assert chained.id != stored.id
    assert [v.request_index for v in fake.violations] == [1]  # only the chain to store: false


def _stateful_script() -> tuple[Any, ...]:
    issue = {"owner": "acme", "repo": "app", "title": "Crash in a.py"}
    return (
        tool_calls(("tool_search", {"tool_names": ["github__create_issue"]}), reasoning="find"),
        tool_calls(
            ("defer_execute", {"tool_name": "github__create_issue", "params": issue}),
            ("filesystem__read_text_file", {"path": "a.py"}),
            reasoning="",
        ),
        text("Filed the issue.", reasoning="done"),
        tool_calls(("filesystem__list_directory", {"path": "."}), reasoning="list"),
        text("Listed."),
    )


def _run(catalogs: Path, extra: dict[str, Any]) -> tuple[Any, list[Any], ContextChef]:
    chef = _session(catalogs)
    chef.set_dynamic_state(Workspace(branch="main", open_files=["a.py"]))
    fake = FakeGeminiInteractions().script(*_stateful_script())
    client = _client(fake)
    requests = []
    for turn in range(6):
        if turn == 3:
            chef.append(user("Now list the directories."))
            chef.set_dynamic_state(Workspace(branch="fix", open_files=["a.py", "b.py"]))
        request = chef.compile(TARGET, model=MODEL, max_tokens=1024, extra=extra)
        assert sdk_problems(request.payload) == []
        requests.append(request)
        chef.run_tools(chef.ingest(client.interactions.create(**request.payload)))
        if turn == 4:
            break
    return fake, requests, chef


def test_stateful_mode_sends_only_the_new_steps_chained_to_the_last_answer(
    catalogs_dir: Path,
) -> None:
    """Issue 26 item 2: ``store: True`` chains by ``previous_interaction_id``; the ledger
    keeps the whole record, the same as a stateless session's."""
    fake, requests, _ = _run(catalogs_dir, {"store": True})
    stateless_fake, stateless, _ = _run(catalogs_dir, {})
    assert fake.violations == () and stateless_fake.violations == ()
    bodies = [r.body for r in fake.requests]
    replies = [r.reply["id"] for r in fake.requests]
    assert "previous_interaction_id" not in bodies[0]
    assert [b["previous_interaction_id"] for b in bodies[1:]] == replies[:-1]
    # only new client steps are sent: results, then the next user turn
    assert [[s["type"] for s in b["input"]] for b in bodies[1:]] == [
        ["function_result"],
        ["function_result", "function_result"],
        ["user_input"],
        ["function_result"],
    ]
    # interaction-scoped fields resent, byte-identical
    for key in ("system_instruction", "tools", "generation_config"):
        assert len({canonical_dumps(b[key]) for b in bodies}) == 1, key
    # the record is the stateless session's, request for request
    assert [r.segments["messages"] for r in requests] == [r.segments["messages"] for r in stateless]
    assert [b["input"] for b in (r.body for r in stateless_fake.requests)][-1] == json.loads(
        requests[-1].segments["messages"]
    )
    # the chain carries the whole conversation: its steps, in order, equal the record
    held = [
        s
        for b, r in zip(bodies, fake.requests, strict=True)
        for s in (*b["input"], *r.reply["steps"])
    ]
    assert held[: len(json.loads(requests[-1].segments["messages"]))] == json.loads(
        requests[-1].segments["messages"]
    )


def test_stateful_mode_sends_everything_again_where_no_chain_holds(catalogs_dir: Path) -> None:
    """A retry (nothing ingested), a switch to stateless and a restored session send the
    whole record; the chain resumes after the next answer."""
    fake, _, chef = _run(catalogs_dir, {"store": True})
    chef.append(user("And the tests?"))
    again = chef.compile(TARGET, model=MODEL, max_tokens=1024, extra={"store": True})
    assert again.payload["previous_interaction_id"] == fake.requests[-1].reply["id"]
    retry = chef.compile(TARGET, model=MODEL, max_tokens=1024, extra={"store": True})
    assert "previous_interaction_id" not in retry.payload  # not answered: no chain to extend
    assert retry.payload["input"] == json.loads(retry.segments["messages"])
    stateless = chef.compile(TARGET, model=MODEL, max_tokens=1024)
    assert (
        stateless.payload["store"] is False and "previous_interaction_id" not in stateless.payload
    )
    assert stateless.payload["input"] == json.loads(stateless.segments["messages"])
    fake.script(text("Tests pass."), text("Bye."))
    client = _client(fake)
    chef.ingest(client.interactions.create(**stateless.payload))
    # the last request was not stored: the next one cannot chain to its answer
    chef.append(user("Thanks."))
    after = chef.compile(TARGET, model=MODEL, max_tokens=1024, extra={"store": True})
    assert "previous_interaction_id" not in after.payload
    restored = _session(catalogs_dir)
    restored.restore(chef.snapshot(), allow_unsigned=True)
    first = restored.compile(TARGET, model=MODEL, max_tokens=1024, extra={"store": True})
    assert "previous_interaction_id" not in first.payload
    client.interactions.create(**first.payload)
    assert fake.violations == ()


def test_the_fake_refuses_a_chained_request_that_resends_history_or_drops_config() -> None:
    fake = FakeGeminiInteractions().script(
        tool_calls(("read", {"path": "a"}), reasoning="r"), text("ok"), text("ok")
    )
    client = _client(fake)
    tools = [{"type": "function", "name": "read", "parameters": {"type": "object"}}]
    first = client.interactions.create(model=MODEL, input="read a", tools=tools)
    call = next(
        s
        for s in first.model_dump(mode="json", exclude_none=True)["steps"]
        if s["type"] == "function_call"
    )
    result = {"type": "function_result", "call_id": call["id"], "name": "read", "result": "a"}
    with pytest.raises(_interactions_errors.BadRequestError, match="interaction-scoped"):
        client.interactions.create(model=MODEL, input=[result], previous_interaction_id=first.id)
    with pytest.raises(_interactions_errors.BadRequestError, match="holds already"):
        client.interactions.create(
            model=MODEL, input=[call, result], tools=tools, previous_interaction_id=first.id
        )
    client.interactions.create(
        model=MODEL, input=[result], tools=tools, previous_interaction_id=first.id
    )
    assert [(v.request_index, v.rule) for v in fake.violations] == [
        (1, "interactions_config_resent"),
        (2, "interactions_signatures_replayed"),  # a call of the turn without its thought
        (2, "interactions_calls_signed"),  # so the turn's call carries no signature
        (2, "interactions_chain_new_steps_only"),
    ]


def test_an_answer_equal_to_one_the_chain_holds_is_a_new_step() -> None:
    # Gemini answers "Done.", Claude answers "Done." too, and the chain goes on: the
    # second answer is a new step, not the first sent again (break-it round 13, f4).
    ids = Ids()
    gemini = FakeGeminiInteractions(ids=ids).script(text("Done."), text("Done."))
    claude = FakeAnthropic(ids=ids).script(text("Done."))
    client = _client(gemini)
    hx = httpx_for(anthropic)
    messages = anthropic.Anthropic(api_key="x", http_client=claude.http_client(hx)).messages
    chef = ContextChef()
    chef.set_history([user("q1")])
    store = {"store": True}
    chef.ingest(
        client.interactions.create(**chef.compile(TARGET, model=MODEL, extra=store).payload)
    )
    chef.append(user("q2"))
    chef.ingest(messages.create(**chef.compile("anthropic", model="claude-opus-5-5").payload))
    chef.append(user("q3"))
    chained = chef.compile(TARGET, model=MODEL, extra=store).payload
    assert "previous_interaction_id" in chained
    chef.ingest(client.interactions.create(**chained))
    assert gemini.violations == () and claude.violations == ()
    # the turn the chain holds, sent again at the start of the input, is still refused
    first = gemini.requests[0]
    again = {**chained, "input": [*first.reply["steps"], *chained["input"]]}
    with pytest.raises(_interactions_errors.BadRequestError, match="holds already"):
        client.interactions.create(**again)


def _chat(fake: Any, extra: dict[str, Any]) -> tuple[ContextChef, genai.Client, Any]:
    chef = ContextChef()
    chef.register_tools([_READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.set_system_prompt("Be brief.")
    chef.set_history([user("What is my card number?")])
    client = _client(fake)

    def send() -> Any:
        request = chef.compile(TARGET, model=MODEL, max_tokens=512, extra=extra)
        assert sdk_problems(request.payload) == []
        chef.run_tools(chef.ingest(client.interactions.create(**request.payload)))
        return request

    send()
    return chef, client, send


_READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def _redact(chef: ContextChef) -> None:
    chef.set_history([*chef.history[:-1], assistant("It is [REDACTED].")])


def _host_note(chef: ContextChef) -> None:
    chef.append(assistant("HOST NOTE: the card was masked."))


def _host_call(chef: ContextChef) -> None:
    call = ToolCall(id="host_1", name="read_file", arguments={"path": "policy.md"})
    chef.append(assistant(tool_calls=[call]))
    chef.run_tools([call])


def _clear_system(chef: ContextChef) -> None:
    chef.set_system_prompt("")


@pytest.mark.parametrize(
    ("change", "seen"),
    [
        (_redact, "[REDACTED]"),
        (_host_note, "HOST NOTE"),
        (_host_call, "read policy.md"),
        (_clear_system, None),
    ],
    ids=["edit-answer", "host-message", "host-call", "system-cleared"],
)
def test_stateful_mode_sends_what_the_host_changed_after_the_answer(
    change: Any, seen: str | None
) -> None:
    """Break-it round 4: the chain holds the answer as the server returned it; a host edit
    of it, anything the host adds after it, or a field dropped since, must reach the model
    (sent as new steps, or the whole history again), never be lost or refused."""
    fake = FakeGeminiInteractions().script(text("It is 4111 1111 1111 1111."), text("ok"))
    chef, _, send = _chat(fake, {"store": True})
    change(chef)
    chef.append(user("Thanks."))
    request = send()
    assert fake.violations == ()
    body = fake.requests[-1].body
    chained = "previous_interaction_id" in body
    # what the model sees: the chain's steps (when chained), then this input
    view = [*(_steps_of(fake.requests[0]) if chained else []), *body["input"]]
    if seen is not None:
        assert seen in json.dumps(view)
    if change is _redact:
        assert not chained and "4111" not in json.dumps(body["input"])
    if change is _clear_system:
        assert not chained and "system_instruction" not in body
    assert (
        request.payload["input"]
        == (json.loads(request.segments["messages"])[-len(body["input"]) :])
    )


def _steps_of(recorded: Any) -> list[Any]:
    return [*recorded.body["input"], *recorded.reply["steps"]]


def test_a_dropped_generation_config_restarts_the_chain() -> None:
    fake = FakeGeminiInteractions().script(text("one"), text("two"))
    chef, client, _ = _chat(fake, {"store": True, "generation_config": {"thinking_level": "high"}})
    chef.append(user("And?"))
    request = chef.compile(TARGET, model=MODEL, extra={"store": True})  # no config now
    assert "previous_interaction_id" not in request.payload
    client.interactions.create(**request.payload)
    assert fake.violations == ()


@pytest.mark.parametrize(
    ("target", "extra", "message"),
    [
        (TARGET, {"store": 0}, "'store' must be True or False"),
        (TARGET, {"store": "false"}, "'store' must be True or False"),
        (TARGET, {"generation_config": "high"}, "'generation_config' must be an object"),
        (TARGET, {"generation_config": [1]}, "'generation_config' must be an object"),
        (TARGET, {"system_instruction": "x"}, "'system_instruction' is written by compile"),
        ("responses", {"instructions": "x"}, "'instructions' is written by compile"),
        ("anthropic", {"previous_interaction_id": "v1"}, "is written by compile"),
    ],
)
def test_bad_interactions_fields_are_refused_by_name(
    target: str, extra: dict[str, Any], message: str
) -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    with pytest.raises(UsageError, match=message):
        chef.compile(target, model="gpt-5.6" if target == "responses" else MODEL, extra=extra)
    assert chef.compile(target, model="m").appended == 1  # the refusal changed nothing


@pytest.mark.parametrize("status", [{"type": "x"}, ["completed"], "weird", "", None, "COMPLETED"])
def test_an_unknown_status_is_a_corrupt_response(status: Any) -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    reply = {"id": "v1_9", "model": MODEL, "status": status, "steps": []}
    with pytest.raises(CorruptHistoryError):
        chef.ingest(reply)
    assert len(chef.history) == 1


# -- requires_continuation: the decode cap and the continuation token ----------------------


def _capped_session(fake: Any, **options: Any) -> tuple[ContextChef, genai.Client]:
    chef = ContextChef(**options)
    chef.register_tools([_READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.set_system_prompt("Be brief.")
    chef.set_history([user("Read a and b.")])
    return chef, _client(fake)


def _capped_script() -> tuple[Any, ...]:
    return (  # 4 steps, then 2: cut at 1 step a reply, 4 hops and then 2
        tool_calls(
            ("read_file", {"path": "a"}),
            ("read_file", {"path": "b"}),
            text="Reading.",
            reasoning="both",
        ),
        text("a and b are read.", reasoning="done"),
    )


def _manual_loop(chef: ContextChef, client: genai.Client, extra: dict[str, Any]) -> list[Any]:
    """The host's loop without the SDK's automatic continuation: resume, then run tools."""
    requests = []
    for _ in range(12):
        request = chef.compile(TARGET, model=MODEL, max_tokens=256, extra=extra)
        assert sdk_problems(request.payload) == []
        requests.append(request)
        reply = client.interactions.create(**request.payload, automatic_continuation=False)
        calls = chef.ingest(reply)
        if reply.status == "requires_continuation":
            continue  # compile again, adding nothing: the request resumes the reply
        if not chef.run_tools(calls):
            return requests
    raise AssertionError("the model never answered")


@pytest.mark.filterwarnings("ignore:Interaction stopped before completion")
@pytest.mark.parametrize("store", [True, False], ids=["stateful", "stateless"])
def test_a_reply_cut_at_the_decode_cap_is_resumed_and_joins_one_model_turn(store: bool) -> None:
    """Issue 26 item 4: ``requires_continuation`` resumed with its ``continuation_token``
    (google-genai's ``_continuation_body``): stored, the issuing interaction and no input;
    ``store: false``, the original input again. The hops make one model turn, exactly the
    steps returned, which later requests replay (or chain to) validly."""
    fake = FakeGeminiInteractions(decode_cap=1).script(*_capped_script(), text("Bye."))
    chef, client = _capped_session(fake)
    requests = _manual_loop(chef, client, {"store": store})
    assert fake.violations == () and fake.pending == 1
    bodies, replies = [r.body for r in fake.requests], [r.reply for r in fake.requests]
    assert [r.resumes for r in requests] == [False, True, True, True, False, True]
    assert [r["status"] for r in replies] == [
        "requires_continuation", "requires_continuation", "requires_continuation",
        "requires_action", "requires_continuation", "completed",
    ]  # fmt: skip
    for k, body in enumerate(bodies):
        if not requests[k].resumes:
            assert "continuation_token" not in body
            continue
        assert body["continuation_token"] == replies[k - 1]["continuation_token"]
        if store:  # the interaction that issued the token, no input
            assert body["previous_interaction_id"] == replies[k - 1]["id"]
            assert "input" not in body
        else:  # the original input again, unchanged
            first = max(i for i in range(k) if not requests[i].resumes)
            assert body["input"] == bodies[first]["input"] and body["store"] is False
        for key in ("system_instruction", "tools", "generation_config"):
            assert body[key] == bodies[0][key]  # interaction-scoped: sent again
    # one model turn per decode, its steps exactly as returned, in order, no duplicates
    assert [m.role for m in chef.history] == ["user", "assistant", "user", "assistant"]
    turn = get_adapter(TARGET).render_messages([chef.history[1]])
    assert turn == [s for r in replies[:4] for s in r["steps"]]
    assert [c.id for c in chef.history[1].tool_calls] == ["call_0001", "call_0002"]
    # the next turn: chained to the last hop (stored), or the whole record (store: false)
    chef.append(user("Thanks."))
    last = chef.compile(TARGET, model=MODEL, max_tokens=256, extra={"store": store})
    record = json.loads(last.segments["messages"])
    assert record[1:5] == turn and record[-3:-1] == replies[4]["steps"] + replies[5]["steps"]
    chef.ingest(client.interactions.create(**last.payload))
    if store:
        assert last.payload["previous_interaction_id"] == replies[5]["id"]
        assert [s["type"] for s in last.payload["input"]] == ["user_input"]
    else:
        assert last.payload["input"] == record
    assert fake.violations == ()


@pytest.mark.parametrize("store", [True, False], ids=["stateful", "stateless"])
def test_the_sdks_automatic_continuation_is_ingested_as_one_merged_turn(store: bool) -> None:
    """With the SDK's default (``automatic_continuation``), the hops come back merged into
    one ``Interaction`` (the final hop's id, every hop's steps): ingest reads it as one
    turn and the next request chains to the final hop, or replays it all."""
    fake = FakeGeminiInteractions(decode_cap=1).script(*_capped_script(), text("Bye."))
    chef, client = _capped_session(fake)
    for _ in range(3):
        request = chef.compile(TARGET, model=MODEL, extra={"store": store})
        reply = client.interactions.create(**request.payload)
        assert reply.status != "requires_continuation" and not request.resumes
        if not chef.run_tools(chef.ingest(reply)):
            break
    assert fake.violations == () and len(fake.requests) == 6
    assert chef.notices == ()
    assert [m.role for m in chef.history] == ["user", "assistant", "user", "assistant"]
    replies = [r.reply for r in fake.requests]
    turn = get_adapter(TARGET).render_messages([chef.history[1]])
    assert turn == [s for r in replies[:4] for s in r["steps"]]
    chef.append(user("Thanks."))
    last = chef.compile(TARGET, model=MODEL, extra={"store": store})
    chef.ingest(client.interactions.create(**last.payload))
    assert fake.violations == ()
    if store:
        assert last.payload["previous_interaction_id"] == replies[5]["id"]
        assert [s["type"] for s in last.payload["input"]] == ["user_input"]
    else:
        assert last.payload["input"] == json.loads(last.segments["messages"])


@pytest.mark.filterwarnings("ignore:Interaction stopped before completion")
def test_a_cut_reply_the_host_moves_on_from_is_sent_whole_and_continues_elsewhere() -> None:
    """Adding a message after a cut reply gives up resuming it: no token; stored, the
    whole record again (chaining a new turn to a cut interaction is not documented).
    The cut turn then replays validly on generateContent and Anthropic too."""
    ids = Ids()
    fake = FakeGeminiInteractions(decode_cap=1, ids=ids).script(
        text("Part one.", reasoning="long"), text("Fine.")
    )
    chef, client = _capped_session(fake)
    first = chef.compile(TARGET, model=MODEL, extra={"store": True})
    chef.ingest(client.interactions.create(**first.payload, automatic_continuation=False))
    assert chef.notices[-1].reason == "requires_continuation"
    assert "compile again without adding messages" in chef.notices[-1].detail
    chef.append(user("That is enough."))
    moved = chef.compile(TARGET, model=MODEL, extra={"store": True})
    assert not moved.resumes and "continuation_token" not in moved.payload
    assert "previous_interaction_id" not in moved.payload
    assert [s["type"] for s in moved.payload["input"]] == ["user_input", "thought", "user_input"]
    chef.ingest(client.interactions.create(**moved.payload))
    assert fake.violations == ()
    for other, send in (
        (FakeGemini(ids=ids), lambda f, p: _client(f).models.generate_content(**p)),
        (
            FakeAnthropic(ids=ids),
            lambda f, p: anthropic.Anthropic(
                api_key="x", http_client=f.http_client(httpx_for(anthropic))
            ).messages.create(**p),
        ),
    ):
        chef.append(user("Once more."))
        other.script(text("Sure."))
        target = "gemini" if isinstance(other, FakeGemini) else "anthropic"
        chef.ingest(send(other, chef.compile(target, model="m", max_tokens=64).payload))
        assert other.violations == (), target


@pytest.mark.filterwarnings("ignore:Interaction stopped before completion")
def test_the_fake_refuses_a_stale_foreign_or_misfilled_continuation() -> None:
    """The continuation rules by name: a token used already (stale), a token resumed on
    another interaction, input added to a stored continuation, and a changed input
    with store: false; the library never lets the host pass a token itself."""
    fake = FakeGeminiInteractions(decode_cap=1).script(
        text("a", reasoning="x"), text("b", reasoning="y"), text("c", reasoning="z")
    )
    client = _client(fake)
    cut = client.interactions.create(model=MODEL, input="hi", automatic_continuation=False)
    other = client.interactions.create(model=MODEL, input="yo", automatic_continuation=False)
    token = cut.continuation_token
    assert cut.status == "requires_continuation" and token
    cases = [
        (dict(previous_interaction_id=other.id), "names the interaction that issued"),
        (dict(previous_interaction_id=cut.id, input="more"), "input: a stored continuation"),
        (dict(store=False, input="hi"), "created with store true"),
        (dict(continuation_token="cont_9999", previous_interaction_id=cut.id), "not issued"),
    ]
    for fields, message in cases:
        body = {"model": MODEL, "continuation_token": token, **fields}
        with pytest.raises(_interactions_errors.BadRequestError, match=message):
            client.interactions.create(**body, automatic_continuation=False)
    done = client.interactions.create(
        model=MODEL,
        previous_interaction_id=cut.id,
        continuation_token=token,
        automatic_continuation=False,
    )
    assert done.status == "completed"
    with pytest.raises(_interactions_errors.BadRequestError, match="is stale"):
        client.interactions.create(
            model=MODEL,
            previous_interaction_id=cut.id,
            continuation_token=token,
            automatic_continuation=False,
        )
    # store: false: the original input again, unchanged
    loose = client.interactions.create(
        model=MODEL, input="hi", store=False, automatic_continuation=False
    )
    with pytest.raises(_interactions_errors.BadRequestError, match="original input again"):
        client.interactions.create(
            model=MODEL,
            input="hi there",
            store=False,
            continuation_token=loose.continuation_token,
            automatic_continuation=False,
        )
    assert {v.rule for v in fake.violations} == {"interactions_continuation"}
    chef = ContextChef()
    chef.set_history([user("hi")])
    for target in (TARGET, "gemini", "anthropic"):
        with pytest.raises(UsageError, match="'continuation_token' is written by compile"):
            chef.compile(target, model=MODEL, extra={"continuation_token": token})


@pytest.mark.filterwarnings("ignore:Interaction stopped before completion")
def test_resuming_with_another_store_setting_is_refused_by_name() -> None:
    fake = FakeGeminiInteractions(decode_cap=1).script(text("a", reasoning="x"))
    chef, client = _capped_session(fake)
    first = chef.compile(TARGET, model=MODEL, extra={"store": True})
    chef.ingest(client.interactions.create(**first.payload, automatic_continuation=False))
    history = chef.history
    with pytest.raises(UsageError, match="extra field 'store' is False"):
        chef.compile(TARGET, model=MODEL, extra={"store": False})
    assert chef.history == history
    resumed = chef.compile(TARGET, model=MODEL, extra={"store": True})
    assert resumed.resumes
    chef.ingest(client.interactions.create(**resumed.payload, automatic_continuation=False))
    assert fake.violations == () and len(chef.history) == 2


# -- the chain across a restore --------------------------------------------------------------


def _tools_chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([_READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.set_system_prompt("Be brief.")
    return chef


def test_a_restored_stateful_session_chains_its_next_request() -> None:
    """Issue 26 (chain across restore): the snapshot keeps what the chain needs (the
    fields kept, the answer as returned, a continuation token), so the first request
    after a restore, through JSON, sends only the new steps, chained."""
    fake = FakeGeminiInteractions().script(
        tool_calls(("read_file", {"path": "a"}), reasoning="r"), text("a is read."), text("ok")
    )
    client = _client(fake)
    chef = _tools_chef()
    chef.set_history([user("Read a.")])
    for _ in range(2):
        request = chef.compile(TARGET, model=MODEL, extra={"store": True})
        chef.run_tools(chef.ingest(client.interactions.create(**request.payload)))
    snapshot = json.loads(json.dumps(chef.snapshot()))
    assert snapshot["ledgers"][TARGET]["sent"]["kept"] == ["system_instruction", "tools"]
    restored = _tools_chef()
    restored.restore(snapshot, allow_unsigned=True)
    restored.append(user("Thanks."))
    chef.append(user("Thanks."))
    again = restored.compile(TARGET, model=MODEL, extra={"store": True})
    assert again.payload == chef.compile(TARGET, model=MODEL, extra={"store": True}).payload
    assert again.payload["previous_interaction_id"] == fake.requests[-1].reply["id"]
    assert [s["type"] for s in again.payload["input"]] == ["user_input"]
    restored.ingest(client.interactions.create(**again.payload))
    assert fake.violations == ()
    # the ledger's record digest and a signature cover it
    edited = json.loads(json.dumps(snapshot))
    edited["ledgers"][TARGET]["sent"]["answer"][0]["content"][0]["text"] = "forged"
    with pytest.raises(UsageError, match="record digest"):
        _tools_chef().restore(edited, allow_unsigned=True)
    signed = chef.snapshot(keys=KEYS, session_id="s")
    signed["ledgers"][TARGET]["sent"]["kept"] = []
    with pytest.raises(SnapshotSignatureError):
        _tools_chef().restore(signed, keys=KEYS, session_id="s")
    for bad in ({"kept": "tools"}, {"answer": [1]}, {"resumed": "no"}, {"extra": 1}):
        junk = json.loads(json.dumps(snapshot))
        junk["ledgers"][TARGET]["sent"].update(bad)
        junk["ledgers"][TARGET]["record_digest"] = _record_digest(junk["ledgers"][TARGET])
        with pytest.raises(UsageError, match="field 'sent' must be an object of 'kept'"):
            _tools_chef().restore(junk, allow_unsigned=True)
    # a snapshot written before the field restores, and sends everything again
    old = json.loads(json.dumps(snapshot))
    ledger = old["ledgers"][TARGET]
    del ledger["sent"]
    ledger["record_digest"] = _record_digest(ledger)
    before = _tools_chef()
    before.restore(old, allow_unsigned=True)
    before.append(user("Thanks."))
    whole = before.compile(TARGET, model=MODEL, extra={"store": True})
    assert "previous_interaction_id" not in whole.payload
    assert whole.payload["input"] == json.loads(whole.segments["messages"])


@pytest.mark.filterwarnings("ignore:Interaction stopped before completion")
def test_a_restored_session_resumes_a_cut_reply() -> None:
    fake = FakeGeminiInteractions(decode_cap=1).script(text("Part.", reasoning="long"))
    client = _client(fake)
    chef = _tools_chef()
    chef.set_history([user("Write.")])
    first = chef.compile(TARGET, model=MODEL, extra={"store": True})
    chef.ingest(client.interactions.create(**first.payload, automatic_continuation=False))
    restored = _tools_chef()
    restored.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True)
    resumed = restored.compile(TARGET, model=MODEL, extra={"store": True})
    assert resumed.resumes and "input" not in resumed.payload
    restored.ingest(client.interactions.create(**resumed.payload, automatic_continuation=False))
    assert fake.violations == () and [m.role for m in restored.history] == ["user", "assistant"]


def test_a_stateful_session_in_a_store_chains_on_every_worker(tmp_path: Path) -> None:
    """Each turn on a fresh chef loaded from SQLite (`SessionSync`): every request after
    the first is chained, with only its new steps, and the fake accepts them all."""
    store = SQLiteSessionStore(tmp_path / "s.db", keys=KEYS)
    fake = FakeGeminiInteractions().script(
        tool_calls(("read_file", {"path": "a"}), reasoning="r"), text("a is read."), text("ok")
    )
    client = _client(fake)

    def turn(chef: ContextChef, text: str | None) -> None:
        if text is not None:
            chef.append(user(text))
        request = chef.compile(TARGET, model=MODEL, extra={"store": True})
        chef.run_tools(chef.ingest(client.interactions.create(**request.payload)))

    for text_ in ("Read a.", None, "Thanks."):
        SessionSync(store, "conv").run_turn(_tools_chef, lambda c, t=text_: turn(c, t))
    assert fake.violations == ()
    bodies = [r.body for r in fake.requests]
    assert "previous_interaction_id" not in bodies[0]
    assert [b["previous_interaction_id"] for b in bodies[1:]] == [
        r.reply["id"] for r in fake.requests[:-1]
    ]
    assert [[s["type"] for s in b["input"]] for b in bodies[1:]] == [
        ["function_result"],
        ["user_input"],
    ]


@pytest.mark.parametrize("store", [True, False], ids=["stateful", "stateless"])
def test_generate_content_interactions_and_anthropic_switch_back_and_forth(
    catalogs_dir: Path, store: bool
) -> None:
    """Issue 26 done-when: generateContent -> Interactions -> Anthropic -> Interactions ->
    generateContent in one conversation, with thinking and calls, 0 refusals. Stored, the
    second Interactions leg chains to its own last answer and sends the turns made on
    Anthropic as new steps."""
    ids = Ids()
    gemini = FakeGemini(ids=ids)
    interactions = FakeGeminiInteractions(ids=ids)
    claude = FakeAnthropic(ids=ids)
    legs = [
        (gemini, "gemini", None, "a.py"),
        (interactions, TARGET, "And b.py?", "b.py"),
        (claude, "anthropic", "And c.py?", "c.py"),
        (interactions, TARGET, "And d.py?", "d.py"),
        (gemini, "gemini", "How many files?", "e.py"),
    ]
    chef = _session(catalogs_dir)
    for fake, target, ask, path in legs:
        fake.script(
            tool_calls(("filesystem__read_text_file", {"path": path}), reasoning=f"read {path}"),
            text(f"{path} is read."),
        )
        if ask:
            chef.append(user(ask))
        if target == "anthropic":
            http = fake.http_client(httpx_for(anthropic))
            send = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http).messages.create
        elif target == TARGET:
            send = _client(fake).interactions.create
        else:
            send = _client(fake).models.generate_content
        extra = {"store": store} if target == TARGET else {}
        for _ in range(3):
            request = chef.compile(target, model="m", max_tokens=256, extra=extra)
            if not chef.run_tools(chef.ingest(send(**request.payload))):
                break
    for fake in (gemini, interactions, claude):
        assert fake.violations == () and fake.pending == 0
    bodies = [r.body for r in interactions.requests]
    assert len(bodies) == 4
    if store:
        assert bodies[2]["previous_interaction_id"] == interactions.requests[1].reply["id"]
        kinds = [s["type"] for s in bodies[2]["input"]]
        assert kinds[0] == "user_input" and "function_call" in kinds  # Anthropic's turns
    else:
        assert "previous_interaction_id" not in bodies[2]
    assert len(chef.history) == 20  # 5 legs: the ask, the call, its result, the answer


NATIVE = "gemini-interactions-native"


def _server_search_reply(ids: int, call: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """An Interaction whose server searched its deferred tools, then called the one found.

    The step shapes are google-genai 3.6.1's (``tool_search_call`` / ``tool_search_result``
    with a signature, research §5); what a real server returns is unverified.
    """
    name, arguments = call
    found = {"type": "function", "name": name, "description": "found", "parameters": {}}
    return {
        "id": f"v1_search_{ids}",
        "status": "requires_action",
        "model": MODEL,
        "steps": [
            {"type": "thought", "signature": f"sig-{ids}"},
            {
                "type": "tool_search_call",
                "id": f"ts_{ids}",
                "arguments": {"function_names": [name]},
                "signature": f"ts-sig-{ids}",
            },
            {"type": "tool_search_result", "call_id": f"ts_{ids}", "result": [found]},
            {"type": "function_call", "id": f"fc_{ids}", "name": name, "arguments": arguments},
        ],
        "usage": {"total_input_tokens": 10, "total_output_tokens": 5, "total_tokens": 15},
    }


@pytest.mark.parametrize("store", [False, True])
def test_the_server_tool_search_strategy_defers_and_replays_its_steps(
    catalogs_dir: Path, store: bool
) -> None:
    chef = _session(catalogs_dir)
    issue = {"owner": "acme", "repo": "app", "title": "Crash in a.py"}
    fake = FakeGeminiInteractions().script(
        raw(_server_search_reply(1, ("github__create_issue", issue))),
        text("Filed it."),
        raw(_server_search_reply(2, ("github__list_issues", {"owner": "acme", "repo": "app"}))),
        text("Listed them."),
    )
    client = _client(fake)
    extra = {"store": True} if store else None
    sent = []
    for ask in (None, "Now list the open issues."):
        if ask:
            chef.append(user(ask))
        for _ in range(3):
            request = chef.compile(TARGET, model=MODEL, strategy=NATIVE, extra=extra)
            assert request.strategy == NATIVE and sdk_problems(request.payload) == []
            sent.append(request.payload)
            if not chef.run_tools(chef.ingest(client.interactions.create(**request.payload))):
                break
    assert fake.violations == () and fake.pending == 0 and len(sent) == 4
    tools = sent[0]["tools"]
    # resident functions, then every deferred one flagged, the server's search last
    assert tools[-1] == {"type": "tool_search"}
    deferred = {t["name"] for t in tools[:-1] if t.get("defer_loading") is True}
    assert {"github__create_issue", "github__list_issues"} <= deferred
    assert not any(
        t["name"].startswith("filesystem__") for t in tools[:-1] if t["name"] in deferred
    )
    assert not {"tool_search", "defer_execute"} & {t.get("name") for t in tools}
    assert all(canonical_dumps(p["tools"]) == canonical_dumps(tools) for p in sent)
    # the deferred tool the server found ran through the gate under its real name
    results = [s for s in chef.history for s in s.tool_results]
    assert [r.name for r in results] == ["github__create_issue", "github__list_issues"]
    assert all("ok:" in r.content for r in results)
    if store:  # chained: only the new steps go
        assert [p.get("previous_interaction_id") for p in sent] == [
            None,
            "v1_search_1",
            fake.requests[1].reply["id"],
            "v1_search_2",
        ]
    else:  # the server's search steps are replayed whole, in order, signatures kept
        replayed = [s for s in sent[-1]["input"] if s["type"].startswith("tool_search")]
        issued = [s for r in fake.requests for s in r.reply["steps"]]
        assert replayed == [s for s in issued if s["type"].startswith("tool_search")]


def test_the_server_tool_search_strategy_is_opt_in_and_this_targets_own() -> None:
    chef = ContextChef(defer=["hidden_*"])

    def hidden_lookup(q: str) -> str:
        """Look up q."""
        return q

    chef.register_tools([hidden_lookup])
    chef.set_history([user("hi")])
    assert chef.compile(TARGET, model=MODEL, strategy="auto").strategy == "client"
    for target in ("anthropic", "responses", "gemini", "openai"):
        with pytest.raises(UsageError, match=r"gemini-interactions-native.*does not have"):
            chef.compile(target, strategy=NATIVE)
    with pytest.raises(UsageError, match="no 'hosted' tool search"):
        get_adapter(TARGET).tool_entries([], search="hosted")


@pytest.mark.parametrize(
    ("step", "where"),
    [
        (
            {"type": "thought", "signature": "s", "summary": [{"type": [None], "text": "r"}]},
            "summary.0.type",
        ),
        (
            {"type": "thought", "signature": "s", "summary": [{"type": {"type": "x"}}]},
            "summary.0.type",
        ),
        ({"type": "model_output", "content": [{"type": "", "text": "hi"}]}, "content.0.type"),
        ({"type": "function_result", "call_id": "c", "result": [{"type": 3}]}, "result.0.type"),
    ],
)
def test_a_step_with_an_untyped_item_is_refused_when_read(step: dict[str, Any], where: str) -> None:
    """Replayed, such an item makes google-genai raise a bare TypeError (break-it r02)."""
    with pytest.raises(
        CorruptHistoryError, match=rf"{re.escape(where)} must be a non-empty string"
    ):
        from_interactions(
            [{"type": "user_input", "content": [{"type": "text", "text": "q"}]}, step]
        )


def test_the_tools_own_data_and_untyped_objects_are_not_looked_into() -> None:
    """Arguments and object results are the tool's; annotations and errors carry no type."""
    steps = [
        {"type": "user_input", "content": [{"type": "text", "text": "q"}]},
        {"type": "function_call", "id": "c1", "name": "f", "arguments": {"type": 3}},
        {"type": "function_result", "call_id": "c1", "result": {"type": None, "x": [1]}},
        {
            "type": "model_output",
            "content": [{"type": "text", "text": "a", "annotations": [{"url": "u"}]}],
        },
    ]
    parsed = from_interactions(steps)
    assert [m.role for m in parsed.messages] == ["user", "assistant", "user", "assistant"]


def test_a_thought_without_a_signature_is_not_replayed() -> None:
    """Google documents a signature on every thought; one without carries nothing to verify.

    It is left out; the call it came with is then unsigned, which Gemini 3 refuses in the
    current turn, so the call goes with the placeholder thought step (`_signatures`)."""
    steps: list[dict[str, Any]] = [
        {"type": "thought", "signature": None, "summary": [{"type": "text", "text": "hm"}]},
        {"type": "function_call", "id": "call_1", "name": "grep", "arguments": {"q": "a"}},
    ]
    fake = FakeGeminiInteractions().script(
        raw({"id": "v1_1", "status": "requires_action", "model": MODEL, "steps": steps}),
        text("ok"),
    )
    client = _client(fake)
    chef = ContextChef()

    def grep(q: str) -> str:
        """Search."""
        return "hit"

    chef.register_tools([grep])
    chef.set_history([user("go")])
    for _ in range(2):
        payload = chef.compile(TARGET, model=MODEL).payload
        chef.run_tools(chef.ingest(client.interactions.create(**payload)))
    assert fake.violations == ()
    assert [s["type"] for s in payload["input"]] == [
        "user_input",
        "thought",
        "function_call",
        "function_result",
    ]
    assert payload["input"][1] == {"type": "thought", "signature": SKIP_SIGNATURE}


@pytest.mark.filterwarnings("ignore:Interaction stopped before completion")
def test_history_maintenance_waits_for_a_cut_reply_to_be_resumed() -> None:
    """Break-it round 6: ``chef.compact`` right after a reply cut at the decode cap
    summarized part of the conversation, lost the continuation, and every later compile
    was refused as a prefill. Compaction and clearing now refuse by name while the reply
    awaits its continuation; the session resumes it, then compacts."""
    fake = FakeGeminiInteractions(decode_cap=1).script(*_capped_script(), text("Bye."))
    chef, client = _capped_session(fake)
    request = chef.compile(TARGET, model=MODEL, max_tokens=256)
    reply = client.interactions.create(**request.payload, automatic_continuation=False)
    chef.ingest(reply)
    assert reply.status == "requires_continuation"
    before = chef.history
    for rewrite in (
        lambda: chef.compact(lambda t: "SUMMARY", keep_recent_turns=1),
        lambda: chef.clear_tool_results(keep_recent=0),
    ):
        with pytest.raises(UsageError, match=r"cut at the decode cap.*compile again"):
            rewrite()
    assert chef.history == before  # nothing was lost
    while reply.status == "requires_continuation":
        resumed = chef.compile(TARGET, model=MODEL, max_tokens=256)
        assert resumed.resumes
        reply = client.interactions.create(**resumed.payload, automatic_continuation=False)
        chef.ingest(reply)
    chef.compact(lambda t: "SUMMARY", keep_recent_turns=1)  # allowed once resumed
    assert fake.violations == ()


@pytest.mark.filterwarnings("ignore:Interaction stopped before completion")
def test_a_requested_handoff_waits_for_the_cut_reply_to_be_resumed() -> None:
    """Break-it round 7: ``request_new_context()`` while a reply awaited its continuation
    made every compile refuse (the handoff compile runs could not compact yet, and the
    advice "compile again" was what failed). The handoff waits: the resume goes out,
    then the next compile hands off."""
    summaries: list[str] = []

    def summarize(transcript: str) -> str:
        summaries.append(transcript)
        return "SUMMARY"

    fake = FakeGeminiInteractions(decode_cap=1).script(*_capped_script(), text("Bye."))
    chef, client = _capped_session(fake, on_overflow=summarize)
    reply = client.interactions.create(
        **chef.compile(TARGET, model=MODEL, max_tokens=256).payload, automatic_continuation=False
    )
    chef.ingest(reply)
    chef.request_new_context()
    while reply.status == "requires_continuation":
        request = chef.compile(TARGET, model=MODEL, max_tokens=256)
        assert request.resumes and summaries == []
        reply = client.interactions.create(**request.payload, automatic_continuation=False)
        chef.ingest(reply)
    chef.compile(TARGET, model=MODEL, max_tokens=256)  # now the requested handoff runs
    assert len(summaries) == 1 and fake.violations == ()
