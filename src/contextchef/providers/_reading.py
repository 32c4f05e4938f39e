"""Reading what a provider returns, and recorded requests: one `WireReader` per wire.

Each ``providers/<wire>/_parse.py`` registers the reader of its wire format
(`register_reader`): whether a response, a request payload or a bare message list looks
like that wire's, and how to read it. `Adapter.read_response` reads through its wire's
reader; `providers._ingest` (any response), the analysis layer (payloads, recordings) ask
the readers in `providers.WIRES` order. This module holds what the readers share: the
response records (`ReadResponse`, `ResponseNotice`), the SDK-object-to-dict step, the
provider's notices and the response id.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from contextchef._errors import CorruptHistoryError, shown
from contextchef._sdk import sdk_json
from contextchef.dispatch._gate import CUT_OFF
from contextchef.history._messages import Message, TextPart, ToolCall
from contextchef.history._turns import without_empty_text
from contextchef.providers._extra_fields import ExtraFields
from contextchef.providers._parsing import ParsedHistory
from contextchef.providers._tool_choice import ToolChoiceRules
from contextchef.providers._usage import MAX_TOKENS, CacheReport

__all__ = [
    "ReadResponse",
    "RecordedPayload",
    "ResponseNotice",
    "WireReader",
    "WireShape",
    "adapter_reader",
    "checked_response",
    "cut_last_call",
    "error_text",
    "first_item",
    "fresh_turn",
    "others_left",
    "provider_notices",
    "read_as",
    "register_reader",
    "renamed_ids",
    "response_dict",
    "stopped",
    "wire_reader",
]


@dataclass(frozen=True, kw_only=True)
class ResponseNotice:
    """Something a response reports about how the request was used.

    Anthropic reports thinking it could not use in ``input_transformations``
    (``thinking_dropped`` with reason ``prefix_binding_mismatch``,
    ``model_binding_mismatch`` or ``organization_binding_mismatch``; or
    ``thinking_mismatch_allowed``) and, with cache diagnostics, why the prompt cache
    missed (``diagnostics.cache_miss_reason``: ``system_changed``, ``tools_changed``,
    ``messages_changed``, ``model_changed``...); OpenAI says it in
    ``prompt_cache_diagnostics`` (``input_changed``, ``tools_changed``,
    ``context_compacted``...)
    (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking,
    https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics).

    Attributes:
        kind: ``thinking_dropped``, ``thinking_mismatch_allowed``, ``cache_miss``,
            ``incomplete`` (the turn did not end normally: cut off at a token limit,
            refused or filtered; each wire's reader says when), ``call_id_renamed``
            (`ContextChef.ingest` gave a call that reused an id, or had none, a new one:
            `reason` is the id as sent), ``summary_over_budget`` (a local compaction's
            summary past its trigger, `reason` the trigger: `_budget.summary_notice`),
            ``fixed_over_budget`` / ``fixed_near_budget`` (the system prompt and
            resident tools alone past the compaction trigger, or leaving the
            conversation under a quarter of it: `_budget.fixed_notice`),
            ``summary_failed`` (the session's own compaction got no summary: `reason`
            ``no_text`` or ``raised``; `_retry.SummaryRetry`), ``reply_target_ambiguous``
            (a reply two awaiting targets of its wire could answer: `reason` the one
            taken; `_targets.reply_target`), ``choices_dropped`` (more than one Chat
            choice or Gemini candidate: the first kept, `reason` the count left out;
            `others_left`) or another type the provider reported.
        reason: The provider's reason or cache-miss type (``""`` if none).
        path: Where in the request (e.g. ``messages.4.content.0``; ``""`` if none).
        detail: One sentence for logs.
        missed_tokens: For a cache miss: the provider's estimate of the input tokens
            that would have been read from the cache
            (``cache_missed_input_tokens``), or None when it gave none.
        cleared_tokens: For a ``context_edit`` (an Anthropic ``applied_edits`` entry,
            its edit type as `reason`): the input tokens it cleared, or None.
        cleared_tool_uses: For a ``context_edit``: how many tool uses' results it
            cleared on the server (Anthropic ``cleared_tool_uses``), or None.
    """

    kind: str
    reason: str = ""
    path: str = ""
    detail: str = ""
    missed_tokens: int | None = None
    cleared_tokens: int | None = None
    cleared_tool_uses: int | None = None

    @property
    def level(self) -> int:
        """The `logging` level the session logs this notice at.

        ``logging.INFO`` for what a configured context policy asked the provider to do
        (``compaction``, ``context_edit``) and for a ``cache_miss``: the session's
        `CacheReport` of the same response warns about a miss no edit of its own explains
        (`CacheReport.unexplained`, docs/guides/replay.md), so an explained one (the
        session's own system or tools edit) is not a warning; ``logging.WARNING`` for
        everything else (dropped thinking, a turn that did not end normally).
        """
        quiet = ("compaction", "context_edit", "cache_miss")
        return logging.INFO if self.kind in quiet else logging.WARNING


@dataclass(frozen=True, kw_only=True)
class ReadResponse:
    """A response read by `read_response` (`Adapter.read_response`)."""

    turn: ParsedHistory
    """The model's turn (see `parse_response`)."""
    id: str | None = None
    """The response's id (``msg_...``, ``chatcmpl-...``, ``resp_...``, Gemini's
    ``responseId``), or None."""
    notices: tuple[ResponseNotice, ...] = ()
    """What the response reported about the request (see `ResponseNotice`)."""
    cache: CacheReport = field(default_factory=lambda: CacheReport(usage=False))
    """The prompt cache's outcome as the response reports it (`CacheReport`; the
    session's own fields are filled by `ContextChef.ingest`)."""
    output: tuple[Any, ...] = ()
    """The model's output entries as returned, where the provider keeps them for a next
    request to chain to (Interactions: its steps); () elsewhere (`Chain.answer`)."""
    continuation: str | None = None
    """A token that resumes the reply's decoding, where it stopped at the provider's
    per-request decode cap (Interactions ``requires_continuation``: its
    ``continuation_token``); None: the reply is whole (`Chain.token`)."""
    model: str = ""
    """The model the response names (``model``; Gemini's ``modelVersion``), ``""`` if none:
    `providers.reply_target` matches it against the requests awaiting a reply."""
    refused: bool = False
    """The reply is the model's refusal (a Chat ``message.refusal``, a Responses
    ``refusal`` content part) with no text beside it, not an answer: it continues no
    prefill (`history.continue_turn`). Text beside a refusal is the prefill's answer."""
    wire: str = ""
    """The wire whose reader read it (`WireReader.wire`, a `Profile.wire`); ``""`` when
    read by a wire's own ``_parse.read_response`` rather than
    `contextchef.providers.read_response` or `Adapter.read_response`."""


class RecordedPayload(NamedTuple):
    """A stored request payload's parts, as `WireReader.read_request` finds them."""

    conversation: Any
    """The conversation entries (not checked yet)."""
    system: Any
    """The system prompt where the wire keeps it outside the conversation, else None."""
    tools: Any
    """The ``tools`` entries, or None."""


@dataclass(frozen=True, kw_only=True)
class WireShape:
    """What a wire's conversation entries hold (`WireReader.shape`).

    The keys and ``type`` values its renderer writes and its SDK's request types take; a
    restored ledger's entries are checked against their target's wire
    (`contextchef.providers._wire_shape.check_wire_shape`).

    Attributes:
        needs: Keys every entry has.
        bans: Keys no entry has (another wire's).
        parts: The ``type`` of each content part (a ``content`` list's objects) it takes.
        closed: `parts` is all it takes; else (open) a part type outside them is refused
            only when a closed wire takes it.
        parts_in: The entry ``type`` values (None: no ``type``) whose parts are read.
        kinds: The entry ``type`` values it knows; another is refused when it is another
            wire's own (`own_kinds`).
        own_kinds: Entry ``type`` values no other wire has.
        noun: What one of its entries is called in a refusal (``item``, ``step``).
        call_ids: Whether a ``function_call`` entry has a ``call_id`` (None: not read).
    """

    needs: tuple[str, ...] = ()
    bans: tuple[str, ...] = ()
    parts: frozenset[str] = frozenset()
    closed: bool = False
    parts_in: frozenset[str | None] = frozenset({None})
    kinds: frozenset[str] = frozenset()
    own_kinds: frozenset[str] = frozenset()
    noun: str = "entry"
    call_ids: bool | None = None


@dataclass(frozen=True, kw_only=True)
class WireReader:
    """How one wire format's responses, request payloads and message lists are read.

    Each ``providers/<wire>/_parse.py`` declares one (`register_reader`); the adapters
    read responses through it (`Adapter.read_response`), and ingest, diagnose and the
    transcript reader ask the readers in turn which one an object belongs to.

    Attributes:
        wire: `Profile.wire` of the adapters that speak it.
        label: The API's name in messages (``Chat Completions``).
        recording: The ``format`` name of its recorded transcripts.
        conversation: The request key that holds the conversation (``messages``).
        turn_key: The response key the model's turn is read from (``content``).
        detect: Does this response dict look like this wire's?
        read_response: A response of this wire (SDK object or dict; ``id_offset``
            keyword) -> `ReadResponse`; raises `CorruptHistoryError`.
        failure: Why a response dict of this wire carries no turn (a failed or blocked
            response), or None.
        detect_request: Does this request payload (an SDK call's keyword arguments)
            look like this wire's? The readers are asked in `WIRES` order; the last one
            may say yes to what the others left.
        detect_history: The same for a bare list of conversation entries.
        read_request: A detected payload -> `RecordedPayload`.
        parse_history: ``(conversation, system)`` -> `ParsedHistory` (this wire's
            history parser).
        read_cache: A response dict of this wire -> its `CacheReport` (its usage and
            cache diagnostics; the turn is not read).
        fresh: ``(history, turn)`` -> the reply's `turn` fit to follow `history` on
            this wire, touching only parts recorded from it (`fresh_turn`); None: as is.
        shape: What its conversation entries hold (`WireShape`).
        choice: Its tool-choice facts, declared in its package (`ToolChoiceRules`).
        fields: The request fields ``extra`` may add, declared in its package
            (`ExtraFields`); None: ``extra`` is left to its SDK.
    """

    wire: str
    label: str
    recording: str
    conversation: str
    turn_key: str
    detect: Callable[[Mapping[str, Any]], bool]
    read_response: Callable[..., ReadResponse]
    failure: Callable[[Mapping[str, Any]], str | None]
    detect_request: Callable[[Mapping[str, Any]], bool]
    detect_history: Callable[[Sequence[Any]], bool]
    read_request: Callable[[Mapping[str, Any]], RecordedPayload]
    parse_history: Callable[[list[Any], Any], ParsedHistory]
    read_cache: Callable[[Mapping[str, Any]], CacheReport]
    fresh: Callable[[Sequence[Message], Sequence[Message]], tuple[Message, ...]] | None = None
    shape: WireShape
    choice: ToolChoiceRules
    fields: ExtraFields | None = None


_READERS: dict[str, WireReader] = {}


def fresh_turn(history: Sequence[Message], turn: Sequence[Message]) -> tuple[Message, ...]:
    """A reply's `turn` fit to follow `history`: each registered wire's `WireReader.fresh`.

    Each touches only the parts recorded from its own wire (Responses: item ids the
    history holds already, `contextchef.providers.responses._item_ids.unique_item_ids`).
    """
    out = tuple(turn)
    for reader in _READERS.values():
        if reader.fresh is not None:
            out = reader.fresh(history, out)
    return out


def register_reader(reader: WireReader) -> WireReader:
    """Make `reader` the one of its wire (called by each wire's ``_parse`` module)."""
    _READERS[reader.wire] = reader
    return reader


def wire_reader(wire: str) -> WireReader:
    """The `WireReader` of `wire` (a `Profile.wire`); KeyError if none registered."""
    return _READERS[wire]


def adapter_reader(adapter: type, wire: str) -> WireReader:
    """`wire`'s reader; its parser is imported first when the adapter came without it.

    Wire packages load on first use (`providers._targets`); an adapter class imported
    from its ``_render`` module directly finds its wire's ``_parse`` here.
    """
    try:
        return wire_reader(wire)
    except KeyError:
        for cls in adapter.__mro__:
            package, _, module = cls.__module__.rpartition(".")
            if module == "_render" and package.startswith("contextchef.providers."):
                importlib.import_module(f"{package}._parse")
                break
        return wire_reader(wire)


def response_dict(response: object) -> Mapping[str, Any]:
    """A response as its JSON dict: a mapping itself, or an SDK object's ``model_dump``.

    An SDK object is read by `contextchef._sdk.sdk_json`: NaN kept, and a value nested
    past pydantic's depth limit (a call's arguments) handed over as the SDK parsed it.

    Raises:
        CorruptHistoryError: Neither, or a dump that fails or is not an object.
    """
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
    module, parsed = type(response).__module__, type(response).__name__.startswith("Parsed")
    flags = (
        {"by_alias": True, "exclude_none": True}
        if module.startswith("google.") or (parsed and module.startswith("openai."))
        else {"exclude_unset": True, "warnings": False}  # the dump is exact even where
    )  # an SDK union read an item as the wrong type (a compacted window's user messages)
    try:  # never bound by the serializer's depth limit (`sdk_json`)
        data = sdk_json(response, **flags)
        data = _sdk_only(data) if parsed and module.startswith("openai.") else data
    except Exception as exc:  # a foreign object whose dump fails
        raise CorruptHistoryError(
            f"cannot read the {type(response).__name__} response: {exc}", index=0
        ) from exc
    if not isinstance(data, Mapping):
        raise CorruptHistoryError(f"{type(response).__name__} did not dump to an object", index=0)
    return data


_SDK_ONLY = frozenset({"parsed", "parsed_arguments"})


def _sdk_only(data: Any) -> Any:
    """An OpenAI ``Parsed*`` response's dump without what only the SDK adds.

    The ``.stream()`` / ``.parse()`` helpers return ``ParsedChatCompletion`` /
    ``ParsedResponse``: every field set (so the dump leaves out None values instead of
    unset ones) and ``parsed`` / ``parsed_arguments`` beside what the API sent, which the
    request types refuse ("unknown key 'parsed'") when the turn is sent back; a streamed
    Chat call keeps its chunks' ``index`` too (not a key of a call sent back).
    """
    if isinstance(data, list):
        return [_sdk_only(v) for v in data]
    if not isinstance(data, dict):
        return data
    out = {k: _sdk_only(v) for k, v in data.items() if k not in _SDK_ONLY}
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [
            {k: v for k, v in c.items() if k != "index"} if isinstance(c, dict) else c
            for c in calls
        ]
    return out


def first_item(data: Mapping[str, Any], key: str, what: str) -> Mapping[str, Any]:
    """``data[key][0]``, an object; `CorruptHistoryError` naming `what` when there is none."""
    items = data.get(key)
    if not isinstance(items, list) or not items or not isinstance(items[0], Mapping):
        raise CorruptHistoryError(f"the {what} response has no {key}[0] to read", index=0)
    return items[0]


def error_text(error: Mapping[str, Any]) -> str:
    """A provider error object as ``code: message``."""
    code = error.get("code") or error.get("type") or error.get("status")
    message = error.get("message")
    return f"{code or 'no code'}: {message or 'no message'}"


def provider_notices(data: Mapping[str, Any]) -> tuple[ResponseNotice, ...]:
    """What a response dict reports about its request (see `ResponseNotice`).

    Reads ``input_transformations`` and ``diagnostics.cache_miss_reason`` (Anthropic), and
    a ``prompt_cache_diagnostics`` of type ``cache_miss`` (OpenAI, given a
    ``comparison_response_id``:
    https://developers.openai.com/api/docs/guides/prompt-caching); any response may
    carry them.
    """
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
        found.append(_missed(miss["type"], miss.get("cache_missed_input_tokens")))
    miss = data.get("prompt_cache_diagnostics")
    if isinstance(miss, Mapping) and miss.get("type") == "cache_miss":
        found.append(
            _missed(str(miss.get("reason") or "cache_miss"), miss.get("cache_missed_tokens"))
        )
    return (*found, *_context_notices(data))


def _context_notices(data: Mapping[str, Any]) -> list[ResponseNotice]:
    """Server-side context management a response reports.

    Anthropic ``context_management.applied_edits`` (one ``context_edit`` notice per edit:
    ``clear_tool_uses_20250919`` with ``cleared_tool_uses``, ``clear_thinking_20251015``
    with ``cleared_thinking_turns``; research provider-context-management.md 2.1), and a
    ``compaction`` block (Anthropic) or output item (Responses, 2.2): the provider compacted
    the conversation, and later requests are read from that block or item on.
    """
    found: list[ResponseNotice] = []
    managed = data.get("context_management")
    edits = managed.get("applied_edits") if isinstance(managed, Mapping) else None
    for edit in edits if isinstance(edits, list) else ():
        if isinstance(edit, Mapping) and isinstance(edit.get("type"), str):
            tokens = _missed("", edit.get("cleared_input_tokens")).missed_tokens
            what = ", ".join(
                f"{edit[key]} {key.removeprefix('cleared_').replace('_', ' ')}"
                for key in ("cleared_tool_uses", "cleared_thinking_turns")
                if isinstance(edit.get(key), int)
            )
            found.append(
                ResponseNotice(
                    kind="context_edit",
                    reason=edit["type"],
                    cleared_tokens=tokens,
                    cleared_tool_uses=_missed("", edit.get("cleared_tool_uses")).missed_tokens,
                    detail=f"the provider applied {edit['type']} before answering: cleared "
                    f"{tokens if tokens is not None else 'an unknown number of'} input tokens"
                    + (f" ({what})" if what else ""),
                )
            )
    for key in ("content", "output"):
        items = data.get(key)
        for item in items if isinstance(items, list) else ():
            if isinstance(item, Mapping) and item.get("type") == "compaction":
                found.append(
                    ResponseNotice(
                        kind="compaction",
                        detail="the provider compacted the conversation: later requests are "
                        "read from its compaction entry on (it is replayed exactly, and only "
                        "to this provider)",
                    )
                )
    return found


def _missed(reason: str, missed: object) -> ResponseNotice:
    """A ``cache_miss`` notice: the provider's reason and its estimate of tokens missed.

    The estimate is read as `CacheReport`'s figures are: a whole number from 0 to
    `MAX_TOKENS`, else None (a bool, float, NaN, string, negative or larger number).
    """
    tokens: int | None = None
    if isinstance(missed, int) and not isinstance(missed, bool) and 0 <= missed <= MAX_TOKENS:
        tokens = missed
    about = f" (about {tokens:,} input tokens not read from the cache)" if tokens else ""
    return ResponseNotice(
        kind="cache_miss",
        reason=reason,
        detail=f"the prompt cache missed: {reason}{about}",
        missed_tokens=tokens,
    )


def stopped(reason: str, detail: str) -> ResponseNotice:
    """A notice of kind ``incomplete``: the turn did not end normally."""
    return ResponseNotice(kind="incomplete", reason=reason, detail=detail)


def others_left(data: Mapping[str, Any], key: str, asked: str) -> tuple[ResponseNotice, ...]:
    """A notice of kind ``choices_dropped`` when ``data[key]`` holds more than one turn.

    A conversation goes on from one answer: `ContextChef.ingest` keeps the first choice
    (Chat ``choices``, `asked` ``n``) or candidate (Gemini ``candidates``,
    ``candidateCount``), and says how many it left out; `reason` is their count.
    """
    turns = data.get(key)
    if not isinstance(turns, list) or len(turns) < 2:
        return ()
    left = len(turns) - 1
    return (
        ResponseNotice(
            kind="choices_dropped",
            reason=str(left),
            detail=f"the response held {len(turns)} {key}; the first was kept and {left} "
            f"left out (ask for one: {asked}=1)",
        ),
    )


def read_as(
    data: Mapping[str, Any],
    turn: ParsedHistory,
    stops: Sequence[ResponseNotice],
    cache: CacheReport | None = None,
    *,
    cut: Collection[str] = (),
    carries: Callable[[TextPart], object] | None = None,
    refused: bool = False,
) -> ReadResponse:
    """The `ReadResponse` of `data`: id, `turn`, notices, then `stops`; `cache` its report.

    Every wire's reader ends here, so a reply is read by one rule whatever its wire: its
    empty text parts are not stored (`history.without_empty_text`; `carries`: the wire's
    empty text part that holds something to send back: a Gemini thought signature, an
    Interactions step the next request chains to), and
    a reply left with nothing is an empty reply. A stop whose reason is in `cut` (the
    wire's output-limit reasons) cut the reply off: its last call is answered, not run
    (`cut_last_call`). `refused`: the reply is the model's refusal (`ReadResponse.refused`).
    """
    turn = replace(turn, messages=without_empty_text(turn.messages, carries))
    if any(stop.reason in cut for stop in stops):
        turn = cut_last_call(turn)
    raw_id = data.get("id", data.get("responseId", data.get("response_id")))
    model = data.get("model", data.get("modelVersion"))
    return ReadResponse(
        turn=turn,
        id=raw_id if isinstance(raw_id, str) else None,
        notices=(*provider_notices(data), *stops),
        cache=cache or CacheReport(usage=False),
        model=model if isinstance(model, str) else "",
        refused=refused,
    )


def cut_last_call(turn: ParsedHistory) -> ParsedHistory:
    """`turn` with its last tool call's arguments replaced by ``CUT_OFF``.

    The reply ended at the output token limit, so its last call may be incomplete even
    when its arguments read as JSON (a path cut short, an object without its last
    members): Anthropic says a ``tool_use`` block of a reply stopped at ``max_tokens`` may
    be incomplete and the request should be retried with a higher ``max_tokens``
    (https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons). The
    call is kept (its id and name, so the gate answers it and the model sees what it
    tried) and recorded with ``CUT_OFF`` arguments, which the gate answers with an error
    result telling the model to call it again, the way it answers ``MALFORMED_CALL``; the
    reply's earlier calls were complete and run. Sent back as ``{}``.
    """
    for m in range(len(turn.messages) - 1, -1, -1):
        parts = turn.messages[m].parts
        for p in range(len(parts) - 1, -1, -1):
            call = parts[p]
            if isinstance(call, ToolCall):
                cut = replace(call, arguments=CUT_OFF)
                message = replace(turn.messages[m], parts=(*parts[:p], cut, *parts[p + 1 :]))
                note = (
                    f"message {m}: call {shown(call.id)} to {shown(call.name)} ended a reply cut "
                    "off at the output limit; answered, not run"
                )
                return replace(
                    turn,
                    messages=(*turn.messages[:m], message, *turn.messages[m + 1 :]),
                    notes=(*turn.notes, note),
                )
    return turn


def checked_response(response: object, reader: WireReader) -> Mapping[str, Any]:
    """`response_dict(response)`, refused when it holds no turn of `reader`'s wire.

    That is a failed response (`WireReader.failure`) or an error body (an ``error``
    object and no ``reader.turn_key``).

    Raises:
        CorruptHistoryError: Naming the provider's error code and message.
    """
    data = response_dict(response)
    why = reader.failure(data)
    if why is not None:
        raise CorruptHistoryError(why, index=0)
    error = data.get("error")
    if isinstance(error, Mapping) and reader.turn_key not in data:
        raise CorruptHistoryError(
            f"the provider returned an error instead of a turn ({error_text(error)})", index=0
        )
    return data


def renamed_ids(before: Sequence[Message], after: Sequence[Message]) -> tuple[ResponseNotice, ...]:
    """A ``call_id_renamed`` notice for each call `ingest` gave a new id (`unique_call_ids`).

    A server that sends ``""`` or the same id (``call_0``) every turn gets its reused ids
    replaced in the history; a host that answers with the id from the raw response
    instead of the call `ingest` returned would answer nothing, so each rename is said.
    """
    return tuple(
        ResponseNotice(
            kind="call_id_renamed",
            reason=old.id,
            detail=f"the model's call to {shown(new.name)} reused id {shown(old.id)} (or had "
            f"none); it is {shown(new.id)} in the history: answer the calls ingest returns, by "
            "their ids",
        )
        for m, n in zip(before, after, strict=True)
        for old, new in zip(m.tool_calls, n.tool_calls, strict=True)
        if old.id != new.id
    )
