"""Compiled payloads against the official provider SDKs.

For every target (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, Gemini
via google-genai), with and without deferred tools, on the demo catalog and on real
catalogs from ``shared/data/catalogs``:

1. the payload validates against the SDK's own request type (pydantic ``TypeAdapter``
   over the SDK TypedDicts, plus a recursive unknown-key check because pydantic ignores
   extra keys in TypedDicts; google-genai models forbid extra keys themselves; the check is
   `sdk_check.sdk_problems`, shared with the other test folders);
2. one request per case goes through the real SDK client over a mock HTTP transport:
   the request path and JSON body are what we compiled, and the SDK parses a tool call
   out of a provider-shaped response, which then passes contextchef's own gate.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import ToolUseBlock
from google import genai
from google.genai import types as genai_types
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from openai.types.responses import ResponseFunctionToolCall
from pydantic import ValidationError

from contextchef import (
    TARGETS,
    Allowed,
    Catalog,
    ContextChef,
    Message,
    ToolCall,
    ToolResult,
    assistant,
    load_catalog,
    load_demo_catalog,
    tool_results,
    user,
)
from sdk_check import _adapter, _drain, sdk_problems, tool_names, wire_api

MODEL = "test-model"
SYSTEM = "You are a careful coding agent."
FIRST_USER = "Read the file, then look the other thing up."
LAST_USER = "Thanks. Summarize what you found."
OK_TEXT = "first result text"
ERROR_TEXT = "upstream failed: HTTP 503"

# -- scenarios ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Use:
    """One tool the conversation calls: its registry key and valid arguments."""

    origin: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    """A catalog plus the two tools the history calls in parallel.

    ``first`` is pinned, so it is resident even with ``default_defer=True``; ``second``
    is deferred then, and reached through ``defer_execute``.
    """

    id: str
    catalog: str | None  # file name in shared/data/catalogs; None = demo catalog
    first: Use
    second: Use
    extra_tools: tuple[dict[str, Any], ...] = ()

    @property
    def pin(self) -> tuple[str, ...]:
        return (f"^{self.first.name}$", *(f"^{t['function']['name']}$" for t in self.extra_tools))


# A strict tool (OpenAI Chat shape) so the strict rewrite also meets the SDK types.
_STRICT_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Look up an order by id.",
        "parameters": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "include_items": {"type": "boolean"},
            },
            "required": ["order_id"],
        },
        "strict": True,
    },
}

SCENARIOS = (
    Scenario(
        id="demo",
        catalog=None,
        first=Use("builtin", "read_file", {"path": "README.md"}),
        # own name has a dot: its wire name is hashed
        second=Use("observability", "alerts.acknowledge", {"alert_id": "al-1"}),
        extra_tools=(_STRICT_TOOL,),
    ),
    Scenario(
        id="github",
        catalog="github.json",
        first=Use("github", "get_file_contents", {"owner": "octo", "repo": "hello"}),
        second=Use("github", "search_code", {"query": "def main"}),
    ),
    Scenario(
        id="sentry",
        # whoami has input_schema {}; create_uptime_monitor uses tuple-form items
        catalog="sentry.json",
        first=Use("sentry", "whoami", {}),
        second=Use("sentry", "find_organizations", {"query": "acme"}),
    ),
    Scenario(
        id="gemini-cli",
        # activate_skill declares "$schema"
        catalog="gemini-cli.json",
        first=Use("gemini-cli", "read_file", {"file_path": "src/app.py"}),
        second=Use("gemini-cli", "glob", {"pattern": "**/*.py"}),
    ),
)
SCENARIO_IDS = [s.id for s in SCENARIOS]
BY_ID = {s.id: s for s in SCENARIOS}


@functools.cache
def _catalog(path: str | None) -> Catalog:
    return load_demo_catalog() if path is None else load_catalog(path)


@dataclass(frozen=True)
class Session:
    chef: ContextChef
    scenario: Scenario
    defer: bool
    first_wire: str
    second_wire: str
    calls: tuple[ToolCall, ToolCall]


def _history(calls: tuple[ToolCall, ToolCall], assistant_text: str = "") -> list[Message]:
    first, second = calls
    return [
        user(FIRST_USER),
        assistant(assistant_text, [first, second]),
        tool_results(
            [
                ToolResult(call_id=first.id, name=first.name, content=OK_TEXT),
                ToolResult(call_id=second.id, name=second.name, content=ERROR_TEXT, is_error=True),
            ]
        ),
        user(LAST_USER),
    ]


_SESSIONS: dict[tuple[Path, str, bool, str], Session] = {}


def make_session(
    catalogs_dir: Path, scenario: Scenario, defer: bool, *, assistant_text: str = ""
) -> Session:
    """The session for a scenario, built once per run (compiling never mutates it)."""
    key = (catalogs_dir, scenario.id, defer, assistant_text)
    if key not in _SESSIONS:
        _SESSIONS[key] = _build_session(catalogs_dir, scenario, defer, assistant_text)
    return _SESSIONS[key]


def _build_session(
    catalogs_dir: Path, scenario: Scenario, defer: bool, assistant_text: str
) -> Session:
    path = None if scenario.catalog is None else str(catalogs_dir / scenario.catalog)
    chef = ContextChef(default_defer=defer, pin=scenario.pin)
    chef.register_catalog(_catalog(path))
    if scenario.extra_tools:
        chef.register_tools(scenario.extra_tools)
    chef.set_system_prompt(SYSTEM)
    view = chef.view
    first_key = (scenario.first.origin, scenario.first.name)
    second_key = (scenario.second.origin, scenario.second.name)
    # The scenario means what it says: first resident, second deferred iff defer.
    assert view.exposure[first_key] == "direct"
    assert view.exposure[second_key] == ("deferred" if defer else "direct")
    assert bool(view.meta_tools) is defer
    first_wire, second_wire = view.wire_names[first_key], view.wire_names[second_key]
    call_1 = ToolCall(id="call_1", name=first_wire, arguments=json.dumps(scenario.first.args))
    if defer:
        wrapped = {"tool_name": second_wire, "params": scenario.second.args}
        call_2 = ToolCall(id="call_2", name="defer_execute", arguments=json.dumps(wrapped))
    else:
        call_2 = ToolCall(id="call_2", name=second_wire, arguments=json.dumps(scenario.second.args))
    # The history is one the gate would have let through.
    for call in (call_1, call_2):
        assert isinstance(chef.check_tool_call(call), Allowed), call
    chef.set_history(_history((call_1, call_2), assistant_text))
    return Session(chef, scenario, defer, first_wire, second_wire, (call_1, call_2))


@pytest.fixture(params=SCENARIOS, ids=SCENARIO_IDS)
def scenario(request: pytest.FixtureRequest) -> Scenario:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=[True, False], ids=["deferred", "flat"])
def defer(request: pytest.FixtureRequest) -> bool:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def session(catalogs_dir: Path, scenario: Scenario, defer: bool) -> Session:
    return make_session(catalogs_dir, scenario, defer)


# -- target-neutral reading of a payload --------------------------------------------------


def conversation(target: str, payload: dict[str, Any]) -> dict[str, Any]:
    """System text, calls (id, name, args) and results (id, text, is_error or None)."""
    target = wire_api(target)
    calls: list[tuple[str, str, dict[str, Any]]] = []
    results: list[tuple[str, str, bool | None]] = []
    texts: list[tuple[str, str]] = []
    if target == "anthropic":
        system = "".join(b["text"] for b in payload["system"])
        for msg in payload["messages"]:
            for block in msg["content"]:
                if block["type"] == "text":
                    texts.append((msg["role"], block["text"]))
                elif block["type"] == "tool_use":
                    calls.append((block["id"], block["name"], block["input"]))
                elif block["type"] == "tool_result":
                    error = block.get("is_error", False)
                    results.append((block["tool_use_id"], block["content"], error))
    elif target == "gemini-interactions":
        system = payload["system_instruction"]
        for step in payload["input"]:
            role = "assistant" if step["type"] == "model_output" else "user"
            if step["type"] in ("user_input", "model_output"):
                texts += [(role, b["text"]) for b in step["content"] if b["type"] == "text"]
            elif step["type"] == "function_call":
                calls.append((step["id"], step["name"], step["arguments"]))
            elif step["type"] == "function_result":
                results.append((step["call_id"], step["result"], step.get("is_error", False)))
    elif target == "openai":
        system = payload["messages"][0]["content"]
        assert payload["messages"][0]["role"] == "system"
        for msg in payload["messages"][1:]:
            if msg["role"] == "tool":
                results.append((msg["tool_call_id"], msg["content"], None))
                continue
            if msg.get("content"):
                texts.append((msg["role"], msg["content"]))
            for c in msg.get("tool_calls", []):
                fn = c["function"]
                calls.append((c["id"], fn["name"], json.loads(fn["arguments"])))
    elif target == "responses":
        system = payload["instructions"]
        for item in payload["input"]:
            if item["type"] == "message":
                content = item["content"]
                if isinstance(content, str):
                    texts.append((item["role"], content))
                else:
                    texts += [(item["role"], part["text"]) for part in content]
            elif item["type"] == "function_call":
                calls.append((item["call_id"], item["name"], json.loads(item["arguments"])))
            elif item["type"] == "function_call_output":
                results.append((item["call_id"], item["output"], None))
    else:
        system = payload["config"]["system_instruction"]
        for content in payload["contents"]:
            role = "assistant" if content["role"] == "model" else content["role"]
            for part in content["parts"]:
                if "text" in part:
                    texts.append((role, part["text"]))
                elif "function_call" in part:
                    fc = part["function_call"]
                    calls.append((fc["id"], fc["name"], fc["args"]))
                elif "function_response" in part:
                    fr = part["function_response"]
                    ((key, text),) = fr["response"].items()
                    results.append((fr["id"], text, key == "error"))
    return {"system": system, "texts": texts, "calls": calls, "results": results}


# -- 1. payloads meet the SDK request types -------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_payload_matches_sdk_request_type(target: str, session: Session) -> None:
    chef = session.chef
    payload = chef.compile(target, model=MODEL).payload

    assert sdk_problems(target, payload) == []

    # The payload carries the session: every resident tool, in order, and the history.
    resident = [t.name for t in chef.view.resident]
    assert tool_names(target, payload) == resident
    assert session.first_wire in resident
    assert (session.second_wire in resident) is not session.defer
    assert ("defer_execute" in resident) is session.defer
    seen = conversation(target, payload)
    assert seen["system"] == SYSTEM
    assert seen["texts"] == [("user", FIRST_USER), ("user", LAST_USER)]
    assert seen["calls"] == [(c.id, c.name, json.loads(c.arguments)) for c in session.calls]
    expressible = target in ("anthropic", "gemini", "gemini-interactions")  # not OpenAI
    assert seen["results"] == [
        ("call_1", OK_TEXT, False if expressible else None),
        ("call_2", ERROR_TEXT, True if expressible else None),
    ]


def test_real_catalog_quirks_reach_the_payload(catalogs_dir: Path) -> None:
    """The awkward real schemas are really exercised by the flat-mode payloads above."""
    sentry = make_session(catalogs_dir, BY_ID["sentry"], defer=False).chef
    tools = {t["name"]: t for t in sentry.compile("anthropic").payload["tools"]}
    assert tools["sentry__whoami"]["input_schema"] == {"properties": {}, "type": "object"}
    monitor = json.dumps(tools["sentry__create_uptime_monitor"]["input_schema"])
    assert '"items": [' in monitor  # draft-07 tuple form, sent as written
    gemini_cli = make_session(catalogs_dir, BY_ID["gemini-cli"], defer=False).chef
    tools = {t["name"]: t for t in gemini_cli.compile("anthropic").payload["tools"]}
    assert "$schema" in tools["gemini-cli__activate_skill"]["input_schema"]
    demo = make_session(catalogs_dir, BY_ID["demo"], defer=False).chef
    wire = demo.view.wire_names[("observability", "alerts.acknowledge")]
    assert wire.startswith("observability__alerts_acknowledge_")
    chat = {t["function"]["name"]: t["function"] for t in demo.compile("openai").payload["tools"]}
    assert chat["lookup_order"]["strict"] is True


@pytest.mark.parametrize("target", ["anthropic", "openai"])
def test_request_type_validation_reaches_lazy_iterables(target: str) -> None:
    """pydantic validates ``Iterable[...]`` fields lazily; `sdk_problems` drains them."""
    bad = {"model": MODEL, "max_tokens": 1, "messages": [{"role": "user", "content": 3}]}
    validated = _adapter(target).validate_python(bad)  # no error yet: messages is lazy
    with pytest.raises(ValidationError):
        _drain(validated)


def test_genai_models_forbid_extras() -> None:
    """`sdk_problems` relies on google-genai rejecting unknown keys at every level."""
    for model in (
        genai_types.GenerateContentConfig,
        genai_types.Tool,
        genai_types.FunctionDeclaration,
        genai_types.Content,
        genai_types.Part,
        genai_types.FunctionCall,
        genai_types.FunctionResponse,
    ):
        assert model.model_config.get("extra") == "forbid", model


# Where to put one wrong key into a valid payload (deferred demo session), by location:
# (path to a dict inside the payload, the wrong key).
MUTATIONS: dict[str, dict[str, tuple[tuple[str | int, ...], str]]] = {
    "anthropic": {
        "top": ((), "temperatures"),
        "tool": (("tools", 0), "parameters"),
        "message": (("messages", 0), "name"),
        "block": (("messages", 2, "content", 1), "error"),
        "call": (("messages", 1, "content", 0), "arguments"),
    },
    "openai": {
        "top": ((), "max_output_tokens"),
        "tool": (("tools", 0, "function"), "input_schema"),
        "message": (("messages", 1), "is_error"),
        "block": (("messages", 3), "is_error"),
        "call": (("messages", 2, "tool_calls", 0, "function"), "args"),
    },
    "responses": {
        "top": ((), "messages"),
        "tool": (("tools", 0), "input_schema"),
        "message": (("input", 0), "name"),
        "block": (("input", 3), "is_error"),
        "call": (("input", 1), "tool_call_id"),
    },
    "gemini": {
        "top": ((), "system_instruction"),
        "tool": (("config", "tools", 0, "function_declarations", 0), "strict"),
        "message": (("contents", 0), "name"),
        "block": (("contents", 2, "parts", 1, "function_response"), "is_error"),
        "call": (("contents", 1, "parts", 0, "function_call"), "arguments"),
    },
    "gemini-interactions": {
        "top": ((), "contents"),
        "tool": (("tools", 0), "input_schema"),
        "message": (("input", 0), "role"),
        "block": (("input", 0, "content", 0), "is_error"),
        "call": (("input", 1), "args"),
    },
}


@pytest.mark.parametrize("location", ["top", "tool", "message", "block", "call"])
@pytest.mark.parametrize("target", TARGETS)
def test_sdk_check_catches_wrong_keys(target: str, location: str, catalogs_dir: Path) -> None:
    """The validation above is not vacuous: one wrong key anywhere is reported."""
    chef = make_session(catalogs_dir, BY_ID["demo"], defer=True).chef
    payload = chef.compile(target).payload
    assert sdk_problems(target, payload) == []
    if location != "tool":  # message entries are the session's record: edit a copy
        payload = copy.deepcopy(payload)
    path, key = MUTATIONS[wire_api(target)][location]
    node: Any = payload
    for step in path:
        node = node[step]
    assert isinstance(node, dict) and key not in node
    node[key] = True
    problems = sdk_problems(target, payload)
    assert problems != []
    assert key in "\n".join(problems)
    # the mutation did not leak into the session (tools are checked, messages were copied)
    assert sdk_problems(target, chef.compile(target).payload) == []


@pytest.mark.parametrize("target", TARGETS)
def test_assistant_text_beside_tool_calls_matches_sdk_types(
    target: str, catalogs_dir: Path
) -> None:
    text = "I'll read the file and search in parallel."
    chef = make_session(catalogs_dir, BY_ID["github"], defer=True, assistant_text=text).chef
    payload = chef.compile(target, model=MODEL).payload
    assert ("assistant", text) in conversation(target, payload)["texts"]
    assert sdk_problems(target, payload) == []


OUTPUT_CAP_TOKENS = 321
# Where each target's payload carries the output cap.
OUTPUT_CAP = {
    "anthropic": ("max_tokens",),
    "openai": ("max_completion_tokens",),
    "responses": ("max_output_tokens",),
    "gemini": ("config", "max_output_tokens"),
    "gemini-interactions": ("generation_config", "max_output_tokens"),
    "deepseek": ("max_tokens",),  # DeepSeek's own name for the cap
}


@pytest.mark.parametrize("target", TARGETS)
def test_output_cap_reaches_the_payload(target: str, catalogs_dir: Path) -> None:
    payload = (
        make_session(catalogs_dir, BY_ID["demo"], defer=True)
        .chef.compile(target, model=MODEL, max_tokens=OUTPUT_CAP_TOKENS)
        .payload
    )
    node: Any = payload
    for step in OUTPUT_CAP[target]:
        node = node.get(step) if isinstance(node, dict) else None
    assert node == OUTPUT_CAP_TOKENS
    assert sdk_problems(target, payload) == []


def test_deepseek_output_cap_uses_max_tokens() -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    payload = chef.compile("deepseek", max_tokens=100).payload
    assert payload["max_tokens"] == 100 and "max_completion_tokens" not in payload


# -- 2. one real SDK request per target over a mock transport -------------------------------


def _httpx_for(sdk: Any) -> Any:
    """The httpx flavour an SDK's client is built on (``httpx`` or its fork ``httpx2``)."""
    for cls in sdk.DefaultHttpxClient.__mro__:
        package = cls.__module__.partition(".")[0]
        if cls.__name__ == "Client" and package in ("httpx", "httpx2"):
            return importlib.import_module(package)
    raise AssertionError(f"cannot tell which httpx {sdk.__name__} uses")


HTTPX = _httpx_for(anthropic)
assert _httpx_for(openai) is HTTPX

REPLY_CALL_ID = "call_reply_1"
ENDPOINTS = {
    "anthropic": "/v1/messages",
    "openai": "/v1/chat/completions",
    "responses": "/v1/responses",
    "gemini": f"/models/{MODEL}:generateContent",
    "gemini-interactions": "/v1/interactions",
}


def provider_response(target: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A minimal provider reply in which the model calls `name` with `args`."""
    target = wire_api(target)
    text = json.dumps(args)
    if target == "anthropic":
        return {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "tool_use", "id": REPLY_CALL_ID, "name": name, "input": args}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    if target == "openai":
        call = {
            "id": REPLY_CALL_ID,
            "type": "function",
            "function": {"name": name, "arguments": text},
        }
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "logprobs": None,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": None,
                        "tool_calls": [call],
                    },
                }
            ],
        }
    if target == "responses":
        return {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": MODEL,
            "status": "completed",
            "output": [
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": REPLY_CALL_ID,
                    "name": name,
                    "arguments": text,
                    "status": "completed",
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "temperature": 1.0,
            "top_p": 1.0,
        }
    if target == "gemini-interactions":
        step = {"type": "function_call", "id": REPLY_CALL_ID, "name": name, "arguments": args}
        return {"id": "v1_1", "status": "requires_action", "model": MODEL, "steps": [step]}
    return {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"id": REPLY_CALL_ID, "name": name, "args": args}}],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "modelVersion": MODEL,
    }


class MockWire:
    """The mock HTTP transport under every SDK client: records requests, sends `reply`."""

    def __init__(self) -> None:
        self.reply: dict[str, Any] = {}
        self.requests: list[Any] = []

    def expect(self, reply: dict[str, Any]) -> None:
        self.reply, self.requests = reply, []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        return HTTPX.Response(200, json=self.reply)


@dataclass(frozen=True)
class Clients:
    wire: MockWire
    anthropic: anthropic.Anthropic
    openai: openai.OpenAI
    genai: genai.Client


@pytest.fixture(scope="module")
def clients() -> Iterator[Clients]:
    """Real SDK clients (made once: the genai client is slow to build) over one MockWire."""
    wire = MockWire()

    def http() -> Any:
        return HTTPX.Client(transport=HTTPX.MockTransport(wire))

    made = Clients(
        wire=wire,
        anthropic=anthropic.Anthropic(api_key="x", http_client=http(), max_retries=0),
        openai=openai.OpenAI(api_key="x", http_client=http(), max_retries=0),
        genai=genai.Client(api_key="x", http_options=genai_types.HttpOptions(httpx_client=http())),
    )
    yield made
    made.anthropic.close()
    made.openai.close()
    made.genai.close()


def send(clients: Clients, target: str, payload: dict[str, Any]) -> ToolCall:
    """Send `payload` with the real SDK; return the tool call it parsed from the reply."""
    target = wire_api(target)
    if target == "anthropic":
        message = clients.anthropic.messages.create(**payload)
        (block,) = message.content
        assert isinstance(block, ToolUseBlock), block
        return ToolCall(id=block.id, name=block.name, arguments=json.dumps(block.input))
    if target == "openai":
        completion = clients.openai.chat.completions.create(**payload)
        (call,) = completion.choices[0].message.tool_calls or []
        assert isinstance(call, ChatCompletionMessageFunctionToolCall), call
        fn = call.function
        return ToolCall(id=call.id, name=fn.name, arguments=fn.arguments)
    if target == "responses":
        response = clients.openai.responses.create(**payload)
        (item,) = response.output
        assert isinstance(item, ResponseFunctionToolCall), item
        return ToolCall(id=item.call_id, name=item.name, arguments=item.arguments)
    if target == "gemini-interactions":
        interaction = clients.genai.interactions.create(**payload)
        (step,) = interaction.steps or []
        assert step.type == "function_call", step
        return ToolCall(id=step.id, name=step.name, arguments=json.dumps(step.arguments))
    reply = clients.genai.models.generate_content(**payload)
    (fc,) = reply.function_calls or []
    assert isinstance(fc, genai_types.FunctionCall)
    assert fc.name is not None and fc.id is not None
    return ToolCall(id=fc.id, name=fc.name, arguments=json.dumps(fc.args or {}))


def _gemini_declarations(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for tool in body.get("tools", []) for d in tool["functionDeclarations"]]


def _schema_of(declaration: dict[str, Any]) -> Any:
    # google-genai forwards parameters_json_schema under its Python name (the API's JSON
    # mapping accepts both spellings); accept the camelCase one too.
    keys = {"parametersJsonSchema", "parameters_json_schema"} & declaration.keys()
    assert len(keys) == 1, declaration.keys()
    return declaration[keys.pop()]


@pytest.mark.parametrize("target", TARGETS)
def test_sdk_client_sends_payload_and_parses_tool_call(
    target: str, session: Session, clients: Clients
) -> None:
    chef = session.chef
    payload = chef.compile(target, model=MODEL, max_tokens=OUTPUT_CAP_TOKENS).payload
    expected = json.loads(json.dumps(payload))  # what must reach the wire
    # The model's next move: call the second tool (through defer_execute when deferred).
    args = session.scenario.second.args
    if session.defer:
        name, call_args = "defer_execute", {"tool_name": session.second_wire, "params": args}
    else:
        name, call_args = session.second_wire, args
    clients.wire.expect(provider_response(target, name, call_args))

    parsed = send(clients, target, payload)

    (request,) = clients.wire.requests
    assert request.method == "POST"
    assert request.url.path.endswith(ENDPOINTS[wire_api(target)]), request.url
    body = json.loads(request.content)
    if target == "gemini":
        assert body.keys() == {"contents", "tools", "systemInstruction", "generationConfig"}
        declarations = _gemini_declarations(body)
        compiled = expected["config"]["tools"][0]["function_declarations"]
        assert [d["name"] for d in declarations] == [d["name"] for d in compiled]
        for sent, ours in zip(declarations, compiled, strict=True):
            assert _schema_of(sent) == ours["parameters_json_schema"]
            assert "parameters" not in sent  # not the OpenAPI-subset Schema field
            assert sent["description"] == ours["description"]
        assert body["systemInstruction"]["parts"] == [{"text": SYSTEM}]
        assert body["generationConfig"] == {"maxOutputTokens": OUTPUT_CAP_TOKENS}
        roles = [c["role"] for c in body["contents"]]
        # Gemini needs alternating roles: the results and the next user text share a Content
        assert roles == ["user", "model", "user"]
        sent_calls = [p["functionCall"] for p in body["contents"][1]["parts"]]
        assert [(c["id"], c["name"], c["args"]) for c in sent_calls] == [
            (c.id, c.name, json.loads(c.arguments)) for c in session.calls
        ]
        sent_results = [
            p["functionResponse"] for p in body["contents"][2]["parts"] if "functionResponse" in p
        ]
        assert "text" in body["contents"][2]["parts"][-1]
        assert [(r["id"], r["response"]) for r in sent_results] == [
            ("call_1", {"output": OK_TEXT}),
            ("call_2", {"error": ERROR_TEXT}),
        ]
    else:
        # The SDK sends exactly the compiled payload: nothing renamed, dropped or added.
        assert body == expected

    # The SDK parsed the reply's tool call, and contextchef's gate accepts it.
    assert (parsed.id, parsed.name, parsed.parsed_arguments()) == (REPLY_CALL_ID, name, call_args)
    check = chef.check_tool_call(parsed)
    assert isinstance(check, Allowed), check
    assert check.wire_name == session.second_wire
    assert dict(check.arguments) == args
    assert check.via == ("defer_execute" if session.defer else None)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=SCENARIO_IDS)
def test_genai_sends_dict_payload_like_typed_objects(
    scenario: Scenario, catalogs_dir: Path, clients: Clients
) -> None:
    """The dict config goes on the wire exactly as the SDK's typed models would."""
    payload = make_session(catalogs_dir, scenario, defer=False).chef.compile("gemini").payload
    reply = provider_response("gemini", "x", {})
    clients.wire.expect(reply)
    send(clients, "gemini", payload)
    (sent_dicts,) = clients.wire.requests
    typed = {
        "model": payload["model"],
        "contents": [genai_types.Content.model_validate(c) for c in payload["contents"]],
        "config": genai_types.GenerateContentConfig.model_validate(payload["config"]),
    }
    clients.wire.expect(reply)
    send(clients, "gemini", typed)
    (sent_models,) = clients.wire.requests
    body = json.loads(sent_dicts.content)
    assert body == json.loads(sent_models.content)
    assert len(_gemini_declarations(body)) == len(
        payload["config"]["tools"][0]["function_declarations"]
    )
