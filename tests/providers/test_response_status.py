"""A response that failed raises; one cut off, refused or filtered leaves a notice.

Regression (breakit1 s37/s38): a Responses reply with ``status: "failed"`` (and its
``error``) or ``"incomplete"`` was ingested silently and the agent loop ended as if the
model had answered. Now a failed response (or any provider error body) raises
`CorruptHistoryError` naming the error, and a turn that did not end normally is ingested
with a ``ResponseNotice(kind="incomplete")`` carrying the provider's own reason, the same
on every target.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from contextchef import ContextChef, CorruptHistoryError, user


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.set_history([user("Open an issue about the flaky test.")])
    return chef


def _responses(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": status, "model": "m", **extra}


FAILED = [
    (
        _responses("failed", error={"code": "server_error", "message": "The model crashed"}),
        'the Responses response has status "failed" (server_error: The model crashed)',
    ),
    (
        _responses("in_progress", output=[]),
        'the Responses response has status "in_progress" (no error given)',
    ),
    (
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        "the provider returned an error instead of a turn (overloaded_error: Overloaded)",
    ),
    (
        {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}},
        "the provider returned an error instead of a turn (rate_limit: Rate limit reached)",
    ),
    (
        {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}},
        "the provider returned an error instead of a turn (503: The model is overloaded.)",
    ),
    (
        {"promptFeedback": {"blockReason": "SAFETY"}},
        "Gemini blocked the prompt before answering (promptFeedback.blockReason SAFETY)",
    ),
]


@pytest.mark.parametrize(("response", "message"), FAILED)
def test_a_failed_response_raises_naming_the_error_and_leaves_history_alone(
    response: dict[str, Any], message: str
) -> None:
    chef = _chef()
    before = chef.history
    with pytest.raises(CorruptHistoryError) as raised:
        chef.ingest(response)
    assert str(raised.value).startswith(message)
    assert chef.history == before and chef.notices == ()


def _text_turn(target: str, reason: str) -> dict[str, Any]:
    if target == "responses":
        return _responses(
            "incomplete",
            incomplete_details={"reason": reason},
            output=[{"type": "reasoning", "id": "rs_1", "summary": []}],
        )
    if target == "anthropic":
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "Partial"}],
            "stop_reason": reason,
        }
    if target == "openai":
        return {
            "id": "c1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": reason,
                    "message": {"role": "assistant", "content": "Partial"},
                }
            ],
        }
    return {
        "responseId": "g1",
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "Partial"}]}, "finishReason": reason}
        ],
    }


STOPS = [
    ("responses", "max_output_tokens", "the Responses reply is incomplete: max_output_tokens"),
    ("responses", "content_filter", "the Responses reply is incomplete: content_filter"),
    ("anthropic", "max_tokens", "the reply was cut off at max_tokens"),
    ("anthropic", "refusal", "the model refused to answer (stop_reason refusal)"),
    ("openai", "length", "the reply was cut off at the token limit (finish_reason length)"),
    (
        "openai",
        "content_filter",
        "the reply was withheld by the content filter (finish_reason content_filter)",
    ),
    ("gemini", "MAX_TOKENS", "the Gemini reply ended early: finishReason MAX_TOKENS"),
    ("gemini", "SAFETY", "the Gemini reply ended early: finishReason SAFETY"),
]


@pytest.mark.parametrize(("target", "reason", "detail"), STOPS)
def test_a_turn_that_did_not_end_normally_is_ingested_with_a_notice_and_a_log_line(
    target: str, reason: str, detail: str, caplog: pytest.LogCaptureFixture
) -> None:
    chef = _chef()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        assert chef.ingest(_text_turn(target, reason)) == ()
    assert [m.role for m in chef.history] == ["user", "assistant"]
    assert [(n.kind, n.reason, n.detail) for n in chef.notices] == [("incomplete", reason, detail)]
    assert f"contextchef: {detail}" in caplog.messages


@pytest.mark.parametrize(
    ("target", "reason"),
    [("anthropic", "end_turn"), ("openai", "stop"), ("gemini", "STOP")],
)
def test_a_normal_end_leaves_no_notice(target: str, reason: str) -> None:
    chef = _chef()
    chef.ingest(_text_turn(target, reason))
    chef.ingest(_responses("completed", id="resp_2", output=[]))
    assert chef.notices == ()


def test_a_chat_refusal_leaves_a_notice() -> None:
    chef = _chef()
    chef.ingest(
        {
            "id": "c3",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": None, "refusal": "I can't."},
                }
            ],
        }
    )
    assert [(n.kind, n.reason, n.detail) for n in chef.notices] == [
        ("incomplete", "refusal", "the model refused: I can't.")
    ]
