"""Skills: named instructions that bring their tools (issue: skills that bring their tools).

Real catalogs (GitHub's tools deferred, the filesystem server's resident); the skill
``triage`` holds two GitHub tools. Conversations go through the official SDK clients
against the `contextchef.testing` fakes, for each strategy: before the skill is loaded
the gate refuses its tools (``skill_not_loaded``), after it they run, and the
instructions are in the history exactly once, whether the model or the host loaded it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from contextchef import (
    ContextChef,
    DeferredConfig,
    Skill,
    SnapshotMismatchError,
    TextPart,
    ToolCall,
    ToolNameConflictError,
    ToolResult,
    UnknownToolError,
    UsageError,
    assistant,
    tool_results,
    user,
)
from contextchef.session._request import CompiledRequest
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeOpenAIChat,
    FakeResponses,
    httpx_for,
    raw,
    text,
    tool_calls,
)
from contextchef.tools._catalogs import load_catalog

HX = httpx_for(anthropic)
OPUS = "claude-opus-5-5"  # takes mid-conversation tool changes
SONNET = "claude-sonnet-4-5"  # provider tool search, no tool changes
TOOL_CHANGES = "inline-tools-2026-09-15"
CREATE = "github__create_issue"
COMMENT = "github__add_issue_comment"
ISSUE = {"owner": "acme", "repo": "app", "title": "Crash on start"}
INSTRUCTIONS = "Label every new issue needs-triage and link the failing CI run in its body."
TRIAGE = Skill(
    name="triage",
    description="Triage GitHub issues: file, label and comment.",
    instructions=INSTRUCTIONS,
    tools=("create_issue", COMMENT),  # an own name and a wire name
)


def _answer(**args: Any) -> str:
    return "ok: " + json.dumps(args, sort_keys=True)


def _session(catalogs: Path, *, skills: bool = True, **kwargs: Any) -> ContextChef:
    """Filesystem tools resident, GitHub's deferred, the triage skill."""
    chef = ContextChef(defer=["github__*"], **kwargs)
    for name in ("mcp-filesystem", "github"):
        tools = load_catalog(catalogs / f"{name}.json").tools
        chef.register_tools(tools, handlers={t.name: _answer for t in tools})
    if skills:
        chef.register_skills([TRIAGE])
    chef.set_system_prompt("You are a careful engineering agent.")
    chef.set_history([user("Triage the open issues.")])
    return chef


def _texts(chef: ContextChef) -> list[str]:
    out: list[str] = []
    for message in chef.history:
        for part in message.parts:
            if isinstance(part, TextPart):
                out.append(part.text)
            elif isinstance(part, ToolResult):
                out.append(part.content)
    return out


def _instructions_in_history(chef: ContextChef) -> int:
    return sum(t.count(INSTRUCTIONS) for t in _texts(chef))


# -- one conversation per strategy --------------------------------------------------------


@dataclass(frozen=True)
class Case:
    target: str
    model: str
    strategy: str
    ending: str
    """The last line of the load text: how the tools are reached under this strategy."""

    @property
    def id(self) -> str:
        return f"{self.target}-{self.strategy}-{self.model}"


DEFER = 'Call them with defer_execute({"tool_name": "<name>", "params": {...}}).'
AVAILABLE = "These tools are now available: call them by name."
SEARCH = (
    f'Load them with tool_search({{"tool_names": ["{CREATE}", "{COMMENT}"]}}), then call '
    "them by name."
)
PROVIDER = (
    "Find them by these exact names with your tool search to load their definitions, then "
    "call them by name."
)

CASES = [
    Case("anthropic", SONNET, "client", DEFER),
    Case("openai", "gpt-5.4", "client", DEFER),
    Case("responses", "gpt-5.4", "client", DEFER),
    Case("gemini", "gemini-3-pro", "client", DEFER),
    Case("anthropic", SONNET, "anthropic-native-client", SEARCH),
    Case("anthropic", SONNET, "anthropic-native", PROVIDER),
    Case("anthropic", OPUS, "anthropic-inline", AVAILABLE),
    Case("anthropic", OPUS, "anthropic-native-client", AVAILABLE),
    Case("responses", "gpt-5.4", "openai-native", AVAILABLE),
    Case("responses", "gpt-5.4", "openai-native-client", AVAILABLE),
]


def _anthropic_server_search(n: int, model: str) -> Any:
    """An Anthropic reply: the server BM25 search reveals the tool, then the model calls it."""
    return raw(
        {
            "id": f"msg_raw_{n}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [
                {
                    "type": "server_tool_use",
                    "id": f"srvtoolu_{n}",
                    "name": "tool_search_tool_bm25",
                    "input": {"query": "create issue"},
                },
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": f"srvtoolu_{n}",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": CREATE}],
                    },
                },
                {"type": "tool_use", "id": f"toolu_raw_{n}", "name": CREATE, "input": ISSUE},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
    )


def _responses_hosted_search(n: int, namespace: dict[str, Any]) -> Any:
    """A Responses reply: the hosted search loads the namespace, then a call into it."""
    return raw(
        {
            "id": f"resp_raw_{n}",
            "object": "response",
            "created_at": 0,
            "model": "gpt-5.4",
            "status": "completed",
            "output": [
                {
                    "type": "tool_search_call",
                    "id": f"tsc_raw_{n}",
                    "call_id": None,
                    "execution": "server",
                    "arguments": {"paths": [namespace["name"]]},
                    "status": "completed",
                },
                {
                    "type": "tool_search_output",
                    "id": f"tso_raw_{n}",
                    "call_id": None,
                    "execution": "server",
                    "status": "completed",
                    "tools": [namespace],
                },
                {
                    "type": "function_call",
                    "id": f"fc_raw_{n}",
                    "call_id": f"call_raw_{n}",
                    "namespace": namespace["name"],
                    "name": CREATE,
                    "arguments": json.dumps(ISSUE),
                    "status": "completed",
                },
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )


def _use_tool(case: Case, n: int, catalogs: Path) -> Any:
    """A model turn calling the skill's ``create_issue`` the way the strategy offers it."""
    if case.strategy == "client":
        return tool_calls(("defer_execute", {"tool_name": CREATE, "params": ISSUE}))
    if case.strategy == "anthropic-native":
        return _anthropic_server_search(n, case.model)
    if case.strategy == "openai-native":
        # the skill's tools are declared once it is loaded: where do they sit then?
        loaded = _session(catalogs)
        loaded.load_skill(TRIAGE.name)
        payload = loaded.compile(case.target, model=case.model, strategy=case.strategy)
        namespace = next(
            t
            for t in payload.payload["tools"]
            if t["type"] == "namespace" and any(f["name"] == CREATE for f in t["tools"])
        )
        return _responses_hosted_search(n, namespace)
    if case.strategy == "openai-native-client" and n == 1:
        # declared (deferred) before its skill loads, nothing loaded it: the fakes refuse
        # to script such a call, which gpt-5.4 was seen making anyway (research note
        # provider-native-disclosure.md 2.1): sent as it would come back, for the gate
        payload = _session(catalogs).compile(case.target, model=case.model, strategy=case.strategy)
        namespace = next(
            t
            for t in payload.payload["tools"]
            if t["type"] == "namespace" and any(f["name"] == CREATE for f in t["tools"])
        )
        return _responses_stray_call(n, namespace["name"])
    return tool_calls((CREATE, ISSUE))


def _responses_stray_call(n: int, namespace: str) -> Any:
    """A Responses reply calling the skill's tool in its namespace, nothing loaded before."""
    call = {
        "type": "function_call",
        "id": f"fc_raw_{n}",
        "call_id": f"call_raw_{n}",
        "namespace": namespace,
        "name": CREATE,
        "arguments": json.dumps(ISSUE),
        "status": "completed",
    }
    return raw(
        {
            "id": f"resp_raw_{n}",
            "object": "response",
            "created_at": 0,
            "model": "gpt-5.4",
            "status": "completed",
            "output": [call],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )


def _client(case: Case, script: list[Any]) -> tuple[Any, Callable[[CompiledRequest], Any], Any]:
    """The fake for the case's target, and a `send` through the official SDK."""
    if case.target == "anthropic":
        fake: Any = FakeAnthropic().script(*script)
        sdk: Any = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
        return fake, lambda r: sdk.messages.create(**r.payload, extra_headers=r.headers), sdk
    if case.target == "gemini":
        fake = FakeGemini().script(*script)
        sdk = genai.Client(
            api_key="x", http_options=genai_types.HttpOptions(httpx_client=fake.http_client(HX))
        )
        return fake, lambda r: sdk.models.generate_content(**r.payload), sdk
    fake = (FakeResponses() if case.target == "responses" else FakeOpenAIChat()).script(*script)
    sdk = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    if case.target == "responses":
        return fake, lambda r: sdk.responses.create(**r.payload), sdk
    return fake, lambda r: sdk.chat.completions.create(**r.payload), sdk


@dataclass
class Run:
    requests: list[CompiledRequest]
    checks: list[tuple[str, str, str | None]]
    """(call name, decision, denial code) for every call the model made."""
    loads: list[str]
    """The text of every load_skill result."""


def _turns(chef: ContextChef, case: Case, send: Callable[[CompiledRequest], Any], run: Run) -> None:
    """Compile, send and answer until the model answers with text."""
    while True:
        request = chef.compile(case.target, model=case.model, strategy=case.strategy)
        run.requests.append(request)
        calls = chef.ingest(send(request))
        if not calls:
            return
        results = []
        for call in calls:
            check = chef.check_tool_call(call)
            run.checks.append((call.name, check.decision, getattr(check, "code", None)))
            result = chef.execute(call).result
            if call.name == "load_skill":
                run.loads.append(result.content)
            results.append(result)
        chef.append(tool_results(results))


def _check_run(chef: ContextChef, case: Case, fake: Any, run: Run, loaded_at: int) -> None:
    """What every strategy must show; `loaded_at`: the first request after the load."""
    assert fake.violations == ()
    assert fake.pending == 0
    for before, after in zip(run.requests, run.requests[1:], strict=False):
        assert after.edits == ()  # append-only throughout
        assert after.segments["messages"].startswith(before.segments["messages"][:-1])
    assert chef.loaded_skills == ("triage",)
    assert {CREATE, COMMENT} <= set(chef.loaded_tools)
    assert _instructions_in_history(chef) == 1
    last = json.dumps(fake.requests[-1].body)
    assert last.count(INSTRUCTIONS) == 1
    assert run.loads[-1].splitlines()[-1] == case.ending
    changes = [
        (b["type"], b["tool"].get("name"))
        for m in fake.requests[loaded_at].body.get("messages", [])
        if m.get("role") == "system" and isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") in ("tool_addition", "tool_removal")
    ]
    if case.ending == AVAILABLE and case.model == OPUS:  # revealed by a tool change
        assert sorted(name for kind, name in changes if kind == "tool_addition") == [
            COMMENT,
            CREATE,
        ]
        assert TOOL_CHANGES in fake.requests[loaded_at].headers["anthropic-beta"]
        assert TOOL_CHANGES in run.requests[loaded_at].headers["anthropic-beta"]
        for request in fake.requests[:loaded_at]:  # never before the load
            assert "tool_addition" not in json.dumps(request.body)
    elif case.ending == AVAILABLE and case.target == "responses":  # additional_tools
        added = [
            f["name"]
            for i in fake.requests[loaded_at].body["input"]
            if i.get("type") == "additional_tools"
            for t in i["tools"]
            for f in t.get("tools", [t])
        ]
        searched = {  # loaded by a search already: nothing to add
            f["name"]
            for i in fake.requests[loaded_at].body["input"]
            if i.get("type") == "tool_search_output"
            for t in i["tools"]
            for f in t.get("tools", [t])
        }
        assert sorted(added) == sorted({COMMENT, CREATE} - searched)
        assert added
        for request in fake.requests[:loaded_at]:  # never before the load
            assert "additional_tools" not in json.dumps(request.body)
    else:
        assert changes == []
        assert "anthropic-beta" not in fake.requests[loaded_at].headers


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_skill_the_model_loads_makes_its_tools_callable(catalogs_dir: Path, case: Case) -> None:
    chef = _session(catalogs_dir)
    search = case.ending == SEARCH  # the tools are revealed by our tool_search first
    script = [
        _use_tool(case, 1, catalogs_dir),
        tool_calls(("load_skill", {"name": "triage"})),
        *([tool_calls(("tool_search", {"tool_names": [CREATE, COMMENT]}))] if search else []),
        _use_tool(case, 2, catalogs_dir),
        text("Filed the issue."),
    ]
    fake, send, sdk = _client(case, script)
    run = Run(requests=[], checks=[], loads=[])
    _turns(chef, case, send, run)
    sdk.close()
    via = "defer_execute" if case.strategy == "client" else CREATE
    assert run.checks == [
        (via, "denied", "skill_not_loaded"),
        ("load_skill", "allowed", None),
        *([("tool_search", "allowed", None)] if search else []),
        (via, "allowed", None),
    ]
    assert len(run.loads) == 1 and run.loads[0].startswith('Skill "triage" loaded.\n\n')
    assert INSTRUCTIONS in run.loads[0]
    if case.strategy == "client":  # the parameters come with the load
        assert f"{CREATE}  [server: github]" in run.loads[0]
        assert "title (string, required) - Issue title" in run.loads[0]
    else:
        assert f"Tools of this skill: {CREATE}, {COMMENT}" in run.loads[0]
    denial = next(
        p.content for m in chef.history for p in m.parts if isinstance(p, ToolResult) and p.is_error
    )
    assert denial == (
        f'Tool "{CREATE}" is part of skill "triage": load it with '
        'load_skill({"name": "triage"}) first.'
    )
    final = [p for m in chef.history for p in m.parts if isinstance(p, ToolResult)][-1]
    assert final.content == "ok: " + json.dumps(ISSUE, sort_keys=True) and not final.is_error
    _check_run(chef, case, fake, run, loaded_at=2)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_skill_the_host_loads_makes_its_tools_callable(catalogs_dir: Path, case: Case) -> None:
    chef = _session(catalogs_dir)
    search = case.ending == SEARCH
    script = [
        _use_tool(case, 1, catalogs_dir),
        text("I need the triage skill for that."),
        *([tool_calls(("tool_search", {"tool_names": [CREATE, COMMENT]}))] if search else []),
        _use_tool(case, 2, catalogs_dir),
        text("Filed the issue."),
    ]
    fake, send, sdk = _client(case, script)
    run = Run(requests=[], checks=[], loads=[])
    _turns(chef, case, send, run)  # the model is refused, then asks for the skill
    chef.append(user("Use the triage skill."))
    result = chef.load_skill("triage")
    run.loads.append(result.content)
    call, answer = chef.history[-2], chef.history[-1]
    assert call.role == "assistant" and answer.role == "user"
    assert call.parts == (
        ToolCall(id="contextchef_skill_triage_1", name="load_skill", arguments={"name": "triage"}),
    )
    assert answer.parts == (result,) and result.call_id == "contextchef_skill_triage_1"
    assert chef.load_skill("triage").content.startswith(
        'Skill "triage" is already loaded; its instructions again:\n\n' + INSTRUCTIONS
    )
    assert chef.history[-1] is answer  # a second load appends nothing
    _turns(chef, case, send, run)
    sdk.close()
    via = "defer_execute" if case.strategy == "client" else CREATE
    assert run.checks == [
        (via, "denied", "skill_not_loaded"),
        *([("tool_search", "allowed", None)] if search else []),
        (via, "allowed", None),
    ]
    _check_run(chef, case, fake, run, loaded_at=2)
    sent = json.dumps(fake.requests[2].body)
    assert "contextchef_skill_triage_1" in sent and sent.count(INSTRUCTIONS) == 1


def test_the_host_cannot_load_an_unknown_skill_or_in_the_middle_of_a_turn(
    catalogs_dir: Path,
) -> None:
    chef = _session(catalogs_dir)
    with pytest.raises(UsageError, match=r"unknown skill 'nope'; registered skills: \['triage'\]"):
        chef.load_skill("nope")
    chef.append(assistant("", [ToolCall(id="c1", name="filesystem__list_allowed_directories")]))
    with pytest.raises(UsageError, match="history is empty or ends with a user message"):
        chef.load_skill("triage")
    chef.append(tool_results([ToolResult(call_id="c9", name="x", content="unrelated")]))
    with pytest.raises(UsageError, match=r"the model's calls \['c1'\] are not answered yet"):
        chef.load_skill("triage")
    assert chef.loaded_skills == () and len(chef.history) == 3


def test_unknown_or_repeated_loads_by_the_model(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    unknown = chef.execute(ToolCall(id="u", name="load_skill", arguments={"name": "deploy"}))
    assert unknown.result.is_error
    assert unknown.result.content == 'Unknown skill "deploy". Available skills: triage.'
    assert unknown.check.decision == "denied" and unknown.check.code == "unknown_skill"
    first = chef.execute(ToolCall(id="a", name="load_skill", arguments={"name": "triage"}))
    again = chef.execute(ToolCall(id="b", name="load_skill", arguments={"name": "triage"}))
    assert first.skill == again.skill == "triage"
    assert first.loaded == again.loaded == (CREATE, COMMENT)
    assert again.result.content == first.result.content.replace(
        'Skill "triage" loaded.', 'Skill "triage" is already loaded; its instructions again:'
    )
    assert chef.loaded_skills == ("triage",)


# -- what the model sees before a load ------------------------------------------------------


def test_the_tools_of_a_skill_are_neither_listed_nor_found_until_it_loads(
    catalogs_dir: Path,
) -> None:
    chef = _session(catalogs_dir)
    plain = _session(catalogs_dir, skills=False)
    tools = {t["name"]: t for t in chef.compile("anthropic", model=SONNET).payload["tools"]}
    before = {t["name"]: t for t in plain.compile("anthropic", model=SONNET).payload["tools"]}
    directory = tools["tool_search"]["description"].splitlines()
    assert f"  {CREATE}" not in directory and f"  {COMMENT}" not in directory
    assert "  github__add_issue_comment_reaction" in directory
    assert f"  {CREATE}" in before["tool_search"]["description"].splitlines()
    assert list(tools)[-3:] == ["load_skill", "tool_search", "defer_execute"]
    assert "load_skill" not in before

    def search(**arguments: Any) -> str:
        return chef.execute(
            ToolCall(id="s", name="tool_search", arguments=arguments)
        ).result.content

    exact = search(tool_names=[CREATE])
    assert exact.splitlines()[0] == (
        f'Tool "{CREATE}" is part of skill "triage": load it with '
        'load_skill({"name": "triage"}) first.'
    )
    assert "Parameters:" not in exact
    found = search(queries=["create issue", "创建问题"], limit=10)
    assert CREATE not in found and COMMENT not in found and "github__" in found
    chef.execute(ToolCall(id="l", name="load_skill", arguments={"name": "triage"}))
    assert search(tool_names=[CREATE]).startswith(f"{CREATE}  [server: github]\n")
    assert CREATE in search(queries=["create issue"], limit=10)
    # loading changes no byte of the prefix
    after = {t["name"]: t for t in chef.compile("anthropic", model=SONNET).payload["tools"]}
    assert after == tools


def test_the_load_skill_tool_lists_the_skills_within_its_budget(catalogs_dir: Path) -> None:
    skills = [
        {"name": f"skill_{i}", "description": f"Skill number {i}.", "tools": [CREATE]}
        for i in range(5)
    ]
    line = len("skill_0: Skill number 0.") + 1  # every line is this long, newline included
    chef = ContextChef(deferred=DeferredConfig(skill_directory_chars=3 * line))
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_tools(load_catalog(catalogs_dir / "github.json").tools)
    registered = chef.register_skills(skills)
    assert [s.name for s in registered] == [f"skill_{i}" for i in range(5)]
    loader = next(
        t for t in chef.compile("openai").payload["tools"] if t["function"]["name"] == "load_skill"
    )
    description = loader["function"]["description"]
    assert description.split("\n\n", 1)[1] == (
        "<available_skills>\n"
        "skill_0: Skill number 0.\n"
        "skill_1: Skill number 1.\n"
        "skill_2: Skill number 2.\n"
        "[2 more skill(s) are not listed here; their names are in the enum of 'name'.]\n"
        "</available_skills>"
    )
    assert loader["function"]["parameters"] == {
        "additionalProperties": False,
        "properties": {
            "name": {
                "description": "The exact name of a skill listed in the description.",
                "enum": [f"skill_{i}" for i in range(5)],
                "type": "string",
            }
        },
        "required": ["name"],
        "type": "object",
    }
    wide = ContextChef()
    wide.register_tools(load_catalog(catalogs_dir / "github.json").tools)
    wide.register_skills(skills)
    text_all = wide.view.skill_loader.description  # type: ignore[union-attr]
    assert "skill_4: Skill number 4." in text_all and "more skill(s)" not in text_all


# -- registration -------------------------------------------------------------------------


def _payload_names(chef: ContextChef) -> list[str]:
    return [t["name"] for t in chef.compile("anthropic").payload["tools"]]


@pytest.mark.parametrize(
    ("skills", "error", "message"),
    [
        (
            [{**TRIAGE.to_dict(), "tools": ["create_issue", "github__create_isue"]}],
            UnknownToolError,
            r"skill 'triage' names the tool 'github__create_isue', which is not registered; "
            r"closest names: \['github__create_issue'",
        ),
        (
            [TRIAGE, {"name": "triage", "tools": [COMMENT]}],
            UsageError,
            r"skills \['triage'\] are registered twice",
        ),
        (
            [{"name": CREATE, "tools": [COMMENT]}],
            ToolNameConflictError,
            r"skill names \['github__create_issue'\] are taken by a tool",
        ),
        (
            [{"name": "create_issue", "tools": [COMMENT]}],
            ToolNameConflictError,
            r"skill names \['create_issue'\] are taken by a tool",
        ),
        (
            [{"name": "tool_search", "tools": [COMMENT]}],
            ToolNameConflictError,
            r"skill names \['tool_search'\] are taken",
        ),
        (
            [{"name": "bad name", "tools": [COMMENT]}],
            UsageError,
            r"skill name 'bad name' is not a provider-legal tool name",
        ),
        ([{"name": "empty", "tools": []}], UsageError, r"needs a non-empty list of tool names"),
    ],
    ids=[
        "unknown-tool",
        "duplicate",
        "tool-wire-name",
        "tool-own-name",
        "meta-tool",
        "bad-name",
        "no-tools",
    ],
)
def test_registration_errors_name_the_skill_and_register_nothing(
    catalogs_dir: Path, skills: list[Any], error: type[Exception], message: str
) -> None:
    chef = _session(catalogs_dir, skills=False)
    before = _payload_names(chef)
    with pytest.raises(error, match=message):
        chef.register_skills(skills)
    assert chef.skills == ()
    assert _payload_names(chef) == before and "load_skill" not in before


def test_a_skill_name_stays_taken_and_skills_register_in_batches(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    with pytest.raises(UsageError, match=r"skills \['triage'\] are registered twice"):
        chef.register_skills([TRIAGE])
    with pytest.raises(ToolNameConflictError, match="clash with contextchef's own tools"):
        chef.register_tools(
            [{"name": "triage", "description": "x", "input_schema": {"type": "object"}}]
        )
    with pytest.raises(ToolNameConflictError, match="clash with contextchef's own tools"):
        chef.register_tools(
            [{"name": "load_skill", "description": "x", "input_schema": {"type": "object"}}]
        )
    added = chef.register_skills(
        [{"name": "review", "instructions": "Be kind.", "tools": ["get_me"]}]
    )
    assert added == (Skill(name="review", instructions="Be kind.", tools=("github__get_me",)),)
    assert [s.name for s in chef.skills] == ["review", "triage"]
    other = _session(catalogs_dir, skills=False)
    other.register_tools(
        [{"name": "load_skill", "description": "x", "input_schema": {"type": "object"}}]
    )
    with pytest.raises(ToolNameConflictError, match="named 'load_skill', which skills need"):
        other.register_skills([TRIAGE])


def test_a_skill_cannot_hold_an_ambiguous_or_library_tool() -> None:
    chef = ContextChef(memory=None, offload_dir=None)
    for server in ("alpha", "beta"):
        chef.register_tools(
            [{"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}],
            server=server,
        )
    with pytest.raises(
        UsageError, match=r"'lookup' matches 2 tools \['alpha__lookup', 'beta__lookup'\]"
    ):
        chef.register_skills([{"name": "s", "tools": ["lookup"]}])
    assert chef.register_skills([{"name": "s", "tools": ["beta__lookup"]}])[0].tools == (
        "beta__lookup",
    )


# -- snapshots ----------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "strategy"), [(SONNET, "client"), (OPUS, "anthropic-inline")])
def test_a_snapshot_restores_the_skills_and_what_was_loaded(
    catalogs_dir: Path, model: str, strategy: str
) -> None:
    case = Case("anthropic", model, strategy, "")
    chef = _session(catalogs_dir)
    fake, send, sdk = _client(
        case,
        [
            tool_calls(("load_skill", {"name": "triage"})),
            _use_tool(case, 1, catalogs_dir),
            text("Filed."),
        ],
    )
    run = Run(requests=[], checks=[], loads=[])
    _turns(chef, case, send, run)
    sdk.close()
    assert fake.violations == ()
    chef.append(user("Now comment on it."))
    snap = json.loads(json.dumps(chef.snapshot()))
    assert snap["skills"] == [
        {
            "name": "triage",
            "description": TRIAGE.description,
            "instructions": INSTRUCTIONS,
            "tools": [CREATE, COMMENT],
        }
    ]
    assert snap["loaded_skills"] == ["triage"]
    fresh = _session(catalogs_dir, skills=False)  # the snapshot brings its skills
    same = _session(catalogs_dir)  # or the same ones are registered
    fresh.restore(copy.deepcopy(snap), allow_unsigned=True)
    same.restore(copy.deepcopy(snap), allow_unsigned=True)
    expected = chef.compile("anthropic", model=model, strategy=strategy).to_json()
    for restored in (fresh, same):
        assert restored.skills == chef.skills and restored.loaded_skills == ("triage",)
        assert restored.compile("anthropic", model=model, strategy=strategy).to_json() == expected
        wrapped = {"tool_name": CREATE, "params": ISSUE}
        call = (
            ToolCall(id="x", name="defer_execute", arguments=wrapped)
            if strategy == "client"
            else ToolCall(id="x", name=CREATE, arguments=ISSUE)
        )
        assert restored.check_tool_call(call).decision == "allowed"
        refused = _session(catalogs_dir).check_tool_call(call)  # the skill not loaded
        assert refused.decision == "denied" and refused.code == "skill_not_loaded"


def test_a_snapshot_with_other_skills_or_missing_tools_is_refused(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    chef.load_skill("triage")
    snap = chef.snapshot()
    other = _session(catalogs_dir, skills=False)
    other.register_skills([{"name": "review", "tools": ["get_me"]}])
    before = other.snapshot()
    with pytest.raises(
        SnapshotMismatchError, match=r"registered skills differ .*missing \['triage'\]"
    ):
        other.restore(snap, allow_unsigned=True)
    assert other.snapshot() == before
    bare = ContextChef(defer=["github__*"])
    bare.register_tools(load_catalog(catalogs_dir / "mcp-filesystem.json").tools)
    edited = copy.deepcopy(snap)
    edited["skills"][0]["tools"] = ["github__nope"]
    with pytest.raises(SnapshotMismatchError, match=r"skills hold tools \['github__nope'\]"):
        _session(catalogs_dir, skills=False).restore(edited, allow_unsigned=True)
    edited = copy.deepcopy(snap)
    edited["skills"] = []
    with pytest.raises(SnapshotMismatchError, match=r"loaded skills \['triage'\]"):
        _session(catalogs_dir, skills=False).restore(edited, allow_unsigned=True)


# -- compaction ---------------------------------------------------------------------------


def test_compaction_restates_the_skills_it_summarized_away(catalogs_dir: Path) -> None:
    case = Case("anthropic", SONNET, "client", DEFER)
    chef = _session(catalogs_dir)
    chef.set_history([user("Hello.")])
    fake, send, sdk = _client(
        case,
        [
            text("Hi."),
            tool_calls(("load_skill", {"name": "triage"})),
            _use_tool(case, 1, catalogs_dir),
            text("Filed."),
            text("Filing one more."),
        ],
    )
    run = Run(requests=[], checks=[], loads=[])
    _turns(chef, case, send, run)
    chef.append(user("Triage the open issues."))
    _turns(chef, case, send, run)
    chef.append(user("File one more."))
    transcripts: list[str] = []

    def summarize(transcript: str) -> str:
        transcripts.append(transcript)
        return f"Summary {len(transcripts)}: the user greeted; issues were triaged."

    chef.compact(summarize, keep_recent_turns=2)  # the load stays: nothing to restate
    first = chef.history[0].parts[0]
    assert isinstance(first, TextPart)
    assert first.text == (
        "<conversation_summary>\nSummary 1: the user greeted; issues were triaged.\n"
        "</conversation_summary>"
    )
    assert _instructions_in_history(chef) == 1
    chef.compact(summarize, keep_recent_turns=1)  # the load is summarized away
    assert '→ tool load_skill({"name":"triage"})' in transcripts[1].splitlines()
    summary = chef.history[0].parts[0]
    assert isinstance(summary, TextPart)
    assert summary.text.split("\n\n", 1)[1].startswith(
        "Skills you loaded earlier stay loaded; follow their instructions.\n\n"
        'Skill "triage":\n\n' + INSTRUCTIONS + "\n\nTools of this skill:\n\n"
        f"{CREATE}  [server: github]"
    )
    assert summary.text.endswith(DEFER)
    assert not any(c.name == "load_skill" for m in chef.history for c in m.tool_calls)
    assert _instructions_in_history(chef) == 1
    assert chef.loaded_skills == ("triage",) and {CREATE, COMMENT} <= set(chef.loaded_tools)
    wrapped = {"tool_name": CREATE, "params": ISSUE}
    check = chef.check_tool_call(ToolCall(id="y", name="defer_execute", arguments=wrapped))
    assert check.decision == "allowed"
    request = chef.compile("anthropic", model=SONNET)
    assert request.to_json().count(INSTRUCTIONS) == 1
    assert [e.kind for e in request.edits] == ["history"]  # the compaction, reported
    send(request)
    sdk.close()
    assert fake.violations == () and fake.pending == 0
    assert json.dumps(fake.requests[-1].body).count(INSTRUCTIONS) == 1


def test_a_host_load_before_the_first_compile_warns_which_strategy_it_assumed(
    catalogs_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Fresh-user report: loaded before any compile, the text names ``defer_execute``
    even if the session then compiles a native strategy; the host is told so."""
    chef = _session(catalogs_dir)
    with caplog.at_level("WARNING", logger="contextchef"):
        text = chef.load_skill("triage").content
    assert "defer_execute" in text
    assert "loaded before the first compile" in caplog.text
    caplog.clear()
    later = _session(catalogs_dir)
    later.compile("anthropic", model=OPUS, strategy="anthropic-inline")
    with caplog.at_level("WARNING", logger="contextchef"):
        assert "defer_execute" not in later.load_skill("triage").content
    assert "before the first compile" not in caplog.text


def test_a_blocked_skill_tool_is_neither_listed_nor_revealed_by_the_load(
    catalogs_dir: Path,
) -> None:
    """Fresh-user report: ``tool_search`` hid blocked tools, but ``load_skill`` listed them
    as available and the next request offered them (``tool_addition``), then the gate
    refused the call. A load now leaves out what the gate refuses whatever the arguments."""
    chef = _session(catalogs_dir)
    chef.compile("anthropic", model=OPUS, strategy="anthropic-inline")
    chef.set_blocked_tools([CREATE])
    text = chef.execute(ToolCall(id="s1", name="load_skill", arguments={"name": "triage"}))
    content = text.result.content
    assert CREATE not in content and COMMENT in content
    assert CREATE not in chef.loaded_tools and COMMENT in chef.loaded_tools
    chef.append(assistant("", [ToolCall(id="s1", name="load_skill", arguments={"name": "triage"})]))
    chef.append(tool_results([text.result]))
    request = chef.compile("anthropic", model=OPUS, strategy="anthropic-inline")
    added = json.dumps(request.payload["messages"][-1])
    assert COMMENT in added and CREATE not in added


def test_a_host_load_after_a_discarded_compile_does_not_count_as_its_answer(
    catalogs_dir: Path,
) -> None:
    """Fresh-user report (breakit4 09): a compile made and not sent, then
    ``chef.load_skill`` (which appends an assistant ``load_skill`` call): the host's
    exchange counted as the model's answer, so the next request did not extend the last one
    sent and reported no edit. The host's own exchange is not an answer."""
    chef = _session(catalogs_dir)
    fake = FakeAnthropic().script(text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    sent = chef.compile("anthropic", model=SONNET, strategy="client")
    chef.ingest(client.messages.create(**sent.payload))
    chef.append(user("next"))
    discarded = chef.compile("anthropic", model=SONNET, strategy="flat")  # never sent
    assert [e.kind for e in discarded.edits] == ["tools"]
    chef.load_skill("triage")
    retry = chef.compile("anthropic", model=SONNET, strategy="client")
    n = len(sent.payload["messages"])
    assert retry.payload["messages"][: n - 1] == sent.payload["messages"][: n - 1]
    assert retry.edits == ()  # back to what was sent: an extension, truthfully no edit
    again = chef.compile("anthropic", model=SONNET, strategy="flat")
    assert [e.kind for e in again.edits] == ["tools"]  # still decided against what was sent
    client.close()
