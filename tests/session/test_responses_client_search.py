"""OpenAI Responses client-executed tool search (research note rules 20-23).

`openai-native-client`: deferred functions in namespaces with ``defer_loading``, and our
ranker behind ``{"type": "tool_search", "execution": "client"}``. The model's
``tool_search_call`` runs through the gate as our ``tool_search``; the answer is a
``tool_search_output`` that loads what was found. Multi-turn, through the official SDK
against `FakeResponses`, which enforces the pairing and namespace rules.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import openai
import pytest

from contextchef import (
    ContextChef,
    ToolCall,
    ToolResult,
    UsageError,
    assistant,
    tool_results,
    user,
)
from contextchef.providers import from_responses
from contextchef.testing import FakeResponses, httpx_for, text, tool_calls
from contextchef.tools._catalogs import load_catalog
from sdk_check import sdk_problems

MODEL = "gpt-5.4"
STRATEGY = "openai-native-client"


def _answer(**args: Any) -> str:
    return "ok: " + json.dumps(args, sort_keys=True)


def _session(catalogs: Path, **kwargs: Any) -> ContextChef:
    chef = ContextChef(defer=["github__*"], **kwargs)
    for name in ("mcp-filesystem", "github"):
        tools = load_catalog(catalogs / f"{name}.json").tools
        chef.register_tools(tools, handlers={t.name: _answer for t in tools})
    chef.set_system_prompt("You are a careful coding agent.")
    chef.set_history([user("File an issue about the crash.")])
    return chef


def _run(chef: ContextChef, fake: FakeResponses, turns: int) -> list[Any]:
    """The agent loop: compile, send, ingest, run the calls through the gate."""
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    requests = []
    try:
        for _ in range(turns):
            request = chef.compile("responses", model=MODEL, strategy=STRATEGY)
            requests.append(request)
            calls = chef.ingest(client.responses.create(**request.payload))
            if calls:
                chef.append(tool_results([chef.execute(c).result for c in calls]))
    finally:
        client.close()
    return requests


def test_the_search_is_declared_once_as_the_client_tool_search(catalogs_dir: Path) -> None:
    """Rules 20, 21: a described client search last, no function of that name."""
    chef = _session(catalogs_dir)
    payload = chef.compile("responses", model=MODEL, strategy=STRATEGY).payload
    search = payload["tools"][-1]
    assert search["type"] == "tool_search" and search["execution"] == "client"
    assert "github__create_issue" in search["description"]  # the name directory
    assert search["parameters"]["type"] == "object"
    assert not any(t.get("name") == "tool_search" for t in payload["tools"])
    assert not any(t.get("name") == "defer_execute" for t in payload["tools"])
    spaces = [t for t in payload["tools"] if t["type"] == "namespace"]
    assert spaces and all(f["defer_loading"] is True for s in spaces for f in s["tools"])
    assert sdk_problems("responses", payload) == []


def test_a_client_search_loads_the_tool_and_the_call_goes_through_the_gate(
    catalogs_dir: Path,
) -> None:
    chef = _session(catalogs_dir)
    fake = FakeResponses().script(
        tool_calls(("tool_search", {"queries": ["create issue"]})),
        tool_calls(("github__create_issue", {"owner": "acme", "repo": "app", "title": "Crash"})),
        text("Filed."),
    )
    requests = _run(chef, fake, 3)
    assert fake.violations == ()
    tools = requests[0].payload["tools"]
    space = next(
        t
        for t in tools
        if t["type"] == "namespace" and any(f["name"] == "github__create_issue" for f in t["tools"])
    )
    second = fake.requests[1].body["input"]
    call, output = second[1], second[2]
    assert call["type"] == "tool_search_call" and call["execution"] == "client"
    assert call["arguments"] == {"queries": ["create issue"]}
    assert output["type"] == "tool_search_output" and output["call_id"] == call["call_id"]
    assert output["execution"] == "client"
    loaded = {f["name"]: f for s in output["tools"] for f in s.get("tools", [s])}
    assert "github__create_issue" in loaded
    # loaded exactly as declared: the same namespace, the same definition
    home = next(s for s in output["tools"] if s["name"] == space["name"])
    assert home["description"] == space["description"]
    declared = next(f for f in space["tools"] if f["name"] == "github__create_issue")
    assert loaded["github__create_issue"] == declared
    third = fake.requests[2].body["input"]
    function_call = next(i for i in third if i["type"] == "function_call")
    assert function_call["namespace"] == space["name"]
    result = next(i for i in third if i["type"] == "function_call_output")
    assert result["output"].startswith("ok: ")  # the gate allowed it; the handler ran
    for before, after in itertools.pairwise(requests):
        assert after.segments["tools"] == before.segments["tools"]
        assert after.segments["messages"].startswith(before.segments["messages"][:-1])
        assert after.edits == ()
    assert all(sdk_problems("responses", r.payload) == [] for r in requests)


def test_a_search_that_finds_nothing_says_why_in_a_developer_message(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    fake = FakeResponses().script(
        tool_calls(("tool_search", {"queries": ["zzqx"]})),
        text("Nothing to use."),
    )
    _run(chef, fake, 2)
    assert fake.violations == ()
    sent = fake.requests[1].body["input"]
    output = next(i for i in sent if i["type"] == "tool_search_output")
    assert output["tools"] == []
    note = sent[sent.index(output) + 1]
    assert note["role"] == "developer" and "No tool matched 'zzqx'" in note["content"]


def test_bad_search_arguments_are_answered_not_stored_broken(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    fake = FakeResponses().script(
        tool_calls(("tool_search", {"query": "issue"})),  # not our parameters
        tool_calls(("tool_search", {"tool_names": ["github__create_issue"]})),
        text("Done."),
    )
    _run(chef, fake, 3)
    assert fake.violations == ()
    sent = fake.requests[1].body["input"]
    note = sent[sent.index(next(i for i in sent if i["type"] == "tool_search_output")) + 1]
    assert "tool_search takes exactly one of 'tool_names'" in note["content"]
    last = fake.requests[2].body["input"]
    outputs = [i for i in last if i["type"] == "tool_search_output"]
    assert [len(o["tools"]) for o in outputs] == [0, 1]


def test_a_host_written_search_call_is_sent_as_a_tool_search_call(catalogs_dir: Path) -> None:
    """A call named tool_search from another provider or the host: no such function exists."""
    chef = _session(catalogs_dir)
    chef.compile("responses", model=MODEL, strategy=STRATEGY)  # the session's strategy
    call = ToolCall(id="toolu_1", name="tool_search", arguments='{"tool_names":["github__get_me"]}')
    chef.append(assistant("", [call]))
    chef.append(tool_results([chef.execute(call).result]))
    payload = chef.compile("responses", model=MODEL, strategy=STRATEGY).payload
    kinds = [i["type"] for i in payload["input"]]
    assert kinds[1:3] == ["tool_search_call", "tool_search_output"]
    output = payload["input"][2]
    assert [f["name"] for s in output["tools"] for f in s["tools"]] == ["github__get_me"]
    assert sdk_problems("responses", payload) == []
    # the same history under the plain client strategy stays a function call
    plain = chef.compile("responses", model=MODEL, strategy="client").payload
    assert [i["type"] for i in plain["input"]][1:3] == ["function_call", "function_call_output"]


def test_recorded_client_search_items_parse_and_render_back_unchanged() -> None:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": "hi"},
        {
            "type": "tool_search_call",
            "id": "tsc_1",
            "call_id": "call_1",
            "execution": "client",
            "arguments": {"queries": ["issue"]},
            "status": "completed",
        },
        {
            "type": "tool_search_output",
            "call_id": "call_1",
            "execution": "client",
            "status": "completed",
            "tools": [{"type": "function", "name": "f", "parameters": {}, "strict": False}],
        },
    ]
    parsed = from_responses(items)
    assert parsed.notes == ()
    call = parsed.messages[1].parts[0]
    result = parsed.messages[2].parts[0]
    assert isinstance(call, ToolCall) and call.name == "tool_search"
    assert json.loads(call.arguments) == {"queries": ["issue"]}
    assert getattr(result, "references", None) == ("f",)
    chef = ContextChef()
    chef.set_history(list(parsed.messages))
    payload = chef.compile("responses", model="gpt-4o").payload
    assert payload["input"] == items


def test_server_search_items_lose_the_output_only_created_by() -> None:
    item = {
        "type": "tool_search_call",
        "id": "tsc_1",
        "call_id": None,
        "execution": "server",
        "arguments": {"paths": ["crm"]},
        "status": "completed",
        "created_by": "resp_1",
    }
    parsed = from_responses([{"type": "message", "role": "user", "content": "hi"}, item])
    kept = parsed.messages[1].parts[0]
    assert "created_by" not in kept.data  # type: ignore[union-attr]


def test_the_client_search_needs_a_model_with_tool_search(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    with pytest.raises(UsageError, match="openai-native-client") as info:
        chef.compile("responses", model="gpt-4o", strategy=STRATEGY)
    assert "'client'" in str(info.value)


def test_a_result_to_a_search_call_sent_earlier_is_a_search_output() -> None:
    """The calls a result answers are looked up in what was sent before (`before`).

    Only the ids the new results answer are looked for, from the end, so a steady compile
    does not walk the whole conversation; a result to a function call stays one.
    """
    from contextchef.history._messages import Message
    from contextchef.providers.responses._search import CALL, OUTPUT, fit_search_results

    hint = {"provider": "responses", "kind": CALL}
    search = ToolCall(id="s1", name="tool_search", arguments={}, provider_data=hint)
    function = ToolCall(id="f1", name="github__get_me", arguments={})
    before = [
        user("find it"),
        Message(role="assistant", parts=(search, function)),
        *[user(f"filler {i}") for i in range(50)],
    ]
    results = tool_results(
        [
            ToolResult(call_id="s1", name="tool_search", content="found"),
            ToolResult(call_id="f1", name="x", content="me"),
        ]
    )
    tools = [{"type": "tool_search", "execution": "client"}]
    (out,) = fit_search_results([results], tools, before)
    kinds = [dict(p.provider_data or {}).get("kind") for p in out.parts]
    assert kinds == [OUTPUT, None]
    assert out.parts[1] is results.parts[1]
    (same,) = fit_search_results([results], tools, before[2:])  # the call is not there
    assert same is results
