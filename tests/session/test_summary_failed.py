"""A summarizer that fails inside the session's own compaction (`providers._retry`).

The ``on_overflow`` summarizer, run at compile when the request is past
`ContextPolicy.compact_at`, may return ``""`` or raise (a model call that timed out).
Before, the compile raised the same `UsageError` on every turn from then on: the agent
was dead. Now each failure is a ``summary_failed`` notice (and a warning with the
summarizer's exception in its traceback), the request is compiled and sent uncompacted,
and the summarizer is tried again after a back-off (2, then 4, 8... turns), at once again
after it works. An explicit `ContextChef.compact` still raises, chained. Multi-turn
through the official SDK clients against the fakes.
"""

from __future__ import annotations

import itertools

import openai
import pytest

from contextchef import ContextChef, ContextPolicy, UsageError, user
from contextchef.history._compaction import SUMMARY_TAG
from contextchef.providers._retry import SummaryRetry
from contextchef.testing import FakeOpenAIChat, httpx_for, text
from sdk_check import sdk_problems


class Flaky:
    """A summarizer that fails (``"empty"``: returns ``""``; ``"raise"``) while `failing`."""

    def __init__(self, how: str) -> None:
        self.how, self.failing, self.calls = how, True, 0

    def __call__(self, transcript: str) -> str:
        self.calls += 1
        if not self.failing:
            return "The build fails in step seven."
        if self.how == "raise":
            raise TimeoutError("the summary model timed out")
        return "  "


def _session(summarizer: Flaky) -> ContextChef:
    policy = ContextPolicy(budget_tokens=2_000, native=False)  # compact at 1,600 tokens
    chef = ContextChef(context_policy=policy, on_overflow=summarizer)
    chef.set_history([user("Find why the build fails. " + "Here is the log line. " * 400)])
    return chef


def _turns(chef: ContextChef, fake: FakeOpenAIChat, turns: int, flaky: Flaky) -> list[int]:
    """`turns` turns on Chat Completions; the summarizer's calls by the end of each."""
    fake.script(*[text(f"answer {k}: " + "details " * 40) for k in range(turns)])
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    calls = []
    for k in range(turns):
        request = chef.compile("openai", model="gpt-5.5")  # never raises
        assert sdk_problems("openai", request.payload) == []
        chef.ingest(client.chat.completions.create(**request.payload))
        chef.append(user(f"question {k}: " + "what about this part " * 15))
        calls.append(flaky.calls)
    return calls


def _summarized(chef: ContextChef) -> bool:
    first = chef.history[0].parts[0]
    return getattr(first, "text", "").startswith(f"<{SUMMARY_TAG}>")


@pytest.mark.parametrize("how", ["empty", "raise"])
def test_a_failing_summarizer_is_reported_backed_off_and_the_agent_goes_on(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    flaky, fake = Flaky(how), FakeOpenAIChat()
    chef = _session(flaky)
    with caplog.at_level("WARNING", logger="contextchef"):
        calls = _turns(chef, fake, 8, flaky)
    # before: a call and a UsageError at every compile from turn 1 (turn 0 has nothing to
    # summarize); now turns 1, 3 and 7 try it (2, then 4 turns of two messages between)
    assert calls == [0, 1, 1, 2, 2, 2, 2, 3]
    assert not _summarized(chef) and len(chef.history) == 17  # uncompacted, all there
    failed = [n for n in chef.notices if n.kind == "summary_failed"]
    assert [n.reason for n in failed] == ["raised" if how == "raise" else "no_text"] * 3
    assert "the conversation is sent uncompacted" in failed[0].detail
    assert "once 4 more messages" in failed[0].detail and "8 more" in failed[1].detail
    warned = [r for r in caplog.records if "on_overflow summarizer failed" in r.message]
    assert len(warned) == 3
    if how == "raise":  # the host's own exception, chained, in the logged traceback
        error = warned[0].exc_info[1] if warned[0].exc_info else None
        assert isinstance(error, UsageError)
        assert isinstance(error.__cause__, TimeoutError)
        assert "TimeoutError" in failed[0].detail
    flaky.failing = False  # the summarizer works again: the next due try compacts
    calls = _turns(chef, fake, 8, flaky)
    assert calls[-1] > 3 and _summarized(chef)
    assert fake.violations == ()


def test_an_explicit_compact_still_raises_chained() -> None:
    flaky = Flaky("raise")
    chef = _session(flaky)
    _turns(chef, FakeOpenAIChat(), 2, flaky)
    with pytest.raises(UsageError, match="summarize raised TimeoutError") as raised:
        chef.compact(flaky)
    assert isinstance(raised.value.__cause__, TimeoutError)


def test_the_back_off_doubles_up_to_its_cap_and_resets_on_success() -> None:
    retry, ran = SummaryRetry(), []

    def fail() -> None:
        ran.append(length)
        raise UsageError("summarize returned an empty summary")

    tries = []
    for length in range(0, 400, 2):
        if retry.run(fail, length) != ():
            tries.append(length)
    assert tries[:6] == [0, 4, 12, 28, 60, 124]
    assert [b - a for a, b in itertools.pairwise(tries)][5:] == [64] * (len(tries) - 6)
    assert retry.run(lambda: None, 400) == ()  # still waiting
    assert retry.run(lambda: None, tries[-1] + 64) is None and retry.failures == 0
    with pytest.raises(UsageError):
        retry.run(fail, 0, forced=True)  # a provider switch cannot wait: raised


def test_a_worker_per_turn_waits_out_a_failure_as_the_live_session_does(
    tmp_path: pytest.TempPathFactory,
) -> None:
    """The back-off is in the snapshot (``retry``) while a failure is waited out."""
    from contextchef.stores import SessionSync, SQLiteSessionStore

    flaky, fake = Flaky("raise"), FakeOpenAIChat()
    store = SQLiteSessionStore(str(tmp_path) + "/s.db")  # type: ignore[operator]
    first = _session(flaky)
    SessionSync(store, "s").save(first)
    fake.script(*[text(f"answer {k}: " + "details " * 40) for k in range(8)])
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    calls, retries = [], set()
    for k in range(8):  # a new worker each turn, as behind a load balancer
        chef = ContextChef(
            context_policy=ContextPolicy(budget_tokens=2_000, native=False), on_overflow=flaky
        )
        sync = SessionSync(store, "s")
        sync.load_into(chef)
        request = chef.compile("openai", model="gpt-5.5")
        chef.ingest(client.chat.completions.create(**request.payload))
        chef.append(user(f"question {k}: " + "what about this part " * 15))
        sync.save(chef)
        calls.append(flaky.calls)
        retries.add(tuple(chef.snapshot().get("retry", ())))
    assert calls == [0, 1, 1, 2, 2, 2, 2, 3]  # as live (the test above), not a call a turn
    assert {(1, 3), (2, 7), (3, 15)} <= retries
    assert fake.violations == ()


@pytest.mark.parametrize("bad", [[1], [-1, 0], ["1", 2], [1, 2, 3], None])
def test_a_malformed_retry_field_is_refused_naming_it(bad: object) -> None:
    flaky = Flaky("empty")
    chef = _session(flaky)
    _turns(chef, FakeOpenAIChat(), 2, flaky)
    data = chef.snapshot()
    assert data["retry"] == [1, 3]
    data["retry"] = bad
    with pytest.raises(UsageError, match="retry"):
        ContextChef().restore(data, allow_unsigned=True)


@pytest.mark.parametrize("edited", [[1, 10**9], [10**9, 1], [2**64, 2**64]])
def test_an_edited_retry_delays_the_next_try_at_most_the_longest_wait(edited: list[int]) -> None:
    """An unsigned snapshot's ``retry`` cannot stop compaction: the wait is capped."""
    flaky, fake = Flaky("empty"), FakeOpenAIChat()
    chef = _session(flaky)
    _turns(chef, fake, 2, flaky)
    data = chef.snapshot()
    data["retry"] = edited
    worker = ContextChef(
        context_policy=ContextPolicy(budget_tokens=2_000, native=False), on_overflow=flaky
    )
    worker.restore(data, allow_unsigned=True)
    flaky.failing, before = False, flaky.calls
    _turns(worker, fake, 34, flaky)  # 68 messages: more than the longest wait (64)
    assert flaky.calls > before and _summarized(worker)
