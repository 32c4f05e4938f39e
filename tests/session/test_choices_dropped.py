"""More than one choice or candidate in a reply: the first kept, the rest reported.

Break-it 37 #8: a Chat Completions reply with ``n=2`` choices, or a Gemini reply with two
candidates, kept the first and left the others out with no notice. A conversation goes
on from one answer, so the first is still the one kept; `ContextChef.notices` now says
how many were left out (kind ``choices_dropped``) and how to ask for one.
"""

from __future__ import annotations

import logging

import pytest
from google.genai import types as genai_types
from openai.types.chat import ChatCompletion

from contextchef import ContextChef, user

CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-5.6",
    "choices": [
        {"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": t}}
        for i, t in enumerate(("CHOICE 0", "CHOICE 1", "CHOICE 2"))
    ],
}
GEMINI = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"text": t}]}, "finishReason": "STOP", "index": i}
        for i, t in enumerate(("CAND 0", "CAND 1"))
    ]
}


@pytest.mark.parametrize(
    ("reply", "kept", "left", "asked"),
    [
        (ChatCompletion.model_validate(CHAT), "CHOICE 0", 2, "n=1"),
        (
            genai_types.GenerateContentResponse.model_validate(GEMINI),
            "CAND 0",
            1,
            "candidateCount=1",
        ),
    ],
)
def test_the_first_is_kept_and_the_others_reported(
    reply: object, kept: str, left: int, asked: str, caplog: pytest.LogCaptureFixture
) -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        chef.ingest(reply)
    assert [p.text for m in chef.history[1:] for p in m.parts] == [kept]
    (notice,) = [n for n in chef.notices if n.kind == "choices_dropped"]
    assert notice.reason == str(left) and asked in notice.detail
    assert "choices_dropped" in caplog.text or notice.detail in caplog.text


def test_one_choice_gives_no_notice() -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    chef.ingest({**CHAT, "choices": CHAT["choices"][:1]})
    assert not [n for n in chef.notices if n.kind == "choices_dropped"]
