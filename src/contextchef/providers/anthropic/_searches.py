"""Anthropic server tool-search blocks: which of them a request can still send.

A ``server_tool_use`` of a tool-search tool and its ``tool_search_tool_result`` are
replayed unchanged, in pairs, and every ``tool_reference`` in them must name a tool the
request declares (research note rule 3); a pair that cannot be sent so, or a result block
the API would refuse (malformed), is dropped by `AnthropicAdapter.fit_references`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextchef.history._messages import Part, ProviderPart

__all__ = ["references", "server_block_id", "unusable_searches"]

FORMAT = "anthropic"


def server_block_id(part: ProviderPart) -> str | None:
    """The ``id`` of a server block, or the ``tool_use_id`` it answers."""
    data = part.data
    value = data.get("id", data.get("tool_use_id"))
    return value if isinstance(value, str) else None


def unusable_searches(parts: Sequence[Part], declared: set[Any]) -> dict[str, str]:
    """Server tool-search ids to drop: unpaired, or naming a tool not declared -> why."""
    calls: set[str] = set()
    results: dict[str, set[str]] = {}
    malformed: set[str] = set()
    for part in parts:
        if not (isinstance(part, ProviderPart) and part.provider == FORMAT):
            continue
        block_id = server_block_id(part)
        if block_id is None:
            continue
        if part.data.get("type") == "server_tool_use" and str(part.data.get("name", "")).startswith(
            "tool_search_tool_"
        ):
            calls.add(block_id)
        elif part.data.get("type") == "tool_search_tool_result":
            found = references(part.data)
            if found is None:
                malformed.add(block_id)
            results[block_id] = found or set()
    drop = {i: "unpaired tool-search call" for i in calls if i not in results}
    drop |= {i: "a malformed tool-search result (no list of tool references)" for i in malformed}
    for block_id, names in results.items():
        if block_id in malformed:
            continue
        missing = sorted(n for n in names if n not in declared)
        if missing:
            drop[block_id] = f"it names {missing}, which this request does not declare"
    return drop


def references(block: Mapping[str, Any]) -> set[str] | None:
    """``tool_name`` of each ``tool_reference`` in a tool-search result block.

    An error result names none; None when the block is malformed (its content is not a
    search result or an error, its references not a list of named references), which
    the API would refuse on every later request.
    """
    if block.get("type") != "tool_search_tool_result":
        return set()
    content = block.get("content")
    if not isinstance(content, Mapping):
        return None
    if content.get("type") == "tool_search_tool_result_error":
        return set()
    refs = content.get("tool_references")
    if not isinstance(refs, list) or not all(
        isinstance(r, Mapping) and isinstance(r.get("tool_name"), str) for r in refs
    ):
        return None
    return {r["tool_name"] for r in refs}
