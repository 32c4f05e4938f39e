"""Gemini pairs a functionResponse with its functionCall by name (and id where set)."""

from __future__ import annotations

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
