"""A malformed Gemini thought signature never bricks later requests (break-it p25).

``Part.thought_signature`` is ``bytes`` in google-genai (base64 text on the wire): a reply
whose signature is a number, an object, ``null`` or text that is not base64 used to be
stored as recorded and then fail every later request inside the SDK. Now, as for a
thinking block without its signature (docs/guides/history.md), a thought part carrying
one is dropped for the target and reported, and a text or call part keeps its content and
loses only the signature (reported; a call of the current turn then gets Gemini's
placeholder). Multi-turn through the official SDK client against `FakeGemini`.
"""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from google import genai
from google.genai import types as genai_types

from contextchef import ContextChef, tool_results, user
from contextchef.providers.gemini._render import SKIP_SIGNATURE, is_base64
from contextchef.session._request import CompiledRequest
from contextchef.testing import FakeGemini, FakeGeminiInteractions, httpx_for, text

MODEL = "gemini-3-pro"
BAD = [5, "@@not base64@@", {"a": 1}, None, "YWJ", "a b"]
GOOD = "c2lnbmF0dXJl"  # base64 of b"signature"


def get_rate(pair: str) -> str:
    """Exchange rate of a currency pair.

    Args:
        pair: Currency pair, like USD/EUR.
    """
    return "0.9"


def _reply(*parts: dict[str, Any]) -> dict[str, Any]:
    content = {"role": "model", "parts": list(parts)}
    return {"candidates": [{"content": content, "finishReason": "STOP"}], "responseId": "r1"}


def _run(chef: ContextChef, first: dict[str, Any]) -> tuple[FakeGemini, list[CompiledRequest]]:
    """Ingest `first` as received (JSON body), then two turns through the SDK client."""
    chef.compile("gemini", model=MODEL)
    calls = chef.ingest(first)
    if calls:
        chef.append(tool_results([chef.execute(c).result for c in calls]))
    fake = FakeGemini().script(text("ok"), text("done"))
    client = genai.Client(
        api_key="x",
        http_options=genai_types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai))),
    )
    requests: list[CompiledRequest] = []
    for i in range(2):
        if chef.history[-1].role != "user":
            chef.append(user(f"next {i}"))
        request = chef.compile("gemini", model=MODEL)
        requests.append(request)
        chef.ingest(client.models.generate_content(**request.payload))
    assert fake.violations == ()
    return fake, requests


def _sent_parts(fake: FakeGemini, request: int = 0) -> list[dict[str, Any]]:
    return [p for c in fake.requests[request].body["contents"] for p in c["parts"]]


@pytest.mark.parametrize("value", [*BAD, GOOD, "YWJj", "YW-_", "abc", ""])
def test_is_base64_agrees_with_the_sdk_part_type(value: object) -> None:
    try:
        genai_types.Part.model_validate({"text": "x", "thought_signature": value})
    except pydantic.ValidationError:
        sdk_accepts = False
    else:
        sdk_accepts = value is not None
    assert is_base64(value) is sdk_accepts


@pytest.mark.parametrize("signature", BAD)
def test_a_thought_part_with_a_malformed_signature_is_dropped_and_reported(
    signature: object,
) -> None:
    chef = ContextChef()
    chef.set_history([user("go")])
    thought = {"text": "hmm", "thought": True, "thoughtSignature": signature}
    fake, requests = _run(chef, _reply(thought, {"text": "answer"}))
    sent = _sent_parts(fake)
    assert {"text": "answer"} in sent
    assert not any(p.get("thought") for p in sent)
    assert "dropped_foreign_part" in [c.kind for c in requests[0].changes]
    assert chef.history[1].parts[0].kind == "reasoning"  # stored as received


def test_a_thought_part_with_a_sound_signature_is_sent_back_unchanged() -> None:
    chef = ContextChef()
    chef.set_history([user("go")])
    thought = {"text": "hmm", "thought": True, "thoughtSignature": GOOD}
    fake, requests = _run(chef, _reply(thought, {"text": "answer"}))
    assert _sent_parts(fake)[1] == thought
    assert [c.kind for c in requests[0].changes] == []


@pytest.mark.parametrize("signature", BAD)
def test_a_text_part_keeps_its_text_and_loses_only_a_malformed_signature(
    signature: object,
) -> None:
    chef = ContextChef()
    chef.set_history([user("go")])
    fake, requests = _run(chef, _reply({"text": "answer", "thoughtSignature": signature}))
    assert _sent_parts(fake)[1] == {"text": "answer"}
    kinds = [c.kind for c in requests[0].changes]
    assert kinds == ["dropped_bad_signature"]
    assert requests[0].changes[0].index == 1
    # later requests send the same bytes for that turn (append-only), still reported
    assert _sent_parts(fake, 1)[1] == {"text": "answer"}


@pytest.mark.parametrize("signature", BAD)
def test_a_call_with_a_malformed_signature_is_answered_and_replayed_with_the_placeholder(
    signature: object,
) -> None:
    chef = ContextChef()
    chef.register_tools([get_rate])
    chef.set_history([user("rate?")])
    call = {"functionCall": {"id": "c1", "name": "get_rate", "args": {"pair": "USD/EUR"}}}
    fake, requests = _run(chef, _reply({**call, "thoughtSignature": signature}))
    sent = _sent_parts(fake)
    replayed = next(p for p in sent if "functionCall" in p)
    assert replayed["thoughtSignature"] == SKIP_SIGNATURE
    assert any("functionResponse" in p for p in sent)
    kinds = [c.kind for c in requests[0].changes]
    assert kinds == ["dropped_bad_signature", "signed_foreign_call"]


def test_a_call_with_a_sound_signature_keeps_it() -> None:
    chef = ContextChef()
    chef.register_tools([get_rate])
    chef.set_history([user("rate?")])
    call = {"functionCall": {"id": "c1", "name": "get_rate", "args": {"pair": "USD/EUR"}}}
    fake, requests = _run(chef, _reply({**call, "thoughtSignature": GOOD}))
    replayed = next(p for p in _sent_parts(fake) if "functionCall" in p)
    assert replayed["thoughtSignature"] == GOOD
    assert requests[0].changes == ()


@pytest.mark.parametrize("signature", [5, {"a": 1}, None, ["x"]])
def test_an_interactions_thought_with_a_malformed_signature_is_dropped_and_reported(
    signature: object,
) -> None:
    chef = ContextChef()
    chef.set_history([user("go")])
    thought = {
        "type": "thought",
        "signature": signature,
        "summary": [{"type": "text", "text": "h"}],
    }
    output = {"type": "model_output", "content": [{"type": "text", "text": "answer"}]}
    chef.ingest({"id": "i1", "status": "completed", "steps": [thought, output]})
    fake = FakeGeminiInteractions().script(text("ok"), text("done"))
    client = genai.Client(
        api_key="x",
        http_options=genai_types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai))),
    )
    for i in range(2):
        chef.append(user(f"next {i}"))
        request = chef.compile("gemini-interactions", model="gemini-4-argon")
        if i == 0:
            assert request.payload["input"][1] == output
            assert "dropped_foreign_part" in [c.kind for c in request.changes]
        chef.ingest(client.interactions.create(**request.payload))
    assert fake.violations == ()
    assert not any(s.get("type") == "thought" for s in fake.requests[0].body["input"])
