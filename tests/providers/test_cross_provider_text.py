"""Small cross-provider rules: empty text blocks, canonical call arguments, blank queries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextchef import (
    TARGETS,
    ContextChef,
    ToolCall,
    UsageError,
    from_anthropic,
    from_gemini,
    load_demo_catalog,
    user,
)
from contextchef.providers.gemini._render import SKIP_SIGNATURE


def test_an_empty_gemini_text_with_a_signature_is_not_an_empty_anthropic_block() -> None:
    history = from_gemini(
        [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [{"text": "", "thoughtSignature": "c2ln"}, {"text": "ok"}]},
            {"role": "user", "parts": [{"text": "and?"}]},
        ]
    ).messages
    chef = ContextChef()
    chef.set_history(history)
    messages = chef.compile("anthropic").payload["messages"]
    blocks = [b for m in messages for b in m["content"] if isinstance(b, dict)]
    assert all(b.get("text") != "" for b in blocks if b.get("type") == "text")
    gemini = chef.compile("gemini").payload["contents"]
    assert {"text": "", "thought_signature": "c2ln"} in gemini[1]["parts"]  # Gemini keeps it


def test_arguments_given_as_a_mapping_are_canonical() -> None:
    call = ToolCall(id="c", name="f", arguments={"b": 1, "a": {"d": 2, "c": 3}})
    assert call.arguments == '{"a":{"c":3,"d":2},"b":1}'


def test_a_blank_query_is_an_argument_error() -> None:
    chef = ContextChef(default_defer=True)
    chef.register_catalog(load_demo_catalog())
    chef.set_history([user("find")])
    done = chef.execute(ToolCall(id="s", name="tool_search", arguments='{"queries": ["  "]}'))
    assert done.result.is_error
    assert done.result.content == "tool_search 'queries' must hold keywords; every query was blank."


def test_an_empty_conversation_is_a_usage_error_on_every_target() -> None:
    chef = ContextChef()
    chef.register_catalog(load_demo_catalog())
    for target in TARGETS:
        with pytest.raises(UsageError, match="conversation is empty"):
            chef.compile(target)
    chef.set_history([user("hi")])
    for target in TARGETS:
        assert chef.compile(target).appended == 1


GEMINI_IMAGE_TURN = [
    {"role": "user", "parts": [{"text": "draw a cat"}]},
    {
        "role": "model",
        "parts": [{"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}],
    },
    {"role": "user", "parts": [{"text": "thanks"}]},
]


def test_media_in_a_gemini_model_turn_is_a_note_where_the_target_takes_none() -> None:
    chef = ContextChef()
    chef.set_history(from_gemini(GEMINI_IMAGE_TURN).messages)
    for target in ("openai", "responses", "anthropic", "deepseek"):
        compiled = chef.compile(target)
        assert [c.kind for c in compiled.changes] == ["media_as_text"], target
        text = json.dumps(compiled.payload)
        assert "iVBORw0KGgo" not in text and "[image/png the model produced" in text
    gemini = chef.compile("gemini")
    assert gemini.changes == ()
    assert "inline_data" in json.dumps(gemini.payload["contents"][1])


def _anthropic_history() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "read a"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
            ],
        },
    ]


def read_file(path: str) -> str:
    """Read a file."""
    return path


def test_a_foreign_call_of_the_current_turn_gets_geminis_placeholder_signature() -> None:
    chef = ContextChef()
    chef.register_tools([read_file])
    chef.set_history(from_anthropic(_anthropic_history()).messages)
    compiled = chef.compile("gemini", model="gemini-3-pro-preview")
    assert [(c.kind, c.call_id) for c in compiled.changes] == [("signed_foreign_call", "t1")]
    parts = compiled.payload["contents"][1]["parts"]
    assert [p.get("thought_signature") for p in parts] == [SKIP_SIGNATURE, None]
    # an older turn is not validated by Gemini and is left alone
    chef.append(user("thanks"))
    later = chef.compile("gemini", model="gemini-3-pro-preview")
    assert "signed_foreign_call" not in [c.kind for c in later.changes]
    anthropic = chef.compile("anthropic")  # other targets: nothing to sign
    assert "signed_foreign_call" not in [c.kind for c in anthropic.changes]
