"""``compile(extra={"tool_choice": ...})`` may only force a tool the request offers.

The live APIs refuse a named ``tool_choice`` of a tool the request does not declare, and
a deferred tool cannot be forced before it was revealed (research note
provider-native-disclosure.md §6 rules 19, 24). Compile refuses such a choice with a
`UsageError` naming the tool and the valid ones, for every wire's shape; the fakes refuse
the request too (`contextchef.testing._choice_rules`). Sent through the official SDKs.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from google.genai import _interactions_errors
from google.genai import errors as genai_errors

from conftest import shared_data
from contextchef import ContextChef, UsageError, user
from contextchef.testing import fake_for, provider_search, text, tool_calls
from sdk_send import send

MODELS = {
    "anthropic": "claude-opus-4-8",
    "openai": "gpt-5.5",
    "responses": "gpt-5.5",
    "gemini": "gemini-2.5-flash",
}


def _choice(target: str, name: str) -> dict[str, Any]:
    if target == "anthropic":
        return {"tool_choice": {"type": "tool", "name": name}}
    if target == "openai":
        return {"tool_choice": {"type": "function", "function": {"name": name}}}
    if target == "responses":
        return {"tool_choice": {"type": "function", "name": name}}
    calling = {"mode": "ANY", "allowed_function_names": [name]}
    return {"tool_config": {"function_calling_config": calling}}


def _chef() -> ContextChef:
    chef = ContextChef(defer=["^far$"], modes={"ro": ["near", "far"]})
    chef.register_tools(
        [
            {"name": n, "description": f"The {n} tool", "input_schema": {"type": "object"}}
            for n in ("near", "far", "writer")
        ]
    )
    chef.set_history([user("go")])
    return chef


@pytest.mark.parametrize("target", list(MODELS))
def test_a_declared_tool_may_be_forced(target: str) -> None:
    chef = _chef()
    fake = fake_for(target).script(tool_calls(("near", {})))
    request = chef.compile(target, model=MODELS[target], extra=_choice(target, "near"))
    send(target, fake, request.payload)
    assert fake.violations == ()


@pytest.mark.parametrize("target", list(MODELS))
@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("far", "do not declare"),  # deferred: behind tool_search under the client strategy
        ("nowhere", "do not declare"),
        ("writer", "gate refuses"),  # blocked below
    ],
)
def test_a_tool_the_request_does_not_offer_is_refused_at_compile(
    target: str, name: str, why: str
) -> None:
    chef = _chef()
    chef.set_blocked_tools(["writer"])
    with pytest.raises(UsageError) as caught:
        chef.compile(target, model=MODELS[target], extra=_choice(target, name))
    message = str(caught.value)
    assert f"'{name}'" in message and why in message
    assert "near" in message and "load, reveal or pin" in message


def test_a_tool_hidden_by_the_mode_is_refused() -> None:
    chef = _chef()
    chef.set_mode("ro")
    with pytest.raises(UsageError, match="'writer'"):
        chef.compile("anthropic", model=MODELS["anthropic"], extra=_choice("anthropic", "writer"))


def test_a_deferred_tool_is_forced_only_once_revealed_on_anthropic_native() -> None:
    chef = _chef()
    fake = fake_for("anthropic").script(
        provider_search("far", then=tool_calls(("far", {}))), text("done")
    )
    model, strategy = "claude-opus-4-8", "anthropic-native"
    with pytest.raises(UsageError, match=r"declared deferred .* not revealed"):
        chef.compile("anthropic", model=model, strategy=strategy, extra=_choice("anthropic", "far"))
    results = chef.run_tools(
        chef.ingest(
            send(
                "anthropic", fake, chef.compile("anthropic", model=model, strategy=strategy).payload
            )
        ),
        fallback=lambda call, allowed: "ok",
    )
    assert [(r.name, r.is_error) for r in results] == [("far", False)]
    forced = chef.compile(
        "anthropic", model=model, strategy=strategy, extra=_choice("anthropic", "far")
    )
    send("anthropic", fake, forced.payload)
    assert fake.violations == ()


_ERRORS: dict[str, type[Exception]] = {
    "anthropic": anthropic.BadRequestError,
    "openai": openai.BadRequestError,
    "responses": openai.BadRequestError,
    "gemini": genai_errors.ClientError,
}


@pytest.mark.parametrize("target", list(MODELS))
def test_the_fakes_refuse_a_choice_of_an_undeclared_tool(target: str) -> None:
    chef = _chef()
    payload = chef.compile(target, model=MODELS[target]).payload
    extra = _choice(target, "far")
    if target == "gemini":
        payload["config"] = {**payload["config"], **extra}
    else:
        payload.update(extra)
    fake = fake_for(target).script(text("never"))
    with pytest.raises(_ERRORS[target]):
        send(target, fake, payload)
    assert [v.rule for v in fake.violations] == [f"{_rule(target)}_tool_choice_declared"]
    assert "'far'" in fake.violations[0].message and fake.pending == 1


def _rule(target: str) -> str:
    return {"openai": "chat"}.get(target, target)


def test_interactions_allowed_tools_name_declared_functions() -> None:
    chef = _chef()
    target, model = "gemini-interactions", "gemini-4-argon"
    allowed = {"mode": "any", "tools": ["far"]}
    extra = {"generation_config": {"tool_choice": {"allowed_tools": allowed}}}
    with pytest.raises(UsageError, match=r"allowed_tools\.tools\.0 names the tool 'far'"):
        chef.compile(target, model=model, extra=extra)
    allowed["tools"] = ["near"]
    fake = fake_for(target).script(text("ok"))
    send(target, fake, chef.compile(target, model=model, extra=extra).payload)
    assert fake.violations == ()
    payload = chef.compile(target, model=model).payload
    payload["generation_config"] = {"tool_choice": {"allowed_tools": {"tools": ["far"]}}}
    with pytest.raises(_interactions_errors.BadRequestError):
        send(target, fake.script(text("never")), payload)
    assert [v.rule for v in fake.violations] == ["interactions_tool_choice_declared"]


def test_a_namespace_member_is_refused_on_responses_even_once_revealed() -> None:
    """Break-it 29: a revealed tool inside a Responses namespace passed compile and the
    fake refused the request (a named tool_choice takes a top-level function only)."""
    chef = ContextChef(default_defer=True, pin=["*read_file"])
    chef.register_catalog(shared_data() / "catalogs" / "mcp-filesystem.json")
    chef.set_history([user("hello")])
    fake = fake_for("responses").script(text("a"), text("b"))
    first = chef.compile("responses", model="gpt-5.5", strategy="openai-native")
    chef.ingest(send("responses", fake, first.payload))
    chef.reveal_tools("filesystem__search_files")
    chef.append(user("next"))
    choice = {"tool_choice": {"type": "function", "name": "filesystem__search_files"}}
    with pytest.raises(UsageError, match=r"a function of namespace .*top-level function only"):
        chef.compile("responses", model="gpt-5.5", strategy="openai-native", extra=choice)
    top = {"tool_choice": {"type": "function", "name": "filesystem__read_file"}}
    request = chef.compile("responses", model="gpt-5.5", strategy="openai-native", extra=top)
    send("responses", fake, request.payload)
    assert fake.violations == ()


@pytest.mark.parametrize(
    ("target", "choice", "where"),
    [
        ("openai", {"type": "custom", "custom": {"name": "near"}}, "tool_choice.custom.name"),
        ("responses", {"type": "custom", "name": "near"}, "tool_choice.name"),
    ],
)
def test_the_fakes_refuse_a_custom_choice_of_a_function_tool(
    target: str, choice: dict[str, Any], where: str
) -> None:
    """A choice's kind must be its tool's (break-it round 31: the Chat fake read no name)."""
    payload = {**_chef().compile(target, model=MODELS[target]).payload, "tool_choice": choice}
    fake = fake_for(target).script(text("never"))
    with pytest.raises(_ERRORS[target]):
        send(target, fake, payload)
    said = fake.violations[0].message
    assert where in said and "'near'" in said and "not a" in said and "custom tool" in said


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "near"}])
def test_a_forced_tool_with_thinking_is_refused_on_anthropic(choice: dict[str, Any]) -> None:
    """Anthropic: "Thinking isn't compatible with ... forced tool use" (extended thinking,
    "Feature compatibility"): compile refuses it, and so does the fake (break-it round 32);
    ``auto`` and ``none`` go with thinking."""
    thinking = {"type": "enabled", "budget_tokens": 1024}
    chef = _chef()
    with pytest.raises(UsageError, match="forces a tool, which Anthropic refuses while thinking"):
        chef.compile(
            "anthropic",
            model="claude-opus-5-5",
            max_tokens=2048,
            extra={"thinking": thinking, "tool_choice": choice},
        )
    for fine in ({"type": "auto"}, {"type": "none"}):
        chef.compile(
            "anthropic",
            model="claude-opus-5-5",
            max_tokens=2048,
            extra={"thinking": thinking, "tool_choice": fine},
        )
    payload = chef.compile(
        "anthropic", model="claude-opus-5-5", max_tokens=2048, extra={"thinking": thinking}
    ).payload
    fake = fake_for("anthropic").script(text("never"))
    with pytest.raises(anthropic.BadRequestError, match="forces tool use"):
        send("anthropic", fake, {**payload, "tool_choice": choice})
    assert [v.rule for v in fake.violations] == ["anthropic_thinking_choice_not_forced"]


def test_an_sdk_object_in_extra_is_refused_with_its_json_form() -> None:
    """Break-it round 31: a google-genai ``ToolConfig`` in `extra` was refused as "not
    JSON" with no word of what to pass. The refusal names the field, the JSON values extra
    takes, and how to get the object's JSON form; that form compiles and the SDK takes it."""
    from google.genai import types

    chef = ContextChef()
    chef.set_history([user("hi")])
    config = types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(
            mode=types.FunctionCallingConfigMode.NONE
        )
    )
    with pytest.raises(UsageError) as info:
        chef.compile("gemini", model="gemini-3-pro", extra={"tool_config": config})
    said = str(info.value)
    assert said.startswith("extra field 'tool_config': not JSON")
    assert "a ToolConfig object: pass its JSON form" in said and "model_dump(mode='json'" in said
    with pytest.raises(UsageError, match=r"extra field 'x'.*finite numbers.*null$"):
        chef.compile("gemini", model="gemini-3-pro", extra={"x": {1, 2}})
    dumped = config.model_dump(mode="json", exclude_none=True)
    request = chef.compile("gemini", model="gemini-3-pro", extra={"tool_config": dumped})
    sent = request.payload["config"]["tool_config"]
    assert types.ToolConfig.model_validate(sent) == config


@pytest.mark.parametrize(
    ("target", "extra"),
    [
        ("anthropic", {"metadata": {"user_id": "u\ud800"}}),
        ("openai", {"user": "u\ud800"}),
        ("responses", {"metadata": {"k": "\udc00"}}),
        ("gemini", {"labels": {"\ud800": "x"}}),
    ],
)
def test_a_lone_surrogate_in_extra_is_refused_at_compile(target: str, extra: Any) -> None:
    """Break-it round 33 (#5): compile took a lone surrogate in `extra`, and the SDK call
    then raised a bare ``UnicodeEncodeError``; every other text entry point refuses one.
    It is a `UsageError` naming the field, and the session compiles and sends as before."""
    chef = ContextChef()
    chef.set_history([user("hi")])
    with pytest.raises(
        UsageError, match=r"extra field '\w+': not JSON \(it holds text that is not"
    ):
        chef.compile(target, model="m", extra=extra)
    fake = fake_for(target).script(text("ok"))
    send(target, fake, chef.compile(target, model="m").payload)
    assert fake.violations == ()


@pytest.mark.parametrize("max_tokens", [2**31, 10**30])
def test_max_tokens_past_what_any_api_takes_is_refused(max_tokens: int) -> None:
    """Break-it round 33 (#9): ``max_tokens=10**30`` compiled on every target."""
    chef = ContextChef()
    chef.set_history([user("hi")])
    for target in ("anthropic", "openai", "responses", "gemini"):
        with pytest.raises(UsageError, match=r"max_tokens must be an integer >= 1 and <= "):
            chef.compile(target, model="m", max_tokens=max_tokens)
        chef.compile(target, model="m", max_tokens=2**31 - 1)


def test_a_lone_surrogate_in_an_extra_field_name_is_refused() -> None:
    """Break-it round 34 (#8): a lone surrogate in a nested key or a value was refused, in a
    top-level field name it reached the payload, which cannot be sent as UTF-8."""
    chef = ContextChef()
    chef.set_history([user("hi")])
    with pytest.raises(UsageError, match=r"extra field names must be non-empty Unicode text"):
        chef.compile("openai", model="m", extra={"x\ud800": 1})


@pytest.mark.parametrize("max_tokens", [1, 15])
def test_responses_max_tokens_below_16_is_refused_by_compile_and_the_fake(max_tokens: int) -> None:
    """Break-it round 34 (#4): the Responses API refuses ``max_output_tokens`` below 16
    ("integer below minimum value. Expected a value >= 16"), compile sent it and the fake
    took it. Compile refuses it and changes nothing; the fake answers it with a 400."""
    chef = ContextChef()
    chef.set_history([user("hi")])
    with pytest.raises(UsageError, match=r"max_tokens is \d+: OpenAI Responses refuses"):
        chef.compile("responses", model="m", max_tokens=max_tokens)
    fake = fake_for("responses").script(text("ok"))
    request = chef.compile("responses", model="m", max_tokens=16)
    send("responses", fake, request.payload)
    assert fake.violations == ()
    with pytest.raises(openai.BadRequestError, match="expected >= 16"):
        send("responses", fake, {**request.payload, "max_output_tokens": max_tokens})
    chef.compile("openai", model="m", max_tokens=max_tokens)  # Chat takes it
