"""A compaction leaves headroom below the trigger, its own notes counted (no thrash).

Under a small budget (``budget_tokens=1_200``: a trigger of 960 tokens) with turns of
about half the trigger, the notes a compaction adds to the summary (the archive line,
the user's words, how to use the archive) and the archive tool the session declares
pushed every request back over the trigger: the summarizer ran on 38 of 40 turns. The
notes now fit in what the compaction leaves of half the trigger (`contextchef.history.
_notes`), so the next compaction waits for a real turn of growth; at ordinary budgets the
notes are as before and so are the summarizer calls. Multi-turn through the official SDK
clients against the `contextchef.testing` fakes, every payload SDK-checked.
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send

from contextchef import ContextChef, ContextPolicy, TextPart, assistant, estimate_tokens, user
from contextchef.history._archive import SHORT_HINT, dropped_note
from contextchef.history._compaction import SUMMARY_TAG, summary_message
from contextchef.history._notes import HEADROOM_SHARE, NoteBudget, messages_tokens, notes_room
from contextchef.history._quotes import MORE
from contextchef.providers._budget import ContextUsage, compaction_due
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import fake_for, text
from prefix_check import prefix_problems
from sdk_check import sdk_problems

MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}


class Counting:
    """A summarizer returning a short summary; records the turn of each call."""

    def __init__(self) -> None:
        self.turns: list[int] = []
        self.turn = 0

    def __call__(self, transcript: str) -> str:
        self.turns.append(self.turn)
        return f"Summary {len(self.turns)}: the user asks about mixed scripts."


def _question(k: int) -> str:
    return f"Q{k} 请解释这个问题 with mixed 🧪 scripts. " + "y" * 500


def _reported(target: str, response: Any, body: dict[str, Any]) -> Any:
    """The Anthropic fake reports no input tokens: give the count a provider would."""
    if target != "anthropic":
        return response
    data = response.model_dump(mode="json", exclude_none=True)
    data["usage"] = {**data.get("usage", {}), "input_tokens": estimate_tokens(str(body)) + 40}
    return data


def _chef(summarizer: Counting, budget: int) -> ContextChef:
    policy = ContextPolicy(native=False, budget_tokens=budget, output_reserve=0)
    chef = ContextChef(on_overflow=summarizer, context_policy=policy, volatile_lint="off")
    chef.set_system_prompt("You are terse.")
    return chef


def _session(target: str, budget: int, turns: int = 40) -> tuple[Counting, ContextChef]:
    summarizer = Counting()
    chef = _chef(summarizer, budget)
    fake = fake_for(target).script(*[text(f"A{i} " + "x" * 800) for i in range(turns)])
    for k in range(turns):
        summarizer.turn = k
        chef.append(user(_question(k)))
        payload = chef.compile(target, model=MODELS[target]).payload
        assert sdk_problems(target, payload) == []
        chef.ingest(_reported(target, send(target, fake, payload), payload))
    assert fake.violations == ()
    exchanges = [(r.body, r.reply) for r in fake.requests]
    assert prefix_problems(exchanges) == []
    return summarizer, chef


def _never_twice_in_a_row(turns: list[int]) -> bool:
    return all(b - a > 1 for a, b in itertools.pairwise(turns))


@pytest.mark.parametrize("target", list(MODELS))
def test_a_small_budget_compacts_after_real_growth_only(
    target: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="contextchef")
    summarizer, chef = _session(target, 1_200)
    # before: 38 summarizer calls in 40 turns (every turn from the third on)
    assert 10 <= len(summarizer.turns) <= 20, summarizer.turns
    assert _never_twice_in_a_row(summarizer.turns), summarizer.turns
    head = chef.history[0].parts[0]
    assert isinstance(head, TextPart) and head.text.startswith(f"<{SUMMARY_TAG}>")
    assert "Archived as " in head.text  # the archive is still named: restore finds it
    assert estimate_tokens(head.text) < 960 // 8


def test_ordinary_budgets_compact_as_before(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="contextchef")
    summarizer, chef = _session("openai", 4_000)
    assert len(summarizer.turns) == 5  # as on main
    head = chef.history[0].parts[0]
    assert isinstance(head, TextPart) and "The user's words, verbatim:" in head.text
    summarizer, _ = _session("openai", 32_000)
    assert summarizer.turns == []


def test_a_restored_worker_bounds_the_notes_as_the_live_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """chef.compact() right after a restore: the trigger and fixed part come with the snapshot."""
    caplog.set_level(logging.ERROR, logger="contextchef")
    fake = fake_for("openai").script(*[text(f"A{i} " + "x" * 800) for i in range(2)])
    live_summarizer = Counting()
    live = _chef(live_summarizer, 1_200)
    for k in range(2):
        live.append(user(_question(k)))
        live.ingest(send("openai", fake, live.compile("openai", model="gpt-4o").payload))
    store = SQLiteSessionStore(tmp_path / "s.db")
    SessionSync(store, "s").save(live)
    worker_summarizer = Counting()
    worker = _chef(worker_summarizer, 1_200)
    assert SessionSync(store, "s").load_into(worker)
    for chef, summarizer in ((live, live_summarizer), (worker, worker_summarizer)):
        chef.append(user(_question(2)))
        chef.compact(summarizer, keep_recent_turns=1)
    assert live.history == worker.history
    assert estimate_tokens(str(live.history[0].to_dict())) < 960 // 2


def _usage(used: int, budget: int = 1_200, fixed: int = 300) -> ContextUsage:
    return ContextUsage(
        target="openai", model="m", used=used, budget=budget, source="usage", fixed=fixed
    )


def test_after_a_compaction_the_trigger_waits_for_half_a_trigger_of_growth() -> None:
    opening = summary_message("short summary")
    small, large = user("q " * 400), user("q " * 1_100)  # about 200 and 550 tokens
    assert messages_tokens([small]) < 960 // HEADROOM_SHARE < messages_tokens([large])
    assert compaction_due([opening, small], (_usage(1_000), 960), None) == (False, False)
    assert compaction_due([opening, large], (_usage(1_000), 960), None) == (True, False)
    # the budget itself is never passed: past it, compacted whatever the growth
    assert compaction_due([opening, small], (_usage(1_201), 960), None) == (True, False)
    # no compaction yet (no summary opens the history): the trigger alone decides
    assert compaction_due([small], (_usage(961), 960), None) == (True, False)


def test_the_note_gives_way_to_the_room_but_keeps_the_archive_line() -> None:
    removed = [user("Deploy only on Fridays. " * 10), assistant("ok")]
    full = dropped_note(removed, "L.txt", trigger=960)
    assert dropped_note(removed, "L.txt", trigger=960, room=10_000) == full
    assert "The user's words, verbatim:" in full
    short = dropped_note(removed, "L.txt", trigger=960, room=0)
    assert short.splitlines() == ["Archived as L.txt: messages removed from view (2).", SHORT_HINT]
    some = dropped_note(removed, "L.txt", trigger=960, room=estimate_tokens(full) - 20)
    assert some.splitlines()[0] == short.splitlines()[0] and MORE in some
    assert estimate_tokens(some) <= estimate_tokens(full) - 20
    budget = NoteBudget(trigger=960, fixed=300)
    assert notes_room(None, removed) is None
    assert notes_room(budget, removed, "x" * 40) == 480 - 300 - messages_tokens(removed) - 10


def test_an_old_snapshot_without_the_budget_restores() -> None:
    summarizer = Counting()
    chef = _chef(summarizer, 1_200)
    chef.append(user(_question(0)))
    chef.compile("openai", model="gpt-4o")
    data = chef.snapshot()
    assert data["budget"] == [960, chef.context_usage("openai", model="gpt-4o").fixed]
    del data["budget"]
    worker = _chef(summarizer, 1_200)
    worker.restore(data, allow_unsigned=True)
    assert worker.history == chef.history
    assert "budget" not in worker.snapshot()  # known again at the next local compile
