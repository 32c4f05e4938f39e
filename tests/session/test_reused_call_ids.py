"""A history whose calls reuse one id keeps every exchange, on every target.

Some OpenAI-compatible servers send the same call id (``call_0``) on every turn, and a
host that stored such a conversation hands it to `set_history` as it is. Providers pair a
result with its call by id, so the normalizer used to drop each later call and its
result: the model lost every exchange after the first. A reused id now gets a new,
stable one (``call_0_2``...) and its result follows it; the fakes, through the official
SDKs, accept every turn.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import TARGETS, ContextChef, Message, ToolCall, ToolResult, tool_results, user
from contextchef.testing import fake_for, text, tool_calls
from contextchef.testing._calls import responses_item_ids_unique

READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def _history() -> list[Message]:
    out = [user("Read the three files.")]
    for k in range(3):
        call = ToolCall(id="call_0", name="read_file", arguments=json.dumps({"path": f"f{k}"}))
        out.append(Message(role="assistant", parts=(call,)))
        result = ToolResult(call_id="call_0", name="read_file", content=f"contents of f{k}")
        out.append(Message(role="user", parts=(result,)))
    out.append(user("Now summarize them."))
    return out


def _texts(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


@pytest.mark.parametrize("target", TARGETS)
def test_every_exchange_of_a_reused_id_reaches_the_model(target: str) -> None:
    history = _history()
    fake = fake_for(target).script(tool_calls(("read_file", {"path": "f3"})), text("Done."))
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.set_history(history)
    assert chef.history == tuple(history)  # the host's history is kept as given
    first = chef.compile(target, model="m").payload
    sent = _texts(first)
    for k in range(3):  # every result and every call's arguments are sent
        assert f"contents of f{k}" in sent and f"f{k}" in sent
    for _ in range(2):  # then the loop goes on through the SDK, prefix as sent
        calls = chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
        if calls:
            chef.append(tool_results([chef.execute(c).result for c in calls]))
    assert fake.violations == ()
    assert len(fake.requests) == 2
    assert "contents of f2" in _texts(fake.requests[-1].body)


def _beta_answered_by_beta(target: str, payload: dict[str, Any]) -> bool:
    """Whether the result 'RESULT OF BETA' answers the call whose pattern is beta."""
    if target == "openai":
        messages = payload["messages"]
        calls = {
            c["id"]: c["function"]["arguments"] for m in messages for c in m.get("tool_calls") or ()
        }
        answers = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    else:
        blocks = [
            b for m in payload["messages"] if isinstance(m["content"], list) for b in m["content"]
        ]
        calls = {b["id"]: json.dumps(b["input"]) for b in blocks if b["type"] == "tool_use"}
        answers = {
            b["tool_use_id"]: json.dumps(b["content"]) for b in blocks if b["type"] == "tool_result"
        }
    beta = next(i for i, args in calls.items() if "beta" in args)
    alpha = next(i for i, args in calls.items() if "alpha" in args)
    return "RESULT OF BETA" in str(answers[beta]) and "RESULT OF BETA" not in str(answers[alpha])


def test_a_result_never_goes_to_an_abandoned_call_with_the_same_id() -> None:
    def grep(pattern: str) -> Message:
        call = ToolCall(id="call_0", name="grep", arguments=json.dumps({"pattern": pattern}))
        return Message(role="assistant", parts=(call,))

    h1 = [user("go"), grep("alpha"), user("stop, search beta instead")]
    beta = ToolResult(call_id="call_0", name="grep", content="RESULT OF BETA")
    h2 = [*h1, grep("beta"), Message(role="user", parts=(beta,)), user("thanks")]
    tool = {"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}
    chef = ContextChef()
    chef.register_tools([tool])
    chef.set_history(h1)
    chef.compile("anthropic", model="claude-opus-5-5")
    chef.set_history(h2)
    for target in ("anthropic", "openai"):  # one after the other, in one session
        assert _beta_answered_by_beta(target, chef.compile(target, model="m").payload)
    fresh = ContextChef()
    fresh.register_tools([tool])
    fresh.set_history(h2)
    assert _beta_answered_by_beta("openai", fresh.compile("openai", model="m").payload)


def test_ingest_says_when_it_gives_a_reused_id_a_new_one() -> None:
    # break-it round 14, f1: a host answering with the raw response's id was silently
    # answering nothing; the rename is now a notice, and the returned call's id works.
    def reply(pattern: str) -> dict[str, Any]:
        call = {
            "id": "call_0",
            "type": "function",
            "function": {"name": "grep", "arguments": json.dumps({"pattern": pattern})},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"id": f"r-{pattern}", "object": "chat.completion", "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls"}]}  # fmt: skip

    chef = ContextChef()
    chef.register_tools(
        [{"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}],
        handlers={"grep": lambda pattern="": f"found {pattern}"},
    )
    chef.set_history([user("go")])
    chef.compile("openai", model="m")
    for pattern in ("a", "b"):
        calls = chef.ingest(reply(pattern))
        chef.append(tool_results([chef.execute(c).result for c in calls]))
        chef.compile("openai", model="m")
    renamed = [n for n in chef.notices if n.kind == "call_id_renamed"]
    assert [(n.reason, "call_0" in n.detail) for n in renamed] == [("call_0", True)]
    payload = chef.compile("openai", model="m").payload
    answers = [m["content"] for m in payload["messages"] if m["role"] == "tool"]
    assert answers == ["found a", "found b"]  # neither answered as interrupted


def test_a_responses_server_reusing_item_ids_gets_each_id_once() -> None:
    # break-it round 15, f6: a server that sends fc_0 / msg_0 / call_0 every turn had
    # every later request refused ("Duplicate item found with id fc_0").
    from contextchef.testing import RawReply

    def reply(n: int) -> RawReply:
        call = {"type": "function_call", "id": "fc_0", "call_id": "call_0", "name": "grep",
                "arguments": json.dumps({"pattern": f"p{n}"}), "status": "completed"}  # fmt: skip
        content = [{"type": "output_text", "text": f"step {n}", "annotations": []}]
        said = {"type": "message", "id": "msg_0", "role": "assistant", "status": "completed",
                "content": content}  # fmt: skip
        return RawReply(body={"id": f"resp_{n}", "object": "response", "status": "completed",
                              "model": "m", "output": [said, call]})  # fmt: skip

    fake = fake_for("responses").script(*[reply(n) for n in range(3)])
    chef = ContextChef()
    chef.register_tools(
        [{"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}],
        handlers={"grep": lambda pattern="": f"found {pattern}"},
    )
    chef.set_history([user("go")])
    for _ in range(3):
        calls = chef.ingest(send("responses", fake, chef.compile("responses", model="m").payload))
        chef.append(tool_results([chef.execute(c).result for c in calls]))
    last = chef.compile("responses", model="m").payload["input"]
    ids = [item["id"] for item in last if "id" in item]
    assert sorted(ids) == ["fc_0", "msg_0"]  # the first turn's, once each
    assert fake.violations == ()
    doubled = {"model": "m", "input": [*last, last[1]]}
    assert any("Duplicate item" in v for v in responses_item_ids_unique(doubled, ()))


def test_a_responses_compile_reads_the_item_ids_of_its_new_turn_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The ids sent before are kept in each session's ledger (`Ledger.cache`), not in the
    # provider module: six sessions served in turn each read their new messages only.
    from contextchef.providers.responses import _item_ids
    from contextchef.testing import RawReply

    def reply(s: int, n: int) -> RawReply:
        call = {"type": "function_call", "id": f"fc_{s}_{n}", "call_id": f"call_{s}_{n}",
                "name": "grep", "arguments": "{}", "status": "completed"}  # fmt: skip
        return RawReply(body={"id": f"resp_{s}_{n}", "object": "response",
                              "status": "completed", "model": "m", "output": [call]})  # fmt: skip

    read: list[Message] = []
    real = _item_ids._message_ids
    monkeypatch.setattr(_item_ids, "_message_ids", lambda m: read.append(m) or real(m))
    fakes = [fake_for("responses").script(*[reply(s, n) for n in range(6)]) for s in range(6)]
    chefs = []
    for _ in fakes:
        chef = ContextChef()
        chef.register_tools(
            [{"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}],
            handlers={"grep": lambda: "found"},
        )
        chef.set_history([user("go")])
        chefs.append(chef)
    for turn in range(6):
        for chef, fake in zip(chefs, fakes, strict=True):
            read.clear()
            payload = chef.compile("responses", model="m").payload
            assert len(read) <= 2, (turn, len(read))  # the turn before's call and result
            calls = chef.ingest(send("responses", fake, payload))
            chef.append(tool_results([chef.execute(c).result for c in calls]))
    assert all(fake.violations == () for fake in fakes)
