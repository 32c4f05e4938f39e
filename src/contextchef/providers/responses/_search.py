"""Client-executed ``tool_search`` on Responses: our ranker behind OpenAI's search tool.

Follows https://developers.openai.com/api/docs/guides/tools-tool-search ("client-executed
tool search"):

* the search is declared once, as ``{"type": "tool_search", "execution": "client",
  "description", "parameters"}`` (the live API rejects it without a description), never
  also as a function;
* the model's search comes back as a ``tool_search_call`` item with ``execution:
  "client"``, a ``call_id`` and arguments following our ``parameters``; it is a
  `ToolCall` named `SEARCH_NAME` in the IR, so the gate runs our ``tool_search``;
* the answer is a ``tool_search_output`` echoing the ``call_id`` and ``execution:
  "client"``, whose ``tools`` load what was found: the definitions exactly as this
  request's ``tools`` declares them (a function in a ``namespace`` travels inside that
  namespace, so later calls come back in it), as the hosted search's output does. When
  nothing was loaded, the result's text (why nothing matched, or what was wrong with the
  arguments) follows as a developer message: the output item has no text of its own.

Which result answers a search call is decided when the result is first rendered
(`fit_search_results`), from the call's recorded item; the definitions are recorded on
the result then, so the item is replayed unchanged on every later request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._json import thaw
from contextchef.history._messages import Message, Part, ProviderPart, ToolCall, ToolResult
from contextchef.history._normalize import Change
from contextchef.providers._base import apply_hints, hints, object_arguments
from contextchef.providers._call_ids import fitted_id
from contextchef.providers._tool_changes import deferred
from contextchef.tools._tool import CompiledTool

__all__ = [
    "CALL",
    "OUTPUT",
    "SEARCH_NAME",
    "definitions",
    "drop_orphan_outputs",
    "fit_search_results",
    "fitted_searches",
    "render_search_call",
    "render_search_output",
    "search_entry",
]

FORMAT = "responses"
SEARCH_NAME = "tool_search"
"""The name a client-executed search call carries in the IR (our meta-tool's name)."""
CALL = "tool_search_call"
OUTPUT = "tool_search_output"


def search_entry(tool: CompiledTool) -> dict[str, Any]:
    """The client-executed ``tool_search`` entry for our search tool `tool`."""
    return {
        "type": "tool_search",
        "execution": "client",
        "description": tool.description,
        "parameters": thaw(tool.input_schema),
    }


RESPONSES_ID_LIMIT = 64
"""Most characters in a ``call_id`` (the API's 400s: "empty string. Expected a string with
minimum length 1", "string too long. Expected ... maximum length 64"): see `fitted_id`."""


def render_search_call(call: ToolCall, hint: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tool_search_call`` item of a client search `call`.

    Arguments that are not a JSON object (the gate answered that call with an error) go
    as ``{}``, so one bad call never breaks later requests. An id the API refuses (empty,
    too long) is sent as a function call's is (`fitted_id`), its output's alike: a client
    search needs its own ``call_id`` (the tool search guide).
    """
    built = {
        "type": CALL,
        "call_id": fitted_id(call.id, RESPONSES_ID_LIMIT),
        "execution": "client",
        "arguments": object_arguments(call),
        "status": "completed",
    }
    return apply_hints(built, hint)


def render_search_output(result: ToolResult, hint: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_search_output`` item answering a client search (and its text, if needed)."""
    raw = hint.get("tools")
    built = {
        "type": OUTPUT,
        "call_id": fitted_id(result.call_id, RESPONSES_ID_LIMIT),
        "execution": "client",
        "status": "completed",
        "tools": thaw(raw) if isinstance(raw, (list, tuple)) else [],
    }
    items = [apply_hints(built, hint)]
    if not built["tools"] and result.content.strip() and "recorded" not in hint:
        items.append({"type": "message", "role": "developer", "content": result.content})
    return items


def members(entry: Mapping[str, Any]) -> Sequence[Any]:
    """The ``tools`` list of a namespace `entry` (none when it holds no list)."""
    found = entry.get("tools")
    return found if isinstance(found, list) else ()


def definitions(names: Sequence[str], tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The entries of `tools` declaring `names`, namespaced ones inside their namespace.

    In the order of `tools`; a namespace holds only the named members (its name and
    description as declared); names `tools` does not declare are left out, and so are
    tool units (`units`: tools an ``additional_tools`` item already offers).
    """
    wanted = set(names)
    out: list[dict[str, Any]] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        if tool.get("type") == "namespace":
            found = [
                dict(m) for m in members(tool) if isinstance(m, Mapping) and m.get("name") in wanted
            ]
            if found:
                out.append({**tool, "tools": found})
        elif (
            tool.get("type") == "function"
            and tool.get("name") in wanted
            and NAMESPACE_KEY not in tool  # a tool unit an additional_tools item offers
        ):
            out.append(dict(tool))
    return out


def _search_calls(messages: Sequence[Message], ids: set[str]) -> set[str]:
    """Which of the call `ids` are search calls in `messages`.

    Scans from the end and stops once every id is found: results answer recent calls, so
    a steady compile does not walk the whole conversation (call ids are unique in a
    normalized history).
    """
    left, found = set(ids), set()
    for message in reversed(messages):
        if not left:
            break
        for part in message.parts:
            if isinstance(part, ToolCall) and part.id in left:
                left.discard(part.id)
                if hints(part.provider_data, FORMAT).get("kind") == CALL:
                    found.add(part.id)
    return found


def _client_search(tools: Sequence[Mapping[str, Any]]) -> bool:
    return any(
        isinstance(t, Mapping) and t.get("type") == "tool_search" and t.get("execution") == "client"
        for t in tools
    )


def fit_search_results(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]],
    before: Sequence[Message] = (),
) -> tuple[Message, ...]:
    """`messages` with our search calls and their results in the client-search items.

    Where `tools` declares the client-executed search, a call to `SEARCH_NAME` not
    recorded from a Responses item (the host wrote it, or another provider made it) is
    sent as a ``tool_search_call``: a function of that name is not declared. A result
    answering a search call (here or in `before`, as it was sent) becomes a
    ``tool_search_output``; one without recorded definitions gets those of its
    `ToolResult.references` from `tools` (what this request declares), one recorded from
    a ``tool_search_output`` keeps its own.
    """
    searched = any(
        isinstance(p, ToolCall) and p.name == SEARCH_NAME for m in messages for p in m.parts
    )
    answered: set[str] = set()  # results here answering calls in `before`
    if before:
        answered = {p.call_id for m in messages for p in m.parts if isinstance(p, ToolResult)}
        answered -= {p.id for m in messages for p in m.parts if isinstance(p, ToolCall)}
    calls = _search_calls(before, answered)  # the calls in `messages` are seen below
    if not searched and not calls:
        return tuple(messages)  # no search call to answer: nothing changes (nor scans `tools`)
    client = _client_search(tools)
    out: list[Message] = []
    for message in messages:
        parts: list[Part] = []
        for part in message.parts:
            if isinstance(part, ToolCall) and part.name == SEARCH_NAME:
                hint = hints(part.provider_data, FORMAT)
                if client and not hint:
                    data: dict[str, Any] = {"provider": FORMAT, "kind": CALL}
                    part = dataclasses.replace(part, provider_data=data)
                if hints(part.provider_data, FORMAT).get("kind") == CALL:
                    calls.add(part.id)
            elif isinstance(part, ToolResult) and part.call_id in calls:
                hint = hints(part.provider_data, FORMAT)
                if hint.get("kind") != OUTPUT:
                    data = {
                        **(dict(hint) if hint else {"provider": FORMAT}),
                        "kind": OUTPUT,
                        "tools": definitions(part.references, tools),
                    }
                    part = dataclasses.replace(part, provider_data=data)
            parts.append(part)
        changed = any(a is not b for a, b in zip(parts, message.parts, strict=True))
        out.append(Message(role=message.role, parts=tuple(parts)) if changed else message)
    return tuple(out)


def _raw_search_call(part: Part) -> str | None:
    """The ``call_id`` of a client ``tool_search_call`` kept as a provider part, or None.

    A host that builds the item by hand (or a history restored from one) holds it as a
    `ProviderPart`, not as the `ToolCall` an ingested reply gives; a valid one (`keeps`
    left out any other, `_items.item_problem`) is a search call all the same, and the
    ``tool_search_output`` echoing its ``call_id`` answers it (the tool search guide).
    """
    if not (isinstance(part, ProviderPart) and part.provider == FORMAT):
        return None
    data, call_id = part.data, part.data.get("call_id")
    client = data.get("type") == CALL and data.get("execution") == "client"
    return call_id if client and isinstance(call_id, str) else None


def _search_call_id(part: Part) -> str | None:
    """The id of the search call `part` is (ingested, or a valid provider item), or None."""
    if isinstance(part, ToolCall):
        return part.id if part.name == SEARCH_NAME else None
    return _raw_search_call(part)


def _orphan_output(part: Part, calls: set[str]) -> bool:
    """A client ``tool_search_output`` item answering no search call before it."""
    if not (isinstance(part, ProviderPart) and part.provider == FORMAT):
        return False
    data = part.data
    call_id = data.get("call_id")  # (a string or null: `keeps` left out any other)
    return (
        data.get("type") == OUTPUT
        and data.get("execution") == "client"
        and not (isinstance(call_id, str) and call_id in calls)
    )


def fitted_searches(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]],
    before: Sequence[Message] = (),
    *,
    offset: int = 0,
) -> tuple[tuple[Message, ...], tuple[Change, ...], list[ToolCall]]:
    """`drop_orphan_outputs`, then `fit_search_results`, and the calls of the messages left.

    One pass over the parts finds whether either step has anything to do: with no
    provider part, no `SEARCH_NAME` call and nothing sent `before` (a new conversation's
    usual history), neither changes anything, and the calls found are those.
    """
    calls: list[ToolCall] = []
    provided = False
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCall):
                calls.append(part)
            provided = provided or isinstance(part, ProviderPart)
    if not provided and not before and all(c.name != SEARCH_NAME for c in calls):
        return tuple(messages), (), calls  # (each step's own first test, found in this pass)
    messages, dropped = drop_orphan_outputs(messages, before, offset=offset)
    messages = fit_search_results(messages, tools, before)
    return messages, dropped, [p for m in messages for p in m.parts if isinstance(p, ToolCall)]


def drop_orphan_outputs(
    messages: Sequence[Message], before: Sequence[Message] = (), *, offset: int = 0
) -> tuple[tuple[Message, ...], tuple[Change, ...]]:
    """`messages` without client ``tool_search_output`` items that answer no search call.

    A client output echoes the ``call_id`` of a client ``tool_search_call`` before it
    (the tool search guide: an ingested call, or the item kept whole, `_raw_search_call`);
    one whose call is missing or comes after it (a cut or
    hand-edited history) is refused with "no tool call found" on every later request,
    so it is left out and reported (``dropped_orphan_result``). A matched output is
    parsed as our search's `ToolResult`; only an unmatched one stays a provider item.
    """
    if not any(
        isinstance(p, ProviderPart) and _orphan_output(p, set()) for m in messages for p in m.parts
    ):
        return tuple(messages), ()
    calls = {found for m in before for p in m.parts if (found := _search_call_id(p))}
    out: list[Message] = []
    changes: list[Change] = []
    for i, message in enumerate(messages, start=offset):
        parts: list[Part] = []
        for part in message.parts:
            found = _search_call_id(part)
            if found is not None:
                calls.add(found)
            if _orphan_output(part, calls):
                call_id = part.data.get("call_id") if isinstance(part, ProviderPart) else None
                changes.append(
                    Change(
                        kind="dropped_orphan_result",
                        index=i,
                        call_id=call_id if isinstance(call_id, str) else None,
                        detail=f"message {i}: a client tool_search_output for {call_id!r} "
                        "answers no tool_search_call before it; left out",
                    )
                )
                continue
            parts.append(part)
        if len(parts) == len(message.parts):
            out.append(message)
        elif parts:
            out.append(Message(role=message.role, parts=tuple(parts)))
    return tuple(out), tuple(changes)


NAMESPACE_KEY = "namespace"
"""The key a tool unit (`units`) carries its namespace under; not sent in a definition."""


def units(entries: Sequence[Any]) -> list[Any]:
    """One entry per function: namespace members carry ``namespace`` (their namespace)."""
    out: list[Any] = []
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("type") == "namespace":
            for member in members(entry):
                if isinstance(member, Mapping) and isinstance(member.get("name"), str):
                    out.append({**member, NAMESPACE_KEY: entry.get("name")})
        else:
            out.append(entry)
    return out


def additional_tools(define: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The ``additional_tools`` item (role ``developer``) defining the tool units `define`.

    A unit from a namespace goes inside a namespace of that name, so calls to it come
    back in the namespace ``tools`` declares it in; ``defer_loading`` is dropped (the
    tool is offered from here on). None when `define` is empty.
    """
    out: list[dict[str, Any]] = []
    spaces: dict[str, dict[str, Any]] = {}
    for unit in define:
        function = {k: v for k, v in unit.items() if k not in (NAMESPACE_KEY, "defer_loading")}
        space = unit.get(NAMESPACE_KEY)
        if not isinstance(space, str):
            out.append(function)
            continue
        holder = spaces.get(space)
        if holder is None:
            holder = spaces[space] = {
                "type": "namespace",
                "name": space,
                "description": f"More tools of the {space} group",
                "tools": [],
            }
            out.append(holder)
        holder["tools"].append(function)
    if not out:
        return None
    return {"type": "additional_tools", "role": "developer", "tools": out}


def tools_at_start(entries: Sequence[Any]) -> list[Any]:
    """What the model sees of a ``tools`` array (OpenAI's tool search guide).

    A deferred function shows its name and description; a namespace its own name and
    description, and any function in it that is not deferred.
    """
    out: list[Any] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            out.append(entry)
        elif isinstance(entry.get("tools"), list):
            shown = {k: entry[k] for k in ("name", "description") if k in entry}
            immediate = [f for f in entry["tools"] if not (isinstance(f, Mapping) and deferred(f))]
            out.append({**shown, "tools": immediate} if immediate else shown)
        elif deferred(entry):
            out.append({k: entry[k] for k in ("name", "description") if k in entry})
        else:
            out.append(entry)
    return out
