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
from dataclasses import replace
from typing import Any

from contextchef._errors import CorruptHistoryError, shown_keys
from contextchef.providers import _targets
from contextchef.providers._parsing import ParsedHistory
from contextchef.providers._reading import (
    ReadResponse,
    ResponseNotice,
    WireReader,
    error_text,
    provider_notices,
    response_dict,
)

__all__ = [
    "ReadResponse",
    "ResponseNotice",
    "check_not_failed",
    "parse_response",
    "read_response",
    "response_notices",
]


def check_not_failed(data: Mapping[str, Any]) -> None:
    """Raise for a response that carries an error instead of a turn.

    A response one wire's reader finds failed (`WireReader.failure`: a Responses
    ``status`` of ``failed``, ``cancelled``, ``queued`` or ``in_progress``; a Gemini
    prompt blocked before any candidate), or an error body (an Anthropic ``type:
    "error"``, an OpenAI or Gemini ``error``) with no turn any wire reads.

    Raises:
        CorruptHistoryError: Naming the provider's error code and message.
    """
    for reader in _targets.WIRES:
        why = reader.failure(data)
        if why is not None:
            raise CorruptHistoryError(why, index=0)
    error = data.get("error")
    if isinstance(error, Mapping) and not any(r.turn_key in data for r in _targets.WIRES):
        raise CorruptHistoryError(
            f"the provider returned an error instead of a turn ({error_text(error)})", index=0
        )


def response_notices(response: object) -> tuple[ResponseNotice, ...]:
    """What a response reports about its request (see `ResponseNotice`), turn not parsed.

    Args:
        response: An SDK response object or its JSON dict (any supported API; Anthropic
            and OpenAI Responses report cache misses and dropped thinking).

    Raises:
        CorruptHistoryError: Not a response object or dict.
    """
    return provider_notices(response_dict(response))


def _reader_of(data: Mapping[str, Any]) -> WireReader:
    for reader in _targets.WIRES:
        if reader.detect(data):
            return reader
    expected = ", ".join(r.label for r in _targets.WIRES)
    raise CorruptHistoryError(
        f"not a response of a supported API (expected one of: {expected}; "
        f"keys: {shown_keys(data)})",
        index=0,
    )


def read_response(response: object, *, id_offset: int = 0) -> ReadResponse:
    """The model's turn of a response, its id and its notices.

    The first wire whose reader detects the response reads it
    (`Adapter.read_response`; `ReadResponse.wire` names it); a turn that did not end
    normally gets a notice of kind ``incomplete`` with the provider's own reason
    (Responses ``incomplete_details``, Anthropic ``stop_reason`` ``max_tokens`` /
    ``model_context_window_exceeded`` / ``refusal``, Chat ``finish_reason`` ``length`` /
    ``content_filter`` or a refusal, Gemini ``finishReason`` other than ``STOP``); the
    turn is still read.

    Raises:
        CorruptHistoryError: As `parse_response`.
    """
    data = response_dict(response)
    check_not_failed(data)
    reader = _reader_of(data)
    return replace(reader.read_response(data, id_offset=id_offset), wire=reader.wire)


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
    return read_response(response, id_offset=id_offset).turn
