"""Provider diagnostics joined into `prefix_break` (issue 13, item 2): the response's word."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from contextchef import ContextChef, CorruptHistoryError, assistant, prefix_break, user
from contextchef.providers import response_notices
from contextchef.testing import FakeAnthropic, httpx_for, text

OPUS = "claude-opus-5-5"
TOOL = {"name": "lookup", "description": "Look a word up.", "input_schema": {"type": "object"}}
MORE = {"name": "define", "description": "Define a word.", "input_schema": {"type": "object"}}


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([TOOL])
    chef.set_system_prompt("Be brief.")
    chef.set_history([user("Define cache.")])
    return chef


def _send(client: anthropic.Anthropic, chef: ContextChef, **options: Any) -> Any:
    request = chef.compile("anthropic", model=OPUS, strategy="flat", **options)
    reply = client.messages.create(**request.payload, extra_headers=dict(request.headers))
    chef.ingest(reply)
    return request, reply


def test_a_tools_change_is_joined_with_the_providers_cache_miss_reason() -> None:
    fake = FakeAnthropic().script(text("ok"), text("ok"))
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    chef = _chef()
    before, _ = _send(client, chef)
    chef.register_tools([MORE])  # the naive way: the tools array changes
    chef.append(user("And define store."))
    after, reply = _send(client, chef, diagnostics=True)
    assert reply.diagnostics.cache_miss_reason.type == "tools_changed"  # the SDK's own type
    found = prefix_break(before, after, response=reply)
    assert found is not None and found.segment == "tools" and "tools edit" in found.cause
    (notice,) = found.provider
    assert (notice.kind, notice.reason) == ("cache_miss", "tools_changed")
    assert "the provider reported: the prompt cache missed: tools_changed" in found.message
    # the notice ingest kept is the same value, for hosts that pass notices instead
    assert prefix_break(before, after, notices=chef.notices[-1:]) == found


def test_a_miss_the_bytes_do_not_show_becomes_a_break_at_the_end() -> None:
    chef = _chef()
    before = chef.compile("anthropic", model=OPUS)
    chef.append(assistant("A store."), user("Thanks."))
    after = chef.compile("anthropic", model=OPUS)
    assert prefix_break(before, after) is None
    reply = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "diagnostics": {
            "cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": 1200}
        },
    }
    found = prefix_break(before, after, response=reply)
    assert found is not None and found.segment == "messages"
    whole = before.segments["system"] + before.segments["tools"]
    assert found.shared_bytes > len(whole.encode())  # everything before was shared
    assert "yet the provider reported a cache miss (messages_changed)" in found.cause
    assert found.provider[0].missed_tokens == 1200
    assert "about 1,200 input tokens" in found.message


def test_dropped_thinking_is_joined_but_makes_no_break_alone() -> None:
    chef = _chef()
    before = chef.compile("anthropic", model=OPUS)
    chef.set_system_prompt("Be very brief.")
    after = chef.compile("anthropic", model=OPUS)
    dropped = {
        "type": "message",
        "role": "assistant",
        "content": [],
        "input_transformations": [
            {
                "type": "thinking_dropped",
                "path": "messages.1.content.0",
                "reason": "prefix_binding_mismatch",
            }
        ],
    }
    found = prefix_break(before, after, response=dropped)
    assert found is not None and found.segment == "system"
    assert [(n.kind, n.path) for n in found.provider] == [
        ("thinking_dropped", "messages.1.content.0")
    ]
    assert "thinking_dropped (prefix_binding_mismatch) at messages.1.content.0" in found.message
    chef.append(assistant("ok"), user("more"))
    later = chef.compile("anthropic", model=OPUS)
    assert prefix_break(after, later, response=dropped) is None


def test_a_response_that_is_not_one_is_refused() -> None:
    chef = _chef()
    one = chef.compile("anthropic", model=OPUS)
    with pytest.raises(CorruptHistoryError, match="expected a provider response"):
        prefix_break(one, one, response=42)
    assert response_notices({"type": "message", "content": []}) == ()
