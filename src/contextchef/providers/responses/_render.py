"""OpenAI Responses adapter (``client.responses.create(**payload)``).

Follows https://platform.openai.com/docs/api-reference/responses/create: the system prompt
is ``instructions``; history is ``input``, a list of message items, ``function_call``
items and ``function_call_output`` items joined by ``call_id``; function tools are flat
``{"type": "function", "name", "description", "parameters", "strict"}`` and ``strict`` must
be given (the API defaults it to true).

How each IR part is rendered (https://platform.openai.com/docs/guides/conversation-state,
https://platform.openai.com/docs/guides/reasoning#keeping-reasoning-items-in-context):

* consecutive text and media parts -> one message item; assistant text is an "easy input
  message" with string content unless it was recorded as an output message; a message
  item with only whitespace text is not sent (it would separate a reasoning item from
  the call it produced);
* media -> ``input_image`` / ``input_file`` content parts (URL, file id or base64);
* Responses reasoning (``ReasoningPart(provider="openai")``) -> the recorded reasoning
  item, unchanged and in place, so it stays directly before the item it produced (one
  with no recorded item cannot be replayed and is dropped); other providers' reasoning
  is dropped;
* tool call -> ``function_call`` (arguments replayed as the exact string); a recorded
  item ``id`` that belongs to a reasoning item which is no longer sent is left out, since
  the API rejects such an item without its reasoning;
* tool result -> ``function_call_output``; Responses has no error flag, so an error
  result is sent as its text; media returned by the tool go in the output's content
  list (``input_text`` + ``input_image`` / ``input_file``), which the API accepts;
* provider parts recorded from Responses (``tool_search_call``, ``additional_tools``,
  developer messages...) -> that item, in place; others dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextchef._errors import UsageError
from contextchef._json import thaw
from contextchef._records import RecordDict, entry
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
from contextchef.providers._compacted import COMPACTION, native_base
from contextchef.providers._keeps import PLAIN_PARTS, keeps_part, reasoning_refused
from contextchef.providers._media import file_name, fit_media
from contextchef.providers._strict import openai_parameters
from contextchef.providers._usage import CacheRules
from contextchef.providers.responses import _cache, _search
from contextchef.providers.responses._caching import openai_cache_rules
from contextchef.providers.responses._context import (
    compact_body,
    gpt_window,
    responses_context,
)
from contextchef.providers.responses._item_ids import unique_items
from contextchef.providers.responses._items import REASONING_NEEDS, item_problem
from contextchef.providers.responses._media import RESPONSES_MEDIA
from contextchef.providers.responses._namespaces import (
    fit_namespaces,
    loaded_names,
    loading_items,
)
from contextchef.providers.responses._search import RESPONSES_ID_LIMIT
from contextchef.providers.responses._tool_changes import plan_tool_changes
from contextchef.tools._tool import CompiledTool

__all__ = ["ResponsesAdapter", "loaded_names", "render_content_part", "render_message_item"]

FORMAT = "responses"
"""The ``provider_data`` tag of parts recorded from the Responses API."""
RESPONSES = HistoryRules(name="responses", results_first=False, reasoning_needs_output=True)
"""OpenAI Responses: results as their own items, roles may repeat."""


def _text_part(part: TextPart, role: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return apply_hints({"type": kind, "text": part.text}, hints(part.provider_data, FORMAT))


def _media_part(part: MediaPart, role: str) -> dict[str, Any]:
    image = part.media_type.startswith("image/")
    built: dict[str, Any] = {"type": "input_image" if image else "input_file"}
    if part.file_id is not None:
        built["file_id"] = part.file_id
    elif part.url is not None:
        built["image_url" if image else "file_url"] = part.url
    else:  # an inline file goes with a name (`file_name`: the API refuses one without)
        built.update({} if image else {"filename": file_name(part)})
        built["image_url" if image else "file_data"] = data_url(part.media_type, part.data or "")
    if image:  # the SDK's input_image type requires a detail level
        built.setdefault("detail", "auto")
    optional = ("detail",) if built.get("detail") == "auto" else ()
    return apply_hints(built, hints(part.provider_data, FORMAT), optional=optional)


_CONTENT: dict[str, Callable[[Any, str], dict[str, Any]]] = {
    "text": _text_part,
    "media": _media_part,
}


def render_content_part(part: TextPart | MediaPart, role: str) -> dict[str, Any]:
    """One text or media part as a message content part for `role`."""
    return _CONTENT[part.kind](part, role)


def render_message_item(role: str, parts: Sequence[TextPart | MediaPart]) -> dict[str, Any]:
    """One message item holding `parts`."""
    item_hint: Mapping[str, Any] = hints(parts[0].provider_data, FORMAT).get("item") or {}
    content: Any
    if item_hint.get("content") != "list" and all(isinstance(p, TextPart) for p in parts):
        # An "easy input message" with string content: the form the SDK's input types
        # accept for replayed assistant text (an output_text part needs the item's id).
        content = "\n\n".join(p.text for p in parts if isinstance(p, TextPart))
    else:
        content = [render_content_part(p, role) for p in parts]
    built = {"type": "message", "role": role, "content": content}
    return apply_hints(built, item_hint, optional=("type",))


def _without_orphan_id(item: dict[str, Any], hint: Mapping[str, Any], sent: set[str]) -> None:
    """Drop an item ``id`` tied to a reasoning item that is not being sent."""
    link = hint.get("reasoning_id")
    if link is not None and link not in sent:
        item.pop("id", None)


class _InputBuilder:
    """Input items of one IR message, in part order."""

    def __init__(self, role: str, sent_reasoning: set[str]) -> None:
        self.role = role
        self.items: list[dict[str, Any]] = []
        self.pending: list[TextPart | MediaPart] = []
        self.sent = sent_reasoning

    def flush(self) -> None:
        if not self.pending:
            return
        if all(isinstance(p, TextPart) and not p.text.strip() for p in self.pending):
            self.pending = []  # an empty message item would split reasoning from its call
        if self.pending:
            first = self.pending[0]
            item = render_message_item(self.role, self.pending)
            _without_orphan_id(
                item, hints(first.provider_data, FORMAT).get("item") or {}, self.sent
            )
            self.items.append(item)
            self.pending = []

    def shown(self, part: TextPart | MediaPart) -> None:
        if self.pending and hints(part.provider_data, FORMAT).get("item") is not None:
            self.flush()  # the part starts another recorded message item
        self.pending.append(part)

    def reasoning(self, part: ReasoningPart) -> None:
        item = hints(part.provider_data, FORMAT).get("item")
        if part.provider == "openai" and item is not None:
            self.flush()
            self.items.append(thaw(item))
            if isinstance(item.get("id"), str):
                self.sent.add(item["id"])

    def tool_call(self, part: ToolCall) -> None:
        self.flush()
        hint = hints(part.provider_data, FORMAT)
        if hint.get("kind") == _search.CALL:
            self.items.append(_search.render_search_call(part, hint))
            return
        built = {
            "type": "function_call",
            "call_id": fitted_id(part.id, RESPONSES_ID_LIMIT),
            "name": part.name,
            "arguments": part.arguments,
        }
        item = apply_hints(built, hint)
        _without_orphan_id(item, hint, self.sent)
        self.items.append(item)

    def tool_result(self, part: ToolResult) -> None:
        self.flush()
        hint = hints(part.provider_data, FORMAT)
        if hint.get("kind") == _search.OUTPUT:
            self.items += _search.render_search_output(part, hint)
            return
        output: Any = part.content
        if part.media or hint.get("output") == "list":
            text = [{"type": "input_text", "text": part.content}] if part.content else []
            output = text + [render_content_part(m, "user") for m in part.media]
        call_id = fitted_id(part.call_id, RESPONSES_ID_LIMIT)
        built = {"type": "function_call_output", "call_id": call_id, "output": output}
        self.items.append(apply_hints(built, hint))

    def provider(self, part: ProviderPart) -> None:
        if part.provider == FORMAT:
            self.flush()
            self.items.append(thaw(part.data))

    def add(self, part: Part) -> None:
        if isinstance(part, (TextPart, MediaPart)):
            self.shown(part)
        else:
            _STEPS[part.kind](self, part)


_BLANK = RecordDict()
"""`_lone_item`'s answer for a message of blank text: no item (`_InputBuilder.flush`)."""


def _lone_item(role: str, part: Part) -> RecordDict | None:
    """The item of a one-part message with nothing recorded from Responses, as a record.

    What `_InputBuilder` makes of it (`_BLANK` for blank text: no item), read-only as
    `contextchef._records.record` makes it (`entry`); None for any other part (a
    subclass, a text subclass, media, hints of this format): the builder renders it.
    """
    if type(part) is TextPart:
        if _hinted(part.provider_data) or type(part.text) is not str:
            return None  # (the builder joins text: a str subclass becomes a str)
        made = RecordDict if type(role) is str else entry  # what `entry` makes of it
        return made(type="message", role=role, content=part.text) if part.text.strip() else _BLANK
    if type(part) is ToolCall and not _hinted(part.provider_data):
        at, name, arguments = fitted_id(part.id, RESPONSES_ID_LIMIT), part.name, part.arguments
        made = RecordDict if type(at) is type(name) is type(arguments) is str else entry
        return made(type="function_call", call_id=at, name=name, arguments=arguments)
    if type(part) is ToolResult and not (part.media or _hinted(part.provider_data)):
        at, output = fitted_id(part.call_id, RESPONSES_ID_LIMIT), part.content
        made = RecordDict if type(at) is str and type(output) is str else entry
        return made(type="function_call_output", call_id=at, output=output)
    return None


def _hinted(data: Mapping[str, Any] | None) -> bool:
    """Whether `data` was recorded from Responses (`hints` would give it back)."""
    return data is not None and data.get("provider") == FORMAT


_STEPS: dict[str, Callable[[_InputBuilder, Any], None]] = {
    "reasoning": _InputBuilder.reasoning,
    "tool_call": _InputBuilder.tool_call,
    "tool_result": _InputBuilder.tool_result,
    "provider": _InputBuilder.provider,
}


def _has_tool_search(model: str) -> bool:
    """``gpt-5.4`` and later (https://developers.openai.com/api/docs/guides/tools-tool-search)."""
    return (_cache.gpt_version(model) or (0, 0)) >= (5, 4)


NAMESPACE_SIZE = 10
"""Most functions per ``namespace`` entry (OpenAI's advice for tool search)."""

_NAMESPACE_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _namespace_name(group: str, chunk: int, taken: set[str]) -> str:
    """A legal namespace name for `group` (``github``, ``github_2``...), unlike any tool's."""
    base = _NAMESPACE_CHARS.sub("_", group)[:56] or "group"
    name = base if chunk == 0 else f"{base}_{chunk + 1}"
    while name in taken:  # a namespace may not be named like a function
        name = f"{name}_ns"
    taken.add(name)
    return name


def _recorded_reasoning(part: ReasoningPart) -> bool | Refused:
    item = hints(part.provider_data, FORMAT).get("item") if part.provider == "openai" else None
    return item is not None or reasoning_refused(part, "openai", REASONING_NEEDS)


class ResponsesAdapter(AdapterDefaults):
    """IR -> Responses payload."""

    profile = Profile(
        target="responses",
        written=frozenset({"model", "instructions", "input", "tools"}),
        api_host="api.openai.com",
        default_model="gpt-5.4",
        wire=FORMAT,
        history=RESPONSES,
        max_tokens_key="max_output_tokens",
        strict_schemas=True,
        native_tool_search="responses",
        tools_at_start=_search.tools_at_start,
        tool_changes_by_definition=True,
    )
    """Payloads are for ``openai.OpenAI().responses.create``."""

    plan_tool_changes = staticmethod(plan_tool_changes)
    """Tool changes, every addition a definition (`_tool_changes.plan_tool_changes`)."""

    def cache_rules(self, model: str) -> CacheRules:
        """OpenAI's cache prices and lifetimes (`_caching.openai_cache_rules`)."""
        return openai_cache_rules(model)

    context_fields = staticmethod(responses_context)
    """A `ContextPolicy` as this API's ``context_management`` (`_context.responses_context`)."""

    def model_rules(self, model: str) -> ModelRules:
        """Developer messages on every model; ``tool_search`` only on ``gpt-5.4`` and later.

        https://developers.openai.com/api/docs/guides/tools-tool-search: only those models
        take ``tool_search``, and ``defer_loading`` needs it. GPT models take server-side
        compaction (``context_management``); windows: `_context.gpt_window`.
        """
        known = _cache.gpt_version(model) is not None
        window, max_output = gpt_window(model)
        return ModelRules(
            model=model,
            known=known,
            system_messages=True,
            tool_search=_has_tool_search(model),
            tool_changes=known,
            inline_tools=known,
            prompt_cache=_cache.takes_breakpoints(model),
            context_window=window,
            max_output=max_output,
            native_context=frozenset({"compact", "compact_on_demand"} if known else ()),
        )

    def cache_marked(self, entries: list[dict[str, Any]], rules: ModelRules) -> list[Any]:
        """A breakpoint at the last input part of `entries` (`_cache.marked_entries`)."""
        return _cache.marked_entries(entries, chat=False) if rules.prompt_cache else entries

    def refused_at(
        self,
        entries: Sequence[Mapping[str, Any]],
        rules: ModelRules,
        memo: dict[Any, Any],
        new: Sequence[Message] = (),
    ) -> tuple[int, str] | None:
        """The first entry with a breakpoint, for a model taking none (`_cache.first_marked`)."""
        return None if rules.prompt_cache else _cache.refused_mark(entries, memo)

    def tool_units(self, entries: Sequence[Any]) -> list[Any]:
        """One entry per function; a namespace member carries ``namespace``."""
        return _search.units(entries)

    def tool_change_message(
        self,
        text: str,
        *,
        add: Sequence[str] = (),
        define: Sequence[Mapping[str, Any]] = (),
        remove: Sequence[str] = (),
    ) -> list[dict[str, Any]] | None:
        """A developer message (`text`, withdrawals in words), then ``additional_tools``.

        Responses states new tools only by definition, in an ``additional_tools`` input
        item with role ``developer`` (the SDK's ``response_input_item_param``; first-party
        Responses only, compatible endpoints may reject it, so only for known OpenAI model
        names).
        It has no withdrawal: a withdrawn tool is named in the developer message, and the
        gate refuses it. `add` (by reference) is not possible here and is ignored: the
        session plans definitions (`Profile.tool_changes_by_definition`).
        """
        items: list[dict[str, Any]] = []
        words = text
        if remove:
            gone = ", ".join(remove)
            note = f"These tools are no longer available; do not call them: {gone}."
            words = f"{text}\n\n{note}" if text else note
        if words:
            items.append({"type": "message", "role": "developer", "content": words})
        defined = _search.additional_tools(define)
        if defined is not None:
            items.append(defined)
        return items

    def keeps(self, part: Part) -> bool | Refused:
        """Its own reasoning items (as recorded) and provider items, of a shape it takes.

        A tool search or ``additional_tools`` item of the wrong shape (`_items.item_problem`)
        is not: the API would refuse it on every later request. The verdict names the field
        and what is valid (`Refused`), for the ``dropped_foreign_part`` change.
        """
        if type(part) in PLAIN_PARTS:
            return True
        problem = item_problem(part.data) if isinstance(part, ProviderPart) else None
        if problem is not None:
            return Refused(problem)
        return keeps_part(part, fmt=self.profile.wire, reasoning=_recorded_reasoning)

    def render_tools(self, tools: Sequence[CompiledTool]) -> list[dict[str, Any]]:
        """Flat function tools with an explicit ``strict`` flag (+ ``defer_loading``)."""
        return [self._function(tool) for tool in tools]

    def _function(self, tool: CompiledTool) -> dict[str, Any]:
        parameters, strict = openai_parameters(tool, allowed=self.profile.strict_schemas)
        item: dict[str, Any] = {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
            "strict": strict,
        }
        if tool.defer_loading:
            item["defer_loading"] = True
        return item

    def tool_entries(
        self, tools: Sequence[CompiledTool], *, search: str | None = None
    ) -> list[dict[str, Any]]:
        """The ``tools`` array; with a `search`, deferred tools and a ``tool_search`` tool.

        Follows https://developers.openai.com/api/docs/guides/tools-tool-search: deferred
        functions carry ``defer_loading: true`` (never the ``namespace`` object); those of
        one group (`CompiledTool.group`, an MCP server) are declared together in
        ``namespace`` entries of at most `NAMESPACE_SIZE` functions, placed where the
        group's first tool is; the search tool comes last: ``{"type": "tool_search"}``
        (``search="hosted"``), or our ``tool_search`` tool turned into the
        client-executed search (``search="client"``: its description and parameters,
        and no function of that name; `contextchef.providers.responses._search`).

        Raises:
            UsageError: A search other than ``"hosted"`` or ``"client"``, or ``"client"``
                without our ``tool_search`` among `tools`.
        """
        if search is None:
            return self.render_tools(tools)
        if search not in ("hosted", "client"):
            raise UsageError(f"Responses has no {search!r} tool search; use 'hosted' or 'client'")
        finder: dict[str, Any] = {"type": "tool_search"}
        if search == "client":
            ours = [t for t in tools if t.name == _search.SEARCH_NAME and not t.defer_loading]
            if not ours and not any(t.defer_loading for t in tools):
                return self.render_tools(tools)  # nothing deferred (a mode hides it all)
            if not ours:
                raise UsageError(
                    f"a client-executed tool_search needs our {_search.SEARCH_NAME!r} tool "
                    "among the tools (its description and parameters)"
                )
            finder = _search.search_entry(ours[0])
            tools = [t for t in tools if t is not ours[0]]
        taken = {t.name for t in tools}
        out: list[dict[str, Any]] = []
        spaces: dict[str, dict[str, Any]] = {}
        counts: dict[str, int] = {}
        for tool in tools:
            if not (tool.defer_loading and tool.group):
                out.append(self._function(tool))
                continue
            chunk = counts.get(tool.group, 0) // NAMESPACE_SIZE
            counts[tool.group] = counts.get(tool.group, 0) + 1
            key = f"{tool.group}\x00{chunk}"
            space = spaces.get(key)
            if space is None:
                space = spaces[key] = {
                    "type": "namespace",
                    "name": _namespace_name(tool.group, chunk, taken),
                    "description": "",
                    "tools": [],
                }
                out.append(space)
            space["tools"].append(self._function(tool))
        for space in spaces.values():
            names = ", ".join(t["name"] for t in space["tools"])
            space["description"] = f"Tools of the {space['name']} group: {names}"[:1024]
        out.append(finder)
        return out

    def revealed_tools(self, messages: Sequence[Message]) -> frozenset[str]:
        """Functions loaded by ``tool_search_output`` (and ``additional_tools``) items.

        Hosted or client search returns the tools it loads as definitions (functions,
        or namespaces holding them): https://developers.openai.com/api/docs/guides/tools-tool-search.
        """
        names: set[str] = set()
        for tools in loading_items(messages):
            names.update(loaded_names(tools))
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
        """Every replayed call carries a ``namespace`` that holds its function, or none.

        A call to a deferred function goes back with its namespace (the tool search
        guide; without it the API answers "Missing namespace for function_call"): the one it
        was made in while a search output sent before still loads it there, else the
        ``namespace`` entry of `tools` holding it (its own name for a flat deferred
        function), also for a call made elsewhere (another target or strategy), else the
        namespace an earlier search output or ``additional_tools`` item of the input loads
        it into (the API has no such function in the default namespace); with none of
        these (another strategy, a mode) it goes back without one. Each rewrite is a
        `Change`. Tools `defined` by ``additional_tools`` items count as declared.

        First, no two items share an ``id`` (`_item_ids.unique_items`), a client
        ``tool_search_output`` answering no search call is left out (`_search`), and media
        the API does not take are text notes (`fit_media`, `_media.RESPONSES_MEDIA`).
        """
        tools = [*tools, *defined]
        messages, noted = fit_media(
            messages, RESPONSES_MEDIA, offset=offset, before=before, cache=cache
        )
        messages, repaired = unique_items(messages, before, offset=offset, cache=cache)
        messages, dropped, calls = _search.fitted_searches(messages, tools, before, offset=offset)
        messages, rewrote = fit_namespaces(messages, calls, tools, before, offset=offset)
        return messages, (*noted, *repaired, *dropped, *rewrote)

    def render_messages(
        self, messages: Sequence[Message], *, before: Sequence[Message] = ()
    ) -> list[dict[str, Any]]:
        """IR messages as Responses input items, in part order.

        An item linked to a reasoning item keeps its ``id`` only when that reasoning is
        sent too: in these messages or in the assistant messages ending `before`.
        """
        out: list[dict[str, Any]] = []
        sent_reasoning: set[str] = set()
        for msg in reversed(before):
            if msg.role != "assistant":
                break
            for part in msg.parts:
                if isinstance(part, ReasoningPart) and _recorded_reasoning(part):
                    item_id = hints(part.provider_data, FORMAT)["item"].get("id")
                    if isinstance(item_id, str):
                        sent_reasoning.add(item_id)
        for msg in messages:
            parts = msg.parts
            if len(parts) == 1:  # most messages: rendered straight into a record
                item = _lone_item(msg.role, parts[0])
                if item is not None:
                    if item is not _BLANK:
                        out.append(item)
                    continue
            builder = _InputBuilder(msg.role, sent_reasoning)
            for part in parts:
                builder.add(part)
            builder.flush()
            out += builder.items
        return out

    def render_input(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """IR messages as Responses input items (`render_messages` with nothing before)."""
        return self.render_messages(messages)

    def system_message(self, text: str) -> dict[str, Any] | None:
        """A ``developer`` message item (``instructions`` stays as sent, and cached)."""
        return {"type": "message", "role": "developer", "content": text}

    def assemble(
        self,
        *,
        system: str,
        tools: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions,
    ) -> dict[str, Any]:
        """The payload: ``instructions``, ``tools``, then `messages` as ``input`` (not copied).

        On models with `ModelRules.prompt_cache`, ``prompt_cache_key`` and
        ``prompt_cache_options`` (`_cache.cache_fields`; the host's own in ``extra`` win).

        ``input`` starts at the conversation's base, its newest ``compaction`` item
        (`contextchef.providers._compacted.native_base`: the compaction guide's stateless
        rule, "you can drop items that came before the most recent compaction item";
        none with ``previous_response_id``). The session's record keeps every item; only
        the request is shorter, so input tokens stay under the policy's threshold.

        With ``compaction`` in ``extra`` (`NativeContext.on_demand`) the payload is the
        keyword arguments of ``client.responses.compact`` (`_context.compact_body`).
        """
        payload: dict[str, Any] = {"model": options.model}
        if system:
            payload["instructions"] = system
        if tools:
            payload["tools"] = list(tools)
        items: list[Any] = list(messages[native_base(messages, options.extra) :])
        if options.prefill:
            items.append({"type": "message", "role": "assistant", "content": options.prefill})
        payload["input"] = items
        if options.max_tokens is not None:
            if options.max_tokens < 16:  # "integer below minimum value" (pi#6265)
                raise UsageError(
                    f"max_tokens is {options.max_tokens}: OpenAI Responses refuses a "
                    "max_output_tokens below 16; pass 16 or more (or none)"
                )
            payload[self.profile.max_tokens_key] = options.max_tokens
        for key, value in options.extra.items():
            payload.setdefault(key, value)
        if self.model_rules(options.model).prompt_cache:
            _cache.cache_fields(payload, options, [system, *messages[:1]], responses=True)
        return compact_body(payload) if COMPACTION in options.extra else payload

    def segments(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """Instructions / tools / input as canonical JSON."""
        return {
            "system": dumps_segment(payload.get("instructions")),
            "tools": dumps_segment(payload.get("tools")),
            "messages": dumps_segment(payload.get("input")),
        }
