"""OpenAI Chat Completions adapter (``client.chat.completions.create(**payload)``).

Follows https://platform.openai.com/docs/api-reference/chat/create: the system prompt is
the first message (role ``system``); tool calls are ``tool_calls`` on an assistant
message, each answered by a ``role: "tool"`` message with its ``tool_call_id``.

How each IR part is rendered (one renderer per part kind):

* text -> message ``content`` (a string, or text content parts when recorded that way);
* media -> ``image_url`` content parts (a URL or a base64 ``data:`` URL), ``input_audio``
  parts for wav / mp3 data and ``file`` parts for other files (https://platform.openai.com/docs/guides/images-vision,
  https://platform.openai.com/docs/guides/pdf-files); Chat cannot fetch a non-image
  file by URL, so such a file is named in a text part instead; what Chat does not take
  is a text note (the model's table, `_models.chat_media`; `fit_references`);
* tool call -> a ``tool_calls`` entry, arguments replayed as the exact string;
* tool result -> a ``role: "tool"`` message. Chat has no error flag, so an error result
  is sent as its text. A tool message holds text only, so media returned by a tool go
  in one user message right after the batch's tool messages, each group introduced by
  a line naming the call it belongs to;
* reasoning -> dropped (Chat has no reasoning input; see `DeepSeekAdapter`);
* provider parts recorded from Chat (a mid-history ``system`` / ``developer`` message,
  or a message this IR cannot hold) -> that message, in place; others dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from contextchef._json import thaw
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
from contextchef.history._normalize import Change, HistoryRules, Refused
from contextchef.providers._base import (
    AdapterDefaults,
    ModelRules,
    Profile,
    RequestOptions,
    apply_hints,
    data_url,
    dumps_segment,
    hints,
)
from contextchef.providers._call_ids import fitted_id
from contextchef.providers._keeps import PLAIN_PARTS, keeps_part, reasoning_refused
from contextchef.providers._media import file_name, fit_media
from contextchef.providers._scan import first_found
from contextchef.providers._strict import openai_parameters
from contextchef.providers._usage import CacheRules
from contextchef.providers.openai_chat._media import AUDIO_FORMATS, TEXT_ONLY
from contextchef.providers.openai_chat._models import chat_media, refused_parts
from contextchef.providers.responses import _cache  # OpenAI's prompt cache: one set of rules
from contextchef.providers.responses._caching import openai_cache_rules
from contextchef.providers.responses._context import gpt_window
from contextchef.tools._tool import CompiledTool

__all__ = [
    "CONTENT_PARTS",
    "DeepSeekAdapter",
    "OpenAIChatAdapter",
    "render_tool_call",
    "render_tool_message",
]

FORMAT = "openai"
"""The ``provider_data`` tag of parts recorded from Chat Completions."""
OPENAI_CHAT = HistoryRules(name="openai", results_first=False)
"""Chat Completions: ``role: tool`` messages, then the user's other parts."""
DEEPSEEK = HistoryRules(name="deepseek", results_first=False, keep_all_reasoning=True)
"""DeepSeek: Chat's rules; every ``reasoning_content`` is sent back (a missing one is a 400)."""


def _text_part(part: TextPart) -> dict[str, Any]:
    return apply_hints({"type": "text", "text": part.text}, hints(part.provider_data, FORMAT))


def _media_part(part: MediaPart) -> dict[str, Any]:
    hint = hints(part.provider_data, FORMAT)
    audio = AUDIO_FORMATS.get(part.media_type.lower())
    if audio is not None and part.data is not None:  # `_media`: Chat's audio input part
        built = {"type": "input_audio", "input_audio": {"data": part.data, "format": audio}}
        return apply_hints(built, hint)
    if part.media_type.startswith("image/") and part.file_id is None:
        url = part.url if part.url is not None else data_url(part.media_type, part.data or "")
        image = apply_hints({"url": url}, {"extra": hint.get("image_url_extra")})
        return apply_hints({"type": "image_url", "image_url": image}, hint)
    if part.file_id is not None:
        file: dict[str, Any] = {"file_id": part.file_id}
    elif part.data is not None:
        # with a name (`file_name`): the API refuses file_data without one
        file = {"filename": file_name(part), "file_data": data_url(part.media_type, part.data)}
    else:  # Chat cannot fetch a file by URL: name it in text instead
        return {"type": "text", "text": f"[{part.media_type} file: {part.url}]"}
    file = apply_hints(file, {"extra": hint.get("file_extra")})
    return apply_hints({"type": "file", "file": file}, hint)


def _holds(kinds: frozenset[str], entry: Mapping[str, Any]) -> bool:
    """Whether a sent message's content holds a part of one of the types `kinds`."""
    content = entry.get("content")
    return isinstance(content, list) and any(
        isinstance(p, Mapping) and p.get("type") in kinds for p in content
    )


CONTENT_PARTS: dict[str, Callable[[Any], dict[str, Any]]] = {
    # One renderer per content part kind.
    "text": _text_part,
    "media": _media_part,
}


def _content(parts: Sequence[TextPart | MediaPart]) -> str | list[dict[str, Any]] | None:
    """Message content: one string, or content parts when there is media or it was a list."""
    if not parts:
        return None
    head = hints(parts[0].provider_data, FORMAT).get("message") or {}
    if head.get("content") != "list" and all(isinstance(p, TextPart) for p in parts):
        return "\n\n".join(p.text for p in parts if isinstance(p, TextPart))
    return [CONTENT_PARTS[p.kind](p) for p in parts]


def _message_hint(part: Part | None) -> Mapping[str, Any]:
    if part is None or isinstance(part, ProviderPart):
        return {}
    envelope = hints(part.provider_data, FORMAT).get("message")
    return envelope if isinstance(envelope, Mapping) else {}


CHAT_ID_LIMIT = 40
"""Most characters in a ``tool_calls[].id`` / ``tool_call_id``: the API's 400 says
"Invalid 'messages[2].tool_calls[0].id': string too long. Expected a string with maximum
length 40" (``""``: "empty string"); longer or empty ids go through `fitted_id`."""


def render_tool_call(part: ToolCall) -> dict[str, Any]:
    """A ``tool_calls`` entry."""
    built = {
        "id": fitted_id(part.id, CHAT_ID_LIMIT),
        "type": "function",
        "function": {"name": part.name, "arguments": part.arguments},
    }
    return apply_hints(built, hints(part.provider_data, FORMAT))


def render_tool_message(part: ToolResult) -> dict[str, Any]:
    """A ``role: "tool"`` message (text only)."""
    hint = hints(part.provider_data, FORMAT)
    content: Any = part.content
    if hint.get("content") == "list":
        content = [{"type": "text", "text": part.content}]
    call_id = fitted_id(part.call_id, CHAT_ID_LIMIT)
    built = {"role": "tool", "tool_call_id": call_id, "content": content}
    return apply_hints(built, hint)


def _attachments(results: Sequence[ToolResult]) -> list[dict[str, Any]]:
    """The user message carrying media returned by tools (none if there is none)."""
    content: list[dict[str, Any]] = []
    for result in results:
        if result.media:
            label = f"Attachments returned by tool call {result.call_id} ({result.name}):"
            content.append({"type": "text", "text": label})
            content += [_media_part(m) for m in result.media]
    return [{"role": "user", "content": content}] if content else []


def _provider_message(part: ProviderPart) -> list[dict[str, Any]]:
    """A message kept verbatim; an assistant one never goes with null content and no calls.

    The API requires an assistant message's ``content`` "unless ``tool_calls`` or
    ``function_call`` is specified" (Chat Completions reference, ``messages``): one that
    holds nothing else is left out (an empty reply adds nothing, on every wire), one
    with more (a ``refusal``) goes with ``content: ""``.
    """
    if part.provider != FORMAT:
        return []
    out: dict[str, Any] = thaw(part.data)
    if out.get("role") != "assistant" or out.get("content") is not None:
        return [out]
    if out.get("tool_calls") or out.get("function_call"):
        return [out]
    if not any(v for k, v in out.items() if k != "role"):
        return []
    return [{**out, "content": ""}]


def _lone_message(msg: Message) -> RecordDict | None:
    """The Chat message of a one-part `msg` with nothing recorded from Chat, as a record.

    What `OpenAIChatAdapter.render_assistant` / `render_user` make of a text part, a call
    or a result without media (no reasoning sent), read-only as
    `contextchef._records.record` makes it (`entry`); None for anything else.
    """
    (part,) = msg.parts
    data = part.provider_data if not isinstance(part, ProviderPart) else None
    if data is not None and data.get("provider") == FORMAT:
        return None  # hints to apply: the general way
    role = "assistant" if msg.role == "assistant" else "user"
    if type(part) is TextPart and type(part.text) is str:  # (`_content` joins a subclass)
        return RecordDict(role=role, content=part.text)  # what `entry` makes of it
    if type(part) is ToolCall and role == "assistant":
        at, name, arguments = fitted_id(part.id, CHAT_ID_LIMIT), part.name, part.arguments
        if type(at) is str and type(name) is str and type(arguments) is str:  # as `entry`
            call = RecordDict(
                id=at, type="function", function=RecordDict(name=name, arguments=arguments)
            )
            return RecordDict(role=role, content=None, tool_calls=RecordList([call]))
        call = entry(id=at, type="function", function=entry(name=name, arguments=arguments))
        return entry(role=role, content=None, tool_calls=record_items([call]))
    if type(part) is ToolResult and role == "user" and not part.media:
        at, content = fitted_id(part.call_id, CHAT_ID_LIMIT), part.content
        made = RecordDict if type(at) is str and type(content) is str else entry  # as `entry`
        return made(role="tool", tool_call_id=at, content=content)
    return None


class OpenAIChatAdapter(AdapterDefaults):
    """IR -> Chat Completions payload."""

    profile = Profile(
        target="openai",
        written=frozenset({"model", "messages", "tools"}),
        api_host="api.openai.com",
        default_model="gpt-5.4",
        wire=FORMAT,
        history=OPENAI_CHAT,
        # max_tokens is deprecated in Chat Completions
        max_tokens_key="max_completion_tokens",
        strict_schemas=True,
    )
    """Payloads are for ``openai.OpenAI().chat.completions.create``."""

    def model_rules(self, model: str) -> ModelRules:
        """System entries on every model; explicit prompt caching on ``gpt-5.6`` and later.

        The prompt-cache rules are those of Responses (`providers.responses._cache`): the
        SDK's Chat ``PromptCacheOptions`` says the same, with ``30m`` the only TTL. GPT
        windows as on Responses (`providers.responses._context.gpt_window`).
        """
        window, max_output = gpt_window(model)
        return ModelRules(
            model=model,
            system_messages=True,
            prompt_cache=_cache.takes_breakpoints(model),
            context_window=window,
            max_output=max_output,
        )

    def cache_marked(self, entries: list[dict[str, Any]], rules: ModelRules) -> list[Any]:
        """A breakpoint at the last input part of `entries` (`_cache.marked_entries`)."""
        return _cache.marked_entries(entries, chat=True) if rules.prompt_cache else entries

    def refused_at(
        self,
        entries: Sequence[Mapping[str, Any]],
        rules: ModelRules,
        memo: dict[Any, Any],
        new: Sequence[Message] = (),
    ) -> tuple[int, str] | None:
        """The first entry the model refuses: a breakpoint, or a part it does not take.

        A breakpoint for a model taking none (`_cache.first_marked`); a content part the
        model refuses (`_models.refused_parts`: audio sent to an audio model, then the
        model changed). Whichever comes first.
        """
        marked = None if rules.prompt_cache else _cache.refused_mark(entries, memo)
        refused = refused_parts(rules.model) if self.profile.media else frozenset()
        key = ("contextchef chat media scan", refused)
        found = first_found(entries, memo, key, partial(_holds, refused)) if refused else None
        media = None if found is None else (found, f"{' or '.join(sorted(refused))} parts")
        return min((r for r in (marked, media) if r is not None), default=None)

    def cache_rules(self, model: str) -> CacheRules:
        """OpenAI's cache prices and lifetimes (`responses._caching.openai_cache_rules`)."""
        return openai_cache_rules(model, chat=True)

    def keeps(self, part: Part) -> bool | Refused:
        """Chat Completions takes no reasoning back; provider parts only its own."""
        if type(part) in PLAIN_PARTS:
            return True
        return keeps_part(part, fmt=self.profile.wire, reasoning=self._reasoning)

    def _reasoning(self, part: ReasoningPart) -> bool | Refused:
        """Reasoning from `Profile.reasoning_from` (DeepSeek's own), else why it is left out.

        OpenAI's Chat Completions has no field for reasoning sent back; DeepSeek's takes
        its own as ``reasoning_content`` (https://api-docs.deepseek.com/guides/thinking_mode).
        """
        taken = self.profile.reasoning_from
        own = min(taken, default=None)  # one provider per target
        return part.provider in taken or reasoning_refused(part, own, "its 'reasoning_content'")

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
        """Media Chat does not take as text notes (`fit_media`, ``media_as_text``).

        What it takes is the model's (`_models.chat_media`: audio on the audio models
        only); an API whose message content is text (`Profile.media` False) takes none
        (`_media.TEXT_ONLY`). Chat names no tool by reference.
        """
        model = rules.model if rules is not None else ""
        table = chat_media(model) if self.profile.media else TEXT_ONLY
        return fit_media(messages, table, offset=offset, before=before, cache=cache)

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """Tools as ``{"type": "function", "function": {...}}``; ``strict`` only when on."""
        out = []
        for tool in tools:
            parameters, strict = openai_parameters(tool, allowed=self.profile.strict_schemas)
            function: dict[str, Any] = {
                "name": tool.name,
                "description": tool.description,
                "parameters": parameters,
            }
            if strict:
                function["strict"] = True
            out.append({"type": "function", "function": function})
        return out

    def reasoning_content(
        self, messages: Sequence[Message], before: Sequence[Message] = ()
    ) -> list[str | None]:
        """``reasoning_content`` per message (None: not sent). Chat sends none."""
        return [None] * len(messages)

    def render_assistant(self, msg: Message, reasoning: str | None) -> list[dict[str, Any]]:
        """An assistant message (plus provider-part messages), with `reasoning` if given."""
        shown: list[TextPart | MediaPart] = []
        calls: list[ToolCall] = []
        providers: list[dict[str, Any]] = []
        own, first = False, None  # deepseek's own reasoning; the first part mapped here
        for p in msg.parts:  # one pass (a cold compile renders every message once)
            if isinstance(p, ProviderPart):
                providers += _provider_message(p)
            elif isinstance(p, ReasoningPart):
                own = own or p.provider == "deepseek"
            else:
                first = p if first is None else first
                if isinstance(p, (TextPart, MediaPart)):
                    shown.append(p)
                elif isinstance(p, ToolCall):
                    calls.append(p)
        if not shown and not calls and not (own and reasoning is not None):
            return providers
        hint = _message_hint(first)
        built: dict[str, Any] = {"role": "assistant", "content": _content(shown)}
        if reasoning is not None:
            built["reasoning_content"] = reasoning
        if calls:
            built["tool_calls"] = [render_tool_call(c) for c in calls]
        elif built["content"] is None:  # required without calls (a reasoning-only turn)
            built["content"] = ""
        optional = ("content",) if built["content"] is None else ()
        return [apply_hints(built, hint, optional=optional), *providers]

    def render_user(self, msg: Message) -> list[dict[str, Any]]:
        """A user message as tool, attachment, user and provider messages, in part order."""
        if len(msg.parts) == 1:  # the common shapes, as the loop below renders them
            (part,) = msg.parts
            if isinstance(part, ToolResult):
                return [render_tool_message(part), *_attachments((part,))]
            if isinstance(part, (TextPart, MediaPart)):
                built = {"role": "user", "content": _content([part])}
                return [apply_hints(built, _message_hint(part))]
        out: list[dict[str, Any]] = []
        shown: list[TextPart | MediaPart] = []
        results: list[ToolResult] = []

        def flush() -> None:
            out.extend(_attachments(results))
            results.clear()
            if shown:
                built = {"role": "user", "content": _content(shown)}
                out.append(apply_hints(built, _message_hint(shown[0])))
                shown.clear()

        for part in msg.parts:
            if isinstance(part, ToolResult):
                if shown:
                    flush()
                out.append(render_tool_message(part))
                results.append(part)
                continue
            if not isinstance(part, (TextPart, MediaPart)):
                flush()
                if isinstance(part, ProviderPart):
                    out.extend(_provider_message(part))
                continue
            if results:
                flush()
            shown.append(part)
        flush()
        return out

    def render_messages(
        self, messages: Sequence[Message], *, before: Sequence[Message] = ()
    ) -> list[dict[str, Any]]:
        """IR messages as Chat messages; tool results become ``role: tool`` messages.

        `before` (messages already sent) matters only where reasoning spans turns
        (DeepSeek's ``reasoning_content``).
        """
        out: list[dict[str, Any]] = []
        reasoning = self.reasoning_content(messages, before)
        for msg, text in zip(messages, reasoning, strict=True):
            lone = _lone_message(msg) if text is None and len(msg.parts) == 1 else None
            if lone is not None:  # most messages: rendered straight into a record
                out.append(lone)
            elif msg.role == "assistant":
                out += self.render_assistant(msg, text)
            else:
                out += self.render_user(msg)
        return out

    def system_message(self, text: str) -> dict[str, Any] | None:
        """A ``{"role": "system"}`` message (Chat takes them anywhere in the list)."""
        return {"role": "system", "content": text}

    def assemble(
        self,
        *,
        system: str,
        tools: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The payload: the system message first, then `messages` (not copied).

        On models with `ModelRules.prompt_cache`, the system message ends with a
        breakpoint (tools and instructions cached together; the same bytes on every
        request) and ``prompt_cache_key`` / ``prompt_cache_options`` are added
        (`_cache.cache_fields`; the host's own in ``extra`` win).
        """
        caching = self.model_rules(options.model).prompt_cache
        head = _cache.marked_system(system) if caching else {"role": "system", "content": system}
        rendered: list[Any] = [head] if system else []
        rendered += messages
        if options.prefill:
            rendered.append({"role": "assistant", "content": options.prefill})
        payload: dict[str, Any] = {"model": options.model, "messages": rendered}
        if tools:
            payload["tools"] = list(tools)
        if options.max_tokens is not None:
            payload[self.profile.max_tokens_key] = options.max_tokens
        for key, value in options.extra.items():
            payload.setdefault(key, value)
        if caching:
            _cache.cache_fields(payload, options, [system, *messages[:1]], responses=False)
        return payload

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """The leading system message, tools, and the remaining messages."""
        msgs = list(payload.get("messages") or [])
        system = msgs[:1] if msgs and msgs[0].get("role") == "system" else []
        return {
            "system": dumps_segment(system or None),
            "tools": dumps_segment(payload.get("tools")),
            "messages": dumps_segment(msgs[len(system) :]),
        }


def _is_user_turn(msg: Message) -> bool:
    """A user message with something besides tool results: it starts a new span."""
    return msg.role == "user" and any(not isinstance(p, ToolResult) for p in msg.parts)


class DeepSeekAdapter(OpenAIChatAdapter):
    """IR -> DeepSeek Chat Completions payload (OpenAI-compatible, thinking mode).

    Follows https://api-docs.deepseek.com/guides/thinking_mode: in a tool-using turn the
    assistant's ``reasoning_content`` must be sent back, or the API answers 400 "Missing
    reasoning_content field". So within each span from one user turn to the next that
    contains a tool call, every assistant message carries ``reasoning_content``: its
    DeepSeek reasoning text, or ``""`` when none was captured. Spans without tool calls
    send none (the API ignores reasoning there). Reasoning from other providers is never
    sent.
    """

    profile = Profile(
        target="deepseek",
        written=frozenset({"model", "messages", "tools"}),
        api_host="api.deepseek.com",
        default_model="deepseek-chat",
        wire=FORMAT,
        history=DEEPSEEK,
        # https://api-docs.deepseek.com/api/create-chat-completion: max_tokens; message
        # content is a string (no image parts); strict tools exist only on the beta
        # endpoint (https://api-docs.deepseek.com/guides/function_calling)
        max_tokens_key="max_tokens",
        reasoning_from=frozenset({"deepseek"}),
        media=False,
    )
    """Payloads are for ``openai.OpenAI(base_url="https://api.deepseek.com")``'s
    ``chat.completions.create``."""

    def model_rules(self, model: str) -> ModelRules:
        """The Chat rules, with no prefill: a trailing assistant message is a 400.

        DeepSeek continues an assistant message only in its beta prefix mode (the
        ``beta`` base URL and ``"prefix": true`` on that message,
        https://api-docs.deepseek.com/guides/chat_prefix_completion); otherwise
        deepseek-reasoner answers "The last message of deepseek-reasoner must be a user
        message, or an assistant message with prefix mode on". Compile sends neither, so
        `prefill=` and a history ending with the model's turn are refused.
        """
        return replace(super().model_rules(model), prefill=False)

    def cache_rules(self, model: str) -> CacheRules:
        """DeepSeek's disk cache: no write price, lifetime or minimum length stated.

        https://api-docs.deepseek.com/guides/kv_cache: prefix units persisted at request
        boundaries; the read multiplier is spec 002's 0.1, assumed.
        """
        del model
        return CacheRules(
            read=0.1,
            source="DeepSeek context caching guide: no write price, lifetime or minimum "
            "stated; read 0.1x assumed (spec 002)",
        )

    def reasoning_content(
        self, messages: Sequence[Message], before: Sequence[Message] = ()
    ) -> list[str | None]:
        """``reasoning_content`` per message: set on assistants of tool-using spans.

        The span open at the end of `before` (already sent) continues into `messages`:
        an assistant message there gets ``reasoning_content`` when the span used tools.
        """
        start = len(before)
        while start > 0 and not _is_user_turn(before[start - 1]):
            start -= 1
        context = [*before[start:], *messages]
        out: list[str | None] = [None] * len(context)
        span: list[int] = []
        for i, msg in enumerate([*context, None]):
            if msg is None or _is_user_turn(msg):
                if any(context[j].tool_calls for j in span):
                    for j in span:
                        out[j] = _deepseek_reasoning(context[j])
                span = []
            elif msg.role == "assistant":
                span.append(i)
        return out[len(context) - len(messages) :]


def _deepseek_reasoning(msg: Message) -> str:
    return "\n\n".join(
        p.text for p in msg.parts if isinstance(p, ReasoningPart) and p.provider == "deepseek"
    )
