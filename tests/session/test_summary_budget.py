"""A summarizer that returns more than the compaction budget (`providers._budget`).

Local compaction (the ``on_overflow`` summarizer, run past `ContextPolicy.compact_at` or
`OverflowHandoff.max_history_tokens`) that gets back a summary larger than the trigger
cannot bring the request under it: compacting again on the next turn would pay the
summarizer for its own summary, every turn. The session reports it once per such
compaction (a ``summary_over_budget`` notice naming the summary's tokens and the trigger)
and sets the summary aside by the trigger (`compaction_due`) until what follows it is
past the trigger itself. Multi-turn through the official SDK clients against the fakes.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import openai
import pytest
from google import genai
from google.genai import types

from contextchef import ContextChef, ContextPolicy, Message, OverflowHandoff, user
from contextchef.history._compaction import summary_message
from contextchef.providers._budget import ContextUsage, compaction_due, summary_notice
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import FakeGemini, FakeOpenAIChat, Turn, httpx_for, text
from sdk_check import sdk_problems


class Wordy:
    """A summarizer that returns `words` words whatever it is given (records its calls)."""

    def __init__(self, words: int) -> None:
        self.words, self.calls = words, 0

    def __call__(self, transcript: str) -> str:
        self.calls += 1
        return f"Summary {self.calls}: " + "the build failed in step seven " * (self.words // 6)


def _answers(turns: int) -> list[Turn]:
    return [text(f"answer {k}: " + "details of the failure " * 20) for k in range(turns)]


def _chat_session(
    chef: ContextChef, turns: int, wordy: Wordy, fake: FakeOpenAIChat | None = None
) -> tuple[FakeOpenAIChat, list[int]]:
    """`turns` turns on Chat Completions (the local path), each payload SDK-checked.

    Returns the fake and, per turn, how many times the summarizer had run by its end.
    """
    fake = (fake or FakeOpenAIChat()).script(*_answers(turns))
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    calls = []
    for k in range(turns):
        request = chef.compile("openai", model="gpt-5.5")
        assert sdk_problems("openai", request.payload) == []
        chef.ingest(client.chat.completions.create(**request.payload))
        chef.append(user(f"question {k}: " + "what about this part " * 15))
        calls.append(wordy.calls)
    return fake, calls


def _never_twice_in_a_row(calls: list[int]) -> bool:
    """No two turns in a row ran the summarizer."""
    runs = [b > a for a, b in itertools.pairwise([0, *calls])]
    return not any(x and y for x, y in itertools.pairwise(runs))


def _over(chef: ContextChef) -> list[str]:
    return [n.detail for n in chef.notices if n.kind == "summary_over_budget"]


def _start() -> list[Message]:
    return [user("Find why the build fails. " + "Here is the log line. " * 400)]


def test_an_over_budget_summary_is_reported_and_not_paid_for_every_turn() -> None:
    wordy = Wordy(3_000)  # far past the 1,600-token trigger
    policy = ContextPolicy(budget_tokens=2_000, native=False)  # compact at 1,600 tokens
    chef = ContextChef(context_policy=policy, on_overflow=wordy)
    chef.set_history(_start())
    fake, calls = _chat_session(chef, 12, wordy)
    assert fake.violations == ()
    # before: one summarizer call on every turn once the first summary was too large (11);
    # now one per 1,600 tokens of new conversation (a turn adds about 200 here)
    assert 1 <= wordy.calls <= 3 and _never_twice_in_a_row(calls), calls
    notices = _over(chef)
    assert len(notices) == wordy.calls
    assert "past the compaction trigger of 1,600 tokens (ContextPolicy.compact_at)" in notices[0]
    # room for the notes the library adds to the summary (round 20: named apart)
    added = re.search(r"the notes contextchef adds to it \(.*?\) about ([\d,]+)", notices[0])
    assert added is not None
    fixed = chef.context_usage("openai", model="gpt-5.5").fixed  # search_archive's definition
    assert fixed > 200  # the library's own tool counts with the system prompt and tools
    assert f"fewer than {1_600 - fixed - int(added[1].replace(',', '')):,} tokens" in notices[0]
    tokens = int(notices[0].split("about ")[1].split(" tokens")[0].replace(",", ""))
    assert tokens > 1_600
    assert {n.reason for n in chef.notices if n.kind == "summary_over_budget"} == {"compact_at"}


def test_a_summary_within_budget_compacts_as_before_without_a_notice() -> None:
    wordy = Wordy(120)
    chef = ContextChef(context_policy=ContextPolicy(budget_tokens=2_000), on_overflow=wordy)
    chef.set_history(_start())
    _, calls = _chat_session(chef, 12, wordy)
    assert wordy.calls >= 3 and _over(chef) == [], calls  # compacts whenever due, quietly


def test_the_handoff_limit_is_reported_in_its_own_terms() -> None:
    """`OverflowHandoff.max_history_tokens` over Gemini: same rule, its trigger named."""
    wordy = Wordy(3_000)
    chef = ContextChef(on_overflow=OverflowHandoff(summarize=wordy, max_history_tokens=1_000))
    chef.set_history(_start())
    fake = FakeGemini().script(*_answers(10))
    http = types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai)))
    client = genai.Client(api_key="x", http_options=http)
    calls = []
    for k in range(10):
        request = chef.compile("gemini", model="gemini-3-pro")
        assert sdk_problems("gemini", request.payload) == []
        chef.ingest(client.models.generate_content(**request.payload))
        chef.append(user(f"question {k}: " + "what about this part " * 15))
        calls.append(wordy.calls)
    assert fake.violations == ()
    assert 1 <= wordy.calls <= 3 and _never_twice_in_a_row(calls), calls
    assert "1,000 tokens (OverflowHandoff.max_history_tokens)" in _over(chef)[0]


def test_a_restored_session_keeps_the_summary_aside(tmp_path: Path) -> None:
    """The rule reads the history only: a worker that loads the session does not re-run it."""
    wordy = Wordy(3_000)
    policy = ContextPolicy(budget_tokens=2_000, native=False)
    chef = ContextChef(context_policy=policy, on_overflow=wordy)
    chef.set_history(_start())
    fake, _ = _chat_session(chef, 2, wordy)
    assert wordy.calls == 1 and len(_over(chef)) == 1
    store = SQLiteSessionStore(tmp_path / "s.db")
    SessionSync(store, "s").save(chef)
    worker = ContextChef(context_policy=policy, on_overflow=wordy)
    assert SessionSync(store, "s").load_into(worker)
    _chat_session(worker, 2, wordy, fake)
    assert fake.violations == () and wordy.calls == 1


def _usage(used: int) -> ContextUsage:
    return ContextUsage(target="openai", model="m", used=used, budget=9_000, source="usage")


def test_compaction_due_sets_only_an_over_budget_leading_summary_aside() -> None:
    big = summary_message("word " * 4_000)
    small = summary_message("short")
    plain = user("word " * 4_000)
    turn = user("q " * 2_000)  # what follows the summary: about 1,000 tokens
    assert compaction_due([big, turn], (_usage(5_900), 1_000), None) == (False, False)
    assert compaction_due([big, turn], (_usage(6_100), 1_000), None) == (True, False)
    assert compaction_due([small, turn], (_usage(1_100), 1_000), None) == (True, False)
    assert compaction_due([plain], (_usage(4_100), 1_000), None) == (True, False)  # no summary
    assert compaction_due([big], None, 1_000) == (False, False)
    assert compaction_due([plain], None, 1_000) == (False, True)
    assert summary_notice([small], (_usage(0), 1_000), None) == ()
    (notice,) = summary_notice([big], (_usage(0), 3_000), 1_000)
    assert notice.reason == "max_history_tokens" and notice.kind == "summary_over_budget"


def test_the_notice_is_logged_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    policy = ContextPolicy(budget_tokens=2_000, native=False)
    wordy = Wordy(3_000)
    chef = ContextChef(context_policy=policy, on_overflow=wordy)
    chef.set_history(_start())
    with caplog.at_level("WARNING", logger="contextchef"):
        _chat_session(chef, 2, wordy)
    warned = [r.message for r in caplog.records if r.levelname == "WARNING"]
    assert any("past the compaction trigger of 1,600 tokens" in m for m in warned)
