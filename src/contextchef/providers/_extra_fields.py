"""The request fields ``compile(extra=...)`` adds: refused where the wire's SDK refuses them.

``extra`` is copied into the payload as given, so a field the SDK's request type does
not take made every SDK call fail after a compile that went through (break-it 33 #7:
Gemini's ``generation_config``, the REST and Interactions spelling, or ``metadata``, and
google-genai's pydantic ``ValidationError``; on Anthropic, Chat Completions and
Responses a typo or another API's name, ``create() got an unexpected keyword
argument``). Each wire package declares which fields its request takes in an
`ExtraFields` (``providers/<wire>/_fields.py``, carried by its `WireReader` as
``fields``), as it declares its tool choice in a `ToolChoiceRules`; this module holds
the shared check, `check_extra`, which compile runs on every request:

1. the tool choice (`check_tool_choice`: its messages name the choice's shapes);
2. a field the request type does not define (`ExtraFields.names`; the installed SDK's
   own field set where it imports, else the set the wire declares; a name the wire
   declares with `ExtraFields.declared` passes without importing the SDK), with a hint
   for another API's spelling, else the nearest names it takes, and the ones it takes;
3. a value the SDK's request model refuses (`ExtraFields.validate`: google-genai's
   pydantic models, nested ones included, where the SDK imports; the TypedDict SDKs,
   anthropic and openai, do not check values, and neither does this).

Each is a `UsageError` naming the ``extra`` field; ``extra`` is never changed.
"""

from __future__ import annotations

import importlib
import json
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextchef._cache import lru_cache
from contextchef._errors import UsageError, shown
from contextchef._json import canonical_dumps, canonical_value
from contextchef.providers._casing import snake
from contextchef.providers._tool_changes import ToolState
from contextchef.providers._tool_choice import ToolChoiceRules, check_tool_choice

__all__ = [
    "CALL_OPTIONS",
    "EXTRA_BODY",
    "ExtraFields",
    "check_extra",
    "model_problem",
    "sdk_attribute",
    "sdk_keys",
]

CALL_OPTIONS = ("extra_body", "extra_headers", "extra_query", "timeout")
"""The per-call options every ``create`` of anthropic (2.17.0) and openai (3.63.0) takes
besides the request's fields: ``extra_body`` adds JSON fields the SDK does not define
(the way to send a field newer than the installed SDK), ``extra_headers`` and
``extra_query`` add to the HTTP request, ``timeout`` overrides the client's."""

EXTRA_BODY = (
    "a field the API takes but the installed SDK does not define goes inside extra_body "
    "(extra={'extra_body': {...}})"
)
"""`ExtraFields.escape` of the wires whose SDK call takes ``extra_body``."""


@dataclass(frozen=True, kw_only=True)
class ExtraFields:
    """One wire's request fields, declared in its package (`WireReader.fields`).

    Attributes:
        api: The API's name in messages (``Gemini generateContent``).
        request: Where ``extra`` goes and the SDK type that reads it, for messages.
        model: The SDK's request model that `validate` asks, for messages.
        names: The field names the request takes (aliases included): the installed
            SDK's where it imports, else the wire's declared list.
        declared: Names that pass without asking `names` (which imports the SDK, a
            one-off cost in time and memory a compile whose fields are all declared
            then never pays): the wire's declared list, where only names are checked.
        hints: A field of another API or spelling -> what to give instead.
        escape: Where a field the API takes but the installed SDK does not define goes
            (told with a refused name that has no hint), or "" when there is none.
        validate: ``extra`` -> (the field, what the SDK's request model refuses in it),
            or None when it takes it (or no SDK is importable).
    """

    api: str
    request: str
    model: str = ""
    names: Callable[[], Collection[str]]
    declared: Collection[str] = ()
    hints: Mapping[str, str] = field(default_factory=dict)
    escape: str = ""
    validate: Callable[[Mapping[str, Any]], tuple[str, str] | None] = lambda extra: None
    holder: Callable[[Mapping[str, Any]], Any] = lambda payload: payload


def check_extra(
    choice: ToolChoiceRules,
    fields: ExtraFields | None,
    extra: Mapping[str, Any],
    payload: Mapping[str, Any],
    state: ToolState | None = None,
    refused: Callable[[str], str | None] = lambda name: None,
) -> None:
    """Refuse `extra` where the request of a wire would not take it.

    Args:
        choice: The wire's tool-choice facts (its `WireReader.choice`).
        fields: The wire's request fields (its `WireReader.fields`), or None.
        extra: The host's extra request fields (not changed).
        payload: The request built from them.
        state: As for `check_tool_choice`.
        refused: As for `check_tool_choice`.

    Raises:
        UsageError: A tool choice `check_tool_choice` refuses; a field the wire's request
            type does not define (the message gives the hint for another API's name,
            else the nearest names and `ExtraFields.escape`, and lists the fields it
            takes); a value its SDK's request model refuses (the message quotes the
            SDK's reason).
    """
    check_tool_choice(choice, extra, payload, state, refused)
    if fields is None or not extra:
        return
    _written_too(extra, fields.holder(payload))
    unknown = [key for key in extra if key not in fields.declared]
    if unknown:
        names = fields.names()
        for key in unknown:
            if key not in names:
                raise UsageError(_unknown(fields, key, {*names, *fields.declared}))
    problem = fields.validate(extra)
    if problem is not None:
        key, why = problem
        raise UsageError(
            f"extra field {shown(key, 60)} holds {shown(extra.get(key), 120)}, which "
            f"{fields.model} refuses: {why}"
        )


def _written_too(extra: Mapping[str, Any], holder: object) -> None:
    """Refuse an `extra` field the request already holds otherwise: compile wrote it.

    `holder` is where `extra` went (the body; Gemini's ``config``), built with the host's
    value only where compile wrote none; a field also given in the other spelling an SDK
    takes (Gemini's ``maxOutputTokens`` beside ``max_output_tokens``) would reach it twice.
    """
    if not isinstance(holder, Mapping):
        return
    for key, value in extra.items():
        same = snake(key)
        other = same if same != key and same in holder else key
        if other in holder and (other != key or holder[key] != value):
            raise UsageError(
                f"extra field {shown(key, 60)} is also written by compile for this request "
                f"(as {shown(other, 60)}: {shown(holder[other], 60)}), from the session or "
                "compile's own arguments (max_tokens=, the system prompt, the tools); give it "
                "there, once"
            )


def _unknown(fields: ExtraFields, key: str, names: Collection[str]) -> str:
    """The refusal of `key`: its hint, else the nearest names and `ExtraFields.escape`."""
    import difflib  # only on this error path

    listed = sorted(n for n in names if "_" in n or n.islower())  # no camelCase aliases
    hint = fields.hints.get(key)
    if hint is None:
        near = difflib.get_close_matches(key, listed, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(near)}?" if near else ""
        if fields.escape:
            hint += f"{'; ' if hint else ''}{fields.escape}"
    return (
        f"extra field {shown(key, 60)} is no field of the {fields.api} request "
        f"({fields.request}), and its SDK refuses it{f': {hint}' if hint else ''}; "
        f"it takes {', '.join(listed)}"
    )


def sdk_keys(module: str, *types: str) -> frozenset[str]:
    """The fields of an installed SDK's request TypedDicts `types` in `module`.

    Their ``__required_keys__`` and ``__optional_keys__`` (inherited ones included);
    empty when none of them imports.
    """
    found: set[str] = set()
    for name in types:
        typed = sdk_attribute(module, name)
        found.update(
            getattr(typed, "__required_keys__", ()), getattr(typed, "__optional_keys__", ())
        )
    return frozenset(found)


def sdk_attribute(module: str, name: str) -> Any:
    """``module.name`` of an installed SDK, or None when it does not import or lacks it."""
    try:
        return getattr(importlib.import_module(module), name, None)
    except Exception:  # not installed, or broken: the declared field set is used instead
        return None


def model_problem(model: Any, extra: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, reason) when the pydantic `model` (an SDK request type) refuses `extra`.

    The first error pydantic reports, as ``<dotted location>: <message>``, with the
    fields the model at that location takes when it refused a key there. Memoized on
    `extra`'s canonical JSON (validation is pure).
    """
    return _problem(model, canonical_dumps(canonical_value(dict(extra))))


@lru_cache(256)
def _problem(model: Any, text: str) -> tuple[str, str] | None:
    try:
        model.model_validate(json.loads(text))
    except Exception as exc:  # pydantic.ValidationError (the SDK's pydantic, not ours)
        listed = getattr(exc, "errors", None)
        errors: list[Any] = listed() if callable(listed) else []
        if not errors:
            return "", str(exc)
        first = errors[0]
        loc: Sequence[Any] = first.get("loc") or ()
        why = f"{'.'.join(map(str, loc))}: {first.get('msg')}"
        inner = _model_at(model, loc[:-1]) if first.get("type") == "extra_forbidden" else None
        if inner is not None:
            why += f" ({inner.__name__} takes {', '.join(sorted(inner.model_fields))})"
        return (str(loc[0]) if loc else ""), why
    return None


def _model_at(model: Any, path: Sequence[Any]) -> Any:
    """The pydantic model a validation location `path` points into, or None."""
    for step in path:
        if isinstance(step, int):
            continue  # an item of a list: the list's own model
        fields = model.model_fields
        found = fields.get(step) or next((f for f in fields.values() if f.alias == step), None)
        model = _inner_model(found.annotation) if found is not None else None
        if model is None:
            return None
    return model


def _inner_model(annotation: Any) -> Any:
    """The first pydantic model in an annotation (``Optional[X]``, ``list[X]``...)."""
    if isinstance(annotation, type) and isinstance(getattr(annotation, "model_fields", None), dict):
        return annotation
    return next(filter(None, map(_inner_model, typing.get_args(annotation))), None)
