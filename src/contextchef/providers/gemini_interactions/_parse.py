"""Interactions steps -> the message IR, and the wire's `WireReader`.

A step list (an ``input``, or an ``Interaction``'s ``steps``) becomes messages: the
model's steps (``thought``, ``model_output``, ``function_call``, server-tool and unknown
steps) join one assistant message until a client step (``user_input``,
``function_result``) comes; consecutive ``function_result`` steps share one user message,
each ``user_input`` is a user message of its own. Every step comes back whole when
rendered: a ``thought`` or server step is kept as recorded (`ReasoningPart` /
`ProviderPart`), the first part of a content step carries the step's other fields, a
call its recorded ``arguments`` object and extra fields (a ``signature``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef._errors import CorruptHistoryError
from contextchef.history._messages import (
    MediaPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.providers._parsing import (
    Draft,
    HistoryBuilder,
    ParsedHistory,
    UnreadableArguments,
    add_hint,
    as_id,
    as_list,
    as_mapping,
    as_messages,
    as_name,
    as_string,
    compact_dumps,
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
from contextchef.providers.gemini_interactions import _render as _r
from contextchef.providers.gemini_interactions._choice import CHOICE
from contextchef.providers.gemini_interactions._fields import FIELDS

__all__ = ["READER", "from_interactions", "read_response"]

_F = _r.FORMAT
CLIENT_STEPS = ("user_input", "function_result")
"""Steps the client sends; every other step type is the model's (or the server's)."""
STEP_TYPES = frozenset({*CLIENT_STEPS, "model_output", "thought", "function_call"})
"""The step types this module maps onto IR parts (others are kept as provider parts)."""
WIRE_STEPS = frozenset(
    {
        *STEP_TYPES,
        *(
            f"{tool}_{end}"
            for tool in (
                "code_execution",
                "file_search",
                "google_maps",
                "google_search",
                "mcp_server_tool",
                "processing",
                "retrieval",
                "tool_search",
                "url_context",
            )
            for end in ("call", "result")
        ),
    }
)
"""Every step type of google-genai 3.6.1's ``Step`` union: never a content block."""
OWN_STEPS = STEP_TYPES - {"function_call"}
"""The step types only this API has (a ``function_call`` is a Responses item too)."""


def _argument_slots(step: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """A ``function_call`` step's ``arguments`` object (see `json_safe`)."""
    if isinstance(step, dict) and step.get("type") == "function_call" and "arguments" in step:
        yield step, "arguments"


def _step_hint(step: Mapping[str, Any]) -> dict[str, Any]:
    """What `_render.content_step` needs to give `step` back: its other fields and order."""
    hint: dict[str, Any] = {}
    extra = {k: v for k, v in step.items() if k not in ("type", "content")}
    if extra:
        hint["extra"] = extra
    if list(step)[:2] != ["type", "content"]:
        hint["keys"] = list(step)
    return hint


def _content(hist: HistoryBuilder, i: int, block: object) -> TextPart | MediaPart | None:
    block = as_mapping(hist, i, block, "a content block")
    kind = block.get("type")
    if kind == "text":
        text = TextPart(text=as_string(hist, i, block.get("text"), "text"))
        return fit_hints(text, block, _r.render_content, _F)
    if kind not in _r.MEDIA_TYPES:
        return None
    mime = as_string(hist, i, block.get("mime_type"), f"{kind} 'mime_type'")
    if isinstance(block.get("data"), str):
        media = MediaPart(media_type=mime, data=block["data"])
    else:
        media = MediaPart(media_type=mime, url=as_string(hist, i, block.get("uri"), "uri"))
    return fit_hints(media, block, _r.render_content, _F)


def _content_parts(
    hist: HistoryBuilder, i: int, step: Mapping[str, Any], role: str
) -> list[Part] | None:
    """The step's content blocks as parts, or None when one is not text or media."""
    blocks = as_list(hist, step.get("content") or [], f"step {i}: content")
    parts = [_content(hist, i, b) for b in blocks]
    if not parts or any(p is None for p in parts):
        return None
    kept = [p for p in parts if p is not None]
    kept[0] = add_hint(kept[0], _F, "step", _step_hint(step))
    hist.check(i, _r.content_step(role, kept), step, f"{step.get('type')} step")
    return list(kept)


def _call(hist: HistoryBuilder, i: int, step: dict[str, Any]) -> ToolCall:
    args: Any = step.get("arguments", {})
    named: dict[str, Any] = {}
    if isinstance(args, UnreadableArguments):  # sent as {}, refused by the gate
        text, step = args.text, {**step, "arguments": {}}
    else:
        args = as_mapping(hist, i, args, "function_call 'arguments'")
        text, named["args"] = compact_dumps(args), args
    call = ToolCall(
        id=as_id(hist, i, step.get("id"), "function_call 'id'"),
        name=as_name(hist, i, step.get("name"), "function_call 'name'"),
        arguments=text,
    )
    return hist.call(i, fit_hints(call, step, _r.render_step_part, _F, **named))


def _result(hist: HistoryBuilder, i: int, step: dict[str, Any]) -> ToolResult:
    call_id = as_string(hist, i, step.get("call_id"), "function_result 'call_id'")
    name = step.get("name")
    name = as_string(hist, i, name, "function_result 'name'") if name is not None else None
    value = step.get("result", "")
    named: dict[str, Any] = {} if isinstance(value, str) else {"result": value}
    media: list[MediaPart] = []
    if isinstance(value, list):
        for block in value:
            part = _content(hist, i, block)
            if isinstance(part, MediaPart):
                media.append(part)
    result = ToolResult(
        call_id=call_id,
        name=name if name is not None else hist.name_of(i, call_id),
        content=_r.result_text(value),
        is_error=step.get("is_error") is True,
        media=tuple(media),
    )
    return fit_hints(result, step, _r.render_step_part, _F, **named)


def _draft(hist: HistoryBuilder, i: int, kind: object) -> Draft:
    """The message the step of type `kind` joins."""
    if kind == "user_input":
        return hist.new("user", i)
    if kind == "function_result":
        last = hist.drafts[-1] if hist.drafts else None
        if (
            last is not None
            and last.role == "user"
            and all(isinstance(p, ToolResult) for p in last.parts)
        ):
            return last
        return hist.new("user", i)
    return hist.current("assistant", i)


def _untyped(step: Mapping[str, Any]) -> str | None:
    """Where, inside `step`, an object's ``type`` is not a non-empty string, or None.

    Every typed object of the wire (content blocks, summary items, result items) is told
    apart by its ``type``; the SDK's request types take no other value, so such a step
    is refused when read rather than replayed into a request the SDK fails on. A call's
    ``arguments`` and an object ``result`` are the tool's own data and not looked into.
    """
    stack: list[tuple[object, str]] = [
        (v, k)
        for k, v in step.items()
        if k != "arguments" and not (k == "result" and isinstance(v, Mapping))
    ]
    while stack:
        value, path = stack.pop()
        if isinstance(value, Mapping):
            kind = value.get("type", "x")  # an object without one is not typed
            if not isinstance(kind, str) or not kind:
                return f"{path}.type"
            stack.extend((v, f"{path}.{k}") for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((v, f"{path}.{k}") for k, v in enumerate(value))
    return None


def _no_steps_inside(hist: HistoryBuilder, i: int, step: Mapping[str, Any]) -> None:
    """Refuse a step type (``function_call``, ``thought``...) inside a step's ``content``.

    ``user_input`` / ``model_output`` content holds text and media blocks only (SDK
    3.6.1 ``Content``); a call there is the legacy ``outputs`` shape (before the May 2026
    ``steps`` revision: research §"Other things"), which the API no longer takes back.
    Kept as a provider part, the call would be lost without an answer; refused, the host
    learns it at `ContextChef.ingest`.

    Raises:
        CorruptHistoryError: Naming the block's index and type.
    """
    content = step.get("content")
    for j, block in enumerate(content if isinstance(content, list) else ()):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind in WIRE_STEPS:
            raise hist.error(
                i,
                f"{step.get('type')} content[{j}] is a {kind!r} step (the legacy 'outputs' "
                "shape); content holds text, image, audio, document and video blocks only, "
                f"and a {kind} is a step of its own",
            )


def _step(hist: HistoryBuilder, i: int, step: dict[str, Any]) -> list[Part]:
    kind = step.get("type")
    if not isinstance(kind, str) or not kind:
        raise hist.error(i, "a step needs a string 'type'")
    where = _untyped(step)
    if where is not None:
        raise hist.error(i, f"{where} must be a non-empty string (the {kind} step's items)")
    if kind in ("user_input", "model_output"):
        _no_steps_inside(hist, i, step)
        role = "user" if kind == "user_input" else "assistant"
        parts = _content_parts(hist, i, step, role)
        if parts is not None:
            return parts
        if kind == "user_input":
            raise hist.error(i, "user_input content must be text or media blocks")
        return [hist.provider(i, step, "model_output step")]
    if kind == "thought":
        summary = step.get("summary")
        summary = [] if summary is None else summary
        # replayed verbatim: a summary of the wrong shape would be refused on every later
        # request (ThoughtStep.summary: a list of content blocks; a malformed signature is
        # dropped and reported when rendered)
        if not isinstance(summary, list) or not all(
            isinstance(b, Mapping) and isinstance(b.get("text", ""), str) for b in summary
        ):
            raise hist.error(i, "a thought step's 'summary' must be a list of text blocks")
        text = "".join(b.get("text", "") for b in summary)
        return [ReasoningPart(provider=_F, text=text, provider_data={"provider": _F, "step": step})]
    if kind == "function_call":
        return [_call(hist, i, step)]
    if kind == "function_result":
        return [_result(hist, i, step)]
    return [hist.provider(i, step, f"{kind} step")]


def from_interactions(steps: object, *, system_instruction: object = None) -> ParsedHistory:
    """Parse an Interactions step list (an ``input`` or an ``Interaction``'s ``steps``).

    Args:
        steps: The steps; a plain string (an ``input`` given as text) is one user turn.
        system_instruction: The ``system_instruction`` string, if any.

    Raises:
        CorruptHistoryError: A step is malformed (index and reason given), or the input
            is a list of content blocks rather than steps.
    """
    hist = HistoryBuilder(_F)
    if isinstance(steps, str):
        steps = [{"type": "user_input", "content": [{"type": "text", "text": steps}]}]
    for i, step in enumerate(as_messages(hist, steps, "steps", _argument_slots)):
        step = as_mapping(hist, i, step, "a step")
        if step.get("type") in ("text", *_r.MEDIA_TYPES):
            raise hist.error(i, "a content block where a step was expected (input mixes both)")
        parts = _step(hist, i, dict(step))
        draft = _draft(hist, i, step.get("type"))
        draft.parts.extend(parts)
    system = system_instruction
    if system is not None and not isinstance(system, str):
        raise CorruptHistoryError("system_instruction must be a string", index=0)
    return hist.result(system or "")


# -- responses, request payloads, step lists ------------------------------------------------

STATUSES = frozenset(
    {
        "in_progress",
        "requires_action",
        "completed",
        "failed",
        "cancelled",
        "incomplete",
        "budget_exceeded",
        "queued",
        "idle",
        "requires_continuation",
    }
)
"""``Interaction.status`` values (SDK 3.6.1 ``InteractionStatus``)."""
_NO_TURN = ("failed", "cancelled", "in_progress", "queued")
_ENDED_EARLY = ("incomplete", "requires_continuation", "budget_exceeded")


def detect(data: Mapping[str, Any]) -> bool:
    """Does this response dict look like an ``Interaction``?"""
    if "candidates" in data or "output" in data or "object" in data:
        return False
    status = data.get("status")
    return isinstance(data.get("steps"), list) or (isinstance(status, str) and status in STATUSES)


def failure(data: Mapping[str, Any]) -> str | None:
    """Why an Interaction has no turn to read, or None.

    ``failed`` (its ``errors``), ``cancelled``, or not finished (``in_progress``,
    ``queued``: a background interaction).
    """
    status = data.get("status")
    if not detect(data) or status not in _NO_TURN:
        return None
    errors = [e for e in data.get("errors") or () if isinstance(e, Mapping)]
    why = "; ".join(error_text(e) for e in errors) or "no error given"
    return (
        f'the Interactions response has status "{status}" ({why}); it has no turn to ingest '
        "(retry the request, or poll a background interaction until it completes)"
    )


def _stops(data: Mapping[str, Any]) -> tuple[ResponseNotice, ...]:
    """Statuses whose turn is kept but ended early, as ``incomplete`` notices.

    ``incomplete`` (e.g. the output cap), ``requires_continuation`` (the per-request
    decode cap: the next compile with nothing added resumes it with the reply's
    ``continuation_token``, `ReadResponse.continuation`), ``budget_exceeded``.
    """
    status = data.get("status")
    if status not in _ENDED_EARLY:
        return ()
    why = f'the Interactions reply ended early: status "{status}"'
    if status == "requires_continuation":
        why += " (the decode cap; compile again without adding messages to resume it)"
    return (stopped(str(status), why),)


def model_steps(steps: Sequence[Any]) -> list[Any]:
    """The model's steps of a response: those after the last client step.

    ``create`` returns only the model's steps; a ``GET`` (and, per one copy of Google's
    guide, some unary replies) also echoes the input first (the research's §2.1).
    """
    last = -1
    for k, step in enumerate(steps):
        if isinstance(step, Mapping) and step.get("type") in CLIENT_STEPS:
            last = k
    return list(steps[last + 1 :])


def read_response(response: object, *, id_offset: int = 0) -> ReadResponse:
    """An ``Interaction`` (SDK object or dict): the model's steps as one turn.

    Args:
        response: The response.
        id_offset: Unused (every ``function_call`` step has an ``id``).

    Raises:
        CorruptHistoryError: A failed, cancelled or unfinished interaction, an error
            body, ``steps`` that is not a list, a legacy ``outputs`` list and no
            ``steps``, or a step the parser cannot read.
    """
    data = checked_response(response, READER)
    if "steps" not in data and data.get("outputs"):
        raise CorruptHistoryError(
            "the Interactions response has the legacy 'outputs' list and no 'steps' (the "
            "shape before the May 2026 revision); its turn cannot be read or sent back: "
            "use a google-genai SDK and API revision that return 'steps'",
            index=0,
        )
    steps = data.get("steps", [])
    if not isinstance(steps, list):
        raise CorruptHistoryError("the Interactions response's steps is not a list", index=0)
    status = data.get("status", "completed")
    if not isinstance(status, str) or status not in STATUSES:
        raise CorruptHistoryError(
            f"the Interactions response's status {str(status)[:60]!r} is not one of "
            f"{', '.join(sorted(STATUSES))}",
            index=0,
        )
    output = model_steps(steps)
    turn = from_interactions(output)
    if any(m.role != "assistant" for m in turn.messages):
        raise CorruptHistoryError("the Interactions response holds client steps", index=0)
    # an empty text step is one of the answer's steps, chained to as the server returned
    # it (`Chain.answer`): kept, or the next request could not chain (the adapter sends it)
    carries = _r.GeminiInteractionsAdapter().keeps
    read = read_as(data, turn, _stops(data), read_cache(data), cut=("incomplete",), carries=carries)
    token = data.get("continuation_token") if status == "requires_continuation" else None
    token = token if isinstance(token, str) and token else None
    return dataclasses.replace(read, output=tuple(output), continuation=token)


def read_cache(data: Mapping[str, Any]) -> CacheReport:
    """The cache outcome of an Interaction dict (`CacheReport`).

    ``usage.total_input_tokens`` and ``usage.total_cached_tokens`` (implicit caching: no
    writes reported; https://ai.google.dev/gemini-api/docs/caching).
    """
    usage = data.get("usage")
    return cache_report(
        data,
        usage,
        input_tokens=tokens_at(usage, "total_input_tokens"),
        read=tokens_at(usage, "total_cached_tokens"),
    )


def detect_request(payload: Mapping[str, Any]) -> bool:
    """``input`` with an Interactions-only field, or a step list."""
    if "input" not in payload:
        return False
    if any(k in payload for k in ("system_instruction", "generation_config")):
        return True
    return detect_history(payload["input"]) if isinstance(payload["input"], list) else False


def detect_history(items: Sequence[Any]) -> bool:
    """A list holding a step of a type only this API has (`OWN_STEPS`)."""
    return any(isinstance(m, Mapping) and str(m.get("type")) in OWN_STEPS for m in items)


SHAPE = WireShape(
    needs=("type",),
    bans=("role", "parts"),
    parts_in=frozenset(),
    kinds=WIRE_STEPS,
    own_kinds=OWN_STEPS,
    noun="step",
    call_ids=False,
)
"""An Interactions step has a ``type`` and no ``role`` or ``parts``; a ``function_call``
has no ``call_id`` (its ``id`` is the call's); its `OWN_STEPS` are no other wire's
(google-genai ``interactions`` step types, ../shared/research/gemini-interactions.md)."""


READER = register_reader(
    WireReader(
        wire=_F,
        label="Gemini Interactions",
        recording=_F,
        conversation="input",
        turn_key="steps",
        detect=detect,
        read_response=read_response,
        failure=failure,
        detect_request=detect_request,
        detect_history=detect_history,
        read_request=lambda p: RecordedPayload(
            p["input"], p.get("system_instruction"), p.get("tools")
        ),
        parse_history=lambda turn, system: from_interactions(turn, system_instruction=system),
        read_cache=read_cache,
        shape=SHAPE,
        choice=CHOICE,
        fields=FIELDS,
    )
)
"""The Interactions wire's `WireReader`."""
