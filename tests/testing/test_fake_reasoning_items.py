"""`FakeResponses` refuses a ``reasoning`` item with no following item of its turn.

OpenAI's 400, as recorded in continuedev/continue#8933, vercel/ai#7099 and
mastra-ai/mastra#14048: "Item 'rs_…' of type 'reasoning' was provided without its required
following item." (`contextchef.testing.responses_reasoning_followed`).
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from contextchef.testing import (
    RESPONSES_RULES,
    FakeResponses,
    httpx_for,
    responses_reasoning_followed,
    text,
)

HX = httpx_for(anthropic)
USER = {"type": "message", "role": "user", "content": "Go."}
RS = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}
RS2 = {**RS, "id": "rs_2"}
MSG = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
}
CALL = {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"}
OUT = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
WORDS = "Item 'rs_1' of type 'reasoning' was provided without its required following item."


def _problems(*items: dict[str, Any]) -> list[str]:
    return list(responses_reasoning_followed({"model": "m", "input": list(items)}, []))


@pytest.mark.parametrize(
    "items",
    [
        (USER, RS, USER),  # a reply cut while reasoning, then the next user message
        (USER, RS),  # the last item
        (USER, MSG, RS, USER),  # after the turn's message: nothing of the turn follows
        (USER, RS, OUT),  # a tool's output is the client's
        (USER, RS, {"role": "developer", "content": "x"}),
        (USER, RS, RS2, USER),  # a second reasoning item is no following item
    ],
)
def test_a_reasoning_item_with_nothing_of_its_turn_after_it_is_refused(
    items: tuple[dict[str, Any], ...],
) -> None:
    assert _problems(*items) == [WORDS]


@pytest.mark.parametrize(
    "items",
    [
        (USER, RS, MSG, USER),
        (USER, RS, CALL, OUT),
        (USER, RS, RS2, MSG),  # each is followed within the turn
        (USER, RS, {"role": "assistant", "content": "Done."}),  # an easy message
        (USER, RS, {"type": "web_search_call", "id": "ws_1", "status": "completed"}),
        (USER, MSG, USER),
    ],
)
def test_a_reasoning_item_followed_within_its_turn_is_accepted(
    items: tuple[dict[str, Any], ...],
) -> None:
    assert _problems(*items) == []


def test_the_rule_is_on_by_default_and_worded_as_openai_words_it() -> None:
    assert responses_reasoning_followed in RESPONSES_RULES
    fake = FakeResponses().script(text("ok"))
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-5.5", input=[USER, RS, USER])  # type: ignore[list-item]
    assert WORDS in str(caught.value)
    assert [v.rule for v in fake.violations] == ["responses_reasoning_followed"]
    reply = client.responses.create(model="gpt-5.5", input=[USER, RS, MSG, USER])  # type: ignore[list-item]
    assert reply.output_text == "ok"
