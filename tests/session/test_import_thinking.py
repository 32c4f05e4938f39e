"""An imported native Anthropic history with thinking continues on a prefix-check model.

A history the provider accepted comes back byte for byte (results in any order, results
made of several blocks, interleaved and redacted thinking): nothing in front of a signed
thinking block may change. Where a repair is needed (a blank text the API refuses), the
thinking after it is dropped and reported. Native histories are made turn by turn with
the ``anthropic`` SDK against `FakeAnthropic` on ``claude-opus-5-5``, which checks every
thinking block against the prefix it was produced after (break-it 21).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
from anthropic.types import TextBlockParam, ToolResultBlockParam
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextchef import ContextChef, from_anthropic, user
from contextchef.history._messages import ToolResult
from contextchef.testing import FakeAnthropic, Ids, httpx_for, raw, text, tool_calls

MODEL = "claude-opus-5-5"
SYSTEM = "You are a careful engineering agent."
HX = httpx_for(anthropic)


def grep(pattern: str) -> str:
    """Search the code base.

    Args:
        pattern: What to look for.
    """
    return "hit " + pattern


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_system_prompt(SYSTEM)
    return chef


def _prefix() -> tuple[Any, Any]:
    """The ``system`` and ``tools`` the library sends (a native app sends the same)."""
    chef = _chef()
    chef.set_history([user("x")])
    payload = chef.compile("anthropic", model=MODEL).payload
    return json.loads(json.dumps(payload["system"])), json.loads(json.dumps(payload["tools"]))


SYSP, TOOLS = _prefix()


def _client(fake: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="t", max_retries=0, http_client=fake.http_client(HX))


def _reply(k: int, calls: int, thinking: str) -> dict[str, Any]:
    """A reply with `calls` parallel calls and thinking shaped as `thinking`."""
    uses = [
        {"type": "tool_use", "id": f"toolu_{k}_{j}", "name": "grep", "input": {"pattern": str(j)}}
        for j in range(calls)
    ]
    sig = {"type": "thinking", "thinking": f"plan {k}", "signature": f"sig_{k}_a"}
    content: list[dict[str, Any]] = {  # type: ignore[assignment]
        "none": uses,
        "thinking": [sig, *uses],
        "redacted": [{"type": "redacted_thinking", "data": f"red_{k}"}, *uses],
        "interleaved": [
            sig,
            uses[0],
            {"type": "thinking", "thinking": "", "signature": f"sig_{k}_b"},
            *uses[1:],
        ],
    }[thinking]
    return {
        "id": f"msg_{k}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _result(use_id: str, form: str) -> ToolResultBlockParam:
    if form == "blocks":  # an MCP result with several text items
        blocks = [TextBlockParam(type="text", text="a"), TextBlockParam(type="text", text="b")]
        return ToolResultBlockParam(type="tool_result", tool_use_id=use_id, content=blocks)
    if form == "marked":
        marked = TextBlockParam(type="text", text="m", cache_control={"type": "ephemeral"})
        return ToolResultBlockParam(type="tool_result", tool_use_id=use_id, content=[marked])
    if form == "error":
        return ToolResultBlockParam(
            type="tool_result", tool_use_id=use_id, content="boom", is_error=True
        )
    return ToolResultBlockParam(type="tool_result", tool_use_id=use_id, content="res")


TURN = st.tuples(
    st.integers(1, 3),  # parallel calls
    st.sampled_from(["none", "thinking", "redacted", "interleaved"]),
    st.randoms(use_true_random=False),  # the order the results are sent in
    st.lists(st.sampled_from(["text", "blocks", "error"]), min_size=3, max_size=3),
    st.booleans(),  # a text block after the results
)


def _native(fake: FakeAnthropic, turns: list[Any], marked: bool) -> list[dict[str, Any]]:
    """A history made turn by turn through the SDK; each request must be accepted.

    `marked`: the first result carries a ``cache_control`` marker (the API takes four).
    """
    client = _client(fake)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "find the TODOs"}]
    for k, (calls, thinking, order, forms, note) in enumerate(turns):
        fake.script(
            raw(
                _reply(
                    k, calls, "thinking" if thinking == "interleaved" and calls < 2 else thinking
                )
            )
        )
        reply = client.messages.create(
            model=MODEL, max_tokens=4096, system=SYSP, tools=TOOLS, messages=messages
        )
        content = [b.to_dict() for b in reply.content]
        messages.append({"role": "assistant", "content": content})
        uses = [str(b["id"]) for b in content if b["type"] == "tool_use"]
        order.shuffle(uses)
        blocks: list[Any] = [_result(u, forms[j]) for j, u in enumerate(uses)]
        if marked and k == 0:
            blocks[0] = _result(uses[0], "marked")
        if note:
            blocks.append(TextBlockParam(type="text", text=f"note {k}"))
        messages.append({"role": "user", "content": blocks})
    return messages


def _unmarked_end(sent: list[Any]) -> list[Any]:
    """`sent` without the cache breakpoint the library puts on the request's last block."""
    last = sent[-1]["content"][-1]
    assert last.pop("cache_control") == {"type": "ephemeral"}
    return sent


def _continue(fake: FakeAnthropic, chef: ContextChef) -> None:
    """Two more turns from the imported history, each sent through the SDK."""
    client = _client(fake)
    chef.append(user("continue"))
    fake.script(tool_calls(("grep", {"pattern": "z"}), reasoning="more"), text("done"))
    reply = client.messages.create(**chef.compile("anthropic", model=MODEL).payload)
    (call,) = chef.ingest(reply)
    chef.append(user_results(call.id))
    client.messages.create(**chef.compile("anthropic", model=MODEL).payload)


def user_results(call_id: str) -> Any:
    from contextchef.history._messages import Message

    return Message(role="user", parts=(ToolResult(call_id=call_id, name="grep", content="z"),))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(turns=st.lists(TURN, min_size=1, max_size=3), marked=st.booleans())
def test_an_accepted_native_history_comes_back_byte_for_byte(
    turns: list[Any], marked: bool
) -> None:
    fake = FakeAnthropic(ids=Ids("p"))
    messages = _native(fake, turns, marked)
    assert fake.violations == ()
    chef = _chef()
    chef.set_history(from_anthropic(messages, system=SYSP).messages)
    request = chef.compile("anthropic", model=MODEL)
    assert request.changes == ()
    assert json.dumps(_unmarked_end(request.mutable_payload()["messages"])) == json.dumps(messages)
    _continue(fake, chef)
    assert fake.violations == ()


def _two_turns(results: Any) -> list[dict[str, Any]]:
    """Two thinking turns of two parallel calls; `results` makes each user message."""
    fake = FakeAnthropic(ids=Ids("t"))
    client = _client(fake)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "find the TODOs"}]
    for k in range(2):
        fake.script(
            tool_calls(("grep", {"pattern": "a"}), ("grep", {"pattern": "b"}), reasoning=f"t{k}")
        )
        reply = client.messages.create(
            model=MODEL, max_tokens=4096, system=SYSP, tools=TOOLS, messages=messages
        )
        content = [b.to_dict() for b in reply.content]
        messages.append({"role": "assistant", "content": content})
        messages.append(
            {
                "role": "user",
                "content": results([b["id"] for b in content if b["type"] == "tool_use"]),
            }
        )
    assert fake.violations == ()
    return messages


def _continued(messages: list[dict[str, Any]]) -> tuple[Any, FakeAnthropic]:
    chef = _chef()
    chef.set_history(from_anthropic(messages, system=SYSP).messages)
    chef.append(user("continue"))
    fake = FakeAnthropic(ids=Ids("y"))
    fake.script(text("ok"))
    request = chef.compile("anthropic", model=MODEL)
    _client(fake).messages.create(**request.payload)  # a 400 raises
    return request, fake


def test_results_sent_in_reverse_order_stay_as_sent() -> None:
    """Break-it 21, case 1: the normalizer sorted them, voiding the next thinking."""
    messages = _two_turns(lambda ids: [_result(u, "text") for u in reversed(ids)])
    request, fake = _continued(messages)
    assert "moved_result" not in [c.kind for c in request.changes]
    assert request.payload["messages"][:4] == messages[:4]
    assert fake.violations == ()


def test_a_result_of_several_text_blocks_is_sent_as_given() -> None:
    """Break-it 21, case 2: the parser joined the blocks into one text, silently."""
    messages = _two_turns(lambda ids: [_result(u, "blocks") for u in ids])
    request, fake = _continued(messages)
    assert request.payload["messages"][2] == messages[2]
    assert request.payload["messages"][2]["content"][0]["content"] == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
    ]
    assert fake.violations == ()


def test_a_repair_in_front_of_thinking_drops_that_thinking_and_says_so() -> None:
    """A whitespace-only text block (refused by the API, so added to the stored history
    after the turns were made) is dropped: the thinking after it goes too, reported, while
    the thinking before it is kept."""
    messages = _two_turns(lambda ids: [_result(u, "text") for u in ids])
    messages[2]["content"].append({"type": "text", "text": " "})
    request, fake = _continued(messages)
    kinds = [c.kind for c in request.changes]
    assert "dropped_thinking" in kinds
    (dropped,) = [c for c in request.changes if c.kind == "dropped_thinking"]
    assert dropped.index == 3 and "prefix check" in dropped.detail
    sent = request.payload["messages"]
    assert sent[1] == messages[1]  # the first turn's thinking is still sent
    assert [b["type"] for b in sent[3]["content"]] == ["tool_use", "tool_use"]
    assert fake.violations == ()
