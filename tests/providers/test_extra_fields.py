"""``compile(extra=...)`` on Anthropic, Chat Completions and Responses: field names checked.

``extra`` becomes keyword arguments of the SDK call (``client.messages.create``,
``client.beta.messages.create`` for a request with betas, ``client.chat.completions.create``,
``client.responses.create``), which refuse a name they do not define ("create() got an
unexpected keyword argument"). A typo or another API's spelling (``max_output_tokens``
on Chat, ``reasoning_effort`` on Responses, ``stop`` on Anthropic...) used to compile and
then fail in the SDK. Now compile raises a `UsageError` naming the field, the API and
the name to use; every field the installed SDKs take (read from their request
TypedDicts here, so this follows an SDK upgrade) still compiles, validates against the
SDK's request type and goes through the SDK client to the library's fakes.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import types
import typing
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import anthropic
import openai
import pytest
import typing_extensions
from anthropic.resources.beta.messages import Messages as BetaMessages
from anthropic.resources.messages import Messages
from anthropic.types import message_create_params
from anthropic.types.beta import message_create_params as beta_create_params
from openai.resources.chat.completions import Completions
from openai.resources.responses import Responses
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params

from contextchef import ContextChef, ContextPolicy, UsageError, native_context, user
from contextchef.providers import WRITTEN_FIELDS, get_adapter, wire_reader
from contextchef.providers._extra_fields import CALL_OPTIONS, check_extra
from contextchef.providers.anthropic import _fields as anthropic_fields
from contextchef.providers.openai_chat import _fields as chat_fields
from contextchef.providers.responses import _fields as responses_fields
from contextchef.testing import RECORDED_HEADERS, FakeResponses, fake_for, httpx_for, text
from sdk_check import _MAP_TYPES, _typeddict_fields, _unwrap, key_problems

HX = httpx_for(anthropic)

MODELS = {"anthropic": "claude-opus-5-5", "openai": "gpt-5.6", "responses": "gpt-5.6"}

REQUESTS: dict[str, tuple[Any, ...]] = {
    "anthropic": (
        message_create_params.MessageCreateParamsNonStreaming,
        beta_create_params.MessageCreateParamsNonStreaming,
    ),
    "openai": (completion_create_params.CompletionCreateParamsNonStreaming,),
    "responses": (response_create_params.ResponseCreateParamsNonStreaming,),
}
"""Each target's request TypedDicts (Anthropic: the plain call's, then the beta call's)."""


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.set_system_prompt("Be brief.")
    chef.set_history([user("hi")])
    return chef


# -- refused: a typo, another API's name --------------------------------------------------

REFUSED: list[tuple[str, str, str]] = [
    # (target, field, what the message says besides the field and the API)
    ("anthropic", "stop_sequence", "did you mean stop_sequences?"),
    ("anthropic", "thinkng", "did you mean thinking?"),
    ("anthropic", "max_completion_tokens", "pass compile(max_tokens=...)"),
    ("anthropic", "max_output_tokens", "pass compile(max_tokens=...)"),
    ("anthropic", "generation_config", "that is Gemini's"),
    ("anthropic", "stop", "Anthropic's is stop_sequences"),
    ("anthropic", "reasoning_effort", "output_config={'effort': ...}"),
    ("anthropic", "response_format", "output_config={'format': ...}"),
    ("anthropic", "user", "metadata={'user_id': ...}"),
    ("anthropic", "parallel_tool_calls", "disable_parallel_tool_use"),
    ("openai", "temprature", "did you mean temperature?"),
    ("openai", "max_output_tokens", "sent as max_completion_tokens"),
    ("openai", "stop_sequences", "Chat Completions' is stop"),
    ("openai", "thinking", "reasoning_effort"),
    ("openai", "reasoning", "here it is reasoning_effort"),
    ("openai", "text", "response_format and verbosity"),
    ("openai", "output_config", "response_format and reasoning_effort"),
    ("openai", "generation_config", "that is Gemini's"),
    ("responses", "temprature", "did you mean temperature?"),
    ("responses", "reasoning_effort", "reasoning={'effort': ...}"),
    ("responses", "response_format", "text={'format': {...}}"),
    ("responses", "verbosity", "text={'verbosity': ...}"),
    ("responses", "stop", "Responses takes no stop sequences"),
    ("responses", "stop_sequences", "Responses takes no stop sequences"),
    ("responses", "max_completion_tokens", "sent as max_output_tokens"),
    ("responses", "thinking", "reasoning={'effort': ...}"),
    ("responses", "generation_config", "that is Gemini's"),
]

API = {"anthropic": "Anthropic Messages", "openai": "Chat Completions", "responses": "Responses"}


def _sdk_calls(target: str) -> list[Any]:
    """The SDK calls a `target` payload is sent with (no network is reached)."""
    if target == "anthropic":
        client = anthropic.Anthropic(api_key="x", max_retries=0)
        return [client.messages.create, client.beta.messages.create]
    chat = openai.OpenAI(api_key="x", max_retries=0)
    return [chat.responses.create if target == "responses" else chat.chat.completions.create]


@pytest.mark.parametrize(("target", "field", "says"), REFUSED)
def test_a_field_the_sdk_call_refuses_is_refused_at_compile(
    target: str, field: str, says: str
) -> None:
    chef = _chef()
    payload = chef.compile(target, model=MODELS[target]).payload
    for call in _sdk_calls(target):  # what the SDK did with it
        with pytest.raises(TypeError, match="unexpected keyword argument"):
            call(**payload, **{field: 1})
    extra = {field: 1}
    with pytest.raises(UsageError) as caught:
        chef.compile(target, model=MODELS[target], extra=extra)
    message = str(caught.value)
    assert f"extra field {field!r} is no field of the {API[target]} request" in message
    assert says in message
    assert extra == {field: 1}


def test_deepseek_is_checked_as_chat_and_told_where_its_own_fields_go() -> None:
    with pytest.raises(UsageError) as caught:
        _chef().compile("deepseek", model="deepseek-chat", extra={"thinking": {"type": "x"}})
    message = str(caught.value)
    assert "extra field 'thinking' is no field of the Chat Completions request" in message
    assert "extra={'extra_body': {'thinking': ...}}" in message
    request = _chef().compile(
        "deepseek", model="deepseek-chat", extra={"extra_body": {"thinking": {"type": "x"}}}
    )
    assert request.payload["extra_body"] == {"thinking": {"type": "x"}}


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses"])
def test_an_unknown_name_is_told_about_extra_body_and_what_the_request_takes(
    target: str,
) -> None:
    with pytest.raises(UsageError) as caught:
        _chef().compile(target, model=MODELS[target], extra={"brand_new_field": True})
    message = str(caught.value)
    assert "did you mean" not in message
    assert "the installed SDK does not define goes inside extra_body" in message
    assert "it takes " in message and ", tool_choice," in message
    assert ", extra_body, extra_headers, extra_query," in message


def test_a_field_another_api_spells_alike_is_not_suggested_when_a_hint_exists() -> None:
    with pytest.raises(UsageError) as caught:
        _chef().compile("responses", model="gpt-5.4", extra={"reasoning_effort": "low"})
    message = str(caught.value)
    assert "did you mean" not in message and "extra_body" not in message.split("; it takes")[0]


def test_fields_compile_writes_keep_their_own_refusal() -> None:
    for target in ("anthropic", "openai", "responses"):
        for field in ("messages", "tools", "input", "max_tokens"):
            with pytest.raises(UsageError, match=f"extra field '{field}' is written by compile"):
                _chef().compile(target, model=MODELS[target], extra={field: []})


# -- accepted: every field the installed SDK takes ----------------------------------------


def sample(tp: Any) -> Any:
    """A small value of the SDK type `tp`.

    A TypedDict with its required keys filled, a union's first member besides None, a
    literal's first value, a plain ``"x"`` / 1 / 0.5 / False, an empty object or list.
    """
    tp = _unwrap(tp)
    origin = typing_extensions.get_origin(tp)
    args = typing_extensions.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if _unwrap(a) is not type(None)]
        return sample(members[0]) if members else None
    if origin in (typing.Literal, typing_extensions.Literal):
        return args[0]
    if typing_extensions.is_typeddict(tp):
        fields, required, _ = _typeddict_fields(tp)
        return {key: sample(fields[key]) for key in sorted(required)}
    plain: dict[Any, Any] = {str: "x", int: 1, float: 0.5, bool: False}
    if tp in plain:
        return plain[tp]
    if origin in _MAP_TYPES or tp in _MAP_TYPES or tp in (object, Any):
        return {}
    return []  # Iterable / List / Sequence / SequenceNotStr


def sdk_fields(target: str) -> dict[str, Any]:
    """Field -> its type, over the target's request TypedDicts (the first one wins)."""
    found: dict[str, Any] = {}
    for typed in REQUESTS[target]:
        for key, tp in _typeddict_fields(typed)[0].items():
            found.setdefault(key, tp)
    return found


def taken(target: str) -> list[str]:
    """The fields ``extra`` may give: the SDK's, less those compile writes itself."""
    return sorted(
        k for k in sdk_fields(target) if k not in WRITTEN_FIELDS and not k.endswith("max_tokens")
    )


VALUES = {("responses", "max_output_tokens"): 16, ("anthropic", "betas"): ["zeta-2026-01-01"]}
"""Where the type's sample is below the API's minimum (Responses: 16 output tokens), or
empty (an empty ``betas`` sends no header)."""

HEADERS = {
    "betas": "anthropic-beta",
    "user_profile_id": "anthropic-user-profile-id",
    "workspace_id": "anthropic-workspace-id",
}
"""Request fields the anthropic SDK sends as headers, not in the body."""

OPTIONS = {
    "extra_headers": {"x-contextchef-test": "1"},
    "extra_query": {"probe": "1"},
    "extra_body": {"a_field_newer_than_the_sdk": 1},
    "timeout": 30,
}

CASES = [(t, f) for t in ("anthropic", "openai", "responses") for f in (*taken(t), *CALL_OPTIONS)]


def _send(target: str, fake: Any, request: Any) -> Any:
    """The payload through its SDK call (Anthropic: the beta call for a beta field)."""
    payload = dict(request.payload)
    if target == "anthropic":
        client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
        headers = {**payload.pop("extra_headers", {}), **request.headers}
        plain = set(payload) <= set(sdk_fields_plain())
        create = client.messages.create if plain else client.beta.messages.create
        return create(**payload, extra_headers=headers)
    chat = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    create = chat.responses.create if target == "responses" else chat.chat.completions.create
    return create(**payload)


def sdk_fields_plain() -> set[str]:
    """The plain ``messages.create`` call's fields and options."""
    plain = _typeddict_fields(message_create_params.MessageCreateParamsNonStreaming)[0]
    return set(plain) | set(CALL_OPTIONS)


@pytest.mark.parametrize(("target", "field"), CASES)
def test_every_field_the_installed_sdk_takes_compiles_validates_and_is_sent(
    target: str, field: str
) -> None:
    value = OPTIONS.get(field, VALUES.get((target, field)))
    value = sample(sdk_fields(target)[field]) if value is None else value
    chef = _chef()
    request = chef.compile(target, model=MODELS[target], extra={field: value})
    if (target, field) == ("anthropic", "betas"):  # sent as the header (providers._headers)
        assert field not in request.payload
        assert set(value) <= set(request.headers.get("anthropic-beta", "").split(","))
    elif (target, field) == ("anthropic", "extra_headers"):  # merged into request.headers
        assert field not in request.payload and request.headers == value
    else:
        assert request.payload[field] == value
    body = {k: v for k, v in request.payload.items() if k not in CALL_OPTIONS}
    typed = next(t for t in REQUESTS[target] if set(body) <= set(_typeddict_fields(t)[0]))
    assert key_problems(body, typed) == []
    reader = wire_reader(get_adapter(target).profile.wire)
    assert reader.fields is not None
    asked = replace(reader.fields, declared=())  # the installed SDK's names alone
    check_extra(reader.choice, asked, {field: value}, request.payload)
    recorded = (*RECORDED_HEADERS, *HEADERS.values(), "x-contextchef-test")
    fake = fake_for(target, record_headers=recorded).script(text("ok"))
    chef.ingest(_send(target, fake, request))
    assert fake.violations == ()
    (sent,) = fake.requests
    if field == "extra_body":
        assert sent.body["a_field_newer_than_the_sdk"] == 1
    elif field == "extra_headers":
        assert sent.headers["x-contextchef-test"] == "1"
    elif field in HEADERS:
        assert HEADERS[field] in sent.headers
    elif field not in CALL_OPTIONS:
        assert sent.body[field] == value


def test_the_call_options_are_those_of_every_create() -> None:
    creates = {
        "anthropic": (Messages.create, BetaMessages.create),
        "openai": (Completions.create,),
        "responses": (Responses.create,),
    }
    for target, calls in creates.items():
        for create in calls:
            params = set(inspect.signature(create).parameters) - {"self"}
            fields = {k for t in REQUESTS[target] for k in _typeddict_fields(t)[0]}
            assert params - fields - {"stream"} == set(CALL_OPTIONS), create


# -- without the SDK: the declared names -----------------------------------------------


WIRES = {"anthropic": anthropic_fields, "openai": chat_fields, "responses": responses_fields}


@pytest.fixture
def no_sdk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """anthropic and openai not importable: the declared field sets are used."""
    for module in WIRES.values():
        monkeypatch.setattr(module, "sdk_keys", lambda module, *types: frozenset())
        module._names.cache_clear()
    yield
    for module in WIRES.values():
        module._names.cache_clear()


def test_the_declared_field_sets_match_the_installed_sdks() -> None:
    for target, module in WIRES.items():
        streaming = {k for t in REQUESTS[target] for k in _typeddict_fields(t)[0]} | {"stream"}
        assert set(module.DECLARED) == streaming, target


def test_a_field_the_installed_sdk_added_since_the_declared_list_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    newer = frozenset({"brand_new_field"})
    for module in WIRES.values():
        monkeypatch.setattr(module, "sdk_keys", lambda module, *types: newer)
        module._names.cache_clear()
    try:
        for target in WIRES:
            request = _chef().compile(target, model=MODELS[target], extra={"brand_new_field": 1})
            assert request.payload["brand_new_field"] == 1
            with pytest.raises(UsageError, match=r"'brand_new_feld'.*mean brand_new_field\?"):
                _chef().compile(target, model=MODELS[target], extra={"brand_new_feld": 1})
    finally:
        for module in WIRES.values():
            module._names.cache_clear()


def test_declared_fields_pass_without_importing_the_sdk_and_others_ask_it() -> None:
    """The happy path never pays the SDK's import (time, and memory every GC walks)."""
    code = (
        "import json, sys\n"
        "from contextchef import ContextChef, UsageError, user\n"
        "chef = ContextChef()\n"
        "chef.set_history([user('hi')])\n"
        "chef.compile('anthropic', extra={'thinking': {'type': 'adaptive'}, 'timeout': 30})\n"
        "chef.compile('openai', extra={'temperature': 0.2, 'extra_body': {'x': 1}})\n"
        "chef.compile('responses', extra={'reasoning': {'effort': 'low'}})\n"
        "before = sorted({m.split('.')[0] for m in sys.modules} & {'anthropic', 'openai'})\n"
        "for target in ('anthropic', 'responses'):\n"
        "    try:\n"
        "        chef.compile(target, extra={'temprature': 0.2})\n"
        "    except UsageError:\n"
        "        pass\n"
        "after = sorted({m.split('.')[0] for m in sys.modules} & {'anthropic', 'openai'})\n"
        "print(json.dumps([before, after]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert before == []
    assert after == ["anthropic", "openai"]  # a name not declared: the installed SDK asked


def test_without_the_sdk_the_declared_fields_are_checked(no_sdk: None) -> None:
    typos = {"anthropic": "stop_sequence", "openai": "temprature", "responses": "temprature"}
    for target, module in WIRES.items():
        own = {"compaction"} if target == "responses" else set()
        assert module._names() == set(module.DECLARED) | set(CALL_OPTIONS) | own
        with pytest.raises(UsageError, match=f"extra field '{typos[target]}'.*did you mean"):
            _chef().compile(target, model=MODELS[target], extra={typos[target]: 1})
    request = _chef().compile("anthropic", model=MODELS["anthropic"], extra={"mcp_servers": []})
    assert request.payload["mcp_servers"] == []


def test_an_on_demand_compaction_keeps_the_call_options_for_responses_compact() -> None:
    fake = FakeResponses()
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    chef = ContextChef()
    chef.set_history([user("Find why the build fails.")])
    fake.script(text("the log says so", reasoning="r"))
    chef.ingest(client.responses.create(**chef.compile("responses", model="gpt-5.6-sol").payload))
    chef.append(user("and the tests?"))
    policy = ContextPolicy(budget_tokens=120_000)
    asked = native_context("responses", model="gpt-5.6-sol", policy=policy).on_demand
    options = {"timeout": 30, "extra_headers": {"x-contextchef-test": "1"}}
    request = chef.compile("responses", model="gpt-5.6-sol", extra={**asked, **options})
    assert request.payload["timeout"] == 30 and request.dropped == ()
    window = client.responses.compact(**request.payload)
    assert window.output[-1].type == "compaction"
    assert fake.violations == ()


@pytest.mark.parametrize(
    ("target", "extra", "said"),
    [
        ("gemini", {"maxOutputTokens": 777}, "(as 'max_output_tokens': 100)"),
        ("gemini", {"systemInstruction": "other"}, "(as 'system_instruction': 'Be brief.')"),
        ("gemini", {"max_output_tokens": 777}, "(as 'max_output_tokens': 100)"),
        ("openai", {"max_completion_tokens": 777}, "(as 'max_completion_tokens': 100)"),
        ("responses", {"max_output_tokens": 777}, "(as 'max_output_tokens': 100)"),
    ],
)
def test_a_field_compile_writes_for_the_request_is_not_given_twice(
    target: str, extra: dict[str, Any], said: str
) -> None:
    # break-it 36 #5, #9: Gemini's camelCase spelling of a config field compile writes
    # reached GenerateContentConfig twice (a raw pydantic error); an output cap in extra
    # beside max_tokens= was silently overridden
    chef = ContextChef()
    chef.set_system_prompt("Be brief.")
    chef.set_history([user("hi")])
    with pytest.raises(UsageError) as caught:
        chef.compile(target, model="m", max_tokens=100, extra=extra)
    assert said in str(caught.value) and "also written by compile" in str(caught.value)
    payload = chef.compile(target, model="m", max_tokens=100).payload  # nothing was kept
    assert "777" not in json.dumps(payload) and "other" not in json.dumps(payload)


def test_context_management_given_in_extra_names_its_beta() -> None:
    # break-it 36 #6: the README sends a request whose headers name a beta through the
    # beta client; context_management in extra passed compile with no header
    chef = ContextChef()
    chef.set_history([user("hi")])
    request = chef.compile(
        "anthropic", model="claude-opus-5-5", extra={"context_management": {"edits": []}}
    )
    assert "context-management-2025-06-27" in request.headers["anthropic-beta"]
