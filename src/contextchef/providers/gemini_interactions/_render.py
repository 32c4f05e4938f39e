"""Gemini Interactions adapter (``client.interactions.create(**payload)``, google-genai).

Wire rules followed (google-genai 3.6.1 request types ``_gaos/types/interactions/``, and
https://ai.google.dev/gemini-api/docs/interactions; sources and conflicts in
``shared/research/gemini-interactions.md``):

* snake_case keys; ``system_instruction`` is a plain string; ``tools`` are flat
  ``{"type": "function", "name", "description", "parameters"}`` entries whose
  ``parameters`` is JSON Schema (no return schema: the API has none);
* the output cap is ``generation_config.max_output_tokens`` (no ``tool_config``, no
  ``thinking_budget``: thinking is ``generation_config.thinking_level``, passed by the
  host in ``extra``);
* the conversation is ``input``, a list of typed steps with no roles, all of one kind
  (steps, never content blocks mixed in): ``user_input`` and ``model_output`` hold
  content blocks (``text``; ``image`` / ``audio`` / ``video`` / ``document`` with
  ``data`` or ``uri`` and ``mime_type``); the model's ``thought``, ``function_call`` and
  server-tool steps are replayed whole, in order, exactly as returned (their
  ``signature`` fields are opaque); results are top-level ``function_result`` steps
  paired to their call by ``call_id``;
* stateless mode (the default): every request sends the whole history from the
  session's ledger with ``store: false``;
* stateful mode (``extra={"store": True}``): the server keeps each interaction (inputs
  and outputs; paid tier 55 days, free tier 1 day), and a request that extends the last
  one answered sends ``previous_interaction_id`` (that answer's id) and only the new
  steps after it (the function results, the next ``user_input``); the session's ledger
  keeps the whole record, so a retry, an edit or a switch to another target
  sends everything again (state is on by default, ``store`` true:
  ai.google.dev/gemini-api/docs/migrate-to-interactions; research §1.2, §1.3, §7.2);
* either way ``system_instruction``, ``tools`` and ``generation_config`` are
  interaction-scoped (the server carries the conversation history only; research §1.3)
  and sent on every request, byte-identical while the session's tools do not change.

How each IR part is rendered:

* consecutive text and media parts -> one ``user_input`` (user) or ``model_output``
  (assistant) step; a part recorded as the first of a step starts a new one, with that
  step's other recorded fields;
* reasoning recorded from this API -> its ``thought`` step, unchanged; others dropped,
  and so is a ``thought`` without a ``signature`` (the docs say one is always present);
* tool call -> ``function_call`` (``id``, ``name``, ``arguments`` object; a recorded call's
  extra fields, such as a ``signature``, kept);
* tool result -> ``function_result`` (``call_id``, ``name`` of the call, ``result`` the
  text, or a list of content blocks when the tool returned media, ``is_error`` when
  set; a recorded ``result`` object while it still says the same text);
* provider parts recorded from this API (server-tool steps, unknown step types) -> the
  step, unchanged; others dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._errors import UsageError, shown
from contextchef._json import canonical_dumps, thaw
from contextchef.history._lazy import call_names
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
    Chain,
    ModelRules,
    Profile,
    RequestOptions,
    apply_hints,
    copy_schema,
    dumps_segment,
    hints,
    object_arguments,
)
from contextchef.providers._call_ids import fitted_id
from contextchef.providers._keeps import keeps_part
from contextchef.providers._media import fit_media
from contextchef.providers._tool_changes import deferred
from contextchef.providers._usage import CacheRules
from contextchef.providers.gemini._media import GEMINI_MEDIA
from contextchef.providers.gemini._render import GeminiAdapter
from contextchef.providers.gemini._signatures import (
    UNSIGNED_STEPS,
    sign_current_turn,
    signs_calls,
    unsigned_sent_step,
)
from contextchef.providers.gemini_interactions import _signatures
from contextchef.providers.gemini_interactions._signatures import (
    STEPS,
    placed,
    signed,
    thought_before,
    thought_kept,
    with_placeholder,
)
from contextchef.tools._tool import CompiledTool

__all__ = ["FORMAT", "INTERACTIONS", "GeminiInteractionsAdapter", "render_content", "result_text"]

FORMAT = _signatures.FORMAT
"""The wire's name and the ``provider_data`` tag of parts recorded from it."""
INTERACTIONS = HistoryRules(name=FORMAT, results_first=False, assistant_media=True)
"""Interactions: steps have no roles (none to alternate); results are steps of their own;
``model_output`` may hold media."""

MEDIA_TYPES = ("image", "audio", "video", "document")
"""Content block types carrying media (``data`` base64 or ``uri``, with ``mime_type``)."""


def _text(part: TextPart) -> dict[str, Any]:
    return apply_hints({"type": "text", "text": part.text}, hints(part.provider_data, FORMAT))


def _media_kind(media_type: str) -> str:
    head = media_type.partition("/")[0]
    return head if head in MEDIA_TYPES[:3] else "document"


def _media(part: MediaPart) -> dict[str, Any]:
    built: dict[str, Any] = {"type": _media_kind(part.media_type)}
    if part.data is not None:
        built["data"] = part.data
    else:
        built["uri"] = part.url if part.url is not None else part.file_id
    built["mime_type"] = part.media_type
    return apply_hints(built, hints(part.provider_data, FORMAT))


def render_content(part: TextPart | MediaPart) -> dict[str, Any]:
    """One text or media part as a content block (``{"type": "text", "text": ...}``...)."""
    return _text(part) if isinstance(part, TextPart) else _media(part)


def _call(part: ToolCall) -> dict[str, Any]:
    hint = hints(part.provider_data, FORMAT)
    recorded = hint.get("args")
    same = recorded is not None and canonical_dumps(recorded) == canonical_dumps(
        object_arguments(part)
    )
    arguments = thaw(recorded) if same else object_arguments(part)
    call_id = fitted_id(part.id)  # required (no length limit stated); "" gets one
    built = {"type": "function_call", "id": call_id, "name": part.name, "arguments": arguments}
    return apply_hints(built, hint)


def result_text(result: object) -> str:
    """The text a ``function_result.result`` stands for in the IR.

    A string itself; a list of content blocks: its ``text`` blocks joined (other blocks
    are the result's media); any other value: compact canonical JSON.
    """
    if isinstance(result, str):
        return result
    if isinstance(result, list) and all(isinstance(b, Mapping) for b in result):
        return "".join(str(b.get("text", "")) for b in result if b.get("type") == "text")
    return canonical_dumps(result)


def _result(part: ToolResult, name: str) -> dict[str, Any]:
    hint = hints(part.provider_data, FORMAT)
    recorded = hint.get("result")
    value: Any
    if recorded is not None and result_text(recorded) == part.content and not part.media:
        value = thaw(recorded)
    elif part.media:
        text = [{"type": "text", "text": part.content}] if part.content else []
        value = text + [_media(m) for m in part.media]
    else:
        value = part.content
    call_id = fitted_id(part.call_id)  # as its call's
    built: dict[str, Any] = {"type": "function_result", "call_id": call_id, "name": name}
    built["result"] = value
    if part.is_error:
        built["is_error"] = True
    return apply_hints(built, hint)


def render_step_part(part: Part) -> dict[str, Any] | None:
    """A part that is a whole step on its own (reasoning, call, result, provider step)."""
    if isinstance(part, ToolCall):
        return _call(part)
    if isinstance(part, ToolResult):
        return _result(part, part.name)
    if isinstance(part, ReasoningPart):  # a thought without a signature: nothing to verify
        return thaw(hints(part.provider_data, FORMAT)["step"]) if thought_kept(part) else None
    if isinstance(part, ProviderPart) and part.provider == FORMAT:
        out: dict[str, Any] = thaw(part.data)
        return out
    return None


def content_step(role: str, parts: Sequence[TextPart | MediaPart]) -> dict[str, Any]:
    """One ``user_input`` / ``model_output`` step holding `parts` (the first's step hints)."""
    kind = "model_output" if role == "assistant" else "user_input"
    hint = hints(parts[0].provider_data, FORMAT).get("step") or {}
    built = {"type": kind, "content": [render_content(p) for p in parts]}
    return apply_hints(built, hint)


def _steps(message: Message, names: Mapping[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: list[TextPart | MediaPart] = []

    def flush() -> None:
        if pending:
            out.append(content_step(message.role, pending))
            pending.clear()

    for part in message.parts:
        if isinstance(part, (TextPart, MediaPart)):
            if pending and hints(part.provider_data, FORMAT).get("step") is not None:
                flush()  # the part starts another recorded step
            pending.append(part)
            continue
        flush()
        if isinstance(part, ToolResult):
            step: dict[str, Any] | None = _result(part, names.get(part.call_id, part.name))
        else:
            before = thought_before(part) if isinstance(part, ToolCall) else None
            out += [before] if before is not None else []  # a placeholder signature (`placed`)
            step = render_step_part(part)
        if step is not None:
            out.append(step)
    flush()
    return out


def _tools_at_start(entries: Sequence[Any]) -> list[Any]:
    """What the model sees of a ``tools`` array (research section 5, UNVERIFIED).

    A deferred function counts as its name and ``short_description`` (google-genai's
    ``Function`` type: what the model is shown of a function with ``defer_loading``; no
    public page says more), the ``tool_search`` entry as sent.
    """
    keep = ("type", "name", "short_description")
    return [
        {k: e[k] for k in keep if k in e} if isinstance(e, Mapping) and deferred(e) else e
        for e in entries
    ]


class GeminiInteractionsAdapter(AdapterDefaults):
    """IR -> google-genai ``client.interactions.create`` keyword arguments.

    Stateless by default; stateful (chained by ``previous_interaction_id``) when the host
    passes ``extra={"store": True}`` (see the module docstring for the trade-off).
    """

    profile = Profile(
        target=FORMAT,
        written=frozenset(
            {
                "model",
                "system_instruction",
                "tools",
                "input",
                "previous_interaction_id",
                "continuation_token",
            }
        ),
        api_host="generativelanguage.googleapis.com",
        default_model="gemini-4-argon",
        wire=FORMAT,
        history=INTERACTIONS,
        max_tokens_key="max_output_tokens",
        native_tool_search=FORMAT,
        tools_at_start=_tools_at_start,
    )
    """Payloads are for ``google.genai.Client().interactions.create``."""

    def keeps(self, part: Part) -> bool | Refused:
        """This API's own recorded steps, and every text, media, call and result.

        Reasoning from other providers (generateContent thought parts included: their
        signatures are bound to that API, the research's §3) and provider parts of other
        wires, or untyped ones, are not sent, each with the reason (`thought_kept`,
        `keeps_part`); neither is blank text that starts no recorded step.
        """
        if isinstance(part, TextPart) and not part.text.strip():
            return hints(part.provider_data, FORMAT).get("step") is not None
        if isinstance(part, (ReasoningPart, ProviderPart)):
            return keeps_part(part, fmt=FORMAT, reasoning=thought_kept)
        return True

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """One flat ``function`` entry per tool, in the given order.

        ``parameters`` is the tool's JSON Schema, copied unchanged (the API documents the
        keywords it ignores: ``minLength``, ``maxLength``, ``uniqueItems``...; none is
        rewritten).
        """
        return [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": copy_schema(tool.input_schema),
            }
            for tool in tools
        ]

    def tool_entries(
        self, tools: Sequence[CompiledTool], *, search: str | None = None
    ) -> list[dict[str, Any]]:
        """The ``tools`` array; with ``search="server"``, the server's own tool search.

        UNVERIFIED provider behaviour, sent only under the explicit
        ``gemini-interactions-native`` strategy: google-genai 3.6.1 declares the shapes
        (``_gaos/types/interactions/function.py`` ``defer_loading``,
        ``tool_search.py`` ``{"type": "tool_search"}``) and its own tests send them, but
        no public Google page says how the server searches or reveals (research §5).
        Deferred functions carry ``defer_loading: true``; the ``tool_search`` entry
        comes last, so the entries before it stay byte-identical.

        Raises:
            UsageError: A `search` other than ``"server"``.
        """
        if search is None:
            return self.render_tools(tools)
        if search != "server":
            raise UsageError(
                f"the Interactions API has no {search!r} tool search; use 'server' "
                "(strategy 'gemini-interactions-native')"
            )
        entries = self.render_tools(tools)
        for entry, tool in zip(entries, tools, strict=True):
            if tool.defer_loading:
                entry["defer_loading"] = True
        return [*entries, {"type": "tool_search"}]

    def render_messages(
        self, messages: Sequence[Message], *, before: Sequence[Message] = ()
    ) -> list[dict[str, Any]]:
        """IR messages as Interactions steps, in part order.

        A ``function_result`` carries the name of the call it answers (a result recorded
        under the real tool behind ``defer_execute`` is sent under the call's name);
        calls made in `before` (already sent) count.
        """
        names = call_names((*before, *messages))  # a lazy message's from its form
        out: list[dict[str, Any]] = []
        for message in messages:
            out += _steps(message, names)
        return out

    def cache_rules(self, model: str) -> CacheRules:
        """Implicit caching only, as on ``generateContent`` (`GeminiAdapter.cache_rules`).

        https://ai.google.dev/gemini-api/docs/interactions/caching: "The Interactions API
        only supports implicit caching"; hits are ``usage.total_cached_tokens``.
        """
        return GeminiAdapter().cache_rules(model)

    def model_rules(self, model: str) -> ModelRules:
        """No system step and no prefill; signed calls on Gemini 3 and later.

        ``input`` has no system entry (system text goes into the user's turn) and no
        trailing model entry to continue. Function calls of the current turn need a
        thought signature (`ModelRules.signed_calls`) on every model but Gemini 1.x /
        2.x, as on generateContent: the rule is the model's (`_signatures`).
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

        As `GeminiAdapter.refused_at`, on this wire's steps (`_signatures.STEPS`): the
        model's steps since the last ``user_input``, one answer being the steps in a row
        it returned, unsigned when none carries a ``signature``. Sent to Gemini 2.5 (which
        does not validate them), such a step is refused once the model switches mid-turn;
        the session replays from it and `fit_references` gives its first call the
        placeholder, reported. None where the model takes unsigned calls, or when the
        `new` messages open a turn of their own.
        """
        if not rules.signed_calls or any(map(is_user_turn, new)):
            return None
        found = unsigned_sent_step(entries, memo, STEPS)
        return None if found is None else (found, UNSIGNED_STEPS)

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
        """`messages` as the model takes them: media it reads, calls signed where needed.

        Media the Gemini models do not take go as text notes (`fit_media`,
        ``media_as_text``; the tables are ``generateContent``'s,
        `gemini._media.GEMINI_MEDIA`: the same models read a ``user_input`` step and a
        ``function_result``'s content blocks). Then, where the model validates thought
        signatures (`ModelRules.signed_calls`: Gemini 3 and later; None `rules`: assumed),
        each answer of the current turn that holds calls and no signature (another
        provider's, Gemini 2.5's with thinking off, one written by hand) is sent with a
        ``thought`` step holding the placeholder signature before its first
        ``function_call`` (`gemini._signatures.sign_current_turn`, `_signatures.placed`,
        ``signed_foreign_call``; see `_signatures` for the docs and what is unverified).
        The session renders only messages not sent yet, so what a request sent is never
        signed differently later.
        """
        noted, notes = fit_media(messages, GEMINI_MEDIA, offset=offset, before=before, cache=cache)
        out, signs = sign_current_turn(
            noted, offset, rules, fmt=FORMAT, signed=signed, place=placed
        )
        return out, (*notes, *signs)

    def injected_call(self, call: ToolCall) -> ToolCall:
        """`call` sent after a ``thought`` step holding Gemini's placeholder signature.

        As on generateContent (`GeminiAdapter.injected_call`): a call the session adds (a
        memory lookup) is one the model did not make, signed with the placeholder on
        every model (1.x / 2.x do not validate it), so a switch to Gemini 3 within the
        turn finds it valid (`_signatures.with_placeholder`).
        """
        return with_placeholder(call)

    def revealed_tools(self, messages: Sequence[Message]) -> frozenset[str]:
        """Functions the server's search found: its ``tool_search_result`` steps.

        google-genai 3.6.1 ``toolsearchresultstep.py``: ``result`` lists the ``Function``
        definitions found (UNVERIFIED: no public doc says more; research note §3.1).
        """
        names: set[str] = set()
        for message in messages:
            for part in message.parts:
                if not (isinstance(part, ProviderPart) and part.provider == FORMAT):
                    continue
                if part.data.get("type") != "tool_search_result":
                    continue
                found = part.data.get("result")
                for item in found if isinstance(found, (list, tuple)) else ():
                    if isinstance(item, Mapping) and isinstance(item.get("name"), str):
                        names.add(item["name"])
        return frozenset(names)

    def system_message(self, text: str) -> dict[str, Any] | None:
        """None: the steps have no system role."""
        return None

    def assemble(
        self,
        *,
        system: str,
        tools: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The payload around rendered `tools` and `messages` (``input``, not copied).

        Keys: ``model``, ``system_instruction``, ``tools``, ``input``,
        ``generation_config``, then the host's ``extra`` and ``store: false``.

        ``options.max_tokens`` goes in ``generation_config.max_output_tokens``; a
        ``generation_config`` in ``extra`` is merged under it (its other keys kept).
        With ``store`` true and `RequestOptions.chain` set, ``input`` is only the steps
        after the held ones and the model's answer as the server returned it
        (`Chain.answer`), and ``previous_interaction_id`` is
        `RequestOptions.previous_response` (see `_chain` for when the whole history is
        sent instead). With `Chain.token` set the request resumes the last reply
        instead (`_resume`).

        Raises:
            UsageError: ``store`` in `extra` is not a bool, or ``generation_config`` is
                not an object, or ``store`` differs from the request a resumed reply
                answered.
        """
        payload: dict[str, Any] = {"model": options.model}
        if system:
            payload["system_instruction"] = system
        if tools:
            payload["tools"] = list(tools)
        payload["input"] = list(messages)
        given = options.extra.get("generation_config") or {}
        if not isinstance(given, Mapping):
            raise UsageError(
                f"extra field 'generation_config' must be an object, got {shown(given, 60)}"
            )
        config = dict(given)
        if options.max_tokens is not None:
            config[self.profile.max_tokens_key] = options.max_tokens
        if config:
            payload["generation_config"] = config
        for key, value in options.extra.items():
            payload.setdefault(key, value)
        payload.setdefault("store", False)
        if not isinstance(payload["store"], bool):
            raise UsageError(
                f"extra field 'store' must be True or False, got {shown(payload['store'], 40)}"
            )
        chain = options.chain
        if chain is not None and chain.token is not None:
            _resume(payload, messages, chain, options.previous_response)
        elif payload["store"] and chain is not None and options.previous_response:
            _chain(payload, messages, chain, options.previous_response)
        return payload

    def keeps_state(self, payload: Mapping[str, Any]) -> frozenset[str] | None:
        """The interaction-scoped fields of `payload` when ``store`` is true, else None.

        With ``store`` true the server keeps the interaction (research §1.2); a request
        chained to it sends its interaction-scoped fields again (§1.3).
        """
        if payload.get("store", True) is False:
            return None
        return frozenset(k for k in _SCOPED if k in payload)

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """system_instruction / tools / input as canonical JSON.

        A chained ``input`` holds the new steps only; the session's own segments
        (`CompiledRequest.segments`) are the whole record.
        """
        return {
            "system": dumps_segment(payload.get("system_instruction")),
            "tools": dumps_segment(payload.get("tools")),
            "messages": dumps_segment(payload.get("input")),
        }


_SCOPED = ("system_instruction", "tools", "generation_config", "response_format")
"""Interaction-scoped fields: not carried by ``previous_interaction_id`` (research §1.3)."""


def _resume(
    payload: dict[str, Any],
    messages: Sequence[Mapping[str, Any]],
    chain: Chain,
    previous: str | None,
) -> None:
    """The request resuming a reply cut at the decode cap (``requires_continuation``).

    As google-genai 3.6.1 sends it (``_interactions_continuation._continuation_body``,
    research §1.2): the reply's ``continuation_token``, and with ``store`` true
    ``previous_interaction_id`` naming the interaction that issued it and no ``input``
    (the server rebuilds the context from it); with ``store: false`` the original
    ``input`` again (the steps before the cut answer). The interaction-scoped fields are
    sent again either way.

    Raises:
        UsageError: ``store`` differs from the request whose reply is resumed (a stored
            interaction issued the token, or none did).
    """
    if payload["store"] is not chain.stored:
        raise UsageError(
            f"extra field 'store' is {payload['store']}, but the reply being resumed "
            f"(continuation_token) answered a request with store {chain.stored}: resume it "
            f"with store {chain.stored}, or add the next user message to move on"
        )
    resumed: dict[str, Any] = {}
    for key, value in payload.items():
        if key == "input" and chain.stored:
            resumed["previous_interaction_id"] = previous
            continue
        resumed[key] = list(messages[: chain.held]) if key == "input" else value
    resumed["continuation_token"] = chain.token
    payload.clear()
    payload.update(resumed)


def _chain(
    payload: dict[str, Any], messages: Sequence[Mapping[str, Any]], chain: Chain, previous: str
) -> None:
    """Send only the steps after the held ones and the answer, chained to that answer.

    Nothing changes (the whole history is sent) when the steps after the held ones are
    not exactly the answer as the server returned it (the host edited it, or added to
    it), when nothing would follow it, or when a field the last request sent is missing
    now (the server would not carry it over: the chain restarts without it).
    """
    end = chain.held + len(chain.answer)
    if any(key not in payload for key in chain.scoped) or len(messages) <= end:
        return
    if list(messages[chain.held : end]) != list(chain.answer):
        return
    chained: dict[str, Any] = {}
    for key, value in payload.items():
        if key == "input":
            chained["previous_interaction_id"] = previous
            value = list(messages[end:])
        chained[key] = value
    payload.clear()
    payload.update(chained)
