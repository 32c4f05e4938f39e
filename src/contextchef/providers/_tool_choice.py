"""A host's ``tool_choice`` in ``extra``: it may only name a tool this request offers.

``compile(extra={"tool_choice": ...})`` is copied into the payload as given; a choice that
forces a tool the request does not offer is refused at compile, for every wire's shape:

* Anthropic ``{"type": "tool", "name": N}``;
* Chat Completions ``{"type": "function", "function": {"name": N}}`` and
  ``{"type": "allowed_tools", "allowed_tools": {"tools": [<those>]}}``;
* Responses ``{"type": "function" | "custom", "name": N}`` and
  ``{"type": "allowed_tools", "tools": [<those>]}``;
* Gemini ``tool_config.function_calling_config.allowed_function_names`` (camelCase too);
* Interactions ``generation_config.tool_choice.allowed_tools.tools`` (names).

The live APIs refuse a named choice of a tool ``tools`` does not declare, and a deferred
tool cannot be forced before it was revealed: research note
provider-native-disclosure.md §6 rule 19 ("Never force ``tool_choice`` onto a hidden
tool"; pydantic-ai: "No tool in tool_choice is currently available") and rule 24 ("no
named ``tool_choice`` on deferred-only tools or namespace names", openai-agents). A tool
the gate would refuse whatever the arguments (hidden by a mode, blocked, withdrawn, of a
skill not loaded) is refused too: forcing it forces a call that cannot run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from contextchef._errors import UsageError, shown
from contextchef.providers._tool_changes import ToolState

__all__ = ["check_tool_choice", "declared_tools", "forced_names"]


def _map(value: object, *keys: str) -> Mapping[str, Any]:
    """The first of `keys` in `value` holding a mapping, else ``{}``."""
    if not isinstance(value, Mapping):
        return {}
    found: object = next((value[k] for k in keys if isinstance(value.get(k), Mapping)), {})
    return found if isinstance(found, Mapping) else {}


def _named(choice: object, where: str) -> Iterator[tuple[str, object]]:
    """(location, name) of each tool a Chat / Responses / Anthropic choice names."""
    if not isinstance(choice, Mapping):
        return
    kind = choice.get("type")
    if kind in ("tool", "function", "custom"):
        function = choice.get("function")
        if isinstance(function, Mapping):
            yield f"{where}.function.name", function.get("name")
        else:
            yield f"{where}.name", choice.get("name")
    elif kind == "allowed_tools":
        inner = choice.get("allowed_tools", choice)
        tools = inner.get("tools") if isinstance(inner, Mapping) else None
        for k, tool in enumerate(tools if isinstance(tools, list) else ()):
            yield from _named(tool, f"{where}.tools.{k}")


def forced_names(extra: Mapping[str, Any]) -> list[tuple[str, object]]:
    """(location in `extra`, name) of every tool a ``tool_choice`` in `extra` names."""
    out = list(_named(extra.get("tool_choice"), "tool_choice"))
    config = _map(_map(extra, "tool_config", "toolConfig"), *_CALLING)
    for key in ("allowed_function_names", "allowedFunctionNames"):
        names = config.get(key)
        for k, name in enumerate(names if isinstance(names, list) else ()):
            out.append((f"tool_config.function_calling_config.{key}.{k}", name))
    choice = _map(_map(extra, "generation_config"), "tool_choice")
    tools = _map(choice, "allowed_tools").get("tools")
    for k, name in enumerate(tools if isinstance(tools, list) else ()):
        out.append((f"generation_config.tool_choice.allowed_tools.tools.{k}", name))
    return out


_CALLING = ("function_calling_config", "functionCallingConfig")


def declared_tools(payload: Mapping[str, Any]) -> dict[str, bool]:
    """Tool name -> declared with ``defer_loading`` in `payload`'s ``tools``, for any wire.

    Anthropic / Responses / Interactions entries by ``name`` (a Responses namespace's
    members, not the namespace), Chat ``function.name``, Gemini ``function_declarations``
    (in ``config``).
    """
    return {name: deferred for name, deferred, _ in _units(payload)}


def _namespaced(payload: Mapping[str, Any]) -> dict[str, str]:
    """Responses namespace members in `payload`'s ``tools``: name -> its namespace.

    A named ``tool_choice`` cannot force one (research note §6 rule 24: "no named
    ``tool_choice`` on deferred-only tools or namespace names"; openai-agents).
    """
    return {name: space for name, _, space in _units(payload) if space is not None}


def _units(payload: Mapping[str, Any]) -> Iterator[tuple[str, bool, str | None]]:
    """(name, declared with ``defer_loading``, its Responses namespace or None) per tool."""
    tools = payload.get("tools")
    if tools is None:
        tools = _map(payload, "config").get("tools")
    for entry in tools if isinstance(tools, list) else ():
        if not isinstance(entry, Mapping):
            continue
        function = entry.get("function")
        members = entry.get("tools") if entry.get("type") == "namespace" else None
        decls = entry.get("function_declarations", entry.get("functionDeclarations"))
        space = str(entry.get("name")) if isinstance(members, list) else None
        for unit in (
            [function]
            if isinstance(function, Mapping)
            else members
            if isinstance(members, list)
            else decls
            if isinstance(decls, list)
            else [entry]
        ):
            name = unit.get("name") if isinstance(unit, Mapping) else None
            if isinstance(name, str):
                yield name, unit.get("defer_loading") is True, space


def check_tool_choice(
    extra: Mapping[str, Any],
    payload: Mapping[str, Any],
    state: ToolState | None = None,
    refused: Callable[[str], str | None] = lambda name: None,
) -> None:
    """Refuse a ``tool_choice`` in `extra` naming a tool `payload` does not offer.

    Args:
        extra: The host's extra request fields.
        payload: The request built from them.
        state: What the requests sent revealed (a deferred tool it revealed may be
            forced); None: nothing.
        refused: Why the gate refuses a tool whatever the arguments, or None.

    Raises:
        UsageError: A named tool that is not declared, declared only deferred and not
            revealed, or refused by the gate; the message names it and lists the tools
            this request offers.
    """
    forced = forced_names(extra)
    if not forced:
        return
    declared = declared_tools(payload)
    state = state or ToolState()
    inside = _namespaced(payload)
    offered = sorted(
        n for n, hidden in declared.items() if state.offered(n, not hidden) and n not in inside
    )
    for where, name in forced:
        why = _why(name, declared, state, refused)
        if isinstance(name, str) and name in inside and why is None:
            why = (
                f"a function of namespace {shown(inside[name], 60)} (a named tool_choice "
                "takes a top-level function only)"
            )
        if why is not None:
            raise UsageError(
                f"extra {where} names the tool {shown(name, 80)}, {why}; a tool_choice may "
                f"name only a tool this request offers: {_listed(offered)} (load, reveal or "
                "pin the tool first, or leave tool_choice out)"
            )


def _why(
    name: object,
    declared: Mapping[str, bool],
    state: ToolState,
    refused: Callable[[str], str | None],
) -> str | None:
    if not isinstance(name, str) or not name:
        return "which is not a tool name"
    if name not in declared:
        return "which this request's tools do not declare (deferred, hidden by a mode, or unknown)"
    if not state.offered(name, not declared[name]):
        return "which is declared deferred (defer_loading) and not revealed yet"
    reason = refused(name)
    return None if reason is None else f"which the gate refuses ({reason})"


def _listed(names: Sequence[str], most: int = 20) -> str:
    if not names:
        return "none"
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more
