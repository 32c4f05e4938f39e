"""The provider-native tool-deferral rules (`contextchef.testing._native`).

Each rule is called on request dicts: one body that passes, and bodies that fail with the
expected message. Then one compliant request per provider goes through the official SDK
client to the fake (and the SDK's own request types), and one broken request comes back as
a 400 naming the rule. Request shapes follow /work/shared/research/provider-native-disclosure.md
sections 1.1-1.4 and 2.1.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anthropic
import openai
import pytest

from contextchef.testing import (
    ANTHROPIC_NATIVE_RULES,
    ANTHROPIC_RULES,
    INLINE_TOOLS_BETA,
    MCP_CLIENT_BETA,
    RESPONSES_NATIVE_RULES,
    RESPONSES_RULES,
    FakeAnthropic,
    FakeResponses,
    anthropic_defer_loading_supported,
    anthropic_deferred_no_cache_control,
    anthropic_not_all_deferred,
    anthropic_search_tools_valid,
    anthropic_server_tool_use_not_answered,
    anthropic_system_message_fields,
    anthropic_tool_change_rules,
    anthropic_tool_reference_content,
    httpx_for,
    responses_deferred_needs_search,
    responses_namespaced_calls,
    responses_search_items_paired,
    responses_search_tool_valid,
    text,
)
from sdk_check import sdk_problems

HX = httpx_for(anthropic)
Rule = Callable[..., Iterable[str]]

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
BM25 = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
REGEX = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
CACHE = {"type": "ephemeral"}
INLINE = {"anthropic-beta": INLINE_TOOLS_BETA}


def problems(rule: Rule, body: Mapping[str, Any], **kw: Any) -> list[str]:
    return list(rule(body, (), **kw))


def one_problem(rule: Rule, body: Mapping[str, Any], fragment: str, **kw: Any) -> str:
    """The rule's only message, which must contain `fragment`."""
    found = problems(rule, body, **kw)
    assert len(found) == 1, found
    assert fragment in found[0], found[0]
    return found[0]


# -- Anthropic request bodies ------------------------------------------------------------------


def tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": f"{name} tool", "input_schema": SCHEMA, **extra}


def server_search_body(model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    """A turn revealed by server-side BM25 search, then the revealed tool called."""
    return {
        "model": model,
        "max_tokens": 256,
        "tools": [tool("get_time"), tool("get_weather", defer_loading=True), dict(BM25)],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_01",
                        "name": "tool_search_tool_bm25",
                        "input": {"query": "weather"},
                    },
                    {
                        "type": "tool_search_tool_result",
                        "tool_use_id": "srvtoolu_01",
                        "content": {
                            "type": "tool_search_tool_search_result",
                            "tool_references": [
                                {"type": "tool_reference", "tool_name": "get_weather"}
                            ],
                        },
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "get_weather",
                        "input": {"q": "Paris"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "sunny"}],
            },
        ],
    }


def client_search_body(model: str = "claude-opus-4-8") -> dict[str, Any]:
    """A custom search tool whose tool_result reveals a deferred tool by tool_reference."""
    reveal = [{"type": "tool_reference", "tool_name": "get_weather"}]
    return {
        "model": model,
        "max_tokens": 256,
        "tools": [tool("find_tools"), tool("get_weather", defer_loading=True)],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "find_tools",
                        "input": {"q": "weather"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": reveal}],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_02",
                        "name": "get_weather",
                        "input": {"q": "Paris"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_02", "content": "sunny"}],
            },
        ],
    }


def tool_change_body(
    *blocks: dict[str, Any], tools: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A system message with tool changes after the user turn (Opus 4.8 takes them)."""
    return {
        "model": "claude-opus-4-8",
        "max_tokens": 256,
        "tools": [tool("get_time")] if tools is None else tools,
        "messages": [
            {"role": "user", "content": "Hello"},
            {"role": "system", "content": list(blocks)},
        ],
    }


def add_definition(definition: dict[str, Any], **block: Any) -> dict[str, Any]:
    return {
        "type": "tool_addition",
        "tool": {"type": "tool_definition", "definition": definition},
        **block,
    }


def test_the_rules_are_wired_in() -> None:
    assert set(ANTHROPIC_NATIVE_RULES) <= set(ANTHROPIC_RULES)
    assert set(RESPONSES_NATIVE_RULES) <= set(RESPONSES_RULES)
    assert len(ANTHROPIC_NATIVE_RULES) == 7 and len(RESPONSES_NATIVE_RULES) == 5
    assert FakeAnthropic().rules == ANTHROPIC_RULES


@pytest.mark.parametrize(
    "body", [server_search_body(), client_search_body()], ids=["server", "client"]
)
def test_valid_anthropic_bodies_pass_every_rule(body: dict[str, Any]) -> None:
    for rule in ANTHROPIC_RULES:
        assert problems(rule, body) == [], rule.__name__


# -- rule 1: defer_loading only where tool search exists ---------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        "claude-sonnet-4-5",
        "claude-sonnet-4-6",
        "claude-haiku-4-5-20251001",
        "claude-opus-4-5",
        "claude-opus-4-8",
        "claude-opus-5",
        "claude-sonnet-5",
        "claude-haiku-5-5",
        "claude-fable-5-1",
        "claude-mythos-5",
        "anthropic.claude-opus-4-6-v1:0",
        "m",
        "gpt-x",
    ],
)
def test_defer_loading_on_a_tool_search_model_or_unknown_name(model: str) -> None:
    assert problems(anthropic_defer_loading_supported, server_search_body(model)) == []


@pytest.mark.parametrize(
    "model",
    [
        "claude-opus-4-1-20250805",
        "claude-opus-4-20250514",
        "claude-sonnet-4-20250514",
        "claude-sonnet-4-0",
        "claude-3-7-sonnet-latest",
        "claude-3-5-haiku-20241022",
        "claude-3-opus-20240229",
    ],
)
def test_defer_loading_on_an_older_model_is_refused(model: str) -> None:
    found = problems(anthropic_defer_loading_supported, server_search_body(model))
    assert found == [
        f"tools.1: tool search is not supported on model {model}: a tool with defer_loading "
        "('get_weather') could never be revealed",
        f"tools.2: tool search is not supported on model {model}",
    ]


def test_no_deferral_is_fine_on_any_model() -> None:
    body = {"model": "claude-opus-4-1", "tools": [tool("get_time")]}
    assert problems(anthropic_defer_loading_supported, body) == []


# -- rule 2: not everything deferred; the search tool never ------------------------------------


def test_a_search_tool_alone_keeps_the_tools_from_being_all_deferred() -> None:
    body = {"tools": [tool("a", defer_loading=True), dict(BM25)]}
    assert problems(anthropic_not_all_deferred, body) == []


def test_all_tools_deferred_is_refused() -> None:
    body = {"tools": [tool("a", defer_loading=True), tool("b", defer_loading=True)]}
    message = one_problem(anthropic_not_all_deferred, body, "All tools cannot be deferred.")
    assert message == (
        "tools: At least one tool must have defer_loading=false. All tools cannot be deferred."
    )


def test_the_search_tool_itself_is_never_deferred() -> None:
    body = {"tools": [tool("a"), {**BM25, "defer_loading": True}]}
    one_problem(
        anthropic_not_all_deferred,
        body,
        "tools.1: the tool search tool 'tool_search_tool_bm25' cannot have defer_loading=true",
    )


def test_a_toolset_deferring_all_its_members_counts_as_deferred() -> None:
    toolset = {
        "type": "mcp_toolset",
        "mcp_server_name": "crm",
        "default_config": {"defer_loading": True},
    }
    one_problem(anthropic_not_all_deferred, {"tools": [toolset]}, "All tools cannot be deferred")
    opted_out = {**toolset, "configs": {"list_orders": {"defer_loading": False}}}
    assert problems(anthropic_not_all_deferred, {"tools": [opted_out]}) == []


# -- rules 4 and 5: cache_control --------------------------------------------------------------


def test_cache_control_on_a_loaded_tool_is_fine() -> None:
    body = server_search_body()
    body["tools"][0]["cache_control"] = CACHE
    assert problems(anthropic_deferred_no_cache_control, body) == []


def test_cache_control_on_a_deferred_tool_is_refused() -> None:
    body = server_search_body()
    body["tools"][1]["cache_control"] = CACHE
    message = one_problem(anthropic_deferred_no_cache_control, body, "tools.1: ")
    assert message == (
        'tools.1: Tool "get_weather" cannot both defer_loading=true cache_control set. '
        "Tools defer_loading cannot use prompt caching."
    )


def test_cache_control_on_a_toolset_whose_members_defer_is_refused() -> None:
    toolset = {
        "type": "mcp_toolset",
        "mcp_server_name": "crm",
        "configs": {"list_orders": {"defer_loading": True}},
        "cache_control": CACHE,
    }
    body = {"tools": [tool("a"), toolset]}
    one_problem(anthropic_deferred_no_cache_control, body, "tools.1: toolset 'crm' defers some")


def test_at_most_four_cache_breakpoints() -> None:
    body = server_search_body()
    body["system"] = [{"type": "text", "text": "Be brief.", "cache_control": CACHE}]
    body["tools"][0]["cache_control"] = CACHE
    body["messages"][1]["content"][2]["cache_control"] = CACHE
    body["messages"][2]["content"][0]["cache_control"] = CACHE
    assert problems(anthropic_deferred_no_cache_control, body) == []
    body["cache_control"] = CACHE  # automatic caching takes a breakpoint too
    message = one_problem(anthropic_deferred_no_cache_control, body, "A maximum of 4 blocks")
    assert message == (
        "A maximum of 4 blocks with cache_control may be provided. Found 5 (cache_control, "
        "system.0, tools.0, messages.1.content.2, messages.2.content.0)."
    )


def test_nested_and_tool_change_breakpoints_count() -> None:
    body = tool_change_body(
        add_definition(tool("a", cache_control=CACHE)),
        {
            "type": "tool_addition",
            "tool": {"type": "tool_reference", "name": "get_time"},
            "cache_control": CACHE,
        },
    )
    body["tools"][0]["cache_control"] = CACHE
    body["messages"][0]["content"] = [
        {"type": "text", "text": "hi", "cache_control": CACHE},
        {"type": "text", "text": "there", "cache_control": CACHE},
    ]
    one_problem(anthropic_deferred_no_cache_control, body, "Found 5 (tools.0, messages.0.content.0")


# -- rules 6 and 14: the search tools' shapes, the deferred-tool limit -------------------------


@pytest.mark.parametrize(
    "search",
    [
        BM25,
        REGEX,
        {"type": "tool_search_tool_bm25", "name": "tool_search_tool_bm25"},
        {"type": "tool_search_tool_regex", "name": "tool_search_tool_regex", "strict": True},
        {**BM25, "cache_control": CACHE, "allowed_callers": ["direct"], "defer_loading": False},
    ],
)
def test_valid_search_tools(search: dict[str, Any]) -> None:
    assert problems(anthropic_search_tools_valid, {"tools": [tool("a"), search]}) == []


@pytest.mark.parametrize(
    ("search", "fragment"),
    [
        (
            {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_bm25"},
            "tools.1.name: a 'tool_search_tool_regex_20251119' tool must be named "
            "'tool_search_tool_regex'",
        ),
        (
            {"type": "tool_search_tool_bm25_20991231", "name": "tool_search_tool_bm25"},
            "tools.1.type: unknown tool search type",
        ),
        ({**BM25, "description": "search"}, "tools.1.description: Extra inputs are not permitted"),
    ],
)
def test_malformed_search_tools(search: dict[str, Any], fragment: str) -> None:
    one_problem(anthropic_search_tools_valid, {"tools": [tool("a"), search]}, fragment)


def test_at_most_ten_thousand_deferred_tools() -> None:
    deferred = [{"name": f"t{n}", "defer_loading": True} for n in range(10_000)]
    assert problems(anthropic_search_tools_valid, {"tools": [dict(BM25), *deferred]}) == []
    more = [*deferred, {"name": "t10000", "defer_loading": True}]
    one_problem(
        anthropic_search_tools_valid,
        {"tools": [dict(BM25), *more]},
        "tools: 10001 tools have defer_loading=true; at most 10000",
    )


# -- rule 6: server tool calls are not answered by the client ----------------------------------


def test_a_paired_server_search_passes() -> None:
    assert problems(anthropic_server_tool_use_not_answered, server_search_body()) == []


def test_a_tool_result_for_a_server_tool_use_is_refused() -> None:
    body = server_search_body()
    body["messages"][2]["content"].insert(
        0, {"type": "tool_result", "tool_use_id": "srvtoolu_01", "content": "done"}
    )
    one_problem(
        anthropic_server_tool_use_not_answered,
        body,
        "messages.2.content.0: tool_result answers 'srvtoolu_01', the server_tool_use at "
        "messages.1.content.0",
    )


def test_an_unpaired_tool_search_call_is_refused() -> None:
    body = server_search_body()
    del body["messages"][1]["content"][1]
    one_problem(
        anthropic_server_tool_use_not_answered,
        body,
        "messages.1.content.0: server_tool_use 'srvtoolu_01' has no tool_search_tool_result",
    )


def test_a_search_result_before_its_call_is_refused() -> None:
    body = server_search_body()
    content = body["messages"][1]["content"]
    content[0], content[1] = content[1], content[0]
    found = problems(anthropic_server_tool_use_not_answered, body)
    assert len(found) == 2
    assert (
        "messages.1.content.0: tool_search_tool_result for 'srvtoolu_01' follows no server_tool_use"
        in found[0]
    )
    assert (
        "messages.1.content.1: server_tool_use 'srvtoolu_01' has no tool_search_tool_result"
        in found[1]
    )


def test_each_search_variant_takes_its_own_input_key() -> None:
    body = server_search_body()
    body["tools"][2] = dict(REGEX)
    use = body["messages"][1]["content"][0]
    use["name"] = "tool_search_tool_regex"
    message = one_problem(
        anthropic_server_tool_use_not_answered, body, "messages.1.content.0.input"
    )
    assert (
        message == "messages.1.content.0.input: tool_search_tool_regex takes 'pattern', not 'query'"
    )
    use["input"] = {"pattern": "weath.*", "limit": 3}
    assert problems(anthropic_server_tool_use_not_answered, body) == []
    use["name"], body["tools"][2] = "tool_search_tool_bm25", dict(BM25)
    one_problem(
        anthropic_server_tool_use_not_answered,
        body,
        "tool_search_tool_bm25 takes 'query', not 'pattern'",
    )


def test_other_server_tools_need_no_search_result() -> None:
    body = server_search_body()
    body["messages"][1]["content"].insert(
        0,
        {
            "type": "server_tool_use",
            "id": "srvtoolu_02",
            "name": "web_search",
            "input": {"query": "x"},
        },
    )
    assert problems(anthropic_server_tool_use_not_answered, body) == []


# -- rule 7: tool_reference content ------------------------------------------------------------


def test_tool_reference_content_passes() -> None:
    assert problems(anthropic_tool_reference_content, client_search_body()) == []


def test_an_empty_tool_result_content_list_is_refused() -> None:
    body = client_search_body()
    body["messages"][2]["content"][0]["content"] = []
    one_problem(
        anthropic_tool_reference_content,
        body,
        "messages.2.content.0.content: a tool_result's content list cannot be empty",
    )
    body["messages"][2]["content"][0]["content"] = [{"type": "text", "text": "no matches"}]
    assert problems(anthropic_tool_reference_content, body) == []


@pytest.mark.parametrize(
    ("reference", "fragment"),
    [
        (
            {"type": "tool_reference", "name": "get_weather"},
            "(it has `name`; references in a tool_result use `tool_name`)",
        ),
        (
            {"type": "tool_reference", "tool_name": ""},
            "messages.2.content.0.content.0.tool_name: Field required",
        ),
        ({"type": "tool_reference", "tool_name": 7}, "Field required, a non-empty string"),
    ],
)
def test_a_tool_reference_names_its_tool_with_tool_name(
    reference: dict[str, Any], fragment: str
) -> None:
    body = client_search_body()
    body["messages"][2]["content"][0]["content"] = [reference]
    one_problem(anthropic_tool_reference_content, body, fragment)


def test_a_tool_reference_outside_a_tool_result_is_refused() -> None:
    body = client_search_body()
    body["messages"][2]["content"].append({"type": "tool_reference", "tool_name": "get_weather"})
    one_problem(
        anthropic_tool_reference_content,
        body,
        "messages.2.content.1: a tool_reference block goes inside a tool_result",
    )


# -- rules 5, 10, 11, 15: tool changes ---------------------------------------------------------


def test_valid_tool_changes_pass() -> None:
    body = tool_change_body(
        {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "get_time"}},
        add_definition(tool("lookup", defer_loading=True)),
        add_definition(tool("summarize", cache_control=CACHE)),
        {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "lookup"}},
    )
    assert problems(anthropic_tool_change_rules, body, headers=INLINE) == []
    assert problems(anthropic_system_message_fields, body, headers=INLINE) == []


def test_tool_changes_only_in_system_messages() -> None:
    body = tool_change_body()
    body["messages"] = [
        {
            "role": "user",
            "content": [
                {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "get_time"}}
            ],
        }
    ]
    message = one_problem(anthropic_tool_change_rules, body, "messages.0.content.0", headers=INLINE)
    assert (
        message
        == "messages.0.content.0: `tool_addition` blocks are only allowed in role 'system' messages"
    )


def test_a_removal_with_a_definition_is_already_refused_by_the_system_message_rule() -> None:
    body = tool_change_body(
        {"type": "tool_removal", "tool": {"type": "tool_definition", "definition": tool("a")}}
    )
    assert problems(anthropic_tool_change_rules, body, headers=INLINE) == []
    one_problem(
        anthropic_system_message_fields,
        body,
        "a `tool_definition` goes in a `tool_addition` block",
        headers=INLINE,
    )


def test_an_inline_definition_cannot_change_a_tools_type() -> None:
    tools = [tool("get_time"), {"type": "web_search_20250305", "name": "web_search"}]
    body = tool_change_body(add_definition(tool("web_search")), tools=tools)
    message = one_problem(anthropic_tool_change_rules, body, "tool_name_conflict", headers=INLINE)
    assert message.startswith(
        "messages.1.content.0.tool.definition: tool_name_conflict: 'web_search' is a "
        "'web_search' tool (tools.1)"
    )
    newer = tool_change_body(
        add_definition({"type": "web_search_20260209", "name": "web_search"}), tools=tools
    )
    assert problems(anthropic_tool_change_rules, newer, headers=INLINE) == []


def test_an_inline_definition_cannot_change_an_earlier_definitions_type() -> None:
    body = tool_change_body(
        add_definition(tool("fetch")),
        add_definition({"type": "web_fetch_20250910", "name": "fetch"}),
    )
    one_problem(
        anthropic_tool_change_rules,
        body,
        "messages.1.content.1.tool.definition: tool_name_conflict: 'fetch' is a 'custom' tool "
        "(messages.1.content.0.tool.definition)",
        headers=INLINE,
    )


def test_inline_definition_cache_control() -> None:
    deferred = tool_change_body(
        add_definition(tool("lookup", defer_loading=True, cache_control=CACHE))
    )
    one_problem(
        anthropic_tool_change_rules,
        deferred,
        'Tool "lookup" cannot both defer_loading=true cache_control set',
        headers=INLINE,
    )
    both = tool_change_body(
        add_definition(tool("lookup", cache_control=CACHE), cache_control=CACHE)
    )
    one_problem(
        anthropic_tool_change_rules,
        both,
        "cache_control goes on the tool_addition block or its definition, not both",
        headers=INLINE,
    )


def test_an_inline_mcp_toolset_needs_the_mcp_client_beta() -> None:
    body = tool_change_body(add_definition({"type": "mcp_toolset", "mcp_server_name": "calendar"}))
    one_problem(
        anthropic_tool_change_rules, body, f"requires the `{MCP_CLIENT_BETA}` value", headers=INLINE
    )
    both = {"anthropic-beta": f"{INLINE_TOOLS_BETA},{MCP_CLIENT_BETA}"}
    assert problems(anthropic_tool_change_rules, body, headers=both) == []


# -- OpenAI Responses request bodies -----------------------------------------------------------


def function(name: str, **extra: Any) -> dict[str, Any]:
    params = {"type": "object", "properties": {}, "additionalProperties": False, "required": []}
    return {
        "type": "function",
        "name": name,
        "description": f"{name} tool",
        "parameters": params,
        "strict": True,
        **extra,
    }


def crm(**extra: Any) -> dict[str, Any]:
    return {
        "type": "namespace",
        "name": "crm",
        "description": "Customer records.",
        "tools": [function("list_orders", defer_loading=True)],
        **extra,
    }


def hosted_body(model: str = "gpt-5.4") -> dict[str, Any]:
    """Hosted tool search loads the ``crm`` namespace; the call is replayed with it."""
    return {
        "model": model,
        "tools": [
            function("get_time"),
            function("get_weather", defer_loading=True),
            crm(),
            {"type": "tool_search"},
        ],
        "input": [
            {"role": "user", "content": "List my open orders."},
            {
                "type": "tool_search_call",
                "call_id": None,
                "execution": "server",
                "arguments": {"paths": ["crm"]},
                "status": "completed",
            },
            {
                "type": "tool_search_output",
                "call_id": None,
                "execution": "server",
                "tools": [crm()],
                "status": "completed",
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "list_orders",
                "namespace": "crm",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "[]"},
        ],
    }


def client_body(model: str = "gpt-5.5") -> dict[str, Any]:
    """Client-executed tool search loads a flat deferred function; its call names itself."""
    search = {
        "type": "tool_search",
        "execution": "client",
        "description": "Find tools for a goal.",
        "parameters": {
            "type": "object",
            "properties": {"goal": {"type": "string"}},
            "required": ["goal"],
        },
    }
    return {
        "model": model,
        "tools": [function("get_time"), function("get_weather", defer_loading=True), search],
        "input": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "type": "tool_search_call",
                "call_id": "ts_1",
                "execution": "client",
                "arguments": {"goal": "weather"},
            },
            {
                "type": "tool_search_output",
                "call_id": "ts_1",
                "execution": "client",
                "tools": [function("get_weather", defer_loading=True)],
            },
            {
                "type": "function_call",
                "call_id": "call_2",
                "name": "get_weather",
                "namespace": "get_weather",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_2", "output": "sunny"},
        ],
    }


@pytest.mark.parametrize("body", [hosted_body(), client_body()], ids=["hosted", "client"])
def test_valid_responses_bodies_pass_every_rule(body: dict[str, Any]) -> None:
    for rule in RESPONSES_RULES:
        assert problems(rule, body) == [], rule.__name__


# -- rule 20: deferral needs tool_search on a gpt-5.4+ model; namespaces -----------------------


def test_deferred_tools_without_tool_search_are_refused() -> None:
    body = hosted_body()
    body["tools"].pop()
    message = one_problem(
        responses_deferred_needs_search, body, "Deferred tools require tools.tool_search."
    )
    assert (
        message == "tools.1: Invalid Value: 'tools.defer_loading'. "
        "Deferred tools require tools.tool_search."
    )
    body["tools"] = [function("a"), crm()]
    one_problem(
        responses_deferred_needs_search,
        body,
        "tools.1.tools.0: Invalid Value: 'tools.defer_loading'",
    )


@pytest.mark.parametrize(
    "model",
    [
        "gpt-5.4",
        "gpt-5.4-mini",
        "gpt-5.5",
        "gpt-5.6-2026-09-01",
        "gpt-6",
        "openai/gpt-5.4",
        "o9",
        "m",
    ],
)
def test_tool_search_models(model: str) -> None:
    assert problems(responses_deferred_needs_search, hosted_body(model)) == []


@pytest.mark.parametrize("model", ["gpt-5.3", "gpt-5", "gpt-5-mini", "gpt-4o", "gpt-4.1"])
def test_tool_search_on_an_older_gpt_is_refused(model: str) -> None:
    message = one_problem(
        responses_deferred_needs_search, hosted_body(model), "tools.3: tool_search is not supported"
    )
    assert (
        message == f"tools.3: tool_search is not supported on model {model}; use gpt-5.4 or later"
    )


@pytest.mark.parametrize(
    ("namespace", "fragment"),
    [
        (crm(defer_loading=True), "tools.2.defer_loading: a namespace cannot be deferred"),
        (crm(description=""), "tools.2.description: a namespace needs a non-empty description"),
        ({**crm(), "name": None}, "tools.2.name: a namespace needs a non-empty name"),
        (crm(tools=[]), "tools.2.tools: a namespace needs a non-empty list of tools"),
        (
            crm(tools=[{"type": "mcp", "server_label": "x"}]),
            "tools.2.tools.0: a namespace holds function or custom tools (got 'mcp')",
        ),
    ],
)
def test_malformed_namespaces(namespace: dict[str, Any], fragment: str) -> None:
    body = hosted_body()
    body["tools"][2] = namespace
    one_problem(responses_deferred_needs_search, body, fragment)


def test_only_function_custom_and_mcp_tools_defer() -> None:
    body = hosted_body()
    body["tools"].append(
        {
            "type": "mcp",
            "server_label": "docs",
            "server_url": "https://example.com",
            "defer_loading": True,
        }
    )
    body["tools"].append({"type": "custom", "name": "sql", "defer_loading": True})
    assert problems(responses_deferred_needs_search, body) == []
    body["tools"].append({"type": "web_search", "defer_loading": True})
    one_problem(
        responses_deferred_needs_search,
        body,
        "tools.6.defer_loading: only function, custom and mcp tools",
    )


# -- rules 21, 24: the tool_search tool --------------------------------------------------------


def test_search_tools_pass() -> None:
    assert problems(responses_search_tool_valid, hosted_body()) == []
    assert problems(responses_search_tool_valid, client_body()) == []


def test_only_one_tool_search() -> None:
    body = hosted_body()
    body["tools"].append({"type": "tool_search"})
    one_problem(
        responses_search_tool_valid,
        body,
        "tools.4: only one tool_search tool is allowed (one is tools.3)",
    )


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (
            {"description": None},
            "tools.2.description: a client-executed tool_search needs a description",
        ),
        (
            {"parameters": None},
            "tools.2.parameters: a client-executed tool_search needs a parameters object",
        ),
        ({"execution": "local"}, "tools.2.execution: Input should be 'server' or 'client'"),
    ],
)
def test_a_client_tool_search_is_described(change: dict[str, Any], fragment: str) -> None:
    body = client_body()
    body["tools"][2].update(change)
    one_problem(responses_search_tool_valid, body, fragment)


def test_no_function_named_tool_search_beside_the_search() -> None:
    body = client_body()
    body["tools"].append(function("tool_search"))
    one_problem(
        responses_search_tool_valid,
        body,
        "tools.3: a function named 'tool_search' beside the tool_search tool",
    )
    body["tools"].pop(2)
    assert problems(responses_search_tool_valid, body) == []


# -- rules 21, 22: tool_search_call / tool_search_output pairing -------------------------------


def test_paired_search_items_pass() -> None:
    assert problems(responses_search_items_paired, client_body()) == []
    assert problems(responses_search_items_paired, hosted_body()) == []


def test_a_client_call_without_its_output_is_refused() -> None:
    body = client_body()
    del body["input"][2]
    one_problem(
        responses_search_items_paired,
        body,
        "input.1: client tool_search_call 'ts_1' has 0 client tool_search_output items after "
        "it; exactly one is needed",
    )


def test_the_output_echoes_execution_client() -> None:
    body = client_body()
    del body["input"][2]["execution"]
    one_problem(responses_search_items_paired, body, "; the output must echo execution 'client'")


def test_two_outputs_for_one_client_call_are_refused() -> None:
    body = client_body()
    body["input"].insert(3, copy.deepcopy(body["input"][2]))
    one_problem(
        responses_search_items_paired, body, "has 2 client tool_search_output items after it"
    )


def test_an_orphan_client_output_is_refused_unless_stored() -> None:
    body = client_body()
    del body["input"][1]
    one_problem(
        responses_search_items_paired,
        body,
        "input.1: no client tool_search_call found for tool_search_output with call_id 'ts_1'",
    )
    body["previous_response_id"] = "resp_1"
    assert problems(responses_search_items_paired, body) == []


def test_a_client_call_needs_a_call_id() -> None:
    body = client_body()
    body["input"][1]["call_id"] = None
    found = problems(responses_search_items_paired, body)
    assert found[0] == "input.1.call_id: a client tool_search_call needs its own call_id"


def test_lone_server_items_are_exempt() -> None:
    body = hosted_body()
    del body["input"][2]
    assert problems(responses_search_items_paired, body) == []


# -- rule 23: namespaces on replayed function calls --------------------------------------------


def test_namespaced_calls_pass() -> None:
    assert problems(responses_namespaced_calls, hosted_body()) == []
    assert problems(responses_namespaced_calls, client_body()) == []


def test_a_namespaced_function_replayed_without_its_namespace_is_refused() -> None:
    body = hosted_body()
    del body["input"][3]["namespace"]
    message = one_problem(
        responses_namespaced_calls,
        body,
        "input.3: function 'list_orders' lives in namespace 'crm': replay it with its namespace",
    )
    assert "It does not exist in the default namespace." in message


def test_a_loaded_flat_function_replayed_without_its_namespace_is_refused() -> None:
    body = client_body()
    del body["input"][3]["namespace"]
    one_problem(
        responses_namespaced_calls,
        body,
        "input.3: function 'get_weather' lives in namespace 'get_weather'",
    )


def test_a_deferred_function_called_before_any_load_needs_no_namespace() -> None:
    body = client_body()
    del body["input"][1:3]
    del body["input"][1]["namespace"]
    assert problems(responses_namespaced_calls, body) == []


@pytest.mark.parametrize(
    ("name", "namespace"),
    [
        ("list_orders", "sales"),
        ("get_time", "get_time"),
        ("get_time", "crm"),
        ("list_orders", "list_orders"),
    ],
)
def test_a_namespace_that_does_not_hold_the_function_is_refused(name: str, namespace: str) -> None:
    body = hosted_body()
    body["input"][3].update(name=name, namespace=namespace)
    one_problem(
        responses_namespaced_calls,
        body,
        f"input.3.namespace: function_call {name!r} names namespace {namespace!r}",
    )


def test_a_namespace_declared_by_additional_tools_counts() -> None:
    body = hosted_body()
    body["tools"] = [function("get_time")]
    declared = {"type": "additional_tools", "role": "developer", "tools": [crm()]}
    body["input"][1:3] = [declared]
    assert problems(responses_namespaced_calls, body) == []


def test_namespaced_calls_are_not_checked_with_a_previous_response() -> None:
    body = hosted_body()
    body["input"] = body["input"][3:]
    body["input"][0]["namespace"] = "elsewhere"
    assert problems(responses_namespaced_calls, body) != []
    body["previous_response_id"] = "resp_1"
    assert problems(responses_namespaced_calls, body) == []


# -- end to end: the official SDKs against the fakes -------------------------------------------


def test_anthropic_native_search_through_the_sdk() -> None:
    fake = FakeAnthropic().script(text("Sunny."), text("Sunny."))
    with anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(HX)
    ) as client:
        for body in (server_search_body(), client_search_body()):
            assert sdk_problems("anthropic", body) == []
            reply = client.messages.create(**body)
            assert reply.content[0].type == "text"
        assert fake.violations == ()

        broken = server_search_body()
        for entry in broken["tools"]:
            entry["defer_loading"] = True
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.create(**broken)
    error = caught.value.body
    assert isinstance(error, dict)
    message = error["error"]["message"]
    assert (
        "rule anthropic_not_all_deferred broken: tools: At least one tool must have "
        "defer_loading=false" in message
    )
    assert "rule anthropic_not_all_deferred broken: tools.2: the tool search tool" in message
    assert {v.rule for v in fake.violations} == {"anthropic_not_all_deferred"}
    assert fake.requests[-1].status == 400 and fake.pending == 0


def test_anthropic_tool_changes_read_the_beta_header_through_the_sdk() -> None:
    fake = FakeAnthropic().script(text("ok"))
    body = tool_change_body(add_definition({"type": "mcp_toolset", "mcp_server_name": "calendar"}))
    with anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(HX)
    ) as client:
        with pytest.raises(
            anthropic.BadRequestError, match="rule anthropic_tool_change_rules broken"
        ):
            client.beta.messages.create(betas=[INLINE_TOOLS_BETA], **body)
        client.beta.messages.create(betas=[INLINE_TOOLS_BETA, MCP_CLIENT_BETA], **body)
    assert [r.status for r in fake.requests] == [400, 200]


def test_responses_native_search_through_the_sdk() -> None:
    fake = FakeResponses().script(text("No open orders."), text("Sunny."))
    with openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX)) as client:
        for body in (hosted_body(), client_body()):
            assert sdk_problems("responses", body) == []
            reply = client.responses.create(**body)
            assert reply.output_text in ("No open orders.", "Sunny.")
        assert fake.violations == ()

        broken = hosted_body()
        broken["tools"].pop()  # deferred tools, no tool_search
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(**broken)
    message = str(caught.value)
    assert (
        "rule responses_deferred_needs_search broken: tools.1: Invalid Value: "
        "'tools.defer_loading'. Deferred tools require tools.tool_search." in message
    )
    assert {v.rule for v in fake.violations} == {"responses_deferred_needs_search"}


def test_a_body_a_rule_cannot_read_is_a_400_not_a_crash() -> None:
    """A ``tool_use`` id that is a list (a tampered record): the fake answers 400."""
    import anthropic as sdk

    from contextchef.testing import FakeAnthropic, httpx_for, text

    fake = FakeAnthropic().script(text("ok"))
    client = sdk.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(sdk)))
    with pytest.raises(sdk.BadRequestError):
        client.messages.create(
            model="claude-opus-4-8",
            max_tokens=10,
            messages=[
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": [], "name": "x", "input": {}}],
                },  # type: ignore[list-item]
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": [], "content": "r"}],
                },  # type: ignore[list-item]
            ],
            tools=[{"name": "x", "description": "d", "input_schema": {"type": "object"}}],
        )
    client.close()
    assert fake.violations and fake.violations[0].status == 400
