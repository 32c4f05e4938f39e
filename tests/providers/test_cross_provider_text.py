"""Small cross-provider rules: empty text blocks, canonical call arguments, blank queries."""

from __future__ import annotations

from contextchef import ContextChef, ToolCall, from_gemini, load_demo_catalog, user


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
