"""Byte stability: same state -> same bytes; appending messages never touches the prefix."""

from __future__ import annotations

import copy
import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from contextchef import (
    ContextChef,
    ToolCall,
    ToolResult,
    assistant,
    canonical_dumps,
    load_catalog,
    tool_results,
    user,
)
from contextchef.providers import get_adapter
from contextchef.tools._catalogs import Catalog

TARGETS = ("anthropic", "openai", "responses", "gemini")


def build(catalogs: list[Catalog], *, shuffle_seed: int | None = None, **kw: Any) -> ContextChef:
    chef = ContextChef(**kw)
    chef.set_history([user("hi")])  # compile needs a message
    cats = list(catalogs)
    if shuffle_seed is not None:
        rng = random.Random(shuffle_seed)
        rng.shuffle(cats)
    for cat in cats:
        tools = list(cat.tools)
        if shuffle_seed is not None:
            rng.shuffle(tools)
        chef.register_catalog(
            Catalog(tools=tuple(tools), server_descriptions=cat.server_descriptions)
        )
    chef.set_system_prompt("You are an agent.")
    return chef


@pytest.fixture(scope="module")
def real_catalogs(catalog_paths: list[Path]) -> list[Catalog]:
    # gemini-cli and gemini-cli-legacy declare the same server: tell them apart by file
    return [
        load_catalog(p, server=p.stem if p.stem.startswith("gemini-cli") else None)
        for p in catalog_paths
    ]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("default_defer", [False, True])
def test_same_bytes_across_registration_orders(
    real_catalogs: list[Catalog], target: str, default_defer: bool
) -> None:
    reference = build(real_catalogs, default_defer=default_defer).compile(target).to_json()
    for seed in (1, 2):
        shuffled = build(real_catalogs, shuffle_seed=seed, default_defer=default_defer)
        assert shuffled.compile(target).to_json() == reference


@pytest.mark.parametrize("target", TARGETS)
def test_compiling_twice_gives_identical_bytes(real_catalogs: list[Catalog], target: str) -> None:
    chef = build(real_catalogs, default_defer=True)
    assert chef.compile(target).to_json() == chef.compile(target).to_json()


def test_schema_keys_are_canonical_but_property_order_is_the_authors() -> None:
    a = {
        "type": "object",
        "required": ["z"],
        "properties": {"z": {"type": "string", "description": "d"}, "a": {"type": "integer"}},
    }
    b = {
        "properties": {"z": {"description": "d", "type": "string"}, "a": {"type": "integer"}},
        "required": ["z"],
        "type": "object",
    }
    outs = []
    for schema in (a, b):
        chef = ContextChef()
        chef.set_history([user("hi")])  # compile needs a message
        chef.register_tools([{"name": "t", "description": "x", "input_schema": schema}])
        outs.append(chef.compile("anthropic").to_json())
    assert outs[0] == outs[1]
    chef = ContextChef()
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_tools([{"name": "t", "description": "x", "input_schema": a}])
    sent = chef.compile("anthropic").payload["tools"][0]["input_schema"]
    assert list(sent["properties"]) == ["z", "a"]
    assert list(sent) == sorted(sent)


@pytest.mark.parametrize("target", TARGETS)
def test_appending_messages_keeps_system_and_tools_bytes_and_extends_messages(
    real_catalogs: list[Catalog], target: str
) -> None:
    chef = build(real_catalogs, default_defer=True)
    history = [user("find the open issues")]
    chef.set_history(history)
    turns = [chef.compile(target)]
    call = ToolCall(id="c1", name="tool_search", arguments='{"queries": ["issues"]}')
    history += [assistant("Searching.", [call])]
    history += [tool_results([ToolResult(call_id="c1", name="tool_search", content="...")])]
    history += [assistant("Done."), user("thanks")]
    prefill = get_adapter(target).model_rules("model").prefill  # else "Done." can't end it
    for end in (3, 4, 5) if prefill else (3, 5):  # never compile with an unanswered call
        # pending (it would be answered "interrupted" by the normalizer)
        chef.set_history(history[:end])
        turns.append(chef.compile(target))
    for before, after in itertools.pairwise(turns):
        assert after.segments["system"] == before.segments["system"]
        assert after.segments["tools"] == before.segments["tools"]
        prev = before.segments["messages"]
        assert after.segments["messages"].startswith(prev[:-1])  # same list, more items


def test_compile_does_not_mutate_caller_history_or_tools() -> None:
    tool = {
        "name": "t",
        "description": "x",
        "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}},
    }
    snapshot = canonical_dumps(tool)
    history = [user("hi")]
    chef = ContextChef()
    chef.register_tools([tool])
    chef.set_history(history)
    payload = chef.compile("anthropic").payload
    payload["tools"][0]["input_schema"]["properties"]["b"] = {"type": "string"}
    payload["messages"].append({"role": "user", "content": "x"})
    assert canonical_dumps(tool) == snapshot
    assert history == [user("hi")]
    assert "b" not in chef.compile("anthropic").payload["tools"][0]["input_schema"]["properties"]
    assert len(chef.compile("anthropic").payload["messages"]) == 1
    # message entries are the session's record (read-only): edit a deep copy instead
    edited = copy.deepcopy(chef.compile("anthropic").payload)
    edited["messages"][0]["content"][0]["text"] = "changed"
    assert chef.compile("anthropic").payload["messages"][0]["content"][0]["text"] == "hi"


def test_registry_order_equals_sorted_order(real_catalogs: list[Catalog]) -> None:
    chef = build(real_catalogs, shuffle_seed=7)
    rank = {"builtin": 0, "runtime": 2}
    keys = [(rank.get(t.origin, 1), t.origin, t.name) for t in chef.tools]
    assert keys == sorted(keys)


def test_directory_lists_groups_and_names_in_sorted_order(real_catalogs: list[Catalog]) -> None:
    chef = build(real_catalogs, default_defer=True)
    lines = chef.view.directory.splitlines()
    headers = [ln.split(":")[0] for ln in lines[1:-1] if ln and not ln.startswith((" ", "["))]
    assert headers == sorted(headers)
    group: list[str] = []
    for ln in lines[1:]:
        if ln.startswith("  "):
            group.append(ln.strip())
        else:
            assert group == sorted(group)
            group = []
