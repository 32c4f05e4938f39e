"""The base of a provider-compacted conversation, and a switch away from it (issue 25 2, 3).

After Anthropic returns a ``compaction`` block the API "drops all content blocks prior to"
it on later requests (compaction-threshold.md; research provider-context-management.md
2.1), and the thinking prefix check starts there: requests send from the message holding
the newest block on, byte for byte, and nothing is re-rendered; the history and the
ledger keep every message (`compacted_away` names those left out). A compaction block or
item is readable only by the provider that made it (2.2, 2.5): on a switch the session
summarizes it and what it stands for locally, and the other provider never sees it.
Sessions run multi-turn on a preserved-thinking model (claude-opus-5-5) through the
official SDK clients against the fakes, which check every request (thinking prefix
included).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import openai
from context_tools import OPUS, Summaries, next_turn, read_log, recall
from google import genai
from google.genai import types

from contextchef import ContextChef, ContextPolicy, user
from contextchef.history._messages import ToolCall
from contextchef.providers._compacted import compacted_away, foreign_compaction, native_base
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeResponses,
    httpx_for,
    text,
    tool_calls,
)

# never_clear: tool-result clearing would keep the view under the compaction trigger
POLICY = ContextPolicy(budget_tokens=70_000, never_clear=["read_log"])


def _chef(**options: Any) -> ContextChef:
    chef = ContextChef(max_inline_chars=None, context_policy=POLICY, **options)
    chef.register_tools([read_log])
    chef.set_history([user("Find why the build fails.")])
    return chef


def _turns(n: int, start: int = 0) -> list[Any]:
    """`n` scripted turns with thinking: a log read, and every fourth an answer."""
    return [
        text(f"answer {k}", reasoning=f"thought {k}")
        if k % 4 == 3
        else tool_calls(("read_log", {"path": f"log{k}"}), reasoning=f"thought {k}")
        for k in range(start, start + n)
    ]


def _anthropic() -> tuple[FakeAnthropic, Callable[[Any], Any]]:
    fake = FakeAnthropic()
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    return fake, lambda r: client.beta.messages.create(**r.payload, extra_headers=r.headers)


def _responses() -> tuple[FakeResponses, Callable[[Any], Any]]:
    fake = FakeResponses()
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    return fake, lambda r: client.responses.create(**r.payload)


def _gemini() -> tuple[FakeGemini, Callable[[Any], Any]]:
    fake = FakeGemini()
    http = types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai)))
    client = genai.Client(api_key="x", http_options=http)
    return fake, lambda r: client.models.generate_content(**r.payload)


def _run(
    chef: ContextChef, target: str, model: str, send: Callable[[Any], Any], turns: range
) -> list[dict[str, Any]]:
    """Compile, send and ingest one request per turn; every request made no edit."""
    payloads = []
    for k in turns:
        request = chef.compile(target, model=model, max_tokens=1024)
        assert request.edits == (), [e.detail for e in request.edits]
        payloads.append(request.payload)
        next_turn(chef, chef.ingest(send(request)), k)
    return payloads


def _blocks(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for m in payload["messages"] for b in m["content"] if isinstance(b, dict)]


def test_anthropic_requests_start_at_the_newest_compaction_block() -> None:
    fake, send = _anthropic()
    fake.script(*_turns(14))
    chef = _chef()
    payloads = _run(chef, "anthropic", OPUS, send, range(14))
    assert fake.violations == ()
    compacted = [
        i for i, p in enumerate(payloads) if any(b["type"] == "compaction" for b in _blocks(p))
    ]
    assert compacted and [n.kind for n in chef.notices].count("compaction") >= 1
    for payload in payloads[compacted[0] :]:
        first = payload["messages"][0]
        assert first["role"] == "assistant" and first["content"][0]["type"] == "compaction"
        # one block: what came before it is not sent again, and nothing was re-rendered
        assert sum(b["type"] == "compaction" for b in _blocks(payload)) == 1
    last = payloads[-1]
    sent_thinking = [b for b in _blocks(last) if b["type"] == "thinking"]
    assert sent_thinking, "thinking after the block is sent back (and checked by the fake)"
    smaller = len(json.dumps(payloads[compacted[0]]))
    assert smaller < len(json.dumps(payloads[compacted[0] - 1])) // 2
    # the host's history keeps everything; compacted_away names what left the request
    away = compacted_away(chef.history, "anthropic")
    assert chef.history[0].text == "Find why the build fails." and away[0] is chef.history[0]
    now = chef.compile("anthropic", model=OPUS, max_tokens=1024).payload["messages"]
    assert len(away) + len(now) == len(chef.history)  # one message each, from the block on
    # the fake refuses a block not sent back exactly as returned (compaction_content_mismatch)
    assert max(v.input_tokens for v in fake.model_views) < POLICY.budget_tokens  # type: ignore[operator]
    # what left the request is in the archive: the model finds the first log by its path
    hits, _, page = recall(chef, "log0")
    assert "(compaction," in hits.splitlines()[0]
    assert read_log("log0") in page


def test_a_snapshot_restores_the_base_and_sends_the_same_bytes() -> None:
    fake, send = _anthropic()
    fake.script(*_turns(12))
    chef = _chef()
    _run(chef, "anthropic", OPUS, send, range(10))
    assert "compaction" in {n.kind for n in chef.notices}
    data = chef.snapshot()
    again = _chef()
    again.restore(data, allow_unsigned=True)
    one = chef.compile("anthropic", model=OPUS, max_tokens=1024)
    two = again.compile("anthropic", model=OPUS, max_tokens=1024)
    assert one.to_json() == two.to_json() and two.edits == ()
    assert two.payload["messages"][0]["content"][0]["type"] == "compaction"
    next_turn(again, again.ingest(send(two)), 10)
    assert fake.violations == ()


def test_native_base_is_the_newest_compaction_entry_unless_chained() -> None:
    entries = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [{"type": "compaction", "content": "s"}]},
        {"type": "compaction", "encrypted_content": "x"},
        {"role": "user", "content": "b"},
    ]
    assert native_base(entries, {}) == 2
    assert native_base(entries[:2], {}) == 1
    assert native_base(entries[:1], {}) == 0
    assert native_base(entries, {"previous_response_id": "resp_1"}) == 0


def test_switch_anthropic_responses_gemini_never_replays_a_foreign_compaction() -> None:
    summaries = Summaries()
    chef = _chef(on_overflow=summaries)
    claude, to_claude = _anthropic()
    claude.script(*_turns(10))
    _run(chef, "anthropic", OPUS, to_claude, range(10))
    assert claude.violations == () and "compaction" in {n.kind for n in chef.notices}
    assert foreign_compaction(chef.history, "responses") == "anthropic"
    # switch: the Anthropic block and what it stands for become a local summary
    gpt, to_gpt = _responses()
    gpt.script(*_turns(12, start=10))
    sent = _run(chef, "responses", "gpt-5.6", to_gpt, range(10, 22))
    assert gpt.violations == () and len(summaries.inputs) == 1
    assert "Summary 1" in json.dumps(sent[0]["input"][0])
    assert all("cmpsig_" not in json.dumps(p) for p in sent)  # no Anthropic block
    responses_items = [i for p in sent for i in p["input"] if i.get("type") == "compaction"]
    assert responses_items, "Responses compacted natively after the switch"
    # switch again: the Responses item is summarized, never sent to Gemini
    gemini, to_gemini = _gemini()
    gemini.script(*_turns(6, start=22))
    sent = _run(chef, "gemini", "gemini-3-pro", to_gemini, range(22, 28))
    assert gemini.violations == () and len(summaries.inputs) == 2
    assert all("encrypted_content" not in json.dumps(p) for p in sent)
    assert foreign_compaction(chef.history, "gemini") is None
    # back to Anthropic: its history was summarized since, which the compile reports
    claude.script(*_turns(2, start=28))
    request = chef.compile("anthropic", model=OPUS, max_tokens=1024)
    assert request.edits and "cmpsig_" not in json.dumps(request.payload)
    next_turn(chef, chef.ingest(to_claude(request)), 28)
    _run(chef, "anthropic", OPUS, to_claude, range(29, 30))
    assert claude.violations == ()


def test_a_switch_without_a_summarizer_says_what_was_compacted() -> None:
    chef = _chef()
    claude, to_claude = _anthropic()
    claude.script(*_turns(10))
    _run(chef, "anthropic", OPUS, to_claude, range(10))
    gemini, to_gemini = _gemini()
    gemini.script(*_turns(2, start=10))
    sent = _run(chef, "gemini", "gemini-3-pro", to_gemini, range(10, 12))
    assert gemini.violations == ()
    first = json.dumps(sent[0]["contents"][0])
    assert "compacted by the anthropic API" in first and "read_log" in first
    assert "Its summary: Summary of" in first  # the block's readable summary, quoted


def test_a_local_compaction_after_the_block_is_reported_and_accepted() -> None:
    fake, send = _anthropic()
    fake.script(*_turns(14))
    chef = _chef()
    _run(chef, "anthropic", OPUS, send, range(10))
    chef.compact(Summaries(), keep_recent_turns=1)  # the host's own, past the block
    request = chef.compile("anthropic", model=OPUS, max_tokens=1024)
    assert request.edits  # what was sent changed: reported, never silent
    assert native_base(request.payload["messages"], {}) == 0  # the block was summarized
    next_turn(chef, chef.ingest(send(request)), 10)
    _run(chef, "anthropic", OPUS, send, range(11, 14))
    assert fake.violations == ()


def test_the_cache_miss_after_a_provider_compaction_is_explained() -> None:
    """Break-it round 6: the request after a Responses compaction item starts at the item,
    so the provider's cache misses past it; the session logged that as a miss it could not
    explain ("... or the payload was changed after compile"). It is explained now."""
    fake, send = _responses()
    fake.script(*_turns(10))
    chef = _chef()
    _run(chef, "responses", "gpt-5.6", send, range(10))
    assert fake.violations == () and "compaction" in {n.kind for n in chef.notices}
    reports = chef.cache_reports
    assert [r.unexplained for r in reports if r.unexplained] == []
    explained = [r for r in reports if "compacted the conversation" in r.explanation]
    assert explained and any(r.missed for r in explained)


def test_results_the_provider_cleared_are_archived_and_found_again() -> None:
    """Issue 25 done-when: every message removed from the model's view is recoverable.
    Anthropic's ``clear_tool_uses`` clears old results on the server (``applied_edits``
    says how many); the session archives exactly those (the oldest tool uses of the view,
    ``never_clear`` tools skipped), once each, and ``search_archive`` reads them back."""
    fake, send = _anthropic()
    fake.script(*_turns(14))
    chef = ContextChef(max_inline_chars=None, context_policy=ContextPolicy(budget_tokens=70_000))
    chef.register_tools([read_log])
    chef.set_history([user("Find why the build fails.")])
    _run(chef, "anthropic", OPUS, send, range(14))
    assert fake.violations == ()
    cleared = [n.cleared_tool_uses for n in chef.notices if n.reason == "clear_tool_uses_20250919"]
    assert cleared and all(cleared)
    # the model's view lost the oldest results; the archive has each of them exactly once
    hits, _, page = recall(chef, "log0")
    assert read_log("log0") in page and "clear_tool_results" in hits
    # every cleared result is in the archive, each at a place of its own
    reads = [k for k in range(14) if k % 4 != 3][: max(cleared)]
    handles = []
    for k in reads:
        _, place, page = recall(chef, f"log{k}")
        assert read_log(f"log{k}") in page, k
        handles.append(place)
    assert len(set(handles)) == len(reads) == max(cleared)


def test_a_switch_while_the_compacting_reply_has_an_open_call_summarizes_once() -> None:
    """Break-it round 7: gpt-5.6 compacted in a reply that also called a tool, and the
    host switched to Claude before answering it. The switch summary kept that pending
    turn, foreign compaction item included, so the next compile found it again and
    summarized Claude's own fresh tool loop away (an edit at entry 0, thinking
    stripped). The summary stands for the item: one handoff, then Claude's loop stays."""
    summaries = Summaries()
    chef = _chef(on_overflow=summaries)
    gpt, to_gpt = _responses()
    gpt.script(*[tool_calls(("read_log", {"path": f"log{k}"}), reasoning="t") for k in range(12)])
    request = chef.compile("responses", model="gpt-5.6", max_tokens=1024)
    calls = chef.ingest(to_gpt(request))
    while "compaction" not in {n.kind for n in chef.notices}:
        chef.run_tools(calls)
        calls = chef.ingest(to_gpt(chef.compile("responses", model="gpt-5.6", max_tokens=1024)))
    assert calls  # the compacting reply also called a tool; the host switches instead
    claude, to_claude = _anthropic()
    claude.script(*_turns(3, start=40))
    first = chef.compile("anthropic", model=OPUS, max_tokens=1024)
    assert len(summaries.inputs) == 1 and foreign_compaction(chef.history, "anthropic") is None
    next_turn(chef, chef.ingest(to_claude(first)), 40)
    for k in (41, 42):
        request = chef.compile("anthropic", model=OPUS, max_tokens=1024)
        assert request.edits == () and len(summaries.inputs) == 1, k  # append-only
        next_turn(chef, chef.ingest(to_claude(request)), k)
    assert claude.violations == () and gpt.violations == ()


def test_a_restored_session_finds_what_the_provider_compaction_took_out_of_view() -> None:
    """The messages before the compaction block stay in the restored history, but no handle
    names their entry (the first session kept it in memory): the restored archive archives
    them again, with the same bytes and handle, so ``search_archive`` finds them."""
    fake, send = _anthropic()
    fake.script(*_turns(14))
    chef = _chef()
    _run(chef, "anthropic", OPUS, send, range(14))
    assert "compaction" in {n.kind for n in chef.notices}
    before = chef.execute(ToolCall(id="s", name="search_archive", arguments={"query": "log0"}))
    again = _chef()  # no offload_dir: the first session's archive is not reachable
    again.restore(chef.snapshot(), allow_unsigned=True)
    found = again.execute(ToolCall(id="s", name="search_archive", arguments={"query": "log0"}))
    assert not found.result.is_error
    assert found.result.content == before.result.content  # same handle, offset and hit
    assert read_log("log0") in recall(again, "log0")[2]
    # restoring again archives nothing twice
    again.restore(chef.snapshot(), allow_unsigned=True)
    later = again.execute(ToolCall(id="t", name="search_archive", arguments={"query": "log0"}))
    assert later.result.content == before.result.content
