"""OpenAI's prompt cache on gpt-5.6+ (issue 24, items 1, 2's request side, 4 and 5).

Through the official ``openai`` SDK (Responses and Chat Completions) against the fakes,
which refuse misplaced breakpoints and model reads and writes
(`contextchef.testing._openai_cache`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from contextchef import ContextChef, UsageError, assistant, user
from contextchef.providers.responses._cache import first_marked
from contextchef.testing import (
    FakeAnthropic,
    FakeOpenAIChat,
    FakeResponses,
    httpx_for,
    text,
    tool_calls,
)
from contextchef.testing._openai_cache import PromptCache

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import itertools

import openai_cache as scenario

HX = httpx_for(openai)
NEW = "gpt-5.6"
TOOL = {
    "name": "lookup",
    "description": "Look a word up in the project's glossary. " * 40,
    "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}},
}
MORE = {"name": "define", "description": "Define a word.", "input_schema": {"type": "object"}}


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([TOOL])
    chef.set_system_prompt("You are a glossary assistant. " * 150)
    chef.set_history([user("Define cache.")])
    return chef


def _client(fake: FakeResponses | FakeOpenAIChat) -> openai.OpenAI:
    return openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))


def _send(client: openai.OpenAI, chef: ContextChef, target: str, **options: Any) -> Any:
    request = chef.compile(target, strategy="flat", **{"model": NEW, **options})
    if target == "responses":
        reply = client.responses.create(**request.payload)
    else:
        reply = client.chat.completions.create(**request.payload)
    chef.ingest(reply)
    return request, reply


def _markers(payload: dict[str, Any]) -> list[str]:
    """Where the payload carries breakpoints (entry index, part index)."""
    entries = payload.get("input") or payload.get("messages") or []
    found = []
    for i, entry in enumerate(entries):
        parts = entry.get("output") if entry.get("type") == "function_call_output" else None
        parts = parts if parts is not None else entry.get("content")
        for j, part in enumerate(parts if isinstance(parts, list) else []):
            if "prompt_cache_breakpoint" in part:
                found.append(f"{i}.{j}")
    return found


@pytest.mark.parametrize("wire", ["responses", "chat"])
def test_fifty_turns_on_gpt_5_6_read_nine_tenths_from_the_cache(wire: str) -> None:
    # the benchmark's session: tool discoveries, state changes, a runtime tool
    found = scenario.run(wire, variants=("explicit",))["explicit"]
    assert found.cached_share >= 0.90
    assert found.most_written <= 4
    assert found.refusals == 0


def test_implicit_mode_rewrites_the_prompt_each_turn_and_explicit_reads_it_back() -> None:
    found = scenario.run("responses", turns=8, variants=("explicit", "implicit", "none"))
    explicit, implicit, none = found["explicit"], found["implicit"], found["none"]
    assert implicit.cached_tokens == 0 and implicit.written_tokens == implicit.input_tokens
    assert none.cached_tokens == none.written_tokens == 0
    assert explicit.cached_tokens > 0.5 * explicit.input_tokens
    assert explicit.cost < none.cost < implicit.cost  # writes cost 1.25x


@pytest.mark.parametrize("target", ["responses", "openai"])
def test_markers_are_sent_once_and_never_moved(target: str) -> None:
    fake = (FakeResponses if target == "responses" else FakeOpenAIChat)()
    fake.script(*(text(f"Answer {k}.") for k in range(4)))
    client, chef = _client(fake), _chef()
    payloads = []
    for k in range(4):
        request, _ = _send(client, chef, target)
        payloads.append(json.loads(json.dumps(request.payload)))
        chef.append(user(f"And word {k}?"))
    key = "input" if target == "responses" else "messages"
    for before, after in itertools.pairwise(payloads):
        sent = before[key]
        assert after[key][: len(sent)] == sent  # what was sent, markers included, unchanged
        assert len(_markers(after)) == len(_markers(before)) + 1  # one new: the request's end
        assert after["prompt_cache_key"] == before["prompt_cache_key"]
    assert payloads[-1]["prompt_cache_options"] == {"mode": "explicit", "ttl": "30m"}
    assert payloads[-1]["prompt_cache_key"].startswith("contextchef-")
    if target == "openai":  # the system message ends the tools + instructions prefix
        assert payloads[0]["messages"][0]["content"][0]["prompt_cache_breakpoint"] == {
            "mode": "explicit"
        }
    outcomes = fake.cache_outcomes
    assert outcomes[0].cached_tokens == 0 and outcomes[0].written_tokens > 0
    for outcome in outcomes[1:]:  # each turn reads the whole last request back
        assert outcome.cached_tokens > 0.8 * outcome.input_tokens
        assert outcome.written <= 4
    assert fake.violations == ()


def test_responses_reports_usage_and_the_diagnosis_asked_for() -> None:
    fake = FakeResponses().script(text("A store."), text("ok"), text("ok"))
    client, chef = _client(fake), _chef()
    _, first = _send(client, chef, "responses", diagnostics=True)
    assert first.prompt_cache_diagnostics is None  # nothing to compare with yet
    assert first.usage.input_tokens_details.cache_write_tokens > 0
    chef.append(user("Thanks."))
    request, second = _send(client, chef, "responses", diagnostics=True)
    options = request.payload["prompt_cache_options"]
    assert options["comparison_response_id"] == first.id
    assert second.prompt_cache_diagnostics.type == "cache_hit"  # the SDK's own type
    assert second.usage.input_tokens_details.cached_tokens > 0
    chef.register_tools([MORE])  # the tools array changes: nothing before it is reusable
    chef.append(user("And store?"))
    _, third = _send(client, chef, "responses", diagnostics=True)
    diagnosis = third.prompt_cache_diagnostics
    assert (diagnosis.type, diagnosis.reason) == ("cache_miss", "tools_changed")
    assert diagnosis.cache_missed_tokens == third.usage.input_tokens
    assert third.usage.input_tokens_details.cached_tokens == 0
    assert fake.violations == ()


def test_diagnostics_go_only_where_the_wire_has_them() -> None:
    chef = _chef()
    chef.ingest({"id": "msg_1", "type": "message", "role": "assistant", "content": []})
    chef.append(user("Thanks."))
    chat = chef.compile("openai", model=NEW, diagnostics=True).payload
    assert (
        "diagnostics" not in chat and "comparison_response_id" not in chat["prompt_cache_options"]
    )
    assert (
        "diagnostics" not in chef.compile("gemini", model="gemini-3-pro", diagnostics=True).payload
    )
    anthropic = chef.compile("anthropic", model="claude-opus-5-5", diagnostics=True).payload
    assert anthropic["diagnostics"] == {"previous_message_id": None}  # its own ledger's


def test_anthropic_fake_answers_diagnostics_when_asked() -> None:
    import anthropic

    fake = FakeAnthropic().script(text("ok"), text("ok"))
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    chef = _chef()
    for _ in range(2):
        request = chef.compile("anthropic", model="claude-opus-5-5", diagnostics=True)
        reply = client.messages.create(**request.payload)
        chef.ingest(reply)
        chef.append(user("More."))
    assert fake.requests[1].body["diagnostics"] == {
        "previous_message_id": fake.requests[0].reply["id"]
    }
    assert reply.diagnostics is None  # nothing diverged


def test_older_and_unknown_models_get_no_cache_fields_and_cache_automatically() -> None:
    for model in ("gpt-5.4", "model", "deepseek-chat"):
        payload = _chef().compile("responses", model=model).payload
        assert not any(k.startswith("prompt_cache") for k in payload) and not _markers(payload)
    fake = FakeResponses().script(text("ok"), text("ok"))
    client, chef = _client(fake), _chef()
    _send(client, chef, "responses", model="gpt-5.4")
    chef.append(user("More."))
    _, reply = _send(client, chef, "responses", model="gpt-5.4")
    assert reply.usage.input_tokens_details.cached_tokens > 0  # the automatic cache
    assert fake.cache_outcomes[-1].mode == "automatic"


def test_the_turn_gap_chooses_the_ttl_where_the_api_has_it() -> None:
    chef = _chef()
    responses = chef.compile("responses", model=NEW, turn_gap=3600).payload
    assert responses["prompt_cache_options"]["ttl"] == "12h"
    assert (
        chef.compile("responses", model=NEW, turn_gap=600).payload["prompt_cache_options"]["ttl"]
        == "30m"
    )
    chat = chef.compile("openai", model=NEW, turn_gap=3600).payload  # Chat: 30m only
    assert chat["prompt_cache_options"]["ttl"] == "30m"
    with pytest.raises(UsageError, match="turn_gap"):
        chef.compile("responses", model=NEW, turn_gap=-1)


def test_the_hosts_own_cache_fields_win() -> None:
    chef = _chef()
    mine = {"prompt_cache_key": "user-7", "prompt_cache_options": {"mode": "implicit"}}
    payload = chef.compile("responses", model=NEW, extra=mine).payload
    assert payload["prompt_cache_key"] == "user-7"
    assert payload["prompt_cache_options"] == {"mode": "implicit"}


def test_an_edit_keeps_the_markers_before_it_and_reads_up_to_them() -> None:
    fake = FakeResponses().script(*(text(f"Answer {k}.") for k in range(4)))
    client, chef = _client(fake), _chef()
    for k in range(3):
        _send(client, chef, "responses")
        chef.append(user(f"Word {k}?"))
    history = list(chef.history)
    history[-4] = assistant("An edited answer.")  # the host rewrites an answer sent
    chef.set_history(history)
    request, _ = _send(client, chef, "responses")
    assert request.edits
    last = fake.cache_outcomes[-1]
    assert 0 < last.cached_tokens < last.input_tokens  # read up to the marker before the edit
    assert fake.violations == ()


def grep(pattern: str) -> str:
    """Search the glossary for a pattern."""
    return f"{pattern}: " + "a line of the glossary. " * 120


# each model for three turns of a tool loop (call, result, answer): a switch to a model
# that takes no breakpoints, back, and on to a newer one (breakit2 r_gpt56_to_55)
SWITCHES = ["gpt-5.6", "gpt-5.5", "gpt-5.6", "gpt-5.7", "gpt-5.5", "gpt-5.7"]


@pytest.mark.parametrize("target", ["responses", "openai"])
def test_a_model_switch_drops_the_breakpoints_a_model_refuses_and_reports_it(target: str) -> None:
    fake = (FakeResponses if target == "responses" else FakeOpenAIChat)()
    turns = 3 * len(SWITCHES)
    fake.script(
        *[t for k in range(turns) for t in (tool_calls(("grep", {"pattern": f"w{k}"})), text("ok"))]
    )
    client = _client(fake)
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_system_prompt("You are a glossary assistant. " * 150)
    chef.set_history([user("Define cache.")])
    requests = []
    for k in range(turns):
        model = SWITCHES[k // 3]
        for _ in range(2):  # the call, then the answer to its result
            request = chef.compile(target, model=model)
            create = (
                client.responses.create if target == "responses" else client.chat.completions.create
            )
            chef.run_tools(chef.ingest(create(**request.payload)))
            requests.append((model, request))
        chef.append(user(f"And word {k}?"))
    assert fake.violations == ()  # no request refused: every payload fits its model
    for i, (model, request) in enumerate(requests):
        switched = i > 0 and requests[i - 1][0] != model
        takes = model != "gpt-5.5"
        assert bool(_markers(request.payload)) is takes, (i, model)
        assert ("prompt_cache_options" in request.payload) is takes
        if switched and not takes:  # the breakpoints sent before go: an edit naming why
            (edit,) = request.edits
            assert (
                edit.kind == "model"
                and "'gpt-5.5' takes no prompt-cache breakpoints" in edit.detail
            )
        else:  # any other switch only appends
            assert request.edits == (), (i, model, request.edits)
    # back on a model that takes them, each request after the first reads the last back
    outcomes = fake.cache_outcomes
    for i, outcome in enumerate(outcomes):
        if i > 0 and requests[i - 1][0] == requests[i][0] != "gpt-5.5":
            assert outcome.cached_tokens >= outcomes[i - 1].input_tokens > 0, i


# -- the fakes' rules, in OpenAI's words -----------------------------------------------------


def _refused(fake: FakeResponses | FakeOpenAIChat, payload: dict[str, Any]) -> str:
    client = _client(fake.script(text("ok")))
    create = client.responses.create if isinstance(fake, FakeResponses) else None
    with pytest.raises(openai.BadRequestError) as caught:
        if create is not None:
            create(**payload)
        else:
            client.chat.completions.create(**payload)
    return str(caught.value)


MARK = {"mode": "explicit"}


def test_the_fakes_refuse_misplaced_or_malformed_breakpoints() -> None:
    answered = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "hi", "prompt_cache_breakpoint": MARK}],
    }
    asked = {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    message = _refused(FakeResponses(), {"model": NEW, "input": [asked, answered]})
    assert "Unknown parameter: 'input[1].content[0].prompt_cache_breakpoint'." in message
    wrong_mode = {**asked["content"][0], "prompt_cache_breakpoint": {"mode": "implicit"}}
    message = _refused(
        FakeResponses(), {"model": NEW, "input": [{**asked, "content": [wrong_mode]}]}
    )
    assert "Supported values are: 'explicit'." in message
    message = _refused(
        FakeResponses(),
        {"model": "gpt-5.4", "input": [asked], "prompt_cache_options": {"mode": "explicit"}},
    )
    assert (
        "Unsupported parameter: 'prompt_cache_options' is not supported with this model." in message
    )
    chat = {
        "role": "user",
        "content": [{"type": "text", "text": "hi", "prompt_cache_breakpoint": MARK}],
    }
    message = _refused(
        FakeOpenAIChat(),
        {
            "model": NEW,
            "messages": [chat],
            "prompt_cache_options": {"mode": "explicit", "ttl": "12h"},
        },
    )
    assert "Supported values are: '30m'." in message
    message = _refused(
        FakeOpenAIChat(),
        {"model": NEW, "messages": [chat], "prompt_cache_options": {"comparison_response_id": "r"}},
    )
    assert "Unknown parameter: 'prompt_cache_options.comparison_response_id'." in message


def _marked_body(markers: int) -> dict[str, Any]:
    words = "word " * 1200
    items = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": f"{k} {words}", "prompt_cache_breakpoint": MARK}
            ],
        }
        for k in range(markers)
    ]
    return {"model": NEW, "input": items, "prompt_cache_options": {"mode": "explicit"}}


def test_the_fake_cache_considers_the_latest_80_breakpoints_and_writes_4() -> None:
    cache = PromptCache()
    body = _marked_body(90)
    first = cache.serve(0, {**body, "input": body["input"][:1]}, chat=False)
    assert first.written == 1 and first.cached_tokens == 0
    # 90 markers: the one cached is the 90th from the end, past the latest 80
    outcome = cache.serve(1, body, chat=False)
    assert outcome.cached_tokens == 0 and outcome.written == 4 and outcome.breakpoints == 90
    nearer = cache.serve(2, {**body, "input": body["input"][:80]}, chat=False)
    assert nearer.cached_tokens > 0  # the 80th marker from the end: the one written


def test_the_library_and_the_fakes_agree_on_which_models_take_breakpoints() -> None:
    from contextchef.providers import get_adapter
    from contextchef.testing._openai_cache import _explicit_era

    names = ["gpt-5.6", "gpt-5.6-mini", "openai/gpt-5.7", "gpt-6", "gpt-5.10", "gpt-5.5"]
    names += ["gpt-5.4-pro", "gpt-4o", "o3", "model", "deepseek-chat", "claude-opus-5-5"]
    for target in ("responses", "openai"):
        rules = get_adapter(target).model_rules
        assert [rules(n).prompt_cache for n in names] == [_explicit_era(n) for n in names]
    assert [_explicit_era(n) for n in names[:6]] == [True] * 5 + [False]


def test_responses_instructions_take_no_breakpoint_so_the_first_ends_the_first_request() -> None:
    # ``instructions`` is a string, which cannot carry one (only input_text / input_image /
    # input_file parts do: research §2.2); the first breakpoint is the first request's last
    # input part, and it caches tools + instructions + the first turn for the next request
    fake = FakeResponses().script(tool_calls(("grep", {"pattern": "a"})), text("ok"), text("ok"))
    client, chef = _client(fake), ContextChef()
    chef.register_tools([grep])
    chef.set_system_prompt("You are a glossary assistant. " * 150)
    chef.set_history([user("Define cache.")])
    payloads = []
    for k in range(3):
        request = chef.compile("responses", model=NEW)
        payloads.append(request.payload)
        chef.run_tools(chef.ingest(client.responses.create(**request.payload)))
        if k == 1:
            chef.append(user("More."))
    first, second, _ = payloads
    assert isinstance(first["instructions"], str) and _markers(first) == ["0.0"]
    assert first["input"][0]["content"][0]["type"] == "input_text"
    # the tool result ends the second request: its output list carries the marker
    assert second["input"][-1]["type"] == "function_call_output"
    assert _markers(second) == ["0.0", f"{len(second['input']) - 1}.0"]
    outcomes = fake.cache_outcomes
    assert outcomes[0].cached_tokens == 0 and outcomes[0].written_tokens == outcomes[0].input_tokens
    assert outcomes[1].cached_tokens == outcomes[0].input_tokens  # tools, instructions, turn 1
    assert outcomes[2].cached_tokens == outcomes[1].input_tokens
    assert fake.violations == ()


def test_the_first_marked_entry_is_found_reading_each_entry_once() -> None:
    def entry(text: str, marked: bool) -> dict[str, Any]:
        part: dict[str, Any] = {"type": "input_text", "text": text}
        return {
            "role": "user",
            "content": [
                part | ({"prompt_cache_breakpoint": {"mode": "explicit"}} if marked else {})
            ],
        }

    plain, marked, answer = entry("a", False), entry("b", True), {"type": "function_call"}
    memo: dict[Any, Any] = {}
    wire: list[dict[str, Any]] = [plain, answer]
    assert first_marked(wire, memo) is None
    wire.append(marked)
    assert first_marked(wire, memo) == 2
    wire.append(entry("c", True))
    assert first_marked(wire, memo) == 2  # the first stays the first
    del wire[2:]  # cut back and rendered again without markers
    wire.append(entry("b", False))
    assert first_marked(wire, memo) is None
    assert first_marked([marked], memo) == 0  # another list: read again
    assert first_marked([], memo) is None


@pytest.mark.parametrize("target", ["responses", "openai"])
def test_a_restored_session_drops_the_breakpoints_for_an_older_model_too(target: str) -> None:
    fake = (FakeResponses if target == "responses" else FakeOpenAIChat)()
    fake.script(*(text(f"Answer {k}.") for k in range(4)))
    client, chef = _client(fake), _chef()
    create = client.responses.create if target == "responses" else client.chat.completions.create
    for k in range(2):
        chef.ingest(create(**chef.compile(target, model=NEW).payload))
        chef.append(user(f"Word {k}?"))
    again = ContextChef()
    again.register_tools([TOOL])
    again.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True)
    request = again.compile(target, model="gpt-5.5")
    assert not _markers(request.payload) and "prompt_cache_options" not in request.payload
    assert [e.kind for e in request.edits] == ["model"]
    again.ingest(create(**request.payload))
    again.append(user("Last?"))
    later = again.compile(target, model="gpt-5.5")
    assert later.edits == () and not _markers(later.payload)
    again.ingest(create(**later.payload))
    assert fake.violations == ()
