"""A tool choice in ``extra`` must be a shape the target's SDK request type takes.

Each wire declares its rules (``providers/<wire>/_choice.py``); compile refuses a
malformed choice with a `UsageError` naming the field, quoting the value and listing what
the wire takes. Every valid row compiles into a payload the SDK types accept; every
invalid row is refused by the SDK type too (read strictly: a string where a bool goes is
not coerced), so the rules are never stricter than the SDK. One plain and one named
choice per wire run a two-turn loop through the official SDK client against the fakes.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest
from anthropic.types.tool_choice_param import ToolChoiceParam
from google.genai import types as genai_types
from google.genai._gaos.types.interactions.generationconfig import GenerationConfigParam
from openai.types.chat.chat_completion_tool_choice_option_param import (
    ChatCompletionToolChoiceOptionParam,
)
from openai.types.responses.response_create_params import ToolChoice as ResponsesToolChoice
from pydantic import TypeAdapter

from contextchef import ContextChef, UsageError, user
from contextchef.testing import fake_for, tool_calls
from sdk_check import _drain, sdk_problems
from sdk_send import send

MODELS = {
    "anthropic": "claude-opus-4-8",
    "openai": "gpt-5.5",
    "responses": "gpt-5.5",
    "gemini": "gemini-2.5-flash",
    "gemini-interactions": "gemini-4-argon",
}

FIELD = {
    "anthropic": "tool_choice",
    "openai": "tool_choice",
    "responses": "tool_choice",
    "gemini": "tool_config",
    "gemini-interactions": "generation_config",
}
"""The ``extra`` field that holds each target's choice."""

_CHOICE_TYPES: dict[str, Any] = {
    "anthropic": ToolChoiceParam,
    "openai": ChatCompletionToolChoiceOptionParam,
    "responses": ResponsesToolChoice,
    "gemini-interactions": GenerationConfigParam,
}


def _fc(**calling: Any) -> dict[str, Any]:
    return {"tool_config": {"function_calling_config": calling}}


def _gc(choice: Any) -> dict[str, Any]:
    return {"generation_config": {"tool_choice": choice}}


VALID: dict[str, list[dict[str, Any]]] = {
    "anthropic": [
        {"tool_choice": {"type": "auto"}},
        {"tool_choice": {"type": "any"}},
        {"tool_choice": {"type": "none"}},
        {"tool_choice": {"type": "tool", "name": "near"}},
        {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
        {"tool_choice": {"type": "tool", "name": "near", "disable_parallel_tool_use": False}},
    ],
    "openai": [
        {"tool_choice": "none"},
        {"tool_choice": "auto"},
        {"tool_choice": "required"},
        {"tool_choice": {"type": "function", "function": {"name": "near"}}},
        {
            "tool_choice": {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [{"type": "function", "function": {"name": "near"}}],
                },
            }
        },
    ],
    "responses": [
        {"tool_choice": "none"},
        {"tool_choice": "auto"},
        {"tool_choice": "required"},
        {"tool_choice": {"type": "function", "name": "near"}},
        {"tool_choice": {"type": "file_search"}},
        {"tool_choice": {"type": "image_generation"}},
        {"tool_choice": {"type": "apply_patch"}},
        {"tool_choice": {"type": "shell"}},
        {"tool_choice": {"type": "programmatic_tool_calling"}},
        {"tool_choice": {"type": "mcp", "server_label": "deepwiki"}},
        {"tool_choice": {"type": "mcp", "server_label": "deepwiki", "name": "ask"}},
        {
            "tool_choice": {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [{"type": "function", "name": "near"}, {"type": "image_generation"}],
            }
        },
    ],
    "gemini": [
        _fc(mode="AUTO"),
        _fc(mode="NONE"),
        _fc(mode="VALIDATED"),
        _fc(mode="any", allowed_function_names=["near"]),  # the SDK reads any case
        {
            "toolConfig": {
                "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["near"]}
            }
        },
        {"tool_config": {"retrieval_config": {"language_code": "en"}}},
        {"tool_config": None},
    ],
    "gemini-interactions": [
        _gc("auto"),
        _gc("any"),
        _gc("none"),
        _gc("validated"),
        _gc({"allowed_tools": {"mode": "any", "tools": ["near"]}}),
        _gc({"allowed_tools": {"tools": ["near"]}}),
        {"generation_config": {"temperature": 0.5}},
    ],
}

_TAKES = {
    "anthropic": '{"type": "tool", "name": <tool name>}',
    "openai": '{"type": "function", "function": {"name": <tool name>}}',
    "responses": '{"type": "function" | "custom", "name": <tool name>}',
    "gemini": "'AUTO' | 'ANY' | 'NONE' | 'VALIDATED'",
    "gemini-interactions": "'auto', 'any', 'none', 'validated'",
}
"""A piece of the accepted shapes each target's refusal lists."""

INVALID: dict[str, list[tuple[dict[str, Any], str]]] = {
    "anthropic": [
        ({"tool_choice": "any"}, "tool_choice must be an object, got a string"),
        ({"tool_choice": "auto"}, "tool_choice must be an object, got a string"),
        ({"tool_choice": ["auto"]}, "tool_choice must be an object, got a list"),
        ({"tool_choice": 1}, "tool_choice must be an object, got an integer"),
        ({"tool_choice": None}, "tool_choice must be an object, got null"),
        ({"tool_choice": {"type": "bogus"}}, "tool_choice.type is 'bogus', not one of"),
        ({"tool_choice": {"name": "near"}}, "tool_choice has no 'type'"),
        (
            {"tool_choice": {"type": "function", "function": {"name": "near"}}},
            "tool_choice.type is 'function'",
        ),
        ({"tool_choice": {"type": "tool"}}, "tool_choice has no 'name', which it requires"),
        ({"tool_choice": {"type": "tool", "name": 3}}, "tool_choice.name must be a string"),
        (
            {"tool_choice": {"type": "any", "disable_parallel_tool_use": "yes"}},
            "tool_choice.disable_parallel_tool_use must be true or false, got a string",
        ),
        (_fc(mode="ANY"), "extra field 'tool_config' holds"),
    ],
    "openai": [
        ({"tool_choice": "any"}, "tool_choice is 'any', not one of 'none', 'auto', 'required'"),
        ({"tool_choice": ["auto"]}, "got a list"),
        ({"tool_choice": 2}, "got an integer"),
        ({"tool_choice": {"type": "bogus"}}, "tool_choice.type is 'bogus'"),
        ({"tool_choice": {"type": "tool", "name": "near"}}, "tool_choice.type is 'tool'"),
        ({"tool_choice": {"type": "function", "name": "near"}}, "has no 'function'"),
        (
            {"tool_choice": {"type": "function", "function": "near"}},
            "tool_choice.function must be an object, got a string",
        ),
        (
            {
                "tool_choice": {
                    "type": "allowed_tools",
                    "allowed_tools": {"mode": "any", "tools": []},
                }
            },
            "tool_choice.allowed_tools.mode is 'any', not one of 'auto', 'required'",
        ),
        (
            {"tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": []}},
            "tool_choice has no 'allowed_tools'",
        ),
        (
            {
                "tool_choice": {
                    "type": "allowed_tools",
                    "allowed_tools": {"mode": "auto", "tools": ["near"]},
                }
            },
            "tool_choice.allowed_tools.tools.0 must be an object, got a string",
        ),
        (_gc("any"), "extra field 'generation_config.tool_choice' holds 'any'"),
    ],
    "responses": [
        ({"tool_choice": "any"}, "tool_choice is 'any'"),
        ({"tool_choice": []}, "got a list"),
        ({"tool_choice": 0.5}, "got a number"),
        ({"tool_choice": {"type": "bogus"}}, "tool_choice.type is 'bogus'"),
        ({"tool_choice": {"type": "tool", "name": "near"}}, "tool_choice.type is 'tool'"),
        (
            {"tool_choice": {"type": "function", "function": {"name": "near"}}},
            "tool_choice has no 'name', which it requires",
        ),
        ({"tool_choice": {"type": "function", "name": None}}, "tool_choice.name must be a string"),
        ({"tool_choice": {"type": "web_search"}}, "tool_choice.type is 'web_search'"),
        ({"tool_choice": {"type": "mcp"}}, "tool_choice has no 'server_label'"),
        (
            {
                "tool_choice": {
                    "type": "allowed_tools",
                    "allowed_tools": {"mode": "auto", "tools": []},
                }
            },
            "tool_choice has no 'mode', which it requires",
        ),
        ({"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}, "'toolConfig' holds"),
    ],
    "gemini": [
        ({"tool_choice": "auto"}, "extra field 'tool_choice' holds 'auto'"),
        ({"tool_choice": {"type": "any"}}, "extra field 'tool_choice' holds {'type': 'any'}"),
        (_gc("any"), "extra field 'generation_config.tool_choice'"),
        (_fc(mode="bogus"), "tool_config.function_calling_config.mode is 'bogus', not one of"),
        (_fc(mode=1), "tool_config.function_calling_config.mode is 1, not one of"),
        ({"tool_config": "ANY"}, "tool_config must be an object, got a string"),
        ({"tool_config": {"mode": "ANY"}}, "the key 'mode', which ToolConfig does not take"),
        (
            _fc(mode="ANY", note="x"),
            "the key 'note', which FunctionCallingConfig does not take",
        ),
        (
            _fc(allowed_function_names="near"),
            "tool_config.function_calling_config.allowed_function_names must be a list",
        ),
        (
            _fc(allowed_function_names=[7]),
            "tool_config.function_calling_config.allowed_function_names.0 must be a string",
        ),
        (  # one field in both spellings (break-it round 31): the SDK's model refuses it
            {**_fc(mode="AUTO"), "toolConfig": {}},
            "and field 'toolConfig' are one Gemini field given twice",
        ),
        (
            {"tool_config": {"function_calling_config": {}, "functionCallingConfig": {}}},
            "has both 'function_calling_config' and 'functionCallingConfig'",
        ),
        (
            _fc(allowed_function_names=["near"], allowedFunctionNames=["near"]),
            "has both 'allowed_function_names' and 'allowedFunctionNames'",
        ),
    ],
    "gemini-interactions": [
        ({"tool_choice": "auto"}, "extra field 'tool_choice' holds 'auto'"),
        (_fc(mode="ANY"), "extra field 'tool_config' holds"),
        (_gc("ANY"), "generation_config.tool_choice is 'ANY', not one of"),
        (_gc("bogus"), "generation_config.tool_choice is 'bogus'"),
        (_gc(1), "generation_config.tool_choice must be one of"),
        (_gc(["any"]), "got a list"),
        (
            _gc({"allowed_tools": {"mode": "required"}}),
            "generation_config.tool_choice.allowed_tools.mode is 'required'",
        ),
        (
            _gc({"allowed_tools": {"tools": "near"}}),
            "generation_config.tool_choice.allowed_tools.tools must be a list, got a string",
        ),
        (
            _gc({"allowed_tools": {"tools": [{"name": "near"}]}}),
            "generation_config.tool_choice.allowed_tools.tools.0 must be a string",
        ),
    ],
}


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools(
        [
            {"name": n, "description": f"The {n} tool", "input_schema": {"type": "object"}}
            for n in ("near", "other")
        ]
    )
    chef.set_history([user("go")])
    return chef


def _sdk_refusal(target: str, extra: dict[str, Any]) -> str | None:
    """What the target's SDK has against `extra`'s choice (read strictly), or None.

    A field the wire does not have is judged on the whole payload (`sdk_problems`: a
    keyword the SDK call lacks, a key google-genai's config forbids).
    """
    payload = _chef().compile(target, model=MODELS[target]).payload
    field = FIELD[target]
    if set(extra) != {field}:
        if target == "gemini":
            payload["config"] = {**payload["config"], **extra}
        else:
            payload.update(extra)
        return "; ".join(sdk_problems(target, payload)) or None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # google-genai only warns of an unknown mode
            if target == "gemini":
                genai_types.GenerateContentConfig.model_validate(extra)
            else:
                adapter: TypeAdapter[Any] = TypeAdapter(_CHOICE_TYPES[target])
                _drain(adapter.validate_python(extra[field], strict=True))
    except Exception as exc:  # ValidationError, a warning, the enum's own AttributeError
        return str(exc)
    return None


def _rows(table: dict[str, list[Any]]) -> list[Any]:
    return [
        pytest.param(t, row, id=f"{t}-{k}")
        for t, rows in table.items()
        for k, row in enumerate(rows)
    ]


@pytest.mark.parametrize(("target", "extra"), _rows(VALID))
def test_a_valid_choice_compiles_into_what_the_sdk_takes(
    target: str, extra: dict[str, Any]
) -> None:
    given = copy.deepcopy(extra)
    request = _chef().compile(target, model=MODELS[target], extra=extra)
    assert extra == given
    assert _sdk_refusal(target, extra) is None
    assert sdk_problems(target, request.payload) == []


@pytest.mark.parametrize(("target", "case"), _rows(INVALID))
def test_a_malformed_choice_is_refused_at_compile_and_by_the_sdk(
    target: str, case: tuple[dict[str, Any], str]
) -> None:
    extra, fragment = case
    given = copy.deepcopy(extra)
    with pytest.raises(UsageError) as caught:
        _chef().compile(target, model=MODELS[target], extra=extra)
    message = str(caught.value)
    assert fragment in message, message
    assert f"extra field '{next(iter(extra))}" in message  # the field (or its dotted path)
    assert _TAKES[target] in message
    assert extra == given  # nothing of the caller's extra changed
    assert _sdk_refusal(target, extra) is not None, "the SDK type takes it: refuse less"


def test_keys_a_typeddict_does_not_define_pass_as_the_sdk_lets_them() -> None:
    """pydantic ignores unknown keys in a TypedDict, strict or not, and the Anthropic and
    OpenAI clients send the dict as given; google-genai models forbid them (above)."""
    extra = {"tool_choice": {"type": "tool", "name": "near", "note": "x"}}
    _chef().compile("anthropic", model=MODELS["anthropic"], extra=extra)
    assert _sdk_refusal("anthropic", extra) is None
    choice = {"allowed_tools": {"tools": ["near"], "note": "x"}}
    _chef().compile("gemini-interactions", model=MODELS["gemini-interactions"], extra=_gc(choice))
    assert _sdk_refusal("gemini-interactions", _gc(choice)) is None


LOOP: dict[str, dict[str, dict[str, Any]]] = {
    "anthropic": {
        "plain": {"tool_choice": {"type": "any", "disable_parallel_tool_use": True}},
        "named": {"tool_choice": {"type": "tool", "name": "near"}},
    },
    "openai": {
        "plain": {"tool_choice": "required"},
        "named": {"tool_choice": {"type": "function", "function": {"name": "near"}}},
    },
    "responses": {
        "plain": {"tool_choice": "required"},
        "named": {"tool_choice": {"type": "function", "name": "near"}},
    },
    "gemini": {
        "plain": _fc(mode="ANY"),
        "named": _fc(mode="ANY", allowed_function_names=["near"]),
    },
    "gemini-interactions": {
        "plain": _gc("any"),
        "named": _gc({"allowed_tools": {"mode": "any", "tools": ["near"]}}),
    },
}


@pytest.mark.parametrize("which", ["plain", "named"])
@pytest.mark.parametrize("target", list(MODELS))
def test_two_turns_with_a_choice_through_the_official_sdk(target: str, which: str) -> None:
    chef, extra = _chef(), LOOP[target][which]
    fake = fake_for(target).script(tool_calls(("near", {})), tool_calls(("near", {})))
    for _ in range(2):
        request = chef.compile(target, model=MODELS[target], extra=extra)
        assert sdk_problems(target, request.payload) == []
        results = chef.run_tools(
            chef.ingest(send(target, fake, request.payload)), fallback=lambda call, allowed: "ok"
        )
        assert [(r.name, r.is_error) for r in results] == [("near", False)]
    assert fake.violations == ()
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    ("target", "extra"),
    [
        ("anthropic", {"tool_choice": {"type": "auto"}, "metadata": {"user_id": "u"}}),
        ("openai", {"tool_choice": {"type": "function", "function": {"name": "near"}}}),
        ("gemini", {"tool_config": {"function_calling_config": {"mode": "AUTO"}}}),
    ],
)
def test_editing_the_payload_leaves_the_callers_extra(target: str, extra: dict[str, Any]) -> None:
    """The payload holds its own copy of `extra` (break-it round 31): a host that edits a
    request before sending it changes neither its `extra` nor the next request."""
    chef, given = _chef(), copy.deepcopy(extra)
    first = chef.compile(target, model="m", max_tokens=100, extra=extra).payload
    holder = first.get("config", first)
    for value in holder.values():
        if isinstance(value, dict):
            value["edited"] = True
    assert extra == given
    again = chef.compile(target, model="m", max_tokens=100, extra=extra).payload
    assert all(
        "edited" not in v for v in again.get("config", again).values() if isinstance(v, dict)
    )


@pytest.mark.parametrize(
    ("target", "choice"),
    [
        ("openai", {"type": "custom", "custom": {"name": "near"}}),
        ("responses", {"type": "custom", "name": "near"}),
        (
            "openai",
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "auto",
                    "tools": [{"type": "custom", "custom": {"name": "near"}}],
                },
            },
        ),
    ],
)
def test_a_choice_of_the_wrong_kind_is_refused(target: str, choice: dict[str, Any]) -> None:
    """A ``custom`` choice of a function tool (break-it round 31): the API refuses it."""
    with pytest.raises(UsageError, match="which is a function tool: name it as one"):
        _chef().compile(target, model=MODELS[target], extra={"tool_choice": choice})


def test_a_tool_named_in_another_apis_shape_says_so() -> None:
    """Chat's ``allowed_tools`` takes any objects (the SDK's type), so a tool in the
    Responses flat form passes the shape; it then names no tool where Chat reads one
    (break-it round 32: "names the tool None")."""
    flat = [{"type": "function", "name": "near"}]
    extra = {
        "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": flat}}
    }
    with pytest.raises(UsageError) as caught:
        _chef().compile("openai", model=MODELS["openai"], extra=extra)
    said = str(caught.value)
    assert "tools.0.function.name holds no tool name" in said and _TAKES["openai"] in said
