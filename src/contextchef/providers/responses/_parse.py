"""OpenAI Responses input items -> the message IR."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from contextchef._errors import CorruptHistoryError, shown
from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.providers._base import split_data_url
from contextchef.providers._parsing import (
    Draft,
    Hinted,
    HistoryBuilder,
    ParsedHistory,
    UnreadableArguments,
    add_hint,
    arguments_text,
    as_id,
    as_list,
    as_mapping,
    as_messages,
    as_name,
    as_string,
    envelope_hints,
    fit_hints,
)
from contextchef.providers._reading import (
    ReadResponse,
    RecordedPayload,
    ResponseNotice,
    WireReader,
    WireShape,
    checked_response,
    error_text,
    read_as,
    register_reader,
    stopped,
)
from contextchef.providers._usage import CacheReport, cache_report, tokens_at
from contextchef.providers.responses import _render as _responses
from contextchef.providers.responses import _search
from contextchef.providers.responses._choice import CHOICE
from contextchef.providers.responses._fields import FIELDS
from contextchef.providers.responses._item_ids import unique_item_ids
from contextchef.providers.responses._items import item_problem

_R = _responses.FORMAT
_RESPONSES = _responses.ResponsesAdapter()


def _r_content_part(
    hist: HistoryBuilder, i: int, role: Role, raw: object
) -> TextPart | MediaPart | None:
    raw = as_mapping(hist, i, raw, "a content part")
    kind = raw.get("type")

    def render(p: TextPart | MediaPart) -> dict[str, Any]:
        return _responses.render_content_part(p, role)

    if not isinstance(kind, str) or kind not in _PART_TYPES:  # replayed, it would be a 400
        raise hist.error(i, f"content part type {shown(kind, 40)} is not a Responses part")
    if kind in _OUTPUT_TYPES and role != "assistant":  # an input message: input_* parts only
        raise hist.error(
            i,
            f"a content part of type {kind} in a {role} item (a message or a function "
            "output); such input takes input_text, input_image or input_file parts (openai "
            "SDK ResponseInputItemParam), as output_text and refusal are an assistant's",
        )
    if kind in ("input_text", "output_text"):  # replayed without text, it would be a 400
        text = as_string(hist, i, raw.get("text"), f"{kind} 'text'")
        return fit_hints(TextPart(text=text), raw, render, _R)
    part: MediaPart | None = None
    if isinstance(raw.get("file_id"), str):
        default = "image/*" if kind == "input_image" else "application/octet-stream"
        part = MediaPart(media_type=default, file_id=raw["file_id"])
    elif kind == "input_image" and isinstance(raw.get("image_url"), str):
        inline = split_data_url(raw["image_url"])
        part = (
            MediaPart(media_type=inline[0], data=inline[1])
            if inline
            else MediaPart(media_type="image/*", url=raw["image_url"])
        )
    elif kind == "input_file" and isinstance(raw.get("file_url"), str):
        part = MediaPart(media_type="application/octet-stream", url=raw["file_url"])
    elif kind == "input_file" and isinstance(raw.get("file_data"), str):
        inline = split_data_url(raw["file_data"])
        part = MediaPart(media_type=inline[0], data=inline[1]) if inline else None
    name = raw.get("filename")  # kept as given: render names an unnamed file (`file_name`)
    named = {"filename": name} if isinstance(name, str) and name else {}
    return None if part is None else fit_hints(part, raw, render, _R, **named)


_PART_TYPES = frozenset(
    {"input_text", "output_text", "input_image", "input_file", "input_audio", "refusal"}
)
"""Content part types of Responses message items."""
_OUTPUT_TYPES = frozenset({"output_text", "refusal"})
"""Content part types of an assistant (output) message item only."""


def _r_message(hist: HistoryBuilder, i: int, item: Mapping[str, Any]) -> None:
    role = item.get("role")
    content = item.get("content")
    if role not in ("user", "assistant", "system", "developer") or not isinstance(
        content, (str, list)
    ):  # replayed as is, it would be a 400
        raise hist.error(
            i, "a message item needs role user, assistant, system or developer and content"
        )
    if role not in ("user", "assistant"):
        for raw in content if isinstance(content, list) else ():
            _r_content_part(hist, i, role, raw)  # refuses what the API would refuse
        hist.new("user", i).parts.append(hist.provider(i, item, f"{role} message item"))
        return
    parts: list[TextPart | MediaPart | None]
    if isinstance(content, str):
        parts = [TextPart(text=content)]
    else:
        raws = as_list(hist, content, f"item {i}: content")
        parts = [_r_content_part(hist, i, role, raw) for raw in raws]
    if not parts and role == "assistant":  # says nothing (an empty reply): no turn
        return
    if not parts or None in parts:  # kept whole; an assistant item joins the model's turn
        draft = hist.current(role, i) if role == "assistant" else hist.new(role, i)
        draft.parts.append(hist.provider(i, item, "message item"))
        return
    mapped: list[Hinted] = [p for p in parts if p is not None]
    draft = hist.current(role, i)
    split = bool(draft.parts) and isinstance(draft.parts[-1], (TextPart, MediaPart))

    def render(ps: Sequence[Any]) -> Any:
        return _responses.render_message_item(role, ps)

    envelope_hints(mapped, item, render, "item", _R)
    first = mapped[0]
    if split and "item" not in (first.provider_data or {}):
        mapped[0] = add_hint(first, _R, "item", {})  # starts a new item after text
    draft.parts.extend(mapped)
    hist.check(i, render(mapped), dict(item), "message item")


def _r_reasoning(hist: HistoryBuilder, i: int, item: Mapping[str, Any]) -> None:
    summary = as_list(hist, item.get("summary") or [], f"item {i}: reasoning 'summary'")
    texts = [s.get("text", "") for s in summary if isinstance(s, Mapping)]
    part = ReasoningPart(
        provider="openai",
        text="\n\n".join(t for t in texts if isinstance(t, str)),
        provider_data={"provider": _R, "item": item},
    )
    hist.current("assistant", i).parts.append(part)


def _last_reasoning_id(draft: Draft) -> str | None:
    for part in reversed(draft.parts):
        if isinstance(part, ReasoningPart) and part.provider == "openai":
            item = (part.provider_data or {}).get("item") or {}
            return item.get("id") if isinstance(item.get("id"), str) else None
    return None


def _render_item(part: Part) -> dict[str, Any]:
    return _RESPONSES.render_input([Message(role=_side(part), parts=(part,))])[0]


def _side(part: Part) -> Role:
    return "user" if isinstance(part, ToolResult) else "assistant"


def _argument_slots(item: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """A ``function_call`` or client ``tool_search_call`` item's ``arguments`` (`json_safe`).

    A hosted search's (``execution: "server"``) are the provider's, kept with its item.
    """
    if not isinstance(item, dict) or "arguments" not in item:
        return
    kind = item.get("type")
    if kind == "function_call" or (kind == _search.CALL and item.get("execution") == "client"):
        yield item, "arguments"


def _r_function_call(hist: HistoryBuilder, i: int, item: Mapping[str, Any]) -> None:
    arguments = arguments_text(hist, i, item.get("arguments"), "function_call 'arguments'")
    item = {**item, "arguments": arguments}  # the text, where an unreadable object was
    call = ToolCall(
        id=as_id(hist, i, item.get("call_id"), "function_call 'call_id'"),
        name=as_name(hist, i, item.get("name"), "function_call 'name'"),
        arguments=arguments,
    )
    call = hist.call(i, fit_hints(call, item, _render_item, _R))
    hist.check(i, _render_item(call), dict(item), "function_call item")
    draft = hist.current("assistant", i)
    link = _last_reasoning_id(draft)
    if link is not None and "id" in item:
        call = add_hint(call, _R, "reasoning_id", link)
    draft.parts.append(call)


def _r_output(hist: HistoryBuilder, i: int, item: Mapping[str, Any]) -> None:
    call_id = as_string(hist, i, item.get("call_id"), "function_call_output 'call_id'")
    output = item.get("output")
    named: dict[str, Any] = {}
    media: list[MediaPart] = []
    if isinstance(output, str):
        text = output
    else:
        texts: list[str] = []
        for raw in as_list(hist, output, f"item {i}: output"):
            part = _r_content_part(hist, i, "user", raw)
            if part is None:
                hist.current("user", i).parts.append(hist.provider(i, item, "output item"))
                return
            if isinstance(part, TextPart):
                texts.append(part.text)
            else:
                media.append(part)
        text, named["output"] = "\n\n".join(texts), "list"
    result = ToolResult(
        call_id=call_id, name=hist.name_of(i, call_id), content=text, media=tuple(media)
    )
    result = fit_hints(result, item, _render_item, _R, **named)
    hist.check(i, _render_item(result), dict(item), "function_call_output item")
    hist.current("user", i).parts.append(result)


def _checked(hist: HistoryBuilder, i: int, item: Mapping[str, Any]) -> Mapping[str, Any]:
    """`item`, a tool search or ``additional_tools`` item of the shape the API takes.

    An ``additional_tools`` item that lost its ``role`` gets ``"developer"``, the only one
    it takes (openai SDK ``response_input_item_param.AdditionalTools``), with a note.

    Raises:
        CorruptHistoryError: A field of the wrong type or value (`_items.item_problem`:
            an object as ``call_id``, ``tools`` not a list of definitions...); kept, it
            would be refused on every later request.
    """
    if item.get("type") == "additional_tools" and item.get("role") is None:
        hist.notes.append(
            f"message {i}: an additional_tools item without its role, given 'developer'"
        )
        item = {**item, "role": "developer"}
    problem = item_problem(item)
    if problem is not None:
        raise hist.error(i, problem)
    return item


def _r_search_call(hist: HistoryBuilder, i: int, item: Mapping[str, Any]) -> None:
    """A client-executed ``tool_search_call`` is a call to our ``tool_search``."""
    item = _checked(hist, i, item)
    if item.get("execution") != "client":
        _r_other(hist, i, item)
        return
    text, sent = _search_arguments(hist, i, item)
    call = ToolCall(
        id=as_id(hist, i, item.get("call_id"), "tool_search_call 'call_id'"),
        name=_search.SEARCH_NAME,
        arguments=text,
    )
    call = hist.call(i, fit_hints(call, sent, _render_item, _R, kind=_search.CALL))
    hist.check(i, _render_item(call), dict(item), "tool_search_call item")
    hist.current("assistant", i).parts.append(call)


def _search_arguments(
    hist: HistoryBuilder, i: int, item: Mapping[str, Any]
) -> tuple[str, Mapping[str, Any]]:
    """A client search call's arguments as the call's text, and the item as it is sent.

    The item's ``arguments`` is an object following the search's ``parameters``
    (openai SDK ``ResponseInputItemParam.ToolSearchCall``: ``arguments: object``; the
    tool search guide: "arguments following your parameters schema"), but the model may
    write something else. A JSON text, array, null or an object JSON cannot carry
    (`UnreadableArguments`) is not read as a search: the call holds text the gate refuses
    by name (a JSON text as a string, even one holding an object: the docs give it no
    such form), its answer says the shape ``tool_search`` takes, and it is sent as ``{}``
    (`_search.render_search_call`), so one bad call never breaks a later request.
    Missing, it is read as ``{}``.
    """
    arguments = item.get("arguments", {})
    if isinstance(arguments, Mapping):
        return json.dumps(arguments, ensure_ascii=False, separators=(",", ":")), item
    if isinstance(arguments, UnreadableArguments):
        text = arguments.text
    else:  # a string: the JSON text of that string, which the gate reads as one
        text = json.dumps(arguments, ensure_ascii=False)
        hist.notes.append(
            f"message {i}: a tool_search_call's arguments are a JSON text, not an object; "
            "kept as text the gate refuses and sent as {}"
        )
    return text, {**item, "arguments": {}}


def _r_search_output(hist: HistoryBuilder, i: int, item: Mapping[str, Any]) -> None:
    """A client-executed ``tool_search_output`` answers that call: what it loaded."""
    item = _checked(hist, i, item)
    call_id = item.get("call_id")
    raw: list[Any] = item.get("tools") or []  # a list of definitions (`_checked`)
    if (
        item.get("execution") != "client"
        or not isinstance(call_id, str)
        or call_id not in hist.names
    ):
        _r_other(hist, i, item)
        return
    names = _responses.loaded_names(raw)
    text = "Loaded: " + ", ".join(names) if names else "No tool was loaded."
    result = ToolResult(
        call_id=call_id, name=hist.name_of(i, call_id), content=text, references=tuple(names)
    )
    named = {
        "kind": _search.OUTPUT,
        "tools": list(raw),
        "recorded": True,
    }
    result = fit_hints(result, item, _render_item, _R, **named)
    hist.check(i, _render_item(result), dict(item), "tool_search_output item")
    hist.current("user", i).parts.append(result)


def _r_other(hist: HistoryBuilder, i: int, item: Mapping[str, Any]) -> None:
    """An item kept whole, on the side of whoever wrote it.

    The host's ``*_output`` items (and ``additional_tools``) are the user's; the rest, a
    server-executed ``tool_search_output`` included, the model's: a reply's items are one
    model turn. A tool search or ``additional_tools`` item is checked first (`_checked`).
    """
    item = _checked(hist, i, item)
    kind = str(item.get("type"))
    if kind in (_search.CALL, _search.OUTPUT) and "created_by" in item:
        item = {k: v for k, v in item.items() if k != "created_by"}  # output-only field
    host = kind.endswith("_output") and item.get("execution") != "server"
    side: Role = "user" if host or kind == "additional_tools" else "assistant"
    hist.current(side, i).parts.append(hist.provider(i, item, f"{kind} item"))


_RESPONSES_ITEMS: dict[str, Callable[[HistoryBuilder, int, Mapping[str, Any]], None]] = {
    "message": _r_message,
    "reasoning": _r_reasoning,
    "function_call": _r_function_call,
    "function_call_output": _r_output,
    _search.CALL: _r_search_call,
    _search.OUTPUT: _r_search_output,
}


def from_responses(
    input_items: Sequence[Mapping[str, Any]], *, instructions: str | None = None
) -> ParsedHistory:
    """Parse a Responses ``input`` list (what you would send).

    Args:
        input_items: The ``input`` items.
        instructions: The ``instructions`` parameter, if any (becomes ``system``).
            System and developer message items stay in place as provider parts.

    Raises:
        CorruptHistoryError: An item is malformed (index and reason given), a tool
            search or ``additional_tools`` item included (a field of the wrong type:
            `_checked`).
    """
    hist = HistoryBuilder(_R)
    for i, item in enumerate(as_messages(hist, input_items, "input", _argument_slots, text=True)):
        item = as_mapping(hist, i, item, "an input item")
        kind = item.get("type", "message" if "role" in item else None)
        if not isinstance(kind, str) or not kind:
            raise hist.error(i, "an input item needs a 'type' (or a 'role' for a message)")
        _RESPONSES_ITEMS.get(kind, _r_other)(hist, i, item)
    return hist.result(instructions or "")


# -- Gemini (https://ai.google.dev/api/caching#Content) ------------------------------------


# -- responses, request payloads, message lists --------------------------------------------

_UNFINISHED = ("failed", "cancelled", "queued", "in_progress")


def detect(data: Mapping[str, Any]) -> bool:
    """Does this response dict look like a Responses ``Response``?"""
    return data.get("object") == "response" or isinstance(data.get("output"), list)


def failure(data: Mapping[str, Any]) -> str | None:
    """Why a Responses response has no turn to read, or None.

    A ``status`` of ``failed`` (its ``error``), ``cancelled``, ``queued`` or
    ``in_progress`` (a background response not finished).
    """
    status = data.get("status")
    if data.get("object") != "response" or status not in _UNFINISHED:
        return None
    error = data.get("error")
    why = error_text(error) if isinstance(error, Mapping) else "no error given"
    return (
        f'the Responses response has status "{status}" ({why}); it has no turn to ingest '
        "(retry the request, or wait for a background response to complete)"
    )


def _wrote(data: Mapping[str, Any]) -> bool:
    """Whether an output message item holds a non-empty ``output_text`` part."""
    return any(
        isinstance(part, Mapping) and part.get("type") == "output_text" and part.get("text")
        for item in data.get("output") or ()
        if isinstance(item, Mapping) and isinstance(item.get("content"), list)
        for part in item["content"]
    )


def _refusal(data: Mapping[str, Any]) -> str | None:
    """The text of the first ``refusal`` content part of an output message item, or None."""
    for item in data.get("output") or ():
        content = item.get("content") if isinstance(item, Mapping) else None
        for part in content if isinstance(content, list) else ():
            if isinstance(part, Mapping) and part.get("type") == "refusal":
                return str(part.get("refusal") or "")
    return None


def _stops(data: Mapping[str, Any]) -> tuple[ResponseNotice, ...]:
    """``status: "incomplete"`` with ``incomplete_details.reason``, and a refusal (as Chat's)."""
    found = []
    refusal = _refusal(data)
    if refusal is not None:
        found.append(stopped("refusal", f"the model refused: {refusal[:200]}"))
    if data.get("status") != "incomplete":
        return tuple(found)
    details = data.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    reason = str(reason or "unknown")
    return (stopped(reason, f"the Responses reply is incomplete: {reason}"), *found)


def read_response(response: object, *, id_offset: int = 0) -> ReadResponse:
    """A Responses ``Response`` (SDK object or dict): its output items, id and notices.

    A ``response.compaction`` (``client.responses.compact``) is one model turn holding the
    compacted window as returned (`_compacted`).

    Raises:
        CorruptHistoryError: A failed or unfinished response, an error body, an
            ``output`` that is not a list, or items the parser cannot read.
    """
    data = checked_response(response, READER)
    output = data.get("output")
    if output is not None and not isinstance(output, list):
        raise CorruptHistoryError(
            f"the Responses response's 'output' must be a list of items, got "
            f"{type(output).__name__}",
            index=0,
        )
    items = list(output or [])
    parsed = _compacted(items) if data.get("object") == COMPACTED else from_responses(items)
    return read_as(
        data,
        parsed,
        _stops(data),
        read_cache(data),
        cut=("max_output_tokens",),
        # a refusal continues no prefill; text beside it does (`history.continue_turn`)
        refused=_refusal(data) is not None and not _wrote(data),
    )


COMPACTED = "response.compaction"
"""The ``object`` of a ``POST /responses/compact`` answer (SDK ``CompactedResponse``)."""


def _compacted(items: Sequence[Any]) -> ParsedHistory:
    """A compacted window as one model turn, every item kept verbatim in order.

    Its user messages are copies of the conversation's, sent again before the compaction
    item (`contextchef.providers._compacted.native_base`), never new user turns.
    """
    hist = HistoryBuilder(_R)
    for i, raw in enumerate(items):
        item = as_mapping(hist, i, raw, "an output item")
        hist.current("assistant", i).parts.append(hist.provider(i, item, "compacted window item"))
    return hist.result("")


def detect_history(items: Sequence[Any]) -> bool:
    """Input items: an entry without ``role``, or typed ``message`` / ``function_call``."""
    dicts = [m for m in items if isinstance(m, Mapping)]
    return any("role" not in m or m.get("type") in ("message", "function_call") for m in dicts)


def read_request(payload: Mapping[str, Any]) -> RecordedPayload:
    """``input``, ``instructions``, ``tools``."""
    return RecordedPayload(payload["input"], payload.get("instructions"), payload.get("tools"))


def read_cache(data: Mapping[str, Any]) -> CacheReport:
    """The cache outcome of a Responses ``Response`` dict (`CacheReport`).

    ``usage.input_tokens`` counts every input token; ``input_tokens_details`` holds
    ``cached_tokens`` (reads), ``cache_write_tokens`` and, per lifetime,
    ``cache_write_tokens_details.ttl_30m_tokens`` / ``ttl_12h_tokens`` (openai-python
    3.60 ``types/responses/response_usage.py``); the miss reason is in
    ``prompt_cache_diagnostics``.
    """
    usage = data.get("usage")
    details = usage.get("input_tokens_details") if isinstance(usage, Mapping) else None
    return cache_report(
        data,
        usage,
        input_tokens=tokens_at(usage, "input_tokens"),
        read=tokens_at(details, "cached_tokens"),
        written=tokens_at(details, "cache_write_tokens"),
        by_ttl={
            "30m": tokens_at(details, "cache_write_tokens_details", "ttl_30m_tokens"),
            "12h": tokens_at(details, "cache_write_tokens_details", "ttl_12h_tokens"),
        },
    )


SHAPE = WireShape(
    bans=("parts", "tool_calls", "tool_call_id"),
    parts=_PART_TYPES,
    closed=True,
    parts_in=frozenset({None, "message"}),
    kinds=frozenset(_RESPONSES_ITEMS),
    own_kinds=frozenset({"message", "function_call_output", "reasoning"}),
    noun="item",
    call_ids=True,
)
"""A Responses input item has no ``parts``, ``tool_calls`` or ``tool_call_id``; a message
item (or one without ``type``) has content parts of the Responses types only
(`_PART_TYPES`); a ``function_call`` has a ``call_id``; its ``message``,
``function_call_output`` and ``reasoning`` items are no other wire's (openai SDK
``ResponseInputItemParam``)."""


READER = register_reader(
    WireReader(
        wire=_responses.FORMAT,
        label="Responses",
        recording="responses",
        conversation="input",
        turn_key="output",
        detect=detect,
        read_response=read_response,
        failure=failure,
        detect_request=lambda payload: "input" in payload,
        detect_history=detect_history,
        read_request=read_request,
        parse_history=lambda turn, system: from_responses(turn, instructions=system),
        read_cache=read_cache,
        fresh=unique_item_ids,
        shape=SHAPE,
        choice=CHOICE,
        fields=FIELDS,
    )
)
"""The OpenAI Responses wire's `WireReader`."""
