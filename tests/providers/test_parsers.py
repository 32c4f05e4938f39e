"""Parsers (provider history -> IR) and adapters (IR -> wire) as inverse pure functions.

Also the history cases that concern rendering: history-04 (DeepSeek reasoning_content),
history-06 (Gemini parallel responses in one Content) and history-08 (Responses
reasoning item followed directly by its call).
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import load_case
from contextchef import CorruptHistoryError, Message, ToolCall, ToolResult
from contextchef.history._messages import (
    MediaPart,
    Part,
    ProviderPart,
    ReasoningPart,
    TextPart,
    message_from_dict,
)
from contextchef.history._normalize import normalize
from contextchef.providers import (
    PRESETS,
    TARGETS,
    ParsedHistory,
    RequestOptions,
    from_anthropic,
    from_gemini,
    from_interactions,
    from_openai,
    from_responses,
    get_adapter,
)
from sdk_check import sdk_problems

PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5Erk"
    "Jggg=="
)

# -- one IR history per target, using every part kind the target can carry ----------------

REASONING = {
    "anthropic": ReasoningPart(
        provider="anthropic",
        text="Read the file first.",
        provider_data={
            "provider": "anthropic",
            "block": {"type": "thinking", "thinking": "Read the file first.", "signature": "c2ln"},
        },
    ),
    "responses": ReasoningPart(
        provider="openai",
        provider_data={
            "provider": "responses",
            "item": {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [],
                "encrypted_content": "gAAAA_opaque",
            },
        },
    ),
    "gemini": ReasoningPart(
        provider="gemini",
        text="Read the file first.",
        provider_data={
            "provider": "gemini",
            "part": {"text": "Read the file first.", "thought": True, "thoughtSignature": "c2ln"},
        },
    ),
    "deepseek": ReasoningPart(provider="deepseek", text="Read the file first."),
    "gemini-interactions": ReasoningPart(
        provider="gemini-interactions",
        text="Read the file first.",
        provider_data={
            "provider": "gemini-interactions",
            "step": {
                "type": "thought",
                "signature": "c2ln",
                "summary": [{"type": "text", "text": "Read the file first."}],
            },
        },
    ),
}
PROVIDER_PARTS = {
    "anthropic": ProviderPart(
        provider="anthropic",
        data={"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
    ),
    "openai": ProviderPart(provider="openai", data={"role": "developer", "content": "Be brief."}),
    "responses": ProviderPart(
        provider="responses", data={"type": "message", "role": "developer", "content": "Be brief."}
    ),
    "gemini": ProviderPart(
        provider="gemini", data={"executable_code": {"language": "PYTHON", "code": "print(1)"}}
    ),
}
PROVIDER_PARTS["deepseek"] = PROVIDER_PARTS["openai"]
PROVIDER_PARTS["gemini-interactions"] = ProviderPart(
    provider="gemini-interactions",
    data={"type": "code_execution_call", "id": "ce1", "arguments": {"code": "print(1)"}},
)
ERROR_FLAG = {
    "anthropic",
    "gemini",
    "gemini-interactions",
}  # Chat and Responses results have no error flag


def history(target: str) -> list[Message]:
    """A conversation with media, reasoning, a parallel batch, an error and a provider part."""
    error = target in ERROR_FLAG
    calls = [
        ToolCall(id="call_1", name="read_file", arguments='{"path": "a.py"}'),
        ToolCall(id="call_2", name="search", arguments='{"q":"café ☕","n":2}'),
    ]
    # Chat and Responses keep a provider part as its own message / item.
    own_message = target in ("openai", "deepseek", "responses")
    return [
        Message(
            role="user",
            parts=(
                TextPart(text="What is in these?"),
                MediaPart(media_type="image/png", data=PNG),
                MediaPart(media_type="image/*", url="https://example.com/cat.png"),
            ),
        ),
        *([Message(role="user", parts=(PROVIDER_PARTS[target],))] if own_message else []),
        Message(
            role="assistant",
            parts=(
                *([REASONING[target]] if target in REASONING else []),
                TextPart(text="Let me look."),
                *([] if own_message else [PROVIDER_PARTS[target]]),
                *calls,
            ),
        ),
        Message(
            role="user",
            parts=(
                ToolResult(call_id="call_1", name="read_file", content="print('hi')"),
                ToolResult(call_id="call_2", name="search", content="HTTP 503", is_error=error),
            ),
        ),
        Message(role="assistant", parts=(TextPart(text="Two images; the search failed."),)),
        Message(role="user", parts=(TextPart(text="Thanks."),)),
    ]


def render(target: str, system: str, messages: list[Message] | tuple[Message, ...]) -> Any:
    adapter: Any = get_adapter(target)
    if target == "anthropic":
        return adapter.render_messages(messages)
    if target in ("openai", "deepseek"):
        head = [{"role": "system", "content": system}] if system else []
        return head + adapter.render_messages(messages)
    if target == "responses":
        return adapter.render_input(messages)
    if target == "gemini-interactions":
        return adapter.render_messages(messages)
    return adapter.render_contents(messages)


def parse(target: str, system: str, wire: Any) -> ParsedHistory:
    if target == "anthropic":
        return from_anthropic(wire, system=system)
    if target in ("openai", "deepseek"):
        return from_openai(wire)
    if target == "responses":
        return from_responses(wire, instructions=system)
    if target == "gemini-interactions":
        return from_interactions(wire, system_instruction=system or None)
    return from_gemini(wire, system_instruction=system)


def semantic(part: Part) -> Part:
    """A part without replay hints (reasoning and provider parts are verbatim anyway)."""
    if isinstance(part, (ReasoningPart, ProviderPart)):
        return part
    if isinstance(part, ToolResult):
        media = tuple(dataclasses.replace(m, provider_data=None) for m in part.media)
        return dataclasses.replace(part, provider_data=None, media=media)
    if isinstance(part, ToolCall):  # Anthropic and Gemini send an object, not the text
        arguments = json.dumps(part.parsed_arguments())
        return dataclasses.replace(part, provider_data=None, arguments=arguments)
    return dataclasses.replace(part, provider_data=None)


def semantic_history(messages: Any) -> list[Message]:
    return [Message(role=m.role, parts=tuple(map(semantic, m.parts))) for m in messages]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("target", TARGETS)
def test_ir_to_wire_to_ir(target: str) -> None:
    messages = history(target)
    parsed = parse(target, "Be careful.", render(target, "Be careful.", messages))
    assert parsed.system == "Be careful."
    assert semantic_history(parsed.messages) == semantic_history(messages)


@pytest.mark.parametrize("target", TARGETS)
def test_wire_to_ir_to_wire(target: str) -> None:
    wire = render(target, "Be careful.", history(target))
    parsed = parse(target, "Be careful.", wire)
    assert _dumps(render(target, parsed.system, parsed.messages)) == _dumps(wire)
    assert not [n for n in parsed.notes if "does not render back" in n]


@pytest.mark.parametrize("target", TARGETS)
def test_full_history_meets_sdk_types(target: str) -> None:
    payload = get_adapter(target).render_request(
        system="Be careful.",
        tools=[],
        messages=history(target),
        options=RequestOptions(model="test-model"),
    )
    assert sdk_problems(target, payload) == []


@pytest.mark.parametrize("target", TARGETS)
def test_other_providers_reasoning_is_never_sent(target: str) -> None:
    for source, reasoning in REASONING.items():
        if source == target:
            continue
        msg = Message(role="assistant", parts=(reasoning, TextPart(text="ok")))
        text = _dumps(render(target, "", [msg]))
        assert "Read the file first." not in text and "c2ln" not in text, source
        assert "gAAAA_opaque" not in text, source


@pytest.mark.parametrize("target", TARGETS)
def test_other_providers_parts_are_dropped(target: str) -> None:
    for source, part in PROVIDER_PARTS.items():
        msg = Message(role="assistant", parts=(part, TextPart(text="ok")))
        text = _dumps(render(target, "", [msg]))
        same = source == target or {source, target} == {"openai", "deepseek"}
        assert ("print(1)" in text or "Be brief." in text or "srvtoolu_1" in text) is same


# -- exact wire shapes -----------------------------------------------------------------------


def test_anthropic_parses_every_block_kind() -> None:
    wire = [
        {"role": "user", "content": "plain string"},
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "ZW5j"},
                {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}},
                {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": []},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {"b": 1.0, "a": [1]}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "tool_reference", "tool_name": "g"}],
                    "is_error": False,
                },
                {
                    "type": "document",
                    "source": {"type": "url", "url": "https://example.com/a.pdf"},
                    "title": "A",
                },
            ],
        },
    ]
    parsed = from_anthropic(
        wire, system=[{"type": "text", "text": "S1"}, {"type": "text", "text": "S2"}]
    )
    assert parsed.system == "S1\n\nS2"
    first, second, third = parsed.messages
    assert first.parts == (
        TextPart(text="plain string", provider_data={"provider": "anthropic", "as_string": True}),
    )
    kinds = [p.kind for p in second.parts]
    assert kinds == ["reasoning", "provider", "provider", "tool_call"]
    call = second.parts[3]
    assert isinstance(call, ToolCall) and call.arguments == '{"b":1.0,"a":[1]}'
    result, document = third.parts
    # a result of tool_reference blocks: the names, and a sentence for other targets
    assert isinstance(result, ToolResult) and result.name == "f" and result.references == ("g",)
    assert result.content == "Tools found (now available to call by name): g"
    assert isinstance(document, MediaPart) and document.media_type == "application/pdf"
    assert get_adapter("anthropic").render_messages(parsed.messages) == wire  # type: ignore[attr-defined]
    # Edited arguments win over the recorded input object.
    edited = dataclasses.replace(call, arguments='{"b":2}')
    block = get_adapter("anthropic").render_messages(  # type: ignore[attr-defined]
        [Message(role="assistant", parts=(edited,))]
    )[0]["content"][0]
    assert block["input"] == {"b": 2}


def test_media_in_tool_results_per_target() -> None:
    result = ToolResult(
        call_id="c1",
        name="shot",
        content="a screenshot",
        media=(MediaPart(media_type="image/png", data=PNG),),
    )
    messages = [
        Message(role="assistant", parts=(ToolCall(id="c1", name="shot"),)),
        Message(role="user", parts=(result, TextPart(text="What do you see?"))),
    ]
    anthropic = render("anthropic", "", messages)[1]["content"][0]
    assert anthropic["content"] == [
        {"type": "text", "text": "a screenshot"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    ]
    chat = render("openai", "", messages)
    assert [m["role"] for m in chat] == ["assistant", "tool", "user", "user"]
    assert chat[1] == {"role": "tool", "tool_call_id": "c1", "content": "a screenshot"}
    assert chat[2]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }
    assert chat[3] == {"role": "user", "content": "What do you see?"}
    responses = render("responses", "", messages)[1]
    assert responses["output"] == [
        {"type": "input_text", "text": "a screenshot"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
    ]
    gemini = render("gemini", "", messages)[1]["parts"][0]["function_response"]
    assert gemini["parts"] == [{"inline_data": {"mime_type": "image/png", "data": PNG}}]
    for target in TARGETS:
        payload = get_adapter(target).render_request(
            system="s", tools=[], messages=messages, options=RequestOptions(model="m")
        )
        assert sdk_problems(target, payload) == [], target


def test_gemini_accepts_camel_and_snake_case() -> None:
    camel = [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "f", "args": {"x": 1}}, "thoughtSignature": "c2ln"}
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "f", "response": {"result": "ok"}}}],
        },
    ]
    snake = [
        {
            "role": "model",
            "parts": [
                {"function_call": {"name": "f", "args": {"x": 1}}, "thought_signature": "c2ln"}
            ],
        },
        {
            "role": "user",
            "parts": [{"function_response": {"name": "f", "response": {"result": "ok"}}}],
        },
    ]
    assert from_gemini(camel).messages == from_gemini(snake).messages
    call, result = (m.parts[0] for m in from_gemini(camel).messages)
    assert isinstance(call, ToolCall) and isinstance(result, ToolResult)
    assert result.call_id == call.id and result.content == "ok"
    rendered = render("gemini", "", from_gemini(camel).messages)
    assert rendered == [  # no invented ids on the wire; the recorded response object back
        {
            "role": "model",
            "parts": [
                {"function_call": {"name": "f", "args": {"x": 1}}, "thought_signature": "c2ln"}
            ],
        },
        {
            "role": "user",
            "parts": [{"function_response": {"name": "f", "response": {"result": "ok"}}}],
        },
    ]


def test_chat_positional_system_messages_stay_in_place() -> None:
    wire = [
        {"role": "system", "content": "first"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "second"},
        {"role": "user", "content": "again"},
    ]
    parsed = from_openai(wire)
    assert parsed.system == "first"
    assert parsed.messages[1].parts == (ProviderPart(provider="openai", data=wire[2]),)
    assert any("system message" in n for n in parsed.notes)
    assert render("openai", parsed.system, parsed.messages) == wire


# -- errors ------------------------------------------------------------------------------------

BAD: list[tuple[Callable[[Any], ParsedHistory], Any, int, str]] = [
    (
        from_anthropic,
        [{"role": "user", "content": "x"}, {"role": "system", "content": "y"}],
        1,
        "role",
    ),
    (
        from_anthropic,
        [{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}],
        0,
        "tool_use block in a user message",
    ),
    (from_openai, [{"role": "user", "content": "x"}, {"role": "robot", "content": "y"}], 1, "role"),
    (
        from_openai,
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": 7, "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            }
        ],
        0,
        "'id' must be a string",
    ),
    (from_openai, [{"role": "tool", "content": "x"}], 0, "tool_call_id"),
    (
        from_responses,
        [{"type": "function_call", "call_id": "c", "name": 7, "arguments": "{}"}],
        0,
        "'name'",
    ),
    (from_responses, [{"content": "no type, no role"}], 0, "'type'"),
    (
        from_gemini,
        [{"role": "user", "parts": [{"function_call": {"name": "f", "args": {}}}]}],
        0,
        "function_call part in a user content",
    ),
    (from_gemini, [{"role": "tool", "parts": []}], 0, "role"),
    # breakit8 01: reasoning replayed verbatim with a field of the wrong type was stored,
    # then every later request was refused by the SDK or the API
    *[
        (
            from_anthropic,
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{"type": "thinking", **block}]},
            ],
            1,
            words,
        )
        for block, words in [
            ({"thinking": 7, "signature": "s"}, "'thinking' must be a string"),
            ({"thinking": None, "signature": "s"}, "'thinking' must be a string"),
        ]
    ],
    *[
        (
            from_gemini,
            [
                {"role": "user", "parts": [{"text": "q"}]},
                {"role": "model", "parts": [part]},
            ],
            1,
            words,
        )
        for part, words in [
            ({"text": 7, "thought": True}, "'text' must be a string"),
            ({"text": "t", "thought": "x"}, "'thought' must be true or false"),
            ({"text": "t", "thought": []}, "'thought' must be true or false"),
            # breakit9 01: a part kept verbatim with a field of the wrong type
            ({"thoughtSignature": 123}, "'thought_signature' must be a string"),
            ({"thoughtSignature": ["x"]}, "'thought_signature' must be a string"),
            ({"executableCode": {"code": 5}}, "executable_code.code must be a string"),
            ({"executableCode": "print(1)"}, "'executable_code' must be an object"),
            ({"codeExecutionResult": {"outcome": 1}}, "code_execution_result.outcome must be"),
            ({"videoMetadata": "x", "thoughtSignature": "s"}, "'video_metadata' must be an object"),
            ({"videoMetadata": "x", "text": "a"}, "'video_metadata' must be an object"),
        ]
    ],
    *[
        (
            lambda wire: from_interactions(wire),
            [{"type": "user_input", "content": [{"type": "text", "text": "q"}]}, step],
            1,
            words,
        )
        for step, words in [
            ({"type": "thought", "summary": 7, "signature": "s"}, "'summary' must be a list"),
            ({"type": "thought", "summary": "plain", "signature": "s"}, "'summary' must be"),
            ({"type": "thought", "summary": {}, "signature": "s"}, "'summary' must be a list"),
            (
                {"type": "thought", "summary": [{"type": "text", "text": 7}], "signature": "s"},
                "'summary' must be a list of text blocks",
            ),
        ]
    ],
]


@pytest.mark.parametrize(("parse_fn", "wire", "index", "words"), BAD)
def test_corrupt_history_names_the_message(
    parse_fn: Callable[[Any], ParsedHistory], wire: Any, index: int, words: str
) -> None:
    with pytest.raises(CorruptHistoryError) as info:
        parse_fn(wire)
    assert info.value.index == index
    assert f"message {index}" in str(info.value) and words in str(info.value)


@pytest.mark.parametrize("parse_fn", [from_anthropic, from_openai, from_responses, from_gemini])
def test_history_must_be_a_list(parse_fn: Callable[[Any], ParsedHistory]) -> None:
    with pytest.raises(CorruptHistoryError, match="must be a list"):
        parse_fn({"role": "user"})


# -- the JSON form of every part kind ---------------------------------------------------------

json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
# keys other than the replay hints a renderer reads (a recorded wire object under "block",
# "part", ...; the wire key order under "keys"): those must have their shape, and a part
# refuses them otherwise (tests/session/test_snapshot_integrity.py)
hint_free_key = st.text(max_size=6).filter(
    lambda k: k not in {"block", "extra", "file_extra", "item", "message", "part", "step", "keys"}
)
provider_data = st.none() | st.dictionaries(hint_free_key, json_value, max_size=3).map(
    lambda d: {"provider": "anthropic", **d}
)
text = st.text(max_size=20)
name = st.text(min_size=1, max_size=20)  # a wire name is never empty
media = st.builds(
    lambda mt, which, value, pd: MediaPart(
        media_type=mt,
        provider_data=pd,
        **{which: base64.b64encode(value.encode()).decode() if which == "data" else value},
    ),
    st.sampled_from(["image/png", "application/pdf", "image/*"]),
    st.sampled_from(["url", "file_id", "data"]),
    name,  # data: base64 of it
    provider_data,
)
parts = st.one_of(
    st.builds(lambda t, pd: TextPart(text=t, provider_data=pd), text, provider_data),
    media,
    st.builds(
        lambda p, t, pd: ReasoningPart(provider=p, text=t, provider_data=pd),
        st.sampled_from(["anthropic", "openai", "gemini", "deepseek"]),
        text,
        provider_data,
    ),
    st.builds(
        lambda i, n, a, pd: ToolCall(id=i, name=n, arguments=a, provider_data=pd),
        text,
        name,
        text,
        provider_data,
    ),
    st.builds(
        lambda i, n, c, e, m, pd: ToolResult(
            call_id=i, name=n, content=c, is_error=e, media=tuple(m), provider_data=pd
        ),
        text,
        text,
        text,
        st.booleans(),
        st.lists(media, max_size=2),
        provider_data,
    ),
    st.builds(
        lambda p, d: ProviderPart(provider=p, data=d),
        st.sampled_from(["anthropic", "responses"]),
        st.dictionaries(st.text(max_size=6), json_value, max_size=3),
    ),
)


@given(st.sampled_from(["user", "assistant"]), st.lists(parts, max_size=6))
def test_message_json_form_round_trips(role: str, part_list: list[Part]) -> None:
    allowed = [
        p
        for p in part_list
        if not isinstance(p, (ReasoningPart, ToolCall) if role == "user" else ToolResult)
    ]
    message = Message(role=role, parts=tuple(allowed))  # type: ignore[arg-type]
    assert message_from_dict(json.loads(json.dumps(message.to_dict()))) == message


def test_parsed_history_json_form_round_trips() -> None:
    for target in TARGETS:
        parsed = parse(target, "", render(target, "", history(target)))
        for message in parsed.messages:
            assert message_from_dict(json.loads(json.dumps(message.to_dict()))) == message


# -- history cases -----------------------------------------------------------------------------


def neutral_history(raw: list[dict[str, Any]]) -> list[Message]:
    """The cases' neutral chat shape as IR (consecutive tool messages: one user message)."""
    out: list[Message] = []
    names: dict[str, str] = {}
    for item in raw:
        if item["role"] == "tool":
            result = ToolResult(
                call_id=item["tool_call_id"],
                name=names[item["tool_call_id"]],
                content=item["content"],
            )
            if out and out[-1].role == "user" and out[-1].tool_results:
                out[-1] = Message(role="user", parts=(*out[-1].parts, result))
            else:
                out.append(Message(role="user", parts=(result,)))
            continue
        parts: list[Part] = [
            ReasoningPart(provider=r["provider"], text=r["text"])
            for r in item.get("reasoning") or []
        ]
        if item["content"]:
            parts.append(TextPart(text=item["content"]))
        for call in item.get("tool_calls") or []:
            names[call["id"]] = call["name"]
            parts.append(
                ToolCall(id=call["id"], name=call["name"], arguments=json.dumps(call["arguments"]))
            )
        out.append(Message(role=item["role"], parts=tuple(parts)))
    return out


def test_history_04_deepseek_reasoning_content() -> None:
    case = load_case("history-04")
    assert case["input"]["ops"] == [{"op": "compile", "provider": "deepseek"}]
    messages = neutral_history(case["input"]["history"])
    payload = get_adapter("deepseek").render_request(
        system="", tools=[], messages=messages, options=RequestOptions(model="deepseek-reasoner")
    )
    sent = payload["messages"]
    assert [m["role"] for m in sent] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    # messages[1] (assistant, tool_calls call_1): reasoning byte-identical
    assert sent[1]["tool_calls"][0]["id"] == "call_1"
    assert sent[1]["reasoning_content"] == "Need current conditions first; call get_weather."
    # messages[3] (assistant, tool_calls call_2): key present with value '' (not omitted/null)
    assert sent[3]["tool_calls"][0]["id"] == "call_2"
    assert "reasoning_content" in sent[3] and sent[3]["reasoning_content"] == ""
    # messages[5] (final assistant of the same span): its reasoning is kept
    assert sent[5]["reasoning_content"] == "80% chance and rain expected in the next hours."
    # every assistant message that has tool_calls has a string-valued reasoning_content key
    for m in sent:
        if m["role"] == "assistant" and m.get("tool_calls"):
            assert isinstance(m.get("reasoning_content"), str)
    # arguments are JSON strings; tool messages keep their tool_call_id pairing
    calls = [c for m in sent for c in m.get("tool_calls", [])]
    assert all(isinstance(c["function"]["arguments"], str) for c in calls)
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"city": "Oslo"},
        {"city": "Oslo", "hours": 6},
    ]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["call_1", "call_2"]
    # the same history for a profile without reasoning_content (plain openai): no such key
    plain = get_adapter("openai").render_request(
        system="", tools=[], messages=messages, options=RequestOptions(model="gpt")
    )
    assert all("reasoning_content" not in m for m in plain["messages"])
    assert "Need current conditions" not in _dumps(plain)
    assert sdk_problems("deepseek", payload) == [] and sdk_problems("openai", plain) == []


def test_deepseek_spans_without_tools_send_no_reasoning() -> None:
    messages = [
        Message(role="user", parts=(TextPart(text="hi"),)),
        Message(
            role="assistant",
            parts=(ReasoningPart(provider="deepseek", text="r"), TextPart(text="hello")),
        ),
        Message(role="user", parts=(TextPart(text="call it"),)),
        Message(role="assistant", parts=(ToolCall(id="c", name="f"),)),
    ]
    sent = get_adapter("deepseek").render_messages(messages)
    assert "reasoning_content" not in sent[1]
    assert sent[3]["reasoning_content"] == ""


def test_history_06_gemini_parallel_responses_in_one_content() -> None:
    case = load_case("history-06")
    raw = case["input"]["history"]
    # The neutral history is Chat-shaped; read it with the Chat parser (arguments as text).
    chat = [
        {
            **m,
            "tool_calls": [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for c in m["tool_calls"]
            ],
        }
        if m.get("tool_calls")
        else m
        for m in raw
    ]
    parsed = from_openai(chat)
    normalized = normalize(parsed.messages, profile=PRESETS["gemini"])
    assert "moved_result" in [c.kind for c in normalized.changes]  # w2 was stored first
    contents = get_adapter("gemini").render_request(  # type: ignore[attr-defined]
        system="", tools=[], messages=normalized.messages, options=RequestOptions(model="gemini")
    )["contents"]
    # len(contents) == 3 with roles ['user', 'model', 'user']
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    # contents[1].parts has exactly 2 functionCall parts (Paris, London) in that order
    calls = [p["function_call"] for p in contents[1]["parts"] if "function_call" in p]
    assert [c["args"] for c in calls] == [{"city": "Paris"}, {"city": "London"}]
    # contents[2].parts has exactly 2 functionResponse parts, as many as the calls
    responses = [p["function_response"] for p in contents[2]["parts"]]
    assert len(responses) == 2 == len(calls)
    assert all(r["name"] == "get_weather" for r in responses)
    # each functionResponse.id equals its call's id
    assert {r["id"] for r in responses} == {c["id"] for c in calls} == {"w1", "w2"}
    # no Content in the payload has an empty parts array
    assert all(c["parts"] for c in contents)
    # results stored in completion order (w2, w1) go out in call order (w1, w2)
    assert [r["id"] for r in responses] == ["w1", "w2"]
    assert [r["response"] for r in responses] == [
        {"output": "18C, partly cloudy"},
        {"output": "14C, rain"},
    ]


def _history_08_items(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's neutral history as the Responses items that were received."""
    user, step, tool = case["input"]["history"]
    (reasoning,) = step["reasoning"]
    (call,) = step["tool_calls"]
    return [
        {"type": "message", "role": "user", "content": user["content"]},
        {
            "type": "reasoning",
            "id": reasoning["id"],
            "summary": reasoning["summary"],
            "encrypted_content": reasoning["encrypted_content"],
        },
        {
            "type": "function_call",
            "id": call["item_id"],
            "call_id": call["id"],
            "name": call["name"],
            "arguments": json.dumps(call["arguments"]),
        },
        {
            "type": "function_call_output",
            "call_id": tool["tool_call_id"],
            "output": tool["content"],
        },
    ]


def test_history_08_reasoning_item_directly_before_its_call() -> None:
    case = load_case("history-08")
    parsed = from_responses(_history_08_items(case))
    # The neutral step has content "": an empty text part must not become a message item.
    user, step, tool = parsed.messages
    step = Message(role="assistant", parts=(step.parts[0], TextPart(text=""), *step.parts[1:]))
    items = get_adapter("responses").render_input([user, step, tool])  # type: ignore[attr-defined]
    # input item types in order: message(user), reasoning, function_call, function_call_output
    assert [(i["type"], i.get("role")) for i in items] == [
        ("message", "user"),
        ("reasoning", None),
        ("function_call", None),
        ("function_call_output", None),
    ]
    # the reasoning item has id 'rs_001' and encrypted_content unchanged
    assert items[1]["id"] == "rs_001"
    assert items[1]["encrypted_content"] == "gAAAAB_exampleOpaqueReasoning"
    # the item right after it is the function_call with call_id 'call_9'; no empty message
    assert items[2]["call_id"] == "call_9" and items[2]["id"] == "fc_001"
    assert not [i for i in items if i["type"] == "message" and not str(i["content"]).strip()]
    # function_call_output.call_id == 'call_9' and it comes after the function_call
    assert items[3]["call_id"] == "call_9"
    payload = get_adapter("responses").render_request(
        system="", tools=[], messages=[user, step, tool], options=RequestOptions(model="gpt")
    )
    assert sdk_problems("responses", payload) == []


def test_history_08_variant_reasoning_pruned() -> None:
    case = load_case("history-08")
    assert "removed the reasoning item" in case["input"]["variant_reasoning_pruned"]
    parsed = from_responses(_history_08_items(case))
    pruned = [
        Message(role=m.role, parts=tuple(p for p in m.parts if not isinstance(p, ReasoningPart)))
        for m in parsed.messages
    ]
    items = get_adapter("responses").render_input(pruned)  # type: ignore[attr-defined]
    # no reasoning item; the function_call is sent without the id 'fc_001'
    assert [i["type"] for i in items] == ["message", "function_call", "function_call_output"]
    assert "id" not in items[1] and items[1]["call_id"] == "call_9"
    assert "fc_001" not in _dumps(items)
    # a reasoning item is never the last item of an assistant step
    full = get_adapter("responses").render_input(parsed.messages)  # type: ignore[attr-defined]
    assert full[1]["type"] == "reasoning" and full[2]["type"] == "function_call"
    assert full[2]["id"] == "fc_001"


def test_gemini_parts_with_unknown_or_no_fields_are_dropped_and_reported() -> None:
    # Found by the model-output fuzz: {"": None} was kept as a provider part and every
    # later Gemini request failed the SDK's Part type (extra fields are forbidden).
    from google.genai import types as genai_types

    from contextchef import ContextChef, from_gemini, user
    from contextchef.providers.gemini._parse import _PART_FIELDS
    from sdk_check import sdk_problems

    assert set(genai_types.Part.model_fields) >= _PART_FIELDS
    parsed = from_gemini(
        [
            {"role": "user", "parts": [{"": None}, {"text": "hi"}]},
            {"role": "model", "parts": [{}, {"videoMetadata": {"fps": 1}}]},
        ]
    )
    first, second = parsed.messages
    assert [type(p).__name__ for p in first.parts] == ["TextPart"]
    assert [type(p).__name__ for p in second.parts] == ["ProviderPart"]
    assert sum("dropped" in note for note in parsed.notes) == 2
    chef = ContextChef()
    chef.set_history([user("start"), *parsed.messages, user("go on")])
    assert sdk_problems("gemini", chef.compile("gemini", model="gemini-3-pro").payload) == []


def test_set_history_with_a_parsed_history_says_to_pass_its_messages() -> None:
    from contextchef import ContextChef, UsageError, from_anthropic

    parsed = from_anthropic([{"role": "user", "content": "hi"}])
    with pytest.raises(UsageError, match=r"got ParsedHistory: pass its \.messages"):
        ContextChef().set_history(parsed)  # type: ignore[arg-type]
    chef = ContextChef()
    chef.set_history(parsed.messages)
    assert [m.role for m in chef.history] == ["user"]


@pytest.mark.parametrize(
    ("parse", "stored"),
    [
        (
            "gemini",
            [{"role": "model", "parts": [{"text": "x"}]}, {"role": "user", "content": None}],
        ),
        ("anthropic", [{"role": "assistant", "content": "x"}, {"role": "user", "content": []}]),
    ],
)
def test_an_entry_with_nothing_in_it_is_left_out_with_a_note(
    parse: str, stored: list[dict[str, Any]]
) -> None:
    """Found by the model-output fuzz: ``from_gemini`` turned a user entry without parts
    into an empty user message, so the history ended in a turn with nothing to send and
    no compile could follow. Such an entry is now left out, and said."""
    from contextchef import ContextChef, from_anthropic, from_gemini, user

    parser = {"gemini": from_gemini, "anthropic": from_anthropic}[parse]
    parsed = parser(stored)
    assert [m.role for m in parsed.messages] == ["assistant"]
    assert any("an empty user message, left out" in n for n in parsed.notes)
    chef = ContextChef()
    chef.set_history([user("start"), *parsed.messages, user("go on")])
    for target in ("anthropic", "openai", "responses", "gemini"):
        chef.compile(target)


@pytest.mark.parametrize("role", ["system", "developer", "user"])
@pytest.mark.parametrize("kind", ["output_text", "refusal"])
def test_an_input_message_item_holding_an_output_part_is_refused(role: str, kind: str) -> None:
    # break-it 35 #3: a stored system / developer item with output_text parts was kept and
    # replayed verbatim (400 "part type 'output_text' is not valid in system items"); a user
    # one was sent as input_text still carrying the output part's annotations
    said = {"type": kind, "text": "done", "annotations": []} if kind == "output_text" else {}
    part = said or {"type": "refusal", "refusal": "no"}
    items = [
        {"type": "message", "role": "user", "content": "q"},
        {"type": "message", "role": role, "id": "msg_1", "content": [part]},
    ]
    with pytest.raises(CorruptHistoryError) as caught:
        from_responses(items)
    message = str(caught.value)
    assert f"a content part of type {kind} in a {role} item" in message
    assert "input_text, input_image or input_file" in message
    assert caught.value.index == 1
