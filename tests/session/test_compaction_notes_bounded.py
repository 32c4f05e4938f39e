"""Break-it round 20 (compact2/compact3): the notes a local compaction adds stay bounded.

A 3-token summary grew into a 616-984 token message: each compaction carried the earlier
note's quotes *and* its ``> (more in the archive)`` line, one more each time, and the
``summary_over_budget`` notice blamed the summarizer for the library's own notes.
"""

from __future__ import annotations

import re

from test_ingest import send

from contextchef import ContextChef, ContextPolicy, Message, TextPart, estimate_tokens, user
from contextchef.history._compaction import SUMMARY_TAG, summary_message
from contextchef.history._quotes import MORE, QUOTES_SHARE
from contextchef.providers._budget import ContextUsage, summary_notice
from contextchef.testing import fake_for, text

POLICY = ContextPolicy(native=False, budget_tokens=1200, output_reserve=0)
TRIGGER = 960  # budget_tokens x compact_at 0.8


def _run(turns: int, summary: str, calls: list[str]) -> ContextChef:
    def summarize(transcript: str) -> str:
        calls.append(transcript)
        return summary

    chef = ContextChef(on_overflow=summarize, context_policy=POLICY, volatile_lint="off")
    chef.set_system_prompt("You are terse.")
    fake = fake_for("openai").script(*[text(f"A{i} " + "x" * 800) for i in range(turns)])
    for i in range(turns):
        chef.append(user(f"Q{i} 请解释这个问题 with mixed 🧪 scripts. " + "y" * 500))
        chef.ingest(send("openai", fake, chef.compile("openai", model="gpt-4o").payload))
        head = chef.history[0].parts[0].text  # type: ignore[union-attr]
        if head.startswith(f"<{SUMMARY_TAG}>"):
            lines = head.splitlines()
            quotes = [x for x in lines if x.startswith('> "')]
            assert lines.count(MORE) <= 1 and len(quotes) == len(set(quotes))
            assert estimate_tokens("\n".join(quotes)) <= TRIGGER // QUOTES_SHARE + len(quotes)
            assert estimate_tokens(head) < TRIGGER // 4  # was 616-984
    return chef


def test_a_short_summary_stays_short_over_many_compactions() -> None:
    calls: list[str] = []
    chef = _run(16, "short summary", calls)
    assert len(calls) >= 3  # compactions happened, each checked above
    assert not [n for n in chef.notices if n.kind == "summary_over_budget"]
    assert all(t.count(MORE) <= 1 for t in calls)  # the transcript carries one marker at most


def _usage(fixed: int = 0) -> ContextUsage:
    return ContextUsage(
        target="openai", model="m", used=2_000, budget=10_000, source="usage", fixed=fixed
    )


def _opening(summary: str, notes: str) -> list[Message]:
    head = summary_message(summary).parts[0]
    assert isinstance(head, TextPart)
    return [user(head.text + "\n\n" + notes), user("q")]


def test_the_notice_names_the_summarizers_part_and_the_notes() -> None:
    (long,) = summary_notice(
        _opening("word " * 2_000, "Archived as x.txt."), (_usage(), 1_000), None
    )
    adds = r"the notes contextchef adds to it \(what was archived, the user's words\) about"
    assert re.search(rf"summarizer's text about 2,\d{{3}}, {adds} \d{{1,2}};", long.detail)
    assert "have the summarizer return fewer than" in long.detail
    (notes,) = summary_notice(
        _opening("short summary", "> " + "y" * 8_000), (_usage(), 1_000), None
    )
    assert re.search(rf"summarizer's text about \d{{1,2}}, {adds} 2,\d{{3}};", notes.detail)
    assert "the notes are the larger part" in notes.detail
    assert "have the summarizer return" not in notes.detail
