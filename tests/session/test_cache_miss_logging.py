"""A cache miss the session explains is not a warning; one it cannot explain is.

docs/guides/replay.md: "A miss none of these explains (a provider miss reason, or missed
tokens) is logged as a warning". The provider's ``cache_miss`` notice is logged at INFO;
`CacheReport.unexplained` is the one warning, and only when no edit of the session's
explains the miss. Sent through the Anthropic SDK client against `FakeAnthropic`, which
diagnoses each request against the previous one (``diagnostics``).
"""

from __future__ import annotations

import logging
from typing import Any

import anthropic
import pytest

from contextchef import ContextChef, user
from contextchef.testing import FakeAnthropic, httpx_for, text

OPUS = "claude-opus-5-5"
TOOL = {"name": "lookup", "description": "Look a word up.", "input_schema": {"type": "object"}}


def _turns(*, session_edit: str | None = None, payload_edit: str | None = None) -> ContextChef:
    """Two requests; the second after the session's system edit or a payload edit."""
    fake = FakeAnthropic().script(text("ok"), text("ok"))
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    chef = ContextChef()
    chef.register_tools([TOOL])
    chef.set_system_prompt("You are a careful engineering agent. " * 40)
    chef.set_history([user("Define cache.")])
    for turn in range(2):
        if turn:
            if session_edit is not None:
                chef.set_system_prompt(session_edit)
            chef.append(user("And define store."))
        request = chef.compile("anthropic", model=OPUS, strategy="flat", diagnostics=bool(turn))
        payload: dict[str, Any] = request.mutable_payload()
        if turn and payload_edit is not None:
            payload["system"] = payload_edit  # after compile: the session does not know
        chef.ingest(client.messages.create(**payload, extra_headers=dict(request.headers)))
    assert not fake.violations
    return chef


def _records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("contextchef")
        and r.levelno == level
        and "cache missed" in r.getMessage()
    ]


def test_a_miss_the_sessions_own_system_edit_explains_is_logged_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="contextchef")
    chef = _turns(session_edit="You are terse.")
    report = chef.cache_reports[-1]
    assert report.reason == "system_changed" and "system edit" in report.explanation
    assert _records(caplog, logging.WARNING) == []
    assert _records(caplog, logging.INFO) == [
        "contextchef: the prompt cache missed: system_changed"
    ]


def test_a_miss_no_session_edit_explains_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="contextchef")
    chef = _turns(payload_edit="Changed after compile.")
    report = chef.cache_reports[-1]
    assert report.reason == "system_changed" and report.explanation == ""
    (warned,) = _records(caplog, logging.WARNING)
    assert "with no edit reported by the session (the provider says system_changed)" in warned
