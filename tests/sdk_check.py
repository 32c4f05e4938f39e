"""The official provider SDKs' request types, read strictly: shared by the payload tests.

`sdk_problems(target, payload)` lists everything the SDK's own request type has against
a compiled payload (pydantic ``TypeAdapter`` over the SDK TypedDicts, plus a recursive
unknown-key check because pydantic ignores extra keys in TypedDicts; google-genai models
forbid extra keys themselves). `tool_names` reads the tool names out of any target's
payload. Lives at the tests root so every test folder can import it.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

import typing_extensions
from anthropic.resources.messages import Messages
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from google.genai import types as genai_types
from google.genai._gaos.types.interactions.createmodelinteraction import (
    CreateModelInteraction,
    CreateModelInteractionParam,
)
from google.genai.models import Models
from openai.resources.chat.completions import Completions
from openai.resources.responses import Responses
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter, ValidationError

# Environment that would redirect or re-authenticate the SDK clients.
PROVIDER_ENV = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
)

# -- a strict reading of the SDK request types --------------------------------------------

_WRAPPERS = {
    typing_extensions.Required,
    typing_extensions.NotRequired,
    typing_extensions.ReadOnly,
    typing_extensions.Annotated,
    typing.Annotated,
}
_LIST_TYPES = {
    list,
    tuple,
    collections.abc.Iterable,
    collections.abc.Sequence,
    collections.abc.Collection,
}
_MAP_TYPES = {dict, collections.abc.Mapping, collections.abc.MutableMapping}
_UNION_TYPES = {typing.Union, types.UnionType}


def _unwrap(tp: Any) -> Any:
    while True:
        if isinstance(tp, (typing_extensions.TypeAliasType, getattr(typing, "TypeAliasType", ()))):
            tp = tp.__value__  # google-genai's Interactions types name their unions
        elif isinstance(tp, type) and tp.__name__ in ("UnrecognizedStr", "UnrecognizedInt"):
            tp = tp.__mro__[1]  # google-genai's open enums: any str / int is accepted
        elif typing_extensions.get_origin(tp) in _WRAPPERS:
            tp = typing_extensions.get_args(tp)[0]
        else:
            return tp


@functools.cache
def _typeddict_fields(td: type) -> tuple[dict[str, Any], frozenset[str], bool]:
    """(field types, required keys, extra keys allowed) of a TypedDict.

    ``__required_keys__`` is unreliable here: the SDKs use ``from __future__ import
    annotations``, so ``Required[...]`` is only visible after resolving the hints.
    """
    fields: dict[str, Any] = {}
    required: set[str] = set()
    for key, hint in typing_extensions.get_type_hints(td, include_extras=True).items():
        origin: Any = typing_extensions.get_origin(hint)
        if origin is typing_extensions.NotRequired:
            is_required = False
        else:
            is_required = origin is typing_extensions.Required or (
                key in td.__required_keys__  # type: ignore[attr-defined]
            )
        if is_required:
            required.add(key)
        fields[key] = _unwrap(hint)
    config = getattr(td, "__pydantic_config__", None) or {}
    return fields, frozenset(required), config.get("extra") == "allow"


def key_problems(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Unknown keys, missing required keys and wrong literals of `value` against `tp`.

    Unions pass if any member passes (otherwise the closest member's problems are
    reported); ``Dict[str, object]`` members (free-form JSON such as input schemas)
    accept anything, as in the SDK.
    """
    tp = _unwrap(tp)
    if tp is Any or tp is object:
        return []
    if tp is type(None):
        return [] if value is None else [f"{path}: expected null, got {value!r}"]
    origin = typing_extensions.get_origin(tp)
    args = typing_extensions.get_args(tp)
    if origin in _UNION_TYPES:
        candidates = []
        for member in args:
            found = key_problems(value, member, path)
            if not found:
                return []
            candidates.append(found)
        # Report the closest member: right JSON kind here, then right discriminator
        # literals, then fewest problems.
        return min(
            candidates,
            key=lambda found: (
                any(p.startswith(f"{path}: expected") for p in found),
                sum(" is not one of " in p for p in found),
                len(found),
            ),
        )
    if origin in (typing.Literal, typing_extensions.Literal):
        return [] if value in args else [f"{path}: {value!r} is not one of {args}"]
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: expected an object ({tp.__name__}), got {type(value).__name__}"]
        fields, required, extra_ok = _typeddict_fields(tp)
        extra_ok = extra_ok or not fields  # an empty TypedDict: any object (google-genai)
        found = [
            f"{path}: missing required key {key!r} of {tp.__name__}"
            for key in sorted(required - value.keys())
        ]
        if not extra_ok:
            found += [
                f"{path}: unknown key {key!r} for {tp.__name__}"
                for key in value
                if key not in fields
            ]
        for key, item in value.items():
            if key in fields:
                found += key_problems(item, fields[key], f"{path}.{key}")
        return found
    if origin in _MAP_TYPES or tp in _MAP_TYPES:
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {type(value).__name__}"]
        item_type = args[1] if len(args) == 2 else Any
        return [p for k, v in value.items() for p in key_problems(v, item_type, f"{path}.{k}")]
    if (
        origin in _LIST_TYPES
        or tp in _LIST_TYPES
        or getattr(origin, "__name__", "") == "SequenceNotStr"
    ):
        if not isinstance(value, list):
            return [f"{path}: expected an array, got {type(value).__name__}"]
        item_type = args[0] if args else Any
        return [p for i, v in enumerate(value) for p in key_problems(v, item_type, f"{path}[{i}]")]
    if isinstance(tp, type):
        if isinstance(value, bool) and tp is not bool:
            return [f"{path}: expected {tp.__name__}, got bool"]
        if tp is float and isinstance(value, int):
            return []
        if isinstance(value, tp):
            return []
        return [f"{path}: expected {tp.__name__}, got {type(value).__name__}"]
    return [f"{path}: the key checker cannot read type {tp!r}"]


def _drain(value: Any) -> None:
    """Consume pydantic's lazy ``Iterable[...]`` validators so their items get validated.

    ``TypeAdapter`` validates ``Iterable[X]`` fields (``messages``, ``tools``, content
    lists...) lazily: without this, a wrong message would pass.
    """
    if isinstance(value, dict):
        for item in value.values():
            _drain(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _drain(item)
    elif isinstance(value, Iterator):
        for item in list(value):
            _drain(item)


def wire_api(target: str) -> str:
    """The API a target speaks: ``deepseek`` is Chat Completions plus ``reasoning_content``."""
    return "openai" if target == "deepseek" else target


def without_reasoning_content(payload: dict[str, Any]) -> dict[str, Any]:
    """A Chat payload minus DeepSeek's one extension (``reasoning_content`` on assistants).

    https://api-docs.deepseek.com/guides/thinking_mode; the OpenAI SDK sends the dict as
    is, so the key reaches DeepSeek, but the OpenAI request types do not declare it.
    """
    messages = [
        {k: v for k, v in m.items() if not (k == "reasoning_content" and isinstance(v, str))}
        for m in payload["messages"]
    ]
    return {**payload, "messages": messages}


REQUEST_TYPES: dict[str, Any] = {
    "anthropic": MessageCreateParamsNonStreaming,
    "openai": CompletionCreateParamsNonStreaming,
    "responses": ResponseCreateParamsNonStreaming,
}


@functools.cache
def _adapter(target: str) -> TypeAdapter[Any]:
    # Kept alive: pydantic-core panics when a lazy ValidatorIterator outlives its adapter
    # (its definition references are gone).
    return TypeAdapter(REQUEST_TYPES[target])


def _create_method(target: str) -> Callable[..., Any]:
    target = wire_api(target)
    methods: dict[str, Callable[..., Any]] = {
        "anthropic": Messages.create,
        "openai": Completions.create,
        "responses": Responses.create,
        "gemini": Models.generate_content,
    }
    return methods[target]


def sdk_problems(target: str, payload: dict[str, Any]) -> list[str]:
    """Everything the SDK's request types have against `payload` ([] when valid)."""
    if target == "deepseek":
        target, payload = "openai", without_reasoning_content(payload)
    if target == "gemini-interactions":
        return interactions_problems(payload)
    accepted = inspect.signature(_create_method(target)).parameters
    found = [
        f"$: {key!r} is not a parameter of the SDK call" for key in payload if key not in accepted
    ]
    if target == "gemini":
        # google-genai models forbid extra keys (checked in test_genai_models_forbid_extras).
        try:
            genai_types.GenerateContentConfig.model_validate(payload["config"])
        except ValidationError as exc:
            found.append(f"$.config: {exc}")
        for i, content in enumerate(payload["contents"]):
            try:
                genai_types.Content.model_validate(content)
            except ValidationError as exc:
                found.append(f"$.contents[{i}]: {exc}")
        return found
    request_type = REQUEST_TYPES[target]
    try:
        _drain(_adapter(target).validate_python(payload))
    except ValidationError as exc:
        found.append(f"$: {exc}")
    return found + key_problems(payload, request_type)


def interactions_problems(payload: dict[str, Any]) -> list[str]:
    """google-genai 3.6.1's ``CreateModelInteraction`` against an Interactions payload.

    Its models allow extra keys, so every key is also checked against the request's
    TypedDict form (`key_problems`).
    """
    found = [
        f"$: {key!r} is not a field of CreateModelInteraction"
        for key in payload
        if key not in CreateModelInteraction.model_fields
    ]
    try:
        CreateModelInteraction.model_validate(payload)
    except ValidationError as exc:
        found.append(f"$: {exc}")
    return found + key_problems(payload, CreateModelInteractionParam)


# -- target-neutral reading of a payload --------------------------------------------------


def tool_names(target: str, payload: dict[str, Any]) -> list[str]:
    target = wire_api(target)
    if target == "anthropic":
        return [t["name"] for t in payload.get("tools", [])]
    if target == "openai":
        return [t["function"]["name"] for t in payload.get("tools", [])]
    if target in ("responses", "gemini-interactions"):
        return [t["name"] for t in payload.get("tools", [])]
    tools = payload["config"].get("tools", [])
    return [d["name"] for tool in tools for d in tool["function_declarations"]]
