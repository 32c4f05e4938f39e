"""What a fake provider keeps: every request it received and every rule it saw broken."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Check", "RecordedRequest", "Violation", "is_provider_worded", "provider_worded"]


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One HTTP request a fake received, and what it answered."""

    index: int
    """Position in the fake's request log, from 0."""
    method: str
    """HTTP method, e.g. ``POST``."""
    path: str
    """URL path, e.g. ``/v1/messages``."""
    headers: Mapping[str, str]
    """The recorded headers (lower-case names; credentials are never recorded)."""
    body: Any
    """The parsed JSON body; None when the body was not JSON."""
    status: int
    """The HTTP status the fake answered."""
    reply: Mapping[str, Any] = field(repr=False)
    """The JSON body the fake answered."""


@dataclass(frozen=True, kw_only=True)
class Violation:
    """A request the fake refused, and why.

    Provider rules carry the name of their check function (``anthropic_tool_use_answered``);
    the fake's own refusals are ``invalid_json`` (400), ``unknown_endpoint`` (404) and
    ``script_exhausted`` (500).
    """

    request_index: int
    """`RecordedRequest.index` of the refused request."""
    rule: str
    """The rule broken."""
    message: str
    """Where and how, e.g. ``messages[1]: tool_use ids ['toolu_0001'] have no tool_result ...``."""
    status: int
    """The HTTP status answered."""


Check = Callable[[Mapping[str, Any], Sequence[RecordedRequest]], Iterable[str]]
"""A provider rule: ``check(body, earlier)`` yields one message per problem found in the
JSON `body` of a request (`earlier` holds the requests received before it, for rules that
compare requests); it yields nothing when the request is valid. Its ``__name__`` names the
rule in error replies and in `Violation.rule`.

A rule that also needs the request's headers declares a keyword-only parameter with a
default, ``def check(body, earlier, *, headers=NO_HEADERS)``: the fake then passes every
header of the request (lower-case names, credentials left out). Such a function still is a
`Check`, so it can be called with two arguments."""

_C = TypeVar("_C", bound=Callable[..., Iterable[str]])
_WORDED = "provider_worded"


def provider_worded(check: _C) -> _C:
    """Mark a rule whose messages are the provider's own error text, returning the rule.

    When such a rule is broken, the fake's error body carries its first message as is
    (as the provider would send it: ``messages.1.content.0: Invalid ...``), followed by
    any other broken rule in the fake's usual form; other rules' messages are prefixed
    with the fake's and the rule's names. The `Violation` records are the same either way.
    """
    setattr(check, _WORDED, True)
    return check


def is_provider_worded(check: object) -> bool:
    """Whether `check` was marked with `provider_worded`."""
    return getattr(check, _WORDED, False) is True
