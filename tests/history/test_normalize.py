"""The history normalizer and the pairing checker, plus case history-01."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from conftest import load_case
from contextchef._errors import CorruptHistoryError
from contextchef.history._messages import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
    assistant,
    tool_results,
    user,
)
from contextchef.history._normalize import (
    PORTABLE,
    Continuation,
    HistoryRules,
    check_pairing,
    normalize,
)
from contextchef.providers import PRESETS, RequestOptions, get_adapter
from contextchef.providers.anthropic._render import ANTHROPIC
from contextchef.providers.gemini._render import GEMINI
from contextchef.providers.openai_chat._render import DEEPSEEK, OPENAI_CHAT
from contextchef.providers.responses._render import RESPONSES


def case_history(raw: Sequence[Mapping[str, Any]]) -> list[Message]:
    """A case file's chat-style history (user / assistant+tool_calls / tool) as IR."""
    out: list[Message] = []
    names: dict[str, str] = {}
    for item in raw:
        if item["role"] == "tool":
            cid = item["tool_call_id"]
            result = ToolResult(call_id=cid, name=names.get(cid, "?"), content=item["content"])
            out.append(tool_results([result]))
            continue
        text = item.get("content") or ""
        if item["role"] == "user":
            out.append(user(text))
            continue
        calls = [
            ToolCall(id=c["id"], name=c["name"], arguments=json.dumps(c["arguments"]))
            for c in item.get("tool_calls", [])
        ]
        names.update({c.id: c.name for c in calls})
        # keep the empty text as the stored transcript had it
        out.append(Message(role="assistant", parts=(TextPart(text=text), *calls)))
    return out


def render(target: str, messages: Sequence[Message]) -> dict[str, Any]:
    payload: dict[str, Any] = get_adapter(target).render_request(
        system="", tools=[], messages=messages, options=RequestOptions(model="m")
    )
    return payload


def call(cid: str, name: str = "f") -> ToolCall:
    return ToolCall(id=cid, name=name, arguments='{"x": 1}')


def result(cid: str, name: str = "f", content: str = "ok") -> ToolResult:
    return ToolResult(call_id=cid, name=name, content=content)


def kinds(history: Sequence[Message], rules: HistoryRules | None = None) -> list[str]:
    return [c.kind for c in normalize(history, profile=rules).changes]


# -- history-01: an interrupted call never reaches a provider unanswered ----------------------


def _history_01() -> list[Message]:
    return case_history(load_case("history-01")["input"]["history"])


def test_history_01_synthesizes_one_interrupted_error_result_and_reports_it() -> None:
    history = _history_01()
    before = copy.deepcopy(history)
    out = normalize(history)
    assert history == before  # input untouched
    results = [r for m in out.messages for r in m.tool_results]
    assert [r.call_id for r in results] == ["call_A1"]
    synth = results[0]
    assert synth.is_error and synth.name == "shell" and synth.content.strip()
    assert "interrupted" in synth.content and "not executed" in synth.content
    assert [(c.kind, c.call_id) for c in out.changes if c.call_id] == [
        ("synthesized_result", "call_A1")
    ]
    assert "dropped_blank_text" in [c.kind for c in out.changes]  # the empty assistant text
    assert out.messages[-1].text.startswith("I switched you to suggest mode")
    assert check_pairing(out.messages) == []


def test_history_01_responses_payload() -> None:
    items = render("responses", normalize(_history_01(), profile=RESPONSES).messages)["input"]
    outputs = [i for i, it in enumerate(items) if it.get("type") == "function_call_output"]
    assert len(outputs) == 1
    out = items[outputs[0]]
    assert out["call_id"] == "call_A1"
    fc = next(i for i, it in enumerate(items) if it.get("type") == "function_call")
    retry = next(
        i
        for i, it in enumerate(items)
        if it.get("role") == "user" and "I switched you" in json.dumps(it["content"])
    )
    assert fc < outputs[0] < retry
    text = out["output"] if isinstance(out["output"], str) else json.dumps(out["output"])
    assert text.strip() and "interrupted" in text and "not executed" in text


def test_history_01_openai_chat_payload() -> None:
    msgs = render("openai", normalize(_history_01(), profile=OPENAI_CHAT).messages)["messages"]
    i = next(i for i, m in enumerate(msgs) if m.get("tool_calls"))
    assert msgs[i]["tool_calls"][0]["id"] == "call_A1"
    assert msgs[i + 1]["role"] == "tool" and msgs[i + 1]["tool_call_id"] == "call_A1"
    assert sum(m.get("tool_call_id") == "call_A1" for m in msgs) == 1


def test_history_01_anthropic_payload() -> None:
    msgs = render("anthropic", normalize(_history_01(), profile=ANTHROPIC).messages)["messages"]
    i = next(
        i
        for i, m in enumerate(msgs)
        if any(b.get("type") == "tool_use" and b.get("id") == "call_A1" for b in m["content"])
    )
    nxt = msgs[i + 1]
    assert nxt["role"] == "user"
    first = nxt["content"][0]
    assert first["type"] == "tool_result" and first["tool_use_id"] == "call_A1"
    assert first["is_error"] is True
    assert any(
        b.get("type") == "text" and "I switched you" in b["text"] for b in nxt["content"][1:]
    )
    for m in msgs:
        for block in m["content"]:
            assert block.get("type") != "text" or block["text"].strip()


# -- the rules, one by one ------------------------------------------------------------------


def test_orphan_result_is_dropped_and_reported() -> None:
    history = [user("hi"), tool_results([result("ghost")], text="and?"), assistant("yes")]
    out = normalize(history, profile=OPENAI_CHAT)
    assert [m.tool_results for m in out.messages] == [(), (), ()]
    assert [(c.kind, c.call_id, c.index) for c in out.changes] == [
        ("dropped_orphan_result", "ghost", 1)
    ]


def test_result_before_its_call_is_an_orphan() -> None:
    history = [user("hi"), tool_results([result("a")]), assistant(tool_calls=[call("a")])]
    out = normalize(history)
    assert kinds(history) == ["dropped_orphan_result", "synthesized_result", "dropped_empty"]
    assert out.messages[-1].tool_results[0].is_error


def test_late_results_move_next_to_their_batch_in_call_order() -> None:
    history = [
        user("go"),
        assistant(tool_calls=[call("a"), call("b")]),
        assistant("meanwhile"),
        tool_results([result("b"), result("a")]),
    ]
    out = normalize(history, profile=OPENAI_CHAT)
    assert [m.role for m in out.messages] == ["user", "assistant", "user", "assistant"]
    assert [r.call_id for r in out.messages[2].tool_results] == ["a", "b"]
    assert [(c.kind, c.call_id) for c in out.changes] == [
        ("moved_result", "a"),
        ("moved_result", "b"),
        ("dropped_empty", None),
    ]
    assert check_pairing(out.messages) == []


def test_parallel_batch_stays_whole_and_results_lead_the_user_turn() -> None:
    history = [
        user("go"),
        assistant(tool_calls=[call("a"), call("b")]),
        Message(role="user", parts=(TextPart(text="also"), result("a"), result("b"))),
    ]
    out = normalize(history, profile=ANTHROPIC)
    parts = out.messages[2].parts
    assert [p.kind for p in parts] == ["tool_result", "tool_result", "text"]
    assert len(out.messages) == 3


def test_partial_batch_gets_only_the_missing_result() -> None:
    history = [
        user("go"),
        assistant(tool_calls=[call("a"), call("b")]),
        tool_results([result("b")]),
    ]
    out = normalize(history)
    res = out.messages[2].tool_results
    assert [r.call_id for r in res] == ["a", "b"]
    assert res[0].is_error and not res[1].is_error
    assert [c.kind for c in out.changes] == ["synthesized_result", "moved_result"]


def test_a_reused_call_id_gets_a_new_one_and_its_exchange_is_kept() -> None:
    # A host that talked to a server sending `call_0` every turn: both exchanges are kept.
    history = [
        user("go"),
        assistant(tool_calls=[call("a", "first")]),
        tool_results([result("a", "first", "one")]),
        assistant(tool_calls=[call("a", "second")]),
        tool_results([result("a", "second", "two")]),
        user("done?"),
    ]
    before = list(history)
    out = normalize(history, profile=OPENAI_CHAT)
    calls = [c for m in out.messages for c in m.tool_calls]
    results = [r for m in out.messages for r in m.tool_results]
    assert [(c.id, c.name) for c in calls] == [("a", "first"), ("a_2", "second")]
    assert [(r.call_id, r.content) for r in results] == [("a", "one"), ("a_2", "two")]
    assert [(c.kind, c.index, c.call_id) for c in out.changes] == [
        ("renamed_duplicate_call", 3, "a")
    ]
    assert "'a_2'" in out.changes[0].detail
    assert check_pairing(out.messages) == []
    assert history == before  # not mutated
    again = normalize(out.messages, profile=OPENAI_CHAT)
    assert again.changes == () and again.messages == out.messages


def test_reused_ids_in_one_batch_pair_in_order_and_skip_taken_suffixes() -> None:
    history = [
        user("go"),
        assistant(tool_calls=[call("a", "x"), call("a", "y"), call("a_2", "z")]),
        tool_results([result("a", "x", "1"), result("a", "y", "2"), result("a_2", "z", "3")]),
        assistant(tool_calls=[call("a", "w")]),
        tool_results([result("a", "w", "4"), result("a", "w", "extra")]),
    ]
    out = normalize(history)
    calls = [(c.id, c.name) for m in out.messages for c in m.tool_calls]
    assert calls == [("a", "x"), ("a_3", "y"), ("a_2", "z"), ("a_4", "w")]
    results = [(r.call_id, r.content) for m in out.messages for r in m.tool_results]
    assert results == [("a", "1"), ("a_3", "2"), ("a_2", "3"), ("a_4", "4")]
    assert [c.kind for c in out.changes] == [
        "renamed_duplicate_call",
        "renamed_duplicate_call",
        "dropped_duplicate_result",
    ]
    assert check_pairing(out.messages) == []


def test_a_call_reusing_a_sent_id_is_renamed_and_an_unanswered_one_answered() -> None:
    tail = [
        assistant(tool_calls=[call("a", "again")]),
        tool_results([result("a", "again", "kept")]),
        assistant(tool_calls=[call("b", "late")]),
    ]
    out = normalize(tail, after=Continuation(offset=4, calls={"a", "b"}))
    calls = [(c.id, c.name) for m in out.messages for c in m.tool_calls]
    assert calls == [("a_2", "again"), ("b_2", "late")]
    results = [(r.call_id, r.is_error) for m in out.messages for r in m.tool_results]
    assert results == [("a_2", False), ("b_2", True)]  # the last one as interrupted
    assert [(c.kind, c.index) for c in out.changes] == [
        ("renamed_duplicate_call", 4),
        ("renamed_duplicate_call", 6),
        ("synthesized_result", 6),
    ]


def test_blank_text_and_empty_messages_are_dropped_but_blank_text_with_provider_data_stays() -> (
    None
):
    signed = TextPart(text="", provider_data={"provider": "gemini", "thoughtSignature": "c2ln"})
    history = [
        user("hi"),
        Message(role="assistant", parts=(TextPart(text="  \n"), signed)),
        Message(role="user", parts=()),
        user("   "),
        user("bye"),
    ]
    out = normalize(history, profile=OPENAI_CHAT)
    assert out.messages == (user("hi"), Message(role="assistant", parts=(signed,)), user("bye"))
    assert [(c.kind, c.index) for c in out.changes] == [
        ("dropped_blank_text", 1),
        ("dropped_blank_text", 3),
        ("dropped_empty", 2),
        ("dropped_empty", 3),
    ]


def test_roles_merge_only_when_the_rules_say_so() -> None:
    history = [user("a"), user("b"), assistant("c"), assistant("d")]
    merged = normalize(history, profile=GEMINI)
    assert [m.role for m in merged.messages] == ["user", "assistant"]
    assert merged.messages[0].parts == (TextPart(text="a"), TextPart(text="b"))
    assert [(c.kind, c.index) for c in merged.changes] == [("merged_roles", 1), ("merged_roles", 3)]
    assert normalize(history, profile=OPENAI_CHAT).messages == tuple(history)


def test_reasoning_message_is_merged_where_roles_alternate() -> None:
    """Anthropic combines consecutive assistant turns itself: thinking joins the turn."""
    thinking = ReasoningPart(
        provider="anthropic", text="plan", provider_data={"signature": "c2lnbmF0dXJl"}
    )
    history = [
        user("go"),
        assistant("first"),
        Message(role="assistant", parts=(thinking, call("a"))),
        tool_results([result("a")]),
    ]
    out = normalize(history, profile=ANTHROPIC)
    assert [m.role for m in out.messages] == ["user", "assistant", "user"]
    assert out.messages[1].parts == (TextPart(text="first"), thinking, call("a"))
    assert out.messages[1].parts[1] is thinking
    assert [(c.kind, c.index) for c in out.changes] == [("merged_roles", 2)]
    assert out.notes == () and normalize(out.messages, profile=ANTHROPIC).changes == ()
    assert normalize(history, profile=OPENAI_CHAT).messages == tuple(history)


def test_results_first_false_gives_results_their_own_message() -> None:
    history = [
        user("go"),
        assistant(tool_calls=[call("a")]),
        Message(role="user", parts=(result("a"), TextPart(text="more"))),
    ]
    out = normalize(history, profile=RESPONSES)
    assert [m.parts for m in out.messages[2:]] == [(result("a"),), (TextPart(text="more"),)]
    assert [c.kind for c in out.changes] == ["split_results"]
    assert normalize(out.messages, profile=RESPONSES).changes == ()


def test_valid_history_is_returned_unchanged_for_every_preset() -> None:
    history = [
        user("go"),
        assistant("looking", tool_calls=[call("a"), call("b")]),
        tool_results([result("a"), result("b")]),
        assistant("done"),
    ]
    for rules in PRESETS.values():
        out = normalize(history, profile=rules)
        assert out.messages == tuple(history) and out.changes == (), rules.name


def test_presets_are_data() -> None:
    assert set(PRESETS) == {
        "portable",
        "anthropic",
        "openai",
        "responses",
        "gemini",
        "gemini-interactions",
        "deepseek",
    }
    assert PORTABLE.alternate_roles and ANTHROPIC.alternate_roles and GEMINI.alternate_roles
    assert not OPENAI_CHAT.alternate_roles and DEEPSEEK.keep_all_reasoning


def test_structural_errors_raise() -> None:
    with pytest.raises(CorruptHistoryError) as info:
        normalize([user("hi"), "not a message"])  # type: ignore[list-item]
    assert info.value.index == 1


def test_check_pairing_names_each_problem() -> None:
    assert check_pairing([user("a"), assistant(tool_calls=[call("x")])]) == [
        "message 1: calls ['x'] are not followed by a user message with results"
    ]
    problems = check_pairing(
        [
            assistant(tool_calls=[call("x"), call("y")]),
            tool_results([result("y"), result("x")]),
            tool_results([result("z")]),
        ]
    )
    assert len(problems) == 4
    assert "should start with results for ['x', 'y'] in order" in problems[0]
    assert any("'z'" in p for p in problems)
    dup = check_pairing(
        [
            assistant(tool_calls=[call("x")]),
            tool_results([result("x")]),
            assistant(tool_calls=[call("x")]),
            tool_results([result("x")]),
        ]
    )
    assert dup == ["message 2: call id 'x' is used twice"]


def test_a_reused_id_pairs_with_the_newest_batch_and_by_tool_name() -> None:
    # break-it round 14: the first call_0 was never answered (the user cut in); its
    # result must not be taken by the later call_0's result, and results that come in
    # another order than the calls go by their tool name.
    history = [
        user("go"),
        assistant(tool_calls=[call("call_0", "grep")]),
        user("stop, search beta instead"),
        assistant(tool_calls=[call("call_0", "grep")]),
        tool_results([result("call_0", "grep", "RESULT OF BETA")]),
        assistant(tool_calls=[call("call_0", "grep"), call("call_0", "ls")]),
        tool_results([result("call_0", "ls", "L"), result("call_0", "grep", "G")]),
        user("thanks"),
    ]
    out = normalize(history)
    pairs = {
        r.call_id: (r.name, r.content, r.is_error) for m in out.messages for r in m.tool_results
    }
    calls = [(c.id, c.name) for m in out.messages for c in m.tool_calls]
    assert calls == [("call_0", "grep"), ("call_0_2", "grep"), ("call_0_3", "grep"),
                     ("call_0_4", "ls")]  # fmt: skip
    assert pairs["call_0"][2] is True  # the abandoned call: answered as interrupted
    assert pairs["call_0_2"] == ("grep", "RESULT OF BETA", False)
    assert pairs["call_0_3"] == ("grep", "G", False)
    assert pairs["call_0_4"] == ("ls", "L", False)
    assert check_pairing(out.messages) == []
    # the same history in two steps (what was sent first, then the rest) pairs the same
    first = normalize(history[:3])
    rest = normalize(history[3:], after=Continuation(offset=3, calls={"call_0"}))
    assert [r.content for m in (*first.messages, *rest.messages) for r in m.tool_results][1:] == [
        "RESULT OF BETA",
        "G",
        "L",
    ]
