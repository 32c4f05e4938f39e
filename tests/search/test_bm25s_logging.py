"""bm25s's import-time DEBUG level does not leak its log lines into a host's handlers."""

from __future__ import annotations

import logging

import pytest

from contextchef import ContextChef, user
from contextchef.search import _corpus


def test_a_search_logs_nothing_under_the_hosts_default_levels(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bm25s

    logger = logging.getLogger("bm25s")
    monkeypatch.setattr(logger, "level", logging.DEBUG)  # as `import bm25s` leaves it
    _corpus.quiet_bm25s.cache_clear()
    assert logging.getLogger().level == logging.WARNING  # the host's root: default
    chef = ContextChef(default_defer=True)
    tools = [{"name": f"tool_{i}_logs", "description": f"Reads log {i}."} for i in range(40)]
    chef.register_tools(tools)
    chef.set_history([user("go")])
    chef.compile("anthropic", model="m")
    (found,) = chef.run_tools(
        [{"id": "1", "name": "tool_search", "arguments": {"queries": ["read log 7"]}}]
    )
    assert "tool_7_logs" in found.content
    assert logger.level == logging.NOTSET and bm25s.__name__ == "bm25s"
    assert [r.getMessage() for r in caplog.records if r.name.startswith("bm25s")] == []


def test_a_level_the_host_chose_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    logger = logging.getLogger("bm25s")
    monkeypatch.setattr(logger, "level", logging.INFO)
    _corpus.quiet_bm25s.cache_clear()
    assert _corpus.quiet_bm25s().__name__ == "bm25s"
    assert logger.level == logging.INFO
