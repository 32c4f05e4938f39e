"""Replies at a limit, read through the official SDKs (break-it 13, f1 and f6).

* Tool arguments the model nested 255+ levels deep, parsed by the SDK into its response
  object, made ``ingest`` fail on Anthropic, Gemini and Interactions (pydantic's
  "Maximum serialization depth exceeded" / "Circular reference detected"): the call was
  named nowhere and the whole turn lost. The object is now read field by field where its
  dump fails (`contextchef._sdk.sdk_json`), so the call is stored and the gate answers it
  as it does at depth 101-250 and on Chat / Responses ("nested more than 100 levels").
* The last call of a reply cut off at the output limit (Anthropic ``max_tokens``, Chat
  ``length``, Responses ``max_output_tokens``, Gemini ``MAX_TOKENS``, Interactions
  ``incomplete``) was run: it is now answered (``cut_off``), its earlier siblings run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel

from contextchef import (
    TARGETS,
    ContextChef,
    CorruptHistoryError,
    ReasoningPart,
    ToolResult,
    tool_results,
    user,
)
from contextchef._sdk import sdk_json
from contextchef.testing import FakeProvider, fake_for, httpx_for, text, tool_calls

HX = httpx_for(anthropic)
Patch = Callable[[dict[str, Any]], None]


def _client(fake: FakeProvider, patch: Patch | None) -> Any:
    """The fake's transport; `patch` edits the first reply's JSON (a limit the fakes never
    send by themselves)."""
    seen = [0]

    def handler(request: Any) -> Any:
        response = fake(request)
        seen[0] += 1
        if patch is None or seen[0] > 1:
            return response
        body = json.loads(response.content)
        patch(body)
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        return HX.Response(response.status_code, headers=headers, json=body)

    return HX.Client(transport=HX.MockTransport(handler))


def _sender(target: str, fake: FakeProvider, patch: Patch | None = None) -> Callable[..., Any]:
    """Payloads through `target`'s official SDK; its response objects."""
    http = _client(fake, patch)
    if target in ("gemini", "gemini-interactions"):
        client = genai.Client(api_key="x", http_options=genai_types.HttpOptions(httpx_client=http))
        if target == "gemini":
            return lambda payload: client.models.generate_content(**payload)
        return lambda payload: client.interactions.create(**payload)
    if target == "anthropic":
        claude = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http)
        return lambda payload: claude.messages.create(**payload)
    gpt = openai.OpenAI(api_key="x", max_retries=0, http_client=http)
    if target == "responses":
        return lambda payload: gpt.responses.create(**payload)
    return lambda payload: gpt.chat.completions.create(**payload)


_ran: list[tuple[str, object]] = []


def shape(data: dict[str, Any]) -> str:
    """Describe data."""
    _ran.append(("shape", data))
    return "seen"


def delete(path: str) -> str:
    """Delete a path."""
    _ran.append(("delete", path))
    return "deleted"


def _chef() -> ContextChef:
    _ran.clear()
    chef = ContextChef()
    chef.register_tools([shape, delete])
    chef.set_history([user("Go.")])
    return chef


def _loop(chef: ContextChef, target: str, send: Callable[..., Any], turns: int) -> list[ToolResult]:
    """`turns` requests: each reply ingested, its calls run and answered."""
    answered: list[ToolResult] = []
    for _ in range(turns):
        calls = chef.ingest(send(chef.compile(target, model="m").payload))
        if calls:
            results = chef.run_tools(calls)
            answered.extend(results)
            chef.append(tool_results(list(results)))
        else:
            chef.append(user("Next."))
    return answered


def _nested(depth: int) -> dict[str, Any]:
    deep: dict[str, Any] = {}
    for _ in range(depth):
        deep = {"a": deep}
    return deep


@pytest.mark.parametrize("depth", [150, 260, 400])
@pytest.mark.parametrize("target", TARGETS)
def test_arguments_nested_past_the_serializer_limit_are_answered_on_every_target(
    target: str, depth: int
) -> None:
    fake = fake_for(target).script(
        tool_calls(("shape", {"data": {}}), ("shape", {"data": _nested(depth)}), reasoning="r"),
        tool_calls(("shape", {"data": {"a": 1}})),
        text("Done."),
    )
    chef = _chef()
    answered = _loop(chef, target, _sender(target, fake), 3)
    assert fake.violations == ()
    assert len(fake.requests) == 3  # the loop went on after the answered call
    assert [(r.name, r.is_error) for r in answered] == [
        ("shape", False),
        ("shape", True),
        ("shape", False),
    ]
    assert "nested more than 100 levels deep" in answered[1].content
    assert _ran == [("shape", {}), ("shape", {"a": 1})]  # the valid sibling ran
    assert any(isinstance(p, ReasoningPart) for m in chef.history for p in m.parts)


def _cut(target: str) -> Patch:
    """The first reply as it comes when the output limit cut it."""

    def patch(body: dict[str, Any]) -> None:
        if target == "anthropic":
            body["stop_reason"] = "max_tokens"
        elif target in ("openai", "deepseek"):
            body["choices"][0]["finish_reason"] = "length"
        elif target == "responses":
            body["status"] = "incomplete"
            body["incomplete_details"] = {"reason": "max_output_tokens"}
        elif target == "gemini":
            body["candidates"][0]["finishReason"] = "MAX_TOKENS"
        else:
            body["status"] = "incomplete"

    return patch


@pytest.mark.parametrize("target", TARGETS)
def test_the_last_call_of_a_reply_cut_at_the_output_limit_is_answered_not_run(
    target: str,
) -> None:
    fake = fake_for(target).script(
        tool_calls(("shape", {"data": {}}), ("delete", {"path": "/data"}), reasoning="plan"),
        tool_calls(("delete", {"path": "/data/tmp"})),
        text("Done."),
    )
    chef = _chef()
    answered = _loop(chef, target, _sender(target, fake, _cut(target)), 3)
    assert fake.violations == ()
    assert len(fake.requests) == 3
    assert [(r.name, r.is_error) for r in answered] == [
        ("shape", False),
        ("delete", True),
        ("delete", False),
    ]
    assert "cut off" in answered[1].content and "Call it again" in answered[1].content
    assert _ran == [("shape", {}), ("delete", "/data/tmp")]  # the cut call never ran
    assert [n.kind for n in chef.notices] == ["incomplete"]
    assert '"/data"' not in json.dumps(fake.requests[1].body)  # sent back without them


@pytest.mark.parametrize("arguments", ['{"path": "/da', '{"path": "/data"}'])
def test_a_chat_call_cut_at_length_is_answered_alike_whole_looking_or_not(
    arguments: str,
) -> None:
    def patch(body: dict[str, Any]) -> None:
        _cut("openai")(body)
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = arguments

    fake = fake_for("openai").script(tool_calls(("delete", {"path": "x"})), text("Done."))
    chef = _chef()
    answered = _loop(chef, "openai", _sender("openai", fake, patch), 2)
    assert fake.violations == () and _ran == []
    ((name, error, content),) = [(r.name, r.is_error, r.content) for r in answered]
    assert (name, error) == ("delete", True) and "output token limit" in content


@pytest.mark.parametrize("target", TARGETS)
def test_a_reply_that_ended_normally_runs_its_last_call(target: str) -> None:
    fake = fake_for(target).script(tool_calls(("delete", {"path": "/tmp/x"})), text("Done."))
    chef = _chef()
    answered = _loop(chef, target, _sender(target, fake), 2)
    assert [r.is_error for r in answered] == [False] and _ran == [("delete", "/tmp/x")]


class _Call(BaseModel):
    name: str
    input: dict[str, Any]
    score: float | None = None


class _Reply(BaseModel):
    id: str
    content: list[_Call]


def test_sdk_json_reads_a_model_past_the_depth_limit_and_keeps_non_finite_numbers() -> None:
    deep = _nested(300)
    reply = _Reply(
        id="r", content=[_Call(name="a", input={"x": math.nan}), _Call(name="b", input=deep)]
    )
    with pytest.raises(Exception, match="depth"):
        reply.model_dump(mode="json")
    data = sdk_json(reply, exclude_unset=True)
    assert data["id"] == "r" and [c["name"] for c in data["content"]] == ["a", "b"]
    assert math.isnan(data["content"][0]["input"]["x"])
    assert data["content"][1]["input"] is reply.content[1].input  # as the SDK parsed it
    assert "score" not in data["content"][1]


def test_a_deep_sdk_tool_use_block_is_checked_by_the_gate() -> None:
    chef = _chef()
    block = anthropic.types.ToolUseBlock(
        type="tool_use", id="toolu_1", name="shape", input={"data": _nested(300)}
    )
    decision = chef.check_tool_call(block)
    assert decision.decision == "denied" and "nested more than 100 levels" in decision.reason


def _anthropic_events(message: dict[str, Any]) -> str:
    """A Messages reply as the SSE events ``stream=True`` sends (blocks streamed whole)."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"message": {**message, "content": [], "stop_reason": None}})
    ]
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            start, delta = (
                {**block, "input": {}},
                {
                    "type": "input_json_delta",
                    "partial_json": json.dumps(block["input"]),
                },
            )
        elif block["type"] == "thinking":
            start, delta = (
                {**block, "thinking": "", "signature": ""},
                {
                    "type": "thinking_delta",
                    "thinking": block["thinking"],
                },
            )
        else:
            start, delta = {**block, "text": ""}, {"type": "text_delta", "text": block["text"]}
        events.append(("content_block_start", {"index": i, "content_block": start}))
        events.append(("content_block_delta", {"index": i, "delta": delta}))
        if block["type"] == "thinking":
            signature = {"type": "signature_delta", "signature": block["signature"]}
            events.append(("content_block_delta", {"index": i, "delta": signature}))
        events.append(("content_block_stop", {"index": i}))
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append(("message_delta", {"delta": stop, "usage": message["usage"]}))
    events.append(("message_stop", {}))
    return "".join(
        f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n" for name, data in events
    )


def _streamed(fake: FakeProvider, patch: Patch | None) -> Any:
    """The Anthropic SDK streaming against `fake`: each request is checked by the fake
    (sent without ``stream``) and its reply sent back as SSE events."""
    seen = [0]

    def handler(request: Any) -> Any:
        body = json.loads(request.content)
        assert body.pop("stream") is True
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        reply = fake(HX.Request("POST", request.url, headers=headers, json=body))
        message = json.loads(reply.content)
        seen[0] += 1
        if patch is not None and seen[0] == 1:
            patch(message)
        sse = _anthropic_events(message)
        return HX.Response(200, headers={"content-type": "text/event-stream"}, text=sse)

    http = HX.Client(transport=HX.MockTransport(handler))
    claude = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http)

    def send(payload: dict[str, Any]) -> Any:
        with claude.messages.stream(**payload) as stream:
            return stream.get_final_message()

    return send


@pytest.mark.parametrize("cut", [False, True])
def test_a_streamed_anthropic_reply_is_read_as_the_whole_one(cut: bool) -> None:
    """``get_final_message()`` of a stream (jiter, the SDK's stream parser, stops at about
    200 levels itself, so no stream brings deeper arguments)."""
    fake = fake_for("anthropic").script(
        tool_calls(("shape", {"data": _nested(150)}), ("delete", {"path": "/d"}), reasoning="r"),
        tool_calls(("delete", {"path": "/d/tmp"})),
        text("Done."),
    )
    chef = _chef()
    answered = _loop(chef, "anthropic", _streamed(fake, _cut("anthropic") if cut else None), 3)
    assert fake.violations == () and len(fake.requests) == 3
    assert "nested more than 100 levels deep" in answered[0].content
    assert ("cut off" in answered[1].content) is cut
    expected = [("delete", "/d/tmp")] if cut else [("delete", "/d"), ("delete", "/d/tmp")]
    assert _ran == expected


class _Odd(BaseModel):
    id: str
    blob: Any


def test_a_field_that_cannot_be_read_still_fails_with_the_dumps_own_error() -> None:
    with pytest.raises(Exception, match="Unable to serialize unknown type"):
        sdk_json(_Odd(id="r", blob=object()))
    with pytest.raises(CorruptHistoryError, match="cannot read the _Odd response"):
        ContextChef().ingest(_Odd(id="r", blob=object()))
