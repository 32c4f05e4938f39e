"""Provider-native tool deferral: ``defer_loading``, tool search and tool reveals.

Rule numbers are this fake's numbering of the rules in Anthropic's tool search tool,
mid-conversation system messages and prompt caching pages (platform.claude.com/docs), in
OpenAI's tool search guide and in the official SDKs' types. Locations read as the APIs write
them (``tools.3``, ``messages.4.content.0``, ``input.2``), followed by the API's wording
where it is known. A field of the wrong type is reported or skipped, never raised on.
Stricter than the live APIs on purpose: an unpaired tool-search ``server_tool_use`` (the
direct API tolerates it, Bedrock does not) and a ``function_call`` whose ``namespace``
resolves to nothing are refused. Model checks apply to the model names those pages list;
other names pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._additional import responses_additional_tools_valid
from contextchef.testing._body import NO_HEADERS, betas, dicts, server_result
from contextchef.testing._claude import parse_claude_name
from contextchef.testing._records import Check, RecordedRequest

__all__ = [
    "ANTHROPIC_NATIVE_RULES",
    "MAX_CACHE_BREAKPOINTS",
    "MAX_DEFERRED_TOOLS",
    "MCP_CLIENT_BETA",
    "RESPONSES_NATIVE_RULES",
    "anthropic_defer_loading_supported",
    "anthropic_deferred_no_cache_control",
    "anthropic_not_all_deferred",
    "anthropic_search_tools_valid",
    "anthropic_server_tool_use_not_answered",
    "anthropic_tool_change_rules",
    "anthropic_tool_reference_content",
    "responses_deferred_needs_search",
    "responses_namespaced_calls",
    "responses_search_items_paired",
    "responses_search_tool_valid",
]

_Body = Mapping[str, Any]
_Earlier = Sequence[RecordedRequest]

MAX_DEFERRED_TOOLS = 10_000
"""Tools with ``defer_loading: true`` one Anthropic request may carry (rule 14)."""
MAX_CACHE_BREAKPOINTS = 4
"""``cache_control`` markers one Anthropic request may carry, automatic caching included."""
MCP_CLIENT_BETA = "mcp-client-2026-09-15"
"""The beta an inline ``mcp_toolset`` definition needs besides inline tools (rule 11)."""

# -- Anthropic Messages ----------------------------------------------------------------------

_SEARCH_TYPES = {
    "tool_search_tool_bm25_20251119": "tool_search_tool_bm25",
    "tool_search_tool_bm25": "tool_search_tool_bm25",
    "tool_search_tool_regex_20251119": "tool_search_tool_regex",
    "tool_search_tool_regex": "tool_search_tool_regex",
}
"""Each server tool-search ``type`` and the one ``name`` it goes with."""
_SEARCH_KEYS = {"type", "name", "allowed_callers", "cache_control", "defer_loading", "strict"}
_SEARCH_INPUT = {"tool_search_tool_regex": "pattern", "tool_search_tool_bm25": "query"}
"""The input key of each tool-search variant's ``server_tool_use``."""
_SEARCH_4X = {"opus4.5", "opus4.6", "opus4.7", "opus4.8", "sonnet4.5", "sonnet4.6", "haiku4.5"}
"""The 4.x models with tool search; every 5.x model has it (A-TS model table)."""
_DATED = re.compile(r"_\d{8}$")
_NO_CACHE = (
    "cannot both defer_loading=true cache_control set. "
    "Tools defer_loading cannot use prompt caching."
)


def _is_search_tool(tool: Mapping[str, Any]) -> bool:
    kind = tool.get("type")
    return isinstance(kind, str) and kind.startswith("tool_search_tool_")


def _deferred(tool: Mapping[str, Any]) -> bool:
    return tool.get("defer_loading") is True


def _configs(tool: Mapping[str, Any]) -> list[Any]:
    """A toolset's ``default_config`` then its ``configs`` members; ``[]`` for a tool."""
    kind, members = tool.get("type"), tool.get("configs")
    if not (isinstance(kind, str) and "toolset" in kind):
        return []
    return [tool.get("default_config"), *(members.values() if isinstance(members, dict) else ())]


def _members_defer(tool: Mapping[str, Any]) -> bool:
    """A toolset some of whose members defer (the flag goes in its configs, A-TS)."""
    return any(isinstance(c, dict) and _deferred(c) for c in _configs(tool))


def _fully_deferred(tool: Mapping[str, Any]) -> bool:
    """A deferred entry, or a toolset deferring by default with no member opting out."""
    configs = [c if isinstance(c, dict) else {} for c in _configs(tool)]
    opt_out = any(c.get("defer_loading") is False for c in configs)
    return _deferred(tool) or (bool(configs) and _deferred(configs[0]) and not opt_out)


def _label(tool: Mapping[str, Any]) -> str:
    names = [tool.get(k) for k in ("name", "mcp_server_name", "type")]
    return next((n for n in names if isinstance(n, str) and n), "?")


def _kind(tool: Mapping[str, Any]) -> str:
    """The tool type a name is bound to: ``custom``, or a server type without its date."""
    kind = tool.get("type")
    return "custom" if kind in (None, "custom") else _DATED.sub("", str(kind))


def _tool_search_model(model: object) -> bool | None:
    """Whether a Claude model has tool search (A-TS table); None for names not known here."""
    parsed = parse_claude_name(model)
    if parsed is None:
        return None
    family, version = parsed
    at = (version[0], version[1] if len(version) > 1 else 0)
    if at[0] == 5 or f"{family}{at[0]}.{at[1]}" in _SEARCH_4X:
        return True
    old = at <= (4, 1) if family == "opus" else at <= (4, 0)
    return False if old else None


def anthropic_defer_loading_supported(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``defer_loading`` and tool-search tools only on models with tool search (rule 1).

    A deferred tool is held back until a ``tool_reference`` reveals it; Opus 4.1 and older,
    Sonnet 4.0 and the 3.x models honour the flag but have nothing to reveal it with, so
    the tool would be lost for good. Names not read as a listed Claude model pass.
    """
    model = body.get("model")
    if _tool_search_model(model) is not False:
        return
    for j, tool in dicts(body.get("tools")):
        if _deferred(tool) or _members_defer(tool):
            yield (
                f"tools.{j}: tool search is not supported on model {model}: a tool with "
                f"defer_loading ({_label(tool)!r}) could never be revealed"
            )
        elif _is_search_tool(tool):
            yield f"tools.{j}: tool search is not supported on model {model}"


def anthropic_not_all_deferred(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Some ``tools`` entry stays loaded, and the search tool is never deferred (rule 2).

    A server tool-search tool counts as a loaded entry. The tool search page is followed
    where the inline-tools page accepts an all-deferred array.
    """
    tools = dicts(body.get("tools"))
    for j, tool in tools:
        if _is_search_tool(tool) and _deferred(tool):
            yield (
                f"tools.{j}: the tool search tool {_label(tool)!r} cannot have "
                "defer_loading=true; it must stay loaded to reveal the others"
            )
    if tools and all(_fully_deferred(tool) for _, tool in tools):
        yield (
            "tools: At least one tool must have defer_loading=false. All tools cannot be deferred."
        )


def _cached(value: Mapping[str, Any]) -> bool:
    return isinstance(value.get("cache_control"), dict)


def _cache_markers(body: _Body) -> Iterator[str]:
    """The location of every ``cache_control`` marker of a Messages request."""
    if _cached(body):
        yield "cache_control"
    yield from (f"system.{j}" for j, block in dicts(body.get("system")) if _cached(block))
    yield from (f"tools.{j}" for j, tool in dicts(body.get("tools")) if _cached(tool))
    for i, message in dicts(body.get("messages")):
        for j, block in dicts(message.get("content")):
            where = f"messages.{i}.content.{j}"
            if _cached(block):
                yield where
            for k, item in dicts(block.get("content")):  # tool_result content
                if _cached(item):
                    yield f"{where}.content.{k}"
            definition = _definition(block)
            if definition is not None and _cached(definition):
                yield f"{where}.tool.definition"


def _id(block: Mapping[str, Any], key: str) -> str | None:
    """A string id field, else None (an id of another type matches nothing)."""
    value = block.get(key)
    return value if isinstance(value, str) else None


def _positions(content: list[tuple[int, dict[str, Any]]], kind: str, key: str) -> dict[str, int]:
    """Where each block of type `kind` sits in `content`, by its string id field `key`."""
    return {b[key]: j for j, b in content if b.get("type") == kind and isinstance(b.get(key), str)}


def _definition(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """The inline definition a ``tool_addition`` block carries, if any."""
    change = block.get("tool")
    found = change.get("definition") if isinstance(change, dict) else None
    return found if isinstance(found, dict) else None


def anthropic_deferred_no_cache_control(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """No ``cache_control`` on deferred tools (rule 4); at most 4 breakpoints (rule 5).

    The API refuses a breakpoint on a deferred tool or a toolset whose members defer (A-TS;
    conflict C10 sides with the 400). The count covers top-level (automatic) caching,
    ``system``, ``tools``, message blocks, ``tool_result`` content and inline definitions.
    """
    for j, tool in dicts(body.get("tools")):
        if "cache_control" in tool and _deferred(tool):
            yield f'tools.{j}: Tool "{_label(tool)}" {_NO_CACHE}'
        elif "cache_control" in tool and _members_defer(tool):
            yield (
                f"tools.{j}: toolset {_label(tool)!r} defers some of its tools, so it cannot "
                "carry cache_control; put the breakpoint on a tool that is not deferred"
            )
    markers = list(_cache_markers(body))
    if len(markers) > MAX_CACHE_BREAKPOINTS:
        yield (
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
            f"provided. Found {len(markers)} ({', '.join(markers)})."
        )


def anthropic_search_tools_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Exact tool-search ``type``/``name`` pairs (rule 6); ≤ 10,000 deferred tools (rule 14).

    Valid: ``{"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}``,
    the regex pair, or their undated type aliases; besides ``type`` and ``name`` only
    ``allowed_callers``, ``cache_control``, ``defer_loading`` and ``strict``.
    """
    tools = dicts(body.get("tools"))
    for j, tool in tools:
        if not _is_search_tool(tool):
            continue
        kind, name = tool.get("type"), tool.get("name")
        expected = _SEARCH_TYPES.get(str(kind))
        if expected is None:
            known = ", ".join(sorted(_SEARCH_TYPES))
            yield f"tools.{j}.type: unknown tool search type {kind!r}; expected one of {known}"
            continue
        if name != expected:
            yield f"tools.{j}.name: a {kind!r} tool must be named {expected!r} (got {name!r})"
        for key in sorted(set(tool) - _SEARCH_KEYS):
            yield f"tools.{j}.{key}: Extra inputs are not permitted"
    deferred = sum(1 for _, tool in tools if _deferred(tool))
    if deferred > MAX_DEFERRED_TOOLS:
        yield (
            f"tools: {deferred} tools have defer_loading=true; at most "
            f"{MAX_DEFERRED_TOOLS} are allowed per request"
        )


def anthropic_server_tool_use_not_answered(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Server tool calls get no ``tool_result``; tool search is paired (rule 6).

    A ``tool_result`` never answers a ``server_tool_use`` id (the API runs those itself);
    a tool-search ``server_tool_use`` has its ``tool_search_tool_result`` later in the same
    assistant message (drop an unpaired one on replay) and every server tool's result
    (``web_search_tool_result``, ``mcp_tool_result``...) follows its call there; the
    regex variant's input holds ``pattern``, the BM25 variant's ``query``.
    """
    server_ids: dict[str, str] = {}
    for i, message in dicts(body.get("messages")):
        if message.get("role") != "assistant":
            continue
        content = dicts(message.get("content"))
        calls = {
            **_positions(content, "mcp_tool_use", "id"),
            **_positions(content, "server_tool_use", "id"),
        }
        results = _positions(content, "tool_search_tool_result", "tool_use_id")
        for j, block in content:  # every server tool's result answers a call before it
            if server_result(block) and calls.get(_id(block, "tool_use_id") or "", j) >= j:
                yield (
                    f"messages.{i}.content.{j}: {block['type']} for {block.get('tool_use_id')!r}"
                    " follows no server_tool_use or mcp_tool_use with that id in this message"
                )
        for j, block in content:
            if block.get("type") != "server_tool_use":
                continue
            use_id, name, where = _id(block, "id"), block.get("name"), f"messages.{i}.content.{j}"
            if use_id is not None:
                server_ids[use_id] = where
            if name not in _SEARCH_INPUT:
                continue
            if use_id is None or results.get(use_id, j) <= j:
                yield (
                    f"{where}: server_tool_use {use_id!r} has no tool_search_tool_result after "
                    "it in this message; drop an unpaired tool search call on replay"
                )
            key = _SEARCH_INPUT[str(name)]
            tool_input = block.get("input")
            if isinstance(tool_input, dict) and key not in tool_input:
                other = ({"pattern", "query"} - {key}).pop()
                found = f", not {other!r}" if other in tool_input else ""
                yield f"{where}.input: {name} takes {key!r}{found}"
    for i, message in dicts(body.get("messages")):
        for j, block in dicts(message.get("content")) if message.get("role") == "user" else ():
            answered = _id(block, "tool_use_id")
            if block.get("type") == "tool_result" and answered in server_ids:
                yield (
                    f"messages.{i}.content.{j}: tool_result answers {answered!r}, the "
                    f"server_tool_use at {server_ids[str(answered)]}; server tools run on the "
                    "API's side and take no tool_result"
                )


def anthropic_tool_reference_content(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Client-search reveals: ``tool_reference`` blocks in ``tool_result`` content (rule 7).

    Each has a non-empty string ``tool_name`` (change blocks say ``name``; these do not);
    they are not message blocks of their own; and no ``tool_result``'s content is an empty
    list (the API refuses it: send a ``text`` block such as "no matches" instead).
    """
    for i, message in dicts(body.get("messages")):
        for j, block in dicts(message.get("content")):
            where, kind = f"messages.{i}.content.{j}", block.get("type")
            if kind == "tool_reference":
                yield (
                    f"{where}: a tool_reference block goes inside a tool_result's content, "
                    "not directly in a message"
                )
            if kind != "tool_result":
                continue
            if block.get("content") == []:
                yield (
                    f"{where}.content: a tool_result's content list cannot be empty; "
                    "send a text block (for example 'no matches') instead"
                )
            for k, item in dicts(block.get("content")):
                name = item.get("tool_name")
                if item.get("type") != "tool_reference" or (isinstance(name, str) and name):
                    continue
                hint = " (it has `name`; references in a tool_result use `tool_name`)"
                yield (
                    f"{where}.content.{k}.tool_name: Field required, a non-empty string"
                    + (hint if "name" in item else "")
                )


def anthropic_tool_change_rules(
    body: _Body, earlier: _Earlier, *, headers: Mapping[str, str] = NO_HEADERS
) -> Iterator[str]:
    """Tool changes: where they sit and what inline definitions may do (rules 5, 10, 11, 15).

    Beyond `anthropic_system_message_fields`: change blocks only in ``role: "system"``
    messages (10); an inline ``tool_definition`` keeps the tool type ``tools`` or an earlier
    definition bound its name to (a newer dated version is the same type; else the API's
    ``tool_name_conflict``, 15); no ``cache_control`` on a deferred definition, nor on both
    block and definition (5); an ``mcp_toolset`` definition needs ``mcp-client-2026-09-15`` (11).
    """
    active = betas(headers)
    kinds: dict[str, tuple[str, str]] = {}
    for j, tool in dicts(body.get("tools")):
        if isinstance(tool.get("name"), str):
            kinds.setdefault(tool["name"], (_kind(tool), f"tools.{j}"))
    for i, message in dicts(body.get("messages")):
        role = message.get("role")
        for j, block in dicts(message.get("content")):
            where, kind = f"messages.{i}.content.{j}", block.get("type")
            if kind in ("tool_addition", "tool_removal") and role != "system":
                yield f"{where}: `{kind}` blocks are only allowed in role 'system' messages"
            definition = _definition(block)
            if kind == "tool_addition" and role == "system" and definition is not None:
                yield from _inline_definition(where, block, definition, kinds, active)


def _inline_definition(
    where: str,
    block: Mapping[str, Any],
    definition: Mapping[str, Any],
    kinds: dict[str, tuple[str, str]],
    active: frozenset[str],
) -> Iterator[str]:
    at = f"{where}.tool.definition"
    if _deferred(definition) and "cache_control" in definition:
        yield f'{at}: Tool "{_label(definition)}" {_NO_CACHE}'
    if "cache_control" in block and "cache_control" in definition:
        yield f"{where}: cache_control goes on the tool_addition block or its definition, not both"
    if definition.get("type") == "mcp_toolset" and MCP_CLIENT_BETA not in active:
        yield (
            f"{at}: an `mcp_toolset` definition requires the `{MCP_CLIENT_BETA}` value "
            "in the `anthropic-beta` header"
        )
    name = definition.get("name")
    if not isinstance(name, str):
        return
    new, old = _kind(definition), kinds.get(name)
    if old is not None and old[0] != new:
        yield (
            f"{at}: tool_name_conflict: {name!r} is a {old[0]!r} tool ({old[1]}); an inline "
            f"definition cannot make it a {new!r} tool"
        )
    else:
        kinds[name] = (new, at)


ANTHROPIC_NATIVE_RULES: tuple[Check, ...] = (
    anthropic_defer_loading_supported,
    anthropic_not_all_deferred,
    anthropic_deferred_no_cache_control,
    anthropic_search_tools_valid,
    anthropic_server_tool_use_not_answered,
    anthropic_tool_reference_content,
    anthropic_tool_change_rules,
)
"""The Anthropic rules of this module, in the order ``ANTHROPIC_RULES`` runs them."""

# -- OpenAI Responses ------------------------------------------------------------------------

_DEFERRABLE = ("function", "custom", "mcp")
_MEMBERS = ("function", "custom")
_GPT = re.compile(r"(?:^|[/:])gpt-(\d+)(?:\.(\d+))?(?![0-9])")


def _gpt_tool_search(model: object) -> bool | None:
    """Whether a ``gpt-N[.M]`` model takes ``tool_search`` (5.4 and later); else None."""
    found = _GPT.search(model.lower()) if isinstance(model, str) else None
    if found is None:
        return None
    return (int(found.group(1)), int(found.group(2) or 0)) >= (5, 4)


def _searches(body: _Body) -> list[tuple[int, dict[str, Any]]]:
    return [(j, t) for j, t in dicts(body.get("tools")) if t.get("type") == "tool_search"]


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and value != ""


def responses_deferred_needs_search(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Deferral needs ``tool_search`` on a model with it; namespaces are well formed (rule 20).

    Without a ``{"type": "tool_search"}`` entry the API answers ``Invalid Value:
    'tools.defer_loading'. Deferred tools require tools.tool_search.``; only ``gpt-5.4``
    and later take ``tool_search``. ``defer_loading`` goes on function, custom and MCP tools
    (inside a namespace too), never on the namespace; a namespace has a non-empty
    ``name``, ``description`` and ``tools`` list of function or custom tools.
    """
    tools = dicts(body.get("tools"))
    deferred = [f"tools.{j}" for j, tool in tools if _deferred(tool)]
    for j, tool in tools:
        members = dicts(tool.get("tools")) if tool.get("type") == "namespace" else []
        deferred += [f"tools.{j}.tools.{k}" for k, inner in members if _deferred(inner)]
    searches = _searches(body)
    if deferred and not searches:
        yield (
            f"{sorted(deferred)[0]}: Invalid Value: 'tools.defer_loading'. "
            "Deferred tools require tools.tool_search."
        )
    model = body.get("model")
    if _gpt_tool_search(model) is False:
        for j, _ in searches:
            yield f"tools.{j}: tool_search is not supported on model {model}; use gpt-5.4 or later"
    for j, tool in tools:
        kind = tool.get("type")
        if kind == "namespace":
            yield from _namespace_problems(f"tools.{j}", tool)
        elif "defer_loading" in tool and kind not in _DEFERRABLE:
            yield f"tools.{j}.defer_loading: only function, custom and mcp tools can be deferred"


def _namespace_problems(where: str, tool: Mapping[str, Any]) -> Iterator[str]:
    if "defer_loading" in tool:
        yield (
            f"{where}.defer_loading: a namespace cannot be deferred; set defer_loading on "
            "the functions inside it"
        )
    for key in ("name", "description"):
        if not _nonempty(tool.get(key)):
            yield f"{where}.{key}: a namespace needs a non-empty {key}"
    members = tool.get("tools")
    if not (isinstance(members, list) and members):
        yield f"{where}.tools: a namespace needs a non-empty list of tools"
    for k, inner in enumerate(members if isinstance(members, list) else []):
        kind = inner.get("type") if isinstance(inner, dict) else None
        if kind not in _MEMBERS:
            yield f"{where}.tools.{k}: a namespace holds function or custom tools (got {kind!r})"


def responses_search_tool_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """One ``tool_search`` tool, well formed, not shadowed by a function (rules 21, 24).

    A client-executed search (``execution: "client"``) needs a string ``description``
    (the live API refuses null although the SDK marks it optional) and a ``parameters``
    object; a function named ``tool_search`` beside it makes the model call that instead.
    """
    searches = _searches(body)
    for j, _ in searches[1:]:
        yield f"tools.{j}: only one tool_search tool is allowed (one is tools.{searches[0][0]})"
    for j, tool in searches:
        execution = tool.get("execution", "server")
        if execution not in ("server", "client"):
            yield f"tools.{j}.execution: Input should be 'server' or 'client' (got {execution!r})"
        if execution == "client" and not isinstance(tool.get("description"), str):
            yield f"tools.{j}.description: a client-executed tool_search needs a description"
        if execution == "client" and not isinstance(tool.get("parameters"), dict):
            yield f"tools.{j}.parameters: a client-executed tool_search needs a parameters object"
    for j, tool in dicts(body.get("tools")) if searches else ():
        if tool.get("type") == "function" and tool.get("name") == "tool_search":
            yield (
                f"tools.{j}: a function named 'tool_search' beside the tool_search tool; "
                "declare the search once, as the tool_search tool"
            )


def _client(item: Mapping[str, Any]) -> bool:
    return item.get("execution") == "client"


def responses_search_items_paired(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Client tool-search calls and outputs pair up by ``call_id`` (rules 21, 22).

    A ``tool_search_call`` with ``execution: "client"`` has a ``call_id`` that exactly one
    later client ``tool_search_output`` echoes; a client output answers an earlier client
    call (unless ``previous_response_id`` may hold it). Server-executed items are exempt.
    """
    items = dicts(body.get("input"))
    calls = [(i, c) for i, c in items if c.get("type") == "tool_search_call" and _client(c)]
    outputs = [(i, o) for i, o in items if o.get("type") == "tool_search_output"]
    seen: set[object] = set()
    for i, call in calls:
        call_id = call.get("call_id")
        if not _nonempty(call_id) or call_id in seen:
            yield f"input.{i}.call_id: a client tool_search_call needs its own call_id"
            continue
        seen.add(call_id)
        answers = [out for k, out in outputs if k > i and out.get("call_id") == call_id]
        echoed = [out for out in answers if _client(out)]
        if len(echoed) != 1:
            hint = "; the output must echo execution 'client'" if answers and not echoed else ""
            yield (
                f"input.{i}: client tool_search_call {call_id!r} has {len(echoed)} client "
                f"tool_search_output items after it; exactly one is needed{hint}"
            )
    if body.get("previous_response_id") is not None:
        return
    for i, out in outputs:
        call_id = out.get("call_id")
        if _client(out) and not any(c.get("call_id") == call_id for k, c in calls if k < i):
            yield (
                f"input.{i}: no client tool_search_call found for tool_search_output with "
                f"call_id {call_id!r}"
            )


def _declare(tools: object, namespaces: dict[str, set[str]], flat: set[str]) -> None:
    """Record the namespaces (with their members) and flat tools a tool list declares."""
    for _, tool in dicts(tools):
        name = tool.get("name")
        if not isinstance(name, str):
            continue
        if tool.get("type") == "namespace":
            members = (t.get("name") for _, t in dicts(tool.get("tools")))  # (any type)
            namespaces.setdefault(name, set()).update(m for m in members if isinstance(m, str))
        elif tool.get("type") in _MEMBERS:
            flat.add(name)


def responses_namespaced_calls(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Replayed function calls carry the namespace their tool lives in (rule 23).

    A ``function_call``'s ``namespace`` holds it (a ``namespace`` tool, or one an earlier
    ``tool_search_output`` / ``additional_tools`` item loaded) or is its own name (a deferred
    or loaded flat function). Without one, it calls no function living only in a namespace
    or loaded by an earlier item (the API: ``Missing namespace for function_call 'X'. It
    does not exist in the default namespace.``). Skipped with ``previous_response_id``.
    """
    if body.get("previous_response_id") is not None:
        return
    namespaces: dict[str, set[str]] = {}
    default: set[str] = set()
    deferred: set[str] = set()
    for _, tool in dicts(body.get("tools")):
        if tool.get("type") in _MEMBERS and isinstance(tool.get("name"), str):
            (deferred if _deferred(tool) else default).add(tool["name"])
    _declare(body.get("tools"), namespaces, set())
    loaded: set[str] = set()
    for i, item in dicts(body.get("input")):
        kind, name, namespace = item.get("type"), item.get("name"), item.get("namespace")
        if kind in ("tool_search_output", "additional_tools"):
            _declare(item.get("tools"), namespaces, loaded)
        if kind != "function_call" or not isinstance(name, str):
            continue
        if namespace is not None:
            holds = name in namespaces.get(str(namespace), set())
            own = namespace == name and (name in deferred or name in loaded)
            if not (holds or own):
                yield (
                    f"input.{i}.namespace: function_call {name!r} names namespace "
                    f"{namespace!r}, which holds no such tool here (a deferred or loaded "
                    "flat function uses its own name; ordinary functions take no namespace)"
                )
            continue
        homes = sorted(n for n, members in namespaces.items() if name in members)
        if name not in default and (homes or name in loaded):
            home = homes[0] if homes else name
            yield (
                f"input.{i}: function {name!r} lives in namespace {home!r}: replay it with "
                f"its namespace (Missing namespace for function_call {name!r}. It does not "
                "exist in the default namespace.)"
            )


RESPONSES_NATIVE_RULES: tuple[Check, ...] = (
    responses_additional_tools_valid,
    responses_deferred_needs_search,
    responses_search_tool_valid,
    responses_search_items_paired,
    responses_namespaced_calls,
)
"""The Responses rules of this module, in the order ``RESPONSES_RULES`` runs them."""
