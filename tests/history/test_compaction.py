"""Safe cut points, compaction and clearing, plus case history-02."""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_normalize import call, case_history, render, result

from conftest import load_case
from contextchef import DeferredConfig, load_catalog
from contextchef._errors import CorruptHistoryError, UsageError
from contextchef.deferred._meta import run_tool_search
from contextchef.history._compaction import (
    DEFAULT_CLEARED_PLACEHOLDER,
    clear_thinking,
    clear_tool_results,
    compact,
    cut_points,
    loaded_tool_names,
    pending_tail,
    plan_compaction,
    render_transcript,
)
from contextchef.history._messages import (
    MediaPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
    assistant,
    tool_results,
    user,
)
from contextchef.history._normalize import check_pairing, normalize
from contextchef.providers.openai_chat._render import DEEPSEEK, OPENAI_CHAT
from contextchef.search._index import ToolIndex

THINK = ReasoningPart(provider="anthropic", text="hmm", provider_data={"signature": "c2ln"})


def summarizer(seen: list[str]) -> object:
    def summarize(text: str) -> str:
        seen.append(text)
        return "They asked for things; tools ran."

    return summarize


# -- cut points -----------------------------------------------------------------------------


def test_cuts_only_where_no_call_is_pending() -> None:
    history = [
        user("go"),  # 0
        assistant(tool_calls=[call("a"), call("b")]),  # 1
        tool_results([result("a"), result("b")]),  # 2
        assistant("done"),  # 3
        user("next"),  # 4
    ]
    assert cut_points(history) == (0, 1, 3, 4, 5)


def test_no_cut_starts_on_a_message_holding_results() -> None:
    history = [
        user("go"),
        assistant(tool_calls=[call("a")]),
        Message(role="user", parts=(result("a"), TextPart(text="and now?"))),
        assistant("ok"),
    ]
    assert cut_points(history) == (0, 1, 3, 4)


def test_a_tool_loop_opened_by_thinking_is_atomic() -> None:
    def history(first: Message) -> list[Message]:
        return [
            user("q"),  # 0
            first,  # 1
            tool_results([result("a")]),  # 2
            assistant(tool_calls=[call("b")]),  # 3
            tool_results([result("b")]),  # 4
            assistant("done"),  # 5
            user("next"),  # 6
        ]

    thinking = Message(role="assistant", parts=(THINK, call("a")))
    assert cut_points(history(thinking)) == (0, 1, 6, 7)
    assert cut_points(history(assistant(tool_calls=[call("a")]))) == (0, 1, 3, 5, 6, 7)


def test_a_thinking_loop_may_be_cut_where_a_step_leads_with_its_own_thinking() -> None:
    """Interleaved thinking: a step that starts with its thinking block is a safe start."""
    history = [
        user("q"),  # 0
        Message(role="assistant", parts=(THINK, call("a"))),  # 1
        tool_results([result("a")]),  # 2
        Message(role="assistant", parts=(THINK, call("b"))),  # 3
        tool_results([result("b")]),  # 4
        assistant(tool_calls=[call("c")]),  # 5: no thinking of its own
        tool_results([result("c")]),  # 6
        assistant("done"),  # 7
    ]
    assert cut_points(history) == (0, 1, 3, 8)


def _one_task(steps: int, *, thinking: bool) -> list[Message]:
    """One user message and a tool loop of `steps` calls, then the final answer."""
    history = [user("Fix every failing test.")]
    for i in range(steps):
        lead = (THINK,) if thinking else ()
        history.append(Message(role="assistant", parts=(*lead, call(f"c{i}"))))
        history.append(tool_results([result(f"c{i}")]))
    return history


@pytest.mark.parametrize("thinking", [False, True])
def test_one_long_task_is_compacted_inside_its_loop(thinking: bool) -> None:
    """Break-it find: one user message and 20 tool steps compacted nothing, silently."""
    history = _one_task(20, thinking=thinking)
    plan = plan_compaction(history, keep_recent_turns=2)
    assert plan.counted == "steps" and plan.cut == len(history) - 4
    assert [m.role for m in plan.to_keep] == ["assistant", "user", "assistant", "user"]
    assert check_pairing(plan.to_keep) == []
    seen: list[str] = []
    out = compact(history, summarizer(seen), keep_recent_turns=2)  # type: ignore[arg-type]
    assert len(seen) == 1 and out.messages[1:] == tuple(history[-4:])
    assert out.dropped_call_ids == tuple(f"c{i}" for i in range(18))
    # enough user turns: they are counted, never steps
    assert plan_compaction(_three_turns(), keep_recent_turns=2).counted == "turns"


def test_compact_says_when_it_summarizes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    history = _three_turns()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        out = compact(history, summarizer([]), keep_recent_turns=3)  # type: ignore[arg-type]
    assert out.messages == tuple(history)
    assert any(
        "summarized nothing" in r.getMessage() and "keep_recent_turns" in r.getMessage()
        for r in caplog.records
    )
    # a keep too long to print (Python refuses past 4,300 digits) is said by its size
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        out = compact(history, summarizer([]), keep_recent_turns=10**5000)  # type: ignore[arg-type]
    assert out.messages == tuple(history)
    (record,) = [r for r in caplog.records if "summarized nothing" in r.getMessage()]
    assert "keeps <an integer of about 5,000 digits> user turns" in record.getMessage()


def test_negative_balance_is_corrupt() -> None:
    with pytest.raises(CorruptHistoryError) as info:
        cut_points([user("hi"), tool_results([result("x")])])
    assert info.value.index == 1


# -- history-02: the cut never splits a parallel batch --------------------------------------


def _history_02() -> list[Message]:
    return case_history(load_case("history-02")["input"]["history"])


def _tokens(message: Message) -> int:
    """The case's counter: ceil(chars / 4) over a message's text and tool payloads."""
    chars = sum(
        len(p.text)
        if isinstance(p, TextPart)
        else len(p.content)
        if isinstance(p, ToolResult)
        else len(p.arguments)
        if isinstance(p, ToolCall)
        else 0
        for p in message.parts
    )
    return math.ceil(chars / 4)


def test_history_02_naive_token_cut_is_not_a_safe_cut() -> None:
    raw = _history_02()  # as stored: one message per tool result
    sized = {"c1": "k" * 5000, "c2": "k" * 200}  # the placeholders, at their stated sizes
    raw = [
        tool_results([ToolResult(call_id=r.call_id, name=r.name, content=sized[r.call_id])])
        if (r := next(iter(m.tool_results), None))
        else m
        for m in raw
    ]
    naive, kept_tokens = len(raw), 0  # keep the last 100 tokens, ignoring pairing
    while naive > 0 and kept_tokens + _tokens(raw[naive - 1]) <= 100:
        naive -= 1
        kept_tokens += _tokens(raw[naive])
    assert naive == 3  # the case's note: between tool c1 and tool c2
    assert [r.call_id for r in raw[naive].tool_results] == ["c2"]
    cuts = cut_points(raw)
    assert naive not in cuts and 2 not in cuts  # never inside the batch
    assert max(c for c in cuts if c <= naive) == 1  # back: keep the whole batch
    assert min(c for c in cuts if c >= naive) == 4  # forward: summarize the whole batch
    for c in cuts:
        assert c == len(raw) or not raw[c].tool_results  # never starts on a tool turn


def _check_kept(kept: Sequence[Message]) -> None:
    """The case's checks on the kept part."""
    assert not kept or not kept[0].tool_results  # first after the summary is no tool turn
    declared = {c.id for m in kept for c in m.tool_calls}
    answered = [r.call_id for m in kept for r in m.tool_results]
    assert sorted(answered) == sorted(declared)  # each kept call once, no orphan result
    assert {"c1", "c2"} <= declared or not {"c1", "c2"} & declared  # batch kept or summarized


@pytest.mark.parametrize("extra_turn", [False, True])
def test_history_02_compaction_keeps_or_summarizes_the_batch_whole(extra_turn: bool) -> None:
    history = list(normalize(_history_02(), profile=OPENAI_CHAT).messages)
    if extra_turn:  # a second parallel batch after the last user turn: it must be kept
        history += [
            assistant(tool_calls=[call("c3", "rand_string"), call("c4", "rand_string")]),
            tool_results([result("c3", "rand_string"), result("c4", "rand_string")]),
        ]
    before = copy.deepcopy(history)
    seen: list[str] = []
    out = compact(history, summarizer(seen), keep_recent_turns=1)  # type: ignore[arg-type]
    assert history == before
    assert len(seen) == 1 and "→ tool rand_string" in seen[0]
    summary, kept = out.messages[0], out.messages[1:]
    assert "<conversation_summary>" in summary.text and not summary.tool_results
    assert kept == out.plan.to_keep
    _check_kept(kept)
    assert set(out.dropped_call_ids) == {"c1", "c2"}
    assert check_pairing(out.messages) == []
    msgs = render("openai", out.messages)["messages"]
    for i, m in enumerate(msgs):
        if m["role"] == "tool":
            j = max(k for k in range(i) if msgs[k]["role"] == "assistant")
            assert m["tool_call_id"] in [c["id"] for c in msgs[j].get("tool_calls", [])]
            assert all(x["role"] == "tool" for x in msgs[j + 1 : i])


# -- planning and compacting ----------------------------------------------------------------


def _three_turns() -> list[Message]:
    return [
        user("one"),  # 0
        assistant(tool_calls=[ToolCall(id="r1", name="read_file", arguments='{"path": "a"}')]),
        tool_results([ToolResult(call_id="r1", name="read_file", content="x" * 900)]),
        assistant("read it"),  # 3
        user("two"),  # 4
        assistant("ok"),  # 5
        user("three"),  # 6
        assistant("fine"),  # 7
    ]


def test_plan_keeps_at_least_the_recent_user_turns() -> None:
    history = _three_turns()
    assert plan_compaction(history, keep_recent_turns=1).cut == 6
    assert plan_compaction(history, keep_recent_turns=2).cut == 4
    assert plan_compaction(history, keep_recent_turns=3).cut == 0
    assert plan_compaction(history, keep_recent_turns=9).to_summarize == ()
    assert plan_compaction(history, keep_recent_turns=0).cut == len(history)
    with pytest.raises(UsageError):
        plan_compaction(history, keep_recent_turns=-1)


def test_compact_renders_tools_as_text_and_wraps_the_summary() -> None:
    seen: list[str] = []
    out = compact(_three_turns(), summarizer(seen), keep_recent_turns=2)  # type: ignore[arg-type]
    text = seen[0]
    assert text.splitlines()[:3] == [
        "User: one",
        '→ tool read_file({"path": "a"})',
        "← read_file: " + "x" * 500 + " … [400 more chars]",
    ]
    assert out.summary_text == "They asked for things; tools ran."
    assert out.messages[0].text == (
        "<conversation_summary>\nThey asked for things; tools ran.\n</conversation_summary>"
    )
    assert out.messages[1:] == tuple(_three_turns()[4:])
    assert out.dropped_call_ids == ("r1",)


def test_nothing_to_summarize_does_not_call_the_summarizer() -> None:
    seen: list[str] = []
    history = _three_turns()
    out = compact(history, summarizer(seen), keep_recent_turns=5)  # type: ignore[arg-type]
    assert seen == [] and out.messages == tuple(history) and out.summary_text == ""


def test_summarizer_must_return_text() -> None:
    with pytest.raises(UsageError):
        compact(_three_turns(), lambda _: None, keep_recent_turns=1)  # type: ignore[arg-type,return-value]


def test_render_transcript_mentions_media_and_skips_reasoning() -> None:
    shot = MediaPart(media_type="image/png", data="aGk=")
    history = [
        Message(role="user", parts=(TextPart(text="look"), shot)),
        Message(role="assistant", parts=(THINK, call("a", "snap"))),
        tool_results([ToolResult(call_id="a", name="snap", content="bad", is_error=True)]),
    ]
    assert render_transcript(history) == (
        'User: look\nUser: [attached image/png]\n→ tool snap({"x": 1})\n← snap (error): bad'
    )


def _search_result(catalogs_dir: Path) -> tuple[ToolResult, tuple[str, ...]]:
    cat = load_catalog(catalogs_dir / "github.json")
    index = ToolIndex([(t, t.name) for t in cat.tools])
    outcome = run_tool_search({"queries": ["issue"], "limit": 3}, index, DeferredConfig())
    res = ToolResult(call_id="s1", name="tool_search", content=outcome.text)
    return res, outcome.loaded


def test_loaded_tool_names_match_what_tool_search_loaded(catalogs_dir: Path) -> None:
    res, loaded = _search_result(catalogs_dir)
    assert len(loaded) == 3
    assert loaded_tool_names([tool_results([res])]) == loaded
    error = ToolResult(call_id="s2", name="tool_search", content=res.content, is_error=True)
    assert loaded_tool_names([tool_results([error])]) == ()


def test_compact_reports_tools_to_reactivate(catalogs_dir: Path) -> None:
    res, loaded = _search_result(catalogs_dir)
    history = [
        user("find issue tools"),
        assistant(tool_calls=[ToolCall(id="s1", name="tool_search", arguments="{}")]),
        tool_results([res]),
        assistant("found them"),
        user("now something else"),
        assistant("sure"),
    ]
    out = compact(history, summarizer([]), keep_recent_turns=1)  # type: ignore[arg-type]
    assert out.reactivate == loaded and out.dropped_call_ids == ("s1",)
    # loaded again in the kept part: nothing to re-establish
    again = [
        *history[:4],
        user("once more"),
        assistant(tool_calls=[ToolCall(id="s2", name="tool_search", arguments="{}")]),
        tool_results([ToolResult(call_id="s2", name="tool_search", content=res.content)]),
    ]
    assert check_pairing(again) == []
    out = compact(again, summarizer([]), keep_recent_turns=1)  # type: ignore[arg-type]
    assert out.dropped_call_ids == ("s1",) and out.reactivate == ()


# -- clearing -------------------------------------------------------------------------------


def _results_history(n: int) -> list[Message]:
    out: list[Message] = [user("go")]
    for i in range(n):
        name = "memory" if i == 0 else "grep"
        out.append(assistant(tool_calls=[call(f"k{i}", name)]))
        out.append(tool_results([result(f"k{i}", name, f"output {i}")]))
    return [*out, assistant("done")]


def test_clear_tool_results_keeps_ids_pairing_and_recent_ones() -> None:
    history = _results_history(5)
    before = copy.deepcopy(history)
    out = clear_tool_results(history, keep_recent=2, exclude_tools=["memory"])
    assert history == before
    assert out.cleared_call_ids == ("k1", "k2")
    contents = {r.call_id: r.content for m in out.messages for r in m.tool_results}
    assert contents == {
        "k0": "output 0",
        "k1": DEFAULT_CLEARED_PLACEHOLDER,
        "k2": DEFAULT_CLEARED_PLACEHOLDER,
        "k3": "output 3",
        "k4": "output 4",
    }
    assert check_pairing(out.messages) == []
    # already cleared results are not cleared again
    assert (
        clear_tool_results(out.messages, keep_recent=2, exclude_tools=["memory"]).cleared_call_ids
        == ()
    )


def test_clear_at_least_batches_the_clearing() -> None:
    history = _results_history(4)
    assert clear_tool_results(history, keep_recent=2, clear_at_least=3).cleared_call_ids == ()
    assert clear_tool_results(history, keep_recent=1, clear_at_least=3).cleared_call_ids == (
        "k0",
        "k1",
        "k2",
    )


def test_clear_inputs_and_media() -> None:
    shot = MediaPart(media_type="image/png", data="aGk=")
    history = [
        user("go"),
        assistant(tool_calls=[call("a")]),
        tool_results([ToolResult(call_id="a", name="f", content="pic", media=(shot,))]),
    ]
    out = clear_tool_results(history, keep_recent=0, clear_inputs=True, placeholder="[gone]")
    assert out.messages[1].tool_calls[0].arguments == "{}"
    assert out.messages[2].tool_results[0] == ToolResult(call_id="a", name="f", content="[gone]")
    with pytest.raises(UsageError):
        clear_tool_results(history, keep_recent=-1)


def test_clear_thinking_keeps_recent_turns_and_the_current_loop() -> None:
    history = [
        user("one"),  # 0
        Message(role="assistant", parts=(THINK, TextPart(text="a"))),  # 1
        user("two"),  # 2
        Message(role="assistant", parts=(THINK,)),  # 3: reasoning only
        assistant("b"),  # 4
        user("three"),  # 5
        Message(role="assistant", parts=(THINK, call("x"))),  # 6: current loop
        tool_results([result("x")]),  # 7
    ]
    out = clear_thinking(history, keep_recent_turns=0)
    assert out.cleared_indexes == (1, 3)
    assert out.messages[1] == assistant("a")
    assert len(out.messages) == len(history) - 1  # the reasoning-only message went
    assert out.messages[-2].parts[0] is THINK
    assert clear_thinking(history, keep_recent_turns=2).cleared_indexes == (1,)
    with pytest.raises(UsageError):
        clear_thinking(history, keep_recent_turns=0, profile=DEEPSEEK)


def test_clear_thinking_keeps_a_loop_interrupted_by_user_text() -> None:
    history = [
        user("one"),
        Message(role="assistant", parts=(THINK, call("x"))),
        Message(role="user", parts=(result("x"), TextPart(text="hurry"))),
        assistant("ok"),
    ]
    assert clear_thinking(history, keep_recent_turns=0).cleared_indexes == ()


@pytest.mark.parametrize("where", ["summarize", "render"])
def test_a_summarizer_that_raises_is_a_usage_error_and_changes_nothing(where: str) -> None:
    """Fresh-user report: ``chef.compact(summarize)`` let the summarizer's own
    ``ZeroDivisionError`` escape; it is now a `UsageError` chained to it, history kept."""
    from contextchef import ContextChef, assistant, user

    chef = ContextChef()
    turns = [m for i in range(4) for m in (user(f"q{i}"), assistant(f"a{i}"))]
    chef.set_history([*turns, user("last")])
    before = chef.history

    def fail(_: object) -> str:
        return str(1 / 0)

    with pytest.raises(UsageError, match=f"{where} raised ZeroDivisionError") as caught:
        if where == "summarize":
            chef.compact(fail, keep_recent_turns=1)
        else:
            compact(list(before), lambda text: "s", keep_recent_turns=1, render=fail)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)
    assert chef.history == before


def test_pending_tail_is_a_trailing_call_still_waiting_for_its_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    asked = Message(role="assistant", parts=(call("a"), call("b")))
    history = [user("go"), asked, tool_results([result("a")])]
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        assert pending_tail(history) == 1  # b has no result yet
    assert "pending call(s) ['b']" in caplog.text
    assert pending_tail([*history, tool_results([result("b")])]) == 4  # all answered
    assert pending_tail([*history, user("moved on")]) == 4  # an orphan, not pending
    assert pending_tail([user("go"), assistant("no calls")]) == 2
    assert pending_tail([]) == 0
