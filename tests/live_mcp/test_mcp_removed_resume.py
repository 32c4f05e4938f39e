"""A tool an MCP server removes mid-conversation, and the next workers that resume it.

Worker 1 talks to a real `MCPServer` process (``shrink_server.py``); the model calls the
server's ``dig``, then its ``shrink`` tool, which removes ``dig`` and sends
``notifications/tools/list_changed``; the hub withdraws ``shr__dig`` (still declared:
the history uses it; the gate refuses it, naming the server). The turn is stored
(`SessionSync`, SQLite, signed). The next worker's server is that server as it is now,
without ``dig``: restoring the conversation registers ``shr__dig`` from the snapshot,
withdrawn as it was, so the worker resumes, its requests keep the cached prefix byte for
byte (``tools`` as sent, nothing edited) and a call to ``dig`` is refused with the same
reason. When a server lists ``dig`` again (from the start, or through ``regrow``
mid-turn), the hub's listing admits it and calls reach the server. Every request goes
through the official Anthropic SDK to the fake, which enforces the API's rules
(``claude-opus-5-5``): the native strategy withdraws with a ``tool_removal`` block, whose
``tool_reference`` must name a tool declared in ``tools`` (an undeclared name is a 400,
``tool_reference_unresolved``: Anthropic, "Mid-conversation system messages and tool
changes", https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages),
so the next worker must still declare the withdrawn tool that the replayed history names.

A tool missing that the conversation never withdrew is still refused
(`SnapshotMismatchError`), and no stored record can bring back a callable tool.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import anthropic
import pytest
from test_mcp_resume import Worker

from contextchef import (
    CompiledRequest,
    ContextChef,
    DeferredConfig,
    Denied,
    SnapshotKeys,
    SnapshotMismatchError,
    SnapshotSignatureError,
    Tool,
    ToolCall,
    UsageError,
)
from contextchef.mcp import McpHub, McpServer
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import httpx_for, text, tool_calls

SERVER = Path(__file__).with_name("shrink_server.py")
HX = httpx_for(anthropic)
KEYS = SnapshotKeys({"k": b"k" * 32})
GONE = 'Tool "shr__dig" was removed by MCP server "shr".'


def shrink_server(*args: str) -> McpServer:
    return McpServer(command=sys.executable, args=(str(SERVER), *args), timeout=30)


def shrunk(tmp_path: Path, strategy: str) -> tuple[SQLiteSessionStore, Worker]:
    """Worker 1: the model digs, removes ``dig``, and its next call to it is refused."""
    store = SQLiteSessionStore(str(tmp_path / "sessions.db"), keys=KEYS)
    first = Worker(store, shrink_server(), strategy)
    first.run(
        "a",
        tool_calls(("shr__dig", {"q": "a"})),
        tool_calls(("shr__shrink", {"name": "dig"})),
        tool_calls(("shr__dig", {"q": "b"})),
        text("Removed."),
    )
    assert first.answers() == [("dug a", False), ("removed dig", False), (GONE, True)]
    return store, first


def resumed_as_sent(worker: Worker, before: CompiledRequest) -> None:
    """The worker's first request replays what `before` sent: nothing edited."""
    resumed = worker.requests[0]
    assert resumed.edits == ()
    assert resumed.segments["system"] == before.segments["system"]
    assert resumed.segments["tools"] == before.segments["tools"]  # the cached prefix
    assert resumed.segments["messages"].startswith(before.segments["messages"][:-1])


STRATEGIES = ["client", "anthropic-native-client"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_next_workers_resume_a_conversation_whose_server_removed_a_tool(
    tmp_path: Path, strategy: str
) -> None:
    store, first = shrunk(tmp_path, strategy)
    last = first.requests[-1]
    for ns in ("b", "c"):  # worker 2, then worker 3: each its own server, without dig
        worker = Worker(store, shrink_server("-dig"), strategy)
        worker.run(
            ns,
            tool_calls(("shr__dig", {"q": ns})),
            tool_calls(("shr__lookup", {"q": ns})),
            text("Looked up."),
        )
        assert worker.answers() == [(GONE, True), (f"found {ns}", False)]
        resumed_as_sent(worker, last)
        last = worker.requests[-1]
    # worker 4: the server adds dig back mid-turn; the hub's listing admits it
    worker = Worker(store, shrink_server("-dig"), strategy)
    worker.run(
        "d",
        tool_calls(("shr__regrow", {"name": "dig"})),
        tool_calls(("shr__dig", {"q": "d"})),
        text("Dug."),
    )
    assert worker.answers() == [("back dig", False), ("dug d", False)]
    resumed_as_sent(worker, last)
    assert all(r.edits == () for r in worker.requests)  # the same definition came back
    # worker 5: dig is the conversation's again; a server without it is a mismatch now
    with pytest.raises(SnapshotMismatchError, match=r"missing \['shr__dig'\]"):
        Worker(store, shrink_server("-dig"), strategy).run("e", text("Never."))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_server_that_lists_the_removed_tool_again_from_the_start_serves_it(
    tmp_path: Path, strategy: str
) -> None:
    store, first = shrunk(tmp_path, strategy)
    worker = Worker(store, shrink_server(), strategy)
    worker.run("b", tool_calls(("shr__dig", {"q": "b"})), text("Dug."))
    assert worker.answers() == [("dug b", False)]
    resumed_as_sent(worker, first.requests[-1])


def test_a_tool_missing_that_was_never_withdrawn_still_refuses_the_restore(
    tmp_path: Path,
) -> None:
    store, _ = shrunk(tmp_path, "client")
    for args in (("-lookup",), ("-dig", "-lookup")):
        worker = Worker(store, shrink_server(*args), "client")
        with pytest.raises(SnapshotMismatchError, match=r"missing \['shr__lookup'\]") as err:
            worker.run("b", text("Never."))
        assert "shr__dig" not in str(err.value)


def test_a_runtime_tool_the_server_added_then_removed_resumes_withdrawn(tmp_path: Path) -> None:
    store, first = shrunk_sprout(tmp_path / "w")
    worker = Worker(store, shrink_server(), "client")
    use = ("defer_execute", {"tool_name": "shr__sprout", "params": {"x": "b"}})
    worker.run("b", tool_calls(use), text("Refused."))
    removed = 'Tool "shr__sprout" was removed by MCP server "shr".'
    assert worker.answers() == [(removed, True)]
    resumed_as_sent(worker, first.requests[-1])
    for ns, args, script in [  # listed again: the server's, from the start or made anew
        ("c", ("+sprout",), [tool_calls(use)]),
        ("d", (), [tool_calls(("shr__grow", {"name": "sprout"})), tool_calls(use)]),
    ]:
        again = Worker(store, shrink_server(*args), "client")
        again.run(ns, *script, text("Made."))
        assert again.answers()[-1] == ("madeb", False)
        store, _ = shrunk_sprout(tmp_path / ns)


def shrunk_sprout(tmp_path: Path) -> tuple[SQLiteSessionStore, Worker]:
    """A conversation whose server added ``sprout`` and removed it again (stored)."""
    tmp_path.mkdir()
    store = SQLiteSessionStore(str(tmp_path / "sessions.db"), keys=KEYS)
    first = Worker(store, shrink_server(), "client")
    first.run(
        "a",
        tool_calls(("shr__grow", {"name": "sprout"})),
        tool_calls(("shr__shrink", {"name": "sprout"})),
        text("Gone."),
    )
    return store, first


# -- what a restored withdrawn tool may do, and records that cannot restore ---------------


def resumed_chef(store: SQLiteSessionStore, *args: str) -> tuple[ContextChef, McpHub]:
    chef = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
    chef.set_system_prompt("You are a test agent.")
    hub = McpHub(chef, [shrink_server(*args)]).start()
    try:
        assert SessionSync(store, "c1").load_into(chef)
    except BaseException:
        hub.close()
        raise
    return chef, hub


def test_a_restored_withdrawn_tool_is_never_callable(tmp_path: Path) -> None:
    store, _ = shrunk(tmp_path, "client")
    chef, hub = resumed_chef(store, "-dig")
    with hub:
        direct = chef.check_tool_call(ToolCall(id="c1", name="shr__dig", arguments={"q": "x"}))
        assert isinstance(direct, Denied) and (direct.code, direct.reason) == ("withdrawn", GONE)
        via = ToolCall(
            id="c2", name="defer_execute", arguments={"tool_name": "shr__dig", "params": {}}
        )
        assert chef.execute(via).result.content == GONE
        found = chef.execute(
            ToolCall(id="c3", name="tool_search", arguments={"query": "dig for a word"})
        )
        assert "shr__dig" not in found.result.content
        assert chef.registry.handler(chef.registry.by_wire_name("shr__dig")) is None
        again = chef.snapshot(
            keys=KEYS, session_id="c1"
        )  # still withdrawn for the worker after this one
        assert [w["name"] for w in again["tools"]["withdrawn"]] == ["shr__dig"]


def stored_snapshot(store: SQLiteSessionStore) -> dict[str, Any]:
    chef, hub = resumed_chef(store, "-dig")
    with hub:
        return chef.snapshot()  # unsigned: the cases below edit it


def restore(snapshot: Any, *args: str, **trust: Any) -> ContextChef:
    chef = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
    chef.set_system_prompt("You are a test agent.")
    with McpHub(chef, [shrink_server(*args)]):
        chef.restore(snapshot, **trust)
    return chef


def test_records_that_cannot_bring_a_withdrawn_tool_back(tmp_path: Path) -> None:
    store, _ = shrunk(tmp_path, "client")
    base = stored_snapshot(store)
    (entry,) = base["tools"]["withdrawn"]
    assert entry["name"] == "shr__dig" and entry["reason"] == GONE
    assert (
        restore(base, "-dig", allow_unsigned=True)
        .check_tool_call(ToolCall(id="c", name="shr__dig", arguments={"q": "x"}))
        .reason
        == GONE
    )

    signed = restore(base, "-dig", allow_unsigned=True).snapshot(keys=KEYS, session_id="c1")
    signed["tools"]["withdrawn"][0]["reason"] = "Call me."  # altered: the signature fails
    with pytest.raises(SnapshotSignatureError):
        restore(signed, "-dig", keys=KEYS, session_id="c1")

    forged = copy.deepcopy(base)  # a tool the conversation never had: the fingerprint says so
    evil = {**entry["definition"], "name": "evil", "description": "Anything."}
    forged["tools"]["withdrawn"].append({"name": "shr__evil", "reason": "x", "definition": evil})
    with pytest.raises(SnapshotMismatchError, match=r"unexpected \['shr__evil'\]"):
        restore(forged, "-dig", allow_unsigned=True)

    dropped = copy.deepcopy(base)  # no record: the tool is missing, as before
    dropped["tools"]["withdrawn"] = []
    with pytest.raises(SnapshotMismatchError, match=r"missing \['shr__dig'\]"):
        restore(dropped, "-dig", allow_unsigned=True)

    for bad, said in [
        ({"name": "shr__dig", "reason": ""}, "a wire name and a reason"),
        ({"name": "shr__dig", "reason": "a\ud800"}, "non-empty printable text"),
        ({"name": "shr__dig", "reason": GONE, "extra": 1}, "must be an object with 'name'"),
        ({"name": "shr__lookup", "reason": GONE, "definition": entry["definition"]}, "not the"),
        ({"name": "shr__dig", "reason": GONE, "definition": {"name": "dig"}}, "with a 'server'"),
    ]:
        broken = copy.deepcopy(base)
        broken["tools"]["withdrawn"] = [bad]
        with pytest.raises(UsageError, match=said) as err:
            restore(broken, "-dig", allow_unsigned=True)
        assert "'tools' 'withdrawn' [0]" in str(err.value)
    broken = copy.deepcopy(base)
    broken["tools"]["withdrawn"] = [entry, entry]
    with pytest.raises(UsageError, match=r"'withdrawn' \[1\] records 'shr__dig' again"):
        restore(broken, "-dig", allow_unsigned=True)


def test_a_withdrawn_tools_name_taken_here_by_another_origin_is_refused(tmp_path: Path) -> None:
    store, _ = shrunk(tmp_path, "client")
    base = stored_snapshot(store)

    other = Tool(name="shr__dig", description="Not the server's dig.", input_schema={})
    chef = ContextChef(deferred=DeferredConfig(always_meta_tools=True))
    chef.set_system_prompt("You are a test agent.")
    chef.register_tools([other], handlers={"shr__dig": lambda **_: "x"})
    taken = pytest.raises(SnapshotMismatchError, match="registered here under another origin")
    with McpHub(chef, [shrink_server("-dig")]), taken:
        chef.restore(base, allow_unsigned=True)
    assert chef.history == ()  # nothing restored
