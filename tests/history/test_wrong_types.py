"""Wrong types passed to public helpers are a `UsageError` naming the argument (break-it)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from contextchef import (
    ContextChef,
    CorruptHistoryError,
    ProviderPart,
    UsageError,
    assistant,
    estimate_tokens,
    tool_results,
    user,
)
from contextchef.history._compaction import cut_points
from contextchef.history._normalize import check_pairing, normalize
from contextchef.providers import from_anthropic, from_responses

CASES: list[tuple[str, Callable[[], Any], str]] = [
    ("assistant", lambda: assistant("", None), "tool_calls must be a list of ToolCall"),  # type: ignore[arg-type]
    ("assistant-item", lambda: assistant("", ["x"]), r"tool_calls\[0\] must be a ToolCall"),  # type: ignore[list-item]
    ("tool_results", lambda: tool_results(None), "results must be a list of ToolResult"),  # type: ignore[arg-type]
    ("normalize", lambda: normalize(None), "history must be a list of Message"),  # type: ignore[arg-type]
    ("check_pairing", lambda: check_pairing(["x"]), r"history\[0\] must be a Message"),  # type: ignore[list-item]
    ("cut_points-dict", lambda: cut_points({"a": 1}), "history must be a list of Message"),  # type: ignore[arg-type]
    ("cut_points-none", lambda: cut_points([None]), r"history\[0\] must be a Message"),  # type: ignore[list-item]
    ("estimate_tokens", lambda: estimate_tokens(b"x"), "takes text"),  # type: ignore[arg-type]
    # breakit9: a key that is not text was called "not valid Unicode text"
    (
        "provider-data-int-key",
        lambda: ProviderPart(provider="anthropic", data={1: "x"}),
        r"a key that is not text \(int; JSON keys are strings\)",
    ),
    (
        "provider-data-surrogate-key",
        lambda: ProviderPart(provider="anthropic", data={"\ud800": "x"}),
        r"a key that is not valid Unicode text \(a lone surrogate\)",
    ),
]


@pytest.mark.parametrize(("name", "call", "message"), CASES, ids=[c[0] for c in CASES])
def test_a_wrong_type_is_a_usage_error(name: str, call: Callable[[], Any], message: str) -> None:
    with pytest.raises((UsageError, CorruptHistoryError), match=message):
        call()  # a history item that is not a Message is a CorruptHistoryError


def test_session_methods_check_their_arguments() -> None:
    chef = ContextChef()
    chef.set_history([user("hi"), assistant("hello")])
    with pytest.raises(UsageError, match=r"keep_recent_turns must be an integer >= 0, got '2'"):
        chef.compact(lambda text: "summary", keep_recent_turns="2")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="offload takes a ToolResult"):
        chef.offload("text")  # type: ignore[arg-type]
    assert len(chef.history) == 2  # nothing changed


@pytest.mark.parametrize(
    "parse",
    [
        lambda: from_responses(
            [{"type": "reasoning", "id": "rs_1", "summary": 5, "encrypted_content": "e"}]
        ),
        lambda: from_anthropic(
            [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": None, "data": "aGk="},
                        }
                    ],
                }
            ]
        ),
        lambda: ContextChef().ingest({"object": "response", "output": 1.5}),
    ],
    ids=["reasoning-summary", "image-media-type", "responses-output"],
)
def test_malformed_provider_data_never_escapes_the_hierarchy(parse: Callable[[], Any]) -> None:
    with contextlib.suppress(CorruptHistoryError):
        parse()  # kept as recorded (noted) or refused: both are fine, a TypeError is not
