"""Provider-native deferral and reveal (issue: reveal tools the provider's own way).

Each test names the rule of ../shared/research/provider-native-disclosure.md section 6 it
checks. Payloads go through the official SDK clients against the `contextchef.testing`
fakes, which enforce those rules, and are read against the SDKs' request types.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anthropic
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
from contextchef.providers import from_anthropic, from_responses
from contextchef.session._request import CompiledRequest
from contextchef.testing import (
    FakeAnthropic,
    FakeResponses,
    Turn,
    httpx_for,
    provider_search,
    text,
    tool_calls,
)
from contextchef.tools._catalogs import load_catalog
from prefix_check import prefix_problems
from sdk_check import sdk_problems

HX = httpx_for(anthropic)
OPUS = "claude-opus-5-5"  # prefix check, tool changes, inline definitions
SONNET = "claude-sonnet-4-5"  # tool search, no tool changes, no prefix check
OLD = "claude-opus-4-1"  # no tool search: a deferred tool could never be revealed
THINKING = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "error"}}
TOOL_CHANGES = "inline-tools-2026-09-15"


def _answer(**args: Any) -> str:
    return "ok: " + json.dumps(args, sort_keys=True)


def _session(catalogs: Path, **kwargs: Any) -> ContextChef:
    """Filesystem tools resident, GitHub's deferred, a read-only mode."""
    modes = {"read_only": ["filesystem__read_*", "filesystem__list_*", "github__get_*"]}
    chef = ContextChef(defer=["github__*"], modes=modes, **kwargs)
    for name in ("mcp-filesystem", "github"):
        tools = load_catalog(catalogs / f"{name}.json").tools
        chef.register_tools(tools, handlers={t.name: _answer for t in tools})
    chef.set_system_prompt("You are a careful coding agent.")
    chef.set_history([user("Triage the open issues.")])
    return chef


def _deferred(payload: dict[str, Any]) -> list[str]:
    return [t["name"] for t in payload["tools"] if t.get("defer_loading")]


def _blocks(payload: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [
        b
        for m in payload["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == kind
    ]


def _extends(before: CompiledRequest, after: CompiledRequest) -> bool:
    """Append-only: every earlier byte of the conversation is unchanged."""
    return after.segments["messages"].startswith(before.segments["messages"][:-1])


# -- one choice per target and model (rules 1, 20, 28) --------------------------------------


@pytest.mark.parametrize(
    ("target", "model", "chosen"),
    [
        ("anthropic", OPUS, "anthropic-native-client"),
        ("anthropic", SONNET, "anthropic-native-client"),
        ("anthropic", "anthropic.claude-opus-4-8-v1:0", "anthropic-native-client"),
        ("anthropic", OLD, "client"),
        ("anthropic", "claude-3-5-haiku-latest", "client"),
        ("anthropic", "my-proxy-alias", "client"),
        ("responses", "gpt-5.4", "openai-native"),
        ("responses", "gpt-5.6-mini", "openai-native"),
        ("responses", "gpt-4o", "client"),
        ("openai", "gpt-5.4", "client"),
        ("deepseek", "deepseek-chat", "client"),
        ("gemini", "gemini-3-pro", "client"),
    ],
)
def test_auto_picks_the_provider_mechanism_the_model_has(
    catalogs_dir: Path, target: str, model: str, chosen: str
) -> None:
    chef = _session(catalogs_dir)
    request = chef.compile(target, model=model, strategy="auto")
    assert chef._state.strategy == chosen
    deferred = json.dumps(request.payload).count('"defer_loading"')
    assert (deferred > 0) == (chosen != "client")


@pytest.mark.parametrize(
    ("target", "model", "strategy", "message"),
    [
        ("anthropic", OLD, "anthropic-native", "cannot reveal deferred tools"),
        ("anthropic", OLD, "anthropic-native-client", "cannot reveal deferred tools"),
        ("anthropic", SONNET, "anthropic-inline", "does not take mid-conversation tool changes"),
        ("responses", "gpt-4o", "openai-native", "cannot reveal deferred tools"),
        ("openai", "gpt-5.4", "openai-native", "does not have"),
        ("gemini", "gemini-3-pro", "anthropic-native", "does not have"),
    ],
)
def test_a_flag_the_request_cannot_honour_is_refused(
    catalogs_dir: Path, target: str, model: str, strategy: str, message: str
) -> None:
    """Rule 28: never a deferral flag without a working reveal path for that model."""
    chef = _session(catalogs_dir)
    with pytest.raises(UsageError, match=message) as info:
        chef.compile(target, model=model, strategy=strategy)
    assert "client" in str(info.value)  # the error names what would work
    assert chef._state.ledgers == {}


def test_an_unknown_model_name_may_be_forced_native(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    request = chef.compile("anthropic", model="my-proxy-alias", strategy="anthropic-native")
    assert _deferred(request.payload)


# -- Anthropic payload rules ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "search"),
    [
        (
            "anthropic-native",
            {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
        ),
        (
            "anthropic-native-regex",
            {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
        ),
    ],
)
def test_server_search_tools_are_exact_and_never_deferred(
    catalogs_dir: Path, strategy: str, search: dict[str, str]
) -> None:
    """Rules 2 and 6: the exact type/name pair, last, not deferred; our meta-tools absent."""
    chef = ContextChef(default_defer=True)  # every tool deferred: only the search tool is not
    chef.register_tools(load_catalog(catalogs_dir / "github.json").tools)
    chef.set_history([user("hi")])
    payload = chef.compile("anthropic", model=SONNET, strategy=strategy).payload
    assert payload["tools"][-1] == search
    assert [t for t in payload["tools"] if not t.get("defer_loading")] == [search]
    assert {"tool_search", "defer_execute"}.isdisjoint(t["name"] for t in payload["tools"])
    assert sdk_problems("anthropic", payload) == []


def test_deferred_tools_carry_no_cache_control_and_breakpoints_stay_within_four(
    catalogs_dir: Path,
) -> None:
    """Rules 4 and 5."""
    chef = _session(catalogs_dir)
    payload = chef.compile("anthropic", model=SONNET, strategy="anthropic-native-client").payload
    assert all("cache_control" not in t for t in payload["tools"])
    assert json.dumps(payload).count('"cache_control"') <= 4
    assert len(_deferred(payload)) == len(load_catalog(catalogs_dir / "github.json").tools)


def _search_turn(chef: ContextChef, query: list[str]) -> tuple[ToolCall, Any]:
    call = ToolCall(id="toolu_s1", name="tool_search", arguments=json.dumps({"queries": query}))
    chef.append(assistant("", [call]))
    done = chef.execute(call)
    chef.append(tool_results([done.result]))
    return call, done


def test_custom_search_answers_with_tool_references(catalogs_dir: Path) -> None:
    """Rule 7: the result is a list of ``tool_reference`` blocks naming declared tools."""
    chef = _session(catalogs_dir)
    chef.compile("anthropic", model=SONNET, strategy="anthropic-native-client")
    _, done = _search_turn(chef, ["create an issue"])
    assert done.result.references and done.result.references[0] == "github__create_issue"
    assert "call them directly by name" in done.result.content  # what other targets read
    payload = chef.compile("anthropic", model=SONNET, strategy="anthropic-native-client").payload
    (result,) = _blocks(payload, "tool_result")
    assert result["content"] == [
        {"type": "tool_reference", "tool_name": n} for n in done.result.references
    ]
    assert set(done.result.references) <= set(_deferred(payload))
    assert sdk_problems("anthropic", payload) == []
    # the model may now call the tool by name; the gate admits it under its real name
    check = chef.check_tool_call(
        ToolCall(
            id="c", name="github__create_issue", arguments='{"owner":"a","repo":"b","title":"t"}'
        )
    )
    assert check.decision == "allowed"


def test_custom_search_with_no_match_answers_with_text(catalogs_dir: Path) -> None:
    """Rule 7: an empty ``tool_result`` content list is refused, so a miss is a sentence."""
    chef = _session(catalogs_dir)
    chef.compile("anthropic", model=SONNET, strategy="anthropic-native-client")
    _, done = _search_turn(chef, ["zzqx qqzz"])
    assert done.result.references == ()
    payload = chef.compile("anthropic", model=SONNET, strategy="anthropic-native-client").payload
    (result,) = _blocks(payload, "tool_result")
    assert isinstance(result["content"], str) and "No tool matched" in result["content"]


def test_a_reference_the_new_tools_do_not_declare_is_rewritten(catalogs_dir: Path) -> None:
    """Rule 3: after a switch to the client strategy the deferred tools are gone from
    ``tools``; the earlier ``tool_reference`` result is sent again as text."""
    chef = _session(catalogs_dir)
    chef.compile("anthropic", model=SONNET, strategy="anthropic-native-client")
    _search_turn(chef, ["create an issue"])
    chef.compile("anthropic", model=SONNET, strategy="anthropic-native-client")
    chef.append(assistant("Found it."))
    chef.append(user("Go on."))
    request = chef.compile("anthropic", model=SONNET, strategy="client")
    assert _blocks(request.payload, "tool_reference") == []
    (result,) = _blocks(request.payload, "tool_result")
    assert "github__create_issue" in result["content"]
    assert [e.kind for e in request.edits] == ["tools"]
    assert any(c.kind == "rewrote_reference" for c in request.changes)


ISSUE = {"owner": "acme", "repo": "app", "title": "Crash"}


def _server_search_reply(tool: str, arguments: dict[str, Any]) -> Turn:
    """An Anthropic turn: a server search revealing `tool`, then a call to it."""
    return provider_search(tool, query="create issue", then=tool_calls((tool, arguments)))


def test_server_search_blocks_are_replayed_and_never_answered(catalogs_dir: Path) -> None:
    """Rule 6: the ``server_tool_use`` / ``tool_search_tool_result`` pair goes back
    unchanged, only the client ``tool_use`` gets a ``tool_result``; the tool the search
    revealed is callable by name."""
    chef = _session(catalogs_dir)
    fake = FakeAnthropic().script(
        _server_search_reply("github__create_issue", ISSUE),
        text("Filed."),
    )
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    requests = []
    for _ in range(2):
        request = chef.compile("anthropic", model=SONNET, strategy="anthropic-native")
        requests.append(request)
        calls = chef.ingest(
            client.messages.create(**request.payload, extra_headers=request.headers)
        )
        if calls:
            assert [c.name for c in calls] == ["github__create_issue"]
            chef.append(tool_results([chef.execute(c).result for c in calls]))
    client.close()
    assert fake.violations == ()
    last = fake.requests[-1].body
    answered = [b["tool_use_id"] for b in _blocks(last, "tool_result")]
    assert answered == ["toolu_0001"]
    assert len(_blocks(last, "server_tool_use")) == 1
    assert _extends(requests[0], requests[1]) and requests[1].edits == ()


def test_an_unpaired_or_dangling_server_search_is_dropped(catalogs_dir: Path) -> None:
    """Rules 3 and 6: a search call without its result, or a result naming a tool this
    request does not declare, is left out, and said."""
    chef = _session(catalogs_dir)
    history = [
        {"role": "user", "content": "find the tools"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_a",
                    "name": "tool_search_tool_regex",
                    "input": {"pattern": "issue"},
                },
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_b",
                    "name": "tool_search_tool_regex",
                    "input": {"pattern": "gone"},
                },
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "srvtoolu_b",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": "gone_tool"}],
                    },
                },
                {"type": "text", "text": "Searched."},
            ],
        },
        {"role": "user", "content": "and now?"},
    ]
    chef.set_history(from_anthropic(history).messages)
    fake = FakeAnthropic().script(text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    request = chef.compile("anthropic", model=SONNET, strategy="anthropic-native-regex")
    client.messages.create(**request.payload, extra_headers=request.headers)
    client.close()
    assert fake.violations == ()
    assert _blocks(request.payload, "server_tool_use") == []
    assert _blocks(request.payload, "tool_search_tool_result") == []
    assert sum(c.kind == "dropped_search_block" for c in request.changes) == 3


# -- mid-conversation tool changes (rules 3, 8, 10, 11, 13, 18, 19, 30) ---------------------


def _tool_change_session(
    catalogs_dir: Path, strategy: str
) -> tuple[list[CompiledRequest], FakeAnthropic]:
    """A session on Opus 5.5 with thinking: search, a mode hiding tools, a load, a
    runtime tool, a mode lifted; every request through the SDK against the fake."""
    chef = _session(catalogs_dir)
    found = (
        [_server_search_reply("github__create_issue", ISSUE), text("Filed.", reasoning="")]
        if strategy == "anthropic-native"
        else [
            tool_calls(("tool_search", {"queries": ["create issue"]}), reasoning=""),
            tool_calls(("github__create_issue", ISSUE), reasoning="Filing it."),
        ]
    )
    fake = FakeAnthropic().script(
        *found,
        text("Filed.", reasoning=""),
        tool_calls(("filesystem__read_file", {"path": "/a.py"}), reasoning=""),
        text("Read.", reasoning=""),
        text("Deployed.", reasoning=""),
        text("Back to normal.", reasoning=""),
    )
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    requests: list[CompiledRequest] = []

    def turn(host: str = "") -> None:
        request = chef.compile(
            "anthropic", model=OPUS, strategy=strategy, extra={"thinking": THINKING}
        )
        requests.append(request)
        reply = (
            client.beta.messages.create(
                **request.payload,
                betas=request.headers.get("anthropic-beta", "").split(",")
                if request.headers
                else [],
            )
            if request.headers
            else client.messages.create(**request.payload)
        )
        calls = chef.ingest(reply)
        if calls:
            chef.append(tool_results([chef.execute(c).result for c in calls]))
        else:
            chef.append(user(host or "next"))

    turn()  # tool_search
    turn()  # create_issue
    turn()  # text
    chef.set_mode("read_only")  # withdraws create_issue (and the other revealed writers)
    turn()  # read_file
    turn()  # text
    chef.register_runtime_tool(
        {
            "name": "deploy_preview",
            "description": "Deploy a preview.",
            "input_schema": {"type": "object"},
        }
    )
    turn()  # the runtime tool is declared deferred (and hidden by the mode)
    chef.set_mode(None)  # brings the writers back
    assert chef.reveal_tools("deploy_preview") == ("deploy_preview",)
    turn()
    client.close()
    return requests, fake


@pytest.mark.parametrize(
    "strategy", ["anthropic-native-client", "anthropic-inline", "anthropic-native"]
)
def test_tool_changes_reveal_and_withdraw_without_editing_anything_sent(
    catalogs_dir: Path, strategy: str
) -> None:
    requests, fake = _tool_change_session(catalogs_dir, strategy)
    assert fake.violations == ()
    assert prefix_problems([(r.body, r.reply) for r in fake.requests]) == []
    for before, after in itertools.pairwise(requests):
        assert after.edits == ()
        assert _extends(before, after)  # rule 13: only appended input is new
        assert after.segments["system"] == before.segments["system"]
        assert after.prefix_fingerprint == before.prefix_fingerprint  # rule 30
    first_tools = json.dumps(requests[0].payload["tools"])
    for request in requests:  # rule 19/30: tools only ever grow by deferred declarations
        assert json.dumps(request.payload["tools"]).startswith(first_tools[:-1])
    changes = [
        (i, b["type"], b["tool"].get("name") or b["tool"].get("definition", {}).get("name"))
        for i, r in enumerate(requests)
        for m in r.payload["messages"]
        if m["role"] == "system"
        for b in m["content"]
        if b["type"] in ("tool_addition", "tool_removal")
    ]
    removals = {n for _, kind, n in changes if kind == "tool_removal"}
    assert "github__create_issue" in removals  # the mode withdrew the tool the model used
    assert ("tool_addition", "deploy_preview") in {(k, n) for _, k, n in changes}
    last_changes = [c for c in changes if c[0] == len(requests) - 1]
    assert ("tool_addition", "github__create_issue") in {(k, n) for _, k, n in last_changes}
    # rule 11: once a change was sent, every request carries the beta
    first = next(i for i, *_ in changes)
    assert all(TOOL_CHANGES in r.headers.get("anthropic-beta", "") for r in requests[first:])
    assert all(
        not r.headers.get("anthropic-beta", "").count(TOOL_CHANGES) for r in requests[:first]
    )


def test_a_withdrawn_tool_is_refused_by_the_gate(catalogs_dir: Path) -> None:
    """Rule 18: removal is advisory for the model; the gate enforces it."""
    chef = _session(catalogs_dir)
    chef.compile("anthropic", model=OPUS, strategy="anthropic-native-client")
    chef.set_mode("read_only")
    check = chef.check_tool_call(
        ToolCall(
            id="c", name="github__create_issue", arguments='{"owner":"a","repo":"b","title":"t"}'
        )
    )
    assert check.decision == "denied" and "read_only" in check.reason


def test_models_without_tool_changes_report_a_tools_edit(catalogs_dir: Path) -> None:
    """Where tool changes do not exist, a mode change is an edit of ``tools``, said."""
    chef = _session(catalogs_dir)
    chef.compile("anthropic", model=SONNET, strategy="anthropic-native-client")
    chef.append(assistant("ok"))
    chef.append(user("read only now"))
    chef.set_mode("read_only")
    request = chef.compile("anthropic", model=SONNET, strategy="anthropic-native-client")
    assert [e.kind for e in request.edits] == ["tools"]
    assert not any(m["role"] == "system" for m in request.payload["messages"])


def test_inline_definitions_only_on_the_claude_api(catalogs_dir: Path) -> None:
    """Rules 11, 12 and 20: a tool undeclared at the start, offered directly later, is
    defined inline on the Claude API and declared deferred + added by reference on
    Bedrock (which takes no inline definitions), with the matching beta."""
    for model, beta, by_definition in (
        (OPUS, TOOL_CHANGES, True),
        ("anthropic.claude-opus-4-8-v1:0", "mid-conversation-tool-changes-2026-07-01", False),
    ):
        chef = ContextChef(modes={"small": ["filesystem__read_file"]}, mode="small")
        chef.register_tools(load_catalog(catalogs_dir / "mcp-filesystem.json").tools)
        chef.set_history([user("hi")])
        chef.compile("anthropic", model=model, strategy="anthropic-native")
        chef.append(assistant("ok"))
        chef.append(user("more"))
        chef.set_mode(None)  # every filesystem tool is now offered directly
        request = chef.compile("anthropic", model=model, strategy="anthropic-native")
        assert request.edits == ()
        assert request.headers == {"anthropic-beta": beta}
        (system,) = [m for m in request.payload["messages"] if m["role"] == "system"]
        kinds = {b["tool"]["type"] for b in system["content"]}
        assert kinds == ({"tool_definition"} if by_definition else {"tool_reference"})
        added = {
            b["tool"].get("name") or b["tool"]["definition"]["name"] for b in system["content"]
        }
        assert "filesystem__write_file" in added and "filesystem__read_file" not in added
        if not by_definition:
            assert "filesystem__write_file" in _deferred(request.payload)


# -- Responses: hosted tool_search and namespaces (rules 20-24) ------------------------------


def test_openai_native_declares_deferred_tools_in_namespaces(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    payload = chef.compile("responses", model="gpt-5.4", strategy="openai-native").payload
    assert payload["tools"][-1] == {"type": "tool_search"}
    spaces = [t for t in payload["tools"] if t["type"] == "namespace"]
    github = load_catalog(catalogs_dir / "github.json").tools
    assert sum(len(s["tools"]) for s in spaces) == len(github)
    assert all(len(s["tools"]) <= 10 and "defer_loading" not in s for s in spaces)
    assert all(f["defer_loading"] is True for s in spaces for f in s["tools"])
    assert [s["name"] for s in spaces][:2] == ["github", "github_2"]
    assert sdk_problems("responses", payload) == []


def test_openai_native_round_trip_replays_search_items_and_namespaces(catalogs_dir: Path) -> None:
    """Rules 22 and 23: hosted search items go back verbatim; the call keeps its namespace."""
    chef = _session(catalogs_dir)
    payload = chef.compile("responses", model="gpt-5.4", strategy="openai-native").payload
    space = next(
        t["name"]
        for t in payload["tools"]
        if t["type"] == "namespace" and any(f["name"] == "github__create_issue" for f in t["tools"])
    )
    create = ("github__create_issue", ISSUE)
    fake = FakeResponses().script(
        provider_search("github__create_issue", then=tool_calls(create)),
        text("Filed."),
    )
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    requests = []
    for _ in range(2):
        request = chef.compile("responses", model="gpt-5.4", strategy="openai-native")
        requests.append(request)
        calls = chef.ingest(client.responses.create(**request.payload))
        if calls:
            assert [c.name for c in calls] == ["github__create_issue"]
            chef.append(tool_results([chef.execute(c).result for c in calls]))
    client.close()
    assert fake.violations == ()
    sent = fake.requests[-1].body["input"]
    kinds = [i.get("type") for i in sent]
    assert kinds[1:5] == [
        "tool_search_call",
        "tool_search_output",
        "function_call",
        "function_call_output",
    ]
    assert sent[3]["namespace"] == space
    assert _extends(requests[0], requests[1]) and requests[1].edits == ()


def test_a_replayed_call_carries_the_namespace_the_request_declares(catalogs_dir: Path) -> None:
    """Rule 23: a call goes back in the namespace where ``tools`` declares its tool (also
    when it was made elsewhere); once ``tools`` declares none (client strategy), it is
    sent as a plain function call; both said."""
    chef = _session(catalogs_dir)
    history = [
        {"type": "message", "role": "user", "content": "file it"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "namespace": "github",
            "name": "github__create_issue",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "done"},
        {"type": "message", "role": "user", "content": "thanks"},
    ]
    chef.set_history(from_responses(history).messages)
    native = chef.compile("responses", model="gpt-5.4", strategy="openai-native")
    home = next(
        t["name"]
        for t in native.payload["tools"]
        if t["type"] == "namespace" and any(f["name"] == "github__create_issue" for f in t["tools"])
    )
    (call,) = [i for i in native.payload["input"] if i.get("type") == "function_call"]
    assert call["namespace"] == home != "github"  # where this request declares it
    assert any(c.kind == "rewrote_reference" for c in native.changes)
    _, violations = _send("responses", native)
    assert violations == ()
    fresh = _session(catalogs_dir)
    fresh.set_history(from_responses(history).messages)
    plain = fresh.compile("responses", model="gpt-5.4", strategy="client")
    assert all("namespace" not in i for i in plain.payload["input"])
    assert any(c.kind == "rewrote_reference" for c in plain.changes)
    anthropic_payload = fresh.compile("anthropic", model=SONNET).payload
    assert sdk_problems("anthropic", anthropic_payload) == []


# -- foreign native blocks, every target (rule 3 and "never a flag a request cannot honour") --

_ANTHROPIC_NATIVE_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "File the crash."},
    {
        "role": "assistant",
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01",
                "name": "tool_search_tool_bm25",
                "input": {"query": "create issue"},
            },
            {
                "type": "tool_search_tool_result",
                "tool_use_id": "srvtoolu_01",
                "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [
                        {"type": "tool_reference", "tool_name": "github__create_issue"}
                    ],
                },
            },
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "tool_search",
                "input": {"queries": ["labels"]},
            },
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01",
                "content": [{"type": "tool_reference", "tool_name": "github__get_label"}],
            }
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_02", "name": "github__create_issue", "input": ISSUE}
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_02", "content": "#7"}],
    },
    {"role": "assistant", "content": "Filed #7."},
    {"role": "user", "content": "Thanks. Anything else?"},
]

_RESPONSES_NATIVE_HISTORY: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": "File the crash."},
    {
        "type": "tool_search_call",
        "id": "tsc_1",
        "call_id": None,
        "execution": "server",
        "arguments": {"paths": ["github"]},
        "status": "completed",
    },
    {
        "type": "tool_search_output",
        "id": "tso_1",
        "call_id": None,
        "execution": "server",
        "status": "completed",
        "tools": [],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "namespace": "github",
        "name": "github__create_issue",
        "arguments": json.dumps(ISSUE),
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "#7"},
    {"type": "message", "role": "user", "content": "Thanks. Anything else?"},
]


def _send(target: str, request: CompiledRequest) -> tuple[Any, tuple[str, ...]]:
    """Send through the target's SDK against its fake; the fake's violations."""
    from google import genai
    from google.genai import types as genai_types

    from contextchef.testing import FakeGemini, FakeOpenAIChat

    if target == "gemini":
        fake: Any = FakeGemini().script(text("ok"))
        client: Any = genai.Client(
            api_key="x", http_options=genai_types.HttpOptions(httpx_client=fake.http_client(HX))
        )
        client.models.generate_content(**request.payload)
        return fake, fake.violations
    if target == "anthropic":
        fake = FakeAnthropic().script(text("ok"))
        with anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX)) as c:
            c.messages.create(**request.payload, extra_headers=request.headers)
        return fake, fake.violations
    fake = (FakeResponses() if target == "responses" else FakeOpenAIChat()).script(text("ok"))
    with openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX)) as c:
        if target == "responses":
            c.responses.create(**request.payload)
        else:
            c.chat.completions.create(**request.payload)
    return fake, fake.violations


@pytest.mark.parametrize("target", ["anthropic", "openai", "deepseek", "responses", "gemini"])
@pytest.mark.parametrize("source", ["anthropic", "responses"])
def test_foreign_native_search_history_compiles_for_every_target(
    catalogs_dir: Path, target: str, source: str
) -> None:
    """Another provider's search blocks are left out, references rewritten, namespaces
    dropped; what remains passes the target's rules and its SDK types."""
    chef = _session(catalogs_dir)
    parsed = (
        from_anthropic(_ANTHROPIC_NATIVE_HISTORY)
        if source == "anthropic"
        else from_responses(_RESPONSES_NATIVE_HISTORY)
    )
    chef.set_history(parsed.messages)
    request = chef.compile(target, model="gpt-4o" if target == "responses" else "model-x")
    _, violations = _send(target, request)
    assert violations == ()
    assert sdk_problems(target, request.payload) == []
    body = json.dumps(request.payload)
    assert "github__create_issue" in body  # the call itself is kept
    if target != source:
        assert "tool_search_tool_result" not in body and "tool_search_output" not in body
    assert '"tool_reference"' not in body  # the client strategy declares no deferred tools
    assert '"namespace"' not in body


def test_a_host_reveal_before_the_first_request_is_stated_in_it(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    assert chef.reveal_tools("github__create_issue", "get_me") == (
        "github__create_issue",
        "github__get_me",
    )
    request = chef.compile("anthropic", model=OPUS, strategy="anthropic-native")
    (system,) = [m for m in request.payload["messages"] if m["role"] == "system"]
    assert [b["tool"]["name"] for b in system["content"]] == [
        "github__create_issue",
        "github__get_me",
    ]
    assert request.headers == {"anthropic-beta": TOOL_CHANGES}
    _, violations = _send("anthropic", request)
    assert violations == ()


@pytest.mark.parametrize(
    "strategy", ["anthropic-native-client", "anthropic-inline", "anthropic-native"]
)
def test_an_unanswered_first_request_binds_no_tools(catalogs_dir: Path, strategy: str) -> None:
    """A mode set before the first answer shapes ``tools`` itself, with no ``tool_removal``.

    The host compiles, switches mode before sending anything, compiles again: nothing
    was answered, so the second request is the one a session started in that mode sends
    (not every tool declared and the hidden ones withdrawn), and no edit is reported.
    Once it is answered, its ``tools`` are kept and the next mode change is stated.
    """
    chef = _session(catalogs_dir)
    first = chef.compile("anthropic", model=OPUS, strategy=strategy)
    chef.set_mode("read_only")
    second = chef.compile("anthropic", model=OPUS, strategy=strategy)
    direct = _session(catalogs_dir, mode="read_only")
    assert second.to_json() == direct.compile("anthropic", model=OPUS, strategy=strategy).to_json()
    assert second.edits == () and second.headers == {}
    assert '"tool_removal"' not in second.to_json()
    assert second.payload["tools"] != first.payload["tools"]
    names = {t["name"] for t in second.payload["tools"]}
    assert "filesystem__write_file" not in names and "filesystem__read_file" in names
    fake = FakeAnthropic().script(text("Read it."), text("Fixed."))
    with anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX)) as c:
        chef.ingest(c.messages.create(**second.payload, extra_headers=second.headers))
        chef.append(user("Now write the fix."))
        chef.set_mode(None)  # answered: the tools are bound, the change is stated
        third = chef.compile("anthropic", model=OPUS, strategy=strategy)
        c.messages.create(**third.payload, extra_headers=third.headers)
    assert fake.violations == ()
    assert third.edits == () and _extends(second, third)
    assert third.payload["tools"][: len(second.payload["tools"])] == second.payload["tools"]
    assert third.headers == {"anthropic-beta": TOOL_CHANGES}
    assert '"tool_addition"' in third.to_json()


def test_an_answered_prefill_request_binds_its_tools(catalogs_dir: Path) -> None:
    """An answer ingested binds the tools even when its request ended with a prefill
    (whose entries the ledger renders again): the mode change after it is stated."""
    chef = _session(catalogs_dir)
    first = chef.compile(
        "anthropic", model="claude-opus-4-8", strategy="anthropic-native", prefill="Plan:"
    )
    chef.ingest({"type": "message", "role": "assistant", "content": [_text_block(" read")]})
    chef.append(user("Read only now."))
    chef.set_mode("read_only")
    second = chef.compile("anthropic", model="claude-opus-4-8", strategy="anthropic-native")
    assert second.payload["tools"] == first.payload["tools"] and second.edits == ()
    assert '"tool_removal"' in second.to_json()
    _, violations = _send("anthropic", second)
    assert violations == ()


def _text_block(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def test_an_unanswered_first_request_binds_no_system_prompt(catalogs_dir: Path) -> None:
    """A system prompt changed before the first answer is no edit (nothing was bound)."""
    chef = _session(catalogs_dir)
    chef.compile("anthropic", model=OPUS)
    chef.set_system_prompt("You are a careful reviewer.")
    second = chef.compile("anthropic", model=OPUS)
    assert second.edits == ()
    assert second.payload["system"][0]["text"] == "You are a careful reviewer."


def test_reveal_tools_refuses_what_it_cannot_reveal(catalogs_dir: Path) -> None:
    from contextchef import UnknownToolError

    chef = _session(catalogs_dir, mode="read_only")
    with pytest.raises(UnknownToolError, match="no_such_tool"):
        chef.reveal_tools("no_such_tool")
    with pytest.raises(UsageError, match="not available in mode"):
        chef.reveal_tools("github__create_issue")
    with pytest.raises(UsageError, match="tool names"):
        chef.reveal_tools(5)  # type: ignore[arg-type]
    assert chef.loaded_tools == ()


def test_a_strategy_switch_that_drops_a_referenced_tool_sends_everything_again(
    catalogs_dir: Path,
) -> None:
    """Rule 3 after tool changes: on Opus 4.8 (tool changes, no prefix check) a switch to
    ``client`` drops the deferred declarations the earlier ``tool_addition`` named, so the
    conversation is sent again from the start rather than keep a dangling reference."""
    chef = _session(catalogs_dir)
    model = "claude-opus-4-8"
    chef.compile("anthropic", model=model, strategy="anthropic-native")
    chef.append(assistant("ok"))
    chef.append(user("file it"))
    chef.reveal_tools("github__create_issue")
    added = chef.compile("anthropic", model=model, strategy="anthropic-native")
    assert any(m["role"] == "system" for m in added.payload["messages"])
    chef.append(assistant("done"))
    chef.append(user("and now plain"))
    switched = chef.compile("anthropic", model=model, strategy="client")
    assert [e.kind for e in switched.edits] == ["tools"]
    assert switched.edits[0].wire_index == 0
    assert "tool_addition" not in json.dumps(switched.payload)
    _, violations = _send("anthropic", switched)
    assert violations == ()


def test_a_call_made_on_another_target_is_replayed_in_its_namespace(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    chef.set_history(
        [
            user("Who am I?"),
            assistant("", [ToolCall(id="toolu_01", name="github__get_me", arguments="{}")]),
            tool_results([ToolResult(call_id="toolu_01", name="github__get_me", content="me")]),
            user("File an issue."),
        ]
    )
    request = chef.compile("responses", model="gpt-5.4", strategy="openai-native")
    (call,) = [i for i in request.payload["input"] if i.get("type") == "function_call"]
    assert call["namespace"].startswith("github")
    _, violations = _send("responses", request)
    assert violations == ()


# -- the fresh-user reports, one test each ----------------------------------------------------


def _beta_send(client: Any, request: CompiledRequest) -> Any:
    betas = [b for b in request.headers.get("anthropic-beta", "").split(",") if b]
    return client.beta.messages.create(**request.payload, betas=betas)


def test_thinking_sent_before_a_tools_change_on_another_model_is_dropped_later(
    catalogs_dir: Path,
) -> None:
    """Opus 5.5 → Opus 4.8 with other tools (kept: no prefix check there) → Opus 5.5:
    the 5.5 thinking was bound to the first tools, so it goes without it, said."""
    chef = ContextChef(default_defer=True)
    chef.register_catalog(catalogs_dir / "github.json")
    chef.set_history([user("hi")])
    fake = FakeAnthropic().script(text("a", reasoning="r"), text("b"), text("c", reasoning="r"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    kinds = []
    for model, strategy in ((OPUS, "client"), ("claude-opus-4-8", "flat"), (OPUS, "flat")):
        request = chef.compile(
            "anthropic", model=model, strategy=strategy, extra={"thinking": THINKING}
        )
        kinds.append([(e.kind, e.thinking_stripped) for e in request.edits])
        chef.ingest(_beta_send(client, request))
        chef.append(user("next"))
    client.close()
    assert fake.violations == ()
    assert kinds == [[], [("tools", 0)], [("model", 1)]]


def test_inline_definitions_are_redeclared_on_a_platform_without_them(catalogs_dir: Path) -> None:
    """Claude API (inline definitions) → Bedrock (by reference only): re-sent as deferred
    declarations and additions by reference, reported as an edit."""
    chef = ContextChef(modes={"small": ["filesystem__read_file"]}, mode="small")
    chef.register_tools(load_catalog(catalogs_dir / "mcp-filesystem.json").tools)
    chef.set_history([user("hi")])
    chef.compile("anthropic", model="claude-opus-4-8", strategy="anthropic-native")
    chef.append(assistant("ok"))
    chef.append(user("more"))
    chef.set_mode(None)
    inline = chef.compile("anthropic", model="claude-opus-4-8", strategy="anthropic-native")
    assert "tool_definition" in json.dumps(inline.payload)
    chef.append(assistant("ok"))
    chef.append(user("failover"))
    bedrock = chef.compile(
        "anthropic", model="anthropic.claude-opus-4-8-v1:0", strategy="anthropic-native"
    )
    assert [e.kind for e in bedrock.edits] == ["model"]
    assert "tool_definition" not in json.dumps(bedrock.payload)
    assert bedrock.headers == {"anthropic-beta": "mid-conversation-tool-changes-2026-07-01"}
    assert "filesystem__write_file" in _deferred(bedrock.payload)
    _, violations = _send("anthropic", bedrock)
    assert violations == ()


def test_a_mode_withdraws_deferred_tools_the_search_has_not_revealed(catalogs_dir: Path) -> None:
    """The provider's search must not surface what the mode hides: every hidden tool
    declared gets a ``tool_removal``, and gets added again when the mode goes."""
    chef = _session(catalogs_dir)
    chef.compile("anthropic", model=OPUS, strategy="anthropic-native")
    chef.append(assistant("ok"))
    chef.append(user("read only"))
    chef.set_mode("read_only")
    hidden = chef.compile("anthropic", model=OPUS, strategy="anthropic-native")
    (system,) = [m for m in hidden.payload["messages"] if m["role"] == "system"]
    removed = {b["tool"]["name"] for b in system["content"] if b["type"] == "tool_removal"}
    assert "github__create_issue" in removed and "github__get_me" not in removed
    chef.append(assistant("ok"))
    chef.append(user("all back"))
    chef.set_mode(None)
    back = chef.compile("anthropic", model=OPUS, strategy="anthropic-native")
    last = back.payload["messages"][-1]
    assert last["role"] == "system"
    assert {b["tool"]["name"] for b in last["content"]} == removed
    assert {b["type"] for b in last["content"]} == {"tool_addition"}


def test_skill_tools_wait_for_their_skill_on_anthropic(catalogs_dir: Path) -> None:
    from contextchef import Skill

    chef = _session(catalogs_dir)
    chef.register_skills(
        [
            Skill(
                name="triage",
                description="Triage.",
                instructions="Label.",
                tools=("github__create_issue",),
            )
        ]
    )
    before = chef.compile("anthropic", model=OPUS, strategy="anthropic-native")
    assert "github__create_issue" not in json.dumps(before.payload["tools"])
    with pytest.raises(UsageError, match='part of skill "triage"'):
        chef.reveal_tools("github__create_issue")
    chef.append(assistant("ok"))
    chef.append(user("triage"))
    chef.load_skill("triage")
    after = chef.compile("anthropic", model=OPUS, strategy="anthropic-native")
    assert after.edits == ()
    assert "github__create_issue" in _deferred(after.payload)
    additions = [
        b["tool"]["name"]
        for m in after.payload["messages"]
        if m["role"] == "system"
        for b in m["content"]
        if b["type"] == "tool_addition"
    ]
    assert additions == ["github__create_issue"]


def test_denials_name_only_the_tools_the_request_offered(catalogs_dir: Path) -> None:
    from contextchef import DeferredConfig

    expected = {
        "anthropic-native": "has not been revealed yet: find it with your tool search first",
        "anthropic-native-client": '["github__create_issue"]}), then call it by name',
        "client": "then defer_execute with arguments",
    }
    for strategy, text_ in expected.items():
        chef = _session(catalogs_dir, deferred=DeferredConfig(require_search=True))
        chef.compile("anthropic", model=SONNET, strategy=strategy)
        call = ToolCall(id="c", name="github__create_issue", arguments=json.dumps(ISSUE))
        if strategy == "client":
            call = ToolCall(
                id="c",
                name="defer_execute",
                arguments=json.dumps({"tool_name": "github__create_issue", "params": ISSUE}),
            )
        check = chef.check_tool_call(call)
        assert check.decision == "denied" and text_ in check.reason, (strategy, check.reason)
        unknown = chef.check_tool_call(ToolCall(id="u", name="nope", arguments="{}"))
        assert ("tool_search" in unknown.reason) == (strategy != "anthropic-native")


def test_deferred_declarations_anywhere_are_not_an_edit_a_moved_resident_tool_is(
    catalogs_dir: Path,
) -> None:
    """Research note R7: unreferenced ``defer_loading`` entries are outside the cache key
    and the prefix check, so more of them (inserted in registry order) is no edit."""
    chef = ContextChef(default_defer=True, modes={"ro": ["*get_*", "*list_*"]}, mode="ro")
    chef.register_catalog(catalogs_dir / "github.json")
    chef.set_history([user("hi")])
    first = chef.compile("anthropic", model=SONNET, strategy="anthropic-native")
    chef.append(assistant("hello"))
    chef.append(user("all tools now"))
    chef.set_mode(None)
    second = chef.compile("anthropic", model=SONNET, strategy="anthropic-native")
    assert len(second.payload["tools"]) > len(first.payload["tools"])
    assert second.edits == ()
    resident = [t for t in second.payload["tools"] if not t.get("defer_loading")]
    assert resident == [t for t in first.payload["tools"] if not t.get("defer_loading")]


def test_a_snapshot_ledger_with_a_non_text_tool_name_is_refused(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    chef.compile("anthropic", model=OPUS, strategy="anthropic-native")
    snap = json.loads(json.dumps(chef.snapshot()))
    snap["ledgers"]["anthropic"]["tools"][0]["name"] = None
    other = _session(catalogs_dir)
    before = other.snapshot()
    with pytest.raises(UsageError, match="tool objects with text names"):
        other.restore(snap, allow_unsigned=True)
    assert other.snapshot() == before


@pytest.mark.parametrize(
    ("strategy", "readded"),
    [("anthropic-native-client", False), ("anthropic-inline", False), ("anthropic-native", True)],
)
def test_a_mode_round_trip_keeps_unseen_deferred_tools_deferred_where_we_search(
    catalogs_dir: Path, strategy: str, readded: bool
) -> None:
    """Fresh-user report: ``set_mode("ro")`` then ``set_mode(None)`` on ``claude-opus-5-5``
    under ``auto`` added every deferred tool back by ``tool_addition``, so one round trip
    offered the whole catalog. Where our ranker searches, a deferred tool never offered is
    not withdrawn (search and gate leave it out); where the server search runs it must be
    (research R19: deferred tools stay hidden until a ``tool_addition``, and the server
    search would otherwise surface them), and comes back offered."""
    chef = ContextChef(defer=["github__*"], modes={"ro": ["filesystem__read_*"]})
    chef.register_catalog(catalogs_dir / "github.json")
    chef.register_catalog(catalogs_dir / "mcp-filesystem.json")
    chef.set_history([user("go")])
    fake = FakeAnthropic().script(*[text(f"t{i}", reasoning="r") for i in range(3)])
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    requests = []
    for mode in (None, "ro", None):
        chef.set_mode(mode)
        request = chef.compile("anthropic", model=OPUS, strategy=strategy)
        requests.append(request)
        chef.ingest(client.beta.messages.create(**request.payload, betas=_betas(request)))
        chef.append(user("next"))
    client.close()
    assert fake.violations == ()
    assert all(r.edits == () for r in requests)
    deferred = {t["name"] for t in requests[0].payload["tools"] if t.get("defer_loading")}
    added = {
        b["tool"]["name"]
        for m in requests[2].payload["messages"][-2:]
        if m["role"] == "system"
        for b in m["content"]
        if b.get("type") == "tool_addition" and "name" in b["tool"]
    }
    assert len(deferred) == 117  # the GitHub catalog
    assert added & deferred == (deferred if readded else set())


def _betas(request: CompiledRequest) -> list[str]:
    return [b for b in request.headers.get("anthropic-beta", "").split(",") if b]
