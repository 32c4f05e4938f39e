"""Modes, blocklist, hooks, the require-search policy, runtime tools and templates."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from conftest import load_case
from contextchef import (
    ContextChef,
    DeferredConfig,
    Denied,
    NondeterminismError,
    ToolCall,
    ToolResult,
    UsageError,
    assistant,
    load_demo_catalog,
    tool_results,
    user,
)


def demo(**kw: Any) -> ContextChef:
    chef = ContextChef(default_defer=True, **kw)
    chef.register_catalog(load_demo_catalog())
    chef.set_history([user("hi")])  # compile needs a message
    return chef


def call(name: str, args: dict[str, Any], id: str = "c") -> ToolCall:
    return ToolCall(id=id, name=name, arguments=json.dumps(args))


def via_defer(target: str, params: dict[str, Any], id: str = "c") -> ToolCall:
    return call("defer_execute", {"tool_name": target, "params": params}, id)


def names_in_payload(chef: ContextChef) -> list[str]:
    return [t["name"] for t in chef.compile("anthropic").payload["tools"]]


def echo_chef() -> ContextChef:
    chef = ContextChef()

    def echo(text: str) -> str:
        """Echo."""
        return text

    chef.register_tools([echo])
    return chef


def chef_with_ns() -> ContextChef:
    chef = ContextChef()
    chef.register_namespaces(
        [
            {
                "name": "fs",
                "description": "Files.",
                "tools": [
                    {
                        "name": "read_file",
                        "description": "Read.",
                        "input_schema": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}},
                            "required": ["path"],
                        },
                    }
                ],
            }
        ],
        handlers={"read_file": lambda path: f"read {path}"},
    )
    return chef


# --- modes --------------------------------------------------------------------------------


def test_read_only_mode_is_structural() -> None:
    chef = demo()
    read_only = {t.key for t in chef.tools if t.annotations.read_only}
    writers = [t for t in chef.tools if t.key not in read_only]
    assert read_only and writers
    chef.set_mode("read_only")
    view = chef.view
    visible = {t.key for t in (*view.direct, *view.deferred)}
    assert visible == read_only
    payload_names = set(names_in_payload(chef))
    for tool in writers:
        wire = view.wire_names[tool.key]
        assert wire not in payload_names
        assert f"\n{wire}\n" not in view.directory and f"  {wire}\n" not in view.directory
        assert wire not in [h.wire_name for h in view.index.search([tool.name], limit=50)]
        # rejected at dispatch, directly and through defer_execute
        for c in (call(wire, {}), via_defer(wire, {})):
            check = chef.check_tool_call(c)
            assert isinstance(check, Denied) and check.code == "not_in_mode"
            assert check.reason == f'Tool "{wire}" is not available in mode "read_only".'


def test_named_mode_from_patterns_and_unknown_mode() -> None:
    chef = demo(modes={"qa": ["^read_file$", "^grep$", "^web_fetch$"]}, mode="qa")
    assert names_in_payload(chef) == ["grep", "read_file", "web_fetch"]
    assert chef.view.meta_tools == {}
    chef.set_mode(None)
    assert len(names_in_payload(chef)) > 3
    with pytest.raises(UsageError, match="unknown mode 'nope'"):
        chef.set_mode("nope")


# --- blocklist ------------------------------------------------------------------------------


def test_blocklist_changes_no_bytes_and_applies_to_the_real_tool() -> None:
    chef = demo()
    before = chef.compile("openai").segments
    chef.set_blocked_tools(["^write_file$", "cloud-storage__delete_*"])
    after = chef.compile("openai").segments
    assert before == after
    check = chef.check_tool_call(call("write_file", {"path": "a", "content": "b"}))
    assert isinstance(check, Denied) and check.reason == 'Tool "write_file" is currently blocked.'
    wire = chef.wire_name("delete_object", server="cloud-storage")
    check = chef.check_tool_call(via_defer(wire, {"bucket": "b", "key": "k"}))
    assert isinstance(check, Denied) and check.code == "blocked"
    chef.set_blocked_tools([])
    assert chef.check_tool_call(call("write_file", {"path": "a", "content": "b"})).decision == (
        "allowed"
    )


def test_tool_search_leaves_blocked_tools_out_and_says_why_by_name() -> None:
    """Regression: search offered a blocked tool's schema; the call was then refused."""
    chef = demo()
    wire = chef.wire_name("delete_object", server="cloud-storage")
    query = {"queries": ["delete an object from a storage bucket"]}
    before = chef.execute(call("tool_search", query, "s1")).result.content
    assert wire in before
    chef.set_blocked_tools(["cloud-storage__delete_*"])
    after = chef.execute(call("tool_search", query, "s2")).result.content
    assert wire not in after and "cloud-storage__" in after  # the others are still found
    by_name = chef.execute(call("tool_search", {"tool_names": [wire]}, "s3")).result.content
    assert f'Tool "{wire}" is currently blocked.' in by_name
    chef.set_blocked_tools([])
    assert wire in chef.execute(call("tool_search", query, "s4")).result.content


def test_blocking_a_namespace_or_meta_tool_by_its_own_name() -> None:
    chef = chef_with_ns()
    chef.set_blocked_tools(["^fs$"])
    check = chef.check_tool_call(
        ToolCall(id="1", name="fs", arguments='{"action": "read_file", "args": {"path": "a"}}')
    )
    assert isinstance(check, Denied) and check.code == "blocked"
    deferred = ContextChef(default_defer=True)
    deferred.register_tools([{"name": "t", "description": "T"}])
    deferred.set_blocked_tools(["tool_search"])
    check = deferred.check_tool_call(
        ToolCall(id="2", name="tool_search", arguments='{"queries": ["t"]}')
    )
    assert isinstance(check, Denied) and check.reason == 'Tool "tool_search" is currently blocked.'


# --- hooks --------------------------------------------------------------------------------


def test_before_hooks_see_the_real_tool_and_may_deny() -> None:
    chef = demo()
    seen: list[tuple[str, str, dict[str, Any], str | None]] = []

    @chef.before_tool_call
    def audit(event: Any) -> str | None:
        seen.append((event.wire_name, event.tool.name, dict(event.arguments), event.via))
        if event.arguments.get("sql", "").lower().startswith("drop"):
            return "DROP statements are not allowed."
        return None

    wire = chef.wire_name("execute_sql", server="postgres-db")
    ok = chef.check_tool_call(via_defer(wire, {"sql": "select 1"}))
    assert ok.decision == "allowed"
    denied = chef.check_tool_call(via_defer(wire, {"sql": "DROP TABLE t"}))
    assert isinstance(denied, Denied) and denied.code == "hook"
    assert denied.reason == "DROP statements are not allowed."
    assert seen[0] == (wire, "execute_sql", {"sql": "select 1"}, "defer_execute")


def test_async_hooks_and_handlers_through_execute_and_aexecute() -> None:
    chef = ContextChef()
    calls: list[str] = []

    async def slow_echo(text: str) -> str:
        await asyncio.sleep(0)
        return text.upper()

    chef.register_tools([slow_echo])

    async def deny_secret(event: Any) -> str | None:
        await asyncio.sleep(0)
        return "no secrets" if "secret" in event.arguments["text"] else None

    async def add_guidance(event: Any, result: ToolResult) -> ToolResult:
        calls.append(event.wire_name)
        return ToolResult(
            call_id=result.call_id,
            name=result.name,
            content=result.content + "\n(Tip: output is upper-cased.)",
        )

    chef.before_tool_call(deny_secret)
    chef.after_tool_call(add_guidance)
    done = chef.execute(call("slow_echo", {"text": "hi"}))
    assert done.result.content == "HI\n(Tip: output is upper-cased.)"
    denied = asyncio.run(chef.aexecute(call("slow_echo", {"text": "a secret"}, id="z")))
    assert denied.result.is_error and denied.result.content == "no secrets"
    assert denied.result.call_id == "z"
    assert calls == ["slow_echo"]


def test_a_before_hook_that_raises_denies_instead_of_crashing() -> None:
    chef = echo_chef()
    chef.before_tool_call(lambda e: 1 / 0)
    done = chef.execute(ToolCall(id="1", name="echo", arguments='{"text": "x"}'))
    assert done.result.is_error and done.result.call_id == "1"
    assert isinstance(done.check, Denied) and done.check.code == "hook_error"
    assert "ZeroDivisionError" in done.result.content


def test_an_after_hook_that_raises_keeps_the_result_with_a_note() -> None:
    chef = echo_chef()

    def broken(event: Any, result: ToolResult) -> None:
        raise RuntimeError("boom")

    chef.after_tool_call(broken)
    done = chef.execute(ToolCall(id="1", name="echo", arguments='{"text": "x"}'))
    assert done.result.content.startswith("x\n[post-processing broken failed: boom]")


@pytest.mark.parametrize("verdict", [False, None])
def test_before_hook_none_or_false_allows(verdict: Any) -> None:
    chef = echo_chef()
    chef.before_tool_call(lambda e: verdict)
    assert chef.check_tool_call(
        ToolCall(id="1", name="echo", arguments='{"text": "x"}')
    ).decision == ("allowed")


@pytest.mark.parametrize("verdict", [True, 5, {}, ["no"]])
def test_before_hook_odd_return_denies_that_call_and_says_why(
    verdict: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # A wrong return used to raise UsageError, which aborted a whole run_tools batch
    # after earlier calls had already run; it now fails closed like a raising hook.
    chef = echo_chef()
    ran: list[str] = []
    chef.before_tool_call(lambda e: verdict if e.call.id == "2" else None)
    chef.register_tools(
        [{"name": "note", "description": "Note.", "input_schema": {"type": "object"}}],
        handlers={"note": lambda: ran.append("note") or "noted"},
    )
    calls = [
        ToolCall(id="1", name="note", arguments={}),
        ToolCall(id="2", name="note", arguments={}),
        ToolCall(id="3", name="note", arguments={}),
    ]
    with caplog.at_level("WARNING", logger="contextchef"):
        first, second, third = chef.run_tools(calls, append=False)
    assert (first.content, third.content) == ("noted", "noted") and ran == ["note", "note"]
    assert second.is_error and "return None to allow" in second.content
    assert "the call was denied" in caplog.text


@pytest.mark.parametrize(
    "returned",
    [ToolResult(call_id="OTHER", name="echo", content="y"), 5, "text", {}, True],
    ids=["other-call", "int", "str", "dict", "bool"],
)
def test_an_after_hook_returning_the_wrong_thing_keeps_the_result_with_a_note(
    returned: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The handler already ran (its side effects happened): its result is kept, with a
    note for the model and a WARNING for the host, instead of an exception that would
    lose it (issue 12)."""
    chef = echo_chef()
    chef.after_tool_call(lambda e, r: returned)
    chef.set_history([user("go")])
    call = ToolCall(id="1", name="echo", arguments='{"text": "x"}')
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        done = chef.execute(call)
    assert done.result.call_id == "1" and done.result.content.startswith("x\n[post-processing")
    assert "returned" in done.result.content
    assert "after-hook '<lambda>' returned" in caplog.text and "was kept" in caplog.text
    chef.append(assistant(tool_calls=[call]), tool_results([done.result]), user("next"))
    assert chef.compile("anthropic").payload["messages"][1]["content"][0]["type"] == "tool_use"


def test_hooks_cannot_rewrite_arguments() -> None:
    chef = echo_chef()
    seen: list[str] = []

    def tamper(event: Any) -> None:
        with pytest.raises(TypeError):
            event.arguments["text"] = 12345
        seen.append(event.arguments["text"])

    chef.before_tool_call(tamper)
    done = chef.execute(ToolCall(id="1", name="echo", arguments='{"text": "ok"}'))
    assert done.result.content == "ok" and seen == ["ok"]


# --- deferred policy ------------------------------------------------------------------------


def test_require_search_policy() -> None:
    chef = demo(deferred=DeferredConfig(require_search=True))
    wire = chef.wire_name("list_buckets", server="cloud-storage")
    check = chef.check_tool_call(via_defer(wire, {}))
    assert isinstance(check, Denied) and check.code == "not_loaded"
    assert "tool_search" in check.reason
    chef.execute(call("tool_search", {"tool_names": [wire]}))
    assert wire in chef.loaded_tools
    assert chef.check_tool_call(via_defer(wire, {})).decision == "allowed"
    # the default policy allows it and relies on argument validation
    assert demo().check_tool_call(via_defer(wire, {})).decision == "allowed"


# --- runtime tools --------------------------------------------------------------------------


def test_runtime_tool_is_deferred_searchable_and_leaves_the_prefix_alone() -> None:
    chef = demo()
    before = chef.compile("anthropic").segments
    directory = chef.view.directory

    def summarize_csv(path: str, columns: list[str]) -> str:
        """Summarise the named columns of a CSV file: count, mean, min and max."""
        return f"{path}:{','.join(columns)}"

    added = chef.register_runtime_tool(summarize_csv)
    assert added.source == "runtime"
    assert chef.view.exposure[added.key] == "deferred"
    assert chef.compile("anthropic").segments["tools"] == before["tools"]
    assert chef.view.directory == directory
    done = chef.execute(call("tool_search", {"queries": ["summarise csv columns"]}))
    assert done.loaded[0] == "summarize_csv"
    ran = chef.execute(via_defer("summarize_csv", {"path": "a.csv", "columns": ["x"]}))
    assert ran.result.content == "a.csv:x"
    assert chef.take_tool_additions() == (("summarize_csv", added),)
    assert chef.take_tool_additions() == ()


def test_first_runtime_tool_adds_meta_tools_unless_they_are_always_on() -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_tools([{"name": "a", "description": "A"}])
    assert names_in_payload(chef) == ["a"]
    chef.register_runtime_tool({"name": "r", "description": "R"})
    assert names_in_payload(chef) == ["a", "tool_search", "defer_execute"]

    steady = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
    steady.set_history([user("hi")])  # compile needs a message
    steady.register_tools([{"name": "a", "description": "A"}])
    first = steady.compile("anthropic").segments
    steady.register_runtime_tool({"name": "r", "description": "R"})
    assert steady.compile("anthropic").segments == first


# --- templated descriptions ------------------------------------------------------------


def test_templated_description_rendered_once_and_frozen() -> None:
    chef = ContextChef(
        template_vars={"repo": "acme/web"}, template_fragments={"safety": "Never force-push."}
    )
    chef.register_tools(
        [
            {
                "name": "git_push",
                "description": "Push to {{ repo }}. {{ fragment('safety') }}",
                "input_schema": {"type": "object"},
            }
        ]
    )
    tool = chef.tools[0].replace(template=True)
    chef = ContextChef(
        template_vars={"repo": "acme/web"}, template_fragments={"safety": "Never force-push."}
    )
    chef.register_tools([tool])
    chef.set_history([user("hi")])  # compile needs a message
    sent = chef.compile("anthropic").payload["tools"][0]["description"]
    assert sent == "Push to acme/web. Never force-push."
    assert chef.tools[0].description == "Push to {{ repo }}. {{ fragment('safety') }}"
    assert chef.compile("anthropic").to_json() == chef.compile("anthropic").to_json()


def test_templated_description_touching_time_raises() -> None:
    chef = ContextChef()
    chef.register_tools([{"name": "t", "description": "Today is {{ now() }}.", "meta": {}}])
    tool = chef.tools[0].replace(template=True)
    chef = ContextChef()
    chef.set_history([user("hi")])  # compile needs a message
    with pytest.raises(NondeterminismError) as info:
        chef.register_tools([tool])  # refused at registration, not at every later compile
    assert info.value.tool == "t" and info.value.source == "now"
    assert chef.tools == ()
    chef.compile("anthropic")


# --- call shapes ------------------------------------------------------------------------


def test_gate_accepts_call_dicts_and_rejects_junk() -> None:
    chef = chef_with_ns()
    check = chef.check_tool_call(
        {"name": "fs", "arguments": {"action": "read_file", "args": {"path": "a"}}}
    )
    assert check.decision == "allowed"
    with pytest.raises(UsageError, match="expected a ToolCall"):
        chef.check_tool_call(5)  # type: ignore[arg-type]


def test_namespace_args_as_a_json_string_are_accepted() -> None:
    chef = chef_with_ns()
    call = ToolCall(
        id="1", name="fs", arguments=json.dumps({"action": "read_file", "args": '{"path": "a"}'})
    )
    check = chef.check_tool_call(call)
    assert check.decision == "allowed" and dict(check.arguments) == {"path": "a"}
    assert chef.pruner.resolve_namespace(call).args == {"path": "a"}


# --- tooldef-20: argument validation before dispatch ------------------------------------

EXPECTED_20 = {
    "r1": ("path", "required"),
    "r2": ("path", "string"),
    "r3": ("not valid JSON",),
    "r4": ("encoding",),
    "r5": ("max_lines", "minimum of 1"),
}


@pytest.mark.parametrize("through_defer_execute", [False, True])
def test_tooldef_20_invalid_calls_get_paired_error_results(through_defer_execute: bool) -> None:
    case = load_case("tooldef-20")["input"]
    runs: list[dict[str, Any]] = []

    def read_file(**kwargs: Any) -> str:
        runs.append(kwargs)
        return "file contents"

    chef = ContextChef(default_defer=through_defer_execute)
    chef.register_tools(case["tools"], handlers={"read_file": read_file})
    results = []
    for call in case["model_calls"]:
        if through_defer_execute:
            raw = call["arguments_raw"]
            wrapped = f'{{"tool_name": "read_file", "params": {raw}}}'
            tc = ToolCall(id=call["id"], name="defer_execute", arguments=wrapped)
        else:
            tc = ToolCall(id=call["id"], name=call["name"], arguments=call["arguments_raw"])
        results.append(chef.execute(tc).result)
    assert [r.call_id for r in results] == [c["id"] for c in case["model_calls"]]
    by_id = {r.call_id: r for r in results}
    for call_id, needles in EXPECTED_20.items():
        result = by_id[call_id]
        assert result.is_error, call_id
        for needle in needles:
            assert needle in result.content, (call_id, result.content)
        if call_id != "r3":
            assert "Expected input schema" in result.content
            assert '"minLength":1' in result.content
    assert not by_id["r6"].is_error
    assert by_id["r6"].content == "file contents"
    assert runs == [{"path": "a.txt"}]


def test_denials_point_the_right_way_for_loaded_tools_and_wrappers() -> None:
    # break-it round 13, f8: a loaded deferred tool called directly was told to load it
    # again, and defer_execute on a namespace was answered as an unknown tool.
    chef = demo()
    chef.compile("anthropic")
    deferred = chef.wire_name("list_buckets", server="cloud-storage")
    before = chef.execute(call(deferred, {})).result.content
    assert "Load its schema with tool_search" in before
    chef.execute(call("tool_search", {"tool_names": [deferred]}, id="s"))
    after = chef.execute(call(deferred, {}, id="d")).result.content
    assert "Its schema is loaded already: call it with defer_execute" in after
    assert "tool_search" not in after
    ns = demo()
    ns.register_namespaces(
        [{"name": "fs", "description": "Files.", "tools": [{"name": "peek_file"}]}],
        handlers={"peek_file": lambda: "read"},
    )
    ns.compile("anthropic")
    answer = ns.execute(via_defer("fs", {"action": "peek_file", "args": {}}))
    assert answer.result.content == "defer_execute runs deferred tools; call fs directly instead."
    nested = chef.execute(via_defer("defer_execute", {"tool_name": deferred, "params": {}}))
    assert nested.result.content.startswith("defer_execute cannot run itself")


def test_a_hook_raising_an_exception_that_cannot_be_printed_is_still_answered() -> None:
    # review: a before-hook's (or after-hook's) exception was put in the result with
    # f"{exc}", so one whose __str__ raises escaped run_tools as a raw ValueError
    from contextchef import ContextChef, ToolCall

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise ValueError("no text")

    def hook(*_: object) -> None:
        raise Unprintable

    chef = ContextChef()
    chef.register_tools(
        [{"name": "f", "description": "F.", "input_schema": {"type": "object"}}],
        handlers={"f": lambda: "ok"},
    )
    chef.before_tool_call(hook)
    (denied,) = chef.run_tools([ToolCall(id="1", name="f", arguments={})], append=False)
    assert (
        denied.is_error and "<a Unprintable that cannot be printed: ValueError>" in denied.content
    )
