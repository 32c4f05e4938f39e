"""A memory the model writes keeps Claude's thinking on (break-it 37 #6).

The session stated changed memories as the result of a ``read_memories`` call it
appended; on Claude with thinking on that made-up call became the final tool turn, which
must lead with signed thinking, so the next request went without ``thinking``
(``dropped == ("thinking",)``) every time a memory was saved. With thinking on, the
``<memories>`` block now joins the user text; without it, the call is made as before.
"""

from __future__ import annotations

import anthropic

from contextchef import ContextChef, InMemoryStore, user
from contextchef.testing import FakeAnthropic, httpx_for, text, tool_calls

THINK = {"thinking": {"type": "enabled", "budget_tokens": 2000}}


def grep(pattern: str) -> str:
    """Search the code."""
    return "hit"


def _loop(extra: dict[str, object] | None) -> list[object]:
    chef = ContextChef(memory=InMemoryStore())
    chef.register_tools([grep])
    chef.set_history([user("Remember that I like tea, then grep for TODO.")])
    fake = FakeAnthropic().script(
        tool_calls(("create_memory", {"key": "drink", "value": "tea"}), reasoning="save it"),
        tool_calls(("grep", {"pattern": "TODO"}), reasoning="now grep"),
        text("done", reasoning="ok"),
    )
    client = anthropic.Anthropic(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    requests = []
    while True:
        request = chef.compile("anthropic", model="claude-opus-5-5", extra=extra)
        requests.append(request)
        if not chef.run_tools(chef.ingest(client.messages.create(**request.payload))):
            break
    assert fake.violations == ()
    return requests


def test_with_thinking_on_the_memories_join_the_user_text() -> None:
    requests = _loop(THINK)
    assert len(requests) == 3
    for request in requests:
        assert request.dropped == () and request.payload["thinking"] == THINK["thinking"]
    second = requests[1].payload["messages"]
    assert [b["type"] for b in second[-2]["content"]] == ["thinking", "tool_use"]
    last = second[-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert "<memories>" in last[1]["text"] and "drink" in last[1]["text"]
    assert not any(
        b.get("name") == "read_memories"
        for m in second
        for b in m["content"]
        if isinstance(b, dict)
    )


def test_without_thinking_the_memories_come_as_a_read_memories_result() -> None:
    second = _loop(None)[1].payload["messages"]
    assert second[-2]["content"][0]["name"] == "read_memories"
    assert "<memories>" in second[-1]["content"][0]["content"]
