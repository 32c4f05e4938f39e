"""A worker's own system prompt loses to the conversation's on load, and says so.

Break-it 21 (p21): worker 2 set "NEW prompt v2", `SessionSync` loaded the conversation and
sent the stored "OLD prompt" with ``differences == ()`` and nothing logged. The stored
prompt is still the one kept (it opens the cached prefix), but the load reports a
``system`` `PolicyDifference` and logs it with how to change the prompt on purpose:
`set_system_prompt` after loading, which the next compile reports as an edit.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import ContextChef, PolicyDifference, SessionSync, SQLiteSessionStore, user
from contextchef.testing import FakeAnthropic, FakeOpenAIChat, FakeProvider, text

TARGETS: dict[str, tuple[str, type[FakeProvider]]] = {
    "anthropic": ("claude-sonnet-4-5", FakeAnthropic),
    "openai": ("gpt-5.6", FakeOpenAIChat),
}


def _chef(system: str | None) -> ContextChef:
    chef = ContextChef()
    if system is not None:
        chef.set_system_prompt(system)
    return chef


def _sent_system(target: str, body: dict[str, Any]) -> str:
    system = body["system"] if target == "anthropic" else body["messages"][0]["content"]
    return system if isinstance(system, str) else "".join(b["text"] for b in system)


class _Workers:
    """Workers taking turns on one stored conversation, each through the SDK client."""

    def __init__(self, target: str, tmp_path: Path) -> None:
        self.target, (self.model, fake) = target, TARGETS[target]
        self.store = SQLiteSessionStore(str(tmp_path / "s.db"))
        self.fake = fake()
        self.edits: list[Any] = []

    def turn(self, system: str | None, *, then_set: str | None = None) -> SessionSync:
        sync = SessionSync(self.store, "conv")

        def run(chef: ContextChef) -> None:
            if then_set is not None:
                chef.set_system_prompt(then_set)
            chef.append(user("next question"))
            self.fake.script(text("an answer"))
            request = chef.compile(self.target, model=self.model)
            self.edits.append(request.edits)
            chef.ingest(send(self.target, self.fake, request.payload))

        sync.run_turn(lambda: _chef(system), run)
        return sync

    def sent(self) -> str:
        return _sent_system(self.target, self.fake.requests[-1].body)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_different_worker_prompt_is_reported_and_the_conversations_kept(
    target: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workers = _Workers(target, tmp_path)
    assert workers.turn("OLD prompt").differences == ()

    with caplog.at_level(logging.WARNING, logger="contextchef"):
        sync = workers.turn("NEW prompt v2")

    assert sync.differences == (
        PolicyDifference(
            field="system", session="NEW prompt v2", snapshot="OLD prompt", kept="snapshot"
        ),
    )
    assert workers.sent() == "OLD prompt"  # the prefix is kept
    assert workers.edits[-1] == ()
    (record,) = [r for r in caplog.records if "system: snapshot 'OLD prompt'" in r.message]
    assert record.levelno == logging.WARNING
    assert "call set_system_prompt after loading" in record.message
    assert workers.fake.violations == ()


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_no_difference_for_the_same_prompt_or_none_set(target: str, tmp_path: Path) -> None:
    workers = _Workers(target, tmp_path)
    workers.turn("OLD prompt")
    assert workers.turn("OLD prompt").differences == ()
    assert workers.turn(None).differences == ()  # a worker that leaves it to the store
    assert workers.sent() == "OLD prompt"
    assert workers.fake.violations == ()


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_set_system_prompt_after_loading_changes_it_as_a_reported_edit(
    target: str, tmp_path: Path
) -> None:
    workers = _Workers(target, tmp_path)
    workers.turn("OLD prompt")
    workers.turn(None, then_set="NEW prompt v2")

    assert workers.sent() == "NEW prompt v2"
    assert [e.kind for e in workers.edits[-1]] == ["system"]
    workers.turn(None)  # the new prompt is the conversation's from now on
    assert workers.sent() == "NEW prompt v2"
    assert workers.edits[-1] == ()
    assert workers.fake.violations == ()


def test_restore_reports_it_too() -> None:
    old = _chef("OLD prompt")
    old.append(user("hi"))
    chef = _chef("NEW prompt v2")
    notes = chef.restore(old.snapshot(), allow_unsigned=True)
    assert [(n.field, n.kept) for n in notes] == [("system", "snapshot")]
    assert "to change it, call set_system_prompt after loading" in str(notes[0])
