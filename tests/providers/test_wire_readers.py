"""Each wire reads its own responses, payloads and message lists (`WireReader`), in one place."""

from __future__ import annotations

from typing import Any

import pytest

from contextchef import CorruptHistoryError
from contextchef.analysis._diagnose import conversation_key, guess_target
from contextchef.providers import (
    PRESETS,
    TARGETS,
    WIRES,
    adapters,
    get_adapter,
    read_response,
    target_of,
    wire_reader,
)

RESPONSES: dict[str, dict[str, Any]] = {
    "anthropic": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "max_tokens",
    },
    "openai": {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "hi"},
                "finish_reason": "length",
            }
        ],
    },
    "responses": {
        "id": "resp_1",
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hi", "annotations": []}],
            }
        ],
    },
    "gemini": {
        "responseId": "g1",
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "MAX_TOKENS"}
        ],
    },
    "gemini-interactions": {
        "id": "v1_1",
        "status": "incomplete",
        "steps": [{"type": "model_output", "content": [{"type": "text", "text": "hi"}]}],
    },
}
"""One response per wire (by `Profile.wire`), each cut off at its token limit."""


@pytest.mark.parametrize("wire", sorted(RESPONSES))
def test_exactly_one_wire_detects_each_response(wire: str) -> None:
    assert [r.wire for r in WIRES if r.detect(RESPONSES[wire])] == [wire]


@pytest.mark.parametrize("target", TARGETS)
def test_the_adapter_reads_its_wire_response_as_ingest_does(target: str) -> None:
    adapter = get_adapter(target)
    response = RESPONSES[adapter.profile.wire]
    read = adapter.read_response(response)
    assert read == read_response(response)
    assert read.id == response.get("id", response.get("responseId"))
    assert [m.role for m in read.turn.messages] == ["assistant"]
    assert [n.kind for n in read.notices] == ["incomplete"]


def test_an_adapter_refuses_another_wire_response() -> None:
    with pytest.raises(CorruptHistoryError):
        get_adapter("gemini").read_response(RESPONSES["openai"])
    with pytest.raises(CorruptHistoryError, match="error instead of a turn"):
        get_adapter("openai").read_response({"error": {"code": "x", "message": "no"}})


def test_no_wire_detects_a_stranger() -> None:
    with pytest.raises(CorruptHistoryError, match="not a response of a supported API"):
        read_response({"hello": "world"})


def test_every_target_has_its_history_preset_and_default_model() -> None:
    for adapter in adapters().values():
        assert PRESETS[adapter.profile.history.name] is adapter.profile.history
        assert adapter.profile.default_model and adapter.profile.default_model != "model"
        assert adapter.profile.api_host
    assert set(PRESETS) == {"portable", *(a.profile.history.name for a in adapters().values())}
    assert set(TARGETS) <= set(PRESETS)  # today every target has rules of its own


def test_recordings_find_their_target_from_the_wire_and_the_url() -> None:
    assert target_of("openai") == "openai"
    assert target_of("openai", ["https://api.deepseek.com/chat/completions"]) == "deepseek"
    assert target_of("anthropic", ["https://api.deepseek.com/"]) == "anthropic"
    with pytest.raises(KeyError):
        target_of("telegraph")


@pytest.mark.parametrize(
    ("payload", "target"),
    [
        ({"contents": [], "model": "gemini-2.5-pro"}, "gemini"),
        ({"input": [], "instructions": "x"}, "responses"),
        ({"messages": [], "system": "x"}, "anthropic"),
        ({"messages": [], "tools": [{"name": "t", "input_schema": {}}]}, "anthropic"),
        ({"messages": [{"role": "user", "content": "hi"}]}, "openai"),
    ],
)
def test_request_payloads_are_detected_by_their_wire(payload: dict[str, Any], target: str) -> None:
    assert guess_target(payload) == target
    assert conversation_key(target) in payload
    assert wire_reader(get_adapter(target).profile.wire).detect_request(payload)
