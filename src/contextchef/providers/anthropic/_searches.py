"""Anthropic server tool-search blocks: which of them a request can still send.

A ``server_tool_use`` of a tool-search tool and its ``tool_search_tool_result`` are
replayed unchanged, in pairs, and every ``tool_reference`` in them must name a tool the
request declares (Anthropic's tool search tool doc); a pair that cannot be sent so, or a
result block the API would refuse (malformed), is dropped by `AnthropicAdapter.fit_references`. The
same pairing holds for every server tool (web search, web fetch, code execution, MCP):
a result block answers a call before it in the same message, and one that answers
nothing (a malformed model reply, a cut history) is dropped, never replayed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef.history._messages import Part, ProviderPart, ToolResult
from contextchef.history._normalize import Change
from contextchef.providers._tool_changes import deferred

__all__ = ["fit_result", "references", "server_block_id", "unusable_searches"]

FORMAT = "anthropic"


def server_block_id(part: ProviderPart) -> str | None:
    """The ``id`` of a server block, or the ``tool_use_id`` it answers."""
    data = part.data
    value = data.get("id", data.get("tool_use_id"))
    return value if isinstance(value, str) else None


_CALLS = {"server_tool_use", "mcp_tool_use"}
"""Blocks that call a tool the API runs; each is answered by a ``*_tool_result`` block."""


def _is_result(kind: object) -> bool:
    """A server tool's result block (``web_search_tool_result``, ``mcp_tool_result``...)."""
    return isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result"


def unusable_searches(
    parts: Sequence[Part], declared: set[Any], *, last: bool = False
) -> dict[int, str]:
    """Positions in `parts` of server blocks the API would refuse -> why.

    Every server tool pairs within one assistant message: a call (``server_tool_use``,
    ``mcp_tool_use``) is followed by the result block answering its ``id``. Dropped: a
    result with no call before it carrying its id (an orphan, or one whose id matches
    nothing: the API refuses it on every later request), a call left without its result
    (a tool-search one always: Bedrock refuses it unpaired; any other kind unless it closes the
    `last` message, a paused turn being continued), a malformed tool-search result, and
    a tool-search result naming a tool this request does not declare. A pair
    goes together: when one block of it is dropped, so is the other.
    """
    calls: dict[str, int] = {}
    answered: dict[str, int] = {}
    drop: dict[int, str] = {}
    blocks = [
        (j, p) for j, p in enumerate(parts) if isinstance(p, ProviderPart) and p.provider == FORMAT
    ]
    for j, part in blocks:
        kind, block_id = part.data.get("type"), server_block_id(part)
        if kind in _CALLS:
            if block_id is not None:
                calls.setdefault(block_id, j)
        elif _is_result(kind):
            if block_id is None or calls.get(block_id, j) >= j or block_id in answered:
                drop[j] = f"a {kind} answering no {' or '.join(sorted(_CALLS))} before it"
                continue
            answered[block_id] = j
            found = references(part.data)
            if found is None:
                drop[j] = "a malformed tool-search result (no list of tool references)"
            elif missing := sorted(n for n in found if n not in declared):
                drop[j] = f"it names {missing}, which this request does not declare"
    final = blocks[-1][0] if blocks and blocks[-1][0] == len(parts) - 1 else None
    for j, part in blocks:
        kind, block_id = part.data.get("type"), server_block_id(part)
        if kind not in _CALLS or j in drop:
            continue
        searching = str(part.data.get("name", "")).startswith("tool_search_tool_")
        result = answered.get(block_id) if block_id is not None else None
        if block_id is None or calls.get(block_id) != j:
            drop[j] = f"a {kind} without an id of its own"
        elif result is None and (searching or not (last and j == final)):
            drop[j] = f"a {kind} whose result is missing"
        elif result is not None and result in drop:
            drop[j] = f"its result was left out ({drop[result]})"
    for block_id, j in answered.items():
        if calls[block_id] in drop and j not in drop:
            drop[j] = "its call was left out"
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


def tools_at_start(entries: Sequence[Any]) -> list[Any]:
    """What the model sees of a ``tools`` array: no deferred entry (stripped before the prompt).

    agents-and-tools/tool-use/tool-search-tool: deferred definitions reach the model only
    when a search result references them.
    """
    return [e for e in entries if not (isinstance(e, Mapping) and deferred(e))]


def fit_result(
    part: ToolResult, declared: set[Any], inline: set[Any], index: int
) -> tuple[ToolResult, Change]:
    """`part` with only references `declared` resolves, and the `Change` saying so.

    Names only defined `inline` are offered by their definition: their references go and
    the rest stay. Any other undeclared name: the result goes as its text.
    """
    missing = sorted(set(part.references) - declared)
    kept = tuple(n for n in part.references if n in declared)
    if kept and set(missing) <= inline:
        why = "which this request defines inline, not in tools; those references left out"
    else:
        kept, why = (), "which this request does not declare; sent as text"
    detail = f"message {index}: tool result {part.call_id!r} revealed {missing} by reference, "
    change = Change(
        kind="rewrote_reference", index=index, call_id=part.call_id, detail=detail + why
    )
    return dataclasses.replace(part, references=kept), change
