"""``compile(extra=...)`` on the Gemini wires: a field the google-genai request refuses is refused.

``extra`` goes into ``config`` on ``generateContent`` (google-genai's
``GenerateContentConfig``: pydantic, unknown keys forbidden in every nested model) and
into the keyword arguments of ``client.interactions.create`` on Interactions (unknown
top-level keys refused). Such a field used to compile and then fail inside the SDK
(break-it 33 #7: ``generation_config``, the REST / Interactions name; ``metadata``;
``thinking_config: {"bogus": 1}``). Now compile raises a `UsageError` naming the field
and what is valid, and what compiles goes through the official SDK client to the fakes,
turn after turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pydantic
import pytest
from google import genai
from google.genai import types as genai_types

from contextchef import ContextChef, UsageError, user
from contextchef.providers.gemini import _fields as gemini_fields
from contextchef.providers.gemini_interactions import _fields as interactions_fields
from contextchef.testing import FakeGemini, FakeGeminiInteractions, text, tool_calls
from sdk_send import send

REFUSED: list[tuple[dict[str, Any], str, str]] = [
    ({"generation_config": {"temperature": 0.1}}, "generation_config", "REST / Interactions"),
    ({"generationConfig": {"temperature": 0.1}}, "generationConfig", "the REST name"),
    ({"metadata": {"user_id": "u"}}, "metadata", "labels"),
    ({"thinking_config": {"bogus": 1}}, "thinking_config", "ThinkingConfig takes"),
    ({"thinkingConfig": {"thinkingBudget": "lots"}}, "thinkingConfig", "thinkingBudget"),
    ({"temperature": "hot"}, "temperature", "valid number"),
    (
        {"safety_settings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "bogus": 1}]},
        "safety_settings",
        "SafetySetting takes category",
    ),
]


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([lookup])
    chef.set_history([user("look up a")])
    return chef


@pytest.mark.parametrize(("extra", "field", "says"), REFUSED)
def test_a_config_field_google_genai_refuses_is_refused_at_compile(
    extra: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(pydantic.ValidationError):  # what the SDK call did with it
        genai_types.GenerateContentConfig.model_validate(extra)
    with pytest.raises(UsageError) as caught:
        _chef().compile("gemini", model="gemini-2.5-flash", extra=extra)
    message = str(caught.value)
    assert f"extra field {field!r}" in message
    assert says in message


def test_an_unknown_config_field_is_told_what_config_takes() -> None:
    with pytest.raises(UsageError) as caught:
        _chef().compile("gemini", model="gemini-2.5-flash", extra={"metadata": {}})
    assert "it takes audio_timestamp" in str(caught.value)
    assert "thinking_config" in str(caught.value) and "top_p" in str(caught.value)


GOOD = {
    "temperature": 0.2,
    "topK": 3,
    "thinking_config": {"thinking_budget": 0},
    "labels": {"team": "agents"},
    "tool_config": {"function_calling_config": {"mode": "AUTO"}},
}


def test_config_fields_google_genai_takes_are_sent_every_turn() -> None:
    chef = _chef()
    fake = FakeGemini().script(tool_calls(("lookup", {"key": "a"})), text("a is set"))
    for _ in range(2):
        request = chef.compile("gemini", model="gemini-2.5-flash", extra=GOOD)
        chef.run_tools(chef.ingest(send("gemini", fake, request.payload)))
    assert fake.violations == ()
    for sent in fake.requests:
        config = sent.body["generationConfig"]
        assert config["temperature"] == 0.2 and config["topK"] == 3
        assert config["thinkingConfig"] == {"thinking_budget": 0}  # as SDK 3.6.1 writes it
        assert sent.body["labels"] == {"team": "agents"}


@pytest.fixture
def no_sdk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """google-genai not importable: the declared field sets are used."""
    monkeypatch.setattr(gemini_fields, "sdk_attribute", lambda module, name: None)
    monkeypatch.setattr(interactions_fields, "sdk_attribute", lambda module, name: None)
    gemini_fields._names.cache_clear()
    interactions_fields._names.cache_clear()
    yield
    gemini_fields._names.cache_clear()
    interactions_fields._names.cache_clear()


def test_without_the_sdk_the_declared_fields_are_checked(no_sdk: None) -> None:
    chef = _chef()
    with pytest.raises(UsageError, match="extra field 'generation_config'"):
        chef.compile("gemini", model="gemini-2.5-flash", extra={"generation_config": {}})
    with pytest.raises(UsageError, match="extra field 'metadata'"):
        chef.compile("gemini-interactions", model="gemini-3-flash", extra={"metadata": {}})
    # only the field names: nested values are the SDK's to check
    chef.compile("gemini", model="gemini-2.5-flash", extra={"thinkingConfig": {"bogus": 1}})


def test_the_declared_field_sets_match_the_installed_sdk() -> None:
    assert set(gemini_fields.DECLARED) == set(genai_types.GenerateContentConfig.model_fields)
    wanted = interactions_fields._names() - set(interactions_fields.CALL_OPTIONS)
    assert set(interactions_fields.DECLARED) == wanted


INTERACTIONS_REFUSED = [
    ({"metadata": {"user_id": "u"}}, "metadata"),
    ({"generationConfig": {"temperature": 0.1}}, "generationConfig"),
    ({"thinking_config": {"thinking_level": "low"}}, "thinking_config"),
]


@pytest.mark.parametrize(("extra", "field"), INTERACTIONS_REFUSED)
def test_an_interactions_field_create_refuses_is_refused_at_compile(
    extra: dict[str, Any], field: str
) -> None:
    chef = _chef()
    payload = chef.compile("gemini-interactions", model="gemini-3-flash").payload
    client = genai.Client(api_key="x")
    with pytest.raises(TypeError, match="unexpected keyword"):  # what the SDK call does
        client.interactions.create(**payload, **extra)
    with pytest.raises(UsageError, match=f"extra field {field!r}.*it takes agent"):
        chef.compile("gemini-interactions", model="gemini-3-flash", extra=extra)


def test_interactions_fields_create_takes_are_sent_every_turn() -> None:
    chef = _chef()
    extra = {"generation_config": {"temperature": 0.3}, "labels": {"team": "agents"}}
    fake = FakeGeminiInteractions().script(tool_calls(("lookup", {"key": "a"})), text("set"))
    for _ in range(2):
        request = chef.compile("gemini-interactions", model="gemini-3-flash", extra=extra)
        chef.run_tools(chef.ingest(send("gemini-interactions", fake, request.payload)))
    assert fake.violations == ()
    for sent in fake.requests:
        assert sent.body["generation_config"]["temperature"] == 0.3
        assert sent.body["labels"] == {"team": "agents"}
