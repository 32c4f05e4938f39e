"""Provider-neutral scripted model turns: what a fake provider answers, one per request.

A `Turn` says what the model "does" on one request: some text, some tool calls (several
at once are parallel calls) and optionally a reasoning block. Each fake renders it in its
own API's exact response JSON (`contextchef.testing._replies`). A `RawReply` bypasses the
rendering: its body and status are sent as given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextchef import UsageError

__all__ = ["RawReply", "ScriptedCall", "Turn", "raw", "text", "tool_calls"]


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """One tool call the model makes in a scripted turn."""

    name: str
    """The tool's wire name, as the model would write it."""
    arguments: Mapping[str, Any]
    """The arguments, a JSON object (copied at construction)."""


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One scripted model answer, rendered by each fake in its provider's shape.

    Parts come out in the order reasoning, text, calls (the order the providers use).
    """

    text: str = ""
    """Visible answer text; empty sends no text block."""
    calls: tuple[ScriptedCall, ...] = ()
    """Tool calls, in order; several are parallel calls in one turn."""
    reasoning: str | None = None
    """Reasoning text with a deterministic signature (Anthropic ``thinking`` block with
    ``signature``, Responses ``reasoning`` item with ``encrypted_content``, Gemini thought
    part plus ``thoughtSignature``, Chat ``reasoning_content`` as DeepSeek sends it);
    None sends no reasoning."""


@dataclass(frozen=True, kw_only=True)
class RawReply:
    """A reply sent exactly as given, for full control (errors, odd shapes)."""

    body: Mapping[str, Any]
    """The JSON body."""
    status: int = 200
    """The HTTP status."""


def _json_object(value: object, what: str) -> dict[str, Any]:
    """A deep copy of a JSON object, or UsageError naming `what`."""
    if not isinstance(value, Mapping):
        raise UsageError(f"{what} must be a JSON object (a mapping), got {type(value).__name__}")
    try:
        copied: dict[str, Any] = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{what} is not JSON-serializable: {exc}") from exc
    return copied


def text(content: str, *, reasoning: str | None = None) -> Turn:
    """A turn in which the model answers with text only.

    Args:
        content: The answer text.
        reasoning: Reasoning to send before it (see `Turn.reasoning`); None for none.

    Returns:
        The turn, for `FakeProvider.script`.

    Raises:
        UsageError: `content` or `reasoning` is not a string.
    """
    _check_str("text content", content)
    if reasoning is not None:
        _check_str("reasoning", reasoning)
    return Turn(text=content, reasoning=reasoning)


def tool_calls(
    *calls: tuple[str, Mapping[str, Any]], text: str = "", reasoning: str | None = None
) -> Turn:
    """A turn in which the model calls one tool, or several in parallel.

    Example: ``tool_calls(("read_file", {"path": "a.py"}), ("grep", {"pattern": "x"}))``.

    Args:
        *calls: ``(wire name, arguments)`` pairs, in order; arguments are a JSON object.
        text: Text the model writes before the calls; empty for none.
        reasoning: Reasoning to send first (see `Turn.reasoning`); None for none.

    Returns:
        The turn, for `FakeProvider.script`.

    Raises:
        UsageError: No calls, a call that is not a (name, object) pair, or arguments that
            are not JSON-serializable.
    """
    if not calls:
        raise UsageError("tool_calls() needs at least one (name, arguments) pair")
    made = []
    for i, call in enumerate(calls):
        if not (isinstance(call, tuple) and len(call) == 2 and isinstance(call[0], str)):
            raise UsageError(f"call {i} must be a (name, arguments) pair, got {call!r}")
        name, arguments = call
        made.append(ScriptedCall(name=name, arguments=_json_object(arguments, f"call {i} args")))
    _check_str("text", text)
    if reasoning is not None:
        _check_str("reasoning", reasoning)
    return Turn(text=text, calls=tuple(made), reasoning=reasoning)


def raw(body: Mapping[str, Any], *, status: int = 200) -> RawReply:
    """A reply sent as given: `body` as JSON with HTTP `status`.

    Args:
        body: The JSON body (e.g. a provider's error object or an unusual response).
        status: The HTTP status code, 100-599.

    Returns:
        The reply, for `FakeProvider.script`.

    Raises:
        UsageError: `body` is not a JSON object or `status` is not an HTTP status code.
    """
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise UsageError(f"status must be an HTTP status code (100-599), got {status!r}")
    return RawReply(body=_json_object(body, "raw reply body"), status=status)


def _check_str(what: str, value: object) -> None:
    if not isinstance(value, str):
        raise UsageError(f"{what} must be a string, got {type(value).__name__}")
