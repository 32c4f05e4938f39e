"""Whatever a parser accepts is plain JSON data: nothing parsed breaks a later compile."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google import genai
from google.genai import types as genai_types

from contextchef import (
    TARGETS,
    ContextChef,
    CorruptHistoryError,
    from_anthropic,
    from_gemini,
    from_openai,
    from_responses,
    tool_results,
    user,
)
from contextchef.testing import FakeGemini, httpx_for, text, tool_calls


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def test_a_genai_model_dump_with_bytes_signatures_round_trips() -> None:
    chef = ContextChef()
    chef.register_tools([read_file])
    chef.set_history([user("read a")])
    fake = FakeGemini().script(
        tool_calls(("read_file", {"path": "a"}), reasoning="think first"), text("done")
    )
    client = genai.Client(
        api_key="x",
        http_options=genai_types.HttpOptions(httpx_client=fake.http_client(httpx_for(genai))),
    )
    reply = client.models.generate_content(**chef.compile("gemini", model="m").payload)
    content = reply.candidates[0].content  # type: ignore[index, union-attr]
    dumped = content.model_dump(exclude_none=True)  # type: ignore[union-attr]
    assert any(isinstance(p.get("thought_signature"), bytes) for p in dumped["parts"])
    parsed = from_gemini([dumped])
    chef.append(*parsed.messages)
    call = next(p for p in content.parts if p.function_call)  # type: ignore[union-attr]
    chef.append(tool_results([chef.execute(call).result]))
    for target in TARGETS:
        json.dumps(chef.compile(target).payload, allow_nan=False)
    client.models.generate_content(**chef.compile("gemini", model="m").payload)
    assert fake.violations == ()
    first = fake.requests[0].reply
    sent = fake.requests[1].body
    signed = [
        p for c in first["candidates"] for p in c["content"]["parts"] if "thoughtSignature" in p
    ]
    replayed = [p for c in sent["contents"] for p in c["parts"] if "thoughtSignature" in p]
    assert [p["thoughtSignature"] for p in replayed] == [p["thoughtSignature"] for p in signed]


BAD_VALUES: list[tuple[str, Any]] = [
    ("nan", float("nan")),
    ("infinity", float("inf")),
    ("huge-int", 10**5000),
    ("surrogate", "\ud800"),
    ("object", object()),
]


@pytest.mark.parametrize(("label", "bad"), BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_values_json_cannot_carry_are_corrupt_history_or_repaired(label: str, bad: Any) -> None:
    anthropic = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "t", "citations": [bad]}]},
    ]
    chat = [{"role": "user", "content": "go"}, {"role": "assistant", "content": bad}]
    responses = [
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}", "x": bad}
    ]
    gemini = [{"role": "model", "parts": [{"text": "t", "extra": {"x": bad}}]}]
    for parse, history in (
        (from_anthropic, anthropic),
        (from_openai, chat),
        (from_responses, responses),
        (from_gemini, gemini),
    ):
        if label == "surrogate":  # text UTF-8 cannot carry is repaired, not refused
            parsed = parse(history)  # type: ignore[operator]
            assert "\ud800" not in json.dumps(parsed.messages[-1].to_dict())
            assert any("became U+FFFD" in n for n in parsed.notes)
            continue
        with pytest.raises(CorruptHistoryError) as caught:
            parse(history)  # type: ignore[operator]
        assert caught.value.index in (0, 1)


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


UNREADABLE_ARGUMENTS = [*BAD_VALUES, ("deep", _deep(3000)), ("101-levels", _deep(101))]


@pytest.mark.parametrize(
    ("label", "bad"), UNREADABLE_ARGUMENTS, ids=[b[0] for b in UNREADABLE_ARGUMENTS]
)
def test_call_arguments_json_cannot_carry_are_repaired_into_an_error_result(
    label: str, bad: Any
) -> None:
    """A model's call with NaN, 1e999, a huge integer or runaway nesting in its argument
    object (Anthropic ``input``, Gemini ``args``) is the model's output: the turn is kept,
    the note says so, the gate answers the call with an error result and every target
    keeps compiling."""
    anthropic = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"x": bad}}],
    }
    gemini = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": "read_file", "args": {"x": bad}}}],
                }
            }
        ]
    }
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": anthropic["content"]},
    ]
    assert "sent as {}" in " ".join(from_anthropic(history).notes)
    # Chat carries arguments as text: a lone surrogate decoded from the JSON escape
    function = {"name": "read_file", "arguments": '{"x": "\ud800"}'}
    call = {"id": "c1", "type": "function", "function": function}
    chat = {"choices": [{"message": {"role": "assistant", "tool_calls": [call]}}]}
    for response in (anthropic, gemini, chat):
        chef = ContextChef()
        chef.register_tools([read_file])
        chef.set_history([user("read a")])
        (call,) = chef.ingest(response)
        check = chef.check_tool_call(call)
        assert check.decision == "denied"
        chef.append(tool_results([chef.execute(call).result]))
        for target in TARGETS:
            request = chef.compile(target)
            json.dumps(request.payload, allow_nan=False)
            assert "replaced_malformed_arguments" in [c.kind for c in request.changes]


NON_OBJECTS = [("array", [1, 2], "an array"), ("null", None, "null"), ("number", 7, "a number")]


@pytest.mark.parametrize(("label", "bad", "kind"), NON_OBJECTS, ids=[b[0] for b in NON_OBJECTS])
def test_call_arguments_that_are_not_an_object_are_answered_on_every_format(
    label: str, bad: Any, kind: str
) -> None:
    """A model's call whose arguments are an array, a number or null (break-it round 6:
    Anthropic ``input``, Gemini ``args``, Interactions ``arguments``, Chat / Responses
    argument text) is answered by the gate with an error result naming the JSON type, as
    Chat's text always was; the turn is kept and every target compiles after it."""
    text_args = json.dumps(bad)
    responses: dict[str, Any] = {
        "anthropic": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": bad}],
        },
        "gemini": {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [{"functionCall": {"name": "read_file", "args": bad}}],
                    }
                }
            ]
        },
        "gemini-interactions": {
            "id": "v1_1",
            "status": "requires_action",
            "steps": [{"type": "function_call", "id": "c1", "name": "read_file", "arguments": bad}],
        },
        "openai": {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "read_file", "arguments": text_args},
                            }
                        ],
                    }
                }
            ]
        },
        "responses": {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "output": [
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "c1",
                    "name": "read_file",
                    "arguments": text_args,
                }
            ],
        },
    }
    for source, response in responses.items():
        chef = ContextChef()
        chef.register_tools([read_file])
        chef.set_history([user("read a")])
        (call,) = chef.ingest(response)
        outcome = chef.execute(call)
        assert outcome.result.is_error, source
        assert f"must be a JSON object, got {kind}" in str(outcome.result.content), source
        chef.append(tool_results([outcome.result]))
        for target in TARGETS:
            request = chef.compile(target)
            json.dumps(request.payload, allow_nan=False)


def test_a_lone_surrogate_in_model_text_is_repaired_not_refused() -> None:
    """Break-it round 6: a reply whose text holds the JSON escape of half a surrogate pair
    (a lone surrogate once decoded) made ``ingest`` refuse the whole turn, while a tool
    result's text is repaired. The text keeps U+FFFD instead, the note says so, and the
    next request goes through the SDK to the fake (which now sends such an escape)."""
    import anthropic

    from contextchef.testing import FakeAnthropic, raw

    bad = "model says \ud800 here"
    reply = {
        "id": "msg_s",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": bad}],
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    fake = FakeAnthropic().script(raw(reply), text("ok"))
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    chef = ContextChef()
    chef.set_history([user("hi")])
    chef.ingest(client.messages.create(**chef.compile("anthropic", model="m").payload))
    assert chef.history[-1].text == "model says \ufffd here"
    chef.append(user("next"))
    client.messages.create(**chef.compile("anthropic", model="m").payload)
    assert fake.violations == ()
    notes = from_anthropic([{"role": "user", "content": "hi"}, reply]).notes
    assert any("lone surrogates in its text became U+FFFD" in n for n in notes)


def set_level(x: float | None = 0.0) -> str:
    """Set a level."""
    raise AssertionError(f"ran with {x!r}: a non-finite number must be refused")


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e400"])
@pytest.mark.parametrize("target", ["anthropic", "gemini"])
def test_a_non_finite_number_read_through_an_sdk_object_is_refused(target: str, token: str) -> None:
    """An SDK parses ``{"x": NaN}`` in a tool call's input into a float NaN; its JSON-mode
    dump writes it as null, and the call would run with ``x=None`` (a fresh user's find).
    Read as the model sent it, the gate answers it with an error result, as it does for the
    same reply given as a dict, and the next request still goes through."""
    import anthropic

    from contextchef.testing import FakeAnthropic

    hx = httpx_for(anthropic)
    chef = ContextChef()
    chef.register_tools([set_level])
    chef.set_history([user("go")])
    fake: Any = (FakeAnthropic if target == "anthropic" else FakeGemini)().script(
        tool_calls(("set_level", {"x": 12345.5})), text("done")
    )

    def provider(request: Any) -> Any:  # the provider sends a non-finite number
        answer = fake(request)
        content = answer.content.replace(b"12345.5", token.encode())
        return hx.Response(
            answer.status_code, headers={"content-type": "application/json"}, content=content
        )

    http = hx.Client(transport=hx.MockTransport(provider))
    payload = chef.compile(target).payload
    if target == "anthropic":
        client: Any = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http)
        response = client.messages.create(**payload)
    else:
        options = genai_types.HttpOptions(httpx_client=http)
        client = genai.Client(api_key="x", http_options=options)
        response = client.models.generate_content(**payload)
    (result,) = chef.run_tools(chef.ingest(response))
    assert result.is_error
    assert "not valid JSON" in result.content
    follow_up = chef.compile(target).payload
    if target == "anthropic":
        assert client.messages.create(**follow_up).content[0].text == "done"
    else:
        assert client.models.generate_content(**follow_up).text == "done"
    assert fake.violations == ()
