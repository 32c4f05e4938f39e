"""Provider-side tool searches of scripted turns, filled in from the request they answer.

A `provider_search` turn names only the tools found; the fake reads the rest from the
request: which search tool it declares and the definitions of the found tools. Every
found name is checked before any id is taken, so a refused turn leaves the id counters
as they were.

* Anthropic server tool search (
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool; SDK
  types ``anthropic.types.ServerToolUseBlock``, ``ToolSearchToolResultBlock``,
  ``ToolSearchToolSearchResultBlock``, ``ToolReferenceBlock`` and their ``beta``
  twins): a ``server_tool_use`` named after the request's ``tool_search_tool_bm25`` or
  ``tool_search_tool_regex`` tool, input ``{"query": ...}`` or ``{"pattern": ...}``, then
  its ``tool_search_tool_result`` whose ``tool_search_tool_search_result`` lists one
  ``tool_reference`` (``tool_name``) per tool found. Ids ``srvtoolu_0001``...
* OpenAI Responses hosted tool search (
  https://developers.openai.com/api/docs/guides/tools-tool-search; SDK types
  ``openai.types.responses.ResponseToolSearchCall``, ``ResponseToolSearchOutputItem``):
  a ``tool_search_call`` with ``execution: "server"``, ``call_id: null`` and arguments
  ``{"paths": [...]}`` (the shape observed live), then a ``tool_search_output`` whose
  ``tools`` are copies of the request's entries declaring the found tools: the whole
  ``namespace`` a found function belongs to, or the flat function itself. Ids
  ``tsc_0001``... and ``tso_0001``...
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef import UsageError
from contextchef.testing._replies import Ids
from contextchef.testing._script import ProviderSearch, Turn

__all__ = [
    "SearchNotAnswerable",
    "anthropic_search_blocks",
    "no_provider_search",
    "responses_search_items",
]

_ANTHROPIC_SEARCH = {
    "tool_search_tool_bm25_20251119": ("tool_search_tool_bm25", "query"),
    "tool_search_tool_bm25": ("tool_search_tool_bm25", "query"),
    "tool_search_tool_regex_20251119": ("tool_search_tool_regex", "pattern"),
    "tool_search_tool_regex": ("tool_search_tool_regex", "pattern"),
}
"""Each server tool-search ``type``: the name its ``server_tool_use`` carries, its input key."""
_SHOWN = 10


class SearchNotAnswerable(UsageError):
    """A scripted provider search the request it answers cannot honour.

    The fake answers HTTP 500 with this message and records a `Violation` (rule
    ``provider_search``); it never escapes the fake.
    """


def _dicts(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _listed(names: Sequence[str]) -> str:
    ordered = sorted(set(names))
    more = f" and {len(ordered) - _SHOWN} more" if len(ordered) > _SHOWN else ""
    return (", ".join(ordered[:_SHOWN]) + more) if ordered else "none"


def _not_deferred(name: str, deferred: Sequence[str], declared: Sequence[str]) -> str:
    how = "declares it loaded, without defer_loading" if name in declared else "does not declare it"
    return (
        f"provider_search found {name!r}, but the request {how}; a provider search finds "
        f"only tools declared with defer_loading: true (here: {_listed(deferred)})"
    )


def _default_query(search: ProviderSearch, key: str) -> str:
    if search.query is not None:
        return search.query
    if key == "pattern":
        return "|".join(re.escape(name) for name in search.found)
    return " ".join(search.found)


def anthropic_search_blocks(
    searches: Sequence[ProviderSearch], body: Mapping[str, Any], ids: Ids
) -> list[dict[str, Any]]:
    """The ``server_tool_use`` / ``tool_search_tool_result`` pairs for `searches`.

    The search tool is the first ``tool_search_tool_*`` entry of the request's ``tools``;
    a found name must be a ``tools`` entry with ``defer_loading: true``.

    Raises:
        SearchNotAnswerable: The request declares no server search tool, or a found name
            is not deferred there (the message names it and lists the deferred tools).
    """
    if not searches:
        return []
    tools = _dicts(body.get("tools"))
    variant = next(
        (_ANTHROPIC_SEARCH[t["type"]] for t in tools if t.get("type") in _ANTHROPIC_SEARCH), None
    )
    if variant is None:
        raise SearchNotAnswerable(
            "provider_search needs a server search tool in the request's tools "
            '({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"} '
            "or the regex variant); this request declares none"
        )
    named = [t["name"] for t in tools if isinstance(t.get("name"), str)]
    deferred = [
        t["name"]
        for t in tools
        if isinstance(t.get("name"), str) and t.get("defer_loading") is True
    ]
    for search in searches:
        for name in search.found:
            if name not in deferred:
                raise SearchNotAnswerable(_not_deferred(name, deferred, named))
    tool_name, key = variant
    blocks: list[dict[str, Any]] = []
    for search in searches:
        use_id = ids.take("srvtoolu_")
        references = [{"type": "tool_reference", "tool_name": name} for name in search.found]
        content: dict[str, Any] = (
            {"type": "tool_search_tool_search_result", "tool_references": references}
            if search.error is None
            else {"type": "tool_search_tool_result_error", "error_code": search.error}
        )
        blocks += [
            {
                "type": "server_tool_use",
                "id": use_id,
                "name": tool_name,
                "input": {key: _default_query(search, key)},
            },
            {
                "type": "tool_search_tool_result",
                "tool_use_id": use_id,
                "content": content,
            },
        ]
    return blocks


def _responses_homes(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Deferred function name -> the ``tools`` entry a search loads it by."""
    homes: dict[str, dict[str, Any]] = {}
    for tool in tools:
        if tool.get("type") == "namespace" and isinstance(tool.get("name"), str):
            for member in _dicts(tool.get("tools")):
                if isinstance(member.get("name"), str) and member.get("defer_loading") is True:
                    homes.setdefault(member["name"], tool)
        elif tool.get("defer_loading") is True and isinstance(tool.get("name"), str):
            homes.setdefault(tool["name"], tool)
    return homes


def _declared(tools: list[dict[str, Any]]) -> list[str]:
    names = []
    for tool in tools:
        members = _dicts(tool.get("tools")) if tool.get("type") == "namespace" else [tool]
        names += [m["name"] for m in members if isinstance(m.get("name"), str)]
    return names


def responses_search_items(
    searches: Sequence[ProviderSearch], body: Mapping[str, Any], ids: Ids
) -> list[dict[str, Any]]:
    """The hosted ``tool_search_call`` / ``tool_search_output`` items for `searches`.

    A found name must be a function with ``defer_loading: true`` in the request's
    ``tools``, flat or inside a ``namespace``; the output carries a copy of that entry
    (once per search, in first-found order) and the call's ``paths`` name the entries.

    Raises:
        SearchNotAnswerable: The request has no hosted ``tool_search`` tool (none, or one
            with ``execution: "client"``), or a found name is not deferred there.
    """
    if not searches:
        return []
    tools = _dicts(body.get("tools"))
    search_tools = [t for t in tools if t.get("type") == "tool_search"]
    if not any(t.get("execution", "server") in ("server", None) for t in search_tools):
        how = (
            'its tool_search runs on the client (execution: "client"): script '
            'tool_calls(("tool_search", {...})) and answer with a tool_search_output'
            if search_tools
            else 'it declares no {"type": "tool_search"} tool'
        )
        raise SearchNotAnswerable(f"provider_search needs hosted tool search, but {how}")
    if any(search.error is not None for search in searches):
        raise SearchNotAnswerable(
            "provider_search(error=...) is Anthropic's tool_search_tool_result_error; "
            "Responses documents no hosted tool search error"
        )
    homes = _responses_homes(tools)
    for search in searches:
        for name in search.found:
            if name not in homes:
                raise SearchNotAnswerable(_not_deferred(name, list(homes), _declared(tools)))
    items: list[dict[str, Any]] = []
    for search in searches:
        loaded: dict[str, dict[str, Any]] = {}
        for name in search.found:
            entry = homes[name]
            loaded.setdefault(entry["name"], entry)
        common = {"call_id": None, "execution": "server", "status": "completed"}
        call = {"type": "tool_search_call", "id": ids.take("tsc_"), **common}
        output = {"type": "tool_search_output", "id": ids.take("tso_"), **common}
        items += [
            {**call, "arguments": {"paths": list(loaded)}},
            {**output, "tools": [copy.deepcopy(entry) for entry in loaded.values()]},
        ]
    return items


def no_provider_search(turn: Turn, api: str) -> None:
    """Refuse a turn with provider searches on a fake whose API has none.

    Raises:
        SearchNotAnswerable: `turn` carries searches.
    """
    if turn.searches:
        raise SearchNotAnswerable(
            f"{api} has no provider-side tool search; script provider_search(...) "
            "turns for FakeAnthropic or FakeResponses"
        )
