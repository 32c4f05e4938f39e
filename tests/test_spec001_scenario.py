"""Spec 001 (Tool Management / Pruner) walked top to bottom, in Python naming.

Each test is one section of the spec, in the spec's order; read together they are the
spec's examples as a Python user writes them. Where the implementation deliberately
differs from the (TypeScript) spec, the test asserts the documented Python behaviour and
a ``DEVIATION:`` comment names the difference.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from contextchef import (
    Allowed,
    Announcement,
    ContextChef,
    Denied,
    FileMemoryStore,
    InMemoryStore,
    NestedNamespaceError,
    ToolCall,
    ToolNameConflictError,
    UnknownActionError,
    UnknownToolkitError,
    UsageError,
    assistant,
    tool_results,
    user,
)
from contextchef.providers import CacheAuditFinding
from contextchef.session._chef import DEFAULT_ANCHOR
from spec001_example import NAMESPACES

OBJ: dict[str, Any] = {"type": "object", "properties": {}}

ADDED = "Tools newly available: read_file, grep"
REMOVED = "web_search has been withdrawn; calls to it will be rejected"
BOTH_BLOCK = (
    "<announcements>\n"
    '<announcement id="tools:added">\n' + ADDED + "\n</announcement>\n\n"
    '<announcement id="tools:removed">\n' + REMOVED + "\n</announcement>\n"
    "</announcements>"
)

REMOVED_BLOCK = (
    '<announcements>\n<announcement id="tools:removed">\n' + REMOVED + "\n</announcement>\n"
    "</announcements>"
)
GREP_BLOCK = (
    '<announcements>\n<announcement id="tools:added">\nTools newly available: grep\n'
    "</announcement>\n</announcements>"
)
GONE = "<announcements>\n(none: earlier announcements no longer apply)\n</announcements>"
"""How an emptied announcement set is stated (`contextchef.session._volatile.GONE`)."""
EPHEMERAL = {"type": "ephemeral"}
SYSTEM_MODEL = "claude-opus-5-5"
"""A Claude model that takes mid-conversation system messages."""


def openai_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions ``tool_calls`` entry, as the spec's agent loop receives it."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def as_tool_call(call: dict[str, Any]) -> ToolCall:
    fn = call["function"]
    return ToolCall(id=call["id"], name=fn["name"], arguments=fn["arguments"])


def openai_tool_names(payload: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in payload["tools"]]


# -- Flat Mode ------------------------------------------------------------------------------


def test_01_flat_mode_prune_by_task_and_allowlists() -> None:
    chef = ContextChef()
    chef.register_tools(
        [
            {"name": "read_file", "description": "Read a file", "tags": ["file", "read"]},
            {"name": "run_bash", "description": "Run a command", "tags": ["shell"]},
            {"name": "get_time", "description": "Get timestamp"},  # no tags = always kept
        ]
    )

    result = chef.pruner.prune_by_task("Read the auth.ts file")
    # DEVIATION: the spec shows [read_file, get_time]; results come in registry order,
    # which is sorted by name so it never depends on registration order.
    assert [t.name for t in result.tools] == ["get_time", "read_file"]
    assert result.removed == ("run_bash",)
    assert (result.kept, result.total) == (2, 3)

    # Word boundaries: "files" is not the tag "file"; case-insensitive.
    assert [t.name for t in chef.pruner.prune_by_task("list FILES").tools] == ["get_time"]
    assert [t.name for t in chef.pruner.prune_by_task("READ-FILE a.py").tools] == [
        "get_time",
        "read_file",
    ]

    # "Also supports allowOnly(names) and pruneByTaskAndAllowlist(task, names)."
    only = chef.pruner.allow_only(["run_bash"])
    assert [t.name for t in only.tools] == ["run_bash"]
    assert only.removed == ("get_time", "read_file")

    union = chef.pruner.prune_by_task_and_allowlist("Read the auth.ts file", ["run_bash"])
    assert [t.name for t in union.tools] == ["get_time", "read_file", "run_bash"]
    both = chef.pruner.prune_by_task_and_allowlist(
        "Read the auth.ts file", ["read_file", "run_bash"], strategy="intersection"
    )
    assert [t.name for t in both.tools] == ["read_file"]  # untagged get_time not allowlisted

    # A prune result is a query; apply() makes it the structural whitelist.
    chef.set_history([user("Read the auth.ts file")])
    assert openai_tool_names(chef.compile("openai").payload) == [
        "get_time",
        "read_file",
        "run_bash",
    ]
    chef.pruner.apply(result)
    assert chef.mode == "pruned"
    assert openai_tool_names(chef.compile("openai").payload) == ["get_time", "read_file"]
    chef.pruner.clear()
    assert openai_tool_names(chef.compile("openai").payload) == [
        "get_time",
        "read_file",
        "run_bash",
    ]


# -- Runtime Blocklist (Permission Gate) --------------------------------------------------


def test_02_runtime_blocklist_is_dispatch_side_only() -> None:
    chef = ContextChef()
    chef.register_tools(
        [
            {"name": "read_file", "description": "Read a file", "input_schema": OBJ},
            {"name": "delete_file", "description": "Delete a file", "input_schema": OBJ},
            {"name": "tail_logs", "description": "Tail the logs", "input_schema": OBJ},
        ]
    )
    chef.set_system_prompt("You are careful.")
    chef.set_history([user("clean up")])
    before = {t: chef.compile(t).to_json() for t in ("anthropic", "openai", "responses", "gemini")}

    chef.pruner.set_blocked_tools(["delete_file", "tail_logs"])
    assert chef.blocked_tools == ("delete_file", "tail_logs")
    # KV cache preserved: the compiled tools array (indeed the whole payload) is unchanged.
    for target, text in before.items():
        assert chef.compile(target).to_json() == text

    # The spec's agent loop: gate every call before dispatch.
    response_calls = [
        openai_call("c1", "delete_file", {}),
        openai_call("c2", "read_file", {}),
        openai_call("c3", "tail_logs", {}),
    ]
    history: list[dict[str, Any]] = []
    executed: list[str] = []
    for call in response_calls:
        # DEVIATION: the spec passes {name: ...}; check_tool_call takes a ToolCall (the
        # Pruner's is_namespace_call/resolve_namespace and handle_tool accept dicts).
        check = chef.check_tool_call(as_tool_call(call))
        if not isinstance(check, Allowed):
            history.append({"role": "tool", "tool_call_id": call["id"], "content": check.reason})
            continue
        executed.append(check.wire_name)
    assert executed == ["read_file"]
    assert history == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": 'Tool "delete_file" is currently blocked.',
        },
        {"role": "tool", "tool_call_id": "c3", "content": 'Tool "tail_logs" is currently blocked.'},
    ]

    # Discriminated union: reason exists only on a denial.
    denied = chef.check_tool_call(ToolCall(id="x", name="delete_file"))
    assert isinstance(denied, Denied) and denied.decision == "denied" and denied.code == "blocked"
    allowed = chef.check_tool_call(ToolCall(id="y", name="read_file"))
    assert isinstance(allowed, Allowed) and allowed.decision == "allowed"
    assert not hasattr(allowed, "reason")

    # Replace semantics, `*` patterns, `[]` clears; bytes never move.
    chef.pruner.set_blocked_tools(["*_file"])
    assert chef.check_tool_call(ToolCall(id="z", name="read_file")).decision == "denied"
    assert chef.check_tool_call(ToolCall(id="z", name="tail_logs")).decision == "allowed"
    chef.pruner.set_blocked_tools([])
    assert chef.check_tool_call(ToolCall(id="z", name="delete_file")).decision == "allowed"
    assert chef.compile("anthropic").to_json() == before["anthropic"]


# -- Namespace + Lazy Loading (Two-Layer Architecture) ------------------------------------

TOOLKITS: list[dict[str, Any]] = [
    {
        "name": "Weather",
        "description": "Weather forecast APIs",
        "tools": [
            {
                "name": "get_forecast",
                "description": "Forecast for a city",
                "parameters": {"city": {"type": "string"}},
            }
        ],
    },
    {
        "name": "Database",
        "description": "SQL query and schema inspection",
        "tools": [
            {
                "name": "run_sql",
                "description": "Run a SQL query",
                "parameters": {"query": {"type": "string"}},
            }
        ],
    },
]

DIRECTORY = (
    "<available_toolkits>\n"
    '<toolkit name="Database">SQL query and schema inspection</toolkit>\n'
    '<toolkit name="Weather">Weather forecast APIs</toolkit>\n'
    "</available_toolkits>"
)


def two_layer_chef(**kwargs: Any) -> ContextChef:
    chef = ContextChef(**kwargs)
    chef.register_namespaces(NAMESPACES)  # Layer 1: stable namespace tools
    chef.register_toolkits(TOOLKITS)  # Layer 2: on-demand toolkits
    return chef


def test_03_namespaces_and_lazy_toolkits() -> None:
    chef = two_layer_chef()

    # Compile: tools [file_ops, terminal, load_toolkit], always stable.
    tools, directory_xml = chef.pruner.compile()
    assert [t.name for t in tools] == ["file_ops", "terminal", "load_toolkit"]
    assert directory_xml == DIRECTORY
    file_ops = tools[0]
    assert file_ops.input_schema["required"] == ["action", "args"]
    assert file_ops.input_schema["properties"]["action"]["enum"] == ["read_file", "write_file"]
    assert file_ops.description.startswith("File system operations\n")
    assert "- write_file: Write to a file\n  path (string, required)" in file_ops.description
    assert tools[2].input_schema["required"] == ["toolkit_name"]
    assert "enum" not in json.dumps(tools[2].input_schema)  # static: no live toolkit enum

    chef.set_system_prompt("You are an agent.\n\n" + directory_xml)
    chef.set_history([user("What's the weather in Paris?")])
    first = chef.compile("openai")
    # DEVIATION: the full payload also carries the meta-tools tool_search/defer_execute,
    # through which a loaded toolkit's tools are called without rewriting the array.
    assert openai_tool_names(first.payload) == [
        "file_ops",
        "terminal",
        "load_toolkit",
        "tool_search",
        "defer_execute",
    ]

    # Agent loop integration.
    ns_call = openai_call("c1", "file_ops", {"action": "read_file", "args": {"path": "a.py"}})
    loader = openai_call("c2", "load_toolkit", {"toolkit_name": "Weather"})
    assert chef.pruner.is_namespace_call(ns_call) and not chef.pruner.is_toolkit_loader(ns_call)
    assert chef.pruner.is_toolkit_loader(loader) and not chef.pruner.is_namespace_call(loader)

    # DEVIATION: resolve_namespace returns (namespace, tool_name, args), not {toolName, args}.
    namespace, tool_name, args = chef.pruner.resolve_namespace(ns_call)
    assert (namespace, tool_name, args) == ("file_ops", "read_file", {"path": "a.py"})
    as_dict = {"name": "terminal", "arguments": {"action": "run_bash", "args": {"command": "ls"}}}
    assert chef.pruner.resolve_namespace(as_dict) == ("terminal", "run_bash", {"command": "ls"})
    with pytest.raises(UnknownActionError, match="available actions: read_file, write_file"):
        chef.pruner.resolve_namespace({"name": "file_ops", "arguments": {"action": "rm"}})

    # The gate sees the real sub-tool, so the blocklist applies to it.
    chef.pruner.set_blocked_tools(["write_file"])
    write = ToolCall(
        id="c3",
        name="file_ops",
        arguments=json.dumps({"action": "write_file", "args": {"path": "a", "content": "x"}}),
    )
    assert chef.check_tool_call(write) == Denied(
        reason='Tool "write_file" is currently blocked.',
        code="blocked",
        tool=chef.registry.by_wire_name("write_file"),
    )
    read = chef.check_tool_call(as_tool_call(ns_call))
    assert isinstance(read, Allowed) and read.via == "namespace:file_ops"
    chef.pruner.set_blocked_tools([])

    # LLM requested a toolkit: expand it.
    parsed = json.loads(loader["function"]["arguments"])
    new_tools = chef.pruner.extract_toolkit(parsed["toolkit_name"])
    assert [t.name for t in new_tools] == ["get_forecast"]
    assert chef.loaded_toolkits == ("Weather",)
    with pytest.raises(UnknownToolkitError, match=r"available toolkits: \['Database', 'Weather'\]"):
        chef.pruner.extract_toolkit("Calendar")
    # DEVIATION: instead of merging new_tools into the next request, the tools array stays
    # byte-identical and the loaded tools are called through defer_execute.
    assert chef.compile("openai").to_json() == first.to_json()
    forecast = ToolCall(
        id="c4",
        name="defer_execute",
        arguments=json.dumps({"tool_name": "get_forecast", "params": {"city": "Paris"}}),
    )
    checked = chef.check_tool_call(forecast)
    assert isinstance(checked, Allowed) and checked.wire_name == "get_forecast"
    assert checked.via == "defer_execute"

    # execute() on a load_toolkit call loads it too, and returns the schemas as text.
    done = chef.execute(
        as_tool_call(openai_call("c5", "load_toolkit", {"toolkit_name": "Database"}))
    )
    assert done.result.content.startswith('Loaded toolkit "Database" (1 tool).')
    assert set(chef.loaded_toolkits) == {"Database", "Weather"}
    assert chef.compile("openai").to_json() == first.to_json()

    # "One level is enough": a namespace inside a namespace is rejected.
    nested = {
        "name": "outer",
        "description": "",
        "tools": [{"name": "inner", "description": "", "tools": [{"name": "x"}]}],
    }
    with pytest.raises(NestedNamespaceError, match="groups nest one level only"):
        chef.register_namespaces([nested])


def test_03b_blocklist_applies_to_load_toolkit() -> None:
    # Spec: "Block specific tools at dispatch time" (e.g. feature flags); load_toolkit is
    # a tool of the compiled array like any other, so blocking it must refuse its calls.
    chef = two_layer_chef()
    chef.pruner.set_blocked_tools(["load_toolkit"])
    call = ToolCall(id="k1", name="load_toolkit", arguments='{"toolkit_name": "Weather"}')
    check = chef.check_tool_call(call)
    assert isinstance(check, Denied)
    assert check.reason == 'Tool "load_toolkit" is currently blocked.'
    chef.execute(call)
    assert chef.loaded_toolkits == ()
    # Blocking a namespace by its own name refuses every action of it.
    chef.pruner.set_blocked_tools(["file_ops"])
    read = ToolCall(id="k2", name="file_ops", arguments='{"action": "read_file", "args": {}}')
    assert chef.check_tool_call(read).decision == "denied"


# -- Deferred tool loading: defer_loading -------------------------------------------------


def test_04_defer_loading_passthrough_on_anthropic_native() -> None:
    chef = ContextChef()
    chef.register_tools(
        [
            {"name": "read_file", "description": "Read a file", "input_schema": OBJ},
            {
                "name": "web_search",
                "description": "Search the web",
                "input_schema": OBJ,
                "defer_loading": True,
            },
        ]
    )
    chef.set_history([user("hi")])

    native = chef.compile("anthropic", strategy="anthropic-native")
    assert native.payload["tools"] == [
        {"name": "read_file", "description": "Read a file", "input_schema": OBJ},
        {
            "name": "web_search",
            "description": "Search the web",
            "input_schema": OBJ,
            "defer_loading": True,
        },
        {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    ]
    # DEVIATION: the spec calls the flag an annotation passed verbatim on the Anthropic
    # target; here it is emitted only under strategy="anthropic-native" (the provider's own
    # tool search). The default "client" strategy defers the tool behind tool_search /
    # defer_execute, and no target ever carries the field otherwise.
    for target in ("anthropic", "openai", "responses", "gemini"):
        assert "defer_loading" not in chef.compile(target).to_json()
    with pytest.raises(UsageError, match="needs the anthropic target"):
        chef.compile("openai", strategy="anthropic-native")

    # Deferred definitions never touch the cache key.
    chef.register_tools(
        [
            {
                "name": "grep",
                "description": "Search files",
                "input_schema": OBJ,
                "defer_loading": True,
            }
        ]
    )
    again = chef.compile("anthropic", strategy="anthropic-native")
    assert again.prefix_fingerprint == native.prefix_fingerprint
    assert [t["name"] for t in again.payload["tools"]] == [
        "read_file",
        "grep",
        "web_search",
        "tool_search_tool_bm25",
    ]
    # After a native compile the provider expands deferred tools once its search revealed
    # them: a direct call before that is refused (the model was not shown the tool), after
    # it passes.
    early = chef.check_tool_call(ToolCall(id="s", name="web_search"))
    assert early.decision == "denied" and "not been revealed" in early.reason
    found = {"type": "tool_reference", "tool_name": "web_search"}
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25"}
    chef.ingest(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-5",
            "content": [
                {**search, "input": {"query": "web"}},
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [found],
                    },
                },
            ],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    assert chef.check_tool_call(ToolCall(id="s", name="web_search")).decision == "allowed"


# -- Library-owned tools ------------------------------------------------------------------


def test_05_library_owned_memory_tools_legacy() -> None:
    chef = ContextChef(memory=InMemoryStore())  # tools="legacy" is the default
    chef.register_tools([{"name": "read_file", "description": "Read", "tags": ["file"]}])
    chef.set_history([user("hi")])
    # DEVIATION: with a memory store both sets also carry read_memories (read-only, no
    # arguments): memories reach the model as its result, not as user text.
    assert chef.owned_tool_names == ("create_memory", "modify_memory", "read_memories")

    # Appended after pruning: even a prune that keeps nothing leaves them in place.
    chef.pruner.apply(chef.pruner.prune_by_task("nothing relevant"))
    first = chef.compile("openai")
    assert openai_tool_names(first.payload) == ["create_memory", "modify_memory", "read_memories"]
    with pytest.raises(ToolNameConflictError):
        chef.register_tools([{"name": "create_memory", "description": "mine"}])

    # The spec's loop: owned tools go through owns_tool / handle_tool.
    response_calls = [
        openai_call("m1", "create_memory", {"key": "user_timezone", "value": "UTC+2"}),
        openai_call("m2", "read_file", {}),
    ]
    history: list[dict[str, Any]] = []
    yours: list[str] = []
    for call in response_calls:
        if chef.owns_tool(call["function"]["name"]):
            content = chef.handle_tool(
                {"name": call["function"]["name"], "arguments": call["function"]["arguments"]}
            )
            history.append({"role": "tool", "tool_call_id": call["id"], "content": content})
            continue
        yours.append(call["function"]["name"])
    assert history == [
        {"role": "tool", "tool_call_id": "m1", "content": 'Memory "user_timezone" created.'}
    ]
    assert yours == ["read_file"]

    # Static schemas: creating memories leaves system and tools byte-identical; the
    # memories come in as a read_memories call and its result after the user's turn.
    second = chef.compile("openai")
    assert second.segments["tools"] == first.segments["tools"]
    assert second.segments["system"] == first.segments["system"]
    assert second.payload["messages"] == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [openai_call("contextchef_memories_0001", "read_memories", {})],
        },
        {
            "role": "tool",
            "tool_call_id": "contextchef_memories_0001",
            "content": '<memories>\n<memory key="user_timezone">\nUTC+2\n</memory>\n</memories>',
        },
    ]
    assert chef.history == (user("hi"),)  # memories never enter the stored history

    update = {"key": "user_timezone", "action": "update", "value": "UTC"}
    assert chef.handle_tool({"name": "modify_memory", "arguments": update}) == (
        'Memory "user_timezone" updated.'
    )
    bad = chef.handle_tool({"name": "create_memory", "arguments": {"key": "a b", "value": "x"}})
    assert bad.startswith("Invalid arguments for tool \"create_memory\":\n- key: 'a b' does not")
    delete = {"key": "user_timezone", "action": "delete"}
    assert chef.handle_tool({"name": "modify_memory", "arguments": delete}) == (
        'Memory "user_timezone" deleted.'
    )
    chef.pruner.set_blocked_tools(["create_memory"])
    blocked = chef.handle_tool({"name": "create_memory", "arguments": {"key": "k", "value": "v"}})
    assert blocked == 'Tool "create_memory" is currently blocked.'
    with pytest.raises(UsageError, match="not a contextchef-owned tool"):
        chef.handle_tool({"name": "read_file", "arguments": {}})


def test_06_library_owned_unified_tools_and_new_context(tmp_path: Path) -> None:
    transcripts: list[str] = []

    def summarize(transcript: str) -> str:
        transcripts.append(transcript)
        return "Fixed the auth bug in auth.ts."

    store = FileMemoryStore(tmp_path / "memories.json")
    chef = ContextChef(memory=store, memory_tools="unified", on_overflow=summarize)
    # The two sets never co-exist: unified is `context` (+ new_context with a handoff);
    # read_memories (see test_05) is in both.
    assert chef.owned_tool_names == ("context", "read_memories", "new_context")
    assert not chef.owns_tool("create_memory") and not chef.owns_tool("modify_memory")
    assert ContextChef(memory=InMemoryStore(), on_overflow=summarize).owned_tool_names == (
        "create_memory",
        "modify_memory",
        "read_memories",
    )

    create = {"action": "create", "key": "repo", "value": "contextchef"}
    assert chef.handle_tool({"name": "context", "arguments": create}) == 'Memory "repo" created.'
    assert json.loads(store.path.read_text("utf-8")) == {
        "memories": {"repo": "contextchef"},
        "version": 1,
    }

    chef.set_history([user("fix the auth bug"), assistant("Done: auth.ts fixed.")])
    before = chef.compile("anthropic")
    schema = next(t for t in before.payload["tools"] if t["name"] == "context")["input_schema"]
    assert schema["properties"]["action"]["enum"] == ["create", "update", "delete"]

    # The model says the phase is over: new_context makes the next compile summarize.
    chef.append(assistant("", [ToolCall(id="n1", name="new_context")]))
    reply = chef.execute(ToolCall(id="n1", name="new_context"))
    assert reply.result.content.startswith("New context requested")
    assert chef.new_context_pending
    chef.append(tool_results([reply.result]))
    after = chef.compile("anthropic")
    assert not chef.new_context_pending
    assert len(transcripts) == 1 and "fix the auth bug" in transcripts[0]
    assert len(chef.history) == 1
    assert after.payload["messages"][0] == {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "<conversation_summary>\nFixed the auth bug in auth.ts.\n"
                "</conversation_summary>",
            }
        ],
    }
    # the stored memories follow the summary as a read_memories result (the request's
    # last block, so it carries the cache breakpoint)
    assert after.payload["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "contextchef_memories_0001",
                    "name": "read_memories",
                    "input": {},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "contextchef_memories_0001",
                    "content": '<memories>\n<memory key="repo">\ncontextchef\n</memory>\n'
                    "</memories>",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
    ]
    assert after.segments["tools"] == before.segments["tools"]

    # ...or the host says so: request_new_context() before the next user turn.
    chef.append(assistant("ok"), user("now write the docs"))
    chef.request_new_context()
    chef.compile("anthropic")
    assert len(transcripts) == 2
    assert chef.history[-1].parts[-1].text == "now write the docs"  # kept verbatim
    with pytest.raises(UsageError, match="needs an overflow handoff"):
        ContextChef().request_new_context()


# -- Announcements ------------------------------------------------------------------------


class MyState(BaseModel):
    branch: str


def announcing_chef(**kwargs: Any) -> ContextChef:
    chef = ContextChef(**kwargs)
    chef.register_tools([{"name": "read_file", "description": "Read a file", "input_schema": OBJ}])
    chef.set_system_prompt("You are careful.")
    chef.set_history([user("hi"), assistant("hello"), user("go on")])
    return chef


def test_07_announcements_state_not_event() -> None:
    chef = announcing_chef()
    clean = chef.compile("anthropic", model=SYSTEM_MODEL)

    chef.announce("tools:added", ADDED)
    chef.announce("tools:removed", REMOVED)
    assert chef.get_announcements() == (
        Announcement(id="tools:added", content=ADDED, channel="auto"),
        Announcement(id="tools:removed", content=REMOVED, channel="auto"),
    )

    # Every standing announcement renders into one block, in insertion order ('auto' is
    # 'system' on Anthropic: one system entry after the conversation, on a model that
    # takes mid-conversation system messages; as the last entry it gets the breakpoint).
    req = chef.compile("anthropic", model=SYSTEM_MODEL)
    assert req.payload["messages"][-1] == {
        "role": "system",
        "content": [{"type": "text", "text": BOTH_BLOCK, "cache_control": EPHEMERAL}],
    }
    # everything before it is the clean request, as recorded
    assert req.segments["messages"].startswith(clean.segments["messages"][:-1] + ",")
    assert json.loads(req.segments["messages"]) == [
        *json.loads(clean.segments["messages"]),
        {"role": "system", "content": [{"type": "text", "text": BOTH_BLOCK}]},
    ]
    assert req.segments["system"] == clean.segments["system"]
    assert req.segments["tools"] == clean.segments["tools"]
    assert chef.history == (user("hi"), assistant("hello"), user("go on"))  # never in history

    # Upsert keeps the original position.
    chef.announce("tools:added", "Tools newly available: grep")
    assert [a.id for a in chef.get_announcements()] == ["tools:added", "tools:removed"]
    chef.announce("tools:added", ADDED)

    # Before the model answered, the turn is rendered again: a retraction leaves no trace.
    assert chef.retract_announcement("tools:added") is True
    assert chef.retract_announcement("tools:added") is False
    assert "tools:added" not in chef.compile("anthropic", model=SYSTEM_MODEL).to_json()
    chef.retract_announcement("tools:removed")
    assert chef.compile("anthropic", model=SYSTEM_MODEL).to_json() == clean.to_json()

    # DEVIATION: a request the model answered is replayed unchanged (append-only: the
    # prompt cache, and Claude's thinking prefix check), so the spec's "disappears
    # completely from subsequent payloads" holds only until the answer. From then on a
    # retraction stops the announcement from being stated by a new update saying what
    # stands now; an empty set is stated as such, once.
    chef.announce("tools:added", ADDED)
    chef.announce("tools:removed", REMOVED)
    stated = chef.compile("anthropic", model=SYSTEM_MODEL)
    chef.append(assistant("I will use read_file."), user("and now?"))
    chef.retract_announcement("tools:added")
    narrowed = chef.compile("anthropic", model=SYSTEM_MODEL)
    assert narrowed.edits == ()
    assert json.loads(narrowed.segments["messages"]) == [
        *json.loads(stated.segments["messages"]),  # still states both, as it did
        {"role": "assistant", "content": [{"type": "text", "text": "I will use read_file."}]},
        {"role": "user", "content": [{"type": "text", "text": "and now?"}]},
        {"role": "system", "content": [{"type": "text", "text": REMOVED_BLOCK}]},
    ]
    chef.append(assistant("ok"), user("and now?"))
    chef.retract_announcement("tools:removed")
    assert chef.compile("anthropic", model=SYSTEM_MODEL).payload["messages"][-2:] == [
        {"role": "user", "content": [{"type": "text", "text": "and now?"}]},
        {
            "role": "system",
            "content": [{"type": "text", "text": GONE, "cache_control": EPHEMERAL}],
        },
    ]
    chef.append(assistant("fine"), user("go"))
    assert chef.compile("anthropic", model=SYSTEM_MODEL).payload["messages"][-2:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "fine"}]},
        {"role": "user", "content": [{"type": "text", "text": "go", "cache_control": EPHEMERAL}]},
    ]  # nothing stands, nothing new to state


def test_08_channels_per_target() -> None:
    chef = announcing_chef()
    chef.announce("tools:added", ADDED)
    chef.announce("tools:removed", REMOVED)
    tail = "go on\n\n" + BOTH_BLOCK + "\n\n" + DEFAULT_ANCHOR

    # 'auto' routes by target: user_tail everywhere but Anthropic, with the anchor line.
    assert chef.compile("openai").payload["messages"][-1] == {"role": "user", "content": tail}
    assert chef.compile("responses").payload["input"][-1] == {
        "type": "message",
        "role": "user",
        "content": tail,
    }
    gemini = chef.compile("gemini").payload["contents"][-1]
    assert gemini == {
        "role": "user",
        "parts": [{"text": "go on"}, {"text": BOTH_BLOCK + "\n\n" + DEFAULT_ANCHOR}],
    }

    # Explicit 'system' on every target: one combined system entry after the last user
    # message (these turns were not answered yet, so they are rendered again).
    for item in chef.get_announcements():
        chef.announce(item.id, item.content, channel="system")
    assert chef.compile("openai").payload["messages"][-2:] == [
        {"role": "user", "content": "go on"},
        {"role": "system", "content": BOTH_BLOCK},
    ]
    responses = chef.compile("responses").payload
    assert responses["input"][-1] == {"type": "message", "role": "developer", "content": BOTH_BLOCK}
    assert responses["instructions"] == "You are careful."  # not folded into instructions
    # DEVIATION: Gemini has no system role in contents: the block joins the user turn's
    # update, which as system state closes with the anchor line.
    assert chef.compile("gemini").payload["contents"][-1] == {
        "role": "user",
        "parts": [{"text": "go on"}, {"text": BOTH_BLOCK + "\n\n" + DEFAULT_ANCHOR}],
    }

    # The Sonnet caveat. DEVIATION: the model passed to compile decides
    # (`ModelRules.system_messages`): on Sonnet 5, and on a model name the library does not
    # know (the default "model"), the system channel joins the user turn instead...
    in_user_turn = {
        "role": "user",
        "content": [
            {"type": "text", "text": "go on"},
            {
                "type": "text",
                "text": BOTH_BLOCK + "\n\n" + DEFAULT_ANCHOR,
                "cache_control": EPHEMERAL,
            },
        ],
    }
    assert chef.compile("anthropic", model="claude-sonnet-5").payload["messages"][-1] == (
        in_user_turn
    )
    assert chef.compile("anthropic").payload["messages"][-1] == in_user_turn
    # ...while Opus 5 takes the system entry.
    assert chef.compile("anthropic", model="claude-opus-5").payload["messages"][-2:] == [
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
        {
            "role": "system",
            "content": [{"type": "text", "text": BOTH_BLOCK, "cache_control": EPHEMERAL}],
        },
    ]
    # channel="user_tail" still splits the set across both paths in one compile.
    chef.announce("tools:added", "Tools newly available: grep", channel="user_tail")
    messages = chef.compile("anthropic", model="claude-opus-5").payload["messages"]
    assert messages[-1] == {
        "role": "system",
        "content": [{"type": "text", "text": REMOVED_BLOCK, "cache_control": EPHEMERAL}],
    }
    assert messages[-2]["content"][-1] == {
        "type": "text",
        "text": GREP_BLOCK + "\n\n" + DEFAULT_ANCHOR,
    }

    # user_tail order: dynamic state, implicit context, announcements, anchor; the system
    # entry sits before any assistant prefill (Opus 4.8 takes both).
    chef.set_dynamic_state(MyState(branch="main"))
    chef.set_implicit_context(lambda: "cwd: /repo")
    messages = chef.compile("anthropic", model="claude-opus-4-8", prefill="Here is").payload[
        "messages"
    ]
    assert messages[-3]["content"][-1] == {
        "type": "text",
        "text": '<dynamic_state>\n{\n  "branch": "main"\n}\n</dynamic_state>\n\n'
        "<implicit_context>\ncwd: /repo\n</implicit_context>\n\n"
        + GREP_BLOCK
        + "\n\n"
        + DEFAULT_ANCHOR,
    }
    assert messages[-2] == {
        "role": "system",
        "content": [{"type": "text", "text": REMOVED_BLOCK, "cache_control": EPHEMERAL}],
    }
    assert messages[-1] == {"role": "assistant", "content": "Here is"}

    # DEVIATION: nothing is hoisted into the top-level system parameter, and nothing is
    # warned: with no user message to follow, the system channel waits for the first one.
    # A request without any message is refused by every provider, so compile says so.
    lonely = ContextChef()
    lonely.set_system_prompt("sys")
    lonely.announce("s", "state", channel="system")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(UsageError, match="conversation is empty"):
            lonely.compile("anthropic", model="claude-opus-5")
    assert caught == []
    lonely.set_history([user("hi")])
    assert lonely.compile("anthropic", model="claude-opus-5").payload["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "system",
            "content": [
                {
                    "type": "text",
                    "text": '<announcements>\n<announcement id="s">\nstate\n</announcement>\n'
                    "</announcements>",
                    "cache_control": EPHEMERAL,
                }
            ],
        },
    ]


def test_09_lifecycle_clear_history_snapshot_cache_audit_and_delta(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chef = announcing_chef(cache_audit=True)
    chef.announce("tools:added", ADDED)
    chef.announce("tools:removed", REMOVED, channel="user_tail")
    tail = BOTH_BLOCK + "\n\n" + DEFAULT_ANCHOR
    assert chef.compile("openai").payload["messages"][-1] == {
        "role": "user",
        "content": "go on\n\n" + tail,
    }
    chef.append(assistant("noted"), user("next"))
    # stated once: the next turn does not repeat what still stands
    assert chef.compile("openai").payload["messages"][-1] == {"role": "user", "content": "next"}
    chef.append(assistant("ok"))

    # Announcements survive clear_history().
    chef.clear_history()
    assert chef.history == ()
    assert [a.id for a in chef.get_announcements()] == ["tools:added", "tools:removed"]

    # The fresh conversation is an explicit edit of what was sent (the ledger restarts;
    # cache_audit reports it, and it is logged), and its first user turn states
    # everything that stands again.
    chef.set_history([user("again")])
    chef.set_dynamic_state(MyState(branch="dev"))
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        fresh = chef.compile("openai")
    assert fresh.payload["messages"] == [
        {"role": "system", "content": "You are careful."},
        {
            "role": "user",
            "content": 'again\n\n<dynamic_state>\n{\n  "branch": "dev"\n}\n</dynamic_state>\n\n'
            + tail,
        },
    ]
    detail = (
        "already-sent history changed (history message 0); the conversation is sent again "
        "from wire entry 0, byte 1 of the messages segment"  # just after its "["
    )
    assert [(e.kind, e.history_index, e.wire_index, e.detail) for e in fresh.edits] == [
        ("history", 0, 0, detail)
    ]
    assert fresh.audit == (
        CacheAuditFinding(block="history edit", position=0, breakpoint=-1, detail=detail),
    )
    assert [r.getMessage() for r in caplog.records if r.name == "contextchef"] == [
        f"contextchef: openai: {detail}"
    ]

    # They ride snapshots (with what each target was sent): restore gives identical bytes
    # on every target.
    snap = chef.snapshot()
    assert json.loads(json.dumps(snap)) == snap
    other = announcing_chef(cache_audit=True)
    other.restore(snap, allow_unsigned=True)
    for target in ("anthropic", "openai", "responses", "gemini"):
        assert other.compile(target).to_json() == chef.compile(target).to_json()
    # A snapshot from before announcements existed restores to none.
    old = {k: v for k, v in snap.items() if k != "announcements"}
    other.restore(old, allow_unsigned=True)
    assert other.get_announcements() == ()

    # DEVIATION: cache_audit no longer flags volatile blocks: they are appended at the
    # end of each request and never change once sent, so they cannot sit under a
    # breakpoint that moves; the system-channel breakpoint switch is a no-op kept for
    # compatibility (every Anthropic request marks its last block).
    before = chef.compile("anthropic")
    assert before.audit == ()
    chef.set_system_channel_breakpoint(True)
    flagged = chef.compile("anthropic")
    assert flagged.to_json() == before.to_json()
    assert flagged.audit == ()

    # Detecting the delta (userland), paired with the blocklist.
    previous: set[str] = set()

    def sync_tool_announcements(tools: list[str]) -> None:
        nonlocal previous
        added = [n for n in tools if n not in previous]
        removed = [n for n in sorted(previous) if n not in tools]
        if added:
            chef.announce("tools:added", f"Tools newly available: {', '.join(added)}")
        else:
            chef.retract_announcement("tools:added")
        if removed:
            chef.announce(
                "tools:removed", f"Withdrawn; calls to these will be rejected: {', '.join(removed)}"
            )
        else:
            chef.retract_announcement("tools:removed")
        previous = set(tools)

    sync_tool_announcements(["read_file", "grep"])
    sync_tool_announcements(["read_file"])
    assert chef.get_announcements() == (
        Announcement(
            id="tools:removed",
            content="Withdrawn; calls to these will be rejected: grep",
            channel="auto",  # re-announced without a channel: back to "auto"
        ),
    )
    chef.register_tools([{"name": "delete_file", "description": "Delete", "input_schema": OBJ}])
    chef.pruner.set_blocked_tools(["delete_file"])
    chef.announce("tools:blocked", "delete_file is disabled in this environment")
    assert chef.check_tool_call(ToolCall(id="d", name="delete_file")).decision == "denied"

    # From a compile:done handler, an announcement lands on the next compile.
    def on_done(event: Any) -> None:
        chef.announce("late", "read_file is rate-limited")

    chef.on("compile:done", on_done)
    assert "rate-limited" not in chef.compile("openai").to_json()
    assert "rate-limited" in chef.compile("openai").to_json()
