"""Gemini adapter (``client.models.generate_content(**payload)``, google-genai SDK).

Follows https://ai.google.dev/gemini-api/docs/function-calling: the system prompt is
``config.system_instruction``; tools are one ``Tool`` with ``function_declarations``,
each schema sent as ``parameters_json_schema`` (plain JSON Schema); the model's turns
have role ``model``; calls are ``function_call`` parts and answers ``function_response``
parts, all answers of a batch in one user ``Content``.

How each IR part is rendered (keys in the SDK's snake_case; the SDK writes the REST
camelCase itself):

* text -> ``text`` part; media -> ``inline_data`` (base64) or ``file_data`` (URI / file
  id) (https://ai.google.dev/gemini-api/docs/image-understanding);
* Gemini reasoning (``thought: true`` parts) -> the recorded part unchanged; a recorded
  ``thought_signature`` on any other part is sent back on that part
  (https://ai.google.dev/gemini-api/docs/thought-signatures); other providers' reasoning
  is dropped;
* tool call -> ``function_call`` (the recorded ``args`` object while it still matches
  the arguments; no ``id`` when the recorded call had none);
* tool result -> ``function_response`` with ``response`` ``{"output": text}`` or
  ``{"error": text}`` (or the recorded response object while it still matches), and
  media returned by the tool as the response's ``parts``
  (https://ai.google.dev/gemini-api/docs/function-calling#multimodal);
* provider parts recorded from Gemini (``executable_code``...) -> that part; others
  dropped. A Content left without parts is not sent.
"""

from __future__ import annotations

import dataclasses
import logging
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextchef._errors import shown
from contextchef._json import canonical_dumps, thaw
from contextchef._records import RecordDict, RecordList, entry, record_items
from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.history._normalize import Change, HistoryRules, Refused, is_user_turn
from contextchef.providers._base import (
    AdapterDefaults,
    ModelRules,
    Profile,
    RequestOptions,
    apply_hints,
    dumps_segment,
    hints,
    object_arguments,
)
from contextchef.providers._keeps import PLAIN_PARTS, keeps_part, reasoning_refused
from contextchef.providers._media import fit_media
from contextchef.providers._usage import CacheRules
from contextchef.providers.gemini import _signatures
from contextchef.providers.gemini._media import GEMINI_MEDIA
from contextchef.providers.gemini._schema import GeminiSchema, translate, unchanged
from contextchef.providers.gemini._signatures import (
    SKIP_SIGNATURE,
    UNSIGNED_STEPS,
    bad_signature,
    drop_bad_signatures,
    is_base64,
    sign_current_turn,
    signs_calls,
    unsigned_sent_step,
)
from contextchef.tools._tool import CompiledTool

_logger = logging.getLogger("contextchef")

__all__ = ["SKIP_SIGNATURE", "GeminiAdapter", "is_base64", "render_part", "response_text"]

FORMAT = _signatures.FORMAT
"""The ``provider_data`` tag of parts recorded from Gemini."""
GEMINI = HistoryRules(name="gemini", alternate_roles=True, assistant_media=True)
"""Gemini: alternating roles; the model's turns may hold media."""


def _text(part: TextPart) -> dict[str, Any]:
    if part.provider_data is None:  # the record `entry` makes (no call for a `str`)
        return (RecordDict if type(part.text) is str else entry)(text=part.text)
    return apply_hints({"text": part.text}, hints(part.provider_data, FORMAT))


def _media_data(part: MediaPart) -> dict[str, Any]:
    if part.data is not None:
        return {"inline_data": {"mime_type": part.media_type, "data": part.data}}
    uri = part.url if part.url is not None else part.file_id
    return {"file_data": {"file_uri": uri, "mime_type": part.media_type}}


def _media(part: MediaPart) -> dict[str, Any]:
    return apply_hints(_media_data(part), hints(part.provider_data, FORMAT))


THOUGHT_NEEDS = "its recorded thought part ('thought': true, its 'thought_signature' as sent)"
"""What generateContent needs to take reasoning back (`providers._keeps.reasoning_refused`):
Gemini's own thought part as recorded, signature unchanged
(https://ai.google.dev/gemini-api/docs/thought-signatures)."""


def _thought_kept(part: ReasoningPart) -> bool | Refused:
    """True when Gemini takes `part` back as recorded (`_reasoning`), else why not.

    Another provider's reasoning, or Gemini's without its recorded part, is left out
    (`reasoning_refused`). So is a thought part whose ``thought_signature`` is not base64
    text: it is dropped for this target (and reported), never sent to fail every later
    request in the SDK, as a thinking block without its signature is (docs/guides/history.md).
    """
    recorded = hints(part.provider_data, FORMAT).get("part")
    if part.provider != "gemini" or not isinstance(recorded, Mapping):
        return reasoning_refused(part, "gemini", THOUGHT_NEEDS)
    key = bad_signature(recorded)
    if key is not None:
        return Refused(
            f"its {key!r} ({shown(recorded[key], 40)}) is not base64 text, which the "
            "google-genai SDK refuses on every request it is sent in"
        )
    return True


def _reasoning(part: ReasoningPart) -> dict[str, Any] | None:
    """The recorded thought part, or None where `_thought_kept` says why not."""
    if _thought_kept(part) is not True:
        return None
    out: dict[str, Any] = thaw(hints(part.provider_data, FORMAT)["part"])
    return out


def _provider(part: ProviderPart) -> dict[str, Any] | None:
    if part.provider != FORMAT:
        return None
    out: dict[str, Any] = thaw(part.data)
    return out


def _recorded(hint: Mapping[str, Any], key: str, text: str) -> Any:
    """The recorded object under `key` if it still serializes to `text`, else None."""
    value = hint.get(key)
    if value is not None and canonical_dumps(value) == text:
        return thaw(value)
    return None


def _function_call(part: ToolCall) -> dict[str, Any]:
    if part.provider_data is None:
        args = object_arguments(part, read_only=True)
        pure = type(args) is RecordDict and type(part.id) is str and type(part.name) is str
        made = RecordDict if pure else entry  # as `entry` makes them (no call for plain values)
        return made(function_call=made(id=part.id, name=part.name, args=args))
    hint = hints(part.provider_data, FORMAT)
    args = _recorded(hint, "args", part.arguments)
    call: dict[str, Any] = {} if hint.get("synthetic_id") else {"id": part.id}
    call["name"] = part.name
    call["args"] = object_arguments(part) if args is None else args
    return apply_hints({"function_call": call}, hint)


def response_text(response: Mapping[str, Any]) -> str:
    """The text a ``function_response.response`` object stands for in the IR.

    The value itself when the object has one string field (``{"output": ...}``,
    ``{"result": ...}``), else the object as compact JSON.
    """
    if len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return canonical_dumps(response)


def _function_response(part: ToolResult) -> dict[str, Any]:
    if part.provider_data is None and not part.media:
        pure = type(part.content) is str and type(part.call_id) is str and type(part.name) is str
        made = RecordDict if pure else entry  # as `entry` makes them (no call for plain values)
        body = made(**{"error" if part.is_error else "output": part.content})
        return made(function_response=made(id=part.call_id, name=part.name, response=body))
    hint = hints(part.provider_data, FORMAT)
    recorded = hint.get("response")
    response: Any = None
    if recorded is not None and response_text(recorded) == part.content:
        response = thaw(recorded)
    if response is None:
        response = {"error" if part.is_error else "output": part.content}
    reply: dict[str, Any] = {} if hint.get("synthetic_id") else {"id": part.call_id}
    reply["name"] = part.name
    reply["response"] = response
    if part.media:
        reply["parts"] = [_media_data(m) for m in part.media]
    return apply_hints({"function_response": reply}, hint)


_PARTS: dict[str, Callable[[Any], dict[str, Any] | None]] = {
    "text": _text,
    "media": _media,
    "reasoning": _reasoning,
    "provider": _provider,
    "tool_call": _function_call,
    "tool_result": _function_response,
}


def render_part(part: Part) -> dict[str, Any] | None:
    """One IR part as a Gemini ``Part`` dict; None when it is not for Gemini."""
    return _PARTS[part.kind](part)


def _render_in_turn(
    calls: Mapping[str, tuple[str, bool]],
) -> Callable[[Part], dict[str, Any] | None]:
    """`render_part`, answering each call under its name and id (see render_messages)."""

    def render(part: Part) -> dict[str, Any] | None:
        if isinstance(part, ToolResult) and part.call_id in calls:
            name, synthetic = calls[part.call_id]
            data = part.provider_data
            unpaired = not synthetic and _without_id(part)
            if name == part.name and not synthetic and not unpaired:
                return _PARTS[part.kind](part)  # as it is (no copy checking its text again)
            if synthetic and hints(data, FORMAT) is not data:  # not recorded from Gemini
                data = {"provider": FORMAT, "synthetic_id": True}
            elif synthetic:
                data = {**dict(data or {}), "synthetic_id": True}
            elif unpaired:  # the call has an id: its response carries it (`_paired_ids`)
                data = {k: v for k, v in hints(data, FORMAT).items() if k != "synthetic_id"}
            part = dataclasses.replace(part, name=name, provider_data=data)
        return render_part(part)

    return render


def _without_id(part: ToolResult) -> bool:
    """Whether `part` was recorded from Gemini as a ``function_response`` without an id."""
    return bool(hints(part.provider_data, FORMAT).get("synthetic_id"))


def _paired_ids(
    messages: Sequence[Message], before: Sequence[Message], offset: int
) -> tuple[list[Message], list[Change]]:
    """`messages` with each response recorded without an id given its call's id.

    google-genai's ``FunctionCall.id``: "If populated, the client [is] to execute the
    ``function_call`` and return the response with the matching ``id``" (research
    gemini-interactions.md §6: ``functionCall: {id?, ...}``, ``functionResponse: {id?,
    ...}``); `FakeGemini` refuses a call id no response matches
    (``gemini_function_calls_answered``). A host answering with
    ``Part.from_function_response(name=, response=)`` (no ``id`` parameter) records a
    response without one: it is sent with its call's id, each reported
    (``added_result_id``). A call sent without an id (Gemini 2.x) keeps its response
    without one (`_render_in_turn`). `before` are the messages already sent.
    """
    wanted = {  # a response recorded without an id holds a hint saying so
        p.call_id
        for m in messages
        for p in m.parts
        if type(p) is ToolResult and p.provider_data is not None and _without_id(p)
    }
    if not wanted:
        return list(messages), []
    ided: dict[str, bool] = {}  # call id -> the call carries it on the wire
    for msg in (*messages, *reversed(before)):  # only as far back as the calls answered
        for call in msg.tool_calls:
            if call.id in wanted and call.id not in ided:
                ided[call.id] = not hints(call.provider_data, FORMAT).get("synthetic_id")
        if len(ided) == len(wanted):
            break
    out: list[Message] = []
    changes: list[Change] = []
    for i, msg in enumerate(messages):
        parts = list(msg.parts)
        for j, part in enumerate(parts):
            if not (isinstance(part, ToolResult) and _without_id(part) and ided.get(part.call_id)):
                continue
            hint = hints(part.provider_data, FORMAT)
            kept = {k: v for k, v in hint.items() if k != "synthetic_id"}
            parts[j] = dataclasses.replace(part, provider_data=kept)
            changes.append(
                Change(
                    kind="added_result_id",
                    index=offset + i,
                    call_id=part.call_id,
                    detail=f"message {offset + i}: function_response {part.name[:80]!r} had no "
                    f"id; sent with its call's id {part.call_id[:80]!r}",
                )
            )
        changed = any(map(operator.is_not, parts, msg.parts))
        out.append(dataclasses.replace(msg, parts=tuple(parts)) if changed else msg)
    return out, changes


class GeminiAdapter(AdapterDefaults):
    """IR -> google-genai ``generate_content`` keyword arguments."""

    profile = Profile(
        target="gemini",
        written=frozenset({"model", "contents", "config"}),
        api_host="generativelanguage.googleapis.com",
        default_model="gemini-2.5-pro",
        wire=FORMAT,
        history=GEMINI,
        max_tokens_key="max_output_tokens",
    )
    """Payloads are for ``google.genai.Client().models.generate_content``."""

    def keeps(self, part: Part) -> bool | Refused:
        """Gemini receives its own thought parts (as recorded) and provider parts.

        Blank text only where it carries a thought signature recorded from Gemini.
        """
        if type(part) in PLAIN_PARTS and (type(part) is not TextPart or part.text.strip()):
            return True
        if isinstance(part, TextPart) and not part.text.strip():
            extra = hints(part.provider_data, FORMAT).get("extra") or {}
            return is_base64(extra.get("thought_signature"))
        return keeps_part(part, fmt=self.profile.wire, reasoning=_thought_kept)

    def schema_changes(self, schema: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What `render_tools` changes in `schema` (`translate`): changes, refs inlined."""
        if unchanged(schema, silent_drops=True):
            return (), ()
        done = translate(schema)
        return done.changes, done.refs

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """One ``Tool`` holding every function declaration (empty list if no tools).

        Schemas go in Gemini's subset (`contextchef.providers.gemini._schema.translate`);
        what that changes is reported per tool at registration
        (`ContextChef.schema_reports`, logged at INFO) and logged again here at DEBUG.
        """
        if not tools:
            return []
        declarations = []
        for tool in tools:
            if unchanged(tool.input_schema):  # most schemas: a copy, nothing to translate
                schema = GeminiSchema(schema=thaw(tool.input_schema), changes=())
            else:
                schema = translate(tool.input_schema)
            if schema.changes:  # once per session: the tools are rendered once and frozen
                _logger.debug(
                    "contextchef: gemini: tool %r: %s", tool.name, "; ".join(schema.changes)
                )
            declarations.append(
                {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters_json_schema": schema.schema,
                }
            )
        return [{"function_declarations": declarations}]

    def render_messages(
        self, messages: Sequence[Message], *, before: Sequence[Message] = ()
    ) -> list[dict[str, Any]]:
        """IR messages as ``Content`` dicts (assistant -> role ``model``).

        A ``functionResponse`` carries its call's name (Gemini pairs them by name, and
        by id where the call has one): a result recorded under another name (the real
        tool behind ``defer_execute``) is sent under the call's. A result answering a
        call Gemini sent without an id (the IR gave it a synthetic one) goes without an
        id too, as the call does. Calls made in `before` (already sent) count. Entries
        are read-only records (`copy.deepcopy` gives plain ones), as the session sends them.
        """
        out: list[dict[str, Any]] = []
        calls: dict[str, tuple[str, bool]] = {}
        looked = messages if before else ()  # calls to look for in `before` (none without)
        made_here = {c.id for m in looked for c in m.tool_calls}
        wanted = {r.call_id for m in looked for r in m.tool_results} - made_here
        for msg in reversed(before):  # only as far back as the calls answered here
            if not wanted:
                break
            for call in msg.tool_calls:
                if call.id in wanted and call.id not in calls:
                    synthetic = bool(hints(call.provider_data, FORMAT).get("synthetic_id"))
                    calls[call.id] = (call.name, synthetic)
                    wanted.discard(call.id)
        render = _render_in_turn(calls)  # reads `calls` as it grows below
        for msg in messages:
            for p in msg.parts:
                if isinstance(p, ToolCall):
                    data = p.provider_data
                    synthetic = data is not None and bool(hints(data, FORMAT).get("synthetic_id"))
                    calls[p.id] = (p.name, synthetic)
            parts: list[dict[str, Any]] = []
            pure = True  # every part a `RecordDict`: what `record_items` tests
            for p in msg.parts:
                part = render(p) if isinstance(p, ToolResult) else _PARTS[p.kind](p)
                if part is not None:
                    parts.append(part)
                    pure = pure and type(part) is RecordDict
            if parts:  # read-only records (`entry`), as the session records what it sends
                role = "model" if msg.role == "assistant" else "user"
                if pure:  # what `entry` makes of it, without the calls
                    out.append(RecordDict(role=role, parts=RecordList(parts)))
                else:
                    out.append(entry(role=role, parts=record_items(parts)))
        return out

    def render_contents(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """IR messages as ``Content`` dicts (`render_messages` with nothing before)."""
        return self.render_messages(messages)

    def cache_rules(self, model: str) -> CacheRules:
        """Gemini's implicit cache: no write price, no stated lifetime.

        Caching from 4,096 tokens (Gemini 4 Argon, 3.8 / 3.6 Flash; other names too) or
        2,048 (2.5), per https://ai.google.dev/gemini-api/docs/caching (2026-10-13; Vertex
        says 6,144 for Argon); the read multiplier is spec 002's 0.1, assumed.
        """
        older = "gemini-2.5" in model.lower()
        return CacheRules(
            read=0.1,
            write={"implicit": 1.0},
            ttl="implicit",
            min_tokens=2048 if older else 4096,
            source="Gemini implicit caching (ai.google.dev, 2026-10-13): minimum 4,096 tokens "
            "(2,048 on 2.5), no write price; read 0.1x assumed (spec 002)",
        )

    def model_rules(self, model: str) -> ModelRules:
        """No system role in ``contents`` (system text goes into the user turn), no prefill.

        ``contents`` must end with a user turn or a function response: a trailing model
        turn is a 400 ("Please ensure that multiturn requests ends with a user role or a
        function response"; "single turn requests end with a user role"), so compile
        refuses a history ending with the model's turn and ``prefill=``.

        Function calls of the current turn need a thought signature (`ModelRules.signed_calls`)
        on every model but Gemini 1.x / 2.x, which do not validate them
        (https://ai.google.dev/gemini-api/docs/thought-signatures); an unknown name is
        taken to need them.
        """
        return ModelRules(model=model, prefill=False, signed_calls=signs_calls(model))

    def refused_at(
        self,
        entries: Sequence[Mapping[str, Any]],
        rules: ModelRules,
        memo: dict[Any, Any],
        new: Sequence[Message] = (),
    ) -> tuple[int, str] | None:
        """The first sent step of the current turn without a thought signature, on Gemini 3+.

        Gemini 3 validates the signatures of every step of the current turn (the model's
        steps since the last user text) and answers 400 for a function call step without
        one (https://ai.google.dev/gemini-api/docs/thought-signatures; research
        provider-context-management.md 2.3). A step sent unsigned to Gemini 1.x / 2.x
        (which do not validate them) is refused once the model switches mid-turn; the
        session replays from before it, and `fit_references` gives it `SKIP_SIGNATURE`,
        the placeholder the docs give for calls the model being asked did not make
        (``signed_foreign_call``, and the edit reported). None where the model takes
        unsigned calls, or when the `new` messages open a turn of their own (an earlier
        turn is not validated: nothing sent needs an edit).
        """
        if not rules.signed_calls or any(map(is_user_turn, new)):
            return None
        found = unsigned_sent_step(entries, memo)
        return None if found is None else (found, UNSIGNED_STEPS)

    def system_message(self, text: str) -> dict[str, Any] | None:
        """None: ``contents`` has no system role."""
        return None

    def injected_call(self, call: ToolCall) -> ToolCall:
        """`call` with Gemini's documented placeholder thought signature.

        Gemini 3 rejects a ``function_call`` in the current turn without a
        ``thought_signature``; for calls the model did not make, the docs give
        ``skip_thought_signature_validator``
        (https://ai.google.dev/gemini-api/docs/thought-signatures).
        """
        data = {"provider": FORMAT, "extra": {"thought_signature": SKIP_SIGNATURE}}
        return dataclasses.replace(call, provider_data=data)

    def fit_references(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]],
        *,
        offset: int = 0,
        before: Sequence[Message] = (),
        defined: Sequence[Mapping[str, Any]] = (),
        rules: ModelRules | None = None,
        cache: dict[Any, Any] | None = None,
    ) -> tuple[tuple[Message, ...], tuple[Change, ...]]:
        """`messages` as Gemini takes them: responses paired by id, calls signed where needed.

        A response recorded without an id answering a call that has one gets the call's id
        (`_paired_ids`, ``added_result_id``). A thought signature that is not base64 text
        is dropped (`drop_bad_signatures`). Then, where the model validates signatures
        (`ModelRules.signed_calls`: Gemini 3 and later; None `rules`: assumed), a
        ``function_call`` of the current turn (the model's steps since the last user text)
        whose step carries no ``thought_signature`` is a 400 ("Function call is missing a
        thought_signature in functionCall parts", research provider-context-management.md
        §2.3). A history from another provider, or written by hand, has none to give: the
        first call of each such step gets the placeholder the docs give for calls the
        model did not make, `SKIP_SIGNATURE` ("transfer a conversation trace from
        another model, or inject custom function calls",
        https://ai.google.dev/gemini-api/docs/thought-signatures; research
        gemini-interactions.md §3), each reported (``signed_foreign_call``). On Gemini
        1.x / 2.x, which accept unsigned calls, every call is sent as it was recorded:
        Gemini's own calls, returned unsigned with thinking off, are never edited. The
        session renders only messages not sent yet, so what a request sent is never
        signed differently later (append-only). First, media Gemini does not take (in a
        user turn or a function response) are text notes (`fit_media`, `_media.GEMINI_MEDIA`).
        """
        messages, noted = fit_media(
            messages, GEMINI_MEDIA, offset=offset, before=before, cache=cache
        )
        paired, changes = _paired_ids(messages, before, offset)
        out, dropped = drop_bad_signatures(paired, offset)
        signed, placeholders = sign_current_turn(out, offset, rules)
        return signed, (*noted, *changes, *dropped, *placeholders)

    def assemble(
        self,
        *,
        system: str,
        tools: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """``model``, `messages` as ``contents`` (not copied) and ``config``."""
        config: dict[str, Any] = {}
        if system:
            config["system_instruction"] = system
        if tools:
            config["tools"] = list(tools)
            # The SDK would otherwise try to run Python callables; we pass declarations.
            config["automatic_function_calling"] = {"disable": True}
        if options.max_tokens is not None:
            config[self.profile.max_tokens_key] = options.max_tokens
        for key, value in options.extra.items():
            config.setdefault(key, value)
        contents: list[Any] = list(messages)
        if options.prefill:
            contents.append({"role": "model", "parts": [{"text": options.prefill}]})
        return {"model": options.model, "contents": contents, "config": config}

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """system_instruction / tools / contents as canonical JSON."""
        config = payload.get("config") or {}
        return {
            "system": dumps_segment(config.get("system_instruction")),
            "tools": dumps_segment(config.get("tools")),
            "messages": dumps_segment(payload.get("contents")),
        }
