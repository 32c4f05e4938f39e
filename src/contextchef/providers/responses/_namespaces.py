"""Where a replayed Responses call's function lives: namespaces declared and loaded.

A function the request declares in a ``namespace`` entry (or as a flat deferred
function), or that an earlier ``tool_search_output`` / ``additional_tools`` item loaded
into one, is called with that ``namespace``; the API has no such function in the default
namespace ("Missing namespace for function_call"). Tool search guide:
https://developers.openai.com/api/docs/guides/tools-tool-search.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.history._messages import Message, Part, ProviderPart, ToolCall, ToolResult
from contextchef.history._normalize import Change
from contextchef.providers._base import hints
from contextchef.providers.responses import _search
from contextchef.providers.responses._search import FORMAT

__all__ = ["Homes", "fit_namespace", "fit_namespaces", "loaded_names", "loading_items"]


def _namespace_homes(tools: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Deferred function name -> the namespace a call to it is made in."""
    homes: dict[str, str] = {}
    for tool in tools:
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            continue
        if tool.get("type") == "namespace":
            for member in _search.members(tool):
                if isinstance(member, Mapping) and isinstance(member.get("name"), str):
                    homes[member["name"]] = tool["name"]
        elif tool.get("type") == "function" and isinstance(tool.get("namespace"), str):
            homes[tool["name"]] = tool["namespace"]  # a tool unit (`_search.units`)
        elif tool.get("type") == "function" and tool.get("defer_loading") is True:
            homes[tool["name"]] = tool["name"]
    return homes


def loaded_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """The functions a list of tool definitions loads (namespace members too), in order."""
    names: list[str] = []
    for tool in tools:
        members = tool.get("tools") if tool.get("type") == "namespace" else [tool]
        for member in members if isinstance(members, list) else ():
            if isinstance(member, Mapping) and member.get("type") == "function":
                name = member.get("name")
                if isinstance(name, str) and name not in names:
                    names.append(name)
    return names


def loading_items(messages: Sequence[Message]) -> Iterator[list[Mapping[str, Any]]]:
    """The tool lists of every item in `messages` that loads tools.

    ``tool_search_output`` and ``additional_tools`` items recorded as provider parts, and
    results of our client search rendered as ``tool_search_output``.
    """
    for message in messages:
        for part in message.parts:
            if isinstance(part, ProviderPart) or (
                isinstance(part, ToolResult) and part.provider_data is not None
            ):  # (`_loads` finds nothing in any other part: no call for them)
                tools = _loads(part)
                if tools is not None:
                    yield tools


def _loads(part: Part) -> list[Mapping[str, Any]] | None:
    """The tool list `part` loads when rendered (None: it loads nothing)."""
    if isinstance(part, ProviderPart) and part.provider == FORMAT:
        if part.data.get("type") not in ("tool_search_output", "additional_tools"):
            return None
        raw = part.data.get("tools")
    elif isinstance(part, ToolResult):
        hint = hints(part.provider_data, FORMAT)
        if hint.get("kind") != _search.OUTPUT:
            return None
        raw = hint.get("tools")
    else:
        return None
    return [t for t in raw if isinstance(t, Mapping)] if isinstance(raw, list) else []


def _namespace_of(call: ToolCall) -> str | None:
    """The namespace a recorded Responses call was made in, if any."""
    if call.provider_data is None:
        return None  # not recorded
    extra = hints(call.provider_data, FORMAT).get("extra")
    space = extra.get("namespace") if isinstance(extra, Mapping) else None
    return space if isinstance(space, str) else None


def _loaded_homes(messages: Sequence[Message]) -> dict[str, set[str]]:
    """Namespace -> functions loaded into it by search output / additional tools items."""
    out: dict[str, set[str]] = {}
    for tools in loading_items(messages):
        _add_loads(out, tools)
    return out


def _add_loads(out: dict[str, set[str]], tools: Sequence[Mapping[str, Any]]) -> None:
    for name, space in _namespace_homes(tools).items():
        out.setdefault(space, set()).add(name)
    for tool in tools:
        if tool.get("type") == "function" and isinstance(tool.get("name"), str):
            out.setdefault(tool["name"], set()).add(tool["name"])


def _plain_functions(tools: Sequence[Mapping[str, Any]]) -> set[str]:
    """Functions of `tools` in the default namespace (called without a ``namespace``)."""
    return {
        t["name"]
        for t in tools
        if t.get("type") == "function"
        and isinstance(t.get("name"), str)
        and t.get("defer_loading") is not True
        and t.get("namespace") is None
    }


class Homes:
    """Where a replayed call's function lives, read in input order.

    `tools` declares namespaces (and flat deferred functions); a search output or
    ``additional_tools`` item loads functions into a namespace for the items after it.
    A call made in a namespace that still holds it keeps it; a call whose function lives
    only where an earlier item loaded it (made on another target, or under a strategy or
    mode that did not declare it) takes that namespace: the API has no such function in
    the default namespace.
    """

    def __init__(self, tools: Sequence[Mapping[str, Any]], before: Sequence[Message]) -> None:
        self.declared = _namespace_homes(tools)
        self.plain = _plain_functions(tools)
        self._before = before
        self._seen: dict[str, set[str]] | None = None  # loads so far, built when needed
        self._pending: list[Part] = []

    def see(self, *parts: Part) -> None:
        """`parts` are rendered next (their loads count for the calls after them)."""
        self._pending += parts

    def of(self, call: ToolCall) -> str | None:
        """The namespace `call` is replayed in (None: the default namespace)."""
        home = self.declared.get(call.name)
        space = _namespace_of(call)
        if (space is None or space == home) and (home is not None or call.name in self.plain):
            return home
        seen = self._loaded()
        if space is not None and call.name in seen.get(space, ()):
            return space
        if home is None and call.name not in self.plain:
            holders = sorted(n for n, names in seen.items() if call.name in names)
            return holders[0] if holders else None
        return home

    def settled(self, call: ToolCall) -> bool:
        """Whether `call` goes back as it is whatever was loaded before it (`fit_namespace`).

        Nothing recorded on it, and its function only in the default namespace: `of` is
        None without reading any load.
        """
        return (
            call.provider_data is None
            and call.name in self.plain
            and call.name not in self.declared
        )

    def _loaded(self) -> dict[str, set[str]]:
        if self._seen is None:
            self._seen = _loaded_homes(self._before)
        for part in self._pending:
            tools = _loads(part)
            if tools is not None:
                _add_loads(self._seen, tools)
        self._pending.clear()
        return self._seen


def fit_namespace(call: ToolCall, home: str | None, index: int) -> tuple[ToolCall, str]:
    """`call` carrying `home` as its namespace (None: no namespace), and what changed."""
    if home is None and call.provider_data is None:
        return call, ""  # none recorded, none wanted
    hint = hints(call.provider_data, FORMAT)
    extra = hint.get("extra")
    space = extra.get("namespace") if isinstance(extra, Mapping) else None
    if space == home:
        return call, ""
    data: dict[str, Any] = dict(hint) if hint else {"provider": FORMAT}
    rest = {k: v for k, v in (extra or {}).items() if k != "namespace"}
    if home is not None:
        rest["namespace"] = home
    data["extra"] = rest
    if isinstance(data.get("keys"), list):
        keys = [k for k in data["keys"] if k != "namespace"]
        data["keys"] = [*keys, "namespace"] if home is not None else keys
    fitted = dataclasses.replace(call, provider_data=data)
    if home is None:
        what = f"was made in namespace {space!r}, which this request does not declare"
        return fitted, f"message {index}: call {call.id!r} {what}; sent without it"
    where = f"namespace {home!r}, where this request declares {call.name!r}"
    return fitted, f"message {index}: call {call.id!r} is sent in {where}"


def fit_namespaces(
    messages: Sequence[Message],
    calls: Sequence[ToolCall],
    tools: Sequence[Mapping[str, Any]],
    before: Sequence[Message],
    *,
    offset: int = 0,
) -> tuple[tuple[Message, ...], tuple[Change, ...]]:
    """`messages` with every call in the namespace `Homes` finds for it (`fit_namespace`).

    `calls` are the calls of `messages` (none, or all settled: nothing to read); each
    rewrite is a ``rewrote_reference`` `Change`, `offset` the index of `messages[0]`.
    """
    homes = Homes(tools, before) if calls else None
    if homes is None or all(map(homes.settled, calls)):
        return tuple(messages), ()  # no call whose namespace can change
    out: list[Message] = []
    changes: list[Change] = []
    for i, message in enumerate(messages, start=offset):
        if message.role != "assistant":  # no call here: its loads count from here on
            homes.see(*message.parts)
            out.append(message)
            continue
        parts: list[Part] = []
        for part in message.parts:
            homes.see(part)
            if isinstance(part, ToolCall):
                part, detail = fit_namespace(part, homes.of(part), i)
                if detail:
                    changes.append(
                        Change(kind="rewrote_reference", index=i, call_id=part.id, detail=detail)
                    )
            parts.append(part)
        same = all(map(operator.is_, parts, message.parts))
        out.append(message if same else Message(role=message.role, parts=tuple(parts)))
    return tuple(out), tuple(changes)
