"""Fuzz every public entry point with hostile host input (issue 12).

Each example builds a small session, calls one public method with values drawn from
`fuzz_values` (wrong types, NaN, huge integers, lone surrogates, runaway nesting, hostile
objects) and checks that:

* nothing but a `ContextChefError` escapes;
* a call that raised changed nothing: every target compiles to the same bytes as before;
* the caller's arguments are not mutated;
* the session keeps compiling on every target after the next user message, to payloads
  the official SDKs' request types accept.

Examples per test: 600 under ``CONTEXTCHEF_FULL_TESTS=1`` (9 tests: 5,400), 60 by default
(tests/conftest.py).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from typing import Any

import pytest
from fuzz_values import ARGUMENTS, JUNK, TEXTS, Raw, raw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from contextchef import (
    ContextChef,
    ContextChefError,
    ToolCall,
    ToolResult,
    assistant,
    tool_results,
    user,
)
from contextchef.analysis import catalog_plan
from sdk_check import sdk_problems

pytestmark = pytest.mark.filterwarnings("ignore")  # host input may warn; only raising counts

EXAMPLES = examples(full=600, default=60)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TARGETS = ("anthropic", "openai", "responses", "gemini")
READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
TOOLKIT = {"name": "kit", "description": "A kit.", "tools": [{"name": "k1", "description": "k"}]}


def session() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.register_toolkits([TOOLKIT])
    chef.set_history([user("hello")])
    return chef


def compiled(chef: ContextChef) -> list[str]:
    return [chef.compile(t).to_json() for t in TARGETS]


def same(a: Any, b: Any, depth: int = 0) -> bool:
    """Deep equality that treats NaN as equal to itself and never prints a value."""
    if depth > 150:  # deeper than any value the library keeps: not worth the stack
        return True
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(ka, kb, depth + 1) and same(va, vb, depth + 1)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, depth + 1) for x, y in zip(a, b, strict=True))
    if isinstance(a, (str, bytes, int, float, type(None))):
        return bool(a == b)
    return a is b or type(a).__module__ != "builtins"


def check(call: Callable[[ContextChef], Any], argument: Any = None) -> None:
    chef = session()
    before = compiled(chef)
    try:
        kept = copy.deepcopy(argument)
    except Exception:  # a hostile value cannot be copied: skip the mutation check
        kept = argument
    try:
        call(chef)
    except ContextChefError:
        assert compiled(chef) == before, "a call that raised changed the session"
    assert same(argument, kept), "the caller's argument was mutated"
    last = chef.history[-1] if chef.history else None
    if last is not None and last.role == "assistant" and last.tool_calls:
        chef.append(
            tool_results(
                [ToolResult(call_id=c.id, name=c.name, content="ok") for c in last.tool_calls]
            )
        )
    chef.append(user("next"))
    for target in TARGETS:
        payload = chef.compile(target).payload
        assert sdk_problems(target, payload) == [], target


@FUZZ
@given(
    target=raw(st.one_of(st.sampled_from(TARGETS), JUNK)),
    model=raw(st.one_of(st.just("m"), JUNK)),
    max_tokens=raw(st.one_of(st.none(), st.integers(min_value=1, max_value=10_000), JUNK)),
    strategy=raw(st.one_of(st.sampled_from(["client", "flat", "auto"]), JUNK)),
    extra=raw(st.one_of(st.none(), JUNK)),
    betas=raw(st.one_of(st.just(()), JUNK)),
    prefill=raw(st.one_of(st.none(), JUNK)),
)
def test_compile_options(
    target: Raw, model: Any, max_tokens: Any, strategy: Any, extra: Any, betas: Any, prefill: Any
) -> None:
    target, model, max_tokens, strategy, extra, betas, prefill = (
        target.value,
        model.value,
        max_tokens.value,
        strategy.value,
        extra.value,
        betas.value,
        prefill.value,
    )
    options = {
        "model": model,
        "max_tokens": max_tokens,
        "strategy": strategy,
        "extra": extra,
        "betas": betas,
        "prefill": prefill,
    }
    check(lambda c: c.compile(target, **options), options)


@FUZZ
@given(
    name=raw(
        st.sampled_from(
            [
                "set_mode",
                "set_system_prompt",
                "set_blocked_tools",
                "load_toolkit",
                "wire_name",
                "reveal_tools",
                "set_dynamic_state",
                "set_implicit_context",
                "restore",
                "ingest",
                "catalog_plan",  # contextchef.analysis.catalog_plan(chef, target)
                "register_catalog",
                "register_runtime_tool",
            ]
        )
    ),
    value=raw(st.one_of(JUNK, TEXTS)),
)
def test_one_argument_methods(name: str, value: Any) -> None:
    name, value = name.value, value.value
    if name == "catalog_plan":
        check(lambda c: catalog_plan(c, value), value)
    else:
        check(lambda c: getattr(c, name)(value), value)


@FUZZ
@given(
    history=raw(
        st.one_of(
            JUNK, st.lists(st.one_of(JUNK, st.builds(user, st.text(max_size=10))), max_size=4)
        )
    )
)
def test_set_history_and_append(history: Any) -> None:
    history = history.value
    check(lambda c: c.set_history(history), history)
    check(lambda c: c.append(*history) if isinstance(history, list) else c.append(history))


def _tool(name: Any, description: Any, schema: Any) -> dict[str, Any]:
    return {"name": name, "description": description, "input_schema": schema}


SCHEMAS = st.one_of(
    JUNK,
    st.builds(lambda p: {"type": "object", "properties": {"x": p}}, JUNK),
    st.builds(
        lambda v: {"type": "object", "properties": {"x": {"type": "integer", "maximum": v}}}, JUNK
    ),
)


@FUZZ
@given(
    tools=raw(
        st.lists(
            st.one_of(
                JUNK, st.builds(_tool, st.one_of(TEXTS, JUNK), st.one_of(TEXTS, JUNK), SCHEMAS)
            ),
            max_size=3,
        )
    ),
    server=raw(st.one_of(st.none(), TEXTS)),
)
def test_register_tools(tools: list[Any], server: Any) -> None:
    tools, server = tools.value, server.value
    check(lambda c: c.register_tools(tools, server=server), tools)


@FUZZ
@given(
    groups=raw(
        st.lists(
            st.one_of(
                JUNK,
                st.fixed_dictionaries(
                    {"name": st.one_of(TEXTS, JUNK), "description": st.one_of(TEXTS, JUNK)},
                    optional={
                        "tools": st.one_of(
                            JUNK, st.lists(st.one_of(JUNK, st.just(READ)), max_size=2)
                        )
                    },
                ),
            ),
            max_size=2,
        )
    ),
    kind=raw(st.sampled_from(["register_namespaces", "register_toolkits", "register_skills"])),
)
def test_register_groups(groups: list[Any], kind: str) -> None:
    groups, kind = groups.value, kind.value
    check(lambda c: getattr(c, kind)(groups), groups)


@FUZZ
@given(result=raw(JUNK), server=raw(st.one_of(TEXTS, JUNK)))
def test_register_mcp_tools(result: Any, server: Any) -> None:
    result, server = result.value, server.value
    check(lambda c: c.register_mcp_tools(result, server=server), result)


@FUZZ
@given(
    key=raw(st.one_of(TEXTS, JUNK)),
    content=raw(st.one_of(TEXTS, JUNK)),
    channel=raw(st.one_of(st.just("auto"), JUNK)),
)
def test_announce(key: Any, content: Any, channel: Any) -> None:
    key, content, channel = key.value, content.value, channel.value
    check(lambda c: c.announce(key, content, channel=channel), content)


@FUZZ
@given(
    path=raw(st.lists(st.one_of(st.text(max_size=5), st.integers(0, 3)), min_size=1, max_size=3)),
    value=raw(JUNK),
)
def test_restore_a_corrupted_snapshot(path: list[Any], value: Any) -> None:
    """Any one field of a real snapshot replaced by junk: refused whole, or usable."""
    path, value = path.value, value.value

    def corrupt(chef: ContextChef) -> None:
        snapshot = copy.deepcopy(session().snapshot())
        node: Any = snapshot
        for key in path[:-1]:
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                break
        if isinstance(node, dict):
            node[path[-1] if isinstance(path[-1], str) else str(path[-1])] = value
        elif isinstance(node, list) and node:
            node[int(path[-1]) % len(node) if isinstance(path[-1], int) else 0] = value
        chef.restore(snapshot, allow_unsigned=True)

    check(corrupt)


CALL_SHAPES = st.one_of(
    st.builds(
        lambda n, a: {"id": "c1", "name": n, "arguments": a},
        st.one_of(st.just("read_file"), TEXTS),
        ARGUMENTS,
    ),
    st.builds(
        lambda n, a: {"id": "c1", "function": {"name": n, "arguments": a}},
        st.just("read_file"),
        ARGUMENTS,
    ),
    st.builds(lambda a: {"functionCall": {"name": "read_file", "args": a}}, ARGUMENTS),
    st.builds(
        lambda a: {
            "id": "c1",
            "name": "defer_execute",
            "arguments": {"tool_name": "read_file", "params": a},
        },
        ARGUMENTS,
    ),
    st.builds(lambda a: {"id": "c1", "name": "tool_search", "arguments": a}, ARGUMENTS),
    JUNK,
)


@FUZZ
@given(
    call=raw(CALL_SHAPES),
    method=raw(st.sampled_from(["check_tool_call", "execute", "handle_tool"])),
)
def test_the_gate_answers_any_call(call: Any, method: str) -> None:
    """The model's call in any shape, with any arguments: a decision, never a crash; the
    answer goes into history and every later compile still works."""
    call, method = call.value, method.value

    def run(chef: ContextChef) -> None:
        done = getattr(chef, method)(call)
        tool_call = ToolCall(id="c1", name="read_file", arguments="{}")
        result = getattr(done, "result", None)
        if isinstance(result, ToolResult):
            answer = dataclasses.replace(result, call_id="c1", name="read_file")
            chef.append(assistant(tool_calls=[tool_call]), tool_results([answer]))

    check(run, call)
