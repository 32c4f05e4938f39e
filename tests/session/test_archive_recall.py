"""Recoverable compaction (issue 25 item 4): what leaves the model's view stays reachable.

Sessions with a `ContextPolicy` (or an ``offload_dir``) archive every message a local
compaction, a clearing or the overflow handoff removes, the summary lists what was
dropped, and the model gets it back through the ``search_archive`` tool, gated like any
tool. Multi-turn sessions run through the official Gemini SDK against `FakeGemini` (the
local path: compile runs the handoff past the policy's compaction point).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from context_tools import read_log
from google import genai
from google.genai import types

from contextchef import (
    ContextChef,
    ContextPolicy,
    OffloadStore,
    assistant,
    user,
)
from contextchef.history._archive import ARCHIVE_TOOL
from contextchef.history._messages import Message, ToolCall
from contextchef.providers._budget import request_tokens
from contextchef.testing import FakeGemini, httpx_for, text, tool_calls

RULE = "Never restart the database without asking me first."
EARLY = "Use the staging cluster for every test run, not prod."
FOUND = "The flaky test is test_payments_retry in tests/api/test_pay.py."


def _summarize(transcript: str) -> str:
    return f"Summary: {transcript.count('read_log')} log lines were read."


def _chef(**options: Any) -> ContextChef:
    chef = ContextChef(
        max_inline_chars=None,
        context_policy=ContextPolicy(budget_tokens=40_000),  # compaction point 32,000
        on_overflow=_summarize,
        **options,
    )
    chef.register_tools([read_log])
    chef.set_history([user(RULE)])
    return chef


def _client(fake: FakeGemini) -> genai.Client:
    http = types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai)))
    return genai.Client(api_key="x", http_options=http)


def _turn(chef: ContextChef, fake: FakeGemini, client: genai.Client) -> str:
    """One request and its answer; returns the text of the last tool result (or "")."""
    request = chef.compile("gemini", model="gemini-3-pro")
    assert request_tokens("", (), chef.history) < 40_000
    calls = chef.ingest(client.models.generate_content(**request.payload))
    if not calls:
        return ""
    chef.run_tools(calls)
    return chef.history[-1].tool_results[-1].content


def test_after_compactions_the_model_reads_an_early_turn_back_exactly() -> None:
    fake = FakeGemini()
    client = _client(fake)
    chef = _chef()
    fake.script(text(FOUND))  # an early turn: the model's own finding
    _turn(chef, fake, client)
    chef.append(user(EARLY))
    for k in range(8):  # about 12,000 tokens per result: a compaction every few reads
        fake.script(tool_calls(("read_log", {"path": f"logs/run{k}.txt"})))
        _turn(chef, fake, client)
    summaries = [m for m in chef.history if "<conversation_summary>" in m.text]
    assert summaries, "the handoff ran"
    assert FOUND not in json.dumps(chef.compile("gemini", model="gemini-3-pro").payload)
    # the summary lists what was dropped, from the messages themselves
    note = summaries[0].text
    assert f'> "{RULE}"' in note and f'> "{EARLY}"' in note
    assert "Tools called: read_log (3)" in note and "Files touched: logs/run3.txt" in note
    assert f"{ARCHIVE_TOOL}(" in note
    # the recall question: the model searches, then reads the hit
    fake.script(tool_calls((ARCHIVE_TOOL, {"query": "which test was flaky"})))
    hits = _turn(chef, fake, client)
    assert not chef.history[-1].tool_results[-1].is_error
    assert FOUND in hits.splitlines()[0]  # the best hit, quoted from the archive
    handle, _, rest = hits.splitlines()[0].partition(" offset ")
    offset = int(rest.split(" ")[0])
    fake.script(tool_calls((ARCHIVE_TOOL, {"handle": handle, "offset": offset, "length": 200})))
    read = _turn(chef, fake, client)
    assert read.startswith("## message ") and f"(assistant)\n{FOUND}\n" in read
    # and an early tool call's path, read back from the archive
    fake.script(tool_calls((ARCHIVE_TOOL, {"query": "logs/run0.txt"})))
    assert "logs/run0.txt" in _turn(chef, fake, client)
    fake.script(text("The tests run on staging."))
    _turn(chef, fake, client)
    assert fake.violations == ()


def test_every_message_a_handoff_removes_is_in_the_archive() -> None:
    fake = FakeGemini()
    client = _client(fake)
    chef = _chef()
    seen: list[Message] = []
    for k in range(6):
        fake.script(tool_calls(("read_log", {"path": f"logs/run{k}.txt"})))
        _turn(chef, fake, client)
        seen += [m for m in chef.history if m not in seen]
    handles = sorted({e.split(" ")[0] for e in _hits(chef, "read_log")})
    archived = "".join(_read_all(chef, h) for h in handles)
    gone = [m for m in seen if m not in chef.history]
    assert gone, "something left the view"
    for message in gone:  # every removed message's own words are archived
        for part in message.parts:
            words = getattr(part, "text", None) or getattr(part, "content", None)
            if isinstance(part, ToolCall):
                words = part.arguments
            assert words and words in archived, message


def _read_all(chef: ContextChef, handle: str, offset: int = 0) -> str:
    """An archive entry read whole through the tool, page by page (from byte `offset`)."""
    pages = []
    while True:  # each page ends with a line giving the next offset (or the end)
        args = {"handle": handle, "offset": offset, "length": 100_000}
        page = chef.execute(ToolCall(id="r", name=ARCHIVE_TOOL, arguments=args)).result.content
        text, _, where = page.rpartition("\n")
        pages.append(text)
        if where.endswith("the end of the entry]"):
            return "".join(pages)
        offset = int(where.split("next offset ")[1].split(",")[0])


def _hits(chef: ContextChef, query: str) -> list[str]:
    call = ToolCall(id="q", name=ARCHIVE_TOOL, arguments=json.dumps({"query": query, "limit": 20}))
    return chef.execute(call).result.content.splitlines()[:-1]


def test_a_compaction_with_a_pending_call_runs_keeps_it_and_archives_the_rest() -> None:
    lost = ToolCall(id="lost", name="read_log", arguments={"path": "a.log"})
    running = ToolCall(id="run", name="read_log", arguments={"path": "b.log"})
    chef = _chef()
    chef.append(
        Message(role="assistant", parts=(lost,)),  # its result never came
        user("the pod restarted; go on"),
        assistant("x" * 200_000),
        user("next"),
        Message(role="assistant", parts=(running,)),  # still running at compile
    )
    fake = FakeGemini().script(text("Done."))
    request = chef.compile("gemini", model="gemini-3-pro")
    assert chef.history[-1].tool_calls == (running,)  # kept as it was, after the summary
    note = chef.history[0].text
    assert "Tools called: read_log (1)" in note and "Files touched: a.log" in note
    handle = note.split("Archived as ")[1].split(":")[0]
    entry = _read_all(chef, handle)
    assert json.loads(entry.splitlines()[0])["reason"] == "handoff"
    assert '-> call read_log (id lost): {"path":"a.log"}' in entry
    assert "x" * 200_000 in entry and "## message 2 (user)\n" in entry
    assert "(id run)" not in entry  # the pending call was not removed, so not archived
    _client(fake).models.generate_content(**request.payload)
    assert fake.violations == ()


def test_cleared_results_name_their_archive_entry_and_read_back_whole() -> None:
    chef = _chef()
    for k in range(3):
        call = ToolCall(id=f"c{k}", name="read_log", arguments={"path": f"l{k}"})
        chef.append(Message(role="assistant", parts=(call,)))
        chef.run_tools([call])
    original = chef.history[2].tool_results[0].content
    done = chef.clear_tool_results(keep_recent=1)
    assert done.cleared_call_ids == ("c0", "c1")
    placeholder = chef.history[2].tool_results[0].content
    assert placeholder.startswith("[tool result cleared to save context; archived as ")
    args = placeholder[placeholder.index("{") : placeholder.rindex("}") + 1]
    read = chef.execute(ToolCall(id="r", name=ARCHIVE_TOOL, arguments=args)).result.content
    assert read.startswith("## message 2 (user)\n<- result of read_log (id c0):\n")
    assert original[:15_000] in read
    # clearing again leaves what is already archived as it is
    assert chef.clear_tool_results(keep_recent=0).cleared_call_ids == ("c2",)
    assert chef.history[2].tool_results[0].content == placeholder


def test_the_archive_tool_goes_through_the_gate() -> None:
    chef = _chef()
    chef.set_blocked_tools([ARCHIVE_TOOL])
    denied = chef.execute(ToolCall(id="q", name=ARCHIVE_TOOL, arguments={"query": "x"}))
    assert denied.check.decision == "denied" and denied.result.is_error
    chef.set_blocked_tools([])
    bad = chef.execute(ToolCall(id="q", name=ARCHIVE_TOOL, arguments={"query": 5}))
    assert bad.result.is_error and "query" in bad.result.content  # schema-checked
    both = chef.execute(ToolCall(id="q", name=ARCHIVE_TOOL, arguments={}))
    assert both.result.is_error and "either 'query'" in both.result.content
    hooked: list[str] = []
    chef.before_tool_call(lambda ctx: hooked.append(ctx.wire_name))
    chef.execute(ToolCall(id="q", name=ARCHIVE_TOOL, arguments={"query": "x"}))
    assert hooked == [ARCHIVE_TOOL]
    chef.set_mode("read_only")  # read-only: the archive stays reachable
    names = [t["name"] for t in chef.compile("anthropic").payload["tools"]]
    assert names == [ARCHIVE_TOOL]  # read_log is not read-only: excluded
    allowed = chef.execute(ToolCall(id="q", name=ARCHIVE_TOOL, arguments={"query": "x"}))
    assert allowed.check.decision == "allowed"


def test_no_policy_and_no_store_no_archive_tool() -> None:
    chef = ContextChef()
    assert ARCHIVE_TOOL not in {t.name for t in chef.registry.tools}
    chef.set_history([user("a"), assistant("b"), user("c"), assistant("d"), user("e")])
    done = chef.compact(lambda t: "S", keep_recent_turns=1)
    assert "Archived as" not in done.messages[0].text


def _compacted(store: OffloadStore) -> ContextChef:
    chef = ContextChef(offload_dir=store)
    chef.set_history([user(EARLY), assistant("ok"), user("go on"), assistant("done"), user("next")])
    chef.compact(lambda t: "S", keep_recent_turns=1)
    payload = json.dumps(chef.compile("gemini", model="gemini-3-pro").payload)
    assert payload.count(EARLY) == 1  # only quoted in the summary: the message is gone
    return chef


def test_a_restored_session_reaches_the_archive_where_its_store_does(tmp_path: Path) -> None:
    chef = _compacted(OffloadStore(tmp_path, scope="conversation-1"))
    snapshot = chef.snapshot()
    # the same scope in another session (another process): the archive is reachable
    again = ContextChef(offload_dir=OffloadStore(tmp_path, scope="conversation-1"))
    again.restore(snapshot, allow_unsigned=True)
    assert EARLY in _hits(again, "staging cluster")[0]
    # the same object restored: its entries are in memory
    chef.set_history([user("hi")])
    chef.restore(snapshot, allow_unsigned=True)
    assert EARLY in _hits(chef, "staging cluster")[0]
    # a fresh scope (the default) reads only what it wrote: the documented limit
    other = ContextChef(offload_dir=tmp_path)
    other.restore(snapshot, allow_unsigned=True)
    nothing = other.execute(ToolCall(id="q", name=ARCHIVE_TOOL, arguments={"query": "staging"}))
    assert nothing.result.content.startswith("Nothing in the archive (0 entries)")
    # ... and says why: the history names an entry this session cannot read
    (handle,) = {h.split(" ")[0] for h in _hits(chef, "staging cluster")}
    assert nothing.result.content.endswith(
        f"matches 'staging'. This conversation names 1 archive entries this session cannot "
        f"read (e.g. {handle}): they were kept in memory by the session this one was "
        "restored from, or in another offload store, so what they hold cannot be searched "
        "here; ask the user if you need it."
    )


def test_the_archive_is_deterministic(tmp_path: Path) -> None:
    one = _compacted(OffloadStore(tmp_path / "a", scope="s"))
    two = _compacted(OffloadStore(tmp_path / "b", scope="s"))
    assert one.history == two.history  # the summary names the same locator
    files = sorted(p.name for p in (tmp_path / "a").rglob("*.txt"))
    assert files == sorted(p.name for p in (tmp_path / "b").rglob("*.txt")) and len(files) == 1
    a = next((tmp_path / "a").rglob("*.txt")).read_bytes()
    assert a == next((tmp_path / "b").rglob("*.txt")).read_bytes()
    assert _hits(one, "staging") == _hits(two, "staging")


@pytest.mark.parametrize("query", ["", "zzz unknown words"])
def test_a_query_that_matches_nothing_says_so(query: str, tmp_path: Path) -> None:
    chef = _compacted(OffloadStore(tmp_path))
    result = chef.execute(ToolCall(id="q", name=ARCHIVE_TOOL, arguments={"query": query}))
    assert result.result.content.startswith("Nothing in the archive (1 entries) matches")


def test_a_result_never_archived_is_an_error_naming_the_handle() -> None:
    chef = _chef()
    bad = chef.execute(ToolCall(id="q", name=ARCHIVE_TOOL, arguments={"handle": "a" * 64 + ".txt"}))
    assert bad.result.is_error and "no archive entry" in bad.result.content
