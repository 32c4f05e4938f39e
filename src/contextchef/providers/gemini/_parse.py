"""Gemini contents -> the message IR."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from contextchef._errors import CorruptHistoryError, shown, shown_keys
from contextchef.history._call_names import names
from contextchef.history._messages import (
    MediaPart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.providers._casing import snake
from contextchef.providers._hints import hints
from contextchef.providers._parsing import (
    HistoryBuilder,
    ParsedHistory,
    UnreadableArguments,
    as_list,
    as_mapping,
    as_messages,
    as_name,
    as_string,
    compact_dumps,
    fit_hints,
    parse_role,
    system_text,
)
from contextchef.providers._reading import (
    ReadResponse,
    RecordedPayload,
    ResponseNotice,
    WireReader,
    WireShape,
    checked_response,
    first_item,
    others_left,
    read_as,
    register_reader,
    stopped,
)
from contextchef.providers._usage import CacheReport, cache_report, tokens_at
from contextchef.providers.gemini import _render as _gemini
from contextchef.providers.gemini import synthetic_index, synthetic_offset  # noqa: F401
from contextchef.providers.gemini._choice import CHOICE
from contextchef.providers.gemini._fields import FIELDS

_G = _gemini.FORMAT


_NESTED = ("function_call", "function_response", "inline_data", "file_data")


def _normalize(part: Mapping[str, Any]) -> dict[str, Any]:
    """A Gemini part with SDK snake_case keys (``args`` / ``response`` values untouched)."""
    out = {snake(k): v for k, v in part.items()}
    for key in _NESTED:
        if isinstance(out.get(key), Mapping):
            out[key] = {snake(k): v for k, v in out[key].items()}
    reply = out.get("function_response")
    if isinstance(reply, dict) and isinstance(reply.get("parts"), list):
        reply["parts"] = [_normalize(p) if isinstance(p, Mapping) else p for p in reply["parts"]]
    return out


class _Calls:
    """Gemini calls waiting for their response, for ids and responses without one."""

    def __init__(self, offset: int = 0) -> None:
        self.open: list[ToolCall] = []
        self.offset = offset

    def take(self, call_id: str | None, name: str) -> ToolCall | None:
        """The open call a response answers: by id, else by name when either has no id.

        A response with an id matching no call answers, by name, a call Gemini sent
        without one (Gemini 2.x; the id the host gave it pairs with nothing).
        """
        for call in self.open:
            if call.id == call_id or (call_id is None and names(call, name)):
                self.open.remove(call)
                return call
        for call in self.open if call_id is not None else ():
            if hints(call.provider_data, _G).get("synthetic_id") and names(call, name):
                self.open.remove(call)
                return call
        return None


def _g_call(hist: HistoryBuilder, i: int, j: int, part: dict[str, Any], calls: _Calls) -> Part:
    raw = as_mapping(hist, i, part["function_call"], "function_call")
    args: Any = raw.get("args", {})
    named: dict[str, Any] = {}
    if isinstance(args, UnreadableArguments):  # sent as {}, refused by the gate
        text, args, part = args.text, {}, {**part, "function_call": {**raw, "args": {}}}
    else:
        args = as_mapping(hist, i, args, "function_call 'args'")
        text, named["args"] = compact_dumps(args), args
    call_id = raw.get("id")
    if call_id is None:
        call_id, named["synthetic_id"] = f"gemini_call_{i + calls.offset}_{j}", True
    call = ToolCall(
        id=as_string(hist, i, call_id, "function_call 'id'"),
        name=as_name(hist, i, raw.get("name"), "function_call 'name'"),
        arguments=text,
    )
    call = hist.call(i, fit_hints(call, part, _gemini.render_part, _G, **named))
    calls.open.append(call)
    return call


def _g_response(hist: HistoryBuilder, i: int, j: int, part: dict[str, Any], calls: _Calls) -> Part:
    raw = as_mapping(hist, i, part["function_response"], "function_response")
    name = as_string(hist, i, raw.get("name"), "function_response 'name'")
    response = as_mapping(hist, i, raw.get("response", {}), "function_response 'response'")
    call = calls.take(raw.get("id"), name)
    named: dict[str, Any] = {}
    call_id = raw.get("id")
    if call is not None and call_id is not None and call_id != call.id:
        hist.notes.append(
            f"message {i}: function_response {shown(name, 80)} has the id {shown(call_id, 80)}"
            " of no call; it answers the call Gemini sent without an id, and goes without one"
        )
        call_id = None
    if call_id is None:
        named["synthetic_id"] = True
        if call is None:
            hist.notes.append(f"message {i}: function_response {name!r} matches no call")
        call_id = call.id if call is not None else f"gemini_result_{i}_{j}"
    text = _gemini.response_text(response)
    is_error = list(response) == ["error"] and isinstance(response["error"], str)
    if dict(response) != {"error" if is_error else "output": text}:
        named["response"] = response
    media = [_g_media_part(hist, i, p) for p in raw.get("parts") or []]
    if None in media:
        raise hist.error(i, "function_response 'parts' must hold inline_data or file_data")
    result = ToolResult(
        call_id=as_string(hist, i, call_id, "function_response 'id'"),
        name=name,
        content=text,
        is_error=is_error,
        media=tuple(m for m in media if m is not None),
    )
    return fit_hints(result, part, _gemini.render_part, _G, **named)


def _g_media_part(hist: HistoryBuilder, i: int, part: Mapping[str, Any]) -> MediaPart | None:
    if isinstance(part.get("inline_data"), Mapping):
        blob = part["inline_data"]
        media_type = as_string(hist, i, blob.get("mime_type"), "inline_data 'mime_type'")
        return MediaPart(media_type=media_type, data=as_string(hist, i, blob.get("data"), "data"))
    if isinstance(part.get("file_data"), Mapping):
        ref = part["file_data"]
        media_type = str(ref.get("mime_type", "application/octet-stream"))
        return MediaPart(media_type=media_type, url=as_string(hist, i, ref.get("file_uri"), "uri"))
    return None


def _g_media(hist: HistoryBuilder, i: int, j: int, part: dict[str, Any], calls: _Calls) -> Part:
    media = _g_media_part(hist, i, part)
    if media is None:
        return hist.provider(i, part, "media part")
    return fit_hints(media, part, _gemini.render_part, _G)


def _g_text(hist: HistoryBuilder, i: int, j: int, part: dict[str, Any], calls: _Calls) -> Part:
    text = as_string(hist, i, part["text"], "part 'text'")
    return fit_hints(TextPart(text=text), part, _gemini.render_part, _G)


_PART_FIELDS = frozenset(
    {
        "audio_metadata",
        "audio_transcription",
        "code_execution_result",
        "document_metadata",
        "executable_code",
        "file_data",
        "function_call",
        "function_response",
        "inline_data",
        "media_processing",
        "media_resolution",
        "part_metadata",
        "speech_metadata",
        "spreadsheet_metadata",
        "text",
        "thought",
        "thought_signature",
        "tool_call",
        "tool_response",
        "video_metadata",
    }
)
"""Every field of Gemini's ``Part`` (google-genai 1.x ``types.Part``, snake_case); a part
with another key is refused by the API (and by the SDK's request types)."""

_GEMINI_PARTS: dict[str, Callable[[HistoryBuilder, int, int, dict[str, Any], _Calls], Part]] = {
    "function_call": _g_call,
    "function_response": _g_response,
    "inline_data": _g_media,
    "file_data": _g_media,
    "text": _g_text,
}


_PART_STRINGS = {
    "executable_code": ("code", "language"),
    "code_execution_result": ("outcome", "output"),
}


def _check_fields(hist: HistoryBuilder, i: int, part: Mapping[str, Any], *, verbatim: bool) -> None:
    """Refuse a part whose fields have the wrong JSON type (``Part``'s).

    Its fields are replayed as they are, and Gemini (or google-genai before sending) would
    then refuse every later request. A malformed ``thoughtSignature`` beside a text or a
    call is dropped and reported when rendered instead; on a part kept `verbatim` it is
    refused here.
    """
    for key, value in part.items():
        if key == "thought_signature" and not verbatim:
            continue
        if key in ("text", "thought_signature") and not isinstance(value, str):
            raise hist.error(i, f"a part's {key!r} must be a string, got {type(value).__name__}")
        if key not in ("text", "thought", "thought_signature", "media_resolution") and not (
            value is None or isinstance(value, Mapping)
        ):
            raise hist.error(i, f"a part's {key!r} must be an object, got {type(value).__name__}")
    for key, fields in _PART_STRINGS.items():
        inner = part.get(key)
        if not isinstance(inner, Mapping):
            continue
        for field in fields:
            if inner.get(field) is not None and not isinstance(inner[field], str):
                raise hist.error(i, f"a part's {key}.{field} must be a string")


def _g_part(
    hist: HistoryBuilder, i: int, j: int, role: Role, raw: object, calls: _Calls
) -> Part | None:
    raw = as_mapping(hist, i, raw, "a part")
    part = _normalize(raw)
    thought = part.get("thought")
    if thought is not None and not isinstance(thought, bool):  # Part.thought: bool or null
        raise hist.error(i, f"a part's 'thought' must be true or false, got {shown(thought)}")
    if part.get("thought") is True:
        if role != "assistant":
            raise hist.error(i, "a thought part in a user content")
        # replayed verbatim: a text of the wrong type would be refused on every later request
        text = as_string(hist, i, part.get("text", ""), "a thought part's 'text'")
        return ReasoningPart(
            provider="gemini", text=text, provider_data={"provider": _G, "part": raw}
        )
    kind = next((k for k in _GEMINI_PARTS if k in part), None)
    _check_fields(hist, i, part, verbatim=kind is None)
    if kind is None:
        if not part or not set(part) <= _PART_FIELDS:
            # Gemini refuses unknown Part fields (and an empty part has nothing to send):
            # dropped and reported rather than kept where every later request fails
            hist.notes.append(f"message {i}: part with keys {shown_keys(raw)} dropped")
            return None
        return hist.provider(i, raw, f"part with keys {shown_keys(raw)}")
    parsed = _GEMINI_PARTS[kind](hist, i, j, part, calls)
    if isinstance(parsed, ToolCall) and role != "assistant":
        raise hist.error(i, "a function_call part in a user content")
    if isinstance(parsed, ToolResult) and role != "user":
        raise hist.error(i, "a function_response part in a model content")
    hist.check(i, _gemini.render_part(parsed), part, f"{kind} part")
    return parsed


def _argument_slots(content: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """Each ``functionCall`` / ``function_call`` part's ``args`` (see `json_safe`)."""
    parts = content.get("parts") if isinstance(content, dict) else None
    for part in parts if isinstance(parts, list) else ():
        for key in ("functionCall", "function_call"):
            call = part.get(key) if isinstance(part, dict) else None
            if isinstance(call, dict) and "args" in call:
                yield call, "args"


def from_gemini(
    contents: Sequence[Mapping[str, Any]],
    *,
    system_instruction: object = None,
    id_offset: int = 0,
) -> ParsedHistory:
    """Parse Gemini ``contents`` (REST camelCase or google-genai snake_case keys).

    Args:
        contents: The ``contents`` list.
        system_instruction: The system instruction, if any: a string or a ``Content``
            dict (becomes ``system``).
        id_offset: Added to the message index in the ids given to calls Gemini sent
            without one (``gemini_call_<index>_<part>``), so that contents parsed one
            response at a time get ids unique in the session (`ContextChef.ingest` sets it).

    Raises:
        CorruptHistoryError: A content is malformed (index and reason given).
    """
    hist = HistoryBuilder(_G)
    calls = _Calls(id_offset)
    for i, content in enumerate(as_messages(hist, contents, "contents", _argument_slots)):
        content = as_mapping(hist, i, content, "a content")
        role = parse_role(
            hist, i, {"role": content.get("role", "user")}, ("user", "model", "function")
        )
        draft = hist.new(role, i)
        for j, raw in enumerate(as_list(hist, content.get("parts") or [], f"content {i}: parts")):
            part = _g_part(hist, i, j, role, raw, calls)
            if part is not None:
                draft.parts.append(part)
    system = system_instruction
    if isinstance(system, Mapping):
        system = system.get("parts") or []
    return hist.result(system_text(hist, system, "system_instruction"))


# -- responses, request payloads, message lists --------------------------------------------

_NORMAL_STOPS = {"STOP", "FINISH_REASON_UNSPECIFIED"}


def detect(data: Mapping[str, Any]) -> bool:
    """Does this response dict look like a ``GenerateContentResponse``?"""
    return "candidates" in data


def failure(data: Mapping[str, Any]) -> str | None:
    """A prompt blocked before any candidate (``promptFeedback.blockReason``)."""
    feedback = data.get("promptFeedback")
    blocked = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
    if blocked and not data.get("candidates"):
        return f"Gemini blocked the prompt before answering (promptFeedback.blockReason {blocked})"
    return None


def _stops(data: Mapping[str, Any]) -> tuple[ResponseNotice, ...]:
    """``finishReason`` other than ``STOP`` (``MAX_TOKENS``, ``SAFETY``, ``RECITATION``...)."""
    first = (data.get("candidates") or [{}])[0]
    reason = first.get("finishReason", first.get("finish_reason")) if first else None
    more = others_left(data, "candidates", "candidateCount")
    if isinstance(reason, str) and reason not in _NORMAL_STOPS:
        return (stopped(reason, f"the Gemini reply ended early: finishReason {reason}"), *more)
    return more


def read_response(response: object, *, id_offset: int = 0) -> ReadResponse:
    """A ``GenerateContentResponse`` (SDK object or dict): the first candidate's turn.

    Args:
        response: The response.
        id_offset: For calls without ids: see `from_gemini`.

    Raises:
        CorruptHistoryError: A blocked prompt, an error body, no candidate, content that
            is not an object, or a turn the parser cannot read. A candidate with a
            ``finishReason`` and no content is an empty reply (no turn; the reason a
            notice); one with neither is corrupt.
    """
    data = checked_response(response, READER)
    candidate = first_item(data, "candidates", "Gemini")
    content = candidate.get("content")
    stop = candidate.get("finishReason", candidate.get("finish_reason"))
    if not isinstance(content, Mapping) and (content is not None or not stop):
        raise CorruptHistoryError("the Gemini candidate has no content (an object)", index=0)
    # a candidate that stopped without content (MAX_TOKENS spent on thinking, SAFETY,
    # RECITATION) is an empty reply: no turn, its finishReason a notice, as on other wires
    contents = [{**content, "role": "model"}] if content is not None else []
    turn = from_gemini(contents, id_offset=id_offset)
    carries = _gemini.GeminiAdapter().keeps  # an empty text holding a thought signature
    return read_as(data, turn, _stops(data), read_cache(data), cut=("MAX_TOKENS",), carries=carries)


def read_request(payload: Mapping[str, Any]) -> RecordedPayload:
    """``contents``; the system instruction and tools at the top or in ``config``."""
    system = payload.get("systemInstruction", payload.get("system_instruction"))
    config = payload.get("config")
    if system is None and isinstance(config, Mapping):
        system = config.get("system_instruction", config.get("systemInstruction"))
    tools = payload.get("tools") or (config.get("tools") if isinstance(config, Mapping) else None)
    return RecordedPayload(payload["contents"], system, tools)


def read_cache(data: Mapping[str, Any]) -> CacheReport:
    """The cache outcome of a ``GenerateContentResponse`` dict (`CacheReport`).

    ``usageMetadata.promptTokenCount`` counts every input token and
    ``cachedContentTokenCount`` those read from the cache; Gemini reports no writes
    (implicit caching: https://ai.google.dev/gemini-api/docs/caching). The SDK's snake-case
    names are read too.
    """
    usage = data.get("usageMetadata", data.get("usage_metadata"))
    return cache_report(
        data,
        usage,
        input_tokens=tokens_at(usage, "promptTokenCount") or tokens_at(usage, "prompt_token_count"),
        read=tokens_at(usage, "cachedContentTokenCount")
        or tokens_at(usage, "cached_content_token_count"),
    )


SHAPE = WireShape(needs=("parts",), bans=("type", "content", "tool_calls", "tool_call_id"))
"""A Gemini ``Content`` has ``parts``, and no ``type``, ``content``, ``tool_calls`` or
``tool_call_id`` (google-genai ``types.Content``)."""


READER = register_reader(
    WireReader(
        wire=_gemini.FORMAT,
        label="Gemini",
        recording="gemini",
        conversation="contents",
        turn_key="candidates",
        detect=detect,
        read_response=read_response,
        failure=failure,
        detect_request=lambda payload: "contents" in payload,
        detect_history=lambda items: any(isinstance(m, Mapping) and "parts" in m for m in items),
        read_request=read_request,
        parse_history=lambda turn, system: from_gemini(turn, system_instruction=system),
        read_cache=read_cache,
        shape=SHAPE,
        choice=CHOICE,
        fields=FIELDS,
    )
)
"""The Gemini wire's `WireReader`."""
