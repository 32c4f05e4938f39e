"""A beta-only Anthropic field given in ``extra`` brings its ``anthropic-beta`` value.

``context_management`` added its beta; ``mcp_servers``, ``fallbacks``, the object form of
``fallback_credit_token`` and ``thread`` (the fields of the anthropic SDK's beta
``MessageCreateParams`` its GA type lacks) needed ``compile(betas=...)``, and the API
refuses them without it. ``extra={"betas": [...]}`` went into the payload, where
``messages.create`` refuses it and ``beta.messages.create`` let the request's
``anthropic-beta`` header replace it. Every request goes through the official SDK against
`FakeAnthropic`, which now refuses a beta-only field without its beta.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from contextchef import ContextChef, UsageError, user
from contextchef.testing import FakeAnthropic, httpx_for, text

HX = httpx_for(anthropic)
MODEL = "claude-opus-5-5"
MCP = [{"type": "url", "url": "https://mcp.example.com/sse", "name": "example"}]


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.set_history([user("hello")])
    return chef


def _sent(request: Any) -> tuple[FakeAnthropic, set[str]]:
    """`request` through ``client.beta.messages.create``; the fake and the betas it got."""
    fake = FakeAnthropic().script(text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    client.beta.messages.create(**request.payload, extra_headers=request.headers)
    (sent,) = fake.requests
    return fake, set(sent.headers["anthropic-beta"].split(","))


@pytest.mark.parametrize(
    ("field", "value", "beta"),
    [
        ("mcp_servers", MCP, "mcp-client-2025-11-20"),
        ("fallbacks", "default", "server-side-fallback-2026-07-01"),
        ("fallback_credit_token", {"token": "fct-1"}, "fallback-credit-2026-07-01"),
        ("thread", {"type": "create"}, "message-threads-2026-08-12"),
    ],
)
def test_a_beta_only_field_brings_its_beta(field: str, value: Any, beta: str) -> None:
    request = _chef().compile("anthropic", model=MODEL, extra={field: value})
    assert request.headers == {"anthropic-beta": beta}
    fake, sent = _sent(request)
    assert fake.violations == () and sent == {beta}


def test_the_fake_refuses_a_beta_only_field_without_its_beta() -> None:
    fake = FakeAnthropic().script(text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    messages: Any = [{"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.beta.messages.create(model=MODEL, max_tokens=16, messages=messages, mcp_servers=MCP)
    assert "rule anthropic_beta_fields broken: mcp_servers" in str(refused.value)
    fake.script(text("ok"))
    client.beta.messages.create(  # the bare token string needs no beta (SDK docstring)
        model=MODEL, max_tokens=16, messages=messages, fallback_credit_token="fct-1"
    )


def test_a_bare_credit_token_and_an_unknown_beta_field_add_nothing() -> None:
    request = _chef().compile("anthropic", model=MODEL, extra={"fallback_credit_token": "fct"})
    assert request.headers == {}
    policy = {"type": "billing_policy", "bill_to": "self"}  # its beta is not documented
    request = _chef().compile("anthropic", model=MODEL, extra={"billing_policy": policy})
    assert request.headers == {} and request.payload["billing_policy"] == policy


def test_betas_in_extra_join_the_header_once_sorted_and_leave_the_payload() -> None:
    extra = {
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "betas": ["zeta-2026-01-01", "context-management-2025-06-27"],
    }
    request = _chef().compile("anthropic", model=MODEL, extra=extra, betas=["alpha-2026-01-01"])
    assert "betas" not in request.payload and request.dropped == ()
    assert request.headers == {
        "anthropic-beta": "alpha-2026-01-01,context-management-2025-06-27,zeta-2026-01-01"
    }
    fake, sent = _sent(request)
    assert fake.violations == ()
    assert sent == {"alpha-2026-01-01", "context-management-2025-06-27", "zeta-2026-01-01"}
    assert extra["betas"] == ["zeta-2026-01-01", "context-management-2025-06-27"]  # unchanged


def test_betas_in_extra_work_with_the_plain_messages_call_too() -> None:
    request = _chef().compile("anthropic", model=MODEL, extra={"betas": ["zeta-2026-01-01"]})
    fake = FakeAnthropic().script(text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    client.messages.create(**request.payload, extra_headers=request.headers)
    assert fake.requests[0].headers["anthropic-beta"] == "zeta-2026-01-01"


def test_a_pinned_version_of_the_feature_is_kept() -> None:
    old = "mcp-client-2025-04-04"  # the tool_configuration shape of mcp_servers
    servers = [{**MCP[0], "tool_configuration": {"enabled": True}}]
    request = _chef().compile("anthropic", model=MODEL, extra={"mcp_servers": servers}, betas=[old])
    assert request.headers == {"anthropic-beta": old}
    request = _chef().compile(
        "anthropic", model=MODEL, extra={"mcp_servers": servers, "betas": [old]}
    )
    assert request.headers == {"anthropic-beta": old}


@pytest.mark.parametrize("value", ["mcp-client-2025-11-20", [1], None])
def test_betas_in_extra_must_be_a_list_of_names(value: Any) -> None:
    with pytest.raises(UsageError, match=r"extra field 'betas' holds .* list of beta names"):
        _chef().compile("anthropic", model=MODEL, extra={"betas": value})
