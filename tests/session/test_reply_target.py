"""A reply joins the request it answers: its own wire's, never a later compile's for another.

A host that compiles for one provider, then for a fallback with a prefill, and ingests
the first provider's reply, got that reply joined with the fallback's prefill (``{plain
answer``): ingest read the sent request of the last target compiled. The reply now picks
its request by the wire that read it (`ReadResponse.wire`, `providers.reply_target`).
Multi-turn through the official SDK clients against the fakes, payloads SDK-checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from test_ingest import send as sdk_send

from contextchef import ContextChef, TextPart, user
from contextchef.providers import read_response
from contextchef.providers._parsing import ParsedHistory
from contextchef.providers._reading import ReadResponse
from contextchef.providers._targets import reply_target
from contextchef.providers._usage import SentRequest
from contextchef.testing import (
    FakeAnthropic,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    Ids,
    text,
)
from sdk_check import sdk_problems

MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5.5", "responses": "gpt-5.5"}
FAKES: dict[str, Callable[..., FakeProvider]] = {
    "anthropic": FakeAnthropic,
    "openai": FakeOpenAIChat,
    "responses": FakeResponses,
}


def fake_for(target: str, ids: Ids | None = None) -> FakeProvider:
    """`target`'s fake; fakes sharing `ids` never give two replies the same id."""
    return FAKES[target](ids=ids or Ids())


def _compile(chef: ContextChef, target: str, **options: Any) -> dict[str, Any]:
    payload = chef.compile(target, model=MODELS[target], **options).payload
    assert sdk_problems(target, payload) == []
    return payload


def _answers(chef: ContextChef) -> list[str]:
    return [
        "".join(p.text for p in m.parts if isinstance(p, TextPart))
        for m in chef.history
        if m.role == "assistant"
    ]


@pytest.mark.parametrize(
    ("first", "fallback"), [("responses", "anthropic"), ("openai", "anthropic")]
)
def test_a_reply_is_not_joined_with_a_later_prefill_for_another_target(
    first: str, fallback: str
) -> None:
    ids = Ids()
    one = fake_for(first, ids=ids).script(text("plain answer"), text("second answer"))
    two = fake_for(fallback, ids=ids).script(text('"a": 1}'))
    chef = ContextChef()
    chef.set_history([user("JSON please")])
    request = _compile(chef, first)  # no prefill
    _compile(chef, fallback, prefill="{")  # the fallback, prefilled, compiled after it
    chef.ingest(sdk_send(first, one, request))  # the first provider answers
    assert _answers(chef) == ["plain answer"]  # before: "{plain answer"
    chef.append(user("and again, as JSON"))
    prefilled = _compile(chef, fallback, prefill="{")
    chef.ingest(sdk_send(fallback, two, prefilled))
    assert _answers(chef) == ["plain answer", '{"a": 1}']  # its own prefill, joined
    chef.append(user("once more"))
    chef.ingest(sdk_send(first, one, _compile(chef, first)))
    assert _answers(chef) == ["plain answer", '{"a": 1}', "second answer"]
    assert one.violations == () and two.violations == ()


def test_the_prefilled_reply_still_joins_when_another_target_was_compiled_after() -> None:
    """The other way round: the prefilled request's reply keeps its prefill."""
    ids = Ids()
    claude = fake_for("anthropic", ids=ids).script(text('"a": 1}'))
    chef = ContextChef()
    chef.set_history([user("JSON please")])
    prefilled = _compile(chef, "anthropic", prefill="{")
    _compile(chef, "responses")  # compiled, never sent
    chef.ingest(sdk_send("anthropic", claude, prefilled))
    assert _answers(chef) == ['{"a": 1}']
    assert claude.violations == ()


def test_read_response_names_its_wire() -> None:
    reply = fake_for("responses").script(text("hi"))
    response = sdk_send("responses", reply, {"model": "gpt-5.5", "input": "hi"})
    assert read_response(response).wire == "responses"


class _Ledger:
    def __init__(self, answered: bool, model: str = "") -> None:
        self.answered = answered
        self.sent = SentRequest(model=model)


def _target(wire: str, last: str | None, compiled: dict[str, _Ledger], model: str = "") -> str:
    read = ReadResponse(turn=ParsedHistory(), wire=wire, model=model)
    return reply_target(read, last, compiled)[0]


def test_reply_target_prefers_the_awaiting_request_of_the_wire() -> None:
    waiting, answered = _Ledger(False), _Ledger(True)
    both = {"openai": waiting, "anthropic": waiting}
    assert _target("anthropic", "openai", both) == "anthropic"
    assert _target("openai", "anthropic", both) == "openai"
    assert _target("openai", "deepseek", {"openai": waiting, "deepseek": waiting}) == "deepseek"
    # the last target of the wire was answered already; another of that wire waits
    shared = {"openai": waiting, "deepseek": answered}
    assert _target("openai", "deepseek", shared) == "openai"
    assert _target("openai", None, {"deepseek": answered}) == "deepseek"
    assert _target("responses", "anthropic", both) == ""  # no request on that wire
    assert _target("", "anthropic", both) == "anthropic"


def test_reply_target_reads_the_model_the_reply_names() -> None:
    two = {"openai": _Ledger(False, "gpt-5.5"), "deepseek": _Ledger(False, "deepseek-chat")}
    assert _target("openai", "deepseek", two, "gpt-5.5") == "openai"
    assert _target("openai", "deepseek", two, "gpt-5.5-2026-01-15") == "openai"  # dated
    assert _target("openai", "openai", two, "deepseek-chat") == "deepseek"
    assert _target("openai", "deepseek", two, "gpt-5.5-mini-x") == "deepseek"  # no match
    same = {"openai": _Ledger(False, "m"), "deepseek": _Ledger(False, "m")}
    read = ReadResponse(turn=ParsedHistory(), wire="openai", model="m")
    target, flagged = reply_target(read, "deepseek", same)
    assert target == "deepseek"
    [notice] = flagged.notices
    assert (notice.kind, notice.reason) == ("reply_target_ambiguous", "deepseek")
    assert "'openai', 'deepseek'" in notice.detail and "Chat Completions" in notice.detail
