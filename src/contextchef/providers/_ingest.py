"""Provider responses in: the model's turn of each API's response -> the message IR.

`parse_response` takes a response from an official SDK (Anthropic ``Message``, OpenAI
``ChatCompletion`` — DeepSeek's included —, OpenAI Responses ``Response``, google-genai
``GenerateContentResponse``) or the same as the JSON dict the API returned, finds the
model's turn in it and parses that turn with the history parser of its wire format, so
every block comes in as recorded: thinking blocks and signatures, encrypted reasoning,
item ids, server tool blocks, Gemini thought signatures.

SDK objects are read with ``model_dump``: the Anthropic and OpenAI SDKs keep exactly the
fields the API sent (``exclude_unset``); google-genai models are dumped under their JSON
names without their unset fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextchef._errors import CorruptHistoryError, shown_keys
from contextchef.providers._parsing import ParsedHistory
from contextchef.providers.anthropic._parse import from_anthropic
from contextchef.providers.gemini._parse import from_gemini
from contextchef.providers.openai_chat._parse import from_openai
from contextchef.providers.responses._parse import from_responses

__all__ = [
    "ReadResponse",
    "ResponseNotice",
    "check_not_failed",
    "parse_response",
    "read_response",
    "response_notices",
    "stop_notices",
]


@dataclass(frozen=True, kw_only=True)
class ResponseNotice:
    """Something a response reports about how the request was used.

    Anthropic reports thinking it could not use in ``input_transformations``
    (``thinking_dropped`` with reason ``prefix_binding_mismatch``,
    ``model_binding_mismatch`` or ``organization_binding_mismatch``; or
    ``thinking_mismatch_allowed``) and, with cache diagnostics, why the prompt cache
    missed (``diagnostics.cache_miss_reason``: ``system_changed``, ``tools_changed``,
    ``messages_changed``, ``model_changed``...)
    (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking,
    https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics).

    Attributes:
        kind: ``thinking_dropped``, ``thinking_mismatch_allowed``, ``cache_miss``,
            ``incomplete`` (the turn did not end normally: cut off at a token limit,
            refused or filtered; see `stop_notices`) or another type the provider
            reported.
        reason: The provider's reason or cache-miss type (``""`` if none).
        path: Where in the request (e.g. ``messages.4.content.0``; ``""`` if none).
        detail: One sentence for logs.
        missed_tokens: For a cache miss: the provider's estimate of the input tokens
            that would have been read from the cache
            (``cache_missed_input_tokens``), or None when it gave none.
    """

    kind: str
    reason: str = ""
    path: str = ""
    detail: str = ""
    missed_tokens: int | None = None


@dataclass(frozen=True, kw_only=True)
class ReadResponse:
    """A response read by `read_response`."""

    turn: ParsedHistory
    """The model's turn (see `parse_response`)."""
    id: str | None = None
    """The response's id (``msg_...``, ``chatcmpl-...``, ``resp_...``, Gemini's
    ``responseId``), or None."""
    notices: tuple[ResponseNotice, ...] = ()
    """What the response reported about the request (see `ResponseNotice`)."""


def _as_dict(response: object) -> Mapping[str, Any]:
    if isinstance(response, Mapping):
        return response
    try:
        dump = getattr(response, "model_dump", None)
    except Exception:  # a foreign object whose attributes raise
        dump = None
    if not callable(dump):
        raise CorruptHistoryError(
            f"expected a provider response (an SDK response object or its JSON dict), got "
            f"{type(response).__name__}",
            index=0,
        )
    module = type(response).__module__
    try:
        if module.startswith("google."):
            data = dump(mode="json", by_alias=True, exclude_none=True)
        else:
            data = dump(mode="json", exclude_unset=True)
    except Exception as exc:  # a foreign object whose dump fails
        raise CorruptHistoryError(
            f"cannot read the {type(response).__name__} response: {exc}", index=0
        ) from exc
    if not isinstance(data, Mapping):
        raise CorruptHistoryError(f"{type(response).__name__} did not dump to an object", index=0)
    return data


def _first(data: Mapping[str, Any], key: str, what: str) -> Mapping[str, Any]:
    items = data.get(key)
    if not isinstance(items, list) or not items or not isinstance(items[0], Mapping):
        raise CorruptHistoryError(f"the {what} response has no {key}[0] to read", index=0)
    return items[0]


def _notices(data: Mapping[str, Any]) -> tuple[ResponseNotice, ...]:
    found: list[ResponseNotice] = []
    for item in data.get("input_transformations") or ():
        if isinstance(item, Mapping) and isinstance(item.get("type"), str):
            kind, reason, path = item["type"], str(item.get("reason") or ""), item.get("path")
            found.append(
                ResponseNotice(
                    kind=kind,
                    reason=reason,
                    path=str(path or ""),
                    detail=f"the provider reported {kind} ({reason or 'no reason'}) at "
                    f"{path or 'the request'}",
                )
            )
    diagnostics = data.get("diagnostics")
    miss = diagnostics.get("cache_miss_reason") if isinstance(diagnostics, Mapping) else None
    if isinstance(miss, Mapping) and isinstance(miss.get("type"), str):
        missed = miss.get("cache_missed_input_tokens")
        tokens = missed if isinstance(missed, int) and not isinstance(missed, bool) else None
        about = f" (about {tokens:,} input tokens not read from the cache)" if tokens else ""
        found.append(
            ResponseNotice(
                kind="cache_miss",
                reason=miss["type"],
                detail=f"the prompt cache missed: {miss['type']}{about}",
                missed_tokens=tokens,
            )
        )
    return tuple(found)


_ANTHROPIC_STOPS = {
    "max_tokens": "the reply was cut off at max_tokens",
    "model_context_window_exceeded": "the reply was cut off at the model's context window",
    "refusal": "the model refused to answer (stop_reason refusal)",
}
_CHAT_STOPS = {
    "length": "the reply was cut off at the token limit (finish_reason length)",
    "content_filter": "the reply was withheld by the content filter (finish_reason content_filter)",
}
_GEMINI_NORMAL = {"STOP", "FINISH_REASON_UNSPECIFIED"}


def _stopped(reason: str, detail: str) -> ResponseNotice:
    return ResponseNotice(kind="incomplete", reason=reason, detail=detail)


def stop_notices(data: Mapping[str, Any]) -> tuple[ResponseNotice, ...]:
    """Notices for a turn that did not end normally (kind ``incomplete``).

    The reason is the provider's own value: Responses ``status: "incomplete"`` with
    ``incomplete_details.reason`` (``max_output_tokens``, ``content_filter``); Anthropic
    ``stop_reason`` ``max_tokens``, ``model_context_window_exceeded`` or ``refusal``;
    Chat ``finish_reason`` ``length`` or ``content_filter`` (and a ``refusal`` text);
    Gemini ``finishReason`` other than ``STOP`` (``MAX_TOKENS``, ``SAFETY``,
    ``RECITATION``...). The turn is still ingested; the host decides what to do.
    """
    if "candidates" in data:
        first = (data.get("candidates") or [{}])[0]
        reason = first.get("finishReason", first.get("finish_reason")) if first else None
        if isinstance(reason, str) and reason not in _GEMINI_NORMAL:
            return (_stopped(reason, f"the Gemini reply ended early: finishReason {reason}"),)
        return ()
    if "choices" in data:
        first = (data.get("choices") or [{}])[0]
        if not isinstance(first, Mapping):
            return ()
        found = []
        reason = first.get("finish_reason")
        if isinstance(reason, str) and reason in _CHAT_STOPS:
            found.append(_stopped(reason, _CHAT_STOPS[reason]))
        message = first.get("message")
        refusal = message.get("refusal") if isinstance(message, Mapping) else None
        if isinstance(refusal, str) and refusal:
            found.append(_stopped("refusal", f"the model refused: {refusal[:200]}"))
        return tuple(found)
    if data.get("object") == "response" or isinstance(data.get("output"), list):
        if data.get("status") != "incomplete":
            return ()
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        reason = str(reason or "unknown")
        return (_stopped(reason, f"the Responses reply is incomplete: {reason}"),)
    reason = data.get("stop_reason")
    if isinstance(reason, str) and reason in _ANTHROPIC_STOPS:
        return (_stopped(reason, _ANTHROPIC_STOPS[reason]),)
    return ()


def _error_text(error: Mapping[str, Any]) -> str:
    code = error.get("code") or error.get("type") or error.get("status")
    message = error.get("message")
    return f"{code or 'no code'}: {message or 'no message'}"


def check_not_failed(data: Mapping[str, Any]) -> None:
    """Raise for a response that carries an error instead of a turn.

    A Responses ``status`` of ``failed`` (its ``error`` object: ``code``, ``message``),
    ``cancelled``, ``queued`` or ``in_progress`` (a background response not finished),
    an Anthropic error body (``type: "error"``), an OpenAI or Gemini error body
    (``error`` and no turn), or a Gemini prompt blocked before any candidate
    (``promptFeedback.blockReason``).

    Raises:
        CorruptHistoryError: Naming the provider's error code and message.
    """
    error = data.get("error")
    status = data.get("status")
    if data.get("object") == "response" and status in (
        "failed",
        "cancelled",
        "queued",
        "in_progress",
    ):
        why = _error_text(error) if isinstance(error, Mapping) else "no error given"
        raise CorruptHistoryError(
            f'the Responses response has status "{status}" ({why}); it has no turn to ingest '
            "(retry the request, or wait for a background response to complete)",
            index=0,
        )
    turn = ("candidates", "choices", "output", "content")
    if isinstance(error, Mapping) and not any(k in data for k in turn):
        raise CorruptHistoryError(
            f"the provider returned an error instead of a turn ({_error_text(error)})", index=0
        )
    feedback = data.get("promptFeedback")
    blocked = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
    if blocked and not data.get("candidates"):
        raise CorruptHistoryError(
            f"Gemini blocked the prompt before answering (promptFeedback.blockReason {blocked})",
            index=0,
        )


def response_notices(response: object) -> tuple[ResponseNotice, ...]:
    """What a response reports about its request (see `ResponseNotice`), turn not parsed.

    Args:
        response: An SDK response object or its JSON dict (any supported API; only
            Anthropic reports anything today).

    Raises:
        CorruptHistoryError: Not a response object or dict.
    """
    return _notices(_as_dict(response))


def read_response(response: object, *, id_offset: int = 0) -> ReadResponse:
    """The model's turn of a response, its id and its notices.

    Raises:
        CorruptHistoryError: As `parse_response`.
    """
    data = _as_dict(response)
    raw_id = data.get("id", data.get("responseId", data.get("response_id")))
    return ReadResponse(
        turn=parse_response(data, id_offset=id_offset),
        id=raw_id if isinstance(raw_id, str) else None,
        notices=(*_notices(data), *stop_notices(data)),
    )


def parse_response(response: object, *, id_offset: int = 0) -> ParsedHistory:
    """The model's turn of a provider response, as IR messages (one assistant message).

    Args:
        response: An SDK response object or its JSON dict, from any supported API.
        id_offset: For Gemini calls without ids: see `from_gemini`.

    Returns:
        The parsed turn; ``notes`` says what was kept as provider-only parts.

    Raises:
        CorruptHistoryError: Not a response of a supported API, or one without a turn to
            read (no choice, no candidate, no content), or one that failed (a Responses
            ``status: "failed"`` with its ``error``, an error body; see
            `check_not_failed`).
    """
    data = _as_dict(response)
    check_not_failed(data)
    if "candidates" in data:  # Gemini generateContent
        content = _first(data, "candidates", "Gemini").get("content")
        if not isinstance(content, Mapping):
            raise CorruptHistoryError("the Gemini candidate has no content", index=0)
        turn = {**content, "role": "model"}
        return from_gemini([turn], id_offset=id_offset)
    if "choices" in data:  # Chat Completions (DeepSeek too)
        message = _first(data, "choices", "Chat Completions").get("message")
        if not isinstance(message, Mapping):
            raise CorruptHistoryError("the Chat Completions choice has no message", index=0)
        return from_openai([message])
    if data.get("object") == "response" or isinstance(data.get("output"), list):  # Responses
        output = data.get("output")
        if output is not None and not isinstance(output, list):
            raise CorruptHistoryError(
                f"the Responses response's 'output' must be a list of items, got "
                f"{type(output).__name__}",
                index=0,
            )
        return from_responses(list(output or []))
    if data.get("type") == "message" or data.get("role") == "assistant":  # Anthropic
        return from_anthropic([{"role": "assistant", "content": data.get("content") or []}])
    raise CorruptHistoryError(
        "not a response of a supported API: expected an Anthropic message, a Chat "
        "Completions or Responses response, or a Gemini GenerateContentResponse "
        f"(keys: {shown_keys(data)})",
        index=0,
    )
