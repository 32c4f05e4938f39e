"""A host's tool choice in ``extra``: a shape its API takes, naming only tools it offers.

``compile(extra=...)`` copies the fields that choose tools into the payload as given:
Anthropic, Chat Completions and Responses ``tool_choice``, Gemini ``tool_config``,
Interactions ``generation_config.tool_choice``. Each wire package declares its own facts
in a `ToolChoiceRules` (``providers/<wire>/_choice.py``, carried by its `WireReader` as
``choice``): which ``extra`` fields hold its choice, the shapes its SDK's request type
takes, the tool names a choice forces and the tools a payload declares. This module holds
what is shared: the refusals and their messages, and the small shape checks the rules are
written with. `check_tool_choice` refuses, in this order:

1. a choice in a field of another API that this one does not have (Gemini has no
   ``tool_choice``; only Gemini has ``tool_config``; only Interactions has
   ``generation_config``), which its SDK refuses too;
2. a shape the wire's SDK request type refuses (``"any"`` on Anthropic, Chat's nested
   ``function`` object on Responses, a Gemini ``mode`` that is no
   ``FunctionCallingConfigMode``). Keys a choice object does not define are refused only
   where the SDK refuses them (google-genai models forbid them; the Anthropic and OpenAI
   TypedDicts and the Interactions models let them through);
3. a choice naming a tool the request does not offer. The live APIs refuse a named
   choice of a tool ``tools`` does not declare, and a deferred tool cannot be forced before
   it was revealed: research note provider-native-disclosure.md §6 rule 19 ("Never force
   ``tool_choice`` onto a hidden tool"; pydantic-ai: "No tool in tool_choice is currently
   available") and rule 24 ("no named ``tool_choice`` on deferred-only tools or namespace
   names", openai-agents). A tool the gate would refuse whatever the arguments (hidden by a
   mode, blocked, withdrawn, of a skill not loaded) is refused too: forcing it forces a
   call that cannot run.

Each is a `UsageError` naming the ``extra`` field; ``extra`` is never changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from contextchef._errors import UsageError, shown
from contextchef.providers._casing import camel as camel_case
from contextchef.providers._tool_changes import ToolState

__all__ = [
    "Check",
    "Forced",
    "ToolChoiceRules",
    "ToolUnit",
    "array",
    "at",
    "boolean",
    "check_tool_choice",
    "fields",
    "kind",
    "literal",
    "nullable",
    "obj",
    "string",
    "strings_or",
    "tagged",
    "unchecked",
]

Check = Callable[[object, str], "str | None"]
"""``(value, where) -> what is wrong with it`` (naming `where`), or None when the SDK type
takes it."""


class ToolUnit(NamedTuple):
    """A tool a payload declares: name, ``defer_loading``, namespace, kind.

    The kind is where a choice names one (OpenAI ``function`` / ``custom``); None: any.
    """

    name: str
    deferred: bool = False
    namespace: str | None = None
    kind: str | None = None


class Forced(NamedTuple):
    """A tool a choice names: where in ``extra``, the name, and the kind it names (or None)."""

    where: str
    name: object
    kind: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolChoiceRules:
    """One wire's tool-choice facts, declared in its package (`WireReader.choice`).

    Attributes:
        api: The API's name in messages (``Anthropic Messages``).
        fields: The ``extra`` fields that hold its choice (Gemini: ``tool_config`` and
            ``toolConfig``).
        strays: Dotted ``extra`` fields that hold a choice on another API and are no field
            of this one's request (refused: its SDK refuses them).
        takes: The shapes it takes, for messages, with the SDK type they follow.
        shape: Per field of `fields`, the `Check` of its value (``extra[field]``).
        named: ``extra`` -> each tool its choice forces (`Forced`: its dotted location,
            name, and kind where the wire has kinds; read once `shape` passed).
        tools: A payload -> the tools it declares (`ToolUnit`).
        clash: ``extra`` -> why its choice cannot go with another of its fields (Anthropic:
            a forced tool with thinking on), or None.
    """

    api: str
    fields: tuple[str, ...]
    strays: tuple[str, ...]
    takes: str
    shape: Mapping[str, Check]
    named: Callable[[Mapping[str, Any]], Iterable[Forced]]
    tools: Callable[[Mapping[str, Any]], Iterable[ToolUnit]]
    clash: Callable[[Mapping[str, Any]], str | None] = lambda extra: None


# -- shape checks: each a `Check`, composed by the wire packages -------------------------


def kind(value: object) -> str:
    """What a JSON value is, for messages (``a string``, ``an object``...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    for types, name in (
        (str, "a string"),
        (int, "an integer"),
        (float, "a number"),
        (Mapping, "an object"),
        ((list, tuple), "a list"),
    ):
        if isinstance(value, types):
            return name
    return f"a {type(value).__name__}"


def at(value: object, *keys: str) -> object:
    """``value[k0][k1]...``: None where a step is missing or not an object."""
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def unchecked(value: object, where: str) -> str | None:
    """Anything: a field the choice does not depend on, left to the SDK."""
    return None


def string(value: object, where: str) -> str | None:
    """A ``str``."""
    return None if isinstance(value, str) else f"{where} must be a string, got {kind(value)}"


def boolean(value: object, where: str) -> str | None:
    """A ``bool`` (not 0 / 1: strict, as the SDK type reads it)."""
    return None if isinstance(value, bool) else f"{where} must be true or false, got {kind(value)}"


def literal(*allowed: str, fold: Callable[[str], str] | None = None) -> Check:
    """One of the strings `allowed` (compared after `fold`: google-genai enums ignore case)."""

    def check(value: object, where: str) -> str | None:
        if isinstance(value, str) and (fold(value) if fold else value) in allowed:
            return None
        return f"{where} is {shown(value, 60)}, not one of {_quoted(allowed)}"

    return check


def nullable(inner: Check) -> Check:
    """None, or what `inner` takes (an ``Optional`` field)."""
    return lambda value, where: None if value is None else inner(value, where)


def array(item: Check) -> Check:
    """A list (or tuple) whose every item `item` takes."""

    def check(value: object, where: str) -> str | None:
        if not isinstance(value, (list, tuple)):
            return f"{where} must be a list, got {kind(value)}"
        return next(
            (p for k, v in enumerate(value) if (p := item(v, f"{where}.{k}")) is not None), None
        )

    return check


def obj(
    known: Mapping[str, Check],
    required: Sequence[str] = (),
    *,
    closed: str | None = None,
    camel: bool = False,
) -> Check:
    """An object: its `required` keys present, each key of `known` it has taken by its check.

    Args:
        known: The keys the SDK type defines -> their checks.
        required: Those it requires.
        closed: The SDK type's name when it refuses other keys (google-genai models);
            None: other keys pass, as the TypedDicts let them.
        camel: Each key may also be given in camelCase (google-genai aliases).
    """

    def check(value: object, where: str) -> str | None:
        if not isinstance(value, Mapping):
            return f"{where} must be an object, got {kind(value)}"
        names = {camel_case(k) if camel else k: k for k in known} | {k: k for k in known}
        twice = [
            k
            for k in known
            if camel and camel_case(k) != k and k in value and camel_case(k) in value
        ]
        if twice:  # the SDK's model takes one spelling of a field
            return f"{where} has both {twice[0]!r} and {camel_case(twice[0])!r}: give one"
        for key in required:
            if key not in value and (not camel or camel_case(key) not in value):
                return f"{where} has no {key!r}, which it requires"
        for key, item in value.items():
            if key in names:
                problem = known[names[key]](item, f"{where}.{key}")
                if problem is not None:
                    return problem
            elif closed is not None:
                return (
                    f"{where} has the key {shown(key, 40)}, which {closed} does not take "
                    f"(it takes {_quoted(tuple(known))})"
                )
        return None

    return check


def tagged(key: str, variants: Mapping[str, Check], strings: Sequence[str] = ()) -> Check:
    """One of `strings`, or an object whose `key` picks its shape among `variants`."""

    def check(value: object, where: str) -> str | None:
        if isinstance(value, str) and strings:
            return None if value in strings else f"{where} is {shown(value, 60)}{_not(strings)}"
        if not isinstance(value, Mapping):
            return f"{where} must be {_either(strings)}an object, got {kind(value)}"
        tag = value.get(key)
        if key not in value:
            return f"{where} has no {key!r}"
        if not isinstance(tag, str) or tag not in variants:
            return f"{where}.{key} is {shown(tag, 60)}{_not(tuple(variants))}"
        return variants[tag](value, where)

    return check


def strings_or(strings: Sequence[str], inner: Check) -> Check:
    """One of `strings`, or what `inner` takes (an object)."""

    def check(value: object, where: str) -> str | None:
        if isinstance(value, str):
            return None if value in strings else f"{where} is {shown(value, 60)}{_not(strings)}"
        if not isinstance(value, Mapping):
            return f"{where} must be {_either(strings)}an object, got {kind(value)}"
        return inner(value, where)

    return check


def fields(value: object, where: str, *names: str) -> Iterator[tuple[str, Any]]:
    """(``where.name``, or ``name`` when `where` is empty; value) of each of `names` in `value`."""
    if isinstance(value, Mapping):
        for name in names:
            if name in value:
                yield f"{where}.{name}" if where else name, value[name]


def _quoted(values: Sequence[str]) -> str:
    return ", ".join(repr(v) for v in values)


def _not(allowed: Sequence[str]) -> str:
    return f", not one of {_quoted(allowed)}"


def _either(strings: Sequence[str]) -> str:
    return f"one of {_quoted(strings)} or " if strings else ""


# -- the refusals ---------------------------------------------------------------------


def check_tool_choice(
    rules: ToolChoiceRules,
    extra: Mapping[str, Any],
    payload: Mapping[str, Any],
    state: ToolState | None = None,
    refused: Callable[[str], str | None] = lambda name: None,
) -> None:
    """Refuse a tool choice in `extra` its wire does not take, or naming a tool not offered.

    Args:
        rules: The wire's facts (its `WireReader.choice`).
        extra: The host's extra request fields (not changed).
        payload: The request built from them.
        state: What the requests sent revealed (a deferred tool it revealed may be
            forced); None: nothing.
        refused: Why the gate refuses a tool whatever the arguments, or None.

    Raises:
        UsageError: A choice in a field this API does not have, or of a shape its SDK
            type refuses (the message quotes the field and what it holds, and lists the
            shapes it takes); or a named tool that is not declared, declared only
            deferred and not revealed, or refused by the gate (the message names it and
            lists the tools this request offers).
    """
    for stray in rules.strays:
        path = stray.split(".")
        given = at(extra, *path)
        if path[0] in extra and (len(path) == 1 or given is not None):
            raise UsageError(
                f"extra field {stray!r} holds {shown(given, 120)}, a tool choice in another "
                f"API's form; {rules.api} has no such request field and takes {rules.takes}"
            )
    held = {f: extra[f] for f in rules.fields if f in extra}
    if len(held) > 1:  # one request field spelled two ways (snake and camel case)
        first, second = list(held)[:2]
        raise UsageError(
            f"extra field {first!r} and field {second!r} are one {rules.api} field given "
            f"twice: give one; {rules.api} takes {rules.takes}"
        )
    for field, value in held.items():
        problem = rules.shape[field](value, field)
        if problem is not None:
            raise UsageError(
                f"extra field {field!r} holds {shown(value, 120)}, which {rules.api} does "
                f"not take: {problem}; {rules.api} takes {rules.takes}"
            )
    clash = rules.clash(extra) if held else None
    if clash is not None:
        raise UsageError(f"extra field {next(iter(held))!r}: {clash}")
    forced = list(rules.named(held))
    if not forced:
        return
    units = list(rules.tools(payload))
    declared = {u.name: u.deferred for u in units}
    inside = {u.name: u.namespace for u in units if u.namespace is not None}
    state = state or ToolState()
    offered = sorted(
        n for n, hidden in declared.items() if state.offered(n, not hidden) and n not in inside
    )
    kinds = {u.name: u.kind for u in units}
    for where, name, kind in forced:
        why = _why(name, declared, state, refused)
        its = kinds.get(name) if isinstance(name, str) else None
        if why is None and kind is not None and its not in (None, kind):
            why = f"which is a {its} tool: name it as one (type {its!r}), not as {kind!r}"
        if isinstance(name, str) and name in inside and why is None:
            why = (
                f"a function of namespace {shown(inside[name], 60)} (a named tool_choice "
                "takes a top-level function only)"
            )
        if why is not None and name is None:  # nothing at the place this API names it
            raise UsageError(
                f"extra {where} holds no tool name: a tool named in another API's shape? "
                f"{rules.api} takes {rules.takes}"
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
