"""`ContextChef.run_tools` / `arun_tools`: one call answers a model turn's tool calls.

The loop tests run against the `contextchef.testing` fakes through the official SDK
clients: one parallel batch calls ``tool_search``, a registered handler, a blocked tool
and an async handler (an MCP-shaped tool under server ``web``; the same batch with a
live MCP server's tool is tests/live_mcp/test_mcp_loop.py);
every hook is counted, and the next request must pass the fake's pairing rules.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import (
    TARGETS,
    Allowed,
    ContextChef,
    InMemoryStore,
    MediaPart,
    ToolCall,
    ToolResult,
    UsageError,
    assistant,
    tool_results,
    user,
)
from contextchef.testing import FakeProvider, fake_for, text, tool_calls

FETCH = {
    "name": "fetch",
    "description": "Fetch a web page.",
    "inputSchema": {
        "type": "object",
        "properties": {"url": {"type": "string"}},
        "required": ["url"],
    },
}


class Hooks:
    """Counts every before- and after-hook call per call id."""

    def __init__(self, chef: ContextChef) -> None:
        self.before: Counter[str] = Counter()
        self.after: Counter[str] = Counter()
        chef.before_tool_call(self.on_before)
        chef.after_tool_call(self.on_after)

    def on_before(self, event: Any) -> None:
        self.before[event.call.id] += 1

    def on_after(self, event: Any, result: ToolResult) -> None:
        self.after[event.call.id] += 1


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def delete_file(path: str) -> str:
    """Delete a file."""
    raise AssertionError("a blocked tool must never run")


def get_weather(city: str) -> str:
    """Get the weather forecast for a city."""
    return f"sunny in {city}"


def session(fetch: Any = None) -> tuple[ContextChef, Hooks, list[str]]:
    """read_file, delete_file (blocked) and web__fetch direct; get_weather deferred."""
    fetched: list[str] = []

    async def fetch_page(url: str) -> str:
        await asyncio.sleep(0)
        fetched.append(url)
        return f"<html>{url}</html>"

    chef = ContextChef(default_defer=True, pin=["^read_file$", "^delete_file$", "web__*"])
    chef.register_tools([read_file, delete_file, get_weather])
    chef.register_tools([FETCH], server="web", handlers={"fetch": fetch or fetch_page})
    chef.set_blocked_tools(["^delete_file$"])
    chef.set_system_prompt("You are careful.")
    chef.set_history([user("What is the weather, and what is in a.txt?")])
    return chef, Hooks(chef), fetched


def loop(
    chef: ContextChef, target: str, fake: FakeProvider, run: str, turns: int = 3
) -> list[tuple[ToolResult, ...]]:
    """The README loop: compile, send through the SDK, ingest, run the tools (`run`:
    ``"sync"`` or ``"async"``); the results of each turn that called tools."""
    answered: list[tuple[ToolResult, ...]] = []
    for _ in range(turns):
        calls = chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
        if not calls:
            break
        if run == "sync":
            answered.append(chef.run_tools(calls))
        else:
            answered.append(asyncio.run(chef.arun_tools(calls)))
    return answered


BATCH = (
    ("tool_search", {"queries": ["weather forecast"]}),
    ("read_file", {"path": "a.txt"}),
    ("delete_file", {"path": "a.txt"}),
    ("web__fetch", {"url": "https://example.com"}),
)


def sent_results(target: str, body: dict[str, Any]) -> list[str]:
    """The ids (names on Gemini) of the tool results the last request sent, in order."""
    if target == "anthropic":
        last = [m for m in body["messages"] if m["role"] == "user"][-1]
        return [b["tool_use_id"] for b in last["content"] if b["type"] == "tool_result"]
    if target in ("openai", "deepseek"):
        return [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    if target == "responses":
        return [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    if target == "gemini-interactions":
        return [s["call_id"] for s in body["input"] if s["type"] == "function_result"]
    last = body["contents"][-1]
    return [p["functionResponse"]["name"] for p in last["parts"] if "functionResponse" in p]


@pytest.mark.parametrize("run", ["sync", "async"])
@pytest.mark.parametrize("target", TARGETS)
def test_one_parallel_batch_is_answered_once_each_and_the_next_request_is_valid(
    target: str, run: str
) -> None:
    chef, hooks, fetched = session()
    fake = fake_for(target).script(
        tool_calls(*BATCH),
        tool_calls(("defer_execute", {"tool_name": "get_weather", "params": {"city": "Oslo"}})),
        text("Sunny; a.txt says hello."),
    )
    answered = loop(chef, target, fake, run)
    assert fake.violations == ()
    assert len(fake.requests) == 3  # both follow-up requests were accepted

    first, second = answered
    search, read, blocked, fetch = first
    assert not search.is_error and "get_weather" in search.content
    assert (read.content, read.is_error) == ("contents of a.txt", False)
    assert blocked.is_error and blocked.content == 'Tool "delete_file" is currently blocked.'
    assert (fetch.content, fetch.is_error) == ("<html>https://example.com</html>", False)
    assert fetched == ["https://example.com"]
    assert (second[0].content, second[0].is_error) == ("sunny in Oslo", False)

    turns = [m for m in chef.history if m.role == "assistant"]
    ids = [p.id for p in turns[0].parts if isinstance(p, ToolCall)]
    assert [r.call_id for r in first] == ids  # call order
    # each hook once per call the gate let through, none for the blocked call
    ran = [ids[0], ids[1], ids[3], second[0].call_id]
    assert hooks.before == Counter(ran) and hooks.after == Counter(ran)

    expected = ids if target != "gemini" else [name for name, _ in BATCH]
    assert sent_results(target, fake.requests[1].body) == expected  # one turn, in order


def test_check_then_execute_runs_before_hooks_once() -> None:
    """README's earlier pattern (check_tool_call, then execute) fired every hook twice.

    The decision is a value: handed to `execute`, it runs without a second gate.
    """
    chef, hooks, _ = session()
    call = ToolCall(id="c1", name="read_file", arguments={"path": "a"})
    check = chef.check_tool_call(call)
    assert check.decision == "allowed" and check.call == call
    assert chef.execute(check).result.content == "contents of a"
    assert hooks.before == Counter({"c1": 1}) and hooks.after == Counter({"c1": 1})
    # the call itself is always gated: a new execute of the same call gates again
    chef.execute(call)
    assert hooks.before == Counter({"c1": 2}) and hooks.after == Counter({"c1": 2})


def test_check_then_run_tools_and_async_check_then_aexecute_run_hooks_once() -> None:
    chef, hooks, _ = session()
    first = ToolCall(id="c1", name="read_file", arguments={"path": "a"})
    (result,) = chef.run_tools([chef.check_tool_call(first)], append=False)
    assert result.content == "contents of a" and result.call_id == "c1"
    second = ToolCall(id="c2", name="web__fetch", arguments={"url": "u"})

    async def check_then_run() -> str:
        check = await chef.acheck_tool_call(second)
        return (await chef.aexecute(check)).result.content

    assert asyncio.run(check_then_run()) == "<html>u</html>"
    third = ToolCall(id="c3", name="read_file", arguments={"path": "b"})

    async def check_then_arun() -> tuple[ToolResult, ...]:
        return await chef.arun_tools([await chef.acheck_tool_call(third)], append=False)

    assert [r.content for r in asyncio.run(check_then_arun())] == ["contents of b"]
    assert hooks.before == Counter({"c1": 1, "c2": 1, "c3": 1})
    assert hooks.after == Counter({"c1": 1, "c2": 1, "c3": 1})


def test_checked_decisions_and_calls_mix_in_one_turn_in_call_order() -> None:
    chef, hooks, _ = session()
    calls = [
        ToolCall(id="m1", name="read_file", arguments={"path": "a"}),
        ToolCall(id="m2", name="read_file", arguments={"path": "b"}),
    ]
    results = chef.run_tools([chef.check_tool_call(calls[0]), calls[1]])
    assert [r.call_id for r in results] == ["m1", "m2"]
    assert [r.content for r in results] == ["contents of a", "contents of b"]
    assert hooks.before == Counter({"m1": 1, "m2": 1})
    assert chef.history[-1].tool_results == results  # appended as one message
    with pytest.raises(UsageError, match="share the id"):
        chef.run_tools([chef.check_tool_call(calls[0]), calls[0]])


def test_a_decision_without_its_call_is_refused() -> None:
    chef, hooks, _ = session()
    check = chef.check_tool_call(ToolCall(id="n1", name="read_file", arguments={"path": "a"}))
    assert isinstance(check, Allowed)
    bare = Allowed(tool=check.tool, wire_name=check.wire_name, arguments=check.arguments)
    assert bare == check  # the call and stamp do not take part in equality
    for run in (chef.execute, lambda d: chef.run_tools([d])):
        with pytest.raises(UsageError, match="carries no call"):
            run(bare)
    assert hooks.after == Counter()  # nothing ran


def test_a_hook_denial_is_remembered_and_a_changed_session_gates_again() -> None:
    chef, _, _ = session()
    asked: list[str] = []

    @chef.before_tool_call
    def approve(event: Any) -> str | None:
        asked.append(event.call.id)
        return "The user said no." if event.arguments.get("path") == "secret" else None

    denied = ToolCall(id="d1", name="read_file", arguments={"path": "secret"})
    check = chef.check_tool_call(denied)
    assert check.decision == "denied"
    (result,) = chef.run_tools([check], append=False)
    assert result.content == "The user said no." and asked == ["d1"]

    allowed = ToolCall(id="d2", name="read_file", arguments={"path": "a"})
    check = chef.check_tool_call(allowed)
    assert check.decision == "allowed"
    chef.set_blocked_tools(["^read_file$"])  # blocked after the check: the gate decides again
    assert chef.execute(check).result.content == 'Tool "read_file" is currently blocked.'


def test_a_handler_that_raises_becomes_an_error_result_naming_the_tool() -> None:
    def broken(path: str) -> str:
        """Break."""
        raise OSError(f"disk gone while reading {path}")

    chef = ContextChef()
    chef.register_tools([broken])
    calls = [ToolCall(id="b1", name="broken", arguments={"path": "x"})]
    for results in (chef.run_tools(calls, append=False), asyncio.run(chef.arun_tools(calls))):
        (result,) = results
        assert result.is_error and result.call_id == "b1"
        assert result.content == 'Tool "broken" raised OSError: disk gone while reading x'


def test_unknown_tools_and_invalid_arguments_get_the_gates_error_result() -> None:
    chef, hooks, _ = session()
    calls = [
        ToolCall(id="u1", name="no_such_tool", arguments={}),
        ToolCall(id="u2", name="read_file", arguments={"path": 7}),
        ToolCall(id="u3", name="read_file", arguments="{not json"),
    ]
    for results in (chef.run_tools(calls, append=False), asyncio.run(chef.arun_tools(calls))):
        unknown, invalid, malformed = results
        assert unknown.is_error and unknown.content.startswith('Unknown tool "no_such_tool".')
        assert invalid.is_error and "path" in invalid.content and "string" in invalid.content
        assert malformed.is_error and malformed.call_id == "u3"
    assert hooks.before == Counter() and hooks.after == Counter()  # nothing got that far


def test_results_keep_call_order_when_async_handlers_finish_out_of_order() -> None:
    finished: list[str] = []
    release = asyncio.Event()

    async def slow(name: str) -> str:
        """Wait for the fast one."""
        await asyncio.wait_for(release.wait(), 30)  # a guard: sequential runs fail, not hang
        finished.append(name)
        return f"slow {name}"

    async def fast(name: str) -> str:
        """Finish first."""
        finished.append(name)
        release.set()
        return f"fast {name}"

    chef = ContextChef()
    chef.register_tools([slow, fast])
    calls = [
        ToolCall(id="o1", name="slow", arguments={"name": "a"}),
        ToolCall(id="o2", name="fast", arguments={"name": "b"}),
        ToolCall(id="o3", name="slow", arguments={"name": "c"}),
    ]
    results = asyncio.run(chef.arun_tools(calls, append=False))
    assert finished[0] == "b"  # the last-listed handler ran before the first finished
    assert [r.content for r in results] == ["slow a", "fast b", "slow c"]
    assert [r.call_id for r in results] == ["o1", "o2", "o3"]


def test_sync_handlers_run_in_threads_concurrently_in_arun_tools() -> None:
    barrier = threading.Barrier(2, timeout=30)  # passes only when both wait at once

    def meet(side: str) -> str:
        """Meet the other side."""
        barrier.wait()
        return side

    chef = ContextChef()
    chef.register_tools([meet])
    calls = [ToolCall(id=f"t{i}", name="meet", arguments={"side": s}) for i, s in enumerate("lr")]
    results = asyncio.run(chef.arun_tools(calls, append=False))
    assert [r.content for r in results] == ["l", "r"]
    assert not any(r.is_error for r in results)


def test_tools_with_no_handler_get_an_error_result_or_go_to_the_fallback() -> None:
    chef = ContextChef()
    chef.register_mcp_tools({"tools": [FETCH]}, server="web")  # no handler registered
    call = ToolCall(id="n1", name="web__fetch", arguments={"url": "u"})
    (result,) = chef.run_tools([call], append=False)
    assert result.is_error
    assert result.content.startswith('Tool "web__fetch" cannot be run here')

    given: list[tuple[str, str | None, str, dict[str, Any]]] = []

    def run_myself(call: ToolCall, allowed: Allowed) -> str:
        given.append((call.id, allowed.tool.server, allowed.tool.name, dict(allowed.arguments)))
        return "ran by the host"

    async def arun_myself(call: ToolCall, allowed: Allowed) -> ToolResult:
        return ToolResult(call_id=call.id, name=call.name, content="async host", is_error=True)

    (ran,) = chef.run_tools([call], fallback=run_myself, append=False)
    assert (ran.content, ran.is_error) == ("ran by the host", False)
    assert given == [("n1", "web", "fetch", {"url": "u"})]  # original server and name
    (aran,) = asyncio.run(chef.arun_tools([call], fallback=arun_myself, append=False))
    assert (aran.content, aran.is_error) == ("async host", True)


def test_sync_run_tools_in_a_running_loop_with_async_handlers_refuses_before_running() -> None:
    chef, hooks, fetched = session()
    chef.append(assistant("", [ToolCall(id="l1", name="web__fetch", arguments={"url": "u"})]))
    before = chef.history

    async def inside_a_loop() -> None:
        with pytest.raises(UsageError, match=r"await chef\.arun_tools"):
            chef.run_tools([ToolCall(id="l1", name="web__fetch", arguments={"url": "u"})])
        assert chef.run_tools([]) == ()  # break-it 33: no call, nothing refused

    asyncio.run(inside_a_loop())
    assert chef.history == before and fetched == [] and hooks.before == Counter()


def test_sync_run_tools_runs_async_handlers_without_a_loop() -> None:
    chef, _, fetched = session()
    (result,) = chef.run_tools(
        [ToolCall(id="s1", name="web__fetch", arguments={"url": "u"})], append=False
    )
    assert result.content == "<html>u</html>" and fetched == ["u"]


def test_cancellation_and_keyboard_interrupt_are_not_turned_into_results() -> None:
    def interrupted(path: str) -> str:
        """Ctrl-C."""
        raise KeyboardInterrupt

    started = asyncio.Event()

    async def slow(path: str) -> str:
        """Waits until cancelled."""
        started.set()
        await asyncio.sleep(60)
        return "never"

    chef = ContextChef()
    chef.register_tools([interrupted, slow])
    with pytest.raises(KeyboardInterrupt):
        chef.run_tools([ToolCall(id="k1", name="interrupted", arguments={"path": "x"})])

    async def cancel_the_batch() -> None:
        calls = [ToolCall(id=f"k{i}", name="slow", arguments={"path": "x"}) for i in (2, 3)]
        batch = asyncio.ensure_future(chef.arun_tools(calls))
        await started.wait()
        batch.cancel()  # the host cancels: the cancellation goes on
        await batch

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancel_the_batch())
    assert chef.history == ()  # nothing half-appended


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.cancelling() is Python 3.11+")
def test_a_cancellation_the_tool_met_is_its_failure_and_the_batch_is_kept() -> None:
    """A handler that awaits something cancelled elsewhere raises CancelledError while
    its own task is not being cancelled: the model gets an error result, as from
    `run_tools`, and the other calls' results are kept (a fresh user lost the batch)."""

    async def good(n: int) -> str:
        """Good."""
        return f"good {n}"

    async def flaky(n: int) -> str:
        """Awaits a task someone else cancelled."""
        other = asyncio.ensure_future(asyncio.sleep(60))
        await asyncio.sleep(0)
        other.cancel()
        return str(await other)

    chef = ContextChef()
    chef.register_tools([good, flaky])
    calls = [
        ToolCall(id="c0", name="good", arguments={"n": 0}),
        ToolCall(id="cx", name="flaky", arguments={"n": 1}),
        ToolCall(id="c1", name="good", arguments={"n": 1}),
    ]
    for results in (asyncio.run(chef.arun_tools(calls)), chef.run_tools(calls)):
        assert [(r.call_id, r.is_error) for r in results] == [
            ("c0", False),
            ("cx", True),
            ("c1", False),
        ]
        assert "CancelledError" in results[1].content


def test_library_tools_and_offloaded_results_run_through_run_tools(tmp_path: Path) -> None:
    def dump(n: int) -> str:
        """Print many lines."""
        return "\n".join(f"line {i}" for i in range(n))

    chef = ContextChef(
        offload_dir=tmp_path / "offload",
        max_inline_chars=200,
        memory=InMemoryStore(),
        memory_tools="unified",
    )
    chef.register_tools([dump])
    hooks = Hooks(chef)
    (stub,) = chef.run_tools([ToolCall(id="f1", name="dump", arguments={"n": 100})], append=False)
    assert len(stub.content) < len(dump(100)) and "read_offloaded" in stub.content
    handle = re.search(r'"handle": "([^"]+)"', stub.content)
    assert handle is not None
    read = ToolCall(
        id="f2", name="read_offloaded", arguments={"handle": handle[1], "offset": 0, "length": 13}
    )
    remember = ToolCall(
        id="f3", name="context", arguments={"action": "create", "key": "k", "value": "v"}
    )
    part, wrote = asyncio.run(chef.arun_tools([read, remember], append=False))
    assert "line 0\nline 1" in part.content and not part.is_error
    assert wrote.content == 'Memory "k" created.'
    again = ToolCall(
        id="f4", name="context", arguments={"action": "update", "key": "k", "value": "w"}
    )
    (updated,) = chef.run_tools([again], append=False)
    assert not updated.is_error and '"k"' in updated.content
    assert hooks.before == Counter({"f1": 1, "f2": 1, "f3": 1, "f4": 1})
    assert hooks.after == hooks.before


def test_bad_batches_are_refused_before_anything_runs() -> None:
    chef, hooks, _ = session()
    twice = [ToolCall(id="x", name="read_file", arguments={"path": "a"})] * 2
    with pytest.raises(UsageError, match="share the id"):
        chef.run_tools(twice)
    with pytest.raises(UsageError, match="list of calls"):
        chef.run_tools("read_file")
    assert hooks.before == Counter()


def test_results_are_appended_as_one_tool_results_message() -> None:
    chef, _, _ = session()
    calls = [ToolCall(id=f"a{i}", name="read_file", arguments={"path": str(i)}) for i in range(3)]
    chef.append(assistant("", calls))
    results = chef.run_tools(calls)
    last = chef.history[-1]
    assert last.role == "user" and last.tool_results == results
    assert chef.run_tools([]) == () and chef.history[-1] is last  # nothing to append


def test_every_kind_of_tool_in_one_batch_runs_with_each_hook_once() -> None:
    """Meta-tools, a defer_execute target, a toolkit, a namespace action, a memory tool."""
    chef = ContextChef(memory=InMemoryStore())
    chef.register_tools(
        [
            {
                "name": "lookup",
                "description": "Look a thing up.",
                "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
                "defer_loading": True,
            }
        ],
        handlers={"lookup": lambda q="": f"found {q}"},
    )
    chef.register_toolkits(
        [{"name": "kit", "description": "A toolkit.", "tools": [{"name": "kit_tool"}]}]
    )
    chef.register_namespaces(
        [
            {
                "name": "fs",
                "description": "Files.",
                "tools": [
                    {
                        "name": "stat",
                        "description": "Stat a path.",
                        "input_schema": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}},
                            "required": ["path"],
                        },
                    }
                ],
            }
        ],
        handlers={"stat": lambda path: f"stat {path}"},
    )
    hooks = Hooks(chef)
    calls = [
        ToolCall(id="m1", name="tool_search", arguments={"tool_names": ["lookup"]}),
        ToolCall(
            id="m2", name="defer_execute", arguments={"tool_name": "lookup", "params": {"q": "a"}}
        ),
        ToolCall(id="m3", name="load_toolkit", arguments={"toolkit_name": "kit"}),
        ToolCall(id="m4", name="fs", arguments={"action": "stat", "args": {"path": "p"}}),
        ToolCall(id="m5", name="create_memory", arguments={"key": "KEY", "value": "v"}),
    ]
    for run in ("sync", "async"):
        fresh = [
            ToolCall(id=f"{run}{c.id}", name=c.name, arguments=c.arguments.replace("KEY", run))
            for c in calls
        ]
        if run == "sync":
            results = chef.run_tools(fresh, append=False)
        else:
            results = asyncio.run(chef.arun_tools(fresh, append=False))
        search, lookup, kit, stat, memory = results
        assert "lookup" in search.content and not search.is_error
        assert lookup.content == "found a" and "kit_tool" in kit.content
        assert stat.content == "stat p" and memory.content == f'Memory "{run}" created.'
        assert not any(r.is_error for r in results)
        assert chef.loaded_toolkits == ("kit",)
    ids = Counter(f"{run}{c.id}" for run in ("sync", "async") for c in calls)
    assert hooks.before == ids and hooks.after == ids


def test_a_handler_returning_a_tool_result_keeps_its_media_and_error_flag() -> None:
    """What an MCP tool's handler returns (text plus images, isError) reaches the model."""
    image = MediaPart(media_type="image/png", data="iVBORw0KGgo=")

    def shot(url: str) -> ToolResult:
        """Screenshot."""
        return ToolResult(call_id="ignored", name="x", content="a page", media=(image,))

    def failing(url: str) -> ToolResult:
        """Fail as MCP does (isError)."""
        return ToolResult(call_id="ignored", name="x", content="404", is_error=True)

    chef = ContextChef()
    chef.register_tools([shot, failing])
    calls = [
        ToolCall(id="i1", name="shot", arguments={"url": "u"}),
        ToolCall(id="i2", name="failing", arguments={"url": "u"}),
    ]
    chef.set_history([user("Look."), assistant("", calls)])
    got, failed = chef.run_tools(calls)
    assert (got.call_id, got.name, got.content, got.media) == ("i1", "shot", "a page", (image,))
    assert (failed.call_id, failed.is_error, failed.content) == ("i2", True, "404")
    blocks = chef.compile("anthropic", model="m").payload["messages"][-1]["content"]
    assert [b["type"] for b in blocks[0]["content"]] == ["text", "image"]
    assert blocks[1]["is_error"] is True


def _transfers() -> tuple[ContextChef, list[int]]:
    ran: list[int] = []
    chef = ContextChef()
    chef.register_tools(
        [{"name": "transfer", "description": "Move money.", "input_schema": {"type": "object"}}],
        handlers={"transfer": lambda amount=0: ran.append(amount) or f"moved {amount}"},
    )
    chef.set_history([user("pay")])
    return chef, ran


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_a_call_answered_in_the_history_is_never_run_again(target: str) -> None:
    # break-it 35 #2: run_tools on the same calls twice (a host's retry) ran the handler
    # twice, the second result then left out of every request (dropped_duplicate_result)
    chef, ran = _transfers()
    fake = fake_for(target).script(
        tool_calls(("transfer", {"amount": 5}), ("transfer", {"amount": 6}))
    )
    calls = chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
    chef.run_tools(calls[:1])
    before = chef.history
    for again in (lambda: chef.run_tools(calls), lambda: chef.execute(calls[0])):
        with pytest.raises(UsageError) as caught:
            again()
        said = str(caught.value)
        assert f"'transfer' (call id '{calls[0].id}') is answered in history message 2" in said
        assert "nothing was run" in said and calls[1].id not in said
    with pytest.raises(UsageError):
        asyncio.run(chef.arun_tools(calls))
    assert ran == [5] and chef.history == before  # nothing ran, nothing appended
    assert [r.content for r in chef.run_tools(calls[1:])] == ["moved 6"] and ran == [5, 6]


def test_a_reused_call_id_counts_from_its_last_call() -> None:
    # a host's own messages may repeat an id: the call made last is the one judged
    chef, ran = _transfers()
    first = ToolCall(id="c0", name="transfer", arguments={"amount": 1})
    chef.append(assistant("", [first]))
    chef.run_tools([first])
    again = ToolCall(id="c0", name="transfer", arguments={"amount": 2})
    chef.append(assistant("", [again]))
    assert [r.content for r in chef.run_tools([again])] == ["moved 2"] and ran == [1, 2]
    with pytest.raises(UsageError, match="is answered in history message 4"):
        chef.run_tools([again])


def test_a_call_answered_by_an_unanswered_request_may_still_run() -> None:
    # a compile answers an unanswered call as interrupted; until the model answers that
    # request, running the call and compiling again sends its real result instead
    chef, ran = _transfers()
    fake = fake_for("openai").script(
        tool_calls(("transfer", {"amount": 1}), ("transfer", {"amount": 2}))
    )
    calls = chef.ingest(send("openai", fake, chef.compile("openai", model="m").payload))
    chef.run_tools(calls[:1])
    first = chef.compile("openai", model="m").payload
    assert "was not executed" in first["messages"][-1]["content"]
    chef.run_tools(calls[1:])
    again = chef.compile("openai", model="m").payload
    assert [m["content"] for m in again["messages"] if m["role"] == "tool"] == [
        "moved 1",
        "moved 2",
    ]
    assert ran == [1, 2]


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_a_result_after_its_call_was_told_it_did_not_run_reaches_the_model(target: str) -> None:
    # break-it 35 #2: a call a sent request answered as interrupted, then run by the host,
    # had its real result dropped from every later request: the model never learned of it
    chef, ran = _transfers()
    fake = fake_for(target).script(
        tool_calls(("transfer", {"amount": 1}), ("transfer", {"amount": 2})),
        text("Only the first ran."),
        text("Noted."),
        text("Fine."),
    )
    calls = chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
    chef.run_tools(calls[:1])
    chef.ingest(send(target, fake, chef.compile(target, model="m").payload))  # told: not run
    assert [r.content for r in chef.run_tools(calls[1:])] == ["moved 2"] and ran == [1, 2]
    chef.append(user("status?"))
    request = chef.compile(target, model="m")
    late = [c for c in request.changes if c.kind == "late_result_as_text"]
    assert [c.call_id for c in late] == [calls[1].id]
    sent = json.dumps(request.payload)
    said = f"[Late result of transfer (call id {calls[1].id}): an earlier message said"
    assert json.dumps(said)[1:-1] in sent and "moved 2" in sent
    chef.ingest(send(target, fake, request.payload))
    chef.append(user("and now?"))
    after = chef.compile(target, model="m")
    assert after.changes == () and json.dumps(said)[1:-1] in json.dumps(after.payload)
    send(target, fake, after.payload)
    assert fake.violations == ()


def test_a_result_the_host_appended_twice_is_still_a_duplicate() -> None:
    chef, _ = _transfers()
    fake = fake_for("openai").script(tool_calls(("transfer", {"amount": 1})), text("ok"))
    (call,) = chef.ingest(send("openai", fake, chef.compile("openai", model="m").payload))
    (result,) = chef.run_tools([call])
    chef.ingest(send("openai", fake, chef.compile("openai", model="m").payload))
    chef.append(tool_results([result]), user("again"))
    kinds = [c.kind for c in chef.compile("openai", model="m").changes]
    assert "dropped_duplicate_result" in kinds and "late_result_as_text" not in kinds


def test_a_call_of_any_shape_with_its_own_id_runs_once() -> None:
    # break-it 36 #1, #2: a dict whose real id is call_<its position> was taken for one
    # without an id, and a Gemini functionCall part lost its id (then answered call_0)
    chef, ran = _transfers()
    shapes: list[Any] = [
        {"id": "call_0", "name": "transfer", "arguments": {"amount": 1}},
        {"functionCall": {"id": "fc_1", "name": "transfer", "args": {"amount": 2}}},
    ]
    for shape in shapes:
        own = shape.get("id") or shape["functionCall"]["id"]
        chef.append(assistant("", [ToolCall(id=own, name="transfer", arguments={})]))
        (result,) = chef.run_tools([shape])
        assert result.call_id == own
        with pytest.raises(UsageError, match="answered in history message"):
            chef.run_tools([shape])
    assert ran == [1, 2]
    # a call without an id of its own gets a default one: not judged, it runs
    chef.run_tools([{"name": "transfer", "arguments": {"amount": 3}}], append=False)
    assert ran == [1, 2, 3]


def test_two_arun_tools_of_the_same_calls_at_once_run_them_once() -> None:
    # break-it 36 #3: both passed the check before either appended its result
    chef, ran = _transfers()
    started = threading.Event()

    async def slow(amount: int = 0) -> str:
        started.set()
        await asyncio.sleep(0.05)
        ran.append(amount)
        return f"moved {amount}"

    chef.register_tools(
        [{"name": "slow", "description": "Slow.", "input_schema": {"type": "object"}}],
        handlers={"slow": slow},
    )
    call = ToolCall(id="s1", name="slow", arguments={"amount": 7})
    chef.append(assistant("", [call]))

    async def both() -> list[Any]:
        return await asyncio.gather(
            chef.arun_tools([call]), chef.arun_tools([call]), return_exceptions=True
        )

    outcomes = asyncio.run(both())
    assert ran == [7] and sum(isinstance(o, UsageError) for o in outcomes) == 1
    assert "is running now" in str(next(o for o in outcomes if isinstance(o, UsageError)))
    assert [r.call_id for m in chef.history for r in m.tool_results] == ["s1"]


def test_a_late_results_media_goes_with_it() -> None:
    # break-it 36 #8: the late result's image was dropped as "(1 attachment(s) not shown)"
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
    chef, _ = _transfers()
    fake = fake_for("openai").script(
        tool_calls(("transfer", {"amount": 1}), ("transfer", {"amount": 2})), text("ok"), text(".")
    )
    calls = chef.ingest(send("openai", fake, chef.compile("openai", model="m").payload))
    chef.run_tools(calls[:1])
    chef.ingest(send("openai", fake, chef.compile("openai", model="m").payload))
    shot = MediaPart(media_type="image/png", data=png)
    chef.append(tool_results([ToolResult(call_id=calls[1].id, name="transfer", content="done",
                                         media=(shot,))]))  # fmt: skip
    request = chef.compile("openai", model="m")
    sent = json.dumps(request.payload)
    assert "Late result of transfer" in sent and png in sent
    assert "not shown" not in sent and "media_as_text" not in [c.kind for c in request.changes]
    send("openai", fake, request.payload)
    assert fake.violations == ()
