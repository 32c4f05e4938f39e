"""A restored session decides its budget as the live one it was saved from.

Local compaction (``ContextPolicy(native=False)`` with ``on_overflow``) is due when the
next request passes the trigger, read from the provider's reported input tokens of the
last answered request plus our estimate of what was added since (`ContextUsage`). A
snapshot keeps that figure (its ledger's ``sent`` ``reported``), so a `SessionSync`
worker that loads the conversation each turn makes the same summarizer calls and sends
the same bytes as one session kept in memory; before, it fell back to its own estimate
(on Chat, 8 summarizer calls over 8 turns against 15 live). The budget notices
(``fixed_near_budget`` ...) are given once per conversation, not once per worker: the
snapshot keeps which were given (``noticed``). Multi-turn, through the official SDK
clients against the `contextchef.testing` fakes, every payload SDK-checked.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send as sdk_send

from contextchef import ContextChef, ContextPolicy, UsageError, user
from contextchef._json import canonical_dumps
from contextchef.history._reordered import record_digest as _record_digest
from contextchef.providers._budget import notice_digest
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import fake_for, text
from sdk_check import sdk_problems

MODELS = {
    "openai": "gpt-5.5",
    "responses": "gpt-5.5",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-3-pro",
}
TARGETS = tuple(MODELS)


class Summarizer:
    """Returns a short summary numbered by its call; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, transcript: str) -> str:
        self.calls += 1
        return f"Summary {self.calls}: the user asked about the failing build."


def _reported(target: str, response: Any, tokens: int) -> Any:
    """`response` with the provider reporting `tokens` input tokens.

    The Chat and Responses fakes report their prompt cache's count already; the
    Anthropic and Gemini fakes report 0, so their replies (as the SDK returned them,
    dumped to JSON) get a count the way the real APIs give one.
    """
    if target in ("openai", "responses"):
        return response
    data = response.model_dump(mode="json", exclude_none=True)
    if target == "anthropic":
        data["usage"] = {**data.get("usage", {}), "input_tokens": tokens}
    else:
        data["usage_metadata"] = {"prompt_token_count": tokens, "total_token_count": tokens}
    return data


def _chef(summarizer: Summarizer, policy: ContextPolicy) -> ContextChef:
    chef = ContextChef(context_policy=policy, on_overflow=summarizer)
    chef.set_system_prompt("You fix builds. " * 20)
    return chef


Step = Callable[[Callable[[ContextChef], None]], ContextChef]


def _drive(target: str, turns: int, step: Step, summarizer: Summarizer) -> list[str]:
    """`turns` turns, each run by `step` on a chef; the payloads' canonical JSON."""
    fake = fake_for(target).script(
        *[text(f"answer {k}: " + "the log shows a failure " * 50) for k in range(turns)]
    )
    send, sent = partial(sdk_send, target, fake), []

    def turn(chef: ContextChef, k: int) -> None:
        payload = chef.compile(target, model=MODELS[target]).payload
        assert sdk_problems(target, payload) == []
        sent.append(canonical_dumps(payload))
        # the provider counts more than our estimate (wire framing, its tokenizer)
        chef.ingest(_reported(target, send(payload), len(sent[-1]) // 3))
        chef.append(user(f"question {k}: " + "what about this step " * 10))

    for k in range(turns):
        step(partial(turn, k=k))
    assert fake.violations == ()
    return sent


def _live(summarizer: Summarizer, policy: ContextPolicy) -> Step:
    chef = _chef(summarizer, policy)
    chef.append(user("Why does the build fail?"))

    def step(turn: Callable[[ContextChef], None]) -> ContextChef:
        turn(chef)
        return chef

    return step


def _synced(summarizer: Summarizer, policy: ContextPolicy, path: Path) -> Step:
    """Each turn a new worker: load the stored conversation, run the turn, save it."""
    store = SQLiteSessionStore(path)
    first = _chef(summarizer, policy)
    first.append(user("Why does the build fail?"))
    SessionSync(store, "s").save(first)

    def step(turn: Callable[[ContextChef], None]) -> ContextChef:
        worker, sync = _chef(summarizer, policy), SessionSync(store, "s")
        assert sync.load_into(worker)
        turn(worker)
        sync.save(worker)
        return worker

    return step


@pytest.mark.parametrize("target", TARGETS)
def test_a_worker_per_turn_compacts_and_sends_as_the_live_session(
    target: str, tmp_path: Path
) -> None:
    policy = ContextPolicy(budget_tokens=2_000, native=False)  # compacts past 1,600 tokens
    live_summarizer, synced_summarizer = Summarizer(), Summarizer()
    live = _drive(target, 10, _live(live_summarizer, policy), live_summarizer)
    synced = _drive(
        target, 10, _synced(synced_summarizer, policy, tmp_path / "s.db"), synced_summarizer
    )
    assert live_summarizer.calls >= 2  # the reported count decides: it compacts (round 20:
    # the notes a compaction adds are bounded now, so it compacts less often than 3 times)
    assert synced_summarizer.calls == live_summarizer.calls
    assert synced == live  # byte-identical requests, turn by turn


def test_the_reported_count_decides_after_a_restore() -> None:
    """Chat: the restored session's `context_usage` is the live one's, figure and source."""
    summarizer = Summarizer()
    policy = ContextPolicy(budget_tokens=3_000, native=False)
    step = _live(summarizer, policy)
    chefs: list[ContextChef] = []
    _drive("openai", 2, lambda turn: chefs.append(step(turn)) or chefs[-1], summarizer)
    live = chefs[-1]
    restored = _chef(summarizer, policy)
    restored.restore(live.snapshot(), allow_unsigned=True)
    usage = live.context_usage("openai", model="gpt-5.5")
    assert usage.source == "usage"
    assert restored.context_usage("openai", model="gpt-5.5") == usage


def test_a_fixed_part_notice_is_given_once_per_conversation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """System prompt near the trigger: one ``fixed_near_budget`` over five workers."""
    summarizer = Summarizer()
    policy = ContextPolicy(budget_tokens=3_000, native=False)
    store = SQLiteSessionStore(tmp_path / "s.db")

    def chef() -> ContextChef:
        made = ContextChef(context_policy=policy, on_overflow=summarizer)
        made.set_system_prompt("You fix builds carefully. " * 300)  # about 1,950 of 2,400
        return made

    first = chef()
    first.append(user("Why does the build fail?"))
    SessionSync(store, "s").save(first)
    step_chefs: list[ContextChef] = []

    def step(turn: Callable[[ContextChef], None]) -> ContextChef:
        worker, sync = chef(), SessionSync(store, "s")
        assert sync.load_into(worker)
        turn(worker)
        sync.save(worker)
        step_chefs.append(worker)
        return worker

    with caplog.at_level(logging.WARNING, logger="contextchef"):
        _drive("openai", 5, step, summarizer)
    warned = [r.message for r in caplog.records if "resident tools take about" in r.message]
    kinds = [n.kind for c in step_chefs for n in c.notices if n.kind.startswith("fixed_")]
    assert kinds == ["fixed_near_budget"]
    assert len(warned) == 1, warned


def _chat_snapshot() -> tuple[ContextChef, dict[str, Any]]:
    """A Chat session two turns in (a reported count, a budget notice given), as JSON."""
    summarizer = Summarizer()
    policy = ContextPolicy(budget_tokens=3_000, native=False)
    chefs: list[ContextChef] = []

    def step(turn: Callable[[ContextChef], None]) -> ContextChef:
        if not chefs:
            chefs.append(_chef(summarizer, policy))
            chefs[0].set_system_prompt("You fix builds carefully. " * 300)
            chefs[0].append(user("Why does the build fail?"))
        turn(chefs[0])
        return chefs[0]

    _drive("openai", 2, step, summarizer)
    return chefs[0], json.loads(json.dumps(chefs[0].snapshot()))


def test_the_new_fields_are_written_and_checked() -> None:
    chef, snap = _chat_snapshot()
    assert snap["noticed"] == [notice_digest(n) for n in chef.notices]
    assert snap["ledgers"]["openai"]["sent"]["reported"] > 0
    for value, wanted in ((["xyz"], "a digest \\(16 hex digits\\)"), ("abc", "a list")):
        bad = {**snap, "noticed": value}
        with pytest.raises(UsageError, match=f"snapshot field 'noticed' .*must be {wanted}"):
            ContextChef().restore(bad, allow_unsigned=True)
    for value in (-5, 0, True, 1.5, "12", 2**60):
        bad = copy.deepcopy(snap)
        ledger = bad["ledgers"]["openai"]
        ledger["sent"]["reported"] = value
        ledger["record_digest"] = _record_digest(ledger)
        with pytest.raises(UsageError, match=r"ledger 'openai' field 'sent' must .*'reported'"):
            _chef(Summarizer(), chef_policy(chef)).restore(bad, allow_unsigned=True)
    edited = copy.deepcopy(snap)  # a count changed alone: the record digest says so
    edited["ledgers"]["openai"]["sent"]["reported"] += 1
    with pytest.raises(UsageError, match="ledger 'openai': its tools, system"):
        _chef(Summarizer(), chef_policy(chef)).restore(edited, allow_unsigned=True)


def chef_policy(chef: ContextChef) -> ContextPolicy:
    policy = chef._compiler.policy
    assert isinstance(policy, ContextPolicy)
    return policy


def test_a_snapshot_without_the_new_fields_restores_as_before() -> None:
    """Written before them: estimates until the next reply, and a notice given again."""
    chef, snap = _chat_snapshot()
    old = copy.deepcopy(snap)
    del old["noticed"]
    ledger = old["ledgers"]["openai"]
    del ledger["sent"]["reported"]
    ledger["record_digest"] = _record_digest(ledger)
    restored = _chef(Summarizer(), chef_policy(chef))
    restored.set_system_prompt("You fix builds carefully. " * 300)
    restored.restore(old, allow_unsigned=True)
    assert restored.context_usage("openai", model="gpt-5.5").source == "estimate"
    restored.compile("openai", model="gpt-5.5")
    assert [n.kind for n in restored.notices] == ["fixed_near_budget"]
