"""``extra={"extra_headers": {...}}`` ends up in ``request.headers``, merged, on Anthropic.

README's call is ``client.messages.create(**request.payload, extra_headers=request.headers)``;
with ``extra_headers`` in the payload too, that was a ``TypeError`` (the keyword twice),
and merging by hand let the host's ``anthropic-beta`` replace the library's. Now the
host's headers join ``CompiledRequest.headers`` and leave the payload, the beta header
merged value by value (sorted, once). On the OpenAI wires, whose payload is the whole
call (``create(**payload)``), ``extra_headers`` stays in it. Requests go through the
official SDK clients against the fakes.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from contextchef import ContextChef, UsageError, user
from contextchef.testing import RECORDED_HEADERS, FakeAnthropic, fake_for, httpx_for, text

HX = httpx_for(anthropic)
RECORD = (*RECORDED_HEADERS, "x-trace")


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.set_history([user("hello")])
    return chef


@pytest.mark.parametrize("beta_key", ["anthropic-beta", "Anthropic-Beta"])
def test_the_readme_call_works_with_extra_headers_and_merges_the_beta(beta_key: str) -> None:
    extra: dict[str, Any] = {
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "extra_headers": {
            "x-trace": "t-1",
            beta_key: "zeta-2026-01-01, context-management-2025-06-27",
        },
    }
    request = _chef().compile(
        "anthropic", model="claude-opus-5-5", extra=extra, betas=["alpha-2026-01-01"]
    )
    assert "extra_headers" not in request.payload and request.dropped == ()
    assert request.headers == {
        "x-trace": "t-1",
        "anthropic-beta": "alpha-2026-01-01,context-management-2025-06-27,zeta-2026-01-01",
    }
    fake = FakeAnthropic(record_headers=RECORD).script(text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    client.beta.messages.create(**request.payload, extra_headers=request.headers)  # README
    (sent,) = fake.requests
    assert fake.violations == ()
    assert sent.headers["x-trace"] == "t-1"
    assert sent.headers["anthropic-beta"] == request.headers["anthropic-beta"]
    assert extra["extra_headers"]["x-trace"] == "t-1" and len(extra["extra_headers"]) == 2


def test_extra_headers_alone_need_no_beta_call() -> None:
    request = _chef().compile(
        "anthropic", model="claude-opus-5-5", extra={"extra_headers": {"x-trace": "t-2"}}
    )
    assert request.headers == {"x-trace": "t-2"}
    fake = FakeAnthropic(record_headers=RECORD).script(text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    client.messages.create(**request.payload, extra_headers=request.headers)
    assert fake.requests[0].headers["x-trace"] == "t-2"


@pytest.mark.parametrize("target", ["openai", "responses"])
def test_on_the_openai_wires_extra_headers_stay_in_the_call(target: str) -> None:
    request = _chef().compile(target, model="gpt-5.5", extra={"extra_headers": {"x-trace": "t-3"}})
    assert request.payload["extra_headers"] == {"x-trace": "t-3"} and request.headers == {}
    fake = fake_for(target, record_headers=RECORD).script(text("ok"))
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    create = client.responses.create if target == "responses" else client.chat.completions.create
    create(**request.payload)
    assert fake.requests[0].headers["x-trace"] == "t-3"


@pytest.mark.parametrize(
    "value", [["x-trace"], {"x-trace": 1}, {"x-trace": "1", "X-Trace": "2"}, "x-trace: 1"]
)
def test_extra_headers_must_be_names_to_strings(value: Any) -> None:
    with pytest.raises(UsageError, match=r"extra field 'extra_headers' holds .* mapping"):
        _chef().compile("anthropic", model="claude-opus-5-5", extra={"extra_headers": value})


@pytest.mark.parametrize(
    "value",
    [
        {"x-trâce": "1"},  # the SDK call raised UnicodeEncodeError (break-it 38)
        {"x trace": "1"},
        {"x-trace": "a\r\nx-injected: 1"},  # would split the header
        {"x-trace": "naïve"},
        {"": "1"},
    ],
)
def test_a_header_no_http_client_can_send_is_refused_at_compile(value: Any) -> None:
    with pytest.raises(UsageError, match="RFC 9110 tokens"):
        _chef().compile("anthropic", model="claude-opus-5-5", extra={"extra_headers": value})


@pytest.mark.parametrize("betas", [[""], ["  "], ["a b"], ["a,b"], [1]])
def test_a_beta_name_that_is_empty_or_spaced_is_refused(betas: Any) -> None:
    with pytest.raises(UsageError, match=r"extra field 'betas' holds .* none empty"):
        _chef().compile("anthropic", model="claude-opus-5-5", extra={"betas": betas})


def test_beta_names_are_stripped_and_sent_once() -> None:
    request = _chef().compile(
        "anthropic", model="claude-opus-5-5", extra={"betas": [" a-1 ", "a-1", "b-2"]}
    )
    assert request.headers == {"anthropic-beta": "a-1,b-2"}
