"""A named ``tool_choice`` must name a tool the request offers: one rule per wire (fakes).

The live APIs refuse a forced choice of a tool the request's ``tools`` does not declare:
Anthropic ``{"type": "tool", "name": N}`` "forces Claude to use a particular tool"
(https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use,
"Forcing tool use") among the tools given; OpenAI Chat Completions and Responses name a
function of ``tools`` (https://platform.openai.com/docs/guides/function-calling, "Tool
choice"); Gemini's ``allowed_function_names`` restricts "which declared functions may be
called" (research note provider-native-disclosure.md §3.1). A deferred tool nothing
revealed cannot be forced either (§6 rules 19 and 24: never force ``tool_choice`` onto a
hidden tool; no named choice of a deferred-only tool), which these rules check the way
`contextchef.testing._reveals` reads reveals (Anthropic, Responses).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._records import RecordedRequest
from contextchef.testing._reveals import anthropic_revealed, responses_loaded

__all__ = [
    "anthropic_thinking_choice_not_forced",
    "anthropic_tool_choice_declared",
    "chat_tool_choice_declared",
    "gemini_tool_choice_declared",
    "interactions_tool_choice_declared",
    "responses_tool_choice_declared",
]

_Body = Mapping[str, Any]
_Earlier = Sequence[RecordedRequest]


def _dicts(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _problem(where: str, name: object, why: str) -> str:
    return f"{where}: tool_choice names {name!r}, {why}; name a tool declared in tools"


def anthropic_tool_choice_declared(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``tool_choice: {"type": "tool", "name": N}``: N is in ``tools``, and revealed if deferred."""
    choice = body.get("tool_choice")
    if not (isinstance(choice, dict) and choice.get("type") == "tool"):
        return
    name = choice.get("name")
    deferred = {t.get("name"): t.get("defer_loading") is True for t in _dicts(body.get("tools"))}
    if name not in deferred:
        yield _problem("tool_choice.name", name, "which is not in tools")
    elif deferred[name] and name not in anthropic_revealed(body):
        yield _problem("tool_choice.name", name, "declared with defer_loading and not revealed")


def anthropic_thinking_choice_not_forced(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """With thinking on, ``tool_choice`` may not force a tool (``any`` or ``tool``).

    "Thinking isn't compatible with ... forced tool use" (build-with-claude/extended-thinking,
    "Feature compatibility"): only ``auto`` and ``none`` go with it.
    """
    thinking, choice = body.get("thinking"), body.get("tool_choice")
    on = isinstance(thinking, dict) and thinking.get("type") not in (None, "disabled")
    if on and isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        yield "Thinking may not be enabled when tool_choice forces tool use."


def _openai_named(choice: object, where: str) -> Iterator[tuple[str, str, object]]:
    """(location, kind, name) of each tool a Chat or Responses ``tool_choice`` names.

    The kind is ``function`` or ``custom``; Chat nests the name under it (``{"type":
    "custom", "custom": {"name": N}}``), Responses writes it flat (``{"type": "custom",
    "name": N}``).
    """
    if not isinstance(choice, dict):
        return
    kind = choice.get("type")
    if kind in ("function", "custom"):
        inner = choice.get(kind)
        if isinstance(inner, dict):
            yield f"{where}.{kind}.name", str(kind), inner.get("name")
        else:
            yield f"{where}.name", str(kind), choice.get("name")
    elif kind == "allowed_tools":
        inner = choice.get("allowed_tools", choice)
        tools = inner.get("tools") if isinstance(inner, dict) else None
        for k, tool in enumerate(_dicts(tools)):
            yield from _openai_named(tool, f"{where}.tools.{k}")


def chat_tool_choice_declared(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A named ``tool_choice`` (or ``allowed_tools``) names a tool of ``tools`` of its kind."""
    declared = {
        (t.get("type"), t[t["type"]].get("name"))
        for t in _dicts(body.get("tools"))
        if t.get("type") in ("function", "custom") and isinstance(t.get(t["type"]), dict)
    }
    for where, kind, name in _openai_named(body.get("tool_choice"), "tool_choice"):
        if (kind, name) not in declared:
            yield _problem(where, name, f"which is not a {kind} tool in tools")


def responses_tool_choice_declared(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A named ``tool_choice`` names a top-level tool of its kind, loaded if deferred.

    Not a namespace's member nor a namespace (openai-agents refuses both; research note
    §2.3); a deferred one only once a ``tool_search_output`` / ``additional_tools`` item
    loaded it (skipped with ``previous_response_id``: those items are not in the body).
    """
    top = {
        t.get("name"): (t.get("type"), t.get("defer_loading") is True)
        for t in _dicts(body.get("tools"))
        if t.get("type") in ("function", "custom")
    }
    chained = body.get("previous_response_id") is not None
    for where, kind, name in _openai_named(body.get("tool_choice"), "tool_choice"):
        if name not in top or top[name][0] != kind:
            yield _problem(where, name, f"which is not a top-level {kind} tool in tools")
        elif top[name][1] and not chained and name not in responses_loaded(body):
            yield _problem(where, name, "declared with defer_loading and not loaded")


def _key(value: object, camel: str, snake: str) -> Any:
    return value.get(camel, value.get(snake)) if isinstance(value, dict) else None


def gemini_tool_choice_declared(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``toolConfig.functionCallingConfig.allowedFunctionNames`` are declared functions."""
    config = _key(
        _key(body, "toolConfig", "tool_config"), "functionCallingConfig", "function_calling_config"
    )
    calling = config if isinstance(config, dict) else {}
    names = _key(calling, "allowedFunctionNames", "allowed_function_names")
    declared = {
        _key(d, "name", "name")
        for tool in _dicts(body.get("tools"))
        for d in _dicts(_key(tool, "functionDeclarations", "function_declarations"))
    }
    for k, name in enumerate(names if isinstance(names, list) else ()):
        if name not in declared:
            where = f"toolConfig.functionCallingConfig.allowedFunctionNames[{k}]"
            yield _problem(where, name, "which is not a declared function")


def interactions_tool_choice_declared(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``generation_config.tool_choice.allowed_tools.tools`` name declared functions.

    research note gemini-interactions.md: ``tool_choice`` is ``auto`` / ``any`` / ``none``
    / ``validated`` or ``{"allowed_tools": {"mode", "tools": [<function names>]}}``.
    Chained requests (``previous_interaction_id``) are skipped: their tools may be held.
    """
    if body.get("previous_interaction_id") is not None:
        return
    config = body.get("generation_config")
    choice = config.get("tool_choice") if isinstance(config, dict) else None
    allowed = choice.get("allowed_tools") if isinstance(choice, dict) else None
    names = allowed.get("tools") if isinstance(allowed, dict) else None
    declared = {t.get("name") for t in _dicts(body.get("tools")) if t.get("type") == "function"}
    for k, name in enumerate(names if isinstance(names, list) else ()):
        if name not in declared:
            where = f"generation_config.tool_choice.allowed_tools.tools[{k}]"
            yield _problem(where, name, "which is not a declared function")
