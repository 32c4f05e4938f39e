"""Anthropic Messages adapter (``client.messages.create(**payload)``).

Follows https://docs.anthropic.com/en/api/messages: ``system`` is a list of text blocks;
tool calls are ``tool_use`` blocks in assistant turns and answers are ``tool_result``
blocks in the next user turn, before any text; tools are
``{"name", "description", "input_schema"}``.

Every IR part has one renderer in `_BLOCKS`:

* text -> ``text`` block; media -> ``image`` / ``document`` block with a ``base64``,
  ``url`` or ``file`` source (https://docs.anthropic.com/en/docs/build-with-claude/vision,
  https://docs.anthropic.com/en/docs/build-with-claude/pdf-support);
* Anthropic reasoning -> the recorded ``thinking`` / ``redacted_thinking`` block,
  unchanged (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking);
  other providers' reasoning is dropped, never sent as text;
* Anthropic provider parts (``server_tool_use``, ``web_search_tool_result``...) -> the
  block as recorded; other providers' are dropped;
* tool call -> ``tool_use`` (the recorded ``input`` object while it still matches the
  arguments); tool result -> ``tool_result`` whose content is a string, or a block list
  when it carries media (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextchef._errors import UsageError
from contextchef._json import canonical_dumps, thaw
from contextchef._records import RecordDict, RecordList, entry, record, record_items
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
    copy_schema,
    dumps_segment,
    hints,
    object_arguments,
)
from contextchef.providers._compacted import from_base
from contextchef.providers._keeps import PLAIN_PARTS, keeps_part, reasoning_refused
from contextchef.providers._media import fit_media
from contextchef.providers._usage import CacheRules
from contextchef.providers.anthropic._context import anthropic_context
from contextchef.providers.anthropic._fields import FIELD_BETAS
from contextchef.providers.anthropic._files import files_betas
from contextchef.providers.anthropic._media import ANTHROPIC_MEDIA, media_block, media_source
from contextchef.providers.anthropic._models import claude_cache_rules, claude_rules
from contextchef.providers.anthropic._searches import fit_result as _fit_result
from contextchef.providers.anthropic._searches import references as _references
from contextchef.providers.anthropic._searches import server_block_id as _block_id
from contextchef.providers.anthropic._searches import tools_at_start as _tools_at_start
from contextchef.providers.anthropic._searches import unusable_searches as _unusable_searches
from contextchef.providers.anthropic._thinking import (
    THINKING_NEEDS,
    check_tool_turn_thinking,
    thinking_enabled,
)
from contextchef.providers.anthropic._tool_changes import plan_tool_changes
from contextchef.tools._tool import CompiledTool

__all__ = [
    "SEARCH_TOOLS",
    "TOOL_SEARCH_TOOL",
    "AnthropicAdapter",
    "media_part",
    "render_block",
    "result_content_parts",
    "result_text",
]

FORMAT = "anthropic"
"""The ``provider_data`` tag of parts recorded from Anthropic Messages."""
ANTHROPIC = HistoryRules(name="anthropic", alternate_roles=True, results_any_order=True)
"""Anthropic Messages: alternating roles, tool results first in the user turn, any order."""

_MEDIA_BLOCKS = ("image", "document")

TOOL_SEARCH_TOOL: dict[str, str] = {
    "type": "tool_search_tool_bm25_20251119",
    "name": "tool_search_tool_bm25",
}
"""Anthropic's server-side tool search (BM25 variant): expands ``defer_loading`` tools
on demand (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool)."""

SEARCH_TOOLS: Mapping[str, Mapping[str, str]] = {  # names: providers._server_names
    "bm25": TOOL_SEARCH_TOOL,
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
"""The server tool-search tools by variant (exact ``type`` / ``name`` pairs)."""


def _text(part: TextPart) -> dict[str, Any] | None:
    """A text block, or None for empty text, which Anthropic rejects.

    An empty text part comes from Gemini, where it may carry only a thought signature.
    """
    text = part.text
    if not text:
        return None
    if part.provider_data is None:  # the record `entry` makes (no call for a `str`)
        return (RecordDict if type(text) is str else entry)(type="text", text=text)
    return apply_hints({"type": "text", "text": text}, hints(part.provider_data, FORMAT))


def _media(part: MediaPart) -> dict[str, Any]:
    return media_block(part, FORMAT)  # what the API takes: `_media.ANTHROPIC_MEDIA`


_SEALS = {"thinking": "signature", "redacted_thinking": "data"}
"""The field that lets the API verify a recorded reasoning block, by block type."""


def _reasoning(part: ReasoningPart) -> dict[str, Any] | None:
    """The recorded block to replay (a copy), or None when the API could not verify it."""
    block = _sealed(part)
    return None if block is None else record(block)


def _sealed(part: ReasoningPart) -> Mapping[str, Any] | None:
    """The recorded block of `part` when the API can verify it, else None.

    A ``thinking`` block needs its non-empty ``signature`` and a ``redacted_thinking``
    block its ``data`` (https://platform.claude.com/docs/en/build-with-claude/extended-thinking:
    blocks are verified when sent back); one without is dropped for this target and
    reported, never sent to fail every later request.
    """
    data = part.provider_data  # `hints` inline (dict first: no ABC check for a frozen block)
    block = data.get("block") if data is not None and data.get("provider") == FORMAT else None
    if part.provider != "anthropic" or not isinstance(block, (dict, Mapping)):
        return None  # another provider's reasoning, or one that cannot be verified
    seal = _SEALS.get(str(block.get("type")))
    return block if seal and isinstance(block.get(seal), str) and block.get(seal) else None


def _provider(part: ProviderPart) -> dict[str, Any] | None:
    if part.provider != FORMAT:
        return None
    out: dict[str, Any] = thaw(part.data)
    return out


_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")


def wire_id(call_id: str) -> str:
    """`call_id` as Anthropic accepts it (``^[a-zA-Z0-9_-]+$``), the same every time.

    Ids made elsewhere (``functions.read:0`` from Kimi-style servers, ``call 1``, ``""``)
    become a readable, deterministic form with a hash of the original, so ``tool_use``
    and ``tool_result`` keep matching and two different ids never meet.
    """
    if _ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"toolu_{re.sub(r'[^A-Za-z0-9_-]', '_', call_id)[:60]}_{digest}"


def _tool_use(part: ToolCall) -> dict[str, Any]:
    if part.provider_data is None:
        given, at = object_arguments(part, read_only=True), wire_id(part.id)
        pure = type(given) is RecordDict and type(at) is str and type(part.name) is str
        return (RecordDict if pure else entry)(type="tool_use", id=at, name=part.name, input=given)
    hint = hints(part.provider_data, FORMAT)
    recorded = hint.get("input")
    if recorded is not None and canonical_dumps(recorded) == part.arguments:
        arguments: Any = thaw(recorded)
    else:
        arguments = object_arguments(part)
    built = {"type": "tool_use", "id": wire_id(part.id), "name": part.name, "input": arguments}
    return apply_hints(built, hint)


def result_content_parts(content: Sequence[Any]) -> tuple[str, tuple[MediaPart, ...]] | None:
    """(text, media) of a ``tool_result`` block list, or None if it holds other blocks.

    Text blocks are joined with blank lines; image and document blocks become media.
    """
    texts: list[str] = []
    media: list[MediaPart] = []
    for block in content:
        if not isinstance(block, Mapping):
            return None
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") in _MEDIA_BLOCKS:
            part = media_part(block)
            if part is None:
                return None
            media.append(part)
        else:
            return None
    return "\n\n".join(texts), tuple(media)


def media_part(block: Mapping[str, Any]) -> MediaPart | None:
    """The `MediaPart` of an ``image`` / ``document`` block, or None if not mappable."""
    source = block.get("source")
    if not isinstance(source, Mapping):
        return None
    fallback = "image/*" if block.get("type") == "image" else "application/pdf"
    media_type = source.get("media_type", fallback)
    if not isinstance(media_type, str) or not media_type:
        return None  # kept as a provider part, as recorded (the parser notes it)
    extra = {k: v for k, v in block.items() if k not in ("type", "source")}
    data = {"provider": FORMAT, "extra": extra} if extra else None
    kind = source.get("type")
    field = {"base64": "data", "url": "url", "file": "file_id"}.get(str(kind))
    if field is None or not isinstance(source.get(field), str):
        return None
    if kind == "base64" and media_type.startswith("image/") != (block.get("type") == "image"):
        return None
    part = MediaPart(media_type=media_type, provider_data=data, **{field: source[field]})
    return part if media_source(part) == dict(source) else None


def result_text(content: Sequence[Any]) -> str:
    """The text blocks of a ``tool_result`` block list, joined with blank lines."""
    return "\n\n".join(
        b["text"]
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _result_content(part: ToolResult, hint: Mapping[str, Any]) -> Any:
    recorded = hint.get("content")
    mapped = None if recorded is None else result_content_parts(recorded)
    if recorded is not None and (  # blocks as given (the IR joins texts), not edited since
        (mapped is None and not part.media and result_text(recorded) == part.content)
        or (mapped == (part.content, part.media) and not part.references)
    ):
        return thaw(recorded)
    if part.references and not part.media:
        # custom tool search: the provider expands each reference into the tool's
        # definition (agents-and-tools/tool-use/tool-search-tool); text is not mixed in
        return [{"type": "tool_reference", "tool_name": name} for name in part.references]
    if not part.media and not hint.get("list"):
        return part.content
    blocks = [{"type": "text", "text": part.content}] if part.content else []
    return blocks + [_media(m) for m in part.media]


def _tool_result(part: ToolResult) -> dict[str, Any]:
    if part.provider_data is None and not part.media and not part.references:
        at, content = wire_id(part.call_id), part.content
        if not part.is_error and type(at) is str and type(content) is str:  # as `entry`
            return RecordDict(type="tool_result", tool_use_id=at, content=content)
        error = {"is_error": True} if part.is_error else {}
        return entry(type="tool_result", tool_use_id=at, content=content, **error)
    hint = hints(part.provider_data, FORMAT)
    built: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": wire_id(part.call_id),
        "content": _result_content(part, hint),
    }
    if part.is_error:
        built["is_error"] = True
    return apply_hints(built, hint)


_BLOCKS: dict[str, Callable[[Any], dict[str, Any] | None]] = {
    "text": _text,
    "media": _media,
    "reasoning": _reasoning,
    "provider": _provider,
    "tool_call": _tool_use,
    "tool_result": _tool_result,
}


def render_block(part: Part) -> dict[str, Any] | None:
    """One IR part as an Anthropic content block; None when it is not for Anthropic."""
    return _BLOCKS[part.kind](part)


def _content(parts: Sequence[Part]) -> str | list[dict[str, Any]]:
    """A message's content: its text kept as a string, else its blocks as a record."""
    first = parts[0] if len(parts) == 1 else None
    if (
        isinstance(first, TextPart)
        and first.provider_data
        and hints(first.provider_data, FORMAT).get("as_string")
    ):
        return first.text
    blocks: list[dict[str, Any]] = []
    pure = True
    for part in parts:
        if (block := _BLOCKS[part.kind](part)) is not None:
            blocks.append(block)
            pure = pure and type(block) is RecordDict
    return RecordList(blocks) if pure else record_items(blocks)  # (what `record_items` tests)


_PURE_CONTENT = frozenset({str, RecordList})  # content `entry` takes as it is
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def _mark_last(messages: list[Any]) -> None:
    """Replace the last message by a copy whose last block carries ``cache_control``.

    Nothing is marked when that message's content is a plain string (its recorded form
    stays as sent) or its last block is a thinking block (which cannot carry one).
    """
    if not messages:
        return
    last = messages[-1]
    content = last.get("content")
    if not isinstance(content, list) or not content:
        return
    block = content[-1]
    if not isinstance(block, Mapping) or block.get("type") in _UNMARKABLE:
        return
    if "cache_control" in block:
        return
    marked = {**block, "cache_control": {"type": "ephemeral"}}
    # read-only like the recorded entries around it (the nested values are shared)
    messages[-1] = record({**last, "content": [*content[:-1], marked]})


class AnthropicAdapter(AdapterDefaults):
    """IR -> Anthropic Messages payload.

    A system entry (`system_message`) is a mid-conversation ``{"role": "system",
    "content": [text block]}``; a prefill is the last message,
    ``{"role": "assistant", "content": prefill}``.
    """

    profile = Profile(
        target="anthropic",
        written=frozenset({"model", "system", "messages", "tools"}),
        api_host="api.anthropic.com",
        default_model="claude-opus-5-5",
        wire=FORMAT,
        history=ANTHROPIC,
        # https://docs.anthropic.com/en/api/messages: max_tokens is required
        max_tokens_key="max_tokens",
        default_max_tokens=4096,
        # auto announcements: a mid-conversation system entry where the model takes one
        announcement_channel="system",
        # https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching: up to 4
        cache_breakpoints=4,
        native_tool_search="anthropic",
        tools_at_start=_tools_at_start,
        beta_header="anthropic-beta",
        field_betas=FIELD_BETAS,  # the beta each beta-only field needs (`_fields`)
        payload_betas=files_betas,  # a file source: the Files API beta (`_files`)
        tool_blocks_need_tools=True,  # tool blocks are refused if the request declares none
        # thinking on: a final tool turn must lead with signed thinking (`_thinking`)
        takes_made_turns=lambda extra: not thinking_enabled(extra.get("thinking")),
        max_deferred_tools=10_000,  # tool-search-tool "Limits": 10,000 defer_loading tools
    )
    """Payloads are for ``anthropic.Anthropic().messages.create``."""

    plan_tool_changes = staticmethod(plan_tool_changes)
    """Tool changes by reference or definition (`_tool_changes.plan_tool_changes`)."""

    def cache_rules(self, model: str) -> CacheRules:
        """Claude's cache prices and lifetimes (`claude_cache_rules`)."""
        return claude_cache_rules(model)

    context_fields = staticmethod(anthropic_context)
    """A `ContextPolicy` as this API's ``context_management`` (`_context.anthropic_context`)."""

    def model_rules(self, model: str) -> ModelRules:
        """Per-model rules from the Claude model table (`claude_rules`)."""
        return claude_rules(model)

    def keeps(self, part: Part) -> bool | Refused:
        """Anthropic receives its own thinking blocks (as recorded) and server blocks.

        Not empty or whitespace-only text, which the API rejects (an answer that held
        only that then drops out of the history as empty, instead of leaving two user
        turns in a row).
        """
        if isinstance(part, TextPart) or type(part) in PLAIN_PARTS:
            return not isinstance(part, TextPart) or bool(part.text.strip())
        if isinstance(part, ReasoningPart):  # most other parts of a history with thinking
            return _sealed(part) is not None or reasoning_refused(part, FORMAT, THINKING_NEEDS)
        return keeps_part(part, fmt=self.profile.wire, reasoning=bool)  # not asked: see above

    def revealed_tools(self, messages: Sequence[Message]) -> frozenset[str]:
        """Tools named by ``tool_reference`` blocks: server search results and tool results.

        A ``tool_search_tool_result`` block lists the deferred tools the provider expanded,
        and a custom search answers with ``tool_reference`` blocks in its ``tool_result``
        (`ToolResult.references`)
        (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool);
        their schemas count as loaded for ``require_search``.
        """
        names: set[str] = set()
        for msg in messages:
            for part in msg.parts:
                if isinstance(part, ProviderPart) and part.provider == self.profile.wire:
                    names |= _references(part.data) or set()
                elif isinstance(part, ToolResult) and part.references:
                    names.update(part.references)
        return frozenset(names)

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
        """Every ``tool_reference`` names a tool in `tools`; server tool calls stay paired.

        A tool result revealing an undeclared tool is sent as its text instead; a server tool-search
        result naming one is dropped with its ``server_tool_use``, and so is a tool-search
        ``server_tool_use`` left without its result (the API answers ``tool_reference_unresolved``,
        and Bedrock rejects the unpaired call). A tool `defined` inline by an earlier
        ``tool_addition`` does not count as declared for these blocks: the tool-search doc resolves
        a ``tool_reference`` in a result against the top-level ``tools`` only. Such a tool is
        offered by its definition already, so its reference is left out (the result keeps the
        references that resolve; none left: sent as text). Any server tool result answering no call
        before it in its message (web search, code execution, MCP...: a malformed reply or a cut
        history) is dropped and reported too, and so is a call left without its result unless it
        closes the history (a paused turn). First, media the API does not take become text
        notes (`fit_media`, `_media.ANTHROPIC_MEDIA`, ``media_as_text``).
        """
        messages, changes = fit_media(
            messages, ANTHROPIC_MEDIA, offset=offset, before=before, cache=cache
        )
        if not any(
            (isinstance(p, ToolResult) and p.references)
            or (isinstance(p, ProviderPart) and p.provider == FORMAT)
            for m in messages
            for p in m.parts
        ):
            return messages, changes  # nothing here names a tool by reference
        declared = {t.get("name") for t in tools if isinstance(t, Mapping)}
        inline = {t.get("name") for t in defined if isinstance(t, Mapping)} - declared
        out: list[Message] = []
        refs: list[Change] = []
        final = offset + len(messages) - 1
        for i, message in enumerate(messages, start=offset):
            parts = list(message.parts)
            last = i == final and message.role == "assistant"
            drop = _unusable_searches(parts, declared, last=last)
            kept: list[Part] = []
            for j, part in enumerate(parts):
                if j in drop:
                    refs.append(
                        Change(
                            kind="dropped_search_block",
                            index=i,
                            call_id=_block_id(part) if isinstance(part, ProviderPart) else None,
                            detail=f"message {i}: a server tool block ({drop[j]}) was left out",
                        )
                    )
                    continue
                if isinstance(part, ToolResult) and not set(part.references) <= declared:
                    part, change = _fit_result(part, declared, inline, i)
                    refs.append(change)
                kept.append(part)
            if len(kept) == len(parts) and all(a is b for a, b in zip(kept, parts, strict=True)):
                out.append(message)
            elif kept:
                out.append(Message(role=message.role, parts=tuple(kept)))
        return tuple(out), (*changes, *refs)

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """Tools as ``{"name", "description", "input_schema"}`` (+ ``defer_loading``)."""
        out = []
        for tool in tools:
            item: dict[str, Any] = {
                "name": tool.name,
                "description": tool.description,
                "input_schema": copy_schema(tool.input_schema),
            }
            if tool.defer_loading:
                item["defer_loading"] = True
            out.append(item)
        return out

    def render_messages(
        self, messages: Sequence[Message], *, before: Sequence[Message] = ()
    ) -> list[dict[str, Any]]:
        """IR messages as Anthropic ``messages`` (tool results first in a user turn).

        Each message renders on its own, so `before` (messages already sent) is not
        needed. A message left with no content (only other providers' reasoning) is
        skipped: the API rejects empty content. Entries are read-only records, as sent.
        """
        out: list[dict[str, Any]] = []
        for msg in messages:
            parts: Sequence[Part] = msg.parts
            if msg.role == "user" and len(parts) > 1:  # tool_result blocks lead the content
                parts = sorted(parts, key=lambda p: not isinstance(p, ToolResult))
            content = _content(parts)
            if content:  # a read-only record, as `entry` makes it (no call for plain values)
                pure = type(msg.role) is str and type(content) in _PURE_CONTENT
                out.append((RecordDict if pure else entry)(role=msg.role, content=content))
        return out

    def system_message(self, text: str) -> dict[str, Any] | None:
        """A mid-conversation ``{"role": "system", "content": [text block]}``.

        Placement is the caller's (after a user turn, last or before an assistant turn:
        https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages).
        """
        return {"role": "system", "content": [{"type": "text", "text": text}]}

    def tool_change_message(
        self,
        text: str,
        *,
        add: Sequence[str] = (),
        define: Sequence[Mapping[str, Any]] = (),
        remove: Sequence[str] = (),
    ) -> dict[str, Any] | None:
        """A system message: `text`, then ``tool_addition`` / ``tool_removal`` blocks.

        By reference ``{"type": "tool_addition", "tool": {"type": "tool_reference",
        "name"}}``, by definition ``{"type": "tool_definition", "definition": entry}``
        (https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages,
        "Mid-conversation tool changes"); withdrawals last. Placement as for
        `system_message`; the beta header is the caller's.
        """
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [
            {"type": "tool_addition", "tool": {"type": "tool_reference", "name": name}}
            for name in add
        ]
        content += [
            {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": dict(d)}}
            for d in define
        ]
        content += [
            {"type": "tool_removal", "tool": {"type": "tool_reference", "name": name}}
            for name in remove
        ]
        return {"role": "system", "content": content}

    def tool_entries(
        self, tools: Sequence[CompiledTool], *, search: str | None = None
    ) -> list[dict[str, Any]]:
        """The ``tools`` array: `render_tools`, then the server tool-search tool if asked.

        ``search`` is ``"bm25"`` or ``"regex"`` (`SEARCH_TOOLS`); the search tool is never
        deferred, so a request that defers tools always keeps one that is not
        (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool).

        Raises:
            UsageError: Another search variant.
        """
        rendered = self.render_tools(tools)
        if search is not None:
            tool = SEARCH_TOOLS.get(search)
            if tool is None:
                raise UsageError(f"Anthropic has no {search!r} tool search; use bm25 or regex")
            rendered.append(dict(tool))
        return rendered

    def assemble(
        self,
        *,
        system: str,
        tools: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The payload around wire `messages` (not copied: they are the session's record).

        ``messages`` start at the newest ``compaction`` block (`from_base`).
        With `RequestOptions.cache_last`, the last message is sent as a read-only copy
        (`_records.record`, like the recorded entries) whose last block is marked
        ``cache_control`` (moving a breakpoint is not an edit for the prefix check:
        https://platform.claude.com/docs/en/build-with-claude/preserved-thinking).
        """
        cap = options.max_tokens or self.profile.default_max_tokens
        payload: dict[str, Any] = {"model": options.model, self.profile.max_tokens_key: cap}
        if system:
            # the end of the system prompt is a prompt-cache breakpoint: it caches tools
            # and system together
            block = {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
            payload["system"] = [block]
        if tools:
            payload["tools"] = list(tools)
        payload["messages"] = from_base(messages, options.extra)
        if options.cache_last:
            _mark_last(payload["messages"])
        if options.prefill:
            payload["messages"].append({"role": "assistant", "content": options.prefill})
        for key, value in options.extra.items():
            payload.setdefault(key, value)
        if options.diagnose:  # build-with-claude/cache-diagnostics; the host's own wins
            payload.setdefault("diagnostics", {"previous_message_id": options.previous_response})
        check_tool_turn_thinking(
            payload, options.missing_thinking, stripped=options.thinking_stripped
        )
        return payload

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """System / tools / messages as canonical JSON."""
        return {
            "system": dumps_segment(payload.get("system")),
            "tools": dumps_segment(payload.get("tools")),
            "messages": dumps_segment(payload.get("messages")),
        }
