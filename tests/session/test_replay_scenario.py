"""The 50-turn cache scenario (issue 13, item 4): the prefix holds, >= 95% of input cached."""

from __future__ import annotations

from pathlib import Path

import pytest
from cache_scenario import COMPACTION_TURN, TURNS, run_scenario

from contextchef import prefix_break
from contextchef.analysis._meter import _cache_text
from contextchef.providers import TARGETS


@pytest.mark.parametrize("target", TARGETS)
def test_system_and_tools_hold_and_the_cached_share_is_at_least_95_percent(
    catalogs_dir: Path, target: str
) -> None:
    run = run_scenario(catalogs_dir, target)
    assert len(run.requests) == TURNS
    for i in range(1, TURNS):
        before, after = run.requests[i - 1], run.requests[i]
        found = prefix_break(before, after)
        if i == COMPACTION_TURN:
            assert found is not None and found.segment == "messages"
            assert "history edit" in found.cause
            continue
        assert after.segments["system"] == before.segments["system"], i
        assert after.segments["tools"] == before.segments["tools"], i
        assert found is None, (i, found)
        assert run.figures[i].cause is None
        # all of the previous request is shared
        assert run.figures[i].shared_prefix_bytes == len(_cache_text(before, None).encode())
    assert run.cached_share >= 0.95, run.cached_share
    # the scenario did what it says: a discovery, a blocked call, the runtime tool, a summary
    text = run.requests[-1].to_json() + run.requests[COMPACTION_TURN - 1].to_json()
    assert "github__create_issue" in text and "currently blocked" in text
    assert "ok: branch=fix" in text and "conversation_summary" in run.requests[-1].to_json()
