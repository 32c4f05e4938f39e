"""The adapter interface and the provider capability table (providers layer).

An adapter is a set of pure functions for one wire API: compiled tools + system text +
IR messages -> a payload dict for the official SDK call. Adapters hold no state, never
see the registry, and build dicts in a fixed key order so `canonical_dumps` of a payload
is byte-stable. What a provider can do is data in `Profile`, not branches in adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal, Protocol

from contextchef._errors import MalformedArgumentsError
from contextchef._json import JsonValue, canonical_dumps, plain_copy, thaw
from contextchef._records import record
from contextchef.history._as_is import kept_parse
from contextchef.history._context_policy import ContextPolicy
from contextchef.history._messages import (
    Message,
    Part,
    ToolCall,
)
from contextchef.history._normalize import Change, HistoryRules, Refused
from contextchef.providers._budget import ContextBudget
from contextchef.providers._hints import apply_hints, data_url, hints, split_data_url
from contextchef.providers._model_rules import ModelRules
from contextchef.providers._reading import ReadResponse, adapter_reader
from contextchef.providers._tool_changes import ToolChanges, ToolState
from contextchef.providers._usage import CacheAuditFinding, CacheRules, Chain
from contextchef.tools._tool import CompiledTool

__all__ = [
    "Adapter",
    "AdapterDefaults",
    "CacheAuditFinding",
    "Chain",
    "Channel",
    "ModelRules",
    "Profile",
    "RequestOptions",
    "apply_hints",
    "copy_schema",
    "data_url",
    "extra_left_out",
    "hints",
    "split_data_url",
]

Channel = Literal["system", "user_tail"]
"""Where ``auto`` announcements go: a mid-conversation system entry (where the model takes
one), or the user text update at the end of the user message being sent."""


@dataclass(frozen=True, kw_only=True)
class Profile:
    """What one target (provider API, and where it differs, model family) requires and offers.

    Everything the session and the adapters decide per provider is a field here; no code
    outside ``contextchef.providers`` compares target names.

    Attributes:
        target: The target's name, one of `providers.TARGETS` (``anthropic``, ``gemini``...).
        wire: The wire format the adapter writes and whose recorded parts it replays
            (``anthropic``, ``openai``, ``responses``, ``gemini``): ``provider_data``
            tagged with it round-trips byte-exact.
        history: The history shape this target accepts (role alternation, where results go,
            reasoning that must be sent back); the normalizer applies it at every compile.
        max_tokens_key: The request key of the output cap (tokens).
        default_max_tokens: Output cap (tokens) sent when the caller gives none, for APIs
            that require one (Anthropic); None: the key is omitted.
        reasoning_from: Reasoning sources (`ReasoningPart.provider`) this target receives
            besides its own recorded blocks (DeepSeek: ``reasoning_content``).
        announcement_channel: Where ``channel="auto"`` announcements render.
        cache_breakpoints: How many explicit prompt-cache breakpoints (``cache_control``) a
            request may carry; 0 where caching is automatic (no breakpoints to audit).
        native_tool_search: The provider-side deferral this target has (``"anthropic"``:
            ``defer_loading`` with a server or custom tool search and tool changes;
            ``"responses"``: ``defer_loading`` with a ``tool_search`` tool;
            ``"gemini-interactions"``: ``defer_loading`` with a ``tool_search`` entry), or
            None.
        tools_at_start: What the model sees of a compiled ``tools`` array (a list of its
            entries) at the start of a conversation, where the provider strips or shortens
            deferred entries before the prompt; None: the array as sent (``contextchef
            plan`` counts its resident tokens so).
        strict_schemas: The API has a strict (constrained-decoding) tool mode; tools that
            ask for it are sent strict where the schema allows.
        media: The API takes image and file parts in messages; where it does not, each
            is sent as a text note (``media_as_text``, `providers._media.fit_media`).
        beta_header: The HTTP header naming opt-in API features (``anthropic-beta``), or
            None where there is none (then passing betas is an error).
        field_betas: Request field path (dotted, e.g. ``thinking.block_binding``) -> the
            beta value a request using it must send.
        payload_betas: (payload, the ledger's memo) -> the betas the request's content
            needs (Anthropic: the Files API beta for a ``file`` source), or None.
        tool_blocks_need_tools: A request whose messages hold tool calls or results must
            declare tools (Anthropic); with none declared, the session sends the exchange
            as text.
        takes_made_turns: (the request's ``extra``) -> whether a model turn the session
            makes (its ``read_memories`` call) may close the request; None: always.
            Anthropic's is False with thinking on: a final tool turn must lead with
            signed thinking, so memories go in the user text instead.
        tool_changes_by_definition: Mid-conversation tool changes carry definitions only
            (Responses ``additional_tools`` items): a declared tool is revealed by its
            definition, and a withdrawal is stated in words (the gate enforces it).
        max_deferred_tools: How many tools one request may declare with
            ``defer_loading`` (Anthropic: 10,000), or None where no limit is documented.
            A native strategy that would send more does not fit (`auto` passes it by).
        default_model: A current model of the target, used where the caller names none
            (``contextchef plan``, a replay of a recording made for another target).
        api_host: The host of the target's API endpoint: a recorded request sent to a
            URL naming it was sent to this target (`providers.target_of`).
        written: Top-level request fields the adapter writes itself from the session
            (model, conversation, system prompt, tools, chaining): ``extra`` may not
            set them (`providers.WRITTEN_FIELDS`).
    """

    target: str
    wire: str
    history: HistoryRules
    max_tokens_key: str
    default_max_tokens: int | None = None
    reasoning_from: frozenset[str] = frozenset()
    announcement_channel: Channel = "user_tail"
    cache_breakpoints: int = 0
    native_tool_search: str | None = None
    tools_at_start: Callable[[Sequence[Any]], list[Any]] | None = None
    strict_schemas: bool = False
    media: bool = True
    beta_header: str | None = None
    field_betas: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    payload_betas: Callable[[Mapping[str, Any], dict[Any, Any]], Collection[str]] | None = None
    tool_changes_by_definition: bool = False
    tool_blocks_need_tools: bool = False
    takes_made_turns: Callable[[Mapping[str, Any]], bool] | None = None
    max_deferred_tools: int | None = None
    default_model: str = "model"
    api_host: str | None = None
    written: frozenset[str] = frozenset({"model", "tools"})


@dataclass(frozen=True, kw_only=True)
class RequestOptions:
    """Per-request settings.

    Attributes:
        model: Model name, passed through.
        max_tokens: Output cap in tokens, or None for the provider's default
            (`Profile.default_max_tokens` where the API requires a value).
        search: The provider's search tool to append (`Adapter.tool_entries`), or None.
        prefill: Start of the assistant's answer (``""``: none), sent as a trailing
            assistant turn (Gemini: a ``model`` turn) for the model to continue.
        cache_last: Anthropic: send the last message's last block as a copy marked as a
            prompt-cache breakpoint (the conversation so far gets cached).
        extra: Request fields passed through unchanged (``thinking``, ``diagnostics``,
            ``output_config``...): top-level keys of the body (Gemini: keys of
            ``config``); a key the adapter writes itself is never overridden.
        diagnose: Ask the provider why the prompt cache missed, against
            `previous_response`, where that is free (Anthropic ``diagnostics``,
            Responses ``prompt_cache_options.comparison_response_id``).
        previous_response: The id of the last response ingested for this target.
        turn_gap: The host's expected time between requests (seconds), for the prompt
            cache TTL where the API takes one (None: the provider's default).
        missing_thinking: Anthropic, thinking on and the last tool turn without its
            thinking: ``drop`` ``thinking`` (logged) or ``raise`` (see its adapter).
        thinking_stripped: The session itself left out that turn's thinking (an edit of
            what was sent before it, ``CompiledRequest.edits``): the request goes without
            ``thinking`` whatever `missing_thinking` says, and the log names the edit.
        chain: What the provider holds under `previous_response` for this request to
            chain to (`Chain`), when the last request was kept server-side
            (`Adapter.keeps_state`) and this one extends it and its answer; None: no
            such chain, everything is sent.
    """

    model: str
    max_tokens: int | None = None
    search: str | None = None
    prefill: str = ""
    cache_last: bool = False
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    diagnose: bool = False
    previous_response: str | None = None
    turn_gap: float | None = None
    missing_thinking: Literal["drop", "raise"] = "drop"
    thinking_stripped: bool = False
    chain: Chain | None = None


class Adapter(Protocol):
    """One wire API. Implementations are stateless; every method is a pure function."""

    profile: Profile

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """The ``tools`` array in this API's shape (new dicts, caller may mutate)."""

    def schema_changes(self, schema: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What `render_tools` changes in `schema`: ``(keyword changes, refs inlined)``."""

    def tool_entries(
        self, tools: Sequence[CompiledTool], *, search: str | None = None
    ) -> list[dict[str, Any]]:
        """The request's tool entries: `render_tools`, plus the provider's search tool.

        Args:
            tools: The tools, deferred ones marked (`CompiledTool.defer_loading`).
            search: The provider's search tool to add: ``"bm25"`` or ``"regex"``
                (Anthropic's server tool search), ``"hosted"`` (Responses
                ``tool_search``), or None (deferred tools are revealed by reference).
        """

    def render_messages(
        self, messages: Sequence[Message], *, before: Sequence[Message] = ()
    ) -> list[dict[str, Any]]:
        """IR messages as this API's conversation entries (new dicts).

        Args:
            messages: The messages to render.
            before: The messages already sent before them (context: a result answers a
                call made there); they are not rendered again.
        """

    def system_message(self, text: str) -> dict[str, Any] | None:
        """A mid-conversation system entry holding `text`; None where the API has none."""

    def tool_change_message(
        self,
        text: str,
        *,
        add: Sequence[str] = (),
        define: Sequence[Mapping[str, Any]] = (),
        remove: Sequence[str] = (),
    ) -> dict[str, Any] | list[dict[str, Any]] | None:
        """The entries stating `text` (may be empty) and tool changes; None: none exist.

        One system entry (Anthropic), or a list of entries (Responses: a developer
        message with the text, then an ``additional_tools`` item).

        Args:
            text: Announcement text to carry first (``""``: none).
            add: Declared tools to add by reference.
            define: Tool entries to add by definition.
            remove: Tools to withdraw by reference.
        """

    def plan_tool_changes(
        self,
        *,
        sent: list[Any],
        now: Sequence[Any],
        state: ToolState,
        loaded: frozenset[str],
        rules: ModelRules,
        stable: frozenset[str] = frozenset(),
        provider_search: bool = True,
    ) -> tuple[list[Any], ToolChanges, ToolState] | None:
        """The tool changes from the tool units `sent` (kept) to those `now` offers.

        ``(tools, changes, state)``: the tool entries to send (`sent`, plus deferred
        declarations where the wire appends them), the changes, and the tool state
        once they are sent; None where only an edit of ``tools`` can say the change (a
        tool sent changed its definition and the model takes none; or this API has no
        tool changes). `state` holds this request's reveals; `loaded` the tools loaded
        by the host, a skill or our ``tool_search``; `stable` tools whose definition
        is kept as first sent; `provider_search`: the provider's own search runs.
        """

    def cache_rules(self, model: str) -> CacheRules:
        """How `model`'s prompt cache bills and expires (prices per TTL, minimum length)."""

    def model_rules(self, model: str) -> ModelRules:
        """The rules of `model` on this target (see `ModelRules`)."""

    def context_fields(
        self, policy: ContextPolicy, budget: ContextBudget, rules: ModelRules
    ) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]:
        """`policy` as this API's request fields: ``(fields, betas, left to local)``.

        The local path's parts are ``clear`` and ``compact`` (`NativeContext.local`).
        """

    def cache_marked(self, entries: list[dict[str, Any]], rules: ModelRules) -> list[Any]:
        """One request's new wire `entries`, with the prompt-cache breakpoints they carry.

        Called once, before the entries are recorded: what it marks is sent again
        unchanged on every later request. Only where `ModelRules.prompt_cache`.
        """

    def refused_at(
        self,
        entries: Sequence[Mapping[str, Any]],
        rules: ModelRules,
        memo: dict[Any, Any],
        new: Sequence[Message] = (),
    ) -> tuple[int, str] | None:
        """The first of `entries` (a ledger's wire) the model of `rules` refuses, and what.

        What: a few words the edit's cause names ("prompt-cache breakpoints": OpenAI's,
        sent to a model taking none, `ModelRules.prompt_cache`; Gemini: a step of the
        current turn sent unsigned to a model that validates signatures). None when
        nothing sent is refused, as the request stands with the `new` (unsent) messages
        after `entries`. The session replays from before that entry, which renders it
        again as the model takes it (`cache_marked`, `fit_references`). `memo` (the
        ledger's cache) keeps how far `entries` was read: recorded entries are only
        appended or cut back, so each is read once.
        """

    def tool_units(self, entries: Sequence[Any]) -> list[Any]:
        """`entries` as one entry per tool, each with a ``name``.

        Tool changes are planned per tool: `entries` itself where each entry is one tool;
        Responses opens ``namespace`` entries into their functions, each marked with its
        namespace.
        """

    def injected_call(self, call: ToolCall) -> ToolCall:
        """A call the library adds to the conversation, as this API must receive it."""

    def assemble(
        self,
        *,
        system: str,
        tools: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The payload around already rendered `tools` and conversation `messages`.

        The message dicts are not copied (they are the session's record of what was
        sent); the list holding them is new.
        """

    def render_request(
        self,
        *,
        system: str,
        tools: Sequence[CompiledTool],
        messages: Sequence[Message],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The full payload, to be passed as ``**payload`` to the SDK's create call.

        E.g. ``client.messages.create`` (Anthropic), ``client.chat.completions.create``,
        ``client.responses.create`` or ``client.models.generate_content`` (google-genai).
        """

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """Canonical JSON text of the payload's ``system``, ``tools`` and ``messages``."""

    def keeps(self, part: Part) -> bool | Refused:
        """Falsy for a reasoning or provider-only part this API cannot receive (`Refused`: why)."""

    def read_response(self, response: object, *, id_offset: int = 0) -> ReadResponse:
        """A response of this API (SDK object or its JSON dict), read.

        The model's turn in the IR, its id and notices (`WireReader.read_response` of
        `Profile.wire`).

        Raises:
            CorruptHistoryError: A failed or error response, or one this wire cannot read.
        """

    def revealed_tools(self, messages: Sequence[Message]) -> frozenset[str]:
        """Names of tools the provider's own tool search revealed in `messages`."""

    def keeps_state(self, payload: Mapping[str, Any]) -> frozenset[str] | None:
        """What the provider does not carry over when it keeps this request to chain to.

        None: it keeps nothing. Otherwise the fields of `payload` a chained request must
        send again (`Chain.scoped`); the next compile passes `RequestOptions.chain`, so the
        adapter may send only what is new (Interactions ``store`` with
        ``previous_interaction_id``).
        """

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
        """`messages` with every reference to a tool `tools` does not declare rewritten.

        A request may only refer to tools it declares (a ``tool_reference``, a call
        replayed with a ``namespace``); after a mode, strategy or provider switch the
        history can hold references the new ``tools`` lack. Each rewrite is a `Change`
        (history indices counted from `offset`). `before` are the messages already sent
        ahead of them (read only when a reference is not declared by `tools`).
        `defined` are the tools earlier tool changes defined inline (not in ``tools``):
        each adapter decides which of its references they resolve. `rules` are the
        request's model's (None: not known, the safe defaults assumed); an adapter may fit
        the messages to its model too (Gemini: thought signatures, `ModelRules.signed_calls`).
        `cache` is the ledger's (`Ledger.cache`), to keep what it read of `before` in.
        """


@dataclass(frozen=True, kw_only=True)
class SchemaReport:
    """What one target's schema dialect changes in one tool's ``input_schema``.

    Computed when the tool is registered (`ContextChef.schema_reports`), with the same
    translation the target's renderer applies, so it says exactly what the model will
    not be told. The gate still validates every call against the full schema.

    Attributes:
        tool: The tool's own name.
        server: Its server/group, or None.
        target: The target whose dialect changes it (``"gemini"``).
        changes: One line per keyword rewritten (``oneOf`` -> ``anyOf``...) or dropped,
            each led by its JSON-pointer path.
        refs_resolved: Local ``$ref`` targets inlined (``#/$defs/Name``), in order; a
            recursive one cut short ends in ``"(recursive: cut)"``.
    """

    tool: str
    server: str | None
    target: str
    changes: tuple[str, ...]
    refs_resolved: tuple[str, ...] = ()


class AdapterDefaults:
    """Adapter defaults: automatic prompt caching, no provider-side search."""

    def schema_changes(self, schema: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(changes, refs_resolved)`` this target's schema dialect makes: none by default."""
        return (), ()

    def cache_rules(self, model: str) -> CacheRules:
        """No published cache rules: reads 0.1x and writes 1x assumed, no lifetime."""
        return CacheRules(source="no cache prices known for this target: read 0.1x assumed")

    def model_rules(self, model: str) -> ModelRules:
        """Every model alike: system entries allowed, prefill left to the provider."""
        return ModelRules(model=model, system_messages=True)

    def context_fields(
        self, policy: ContextPolicy, budget: ContextBudget, rules: ModelRules
    ) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]:
        """No server-side context management: everything on the local path."""
        return {}, (), ("clear", "compact")

    def tool_units(self, entries: Sequence[Any]) -> list[Any]:
        """`entries` itself: each entry declares one tool."""
        return entries if isinstance(entries, list) else list(entries)

    def injected_call(self, call: ToolCall) -> ToolCall:
        """`call` unchanged."""
        return call

    def cache_marked(self, entries: list[dict[str, Any]], rules: ModelRules) -> list[Any]:
        """`entries` unchanged: no explicit breakpoints in recorded entries."""
        return entries

    def refused_at(
        self,
        entries: Sequence[Mapping[str, Any]],
        rules: ModelRules,
        memo: dict[Any, Any],
        new: Sequence[Message] = (),
    ) -> tuple[int, str] | None:
        """None: no recorded entry is refused by another model."""
        return None

    def keeps_state(self, payload: Mapping[str, Any]) -> frozenset[str] | None:
        """None: every request is sent whole."""
        return None

    def read_response(self, response: object, *, id_offset: int = 0) -> ReadResponse:
        """Read through the `WireReader` of this adapter's `Profile.wire`."""
        profile: Profile = getattr(self, "profile")  # noqa: B009 - set by each adapter
        reader = adapter_reader(type(self), profile.wire)  # its name in `ReadResponse.wire`
        return replace(reader.read_response(response, id_offset=id_offset), wire=reader.wire)

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
        """`messages` unchanged: this API's messages refer to no declared tool by name."""
        return tuple(messages), ()

    def tool_change_message(
        self,
        text: str,
        *,
        add: Sequence[str] = (),
        define: Sequence[Mapping[str, Any]] = (),
        remove: Sequence[str] = (),
    ) -> dict[str, Any] | list[dict[str, Any]] | None:
        """None: this API has no mid-conversation tool changes."""
        return None

    def plan_tool_changes(
        self,
        *,
        sent: list[Any],
        now: Sequence[Any],
        state: ToolState,
        loaded: frozenset[str],
        rules: ModelRules,
        stable: frozenset[str] = frozenset(),
        provider_search: bool = True,
    ) -> tuple[list[Any], ToolChanges, ToolState] | None:
        """None: this API has no tool changes (a change of ``tools`` is an edit)."""
        return None

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """The ``tools`` array (each adapter defines it)."""
        raise NotImplementedError

    def tool_entries(
        self, tools: Sequence[CompiledTool], *, search: str | None = None
    ) -> list[dict[str, Any]]:
        """`render_tools` (this API has no provider-side search tool)."""
        return self.render_tools(tools)

    def render_messages(
        self, messages: Sequence[Message], *, before: Sequence[Message] = ()
    ) -> list[dict[str, Any]]:
        """The conversation entries (each adapter defines it)."""
        raise NotImplementedError

    def assemble(
        self,
        *,
        system: str,
        tools: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The payload around rendered entries (each adapter defines it)."""
        raise NotImplementedError

    def render_request(
        self,
        *,
        system: str,
        tools: Sequence[CompiledTool],
        messages: Sequence[Message],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The SDK call's keyword arguments for a whole IR history (nothing recorded)."""
        return self.assemble(
            system=system,
            tools=self.tool_entries(tools, search=options.search),
            messages=self.render_messages(messages),
            options=options,
        )

    def revealed_tools(self, messages: Sequence[Message]) -> frozenset[str]:
        """None: this API has no provider-side tool search."""
        return frozenset()


def copy_schema(schema: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A deep copy, so callers can mutate payloads without touching tool definitions."""
    out = thaw(schema)
    assert isinstance(out, dict)
    return out


def object_arguments(call: ToolCall, *, read_only: bool = False) -> dict[str, Any]:
    """A call's arguments as the JSON object Anthropic ``input`` / Gemini ``args`` need.

    Arguments that are not a JSON object (the model produced broken JSON; the gate has
    already answered that call with an error result) are sent as ``{}`` so one bad call
    never makes every later request fail; the raw text stays in the history. A parse
    the call keeps (the normalizer's, or the copy of a dict it was built from) is copied
    instead of parsing the text again. `read_only`: the object as a record
    (`contextchef._records.record`: one copy of a kept parse, not a copy then a record).
    """
    kept = kept_parse(call)
    if kept is not None:
        return record(kept) if read_only else plain_copy(kept)  # type: ignore[no-any-return]
    try:
        parsed = call.parsed_arguments()
    except MalformedArgumentsError:
        parsed = {}
    return record(parsed) if read_only else parsed


def dumps_segment(value: Any) -> str:
    """Canonical text of one payload segment (``""`` for an absent one)."""
    return "" if value is None else canonical_dumps(value)


def extra_left_out(extra: Mapping[str, Any], payload: Mapping[str, Any]) -> tuple[str, ...]:
    """Names of `extra` fields an adapter left out of `payload`, in `extra`'s order.

    Adapters copy `extra` to the body's top level (Gemini: into ``config``) and leave a
    field out only where the provider would refuse it as the history stands (Anthropic's
    ``thinking`` without the last tool turn's thinking: see its ``_thinking`` module).
    On Responses, ``compaction`` asks for a ``/responses/compact`` body; ``betas`` and
    ``extra_headers`` go in the headers on a wire with a beta header (`providers._headers`).
    None is reported.
    """
    config = payload.get("config")
    inner = config if isinstance(config, Mapping) else {}
    asked = ("compaction" if "input" in payload else "", "betas", "extra_headers")
    return tuple(k for k in extra if k not in payload and k not in inner and k not in asked)
