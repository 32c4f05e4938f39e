"""A tool call whose id is JSON null is read like one with an empty id, on every provider.

Regression (breakit1 s30): ``"id": ""`` was repaired at ingest with an id unique in the
session, while ``"id": null`` was refused with CorruptHistoryError on Anthropic, Chat
and Responses (Gemini already read a missing id).
"""

from __future__ import annotations

from typing import Any

import pytest

from contextchef import ContextChef, user


def echo(s: str) -> str:
    """Echo.

    Args:
        s: text
    """
    return "e:" + s


def _reply(target: str, turn: int, call_id: str | None) -> dict[str, Any]:
    args = {"s": str(turn)}
    if target == "anthropic":
        block = {"type": "tool_use", "id": call_id, "name": "echo", "input": args}
        return {
            "id": f"msg_{turn}",
            "type": "message",
            "role": "assistant",
            "content": [block, dict(block)],
            "stop_reason": "tool_use",
        }
    if target == "openai":
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": "echo", "arguments": f'{{"s": "{turn}"}}'},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call, dict(call)]}
        return {
            "id": f"c{turn}",
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        }
    if target == "responses":
        item = {
            "type": "function_call",
            "call_id": call_id,
            "name": "echo",
            "arguments": f'{{"s": "{turn}"}}',
        }
        return {
            "id": f"r{turn}",
            "object": "response",
            "status": "completed",
            "output": [item, dict(item)],
        }
    part = {
        "functionCall": {
            "name": "echo",
            "args": args,
            **({} if call_id is None else {"id": call_id}),
        }
    }
    return {
        "responseId": f"g{turn}",
        "candidates": [{"content": {"role": "model", "parts": [part, dict(part)]}}],
    }


def _run(target: str, call_id: str | None) -> tuple[list[str], str]:
    chef = ContextChef()
    chef.register_tools([echo])
    chef.set_history([user("go")])
    ids: list[str] = []
    for turn in range(2):
        calls = chef.ingest(_reply(target, turn, call_id))
        ids += [c.id for c in calls]
        results = chef.run_tools(calls)
        assert [r.content for r in results] == [f"e:{turn}", f"e:{turn}"]
    return ids, chef.compile(target, model="m").to_json()


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_a_null_call_id_gets_a_session_unique_id_like_an_empty_one(target: str) -> None:
    null_ids, null_request = _run(target, None)
    empty_ids, empty_request = _run(target, "")
    assert len(set(null_ids)) == 4 and all(null_ids)
    if target == "gemini":  # ids made for Gemini calls are never sent back to Gemini
        assert null_ids == [
            "gemini_call_1_0",
            "gemini_call_1_1",
            "gemini_call_3_0",
            "gemini_call_3_1",
        ]
        return
    assert (null_ids, null_request) == (empty_ids, empty_request)
    for call_id in null_ids:
        assert null_request.count(f'"{call_id}"') == 2  # the call and its result, paired
