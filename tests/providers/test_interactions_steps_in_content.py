"""A step inside a ``model_output``'s content is refused, never silently lost (break-it p13/p24).

The legacy Interactions shape (before the May 2026 ``steps`` revision) put calls in a flat
``outputs`` list; google-genai 3.6.1 turns a Lyria reply's ``outputs`` into one
``model_output`` step holding that list as its content, and keeps ``outputs`` as an extra
field otherwise. Either way a ``function_call`` ended up outside any step: ingest returned
no call and the call was lost. ``model_output`` content holds text and media only (the
SDK's ``Content`` union), so such a reply is now a `CorruptHistoryError` naming the block,
and the history is left as it was; later requests go on through the SDK client.
"""

from __future__ import annotations

from typing import Any

import pytest
from google import genai
from google.genai import types
from google.genai._gaos.types.interactions import step as sdk_step
from google.genai._gaos.types.interactions.interaction import Interaction

from contextchef import ContextChef, CorruptHistoryError, user
from contextchef.providers import from_interactions
from contextchef.providers.gemini_interactions._parse import WIRE_STEPS
from contextchef.testing import FakeGeminiInteractions, httpx_for, text

CALL = {"type": "function_call", "id": "g1", "name": "get_rate", "arguments": {"pair": "EUR"}}


def get_rate(pair: str) -> str:
    """Exchange rate of a currency pair.

    Args:
        pair: Currency pair, like USD/EUR.
    """
    return "0.9"


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([get_rate])
    chef.set_history([user("rate?")])
    chef.compile("gemini-interactions", model="gemini-4-argon")
    return chef


def _goes_on(chef: ContextChef) -> None:
    """Two more turns through the SDK client: the refused reply left nothing behind."""
    fake = FakeGeminiInteractions().script(text("ok"), text("done"))
    client = genai.Client(
        api_key="x",
        http_options=types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai))),
    )
    for i in range(2):
        if chef.history[-1].role != "user":
            chef.append(user(f"next {i}"))
        request = chef.compile("gemini-interactions", model="gemini-4-argon")
        chef.ingest(client.interactions.create(**request.payload))
    assert fake.violations == ()
    assert [m.role for m in chef.history] == ["user", "assistant", "user", "assistant"]


def test_wire_steps_are_the_sdk_step_union() -> None:
    assert frozenset(sdk_step._STEP_VARIANTS) == WIRE_STEPS


def test_a_legacy_lyria_reply_coerced_by_the_sdk_is_refused_naming_the_call() -> None:
    chef = _chef()
    reply = Interaction.model_validate(
        {
            "id": "int_1",
            "status": "completed",
            "model": "lyria-3-pro-preview",
            "outputs": [{"type": "text", "text": "calling"}, CALL],
        }
    )
    assert reply.steps[0].type == "model_output"  # type: ignore[index]  # the SDK's coercion
    with pytest.raises(CorruptHistoryError, match=r"content\[1\] is a 'function_call' step"):
        chef.ingest(reply)
    assert len(chef.history) == 1
    _goes_on(chef)


def test_a_legacy_outputs_reply_without_steps_is_refused() -> None:
    chef = _chef()
    reply = Interaction.model_validate(
        {"id": "int_1", "status": "completed", "model": "gemini-4-argon", "outputs": [CALL]}
    )
    with pytest.raises(CorruptHistoryError, match="legacy 'outputs'"):
        chef.ingest(reply)
    assert len(chef.history) == 1
    _goes_on(chef)


@pytest.mark.parametrize("kind", ["function_call", "thought", "google_search_call"])
def test_any_step_inside_model_output_content_is_refused(kind: str) -> None:
    chef = _chef()
    block: dict[str, Any] = {**CALL, "type": kind}
    body = {
        "id": "i",
        "status": "completed",
        "steps": [{"type": "model_output", "content": [block]}],
    }
    with pytest.raises(CorruptHistoryError, match=f"is a '{kind}' step"):
        chef.ingest(body)
    _goes_on(chef)


def test_a_history_with_a_call_inside_user_input_content_is_refused() -> None:
    steps = [{"type": "user_input", "content": [{"type": "text", "text": "hi"}, CALL]}]
    with pytest.raises(CorruptHistoryError, match=r"user_input content\[1\]"):
        from_interactions(steps)


def test_unknown_content_blocks_are_still_kept_as_recorded() -> None:
    step = {"type": "model_output", "content": [{"type": "future_block", "x": 1}]}
    parsed = from_interactions(
        [{"type": "user_input", "content": [{"type": "text", "text": "hi"}]}, step]
    )
    assert parsed.messages[1].parts[0].kind == "provider"
