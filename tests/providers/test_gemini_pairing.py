"""Gemini pairs a functionResponse with its functionCall by name (and id where set)."""

from __future__ import annotations

from typing import Any

import pytest
from google import genai
from google.genai import types as genai_types

from contextchef import ContextChef, ToolResult, from_gemini, tool_results, user
from contextchef.testing import FakeGemini, httpx_for, text, tool_calls

QUERY = {
    "name": "query",
    "description": "Run SQL.",
    "inputSchema": {"type": "object", "properties": {"sql": {"type": "string"}}},
}


def test_a_result_recorded_under_the_real_tool_name_answers_the_wrapper_call() -> None:
    chef = ContextChef(default_defer=True)
    chef.register_mcp_tools({"tools": [QUERY]}, server="pg")
    chef.set_history([user("count users")])
    wrapped = ("defer_execute", {"tool_name": "pg__query", "params": {"sql": "select 1"}})
    fake = FakeGemini().script(tool_calls(wrapped), text("1 user"))
    client = genai.Client(
        api_key="x",
        http_options=genai_types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai))),
    )
    reply = client.models.generate_content(**chef.compile("gemini", model="m").payload)
    content = reply.candidates[0].content  # type: ignore[index, union-attr]
    chef.append(*from_gemini([content.model_dump(mode="json", exclude_none=True)]).messages)  # type: ignore[union-attr]
    part = content.parts[0]  # type: ignore[union-attr, index]
    check = chef.check_tool_call(part)
    assert check.decision == "allowed"
    # the host names the result after the real tool, as the gate reported it
    result = ToolResult(call_id=part.function_call.id, name=check.wire_name, content="1")  # type: ignore[union-attr, arg-type, attr-defined]
    chef.append(tool_results([result]))
    client.models.generate_content(**chef.compile("gemini", model="m").payload)
    assert fake.violations == ()
    responses = [
        p["functionResponse"]
        for c in fake.requests[1].body["contents"]
        for p in c["parts"]
        if "functionResponse" in p
    ]
    assert [(r["id"], r["name"]) for r in responses] == [("call_0001", "defer_execute")]
    assert chef.history[-1].parts[0].name == "pg__query"  # type: ignore[union-attr]


def pelican_names() -> str:
    """Names for a pet pelican."""
    return "Sammy"


def _client(fake: FakeGemini) -> genai.Client:
    http = genai_types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai)))
    return genai.Client(api_key="x", http_options=http)


def _plain_genai_loop(fake: FakeGemini) -> list[dict[str, Any]]:
    """A host's own google-genai loop, answering with ``Part.from_function_response``."""
    decl = genai_types.FunctionDeclaration(
        name="pelican_names",
        description="Names.",
        parameters_json_schema={"type": "object", "properties": {}},
    )
    config = genai_types.GenerateContentConfig(
        tools=[genai_types.Tool(function_declarations=[decl])],
        automatic_function_calling=genai_types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents = [genai_types.Content(role="user", parts=[genai_types.Part.from_text(text="Name")])]
    reply = _client(fake).models.generate_content(model="m", contents=contents, config=config)
    turn = reply.candidates[0].content  # type: ignore[index]
    contents.append(turn)  # type: ignore[arg-type]
    call = turn.parts[0].function_call  # type: ignore[union-attr, index]
    answer = genai_types.Part.from_function_response(name=call.name, response={"output": "Charles"})  # type: ignore[union-attr, arg-type]
    contents.append(genai_types.Content(role="user", parts=[answer]))
    return [c.model_dump(mode="json", exclude_none=True) for c in contents]


def _responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    parts = [p for c in body["contents"] for p in c["parts"]]
    return [p["functionResponse"] for p in parts if "functionResponse" in p]


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-flash"])
def test_a_response_saved_without_its_calls_id_is_sent_with_it(model: str) -> None:
    # break-it 33 #2: Part.from_function_response has no id parameter; the call had one
    stored = _plain_genai_loop(FakeGemini().script(tool_calls(("pelican_names", {}))))
    parsed = from_gemini(stored)
    assert parsed.notes == ()
    chef = ContextChef()
    chef.register_tools([pelican_names])
    chef.set_history(parsed.messages)
    fake = FakeGemini().script(tool_calls(("pelican_names", {})), text("Charles and Sammy."))
    client = _client(fake)
    first = chef.compile("gemini", model=model)
    added = [(c.kind, c.index, c.call_id) for c in first.changes if c.kind == "added_result_id"]
    assert added == [("added_result_id", 2, "call_0001")]
    chef.run_tools(chef.ingest(client.models.generate_content(**first.payload)))
    second = chef.compile("gemini", model=model)
    assert "added_result_id" not in [c.kind for c in second.changes]
    chef.ingest(client.models.generate_content(**second.payload))
    assert fake.violations == ()
    bodies = [r.body for r in fake.requests]
    assert [(r.get("id"), r["name"]) for r in _responses(bodies[0])] == [
        ("call_0001", "pelican_names")
    ]
    # the next request repeats the first one's contents byte for byte, then the new turn
    assert bodies[1]["contents"][: len(bodies[0]["contents"])] == bodies[0]["contents"]
    # (the fake reused "call_0001" for its second call: ingest renamed it)
    assert [r.get("id") for r in _responses(bodies[1])] == ["call_0001", "call_3_0"]


def test_a_call_gemini_sent_without_an_id_is_answered_without_one() -> None:
    # Gemini 2.x sends calls without ids: neither side gets a made-up one
    stored = _plain_genai_loop(FakeGemini(call_ids=False).script(tool_calls(("pelican_names", {}))))
    chef = ContextChef()
    chef.register_tools([pelican_names])
    chef.set_history(from_gemini(stored).messages)
    fake = FakeGemini(call_ids=False).script(text("Charles."))
    request = chef.compile("gemini", model="gemini-2.5-flash")
    assert request.changes == ()
    _client(fake).models.generate_content(**request.payload)
    assert fake.violations == ()
    contents = fake.requests[0].body["contents"]
    assert contents[1]["parts"][0]["functionCall"] == {"name": "pelican_names", "args": {}}
    assert _responses(fake.requests[0].body) == [
        {"name": "pelican_names", "response": {"output": "Charles"}}
    ]


def test_a_response_with_an_id_answers_the_call_gemini_sent_without_one() -> None:
    # a host gave its response an id of its own; the call (Gemini 2.x) had none: the
    # result was taken for an orphan, dropped and replaced by "interrupted"
    stored = _plain_genai_loop(FakeGemini(call_ids=False).script(tool_calls(("pelican_names", {}))))
    stored[2]["parts"][0]["function_response"]["id"] = "host_1"
    parsed = from_gemini(stored)
    assert "has the id 'host_1' of no call" in parsed.notes[0]
    chef = ContextChef()
    chef.register_tools([pelican_names])
    chef.set_history(parsed.messages)
    fake = FakeGemini(call_ids=False).script(text("Charles."))
    request = chef.compile("gemini", model="gemini-2.5-flash")
    assert request.changes == ()
    _client(fake).models.generate_content(**request.payload)
    assert fake.violations == ()
    assert _responses(fake.requests[0].body) == [
        {"name": "pelican_names", "response": {"output": "Charles"}}
    ]
