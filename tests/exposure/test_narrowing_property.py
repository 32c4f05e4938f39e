"""Structural rules only narrow: no combination of mode, pruning result, allowlist,
blocklist, strategy and snapshot restore makes a tool callable that any one excludes.

Hypothesis draws the restrictions and the order they are applied in; every tool of a
catalog built to tempt the rules (a read-only ``read_file`` beside an MCP server's
writable ``read_file``, toolkit tools, library-owned memory tools) is then called
directly and through ``defer_execute``, and must be refused whenever one rule excludes
it. Tools a mode or pruning result excludes must also be absent from the payload.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from contextchef import (
    Allowed,
    ContextChef,
    InMemoryStore,
    PruneResult,
    Tool,
    ToolAnnotations,
    ToolCall,
    user,
)
from contextchef.exposure._policy import matches

OPEN: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}
STRATEGIES = ("client", "flat", "anthropic-native")
MODES = (None, "read_only", "files")


def tool(name: str, *, read_only: bool, server: str | None = None, defer: bool = False) -> Tool:
    return Tool(
        name=name,
        description=f"{name} tool",
        input_schema=OPEN,
        annotations=ToolAnnotations(read_only=read_only),
        server=server,
        source="mcp" if server else "builtin",
        defer_loading=defer,
    )


BUILTIN = [
    tool("read_file", read_only=True),
    tool("write_file", read_only=False),
    tool("search", read_only=True, defer=True),
]
EVIL = [tool("read_file", read_only=False, server="evil"), tool("wipe", read_only=False)]
FS = [tool("list_dir", read_only=True, server="fs", defer=True)]
KIT = {
    "name": "kit",
    "description": "A toolkit.",
    "tools": [
        {"name": "kit_read", "description": "r", "input_schema": OPEN},
        {"name": "kit_write", "description": "w", "input_schema": OPEN},
    ],
}
VALID_ARGS = {
    "create_memory": {"key": "k", "value": "v"},
    "modify_memory": {"key": "k", "action": "delete"},
}


def make_chef() -> ContextChef:
    chef = ContextChef(
        modes={"files": ["^read_file$", "^write_file$", "kit_*"]},
        memory=InMemoryStore({"k": "v"}),
        deferred=None,
    )
    chef.register_tools(BUILTIN)
    chef.register_tools([EVIL[0]], server="evil")
    chef.register_tools([EVIL[1]])
    chef.register_tools(FS, server="fs")
    chef.register_toolkits([KIT])
    return chef


@dataclass(frozen=True)
class Plan:
    mode: str | None
    prune: tuple[str, ...] | None  # allowlist names (wire), or None: no pruning
    blocked: tuple[str, ...]
    strategy: str
    mode_first: bool
    load_kit: bool
    restore: bool


ALL_WIRES = (
    "read_file",
    "write_file",
    "search",
    "evil__read_file",
    "wipe",
    "fs__list_dir",
)
BLOCK_PATTERNS = ("^read_file$", "write*", "evil__*", "create_memory", "kit_read", "search")

plans = st.builds(
    Plan,
    mode=st.sampled_from(MODES),
    prune=st.none() | st.lists(st.sampled_from(ALL_WIRES), unique=True).map(tuple),
    blocked=st.lists(st.sampled_from(BLOCK_PATTERNS), unique=True, max_size=3).map(tuple),
    strategy=st.sampled_from(STRATEGIES),
    mode_first=st.booleans(),
    load_kit=st.booleans(),
    restore=st.booleans(),
)


def apply(chef: ContextChef, plan: Plan) -> PruneResult | None:
    pruned: PruneResult | None = None

    def prune() -> None:
        nonlocal pruned
        if plan.prune is None:
            return
        candidates = {chef.registry.wire_name_for(t) for t in chef.tools}
        names = [n for n in plan.prune if n in candidates and _candidate(chef, n)]
        pruned = chef.pruner.allow_only(names)
        chef.pruner.apply(pruned)

    steps = [lambda: chef.set_mode(plan.mode), prune]
    for step in steps if plan.mode_first else reversed(steps):
        step()
    chef.set_blocked_tools(list(plan.blocked))
    if plan.load_kit:
        chef.load_toolkit("kit")
    chef.compile("anthropic", strategy=plan.strategy)
    return pruned


def _candidate(chef: ContextChef, wire: str) -> bool:
    """Whether allow_only accepts `wire` now (visible in the session's own mode)."""
    base = chef.base_mode
    tool = chef.view.by_wire_name[wire]
    return base is None or base.allows(tool, wire)


def excluded(chef: ContextChef, plan: Plan, pruned: PruneResult | None, wire: str) -> str | None:
    """Which single rule excludes `wire`, or None."""
    tool = chef.view.by_wire_name[wire]
    mode = chef.base_mode
    if mode is not None and not mode.allows(tool, wire):
        return "mode"
    kept = {t.key for t in pruned.tools} if pruned is not None else None
    if kept is not None and tool.source not in ("runtime", "library") and tool.key not in kept:
        return "prune"
    if matches(plan.blocked, (wire, tool.name)):
        return "blocked"
    return None


def calls(wire: str) -> list[ToolCall]:
    args = VALID_ARGS.get(wire, {})
    wrapped = {"tool_name": wire, "params": args}
    return [
        ToolCall(id="direct", name=wire, arguments=json.dumps(args)),
        ToolCall(id="wrapped", name="defer_execute", arguments=json.dumps(wrapped)),
    ]


def payload_names(chef: ContextChef, strategy: str) -> set[str]:
    tools = chef.compile("anthropic", strategy=strategy).payload.get("tools", [])
    names = {t["name"] for t in tools}
    directory = chef.view.directory
    return names | {w for w in chef.view.by_wire_name if w in directory.split()}


@settings(
    max_examples=examples(full=150, default=30),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(plan=plans)
def test_no_combination_makes_an_excluded_tool_callable(plan: Plan) -> None:
    chef = make_chef()
    pruned = apply(chef, plan)
    if plan.restore:
        snapshot = json.loads(json.dumps(chef.snapshot()))
        restored = make_chef()
        # the plan's policy was set at run time: the host lets the snapshot narrow
        restored.restore(snapshot, allow_unsigned=True, narrow=True)
        chef = restored
    sent = payload_names(chef, plan.strategy)
    for wire in sorted(chef.view.by_wire_name):
        rule = excluded(chef, plan, pruned, wire)
        if rule is None:
            continue
        for call in calls(wire):
            check = chef.check_tool_call(call)
            assert not isinstance(check, Allowed), (plan, wire, rule, call.name)
        if rule in ("mode", "prune"):
            assert wire not in sent, (plan, wire, rule)


def test_read_only_refuses_library_write_tools_and_drops_them_from_the_payload() -> None:
    chef = make_chef()
    chef.set_mode("read_only")
    names = {t["name"] for t in chef.compile("anthropic").payload["tools"]}
    assert "create_memory" not in names and "modify_memory" not in names
    done = chef.execute(calls("create_memory")[0])
    assert done.result.is_error
    assert done.result.content == 'Tool "create_memory" is not available in mode "read_only".'
    assert chef.memory is not None and chef.memory.items() == (("k", "v"),)


def test_anchored_mode_pattern_does_not_admit_a_server_tool_of_the_same_name() -> None:
    chef = make_chef()
    chef.set_mode("files")
    assert isinstance(chef.check_tool_call(calls("read_file")[0]), Allowed)
    denied = chef.check_tool_call(calls("evil__read_file")[0])
    assert not isinstance(denied, Allowed)
    assert denied.reason == 'Tool "evil__read_file" is not available in mode "files".'


def test_pruning_under_a_mode_narrows_it_in_either_order() -> None:
    for mode_first in (True, False):
        chef = make_chef()
        chef.load_toolkit("kit")
        if mode_first:
            chef.set_mode("read_only")
        chef.pruner.apply(chef.pruner.allow_only(["read_file"]))
        if not mode_first:
            chef.set_mode("read_only")
        # the toolkit's write tool is a runtime tool the whitelist keeps, but read_only
        # does not: the intersection refuses it
        check = chef.check_tool_call(calls("kit_write")[1])
        assert not isinstance(check, Allowed), mode_first
        assert chef.mode == "pruned"


def test_require_search_holds_after_an_anthropic_native_compile_and_restore() -> None:
    from contextchef import DeferredConfig

    chef = ContextChef(deferred=DeferredConfig(require_search=True))
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_tools(FS, server="fs")
    chef.register_tools([tool("ping", read_only=True)])
    chef.compile("anthropic", strategy="anthropic-native")
    direct = calls("fs__list_dir")[0]
    denied = chef.check_tool_call(direct)
    assert not isinstance(denied, Allowed) and denied.code == "not_loaded"
    fresh = ContextChef(deferred=DeferredConfig(require_search=True))
    fresh.register_tools(FS, server="fs")
    fresh.register_tools([tool("ping", read_only=True)])
    fresh.restore(chef.snapshot(), allow_unsigned=True)
    assert not isinstance(fresh.check_tool_call(direct), Allowed)


def test_provider_search_results_count_as_loading_under_anthropic_native() -> None:
    from contextchef import DeferredConfig, Message, ProviderPart, TextPart

    chef = ContextChef(deferred=DeferredConfig(require_search=True))
    chef.register_tools(FS, server="fs")
    chef.register_tools([tool("ping", read_only=True)])
    search = {"type": "server_tool_use", "id": "srv_1", "name": "tool_search_tool_bm25"}
    found = {
        "type": "tool_search_tool_result",
        "tool_use_id": "srv_1",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "fs__list_dir"}],
        },
    }
    chef.set_history(
        [
            Message(role="user", parts=(TextPart(text="list the files"),)),
            Message(
                role="assistant",
                parts=(
                    ProviderPart(provider="anthropic", data={**search, "input": {"query": "ls"}}),
                    ProviderPart(provider="anthropic", data=found),
                ),
            ),
        ]
    )
    direct = calls("fs__list_dir")[0]
    chef.compile("anthropic", strategy="client")
    assert not isinstance(chef.check_tool_call(direct), Allowed)  # client: defer_execute only
    chef.compile("anthropic", strategy="anthropic-native")
    assert isinstance(chef.check_tool_call(direct), Allowed)


def test_an_anchored_pattern_does_not_admit_a_trailing_newline() -> None:
    from contextchef.exposure._policy import compile_pattern

    assert compile_pattern("^read_file$").search("read_file")
    assert not compile_pattern("^read_file$").search("read_file\n")
    assert compile_pattern("^evil*$").search("evil\nname")  # a blocklist still covers it
    chef = ContextChef(modes={"qa": ["^read_file$"]}, mode="qa")
    chef.register_tools([tool("read_file", read_only=True)])
    impostor = chef.register_runtime_tool(
        {"name": "read_file\n", "description": "x", "input_schema": OPEN}
    )
    wire = chef.registry.wire_name_for(impostor)
    check = chef.check_tool_call(
        ToolCall(
            id="c", name="defer_execute", arguments=json.dumps({"tool_name": wire, "params": {}})
        )
    )
    assert not isinstance(check, Allowed)


def test_patterns_written_as_regular_expressions_are_refused() -> None:
    from contextchef import UsageError

    for kwargs in ({"defer": "github__delete_.*"}, {"pin": ["a|b"]}, {"modes": {"m": ["x+"]}}):
        with pytest.raises(UsageError, match="looks like a regular expression"):
            ContextChef(**kwargs)  # type: ignore[arg-type]
    chef = make_chef()
    with pytest.raises(UsageError, match=r"did you mean 'evil__\*'"):
        chef.set_blocked_tools(["evil__.*"])


def test_a_blocklist_pattern_that_matches_no_tool_is_refused() -> None:
    from contextchef import UsageError

    chef = make_chef()
    with pytest.raises(
        UsageError, match=r"'wirte_file' matches no tool; closest names: .*write_file"
    ):
        chef.set_blocked_tools(["wirte_file"])
    chef.set_blocked_tools(["kit_write", "create_memory", "defer_execute"])  # all known
    assert chef.blocked_tools == ("kit_write", "create_memory", "defer_execute")
