"""What no compaction can remove is set aside by the compaction trigger (`_budget.compaction_due`).

The system prompt and the resident tools go with every request; a summary is what the
last compaction left. When they alone are past `ContextPolicy.compact_at`'s trigger, no
compaction can bring the request under it: before, the session ran the summarizer on
every turn and cut the conversation to its last turn each time (the prefix re-sent every
turn), with no word to the host. Now the session says so once (a ``fixed_over_budget``
notice naming the fixed part's tokens, the trigger and the remedies) and compacts only
when the conversation itself is past the trigger. Multi-turn through the official SDK
clients against the `contextchef.testing` fakes, every payload checked against the SDK
request types.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

import pytest
from test_ingest import send as sdk_send

from contextchef import ContextChef, ContextPolicy, load_demo_catalog, user
from contextchef.history._compaction import summary_message
from contextchef.providers._budget import (
    ContextUsage,
    _summary_tokens,
    budget_notices,
    compaction_due,
    fixed_notice,
    notice_digest,
    summary_notice,
)
from contextchef.testing import FakeProvider, fake_for, text
from sdk_check import sdk_problems

MODELS = {
    "openai": "gpt-5.5",
    "responses": "gpt-5.5",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-3-pro",
}
# the demo catalog's 51 tools are about 10,800 tokens, past the 6,000-token trigger
POLICY = ContextPolicy(budget_tokens=12_000, compact_at=0.5, native=False)


class Summarizer:
    """Returns `words` words whatever it is given; counts its calls."""

    def __init__(self, words: int = 10) -> None:
        self.words, self.calls = words, 0

    def __call__(self, transcript: str) -> str:
        self.calls += 1
        return f"Summary {self.calls}: " + "the user asked about files " * (self.words // 5)


def _conversation(
    chef: ContextChef, target: str, turns: int, summarizer: Summarizer, words: int = 3
) -> tuple[FakeProvider, list[int], list[dict[str, Any]]]:
    """`turns` turns; per turn the summarizer's calls so far, and the payloads sent."""
    fake = fake_for(target).script(*[text(f"answer {k}") for k in range(turns)])
    send, calls, payloads = partial(sdk_send, target, fake), [], []
    for k in range(turns):
        payload = chef.compile(target, model=MODELS[target]).payload
        assert sdk_problems(target, payload) == []
        chef.ingest(send(payload))
        chef.append(user(f"question {k} " + "more words here " * words))
        calls.append(summarizer.calls)
        payloads.append(payload)
    return fake, calls, payloads


def _conversation_of(payload: dict[str, Any]) -> list[Any]:
    """The conversation entries, without cache breakpoints (they move to the last turn)."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items() if k != "cache_control"}
        return [plain(v) for v in value] if isinstance(value, list) else value

    return plain(next(payload[k] for k in ("messages", "input", "contents") if k in payload))


@pytest.mark.parametrize("target", sorted(MODELS))
def test_tools_past_the_trigger_are_reported_once_and_not_compacted_every_turn(
    target: str,
) -> None:
    summarizer = Summarizer()
    chef = ContextChef(on_overflow=summarizer, context_policy=POLICY)
    chef.register_catalog(load_demo_catalog())
    chef.set_system_prompt("You are an agent.")
    chef.set_history([user("start")])
    fake, calls, payloads = _conversation(chef, target, 8, summarizer)
    assert fake.violations == ()
    # before: [0, 1, 1, 1, ...] and a history of [summary, last answer, last question]
    assert calls == [0] * 8
    assert len(chef.history) == 17 and chef.history[0] == user("start")
    for before, after in itertools.pairwise(payloads):  # each request extends the last
        sent = _conversation_of(before)
        assert _conversation_of(after)[: len(sent)] == sent
    notices = [n for n in chef.notices if n.kind == "fixed_over_budget"]
    assert len(notices) == 1, chef.notices
    fixed = chef.context_usage(target, model=MODELS[target]).fixed
    assert fixed > 6_000
    assert f"about {fixed:,} tokens" in notices[0].detail
    assert "compaction trigger of 6,000 tokens (ContextPolicy.compact_at)" in notices[0].detail
    for remedy in ("fewer tools", "defer=", "tool-search", "system prompt", "budget_tokens"):
        assert remedy in notices[0].detail
    assert notices[0].reason == "compact_at"


@pytest.mark.parametrize("target", ["openai", "responses", "anthropic"])
def test_a_conversation_past_the_trigger_by_itself_is_compacted_once(target: str) -> None:
    """Set aside, the fixed part still lets the conversation be compacted when it is long."""
    summarizer = Summarizer()
    chef = ContextChef(on_overflow=summarizer, context_policy=POLICY)
    chef.register_catalog(load_demo_catalog())
    chef.set_history([user("start")])
    # each turn adds about 1,300 tokens: past 6,000 of conversation after five turns
    fake, calls, _ = _conversation(chef, target, 9, summarizer, words=400)
    assert fake.violations == ()
    assert 1 <= summarizer.calls <= 3, calls  # the kept recent turns count as conversation
    runs = [b > a for a, b in itertools.pairwise([0, *calls])]
    assert not any(x and y for x, y in itertools.pairwise(runs)), calls
    assert len([n for n in chef.notices if n.kind == "fixed_over_budget"]) == 1


@pytest.mark.parametrize("target", ["openai", "responses", "anthropic"])
def test_an_oversized_summary_with_the_tools_is_set_aside_on_every_wire(target: str) -> None:
    """A summary past the trigger, plus tools: Chat and Responses no longer pay every turn.

    Before, the provider's input tokens (tools included) less the summary stayed past
    the trigger on the wires that report usage (Chat, Responses): 10 summarizer calls in
    12 turns against 3 on Anthropic. The fixed part is now set aside with the summary.
    """
    summarizer = Summarizer(words=6_000)  # about 7,000 tokens: past the 3,000 trigger
    policy = ContextPolicy(budget_tokens=6_000, compact_at=0.5, native=False)
    chef = ContextChef(on_overflow=summarizer, context_policy=policy)
    chef.register_tools([_tool(k) for k in range(12)])
    chef.set_history([user("start")])
    fake, calls, _ = _conversation(chef, target, 12, summarizer, words=40)
    assert fake.violations == ()
    assert 1 <= summarizer.calls <= 4, calls
    runs = [b > a for a, b in itertools.pairwise([0, *calls])]
    assert not any(x and y for x, y in itertools.pairwise(runs)), calls
    assert {n.kind for n in chef.notices} >= {"summary_over_budget"}


def _tool(k: int) -> dict[str, Any]:
    return {
        "name": f"read_file_{k}",
        "description": f"Read file number {k} of the workspace and return its text. " * 6,
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }


def _usage(used: int, fixed: int = 0) -> ContextUsage:
    return ContextUsage(
        target="openai", model="m", used=used, budget=10_000, source="usage", fixed=fixed
    )


def test_compaction_due_sets_aside_what_no_compaction_removes() -> None:
    history = [summary_message("word " * 400), user("q " * 2_000)]  # a turn after it
    size = _summary_tokens(history)
    assert 300 < size < 1_000  # under the trigger alone
    fixed = 1_000 - size + 100  # with the summary, 100 past the 1,000 trigger
    aside = fixed + size
    due = compaction_due(history, (_usage(aside + 1_000, fixed=fixed), 1_000), None)
    assert due == (False, False)  # set aside together: the rest is just at the trigger
    due = compaction_due(history, (_usage(aside + 1_001, fixed=fixed), 1_000), None)
    assert due == (True, False)
    # together under the trigger: nothing set aside, compacted past it as before
    assert compaction_due(history, (_usage(1_001, fixed=100), 1_000), None) == (True, False)
    # the fixed part alone past it, no summary yet
    plain = [user("q")]
    assert compaction_due(plain, (_usage(2_500, fixed=1_500), 1_000), None) == (False, False)
    assert compaction_due(plain, (_usage(2_501, fixed=1_500), 1_000), None) == (True, False)
    # the history limit counts no fixed part
    assert compaction_due(plain, None, 1_000) == (False, False)


def test_the_notices_name_the_part_to_blame() -> None:
    request = (_usage(2_000, fixed=1_500), 1_000)
    (notice,) = fixed_notice(request)
    assert notice.kind == "fixed_over_budget" and "about 1,500 tokens" in notice.detail
    given: set[str] = set()
    assert budget_notices([user("q")], request, None, given) == (notice,)
    assert budget_notices([user("q")], request, None, given) == ()  # said once
    assert given == {notice_digest(notice)}  # what a snapshot keeps (``noticed``)
    (near,) = fixed_notice((_usage(2_000, fixed=900), 1_000))  # 100 tokens left: near
    assert near.kind == "fixed_near_budget" and "leaving 100 tokens" in near.detail
    assert fixed_notice((_usage(2_000, fixed=750), 1_000)) == ()  # a quarter left
    assert fixed_notice(None) == ()
    summary = [summary_message("word " * 400), user("q")]
    fixed = 1_000 - _summary_tokens(summary) + 50  # with the summary, 50 past the trigger
    # the fixed part alone is past the trigger: fixed_notice says it, not summary_notice
    assert summary_notice(summary, request, None) == ()
    (shared,) = summary_notice(summary, (_usage(2_000, fixed=fixed), 1_000), None)
    assert f"together with the system prompt and tools' {fixed:,} tokens" in shared.detail
    assert f"fewer than {1_000 - fixed:,} tokens" in shared.detail
    assert summary_notice(summary, (_usage(2_000, fixed=fixed - 50), 1_000), None) == ()


@pytest.mark.parametrize("target", ["openai", "anthropic"])
def test_tools_just_under_the_trigger_are_reported_once(target: str) -> None:
    """Break-it round 18: with the system prompt and tools just under the trigger, the
    session compacted on nearly every compile (the model saw only summaries) and said
    nothing. A ``fixed_near_budget`` notice now names the fixed part, the room it leaves
    and the remedies, once."""
    summarizer = Summarizer()
    fixed = ContextChef(context_policy=POLICY)
    fixed.register_catalog(load_demo_catalog())
    fixed.set_history([user("start")])
    tools = fixed.context_usage(target, model=MODELS[target]).fixed
    trigger = tools + tools // 20  # 5% of the trigger left to the conversation
    policy = ContextPolicy(budget_tokens=trigger * 2, compact_at=0.5, native=False)
    chef = ContextChef(on_overflow=summarizer, context_policy=policy)
    chef.register_catalog(load_demo_catalog())
    chef.set_history([user("start")])
    fake, _, _ = _conversation(chef, target, 6, summarizer, words=100)
    assert fake.violations == ()
    notices = [n for n in chef.notices if n.kind.startswith("fixed_")]
    assert [n.kind for n in notices] == ["fixed_near_budget"], chef.notices
    assert f"about {tools:,} tokens" in notices[0].detail
    assert f"leaving {trigger - tools:,} tokens" in notices[0].detail
    for remedy in ("fewer tools", "defer=", "tool-search", "system prompt", "budget_tokens"):
        assert remedy in notices[0].detail
