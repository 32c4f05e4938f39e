"""A reply that continues the model's turn is stored with that turn (`history.continue_turn`).

With ``compile(prefill="{")`` the request ends with a trailing assistant message and the
provider returns only the continuation ("Claude's response will continue from where the
Assistant message leaves off", https://docs.claude.com/en/docs/prefill-claudes-response).
The history stores the whole answer, ``{"a": 1}``, not ``"a": 1}``; a history ending with
the model's turn is continued and stored the same way. Multi-turn, through the official
SDK clients (plain and streamed) against the `contextchef.testing` fakes, every payload
checked against the SDK request types; a compile with a prefill saved, restored on another
worker and answered there stores the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from contextchef import (
    CompiledRequest,
    ContextChef,
    Message,
    ReasoningPart,
    TextPart,
    ToolCall,
    assistant,
    user,
)
from contextchef.history._turns import continue_turn
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import (
    FakeAnthropic,
    FakeProvider,
    fake_for,
    httpx_for,
    text,
    tool_calls,
)
from sdk_check import sdk_problems

HX = httpx_for(anthropic)
CASES = [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5.5"), ("responses", "gpt-5.5")]
Send = Callable[[CompiledRequest], Any]


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _sse(events: list[tuple[str | None, dict[str, Any]]], done: bool = False) -> str:
    lines = [
        (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
        for name, data in events
    ]
    return "".join(lines) + ("data: [DONE]\n\n" if done else "")


def _anthropic_events(message: dict[str, Any]) -> str:
    """A Messages reply as ``stream=True`` sends it (each block in one delta)."""
    start = {"message": {**message, "content": [], "stop_reason": None}}
    events: list[tuple[str | None, dict[str, Any]]] = [("message_start", start)]
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opened, delta = {**block, "text": ""}, {"type": "text_delta", "text": block["text"]}
        events.append(("content_block_start", {"index": i, "content_block": opened}))
        events.append(("content_block_delta", {"index": i, "delta": delta}))
        events.append(("content_block_stop", {"index": i}))
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append(("message_delta", {"delta": stop, "usage": message["usage"]}))
    events.append(("message_stop", {}))
    return _sse([(name, {"type": name, **data}) for name, data in events])


def _chat_chunks(reply: dict[str, Any]) -> str:
    """A Chat Completions reply as ``stream=True`` sends it (chunks, then usage)."""
    head = {k: reply[k] for k in ("id", "created", "model")}
    chunk = {**head, "object": "chat.completion.chunk"}
    choice = reply["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    calls = message.get("tool_calls") or []
    if calls:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(calls)]
    end = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
    return _sse(
        [
            (None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            (None, {**chunk, "choices": [end]}),
            (None, {**chunk, "choices": [], "usage": reply["usage"]}),
        ],
        done=True,
    )


def _responses_events(reply: dict[str, Any]) -> str:
    """A Responses reply as ``stream=True`` sends it (its items added whole)."""
    events: list[tuple[str | None, dict[str, Any]]] = []

    def add(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **data}))

    add("response.created", response={**reply, "status": "in_progress", "output": []})
    for i, item in enumerate(reply["output"]):
        add("response.output_item.added", output_index=i, item=item)
        add("response.output_item.done", output_index=i, item=item)
    add("response.completed", response=reply)
    return _sse(events)


_STREAMS = {"anthropic": _anthropic_events, "openai": _chat_chunks, "responses": _responses_events}


def _sender(target: str, fake: FakeProvider, streamed: bool) -> Send:
    """Send a compiled request through `target`'s SDK client, streamed if asked.

    Streamed, the fake checks the request as sent without ``stream`` and its reply goes
    back as the provider's server-sent events; the SDK's final message is ingested.
    """

    def handler(request: Any) -> Any:
        body = json.loads(request.content)
        assert body.pop("stream") is True
        body.pop("stream_options", None)
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        reply = fake(HX.Request("POST", request.url, headers=headers, json=body))
        events = _STREAMS[target](json.loads(reply.content))
        return HX.Response(200, headers={"content-type": "text/event-stream"}, text=events)

    http = HX.Client(transport=HX.MockTransport(handler)) if streamed else fake.http_client(HX)
    if target == "anthropic":
        claude = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http)
        if not streamed:
            return lambda r: claude.messages.create(**r.payload)

        def stream_claude(r: CompiledRequest) -> Any:
            with claude.messages.stream(**r.payload) as stream:
                return stream.get_final_message()

        return stream_claude
    oai = openai.OpenAI(api_key="x", max_retries=0, http_client=http)
    if target == "responses":
        if not streamed:
            return lambda r: oai.responses.create(**r.payload)

        def stream_responses(r: CompiledRequest) -> Any:
            with oai.responses.stream(**r.payload) as stream:
                return stream.get_final_response()

        return stream_responses
    if not streamed:
        return lambda r: oai.chat.completions.create(**r.payload)

    def stream_chat(r: CompiledRequest) -> Any:
        with oai.chat.completions.stream(**r.payload) as stream:
            return stream.get_final_completion()

    return stream_chat


def _texts(message: Message) -> list[str]:
    return [p.text for p in message.parts if isinstance(p, TextPart)]


def _turn(chef: ContextChef, target: str, model: str, send: Send, **options: Any) -> Any:
    """Compile (checked against the SDK's request type, no edit), send, ingest."""
    request = chef.compile(target, model=model, **options)
    assert sdk_problems(target, request.payload) == []
    assert request.edits == ()
    return chef.ingest(send(request))


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(("target", "model"), CASES)
def test_a_prefilled_reply_is_stored_whole_over_several_turns(
    target: str, model: str, streamed: bool
) -> None:
    fake = fake_for(target).script(
        text('"a": 1}'),
        text("1, 2]"),
        tool_calls(("lookup", {"key": "k"})),
        text("found it"),
        text("plain answer"),
    )
    send = _sender(target, fake, streamed)
    chef = ContextChef()
    chef.register_tools([lookup])
    chef.set_history([user("Give the JSON.")])
    _turn(chef, target, model, send, prefill="{")
    assert _texts(chef.history[-1]) == ['{"a": 1}']
    chef.append(user("Now a list."))
    _turn(chef, target, model, send, prefill="[")
    assert _texts(chef.history[-1]) == ["[1, 2]"]
    chef.append(user("Look k up."))
    calls = _turn(chef, target, model, send, prefill="Checking")
    kinds = [type(p).__name__ for p in chef.history[-1].parts]
    assert kinds == ["TextPart", "ToolCall"] and _texts(chef.history[-1]) == ["Checking"]
    chef.run_tools(calls)
    _turn(chef, target, model, send)
    chef.append(user("Thanks."))
    last = chef.compile(target, model=model)
    assert sdk_problems(target, last.payload) == [] and last.edits == ()
    sent = _strings(_sent(last))
    assert {'{"a": 1}', "[1, 2]", "Checking", "found it"} <= set(sent)
    assert not [s for s in sent if s.startswith(('"a"', "1, 2]"))]  # no bare continuation
    chef.ingest(send(last))
    assert _texts(chef.history[-1]) == ["plain answer"]  # no prefill: as returned
    answers = [_texts(m) for m in chef.history if m.role == "assistant"]
    assert answers == [['{"a": 1}'], ["[1, 2]"], ["Checking"], ["found it"], ["plain answer"]]
    assert fake.violations == () and len(fake.requests) == 5


@pytest.mark.parametrize(("target", "model"), CASES)
def test_a_history_ending_on_the_model_turn_is_stored_like_a_prefill(
    target: str, model: str
) -> None:
    """The two ways to start the model's answer give the same history and next request."""
    histories, requests = [], []
    for prefill in ("{", None):
        fake = fake_for(target).script(text('"a": 1}'), text("ok"))
        send = _sender(target, fake, streamed=False)
        chef = ContextChef()
        start = [user("Give the JSON.")]
        chef.set_history(start if prefill else [*start, assistant("{")])
        _turn(chef, target, model, send, prefill=prefill)
        chef.append(user("Thanks."))
        request = chef.compile(target, model=model)
        assert sdk_problems(target, request.payload) == [] and request.edits == ()
        chef.ingest(send(request))
        histories.append([(m.role, _texts(m)) for m in chef.history])
        requests.append(request.payload)
        assert fake.violations == ()
    assert (
        histories[0]
        == histories[1]
        == [
            ("user", ["Give the JSON."]),
            ("assistant", ['{"a": 1}']),
            ("user", ["Thanks."]),
            ("assistant", ["ok"]),
        ]
    )
    assert requests[0] == requests[1]


@pytest.mark.parametrize(("target", "model"), CASES)
def test_a_prefill_survives_a_snapshot_and_another_worker(
    target: str, model: str, tmp_path: Path
) -> None:
    """Compile with a prefill, save; another worker restores, ingests: the whole answer."""
    fake = fake_for(target).script(text('"a": 1}'), text("ok"))
    send = _sender(target, fake, streamed=False)
    store = SQLiteSessionStore(tmp_path / "s.db")
    first = ContextChef()
    first.set_history([user("Give the JSON.")])
    sync = SessionSync(store, "s")
    request = first.compile(target, model=model, prefill="{")
    sync.save(first)
    reply = send(request)
    worker = ContextChef()
    assert SessionSync(store, "s").load_into(worker)
    worker.ingest(reply)
    assert _texts(worker.history[-1]) == ['{"a": 1}']
    restored = ContextChef()  # and through a plain snapshot dict
    restored.restore(first.snapshot(), allow_unsigned=True)
    restored.ingest(reply)
    assert restored.history == worker.history
    worker.append(user("Thanks."))
    _turn(worker, target, model, send)
    assert [_texts(m) for m in worker.history[1:]] == [['{"a": 1}'], ["Thanks."], ["ok"]]
    assert fake.violations == ()


def test_continue_turn_parts() -> None:
    """Where the opening text goes, and what is left apart."""
    call = ToolCall(id="c1", name="lookup", arguments='{"key": "k"}')
    reply = (Message(role="assistant", parts=(call,)),)
    _, turn = continue_turn((), reply, prefill="Checking")
    assert turn[0].parts == (TextPart(text="Checking"), call)  # no text to join: its own
    _, turn = continue_turn((), (Message(role="assistant", parts=()),), prefill="{")
    assert turn[0].parts == (TextPart(text="{"),)  # a reply that only stopped
    thought = ReasoningPart(text="t", provider="anthropic")
    _, turn = continue_turn((), (Message(role="assistant", parts=(thought, call)),), prefill="X")
    assert turn[0].parts == (thought, TextPart(text="X"), call)  # reasoning stays first
    history = (user("q"), assistant("Hel"))
    kept, turn = continue_turn(history, (assistant("lo"),), continued=True)
    assert kept == history[:1] and turn == (assistant("Hello"),)
    assert continue_turn(history, (assistant("lo"),)) == (history, (assistant("lo"),))
    tagged = TextPart(text="lo", provider_data={"provider": "x", "id": "m2"})
    own = Message(role="assistant", parts=(TextPart(text="Hel", provider_data={"id": "m1"}),))
    _, turn = continue_turn((own,), (Message(role="assistant", parts=(tagged,)),), continued=True)
    assert turn[0].parts == (TextPart(text="Hello", provider_data={"id": "m1"}),)  # the opener's


@pytest.mark.parametrize("prefill", ["{", None])
def test_the_cache_diagnosis_of_the_request_after_it_is_explained(
    prefill: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    """Anthropic's cache diagnostics compare two requests: the one after a prefill (or a
    continued turn) sends the whole answer where the prefill was, ``messages_changed``;
    the session names that cause instead of warning of an unexplained miss, also when
    the reply is ingested on another worker."""
    fake = FakeAnthropic().script(text('"a": 1}'), text("ok"))
    claude = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    model = "claude-sonnet-4-5"
    chef = ContextChef()
    start = [user("Give the JSON. " * 400)]
    chef.set_history(start if prefill else [*start, assistant("{")])
    first = chef.compile("anthropic", model=model, prefill=prefill, diagnostics=True)
    chef.ingest(claude.beta.messages.create(**first.payload, extra_headers=first.headers))
    chef.append(user("Thanks."))
    second = chef.compile("anthropic", model=model, diagnostics=True)
    assert sdk_problems("anthropic", second.payload) == [] and second.edits == ()
    worker = ContextChef()
    worker.restore(chef.snapshot(), allow_unsigned=True)
    with caplog.at_level("WARNING", logger="contextchef"):
        worker.ingest(claude.beta.messages.create(**second.payload, extra_headers=second.headers))
    report = worker.cache_reports[-1]
    assert report.reason == "messages_changed" and report.unexplained == ""
    assert "ended on the model's turn" in report.explanation
    assert not [r for r in caplog.records if "no edit reported" in r.getMessage()]
    assert fake.violations == ()


@pytest.mark.parametrize(("target", "model"), [("openai", "gpt-5.5"), ("responses", "gpt-5.5")])
def test_a_prefill_goes_with_the_text_after_the_reasoning(target: str, model: str) -> None:
    """A reply that thinks first keeps its reasoning first; the prefill starts its text
    (Chat sends a turn's text parts joined by a blank line: ``{`` apart would break it)."""
    fake = fake_for(target).script(text('"a": 1}', reasoning="think"), text("ok"))
    send = _sender(target, fake, streamed=False)
    chef = ContextChef()
    chef.set_history([user("Give the JSON.")])
    _turn(chef, target, model, send, prefill="{")
    kinds = [type(p).__name__ for p in chef.history[-1].parts]
    assert kinds == ["ReasoningPart", "TextPart"] and _texts(chef.history[-1]) == ['{"a": 1}']
    chef.append(user("Thanks."))
    request = chef.compile(target, model=model)
    assert sdk_problems(target, request.payload) == [] and request.edits == ()
    assert '{"a": 1}' in _strings(_sent(request))
    chef.ingest(send(request))
    assert fake.violations == ()


def _sent(request: CompiledRequest) -> Any:
    return request.payload.get("messages", request.payload.get("input"))


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for v in items for s in _strings(v)]


@pytest.mark.parametrize(("target", "model"), CASES)
def test_a_reply_continued_without_a_user_turn_is_one_text(target: str, model: str) -> None:
    """A reply the host asks to go on (compile again, no user message) joins the reply it
    continues, provider fields and all: one text, sent as one piece on every target."""
    fake = fake_for(target).script(text("The answer is"), text(" 42."), text("ok"))
    send = _sender(target, fake, streamed=False)
    chef = ContextChef()
    chef.set_history([user("Tell me.")])
    _turn(chef, target, model, send)
    _turn(chef, target, model, send)  # "go on"
    assert [(m.role, _texts(m)) for m in chef.history] == [
        ("user", ["Tell me."]),
        ("assistant", ["The answer is 42."]),
    ]
    chef.append(user("Thanks."))
    request = chef.compile(target, model=model)
    assert sdk_problems(target, request.payload) == [] and request.edits == ()
    assert "The answer is 42." in _strings(_sent(request))
    chef.ingest(send(request))
    assert fake.violations == ()
