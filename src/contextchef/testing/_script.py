"""Provider-neutral scripted model turns: what a fake provider answers, one per request.

A `Turn` says what the model "does" on one request: some text, some tool calls (several
at once are parallel calls) and optionally a reasoning block. Each fake renders it in its
own API's exact response JSON (`contextchef.testing._replies`). A turn may also start with
searches the provider runs itself (`ProviderSearch`, made by `provider_search`), which the
fake fills in from the request it answers (`contextchef.testing._search`). A `RawReply`
bypasses the rendering: its body and status are sent as given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from contextchef import UsageError
from contextchef._errors import json_reason

__all__ = [
    "SEARCH_ERROR_CODES",
    "ProviderSearch",
    "RawReply",
    "ScriptedCall",
    "Turn",
    "provider_search",
    "raw",
    "text",
    "tool_calls",
]


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """One tool call the model makes in a scripted turn."""

    name: str
    """The tool's wire name, as the model would write it."""
    arguments: Mapping[str, Any]
    """The arguments, a JSON object (copied at construction)."""


SEARCH_ERROR_CODES = (
    "execution_time_exceeded",
    "invalid_tool_input",
    "too_many_requests",
    "unavailable",
)
"""The error codes of Anthropic's server tool search (``ToolSearchToolResultErrorCode``)."""


@dataclass(frozen=True, kw_only=True)
class ProviderSearch:
    """One tool search the provider runs inside a scripted turn (see `provider_search`)."""

    found: tuple[str, ...]
    """The deferred tools the search finds, by wire name, in order (may be empty)."""
    query: str | None
    """What the model searched for: the BM25 ``query`` or the regex ``pattern``; None to
    make one from `found` when the fake knows which variant the request declares."""
    error: str | None = None
    """An Anthropic ``tool_search_tool_result_error`` code to answer with instead of
    results (one of `SEARCH_ERROR_CODES`); None for results."""


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One scripted model answer, rendered by each fake in its provider's shape.

    Parts come out in the order reasoning, provider searches, text, calls (the order the
    providers use).
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
    searches: tuple[ProviderSearch, ...] = ()
    """Searches the provider runs before the text and calls (`provider_search`); only
    `FakeAnthropic` and `FakeResponses` answer them."""


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
    except (TypeError, ValueError, RecursionError) as exc:  # (nested past Python's limit)
        raise UsageError(f"{what} is not JSON-serializable: {json_reason(exc)}") from None
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


def provider_search(
    *found: str,
    query: str | None = None,
    then: Turn | str | None = None,
    error: str | None = None,
) -> Turn:
    """A turn in which the provider's own tool search finds deferred tools first.

    The fake answering it fills in the rest from the request: on `FakeAnthropic`, a
    ``server_tool_use`` named after the request's server search tool
    (``tool_search_tool_bm25`` with ``{"query": ...}`` or ``tool_search_tool_regex`` with
    ``{"pattern": ...}``) and its ``tool_search_tool_result`` with one ``tool_reference``
    per found tool; on `FakeResponses`, a hosted ``tool_search_call`` (``execution:
    "server"``, ``call_id: null``, arguments ``{"paths": [...]}`` naming what it loads) and
    a ``tool_search_output`` carrying copies of the request's entries that declare the
    found tools (a namespace whole, or a flat deferred function). What `then` says comes
    after: text, and calls, which `FakeResponses` sends in the found tool's namespace.

    Example: ``provider_search("get_weather", query="weather",
    then=tool_calls(("get_weather", {"city": "Paris"})))``.

    Args:
        *found: Wire names of the tools found, each one the request declares with
            ``defer_loading: true``; none for a search that finds nothing.
        query: The model's BM25 query or regex pattern (Anthropic; the Responses
            arguments name the loaded paths instead); None makes one from the names
            (joined by spaces, or a regex alternation of the escaped names).
        then: What the model does after the search: a turn from `text`, `tool_calls` or
            another `provider_search` (whose search comes second), or a string for text;
            None for nothing more.
        error: Answer the search with Anthropic's ``tool_search_tool_result_error`` of
            this code (`SEARCH_ERROR_CODES`, e.g. ``"invalid_tool_input"`` for a bad
            regex) instead of results; the search then finds nothing. Responses documents
            no hosted search error, so `FakeResponses` refuses such a turn.

    Returns:
        The turn, for `FakeAnthropic.script` or `FakeResponses.script`. A fake that
        cannot honour it (a found tool the request does not defer, no provider search
        tool in the request, or a fake without provider search) answers HTTP 500 naming
        the tool, records a `Violation` with rule ``provider_search`` and keeps the turn.

    Raises:
        UsageError: A name or the query is not a non-empty string, nothing found and no
            query, `then` is not a turn, a string or None, or `error` is not a known code
            or comes with found tools.
    """
    for i, name in enumerate(found):
        if not isinstance(name, str) or not name:
            raise UsageError(f"found tool {i} must be a non-empty wire name, got {name!r}")
    if query is not None and (not isinstance(query, str) or not query):
        raise UsageError(f"query must be a non-empty string or None, got {query!r}")
    if query is None and not found:
        raise UsageError("provider_search() finding nothing needs the query= it ran")
    if error is not None and error not in SEARCH_ERROR_CODES:
        raise UsageError(f"error must be one of {', '.join(SEARCH_ERROR_CODES)}, got {error!r}")
    if error is not None and found:
        raise UsageError(f"a search answered with error {error!r} finds nothing; drop {found}")
    if isinstance(then, str):
        then = Turn(text=then)
    elif then is None:
        then = Turn()
    elif not isinstance(then, Turn):
        raise UsageError(
            f"then must be a turn (text(...), tool_calls(...), provider_search(...)), "
            f"a string or None, got {type(then).__name__}"
        )
    search = ProviderSearch(found=tuple(found), query=query, error=error)
    return replace(then, searches=(search, *then.searches))


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
