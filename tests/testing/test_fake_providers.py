"""contextchef.testing: the fake providers behind the official SDK clients.

Real agent loops for every target (compile -> SDK call -> gate -> results -> compile), the
rules proven to fire through each SDK's own error class, script exhaustion, request
records, unknown endpoints, and deterministic ids. Nothing reaches the network: every
client runs over a mock transport with ``max_retries=0`` and no provider environment.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import _interactions_errors as interactions_errors
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from contextchef import (
    TARGETS,
    Allowed,
    ContextChef,
    Message,
    ToolCall,
    ToolResult,
    UnknownTargetError,
    UsageError,
    assistant,
    from_anthropic,
    from_gemini,
    from_openai,
    from_responses,
    load_demo_catalog,
    tool_results,
    user,
)
from contextchef.testing import (
    ANTHROPIC_RULES,
    FakeAnthropic,
    FakeGemini,
    FakeGeminiInteractions,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    Ids,
    RecordedRequest,
    Turn,
    Violation,
    anthropic_tool_use_declared,
    fake_for,
    httpx_for,
    raw,
    text,
    tool_calls,
)

HX = httpx_for(anthropic)
assert httpx_for(openai) is HX

MODEL = "test-model"
SYSTEM = "You are a careful coding agent."
TASK = "Find the TODOs in README.md."
DONE = "Done: README.md has no TODO."


def wire_of(target: str) -> str:
    """The API a target speaks: ``deepseek`` is Chat Completions."""
    return "openai" if target == "deepseek" else target


WIRE_OF_FAKE: dict[type[FakeProvider], str] = {
    FakeAnthropic: "anthropic",
    FakeOpenAIChat: "openai",
    FakeResponses: "responses",
    FakeGemini: "gemini",
    FakeGeminiInteractions: "gemini-interactions",
}
BAD_REQUEST: dict[str, type[Exception]] = {
    "anthropic": anthropic.BadRequestError,
    "openai": openai.BadRequestError,
    "responses": openai.BadRequestError,
    "gemini": genai_errors.ClientError,
    "gemini-interactions": interactions_errors.BadRequestError,
}
SERVER_ERROR: dict[str, type[Exception]] = {
    "anthropic": anthropic.InternalServerError,
    "openai": openai.InternalServerError,
    "responses": openai.InternalServerError,
    "gemini": genai_errors.ServerError,
    "gemini-interactions": interactions_errors.InternalServerError,
}


# -- the SDK clients over a fake ----------------------------------------------------------


class Route:
    """The handler under the module's one genai client: forwards to the current fake."""

    def __init__(self) -> None:
        self.fake: FakeProvider | None = None

    def __call__(self, request: Any) -> Any:
        assert self.fake is not None, "no fake installed for the genai client"
        return self.fake(request)


@dataclass
class GenaiClient:
    route: Route
    client: genai.Client


@pytest.fixture(scope="module")
def genai_client() -> Iterator[GenaiClient]:
    """One google-genai client (slow to build) for the module, over a `Route`."""
    route = Route()
    client = genai.Client(
        api_key="x",
        http_options=genai_types.HttpOptions(
            httpx_client=HX.Client(transport=HX.MockTransport(route))
        ),
    )
    yield GenaiClient(route, client)
    client.close()


@dataclass
class Sdk:
    """Sends compiled payloads with the official SDK client of a fake's API."""

    gemini: GenaiClient
    opened: list[Any] = field(default_factory=list)

    def create(self, fake: FakeProvider, payload: Mapping[str, Any]) -> Any:
        """``**payload`` to the SDK call of `fake`'s API; the SDK's response object."""
        wire = WIRE_OF_FAKE[type(fake)]
        if wire == "gemini":
            self.gemini.route.fake = fake
            return self.gemini.client.models.generate_content(**payload)
        if wire == "gemini-interactions":
            self.gemini.route.fake = fake
            return self.gemini.client.interactions.create(**payload)
        if wire == "anthropic":
            client = anthropic.Anthropic(
                api_key="x", max_retries=0, http_client=fake.http_client(HX)
            )
            self.opened.append(client)
            return client.messages.create(**payload)
        chat = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
        self.opened.append(chat)
        if wire == "responses":
            return chat.responses.create(**payload)
        return chat.chat.completions.create(**payload)


@pytest.fixture
def sdk(genai_client: GenaiClient) -> Iterator[Sdk]:
    made = Sdk(genai_client)
    yield made
    for client in made.opened:
        client.close()
    genai_client.route.fake = None


# -- SDK response objects -> contextchef messages --------------------------------------


def assistant_by_hand(wire: str, response: Any) -> Message:
    """The assistant turn in an SDK response: its text and tool calls, read by hand."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    if wire == "anthropic":
        for block in response.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                args = json.dumps(block.input)
                calls.append(ToolCall(id=block.id, name=block.name, arguments=args))
    elif wire == "openai":
        message = response.choices[0].message
        texts.append(message.content or "")
        for call in message.tool_calls or []:
            fn = call.function
            calls.append(ToolCall(id=call.id, name=fn.name, arguments=fn.arguments))
    elif wire == "responses":
        texts.append(response.output_text)
        for item in response.output:
            if item.type == "function_call":
                calls.append(ToolCall(id=item.call_id, name=item.name, arguments=item.arguments))
    elif wire == "gemini-interactions":
        for step in response.steps:
            if step.type == "model_output":
                texts += [c.text for c in step.content if c.type == "text"]
            elif step.type == "function_call":
                args = json.dumps(step.arguments)
                calls.append(ToolCall(id=step.id, name=step.name, arguments=args))
    else:
        for part in response.candidates[0].content.parts:
            if part.text and not part.thought:
                texts.append(part.text)
            elif part.function_call is not None:
                fc = part.function_call
                assert fc.id is not None and fc.name is not None
                args = json.dumps(fc.args or {})
                calls.append(ToolCall(id=fc.id, name=fc.name, arguments=args))
    return assistant("".join(texts), calls)


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json", exclude_none=True)
    return dumped


def assistant_parsed(wire: str, response: Any) -> Message:
    """The assistant turn with everything to replay (signatures...), through the parsers."""
    if wire == "anthropic":
        turn = [{"role": "assistant", "content": [_dump(b) for b in response.content]}]
        (message,) = from_anthropic(turn).messages
    elif wire == "openai":
        (message,) = from_openai([_dump(response.choices[0].message)]).messages
    elif wire == "responses":
        (message,) = from_responses([_dump(item) for item in response.output]).messages
    else:
        (message,) = from_gemini([_dump(response.candidates[0].content)]).messages
    return message


# -- the agent ----------------------------------------------------------------------------


def make_chef(**kwargs: Any) -> ContextChef:
    """A coding agent on the demo catalog: builtins direct, MCP tools deferred."""
    chef = ContextChef(default_defer=True, **kwargs)
    chef.register_catalog(load_demo_catalog())
    chef.set_system_prompt(SYSTEM)
    chef.set_history([user(TASK)])
    return chef


def answer(chef: ContextChef, call: ToolCall) -> ToolResult:
    """Gate a call; an allowed catalog tool (no Python handler) is 'run' here."""
    check = chef.check_tool_call(call)
    if isinstance(check, Allowed) and chef.registry.handler(check.tool) is None:
        args = json.dumps(dict(check.arguments), sort_keys=True)
        return ToolResult(call_id=call.id, name=call.name, content=f"{check.tool.name} {args}: ok")
    return chef.execute(call).result


def run_loop(
    chef: ContextChef,
    target: str,
    fake: FakeProvider,
    sdk: Sdk,
    read: Callable[[str, Any], Message] = assistant_by_hand,
    max_turns: int = 5,
    model: str = MODEL,
) -> list[Message]:
    """compile -> SDK -> gate every call -> append -> compile..., until a turn has no calls."""
    replies = []
    for _ in range(max_turns):
        payload = chef.compile(target, model=model).payload
        reply = read(wire_of(target), sdk.create(fake, payload))
        replies.append(reply)
        chef.append(reply)
        if not reply.tool_calls:
            return replies
        chef.append(tool_results([answer(chef, call) for call in reply.tool_calls]))
    raise AssertionError(f"no final answer after {max_turns} turns")


READ_AND_GREP = tool_calls(
    ("read_file", {"path": "README.md"}),
    ("grep", {"pattern": "TODO", "path": "README.md"}),
    text="Reading and searching in parallel.",
)

# What the fake names the two parallel calls, per API (counters, never random).
CALL_IDS = {
    "anthropic": ["toolu_0001", "toolu_0002"],
    "openai": ["call_0001", "call_0002"],
    "responses": ["call_0001", "call_0002"],
    "gemini": ["call_0001", "call_0002"],
    "gemini-interactions": ["call_0001", "call_0002"],
}


def calls_and_results(wire: str, body: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    """(call id, name) of every call and (answered id, text) of every result in a body."""
    calls: list[Any] = []
    results: list[Any] = []
    if wire == "anthropic":
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block["type"] == "tool_use":
                    calls.append((block["id"], block["name"]))
                elif block["type"] == "tool_result":
                    results.append((block["tool_use_id"], block["content"]))
    elif wire == "openai":
        for message in body["messages"]:
            calls += [(c["id"], c["function"]["name"]) for c in message.get("tool_calls", [])]
            if message["role"] == "tool":
                results.append((message["tool_call_id"], message["content"]))
    elif wire == "responses":
        for item in body["input"]:
            if item.get("type") == "function_call":
                calls.append((item["call_id"], item["name"]))
            elif item.get("type") == "function_call_output":
                results.append((item["call_id"], item["output"]))
    elif wire == "gemini-interactions":
        for step in body["input"]:
            if step["type"] == "function_call":
                calls.append((step["id"], step["name"]))
            elif step["type"] == "function_result":
                results.append((step["call_id"], step["result"]))
    else:
        for content in body["contents"]:
            for part in content["parts"]:
                if "functionCall" in part:
                    calls.append((part["functionCall"].get("id"), part["functionCall"]["name"]))
                elif "functionResponse" in part:
                    fr = part["functionResponse"]
                    results.append((fr.get("id"), fr["response"]["output"]))
    return calls, results


def tools_bytes(body: Mapping[str, Any]) -> str:
    return json.dumps(body["tools"], sort_keys=True)


# -- 1. real agent loops ------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_agent_loop_over_the_fake(target: str, sdk: Sdk) -> None:
    wire = wire_of(target)
    fake = fake_for(target).script(READ_AND_GREP, text(DONE))
    chef = make_chef()

    replies = run_loop(chef, target, fake, sdk)

    assert [r.text for r in replies] == ["Reading and searching in parallel.", DONE]
    assert [c.id for c in replies[0].tool_calls] == CALL_IDS[wire]
    assert [(r.index, r.method, r.status) for r in fake.requests] == [
        (0, "POST", 200),
        (1, "POST", 200),
    ]
    assert fake.violations == ()
    assert fake.pending == 0
    first, second = (r.body for r in fake.requests)
    # The second request replays both calls, each paired with its result by id.
    calls, results = calls_and_results(wire, second)
    assert calls == list(zip(CALL_IDS[wire], ["read_file", "grep"], strict=True))
    assert [call_id for call_id, _ in results] == CALL_IDS[wire]
    assert results[0][1] == 'read_file {"path": "README.md"}: ok'
    assert calls_and_results(wire, first) == ([], [])
    # Prefix stability: the tools array is byte-identical between the requests.
    assert tools_bytes(first) == tools_bytes(second)
    # ...and the history grew behind an unchanged request head.
    if wire == "anthropic":
        assert first["system"] == second["system"]
    assert fake.requests[0].path.endswith(fake.endpoint.replace("{model}", MODEL))


@pytest.mark.parametrize("target", ["anthropic", "deepseek", "responses", "gemini"])
def test_reasoning_is_replayed_to_its_provider(target: str, sdk: Sdk) -> None:
    """Signatures the fake made come back byte-for-byte on the next request."""
    wire = wire_of(target)
    turn = tool_calls(("read_file", {"path": "README.md"}), reasoning="I should read it.")
    fake = fake_for(target).script(turn, text(DONE))
    run_loop(make_chef(), target, fake, sdk, read=assistant_parsed)

    assert fake.violations == ()
    second = fake.requests[1].body
    if wire == "anthropic":
        (turn_1,) = [m for m in second["messages"] if m["role"] == "assistant"]
        thinking = turn_1["content"][0]
        assert thinking["signature"].startswith("sig_0001.")  # sealed (testing._signing)
        assert thinking == {**thinking, "type": "thinking", "thinking": "I should read it."}
    elif wire == "openai":
        (turn_1,) = [m for m in second["messages"] if m["role"] == "assistant"]
        assert turn_1["reasoning_content"] == "I should read it."
    elif wire == "responses":
        (item,) = [i for i in second["input"] if i.get("type") == "reasoning"]
        assert (item["id"], item["encrypted_content"]) == ("rs_0001", "enc_0001")
    else:
        (model_turn,) = [c for c in second["contents"] if c["role"] == "model"]
        signed = [p for p in model_turn["parts"] if "thoughtSignature" in p]
        assert [p["thoughtSignature"] for p in signed] == ["c2lnXzAwMDE="]  # b64 "sig_0001"
        assert "functionCall" in signed[0]


def test_gemini_loop_without_call_ids(sdk: Sdk) -> None:
    """Gemini calls without ids: results are paired by name and position."""
    fake = FakeGemini(call_ids=False).script(READ_AND_GREP, text(DONE))
    run_loop(make_chef(), "gemini", fake, sdk, read=assistant_parsed)
    assert fake.violations == ()
    calls, results = calls_and_results("gemini", fake.requests[1].body)
    assert calls == [(None, "read_file"), (None, "grep")]
    answers = [
        part["functionResponse"]["name"]
        for content in fake.requests[1].body["contents"]
        for part in content["parts"]
        if "functionResponse" in part
    ]
    assert answers == ["read_file", "grep"]
    assert len(results) == 2
    # the calls went without ids, so their responses do too (no made-up id on one side)
    ids = [
        "id" in part["functionResponse"]
        for content in fake.requests[1].body["contents"]
        for part in content["parts"]
        if "functionResponse" in part
    ]
    assert ids == [False, False]


def test_anthropic_positional_system_message_is_allowed(sdk: Sdk) -> None:
    """A mid-conversation ``role: system`` message does not count in the alternation."""
    chef = make_chef()
    chef.announce("tools:added", "Tools newly available: grep", channel="system")
    fake = FakeAnthropic().script(READ_AND_GREP, text(DONE))
    run_loop(chef, "anthropic", fake, sdk, model="claude-opus-5-5")  # takes system messages
    assert fake.violations == ()
    # stated once, after the first user turn, where it stays
    roles = [m["role"] for m in fake.requests[1].body["messages"]]
    assert roles == ["user", "system", "assistant", "user"]


def test_deferred_tool_through_defer_execute(sdk: Sdk) -> None:
    """A deferred MCP tool reached with defer_execute: the call and result pair up."""
    wrapped = {"tool_name": "issue-tracker__get_issue", "params": {"issue": "ENG-1"}}
    fake = FakeAnthropic().script(tool_calls(("defer_execute", wrapped)), text(DONE))
    chef = make_chef()
    run_loop(chef, "anthropic", fake, sdk)
    assert fake.violations == ()
    _, results = calls_and_results("anthropic", fake.requests[1].body)
    assert results == [("toolu_0001", 'get_issue {"issue": "ENG-1"}: ok')]


def test_a_denied_call_still_pairs_its_error_result(sdk: Sdk) -> None:
    fake = FakeOpenAIChat().script(tool_calls(("no_such_tool", {})), text(DONE))
    run_loop(make_chef(), "openai", fake, sdk)
    assert fake.violations == ()
    _, results = calls_and_results("openai", fake.requests[1].body)
    ((call_id, content),) = results
    assert call_id == "call_0001" and "no_such_tool" in content


def test_ids_are_the_same_literals_in_every_run(sdk: Sdk) -> None:
    def run(target: str) -> list[dict[str, Any]]:
        fake = fake_for(target).script(READ_AND_GREP, text(DONE))
        run_loop(make_chef(), target, fake, sdk)
        return [dict(r.reply) for r in fake.requests]

    for target in ("anthropic", "openai", "responses", "gemini"):
        first, again = run(target), run(target)
        assert first == again
    replies = run("responses")
    calls = [(i["id"], i["call_id"]) for i in replies[0]["output"] if i["type"] == "function_call"]
    assert calls == [("fc_0001", "call_0001"), ("fc_0002", "call_0002")]
    assert [r["id"] for r in replies] == ["resp_0001", "resp_0002"]
    assert replies[0]["created_at"] == 0
    chat = run("openai")
    assert [r["id"] for r in chat] == ["chatcmpl-0001", "chatcmpl-0002"]
    assert {r["created"] for r in chat} == {0}
    messages = run("anthropic")
    assert [m["id"] for m in messages] == ["msg_0001", "msg_0002"]
    assert [b["id"] for b in messages[0]["content"] if b["type"] == "tool_use"] == [
        "toolu_0001",
        "toolu_0002",
    ]
    gemini = run("gemini")
    assert [g["responseId"] for g in gemini] == ["resp_0001", "resp_0002"]


# -- 2. every rule fires, through the SDK ---------------------------------------------------

_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
_A_TOOLS = [{"name": "read_file", "description": "Read a file.", "input_schema": _SCHEMA}]


def _a(*messages: dict[str, Any], tools: Sequence[Any] = _A_TOOLS) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 64, "messages": list(messages), "tools": list(tools)}


def _use(call_id: str, name: str = "read_file") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"path": "a"}}


def _result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def _said(role: str, words: str) -> dict[str, Any]:
    return {"role": role, "content": words}


_C_TOOL = {
    "type": "function",
    "function": {"name": "read_file", "description": "Read a file.", "parameters": _SCHEMA},
}


def _c(*messages: dict[str, Any], tools: Sequence[Any] = (_C_TOOL,)) -> dict[str, Any]:
    return {"model": MODEL, "messages": list(messages), "tools": list(tools)}


def _c_calls(*ids: str) -> dict[str, Any]:
    calls = [
        {"id": i, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        for i in ids
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _c_tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


_R_TOOL = {"type": "function", "name": "read_file", "parameters": _SCHEMA, "strict": False}


def _r(*items: dict[str, Any], tools: Sequence[Any] = (_R_TOOL,)) -> dict[str, Any]:
    return {"model": MODEL, "input": list(items), "tools": list(tools)}


def _r_call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "read_file", "arguments": "{}"}


def _r_out(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


_R_USER = {"type": "message", "role": "user", "content": "hi"}
_G_DECL = {"name": "read_file", "description": "Read a file.", "parameters_json_schema": _SCHEMA}


def _g(*contents: dict[str, Any], declarations: Sequence[Any] = (_G_DECL,)) -> dict[str, Any]:
    tools = [{"function_declarations": list(declarations)}]
    return {"model": MODEL, "contents": list(contents), "config": {"tools": tools}}


def _g_user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts) or [{"text": "hi"}]}


def _g_model(*calls: tuple[str | None, str]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for call_id, name in calls:
        call: dict[str, Any] = {"name": name, "args": {}}
        if call_id is not None:
            call["id"] = call_id
        parts.append({"function_call": call})
    return {"role": "model", "parts": parts or [{"text": "ok"}]}


def _g_answer(call_id: str | None, name: str = "read_file") -> dict[str, Any]:
    response: dict[str, Any] = {"name": name, "response": {"output": "ok"}}
    if call_id is not None:
        response["id"] = call_id
    return {"function_response": response}


@dataclass(frozen=True)
class Bad:
    id: str
    fake: Callable[[], FakeProvider]
    rule: str
    payload: dict[str, Any]


BAD = [
    # Anthropic
    Bad(
        "anthropic-unanswered-tool-use",
        FakeAnthropic,
        "anthropic_tool_use_answered",
        _a(
            _said("user", "hi"), {"role": "assistant", "content": [_use("t1")]}, _said("user", "go")
        ),
    ),
    Bad(
        "anthropic-orphan-tool-result",
        FakeAnthropic,
        "anthropic_tool_result_has_call",
        _a(
            _said("user", "hi"),
            _said("assistant", "ok"),
            {"role": "user", "content": [_result("t9")]},
        ),
    ),
    Bad(
        "anthropic-unknown-role",
        FakeAnthropic,
        "anthropic_roles_alternate",
        _a(_said("user", "hi"), _said("tool", "again")),
    ),
    Bad(
        "anthropic-starts-with-assistant",
        FakeAnthropic,
        "anthropic_roles_alternate",
        _a(_said("assistant", "hello"), _said("user", "hi")),
    ),
    Bad(
        "anthropic-duplicate-tool-names",
        FakeAnthropic,
        "anthropic_tool_names_valid",
        _a(_said("user", "hi"), tools=[*_A_TOOLS, *_A_TOOLS]),
    ),
    Bad(
        "anthropic-illegal-tool-name",
        FakeAnthropic,
        "anthropic_tool_names_valid",
        _a(_said("user", "hi"), tools=[{**_A_TOOLS[0], "name": "fs.read"}]),
    ),
    Bad(
        "anthropic-custom-tool-without-schema",
        FakeAnthropic,
        "anthropic_tool_names_valid",
        _a(_said("user", "hi"), tools=[{"name": "read_file", "description": "x"}]),
    ),
    Bad(
        "anthropic-text-before-tool-result",
        FakeAnthropic,
        "anthropic_tool_results_first",
        _a(
            _said("user", "hi"),
            {"role": "assistant", "content": [_use("t1")]},
            {"role": "user", "content": [{"type": "text", "text": "here"}, _result("t1")]},
        ),
    ),
    Bad(
        "anthropic-duplicate-tool-use-id",
        FakeAnthropic,
        "anthropic_tool_use_ids_unique",
        _a(
            _said("user", "hi"),
            {"role": "assistant", "content": [_use("t1")]},
            {"role": "user", "content": [_result("t1")]},
            {"role": "assistant", "content": [_use("t1")]},
            {"role": "user", "content": [_result("t1")]},
        ),
    ),
    Bad(
        "anthropic-undeclared-tool-use",
        lambda: FakeAnthropic(rules=(*ANTHROPIC_RULES, anthropic_tool_use_declared)),
        "anthropic_tool_use_declared",
        _a(
            _said("user", "hi"),
            {"role": "assistant", "content": [_use("t1", "grep")]},
            {"role": "user", "content": [_result("t1")]},
        ),
    ),
    Bad(
        "anthropic-unresolved-tool-reference",
        FakeAnthropic,
        "anthropic_references_declared",
        _a(
            _said("user", "find a search tool"),
            {"role": "assistant", "content": [_use("t1")]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "tool_reference", "tool_name": "grep"}],
                    }
                ],
            },
        ),
    ),
    Bad(
        "anthropic-prefill-ends-in-whitespace",
        FakeAnthropic,
        "anthropic_no_trailing_whitespace",
        _a(_said("user", "hi"), _said("assistant", "Here is ")),
    ),
    Bad(
        "anthropic-thinking-on-tool-turn-without-thinking",
        FakeAnthropic,
        "anthropic_thinking_leads_tool_turn",
        {
            **_a(
                _said("user", "hi"),
                {"role": "assistant", "content": [{"type": "text", "text": "x"}, _use("t1")]},
                {"role": "user", "content": [_result("t1")]},
            ),
            "max_tokens": 2048,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        },
    ),
    # OpenAI Chat Completions
    Bad(
        "chat-unanswered-tool-call",
        FakeOpenAIChat,
        "chat_tool_calls_answered",
        _c(_said("user", "hi"), _c_calls("c1", "c2"), _c_tool("c1"), _said("user", "go")),
    ),
    Bad(
        "chat-tool-call-without-function",
        FakeOpenAIChat,
        "chat_tool_calls_well_formed",
        _c(
            _said("user", "hi"),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function"}],
            },
            _c_tool("c1"),
        ),
    ),
    Bad(
        "chat-orphan-tool-message",
        FakeOpenAIChat,
        "chat_tool_message_has_call",
        _c(_said("user", "hi"), _said("assistant", "ok"), _c_tool("c9")),
    ),
    Bad(
        "chat-duplicate-function-names",
        FakeOpenAIChat,
        "chat_function_names_valid",
        _c(_said("user", "hi"), tools=[_C_TOOL, _C_TOOL]),
    ),
    Bad(
        "chat-illegal-function-name",
        FakeOpenAIChat,
        "chat_function_names_valid",
        _c(
            _said("user", "hi"),
            tools=[{"type": "function", "function": {"name": "a.b", "parameters": _SCHEMA}}],
        ),
    ),
    Bad(
        "chat-parameters-not-an-object",
        FakeOpenAIChat,
        "chat_parameters_object",
        _c(
            _said("user", "hi"),
            tools=[
                {"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}
            ],
        ),
    ),
    # OpenAI Responses
    Bad(
        "responses-unpaired-function-call",
        FakeResponses,
        "responses_function_call_answered",
        _r(_R_USER, _r_call("c1"), _r_call("c2"), _r_out("c2")),
    ),
    Bad(
        "responses-two-outputs-for-one-call",
        FakeResponses,
        "responses_function_call_answered",
        _r(_R_USER, _r_call("c1"), _r_out("c1"), _r_out("c1")),
    ),
    Bad(
        "responses-orphan-output",
        FakeResponses,
        "responses_output_has_call",
        _r(_R_USER, _r_out("c9")),
    ),
    Bad(
        "responses-duplicate-function-names",
        FakeResponses,
        "responses_function_names_valid",
        _r(_R_USER, tools=[_R_TOOL, _R_TOOL]),
    ),
    # Gemini
    Bad(
        "gemini-function-call-without-response",
        FakeGemini,
        "gemini_function_calls_answered",
        _g(_g_user(), _g_model(("c1", "read_file")), _g_user()),
    ),
    Bad(
        "gemini-fewer-responses-than-calls",
        FakeGemini,
        "gemini_function_calls_answered",
        _g(_g_user(), _g_model(("c1", "read_file"), ("c2", "read_file")), _g_user(_g_answer("c1"))),
    ),
    Bad(
        "gemini-response-id-mismatch",
        FakeGemini,
        "gemini_function_calls_answered",
        _g(_g_user(), _g_model(("c1", "read_file")), _g_user(_g_answer("c7"))),
    ),
    Bad(
        # Part.from_function_response(name=, response=) gives no id (break-it 33 #2)
        "gemini-response-without-the-calls-id",
        FakeGemini,
        "gemini_function_calls_answered",
        _g(_g_user(), _g_model(("c1", "read_file")), _g_user(_g_answer(None))),
    ),
    Bad(
        "gemini-response-name-mismatch",
        FakeGemini,
        "gemini_function_calls_answered",
        _g(_g_user(), _g_model((None, "read_file")), _g_user(_g_answer(None, "grep"))),
    ),
    Bad(
        "gemini-orphan-function-response",
        FakeGemini,
        "gemini_function_responses_have_calls",
        _g(_g_user(), _g_model(), _g_user(_g_answer("c1"))),
    ),
    Bad(
        "gemini-roles-do-not-alternate",
        FakeGemini,
        "gemini_roles_alternate",
        _g(_g_user(), _g_user()),
    ),
    Bad(
        "gemini-duplicate-declarations",
        FakeGemini,
        "gemini_declaration_names_valid",
        _g(_g_user(), declarations=[_G_DECL, _G_DECL]),
    ),
]


@pytest.mark.parametrize("bad", BAD, ids=[b.id for b in BAD])
def test_each_rule_fires_through_the_sdk(bad: Bad, sdk: Sdk) -> None:
    fake = bad.fake().script(text("never sent"))
    wire = WIRE_OF_FAKE[type(fake)]

    with pytest.raises(BAD_REQUEST[wire]) as caught:
        sdk.create(fake, bad.payload)

    assert getattr(caught.value, "status_code", getattr(caught.value, "code", None)) == 400
    assert f"rule {bad.rule} broken" in str(caught.value)
    assert {v.rule for v in fake.violations} == {bad.rule}
    assert {(v.request_index, v.status) for v in fake.violations} == {(0, 400)}
    (request,) = fake.requests
    assert request.status == 400
    assert fake.pending == 1  # a refused request uses no scripted turn


def test_error_bodies_have_each_providers_shape() -> None:
    fakes = [FakeAnthropic(), FakeOpenAIChat(), FakeResponses(), FakeGemini()]
    bodies = {}
    for fake, path, body in zip(
        fakes,
        [
            "/v1/messages",
            "/v1/chat/completions",
            "/v1/responses",
            f"/v1beta/models/{MODEL}:generateContent",
        ],
        [
            _a(_said("assistant", "a"), _said("user", "b")),
            _c(_said("user", "hi"), _c_tool("c9")),
            _r(_R_USER, _r_out("c9")),
            {"contents": []},
        ],
        strict=True,
    ):
        with fake.http_client(HX) as client:
            response = client.post(f"https://fake.test{path}", json=body)
        assert response.status_code == 400
        bodies[WIRE_OF_FAKE[type(fake)]] = response.json()
    assert bodies["anthropic"]["type"] == "error"
    assert bodies["anthropic"]["error"]["type"] == "invalid_request_error"
    assert "anthropic_roles_alternate" in bodies["anthropic"]["error"]["message"]
    for wire in ("openai", "responses"):
        error = bodies[wire]["error"]
        assert (error["type"], error["param"], error["code"]) == (
            "invalid_request_error",
            None,
            None,
        )
    assert "chat_tool_message_has_call" in bodies["openai"]["error"]["message"]
    assert "responses_output_has_call" in bodies["responses"]["error"]["message"]
    error = bodies["gemini"]["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert "gemini_required_fields" in error["message"]


def test_required_fields_are_checked() -> None:
    """Bodies the SDKs would not even build: sent with a bare httpx client."""
    fake = FakeAnthropic()
    client = fake.http_client(HX)
    response = client.post("https://fake.test/v1/messages", json={"messages": []})
    assert response.status_code == 400
    assert [v.rule for v in fake.violations] == ["anthropic_required_fields"] * 3
    message = response.json()["error"]["message"]
    assert "model: required" in message and "max_tokens: required" in message
    not_json = client.post("https://fake.test/v1/messages", content=b"{oops")
    assert not_json.status_code == 400
    assert fake.violations[-1].rule == "invalid_json"
    assert fake.requests[-1].body is None


# -- 3. the script, the records, the endpoints -----------------------------------------------


def _hello(wire: str) -> dict[str, Any]:
    if wire == "anthropic":
        return _a(_said("user", "hi"))
    if wire == "openai":
        return _c(_said("user", "hi"))
    if wire == "responses":
        return _r(_R_USER)
    return _g(_g_user())


@pytest.mark.parametrize("wire", ["anthropic", "openai", "responses", "gemini"])
def test_script_exhaustion_is_an_error_and_recorded(wire: str, sdk: Sdk) -> None:
    fake = fake_for(wire).script(text("only one"))
    sdk.create(fake, _hello(wire))
    with pytest.raises(SERVER_ERROR[wire]) as caught:
        sdk.create(fake, _hello(wire))
    assert "the script ran out" in str(caught.value)
    (violation,) = fake.violations
    assert violation == Violation(
        request_index=1,
        rule="script_exhausted",
        message=violation.message,
        status=500,
    )
    assert [r.status for r in fake.requests] == [200, 500]


def test_requests_are_recorded_in_order(sdk: Sdk) -> None:
    fake = FakeAnthropic().script(text("one"), text("two"))
    sdk.create(fake, _a(_said("user", "first")))
    with pytest.raises(anthropic.BadRequestError):
        sdk.create(fake, _a(_said("assistant", "refused")))
    sdk.create(fake, _a(_said("user", "third")))
    requests = fake.requests
    assert [r.index for r in requests] == [0, 1, 2]
    assert [r.body["messages"][0]["content"] for r in requests] == ["first", "refused", "third"]
    assert [r.status for r in requests] == [200, 400, 200]
    assert [r.reply.get("content") for r in requests] == [
        [{"type": "text", "text": "one"}],
        None,
        [{"type": "text", "text": "two"}],
    ]
    assert all(isinstance(r, RecordedRequest) and r.path == "/v1/messages" for r in requests)
    # Headers of interest only: never the API key.
    assert requests[0].headers["content-type"] == "application/json"
    assert "anthropic-version" in requests[0].headers
    assert "x-api-key" not in requests[0].headers


def test_other_endpoints_answer_404(sdk: Sdk, genai_client: GenaiClient) -> None:
    fake = FakeAnthropic().script(text("unused"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    with pytest.raises(anthropic.NotFoundError):
        client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    responses = FakeResponses()
    chat = openai.OpenAI(api_key="x", max_retries=0, http_client=responses.http_client(HX))
    with pytest.raises(openai.NotFoundError):
        chat.responses.retrieve("resp_0001")
    with pytest.raises(openai.NotFoundError):
        chat.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    gemini = FakeGemini()
    genai_client.route.fake = gemini
    with pytest.raises(genai_errors.ClientError) as caught:
        genai_client.client.models.count_tokens(model=MODEL, contents="hi")
    assert caught.value.code == 404
    for made in (fake, responses, gemini):
        assert {v.rule for v in made.violations} == {"unknown_endpoint"}
    assert [(r.method, r.status) for r in responses.requests] == [("GET", 404), ("POST", 404)]
    assert fake.pending == 1
    client.close()
    chat.close()


def test_raw_replies_are_sent_as_given(sdk: Sdk) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    fake = FakeAnthropic().script(
        raw(overloaded, status=529),
        {
            "id": "msg_custom",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "text", "text": "hand-made"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    )
    with pytest.raises(anthropic.APIStatusError) as caught:
        sdk.create(fake, _a(_said("user", "hi")))
    assert caught.value.status_code == 529
    message = sdk.create(fake, _a(_said("user", "hi")))
    assert (message.id, message.content[0].text) == ("msg_custom", "hand-made")
    assert fake.violations == ()


def test_rules_are_data(sdk: Sdk) -> None:
    bad = _a(_said("user", "a"), _said("user", "b"))
    lenient = FakeAnthropic(rules=()).script(text("fine"))
    assert sdk.create(lenient, bad).content[0].text == "fine"

    def same_tools_as_first_request(
        body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
    ) -> Iterator[str]:
        if earlier and earlier[0].body.get("tools") != body.get("tools"):
            yield "tools: changed since the first request (the prompt cache breaks)"

    strict = FakeAnthropic(rules=(*ANTHROPIC_RULES, same_tools_as_first_request))
    strict.script(text("one"), text("two"))
    assert strict.rules[-1] is same_tools_as_first_request
    sdk.create(strict, _a(_said("user", "hi")))
    other_tools = [{**_A_TOOLS[0], "description": "Read a text file."}]
    with pytest.raises(anthropic.BadRequestError, match="same_tools_as_first_request"):
        sdk.create(strict, _a(_said("user", "hi"), tools=other_tools))
    assert [v.rule for v in strict.violations] == ["same_tools_as_first_request"]


def test_fake_for_every_target() -> None:
    kinds = {target: type(fake_for(target)) for target in TARGETS}
    assert kinds == {
        "anthropic": FakeAnthropic,
        "deepseek": FakeOpenAIChat,
        "gemini": FakeGemini,
        "gemini-interactions": FakeGeminiInteractions,
        "openai": FakeOpenAIChat,
        "responses": FakeResponses,
    }
    with pytest.raises(UnknownTargetError, match="valid targets"):
        fake_for("bedrock")


def test_genai_client_over_the_fakes_own_http_client() -> None:
    fake = FakeGemini().script(text("hi there"))
    client = genai.Client(
        api_key="x", http_options=genai_types.HttpOptions(httpx_client=fake.http_client(HX))
    )
    reply = client.models.generate_content(**_g(_g_user()))
    assert reply.text == "hi there"
    assert fake.requests[0].path.endswith(f"/models/{MODEL}:generateContent")
    client.close()


def test_async_clients() -> None:
    fake = FakeAnthropic().script(tool_calls(("read_file", {"path": "a"})))

    async def go() -> Any:
        client = anthropic.AsyncAnthropic(
            api_key="x", max_retries=0, http_client=fake.async_http_client(HX)
        )
        async with client:
            return await client.messages.create(**_a(_said("user", "hi")))

    message = asyncio.run(go())
    assert [(b.type, b.id) for b in message.content] == [("tool_use", "toolu_0001")]
    assert fake.violations == ()


def test_builders_refuse_what_they_cannot_send() -> None:
    with pytest.raises(UsageError, match="at least one"):
        tool_calls()
    with pytest.raises(UsageError, match="pair"):
        tool_calls("read_file")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="JSON-serializable"):
        tool_calls(("read_file", {"path": object()}))
    with pytest.raises(UsageError, match="HTTP status"):
        raw({}, status=99)
    with pytest.raises(UsageError, match="script text"):
        FakeAnthropic().script("Done.")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="credentials"):
        FakeAnthropic(record_headers=["X-Api-Key"])
    turn = tool_calls(("grep", {"pattern": "x"}), text="t", reasoning="r")
    assert isinstance(turn, Turn)
    assert (turn.text, turn.reasoning, [c.name for c in turn.calls]) == ("t", "r", ["grep"])


def test_importing_the_fakes_imports_no_sdk_or_httpx() -> None:
    code = (
        "import sys, contextchef.testing\n"
        "heavy = {'anthropic', 'openai', 'google', 'httpx', 'httpx2'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_a_tool_use_for_a_tool_no_longer_sent_is_accepted_by_default(sdk: Sdk) -> None:
    """Production accepts it (a withdrawn tool can still be called); the rule is opt-in."""
    fake = FakeAnthropic().script(text("ok"))
    payload = _a(
        _said("user", "hi"),
        {"role": "assistant", "content": [_use("t1", "grep")]},
        {"role": "user", "content": [_result("t1")]},
    )
    sdk.create(fake, payload)
    assert fake.violations == ()


def test_fakes_sharing_ids_never_repeat_a_call_id(sdk: Sdk) -> None:
    """A conversation moved between providers: one `Ids` keeps call ids unique."""
    shared = Ids()
    chat, gemini = FakeOpenAIChat(ids=shared), FakeGemini(ids=shared)
    chat.script(tool_calls(("read_file", {"path": "a"})))
    gemini.script(tool_calls(("read_file", {"path": "b"})))
    first = sdk.create(chat, _c(_said("user", "hi")))
    second = sdk.create(gemini, _g(_g_user()))
    (chat_call,) = first.choices[0].message.tool_calls
    (gemini_call,) = second.function_calls
    assert (chat_call.id, gemini_call.id) == ("call_0001", "call_0002")


def test_a_streaming_request_is_refused_and_uses_no_turn() -> None:
    """Fresh-user report: ``stream=True`` against FakeAnthropic / FakeOpenAIChat yielded
    nothing, silently used up a scripted turn and recorded no violation."""
    hx = httpx_for(openai)
    claude = FakeAnthropic().script(text("hi"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=claude.http_client(HX))
    with pytest.raises(anthropic.BadRequestError, match="does not stream"):
        client.messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "a"}], stream=True
        )
    assert [v.rule for v in claude.violations] == ["streaming_unsupported"]
    assert claude.pending == 1  # the turn is still queued
    chat = FakeOpenAIChat().script(text("hi"))
    oa = openai.OpenAI(api_key="x", max_retries=0, http_client=chat.http_client(hx))
    with pytest.raises(openai.BadRequestError, match="does not stream"):
        oa.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "a"}], stream=True
        )
    assert chat.pending == 1 and [v.rule for v in chat.violations] == ["streaming_unsupported"]
