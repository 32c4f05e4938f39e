"""The answer to a call of a tool no one has: the tools the model may have meant (dispatch).

`unknown_tool` is the gate's denial for a name the session's view does not have (or a
name no provider takes back, recorded under `MALFORMED_CALL`): it names the tools that
name may mean, the way ``tool_search`` would find them, keeping only those the model may
call now (`callable_now`). `named_tools` is its exact half, which the gate also uses to
resolve a ``defer_execute`` target by case; the near spellings are looked for only when
no tool has the name (`ToolIndex.near_names`, then namespace actions: `near_actions`).
"""

from __future__ import annotations

import re

from contextchef._echo import echo
from contextchef.deferred._groups import near_actions
from contextchef.deferred._meta import DEFER_EXECUTE, TOOL_SEARCH
from contextchef.deferred._view import SessionView
from contextchef.dispatch._types import Denied, GateContext
from contextchef.exposure._policy import matches
from contextchef.history._call_names import MALFORMED_CALL, legal_name
from contextchef.tools._names import RESERVED_NAMES
from contextchef.tools._tool import Tool

__all__ = ["MAX_CANDIDATES", "callable_now", "listed", "named_tools", "unknown_tool"]

MAX_CANDIDATES = 8
"""Most tool names an unknown-tool denial suggests."""

_PIECES = re.compile(r"[^A-Za-z0-9_-]+")  # splits functions.grep, grep<|channel|>x into names

_ILLEGAL_NAME = (
    "no tool can have this name (a tool name is 1 to 64 letters, digits, _ or -, starting "
    "with a letter or _), so this call was not run."
)
_NO_SUCH_NAME = (  # a name given to defer_execute: a tool's own name may be any text
    "no tool has this name, nor this wire name (1 to 64 letters, digits, _ or -, starting "
    "with a letter or _), so this call was not run."
)


def unknown_tool(
    view: SessionView,
    name: str,
    ctx: GateContext | None = None,
    written: str | None = None,
    *,
    target: bool = False,
) -> Denied:
    """The denial for a name no tool has, naming the tools it may have meant.

    `written`: the name as the model wrote it, for a call recorded under `MALFORMED_CALL`
    because no provider takes that name back (`history._call_names.legal_call`): quoted
    (capped) with the rule, and its candidates suggested. `target`: `name` is a
    ``defer_execute`` target, which may be a tool's own name (any text): one that is no
    wire name is not said to be a name no tool can have.

    Those are the tools ``tool_search`` would return for the name as an exact name (the
    tools whose own name it is, or a case-insensitive match: `named_tools`), else its near
    spellings (`ToolIndex.near_names`, as ``tool_search`` falls back to) and the namespace
    actions spelled alike (`near_actions`, named as the model calls them), keeping only
    tools the model may call now: the index holds no hidden tool, and `callable_now`
    drops the blocked, the withdrawn and those of skills not loaded.
    """
    ctx = ctx or GateContext()
    offered, rule = ctx.meta_tools, _NO_SUCH_NAME if target else _ILLEGAL_NAME
    if written is None and name != MALFORMED_CALL and not legal_name(name):  # checked directly
        written = echo(name)
    searchable = TOOL_SEARCH in view.meta_tools and (offered is None or TOOL_SEARCH in offered)
    hint = (
        "If it is a deferred tool, find its exact name with tool_search."
        if searchable
        else "Use one of the tools you were given."
    )
    if name == MALFORMED_CALL and written is None:
        what = "This call named no tool (or was no function call), so it was not run."
        return Denied(reason=f"{what} Call a tool by its exact name. {hint}", code="unknown_tool")
    said = f'Unknown tool "{echo(name)}".'
    if written is not None:  # a name no provider takes back: `history._call_names`
        name, said = written, f'Unknown tool "{written}": {rule}'
    named = named_tools(view, name, ctx)
    for piece in _PIECES.split(written) if written and not named else ():  # functions.grep
        if piece in (named_tools(view, piece, ctx) or ()):
            named = [piece]
            break
    if named:
        how = "by its exact name" if len(named) > 1 else "by that exact name"
        deferred = {view.exposure.get(view.by_wire_name[n].key) for n in named} == {"deferred"}
        if deferred and not ctx.direct_calls and (offered is None or DEFER_EXECUTE in offered):
            one = named[0] if len(named) == 1 else "<exact name>"
            how = f'with defer_execute({{"tool_name": "{one}", "params": {{...}}}})'
        hint = f"The tools with this name are {listed(named)}; call one {how}."
        if len(named) == 1:
            hint = f'The tool with this name is "{named[0]}"; call it {how}.'
    elif named is None and (near := _near(view, name, ctx)):
        hint = f"Did you mean {', '.join(near)}? {hint}"
    return Denied(reason=f"{said} {hint}", code="unknown_tool")


def named_tools(view: SessionView, name: str, ctx: GateContext) -> list[str] | None:
    """The callable tools `name` names by own name or case (wire names); None: none has it.

    A reserved name (`RESERVED_NAMES`) names none, and no near spelling is offered for it.
    """
    if name in RESERVED_NAMES:
        return []
    hits = view.index.exact([name])[0]
    named = [h.wire_name for h in hits if callable_now(view, h.tool, h.wire_name, ctx)]
    return named[:MAX_CANDIDATES] if hits else None


def _near(view: SessionView, name: str, ctx: GateContext) -> list[str]:
    """Near spellings of `name`, best first, callable now.

    A tool's wire name in quotes, or a namespace action the way the model calls it,
    ``ns({"action": "<sub-tool wire name>", "args": {...}})`` (sub-tools are not in the
    index: `near_actions`), through a namespace not blocked.
    """
    near = view.index.near_names(name, limit=MAX_CANDIDATES)
    found = [
        (h.score, f'"{h.wire_name}"') for h in near if callable_now(view, h.tool, h.wire_name, ctx)
    ]
    found += [
        (score, f'{ns}({{"action": "{action}", "args": {{...}}}})')
        for score, ns, action in near_actions(view.namespaces, name, limit=MAX_CANDIDATES)
        if callable_now(view, view.namespaces[ns].members[action], action, ctx)
        and not matches(ctx.blocked, (ns,))
    ]
    return [text for _, text in sorted(found, key=lambda x: -x[0])[:MAX_CANDIDATES]]


def callable_now(view: SessionView, tool: Tool, wire: str, ctx: GateContext) -> bool:
    """Whether the model may call the visible tool `wire` now (by some route)."""
    if view.skill_lock(wire, ctx.skills) is not None or wire in dict(ctx.withdrawn):
        return False
    return not matches(ctx.blocked, (wire, tool.name))


def listed(names: list[str]) -> str:
    """`names` quoted, comma-separated (as a denial lists tools)."""
    return ", ".join(f'"{n}"' for n in names)
