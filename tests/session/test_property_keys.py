"""Top-level property keys Anthropic refuses are sent in a legal, stable wire form.

Anthropic answers a whole request with 400 "tools.N.custom.input_schema.properties:
Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'" when one tool has a key like
``"Account Number"``, ``"filter[id]"`` or ``"$top"`` (anthropics/claude-code#79418,
ComposioHQ/composio#3067). Such keys now go as a wire form (``Account_Number``), the same
for every provider; the gate maps a call's wire keys back, so hooks and handlers get the
tool's real keys. `FakeAnthropic` checks the keys (`anthropic_property_keys_valid`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import ContextChef, Tool, load_catalog, tool_results, user
from contextchef.testing import FakeAnthropic, fake_for, text, tool_calls
from contextchef.testing._part_rules import anthropic_property_keys_valid
from contextchef.testing._rules import ANTHROPIC_RULES
from contextchef.tools._property_keys import PROPERTY_KEY_RE, wire_keys

LONG = "k" * 70
BAD = {
    "Account Number": {"type": "string"},
    "filter[id]": {"type": "integer"},
    "rule_name[]": {"type": "array", "items": {"type": "string"}},
    "$top": {"type": "integer"},
    "@microsoft.graph.conflictBehavior": {"type": "string"},
    LONG: {"type": "string"},
    "año_vehiculo": {"type": "integer"},
    "nested": {"type": "object", "properties": {"Inner Key": {"type": "string"}}},
}
WIRE = {
    "Account Number": "Account_Number",
    "filter[id]": "filter_id_",
    "rule_name[]": "rule_name__",
    "$top": "_top",
    "@microsoft.graph.conflictBehavior": "_microsoft.graph.conflictBehavior",
    "año_vehiculo": "a_o_vehiculo",
}
TOOL = {
    "name": "list_accounts",
    "description": "List accounts.",
    "input_schema": {"type": "object", "properties": BAD, "required": ["Account Number", "$top"]},
}
REAL_ARGS = {"Account Number": "A-1", "$top": 2, "filter[id]": 7, "nested": {"Inner Key": "x"}}
WIRE_ARGS = {"Account_Number": "A-1", "_top": 2, "filter_id_": 7, "nested": {"Inner Key": "x"}}


def _chef(seen: list[dict[str, Any]], **options: Any) -> ContextChef:
    chef = ContextChef(**options)

    def handler(**kwargs: Any) -> str:
        seen.append(kwargs)
        return "2 accounts"

    chef.register_tools([TOOL], handlers={"list_accounts": handler})
    chef.set_history([user("List them.")])
    return chef


def _schema(target: str, payload: dict[str, Any]) -> dict[str, Any]:
    tools = payload["tools"] if target != "gemini" else payload["config"]["tools"]
    if target == "anthropic":
        return dict(tools[0]["input_schema"])
    if target == "openai":
        return dict(tools[0]["function"]["parameters"])
    if target == "responses":
        return dict(tools[0]["parameters"])
    declaration = tools[0]["function_declarations"][0]
    return dict(declaration.get("parameters") or declaration["parameters_json_schema"])


def test_each_kind_of_bad_key_gets_a_legal_wire_key_and_required_follows() -> None:
    keys = wire_keys(Tool(**TOOL))
    props = keys.schema["properties"]
    assert all(PROPERTY_KEY_RE.fullmatch(k) for k in props)
    assert list(props)[:5] == [WIRE[k] for k in list(BAD)[:5]]  # the author's order kept
    long_wire = keys.to_wire[LONG]
    assert len(long_wire) == 64 and long_wire.startswith("k" * 55 + "_")
    assert keys.schema["required"] == ["Account_Number", "_top"]
    assert "Inner Key" in props["nested"]["properties"]  # the API checks the top level only
    assert {keys.to_real[w]: w for w in keys.to_real} == keys.to_wire
    assert keys.real_arguments(dict(WIRE_ARGS)) == REAL_ARGS


def test_a_schema_without_bad_keys_is_sent_as_it_is() -> None:
    tool = Tool(name="t", input_schema={"type": "object", "properties": {"a.b": {}, "c-d": {}}})
    assert wire_keys(tool).schema is tool.input_schema
    assert wire_keys(tool).real_arguments(args := {"a.b": 1}) is args


def test_a_bad_key_beside_its_clean_form_gets_a_hash_and_both_stay_distinct() -> None:
    schema = {"type": "object", "properties": {"a b": {}, "a_b": {}, "a/b": {}}}
    keys = wire_keys(Tool(name="t", input_schema={**schema, "required": ["a b", "a_b"]}))
    props = list(keys.schema["properties"])
    assert props[1] == "a_b" and len(set(props)) == 3
    assert keys.to_wire["a b"].startswith("a_b_") and len(keys.to_wire["a b"]) == 12
    assert keys.to_wire["a/b"].startswith("a_b_") and keys.to_wire["a/b"] != keys.to_wire["a b"]
    assert keys.schema["required"] == [keys.to_wire["a b"], "a_b"]


def test_composition_keywords_on_the_arguments_object_follow_the_rename() -> None:
    schema = {
        "type": "object",
        "properties": {"$top": {"type": "integer"}, "$skip": {"type": "integer"}},
        "anyOf": [{"required": ["$top"]}, {"required": ["$skip"]}],
        "dependentRequired": {"$skip": ["$top"]},
    }
    keys = wire_keys(Tool(name="t", input_schema=schema))
    assert keys.schema["anyOf"] == [{"required": ["_top"]}, {"required": ["_skip"]}]
    assert keys.schema["dependentRequired"] == {"_skip": ["_top"]}


def test_two_sessions_send_the_same_wire_keys() -> None:
    payloads = [
        json.dumps(_chef([]).compile("anthropic", model="claude-sonnet-4-5").payload["tools"])
        for _ in range(2)
    ]
    assert payloads[0] == payloads[1] and "Account_Number" in payloads[0]


@pytest.mark.parametrize("target", ["anthropic", "openai", "responses", "gemini"])
def test_multi_turn_through_the_sdk_the_handler_gets_the_real_keys(target: str) -> None:
    fake = fake_for(target).script(tool_calls(("list_accounts", WIRE_ARGS)), text("Done."))
    seen: list[dict[str, Any]] = []
    chef = _chef(seen)
    model = "claude-sonnet-4-5" if target == "anthropic" else "m"
    first = chef.compile(target, model=model).payload
    schema = _schema(target, first)
    assert set(WIRE.values()) <= set(schema["properties"])
    assert "Account Number" not in json.dumps(schema)
    calls = chef.ingest(send(target, fake, first))
    chef.append(tool_results([chef.execute(c).result for c in calls]))
    send(target, fake, chef.compile(target, model=model).payload)
    assert seen == [REAL_ARGS]
    assert fake.violations == ()


def test_deferred_tools_carry_the_wire_schema_in_search_results_and_native_tools() -> None:
    seen: list[dict[str, Any]] = []
    chef = _chef(seen, default_defer=True)
    native = chef.compile("anthropic", model="claude-opus-5-5", strategy="anthropic-native")
    deferred = [t for t in native.payload["tools"] if t.get("name") == "list_accounts"]
    assert deferred and "Account_Number" in deferred[0]["input_schema"]["properties"]
    assert list(anthropic_property_keys_valid(native.payload, [])) == []
    fake = FakeAnthropic().script(
        tool_calls(("tool_search", {"tool_names": ["list_accounts"]})),
        tool_calls(("defer_execute", {"tool_name": "list_accounts", "params": WIRE_ARGS})),
        text("Done."),
    )
    shown = ""
    for _ in range(3):
        request = chef.compile("anthropic", model="claude-sonnet-4-5", strategy="client")
        calls = chef.ingest(send("anthropic", fake, request.payload))
        results = [chef.execute(c).result for c in calls]
        shown += "".join(str(r.content) for r in results)
        if results:
            chef.append(tool_results(results))
    assert "Account_Number" in shown and "Account Number" not in shown
    assert seen == [REAL_ARGS] and fake.violations == ()


def test_invalid_arguments_name_the_wire_keys_and_the_real_key_is_refused() -> None:
    seen: list[dict[str, Any]] = []
    chef = _chef(seen)
    chef.compile("anthropic", model="claude-sonnet-4-5")
    missing = chef.execute({"id": "c1", "name": "list_accounts", "arguments": {"_top": 1}})
    assert missing.result.is_error and "'Account_Number' is a required property" in str(
        missing.result.content
    )
    assert "Account Number" not in str(missing.result.content)
    real = {"Account_Number": "A", "_top": 1, "Account Number": "B"}
    stray = chef.execute({"id": "c2", "name": "list_accounts", "arguments": real})
    assert stray.result.is_error and "'Account_Number'" in str(stray.result.content)
    assert seen == []


def test_hooks_see_the_real_keys() -> None:
    seen: list[dict[str, Any]] = []
    hooked: list[dict[str, Any]] = []
    chef = _chef(seen)

    def hook(call: Any) -> None:
        hooked.append(dict(call.arguments))

    chef.before_tool_call(hook)
    chef.compile("anthropic", model="claude-sonnet-4-5")
    chef.execute({"id": "c1", "name": "list_accounts", "arguments": WIRE_ARGS})
    assert hooked == [REAL_ARGS] and seen == [REAL_ARGS]


def test_the_fake_refuses_a_bad_top_level_key_and_accepts_nested_ones() -> None:
    assert anthropic_property_keys_valid in ANTHROPIC_RULES
    bad = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    bad["tools"] = [{**TOOL, "defer_loading": True}]
    problems = list(anthropic_property_keys_valid(bad, []))
    assert problems == [
        "tools.0.custom.input_schema.properties: Property keys should match pattern "
        "'^[a-zA-Z0-9_.-]{1,64}$' (got 'Account Number')"
    ]
    nested = {"type": "object", "properties": {"ok.key": {"properties": {"a b": {}}}}}
    good = {**bad, "tools": [{"name": "t", "input_schema": nested}]}
    assert list(anthropic_property_keys_valid(good, [])) == []
    with pytest.raises(Exception, match="property_keys_valid"):
        send("anthropic", FakeAnthropic().script(text("ok")), bad)


CATALOG = Path("/work/shared/data/retrieval/bfcl_live.catalog.json")


@pytest.mark.skipif(not CATALOG.exists(), reason="shared BFCL catalog not on this machine")
def test_a_real_catalog_with_a_non_ascii_key_passes_the_fake() -> None:
    catalog = load_catalog(CATALOG, repair_schemas=True)
    chef = ContextChef()
    chef.register_tools(
        [t for t in catalog.tools if "año_vehiculo" in t.input_schema["properties"]]
    )
    chef.set_history([user("Quote a car loan.")])
    payload = chef.compile("anthropic", model="claude-sonnet-4-5").payload
    send("anthropic", FakeAnthropic().script(text("ok")), payload)
    assert "a_o_vehiculo" in json.dumps(payload)


def test_a_namespace_action_and_a_toolkit_show_and_take_the_wire_keys() -> None:
    seen: list[dict[str, Any]] = []
    group = {"name": "bank", "description": "Bank.", "tools": [TOOL]}
    handlers = {"list_accounts": lambda **kw: seen.append(kw) or "ok"}
    chef = ContextChef()
    chef.register_namespaces([group], handlers=handlers)
    vault = {"name": "vault", "description": "Vault.", "tools": [{**TOOL, "name": "open_vault"}]}
    chef.register_toolkits([vault], handlers={"open_vault": lambda **kw: "ok"})
    chef.set_history([user("go")])
    payload = chef.compile("anthropic", model="claude-sonnet-4-5").payload
    described = json.dumps([t for t in payload["tools"] if t["name"] == "bank"])
    assert "Account_Number" in described and "Account Number" not in described
    assert list(anthropic_property_keys_valid(payload, [])) == []
    action = {"action": "list_accounts", "args": WIRE_ARGS}
    done = chef.execute({"id": "n1", "name": "bank", "arguments": action})
    assert not done.result.is_error and seen == [REAL_ARGS]
    kit = chef.execute({"id": "k1", "name": "load_toolkit", "arguments": {"toolkit_name": "vault"}})
    assert "Account_Number" in str(kit.result.content)
    assert "Account Number" not in str(kit.result.content)


def test_openai_native_deferred_tools_carry_the_wire_schema() -> None:
    chef = _chef([], default_defer=True)
    payload = chef.compile("responses", model="gpt-5.5", strategy="openai-native").payload
    text_ = json.dumps(payload["tools"])
    assert "Account_Number" in text_ and "Account Number" not in text_


def _one_tool(schema: dict[str, Any], seen: list[dict[str, Any]]) -> ContextChef:
    chef = ContextChef()
    tool = {"name": "list_items", "description": "List items.", "input_schema": schema}
    chef.register_tools([tool], handlers={"list_items": lambda **kw: seen.append(kw) or "ok"})
    chef.set_history([user("List them.")])
    return chef


def _run(chef: ContextChef, arguments: dict[str, Any]) -> Any:
    done = chef.execute({"id": "c", "name": "list_items", "arguments": arguments})
    assert done.result is not None
    return done.result


def test_the_gate_enforces_the_real_schema_pattern_keywords_included() -> None:
    """``propertyNames`` and ``patternProperties`` are written for the real keys: checked
    on the wire keys, a valid call was refused and an invalid one reached the handler
    (break-it round 12). The gate now checks the real arguments against the real schema."""
    seen: list[dict[str, Any]] = []
    names = {
        "type": "object",
        "properties": {"$top": {"type": "integer"}, "$filter": {"type": "string"}},
        "propertyNames": {"pattern": "^\\$"},
        "additionalProperties": False,
    }
    chef = _one_tool(names, seen)
    assert "propertyNames" not in _schema("anthropic", chef.compile("anthropic").payload)
    assert not _run(chef, {"_top": 5}).is_error and seen == [{"$top": 5}]
    patterns = {
        "type": "object",
        "properties": {"$top": {"description": "page size"}, "$skip": {}},
        "patternProperties": {"^\\$": {"type": "integer", "minimum": 0}},
        "additionalProperties": False,
    }
    seen.clear()
    refused = _run(_one_tool(patterns, seen), {"_top": "all", "_skip": -5})
    assert refused.is_error and seen == []
    assert "_top" in refused.content and "$top" not in refused.content


def test_a_ref_on_the_arguments_object_is_followed_and_examples_are_renamed() -> None:
    seen: list[dict[str, Any]] = []
    schema = {
        "type": "object",
        "properties": {"Account Number": {"type": "string"}, "$top": {"type": "integer"}},
        "allOf": [{"$ref": "#/$defs/paging"}],
        "$defs": {
            "paging": {"required": ["Account Number"], "properties": {"$top": {"maximum": 100}}}
        },
        "default": {"$top": 10},
        "examples": [{"$top": 5, "Account Number": "A-1"}],
    }
    chef = _one_tool(schema, seen)
    sent = _schema("anthropic", chef.compile("anthropic").payload)
    assert sent["allOf"] == [
        {"properties": {"_top": {"maximum": 100}}, "required": ["Account_Number"]}
    ]
    assert sent["default"] == {"_top": 10}
    assert sent["examples"] == [{"_top": 5, "Account_Number": "A-1"}]
    gemini = json.dumps(_schema("gemini", chef.compile("gemini", model="m").payload))
    assert "Account Number" not in gemini and "$top" not in gemini  # refs inlined there
    assert not _run(chef, {"Account_Number": "A", "_top": 5}).is_error
    assert seen == [{"Account Number": "A", "$top": 5}]
    too_many = _run(chef, {"Account_Number": "A", "_top": 500})
    assert too_many.is_error and "_top" in too_many.content
    missing = _run(chef, {"_top": 5})
    assert missing.is_error and "'Account_Number' is a required property" in missing.content


def test_a_key_that_lost_its_letters_is_named_in_its_description() -> None:
    # 名称 / 地址 go as `__` / `___<hash>`: the model must still tell them apart
    # (break-it round 13, f5); a key that only lost punctuation reads the same.
    props = {
        "名称": {"type": "string"},
        "地址": {"type": "string", "description": "Street address"},
        "Account Number": {"type": "string", "description": "The account"},
        LONG: {"type": "string"},
        "référence": {"$ref": "#/$defs/Ref"},
        "标志": True,  # any value: sent as {"description": "标志"}
        "ok": {"type": "string"},
    }
    tool = {
        "name": "lookup",
        "description": "Look up a shop.",
        "input_schema": {
            "type": "object",
            "properties": props,
            "required": ["名称"],
            "$defs": {"Ref": {"type": "string"}},
        },
    }
    keys = wire_keys(Tool(**tool))
    sent = keys.schema["properties"]
    assert isinstance(sent, dict)
    told = {keys.to_real.get(k, k): v.get("description") for k, v in sent.items()}
    assert told == {
        "名称": "名称",
        "地址": "地址: Street address",
        "Account Number": "The account",
        LONG: LONG,
        "référence": None,  # a $ref takes no sibling keyword on some providers
        "标志": "标志",
        "ok": None,
    }
    assert props["名称"] == {"type": "string"}  # the caller's schema is not touched
    chef = ContextChef()
    chef.register_tools([tool])
    chef.set_history([user("Find the shop.")])
    for target in ("anthropic", "openai", "responses", "gemini"):
        schema = _schema(target, chef.compile(target, model="m").payload)
        assert all(PROPERTY_KEY_RE.fullmatch(k) for k in schema["properties"])
        descriptions = [p.get("description") for p in schema["properties"].values()]
        assert "名称" in descriptions and "地址: Street address" in descriptions
