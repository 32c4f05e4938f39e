"""The model cannot call a deferred tool nothing revealed: scripted calls checked (fakes).

A tool declared with ``defer_loading: true`` is withheld from the model until something
reveals it, so the model cannot call it before (research note
provider-native-disclosure.md, §1.1: "If true, tool will not be included in initial
system prompt. Only loaded when returned via tool_reference from tool search", the
anthropic SDK's ``defer_loading`` docstring; §1.4: "keeps it withheld until a
``tool_addition`` block surfaces it"; §2.1, OpenAI: the model can call what a
``tool_search_output`` loaded, and §6 rule 28: never a deferral flag without a working
reveal). What reveals a tool:

* Anthropic: a ``tool_reference`` in a ``tool_result``'s content (custom search) or in a
  ``tool_search_tool_result`` (server search), a ``tool_addition`` in a ``role: "system"``
  message or in a ``compaction`` block's ``tool_changes``, or a server search earlier in
  the same reply;
* Responses: a function listed by a ``tool_search_output`` or ``additional_tools`` input
  item (a namespace's members too), or found by a hosted search earlier in the same reply.

`FakeAnthropic` and `FakeResponses` check every scripted call before answering: a call to
a deferred tool nothing revealed is refused with HTTP 400 (rule ``tool_not_revealed``,
recorded as a `Violation`) and the turn stays queued, as a model that was never shown the
tool could not have made it. Stricter than the live APIs on purpose: ``gpt-5.4`` was seen
calling a deferred function before loading it (§2.1): a test sends such a call with `raw`,
or sets ``refuse_unrevealed = False`` on the fake. The
history a request replays is not checked for such calls: a call the model made anyway is
answered by the gate's denial and must stay sendable.
Skipped on Responses with ``previous_response_id`` (the earlier items are not in the body).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef import UsageError
from contextchef.testing._script import Turn

__all__ = [
    "CallNotRevealed",
    "anthropic_revealed",
    "anthropic_unrevealed",
    "responses_loaded",
    "responses_unrevealed",
]


class CallNotRevealed(UsageError):
    """A scripted call names a deferred tool the request it answers never revealed.

    The fake answers HTTP 400 with this message and records a `Violation` (rule
    ``tool_not_revealed``); it never escapes the fake.
    """


def _dicts(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _names(items: object, key: str) -> Iterator[str]:
    for item in _dicts(items):
        if item.get("type") == "tool_reference" and isinstance(item.get(key), str):
            yield item[key]


def _added(blocks: object) -> Iterator[str]:
    """The tools ``tool_addition`` blocks surface, by reference or by definition."""
    for block in _dicts(blocks):
        change = block.get("tool")
        if block.get("type") != "tool_addition" or not isinstance(change, dict):
            continue
        definition = change.get("definition")
        name = definition.get("name") if isinstance(definition, dict) else change.get("name")
        if isinstance(name, str):
            yield name


def anthropic_revealed(body: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    for message in _dicts(body.get("messages")):
        if message.get("role") == "system":
            found.update(_added(message.get("content")))
        for block in _dicts(message.get("content")):
            kind, content = block.get("type"), block.get("content")
            if kind == "tool_result":
                found.update(_names(content, "tool_name"))
            elif kind == "tool_search_tool_result" and isinstance(content, dict):
                found.update(_names(content.get("tool_references"), "tool_name"))
            elif kind == "compaction":
                found.update(_added(block.get("tool_changes")))
    return found


def _refusal(names: Sequence[str], how: str) -> str:
    listed = ", ".join(repr(n) for n in names)
    return (
        f"the scripted turn calls {listed}, declared with defer_loading: true, which nothing "
        f"before the call revealed ({how}); the model cannot call a deferred tool it was not "
        "shown (research note provider-native-disclosure.md §1.1, §2.1, rule 28)"
    )


def anthropic_unrevealed(turn: Turn, body: Mapping[str, Any]) -> None:
    """Refuse `turn` when it calls a deferred tool the request `body` never revealed.

    Raises:
        CallNotRevealed: The names, and what would have revealed them.
    """
    deferred = {
        t["name"]
        for t in _dicts(body.get("tools"))
        if t.get("defer_loading") is True and isinstance(t.get("name"), str)
    }
    called = [c.name for c in turn.calls if c.name in deferred]
    if not called:
        return
    revealed = anthropic_revealed(body)
    revealed.update(n for s in turn.searches if s.error is None for n in s.found)
    hidden = sorted({n for n in called if n not in revealed})
    if hidden:
        raise CallNotRevealed(
            _refusal(
                hidden,
                "no tool_reference in a tool_result or tool search result, no tool_addition",
            )
        )


def _members(tools: object) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """(function, its namespace or None) for every function a tool list declares."""
    for tool in _dicts(tools):
        if tool.get("type") == "namespace":
            yield from ((m, tool) for m in _dicts(tool.get("tools")))
        else:
            yield tool, None


def _loaded(tools: object) -> Iterator[str]:
    for member, _ in _members(tools):
        if isinstance(member.get("name"), str):
            yield member["name"]


def responses_loaded(body: Mapping[str, Any]) -> set[str]:
    """The functions a Responses request's input items load (see the module docstring)."""
    loaded: set[str] = set()
    for item in _dicts(body.get("input")):
        if item.get("type") in ("tool_search_output", "additional_tools"):
            loaded.update(_loaded(item.get("tools")))
    return loaded


def responses_unrevealed(turn: Turn, body: Mapping[str, Any]) -> None:
    """Refuse `turn` when it calls a deferred function the request `body` never loaded.

    A hosted search in the turn loads the whole entry a found function lives in (its
    namespace), as `contextchef.testing._search.responses_search_items` answers it.

    Raises:
        CallNotRevealed: The names, and what would have loaded them.
    """
    if body.get("previous_response_id") is not None:
        return
    members = list(_members(body.get("tools")))
    deferred = {
        m["name"]: space
        for m, space in members
        if m.get("defer_loading") is True and isinstance(m.get("name"), str)
    }
    called = [c.name for c in turn.calls if c.name in deferred]
    if not called:
        return
    revealed = responses_loaded(body)
    for name in (n for s in turn.searches for n in s.found if n in deferred):
        space = deferred[name]
        revealed.update(_loaded(space.get("tools")) if space is not None else (name,))
    hidden = sorted({n for n in called if n not in revealed})
    if hidden:
        raise CallNotRevealed(
            _refusal(hidden, "no tool_search_output or additional_tools item loaded it")
        )
