"""`provider_search`: scripted turns carrying the provider's own tool search.

Each reply goes through the official SDK client (parsed into the SDK's own block and item
types), is ingested by a ContextChef session, and the next request of the session passes
the fake's rules. Shapes: /work/shared/research/provider-native-disclosure.md 1.2 (Anthropic
server search) and 2.1 (Responses hosted search).
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path
from typing import Any

import anthropic
import google.genai as genai
import openai
import pytest
from anthropic.types import (
    ServerToolUseBlock,
    ToolSearchToolResultBlock,
    ToolSearchToolResultErrorCode,
    ToolSearchToolResultErrorObject,
)
from anthropic.types.beta import BetaServerToolUseBlock, BetaToolSearchToolResultBlock
from google.genai import types as genai_types
from openai.types.responses import ResponseToolSearchCall, ResponseToolSearchOutputItem

from contextchef import ContextChef, UsageError, tool_results, user
from contextchef.testing import (
    SEARCH_ERROR_CODES,
    FakeAnthropic,
    FakeGemini,
    FakeOpenAIChat,
    FakeResponses,
    ProviderSearch,
    Turn,
    Violation,
    httpx_for,
    provider_search,
    text,
    tool_calls,
)
from contextchef.tools._catalogs import load_catalog

HX = httpx_for(anthropic)
OX = httpx_for(openai)
SONNET = "claude-sonnet-4-5"
GPT = "gpt-5.4"
WEATHER = ("get_weather", {"city": "Paris"})
ISSUE = {"owner": "acme", "repo": "app", "title": "Crash"}


def read_file(path: str) -> str:
    """Read a file."""
    return "nothing"


def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


def get_time(city: str) -> str:
    """The local time in a city."""
    return "noon"


def _chef() -> ContextChef:
    """read_file loaded; get_weather and get_time deferred."""
    chef = ContextChef(defer=["get_*"])
    chef.register_tools([read_file, get_weather, get_time])
    chef.set_history([user("Weather in Paris?")])
    return chef


def _github_chef(catalogs_dir: Path) -> ContextChef:
    """The GitHub catalog deferred (namespaces on Responses), the filesystem loaded."""
    chef = ContextChef(defer=["github__*"])
    for name in ("mcp-filesystem", "github"):
        tools = load_catalog(catalogs_dir / f"{name}.json").tools
        chef.register_tools(tools, handlers={t.name: lambda **_: "#7" for t in tools})
    chef.set_history([user("File the crash.")])
    return chef


def _anthropic_loop(
    chef: ContextChef, fake: FakeAnthropic, strategy: str, *, beta: bool = False
) -> list[Any]:
    """Run the agent loop to its end; the SDK's parsed messages, in order."""
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    create = client.beta.messages.create if beta else client.messages.create
    messages = []
    while fake.pending:
        request = chef.compile("anthropic", model=SONNET, strategy=strategy)
        message = create(**request.payload, extra_headers=request.headers)
        messages.append(message)
        calls = chef.ingest(message)
        if calls:
            chef.append(tool_results([chef.execute(c).result for c in calls]))
    client.close()
    return messages


def _responses_loop(chef: ContextChef, fake: FakeResponses) -> list[Any]:
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(OX))
    responses = []
    while fake.pending:
        request = chef.compile("responses", model=GPT, strategy="openai-native")
        response = client.responses.create(**request.payload)
        responses.append(response)
        calls = chef.ingest(response)
        if calls:
            chef.append(tool_results([chef.execute(c).result for c in calls]))
    client.close()
    return responses


# -- Anthropic server tool search ----------------------------------------------------------


@pytest.mark.parametrize("beta", [False, True], ids=["messages", "beta.messages"])
def test_a_bm25_search_then_a_call_round_trips(beta: bool) -> None:
    chef = _chef()
    fake = FakeAnthropic().script(
        provider_search("get_weather", query="weather", then=tool_calls(WEATHER)),
        text("Sunny."),
    )
    first, second = _anthropic_loop(chef, fake, "anthropic-native", beta=beta)
    assert fake.violations == ()
    use, result, call = first.content
    assert (call.type, call.name) == ("tool_use", "get_weather")
    assert isinstance(use, BetaServerToolUseBlock if beta else ServerToolUseBlock)
    assert isinstance(result, BetaToolSearchToolResultBlock if beta else ToolSearchToolResultBlock)
    assert fake.requests[0].reply["content"] == [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_0001",
            "name": "tool_search_tool_bm25",
            "input": {"query": "weather"},
        },
        {
            "type": "tool_search_tool_result",
            "tool_use_id": "srvtoolu_0001",
            "content": {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
            },
        },
        {"type": "tool_use", "id": "toolu_0001", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    assert first.stop_reason == "tool_use" and second.content[0].text == "Sunny."
    sent = fake.requests[1].body["messages"]
    assert sent[1]["content"][:2] == fake.requests[0].reply["content"][:2]  # replayed as is
    assert sent[2]["content"][0]["tool_use_id"] == "toolu_0001"  # only the client call answered
    assert sent[2]["content"][0]["content"] == "sunny in Paris"


def test_the_regex_variant_sends_a_pattern_made_from_the_names() -> None:
    chef = _chef()
    fake = FakeAnthropic().script(
        provider_search("get_weather", "get_time", then="Both found."), text("ok")
    )
    first, _ = _anthropic_loop(chef, fake, "anthropic-native-regex")
    use, result, answer = first.content
    assert (use.name, use.input) == ("tool_search_tool_regex", {"pattern": "get_weather|get_time"})
    assert [r.tool_name for r in result.content.tool_references] == ["get_weather", "get_time"]
    assert answer.text == "Both found." and first.stop_reason == "end_turn"
    assert fake.violations == ()


def test_two_searches_and_reasoning_in_one_turn() -> None:
    """Reasoning first, then each search in order (the inner `then` searches second)."""
    chef = _chef()
    turn = provider_search(
        "get_time",
        query="clock",
        then=provider_search("get_weather", then=tool_calls(WEATHER, reasoning="")),
    )
    assert [s.found for s in turn.searches] == [("get_time",), ("get_weather",)]
    fake = FakeAnthropic().script(turn, text("Sunny."))
    first, _ = _anthropic_loop(chef, fake, "anthropic-native")
    kinds = [(b.type, getattr(b, "id", getattr(b, "tool_use_id", None))) for b in first.content]
    assert kinds == [
        ("thinking", None),
        ("server_tool_use", "srvtoolu_0001"),
        ("tool_search_tool_result", "srvtoolu_0001"),
        ("server_tool_use", "srvtoolu_0002"),
        ("tool_search_tool_result", "srvtoolu_0002"),
        ("tool_use", "toolu_0001"),
    ]
    assert first.content[1].input == {"query": "clock"}
    assert first.content[3].input == {"query": "get_weather"}
    assert fake.violations == ()


def test_a_search_that_finds_nothing_lists_no_references() -> None:
    chef = _chef()
    fake = FakeAnthropic().script(provider_search(query="stock price", then="No such tool."))
    (message,) = _anthropic_loop(chef, fake, "anthropic-native")
    assert message.content[1].content.tool_references == []
    assert fake.violations == ()


def test_a_search_error_is_replayed_and_the_loop_goes_on() -> None:
    chef = _chef()
    fake = FakeAnthropic().script(
        provider_search(query="[weather", error="invalid_tool_input", then="Bad pattern."),
        text("ok"),
    )
    first, _ = _anthropic_loop(chef, fake, "anthropic-native-regex")
    _, result, _ = first.content
    assert isinstance(result.content, ToolSearchToolResultErrorObject)
    assert fake.requests[0].reply["content"][1]["content"] == {
        "type": "tool_search_tool_result_error",
        "error_code": "invalid_tool_input",
    }
    assert (
        fake.requests[1].body["messages"][1]["content"][1] == fake.requests[0].reply["content"][1]
    )
    assert fake.violations == ()


def test_the_error_codes_are_the_sdks() -> None:
    assert set(SEARCH_ERROR_CODES) == set(typing.get_args(ToolSearchToolResultErrorCode))


# -- Responses hosted tool search ----------------------------------------------------------


def test_a_hosted_search_loads_a_flat_deferred_function() -> None:
    chef = _chef()
    fake = FakeResponses().script(
        provider_search("get_weather", then=tool_calls(WEATHER)), text("Sunny.")
    )
    first, second = _responses_loop(chef, fake)
    assert fake.violations == ()
    call, output, function_call = first.output
    assert isinstance(call, ResponseToolSearchCall) and isinstance(
        output, ResponseToolSearchOutputItem
    )
    declared = next(t for t in fake.requests[0].body["tools"] if t.get("name") == "get_weather")
    assert fake.requests[0].reply["output"][:2] == [
        {
            "type": "tool_search_call",
            "id": "tsc_0001",
            "call_id": None,
            "execution": "server",
            "status": "completed",
            "arguments": {"paths": ["get_weather"]},
        },
        {
            "type": "tool_search_output",
            "id": "tso_0001",
            "call_id": None,
            "execution": "server",
            "status": "completed",
            "tools": [declared],
        },
    ]
    assert function_call.namespace == "get_weather" and function_call.call_id == "call_0001"
    assert second.output_text == "Sunny."
    kinds = [i.get("type") for i in fake.requests[1].body["input"]]
    assert kinds[1:5] == [
        "tool_search_call",
        "tool_search_output",
        "function_call",
        "function_call_output",
    ]


def test_a_hosted_search_loads_each_namespace_once(catalogs_dir: Path) -> None:
    chef = _github_chef(catalogs_dir)
    tools = chef.compile("responses", model=GPT, strategy="openai-native").payload["tools"]
    homes = {f["name"]: t["name"] for t in tools if t["type"] == "namespace" for f in t["tools"]}
    space = homes["github__create_issue"]
    neighbour = next(n for n, s in homes.items() if s == space and n != "github__create_issue")
    call = ("github__create_issue", ISSUE)
    fake = FakeResponses().script(
        provider_search("github__create_issue", neighbour, then=tool_calls(call)),
        text("Filed #7."),
    )
    first, _ = _responses_loop(chef, fake)
    assert fake.violations == ()
    search, output, function_call = first.output
    assert search.arguments == {"paths": [space]}
    assert [t.type for t in output.tools] == ["namespace"]
    entry = next(t for t in tools if t.get("name") == space)
    assert fake.requests[0].reply["output"][1]["tools"] == [entry]
    assert function_call.namespace == space
    assert json.loads(function_call.arguments) == ISSUE


def test_the_reply_is_the_same_bytes_on_every_run() -> None:
    def run() -> list[Any]:
        fake = FakeResponses().script(provider_search("get_weather", then=tool_calls(WEATHER)))
        _responses_loop(_chef(), fake)
        return [r.reply for r in fake.requests]

    assert json.dumps(run()) == json.dumps(run())


# -- what a fake cannot honour: HTTP 500, a Violation naming the tool, the turn kept -------


def _refused(fake: Any, send: Any, fragment: str) -> Violation:
    with pytest.raises((anthropic.InternalServerError, openai.InternalServerError)) as info:
        send()
    (violation,) = fake.violations
    assert violation.rule == "provider_search" and violation.status == 500
    assert fragment in violation.message and fragment in str(info.value)
    assert fake.pending == 1  # fix the script or the request, and send again
    return violation


@pytest.mark.parametrize(
    ("name", "how"),
    [
        ("read_file", "declares it loaded, without defer_loading"),
        ("get_wether", "does not declare it"),
    ],
)
def test_a_found_tool_the_request_does_not_defer_is_refused(name: str, how: str) -> None:
    chef = _chef()
    fake = FakeAnthropic().script(provider_search(name))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    payload = chef.compile("anthropic", model=SONNET, strategy="anthropic-native").payload
    violation = _refused(fake, lambda: client.messages.create(**payload), repr(name))
    assert violation.message == (
        f"provider_search found {name!r}, but the request {how}; a provider search finds "
        "only tools declared with defer_loading: true (here: get_time, get_weather)"
    )
    client.close()


def test_a_search_without_a_server_search_tool_is_refused() -> None:
    chef = _chef()
    fake = FakeAnthropic().script(provider_search("get_weather"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    payload = chef.compile("anthropic", model=SONNET, strategy="client").payload
    _refused(fake, lambda: client.messages.create(**payload), "needs a server search tool")
    client.close()


@pytest.mark.parametrize(
    ("strategy", "fragment"),
    [
        ("openai-native-client", 'runs on the client (execution: "client")'),
        ("client", 'declares no {"type": "tool_search"} tool'),
    ],
)
def test_a_responses_search_needs_hosted_tool_search(strategy: str, fragment: str) -> None:
    chef = _chef()
    fake = FakeResponses().script(provider_search("get_weather"))
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(OX))
    payload = chef.compile("responses", model=GPT, strategy=strategy).payload
    _refused(fake, lambda: client.responses.create(**payload), fragment)
    client.close()


def test_a_responses_search_for_an_undeferred_tool_is_refused() -> None:
    chef = _chef()
    fake = FakeResponses().script(provider_search("read_file"))
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(OX))
    payload = chef.compile("responses", model=GPT, strategy="openai-native").payload
    _refused(fake, lambda: client.responses.create(**payload), "'read_file'")
    client.close()


def test_responses_has_no_search_error() -> None:
    chef = _chef()
    fake = FakeResponses().script(provider_search(query="x", error="unavailable"))
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(OX))
    payload = chef.compile("responses", model=GPT, strategy="openai-native").payload
    _refused(fake, lambda: client.responses.create(**payload), "no hosted tool search error")
    client.close()


def test_chat_and_gemini_have_no_provider_search() -> None:
    chef = _chef()
    chat = FakeOpenAIChat().script(provider_search("get_weather"))
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=chat.http_client(OX))
    payload = chef.compile("openai", model="gpt-4o").payload
    _refused(chat, lambda: client.chat.completions.create(**payload), "Chat Completions has no")
    client.close()
    gemini = FakeGemini().script(provider_search("get_weather"))
    options = genai_types.HttpOptions(httpx_client=gemini.http_client(httpx_for(genai)))
    google = genai.Client(api_key="x", http_options=options)
    payload = chef.compile("gemini", model="gemini-2.5-flash").payload
    with pytest.raises(genai.errors.ServerError):
        google.models.generate_content(**payload)
    (violation,) = gemini.violations
    assert violation.rule == "provider_search" and "Gemini" in violation.message


# -- the constructor -------------------------------------------------------------------------


def test_then_keeps_its_text_calls_and_reasoning() -> None:
    turn = provider_search("a", "b", query="q", then=tool_calls(("a", {}), text="t", reasoning="r"))
    assert turn.searches == (ProviderSearch(found=("a", "b"), query="q"),)
    assert (turn.text, [c.name for c in turn.calls], turn.reasoning) == ("t", ["a"], "r")
    assert provider_search("a") == Turn(searches=(ProviderSearch(found=("a",), query=None),))
    assert provider_search("a", then="done").text == "done"


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        (("",), {}, "found tool 0 must be a non-empty wire name"),
        ((7,), {}, "found tool 0"),
        ((), {}, "finding nothing needs the query="),
        (("a",), {"query": ""}, "query must be a non-empty string"),
        (("a",), {"then": {"text": "x"}}, "then must be a turn"),
        ((), {"query": "x", "error": "oops"}, "error must be one of execution_time_exceeded"),
        (("a",), {"error": "unavailable"}, "finds nothing; drop ('a',)"),
    ],
)
def test_bad_arguments_raise_usage_error(
    args: tuple[Any, ...], kwargs: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(fragment)):
        provider_search(*args, **kwargs)
