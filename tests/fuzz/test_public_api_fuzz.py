"""Fuzz the public entry points the first two suites leave out (issue 12).

* history maintenance on a session (`ContextChef.compact`, `clear_tool_results`) and the
  session's `Pruner`, each followed by any further model output: only `ContextChefError`
  escapes, a call that raised changes nothing, the caller's data is not mutated, and the
  session keeps compiling on every target to payloads the official SDKs accept;
* every public function and constructor of ``contextchef.__all__`` (`PUBLIC_CALLS`,
  `CONSTRUCTED`), one argument at a time replaced by hostile values; a message or part
  that gets built must then be accepted and compiled, or refused with a `ContextChefError`;
* the SQLite session store and `SessionSync` with hostile ids, deltas, snapshots, versions;
* snapshots mutated in up to four places (deleted keys, swapped types, junk, duplicated
  or truncated lists): `restore` either raises a `ContextChefError` and changes nothing, or
  succeeds and every target compiles.

Examples per test: 200 under ``CONTEXTCHEF_FULL_TESTS=1`` (5 tests), forty times that for
`test_public_functions_and_constructors` (one cheap call per example): 9,000 in all; 25
(and 1,000) by default (tests/conftest.py).
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import inspect
import itertools
import json
import os
import pathlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fuzz_values import ARGUMENTS, JUNK, TEXTS, Raw, raw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_host_input_fuzz import TARGETS, compiled, same
from test_model_output_fuzz import REPLIES

import contextchef
from conftest import examples
from contextchef import (
    ContextChef,
    ContextChefError,
    Message,
    OffloadStore,
    RedisSessionStore,
    SessionSync,
    SQLiteSessionStore,
    TextPart,
    ToolCall,
    ToolResult,
    assistant,
    tool_results,
    user,
)
from sdk_check import sdk_problems

pytestmark = pytest.mark.filterwarnings("ignore")

EXAMPLES = examples(full=200, default=25)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ_CHEAP = settings(FUZZ, max_examples=40 * EXAMPLES)
READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
TOOLKIT = {"name": "kit", "description": "A kit.", "tools": [{"name": "k1", "description": "k"}]}
ODD_NAMES = st.sampled_from(
    ["", " ", "a" * 300, "名前", "a b", "__", "mcp__x", "tool_search", "read_file", "kit", "\x00"]
)
HOSTILE = st.one_of(JUNK, TEXTS, ODD_NAMES)


def _call(i: int) -> ToolCall:
    return ToolCall(id=f"c{i}", name="read_file", arguments=json.dumps({"path": f"f{i}"}))


def _history() -> list[Message]:
    messages: list[Message] = []
    for i in range(3):
        messages += [
            user(f"question {i}"),
            assistant(f"looking {i}", tool_calls=[_call(i)]),
            tool_results([ToolResult(call_id=f"c{i}", name="read_file", content="x" * 300)]),
            assistant(f"answer {i}"),
        ]
    return [*messages, user("last")]


def rich_session() -> ContextChef:
    """Tools, a toolkit and a history of three tool exchanges: maintenance has work to do."""
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": f"read {path}"})
    chef.register_toolkits([TOOLKIT])
    chef.set_history(_history())
    return chef


def answer_open_calls(chef: ContextChef) -> None:
    last = chef.history[-1] if chef.history else None
    if last is not None and last.role == "assistant" and last.tool_calls:
        chef.append(tool_results([chef.execute(c).result for c in last.tool_calls]))


def keeps_compiling(chef: ContextChef, *, sdk: bool = True) -> None:
    answer_open_calls(chef)
    if (
        not chef.history
        or chef.history[-1].role != "user"
        or not any(isinstance(p, TextPart) for p in chef.history[-1].parts)
    ):
        chef.append(user("next"))
    for target in TARGETS:
        payload = chef.compile(target).payload
        json.dumps(payload, allow_nan=False)
        assert not sdk or sdk_problems(target, payload) == [], target


def check_then_reply(
    call: Callable[[ContextChef], Any], argument: Any, reply: tuple[str, Any, Any]
) -> None:
    """`call` on a rich session, then any further model output, then every target compiles."""
    chef = rich_session()
    before = compiled(chef)
    try:
        kept = copy.deepcopy(argument)
    except Exception:
        kept = argument
    try:
        call(chef)
    except ContextChefError:
        assert compiled(chef) == before, "a call that raised changed the session"
    assert same(argument, kept), "the caller's argument was mutated"
    keeps_compiling(chef, sdk=False)  # compiled once (the SDK check comes at the end) ...
    api, name, arguments = reply
    try:
        chef.ingest(REPLIES[api](name, arguments, "ok"))
    except ContextChefError:
        chef.append(user("again"))
    keeps_compiling(chef)  # ... keeps compiling after any further model output


REPLY = st.tuples(
    st.sampled_from(sorted(REPLIES)),
    st.one_of(st.sampled_from(["read_file", "tool_search", "defer_execute"]), TEXTS),
    ARGUMENTS,
)


def _summary(kind: str, junk: Any) -> Callable[[str], Any]:
    if kind == "text":
        return lambda text: "The user asked three questions about files."
    if kind == "junk":
        return lambda text: junk
    return junk  # not callable at all (most of the time)


@FUZZ
@given(
    kind=raw(st.sampled_from(["text", "junk", "as-summarize"])),
    junk=raw(HOSTILE),
    keep=raw(st.one_of(st.integers(0, 4), JUNK)),
    reply=raw(REPLY),
)
def test_compact_then_any_reply(kind: Raw, junk: Raw, keep: Raw, reply: Raw) -> None:
    summarize = _summary(kind.value, junk.value)
    check_then_reply(
        lambda c: c.compact(summarize, keep_recent_turns=keep.value), keep.value, reply.value
    )


@FUZZ
@given(
    keep=raw(st.one_of(st.integers(0, 4), JUNK)),
    exclude=raw(st.one_of(st.just(()), st.just(["read_file"]), HOSTILE)),
    inputs=raw(st.one_of(st.booleans(), JUNK)),
    at_least=raw(st.one_of(st.integers(0, 4), JUNK)),
    reply=raw(REPLY),
)
def test_clear_tool_results_then_any_reply(
    keep: Raw, exclude: Raw, inputs: Raw, at_least: Raw, reply: Raw
) -> None:
    options = {
        "keep_recent": keep.value,
        "exclude_tools": exclude.value,
        "clear_inputs": inputs.value,
        "clear_at_least": at_least.value,
    }
    check_then_reply(lambda c: c.clear_tool_results(**options), options, reply.value)


PRUNER_CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "allow_only": lambda p, v: p.apply(p.allow_only(v)),
    "apply": lambda p, v: p.apply(v),
    "extract_toolkit": lambda p, v: p.extract_toolkit(v),
    "is_namespace_call": lambda p, v: p.is_namespace_call(v),
    "is_toolkit_loader": lambda p, v: p.is_toolkit_loader(v),
    "prune_by_task": lambda p, v: p.apply(p.prune_by_task(v)),
    "prune_by_task_and_allowlist": lambda p, v: p.apply(p.prune_by_task_and_allowlist(v, v)),
    "strategy": lambda p, v: p.prune_by_task_and_allowlist("read", ["read_file"], strategy=v),
    "resolve_namespace": lambda p, v: p.resolve_namespace(v),
    "set_blocked_tools": lambda p, v: p.set_blocked_tools(v),
    "compile-clear": lambda p, v: (p.compile(), p.clear()),
}


@FUZZ
@given(
    method=raw(st.sampled_from(sorted(PRUNER_CALLS))),
    value=raw(
        st.one_of(
            HOSTILE,
            st.lists(st.one_of(ODD_NAMES, TEXTS), max_size=3),
            st.builds(lambda a: {"name": "kit", "arguments": a}, ARGUMENTS),
        )
    ),
    reply=raw(REPLY),
)
def test_the_pruner_then_any_reply(method: Raw, value: Raw, reply: Raw) -> None:
    run = PRUNER_CALLS[method.value]
    check_then_reply(lambda c: run(c.pruner, value.value), value.value, reply.value)


# -- every public function and constructor -------------------------------------------------

_STORE = OffloadStore(pathlib.Path(tempfile.mkdtemp(prefix="contextchef-fuzz-")))
atexit.register(shutil.rmtree, _STORE.root, ignore_errors=True)
_HIST = tuple(_history())
_RESULT = ToolResult(call_id="c", name="read_file", content="line\n" * 200)
_SUMMARIZE: Callable[[str], str] = lambda text: "summary"  # noqa: E731

# name -> (function, arguments that work); each example replaces one of them with junk
PUBLIC_CALLS: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "native_context": (
        contextchef.native_context,
        {"target": "anthropic", "model": "claude-opus-5-5", "policy": contextchef.ContextPolicy()},
    ),
    "compact": (contextchef.compact, {"history": _HIST, "summarize": _SUMMARIZE}),
    "compact.keep": (
        contextchef.compact,
        {"history": _HIST, "summarize": _SUMMARIZE, "keep_recent_turns": 1},
    ),
    "compact.render": (
        contextchef.compact,
        {"history": _HIST, "summarize": _SUMMARIZE, "render": lambda m: "text"},
    ),
    "compact.search_tool": (
        contextchef.compact,
        {"history": _HIST, "summarize": _SUMMARIZE, "search_tool": "tool_search"},
    ),
    "clear_tool_results": (
        contextchef.clear_tool_results,
        {
            "history": _HIST,
            "keep_recent": 1,
            "exclude_tools": (),
            "clear_inputs": False,
            "clear_at_least": 0,
            "placeholder": "[cleared]",
        },
    ),
    "clear_thinking": (
        contextchef.clear_thinking,
        {"history": _HIST, "keep_recent_turns": 1, "profile": None},
    ),
    "cut_points": (contextchef.cut_points, {"history": _HIST}),
    "conversation_query": (
        contextchef.conversation_query,
        {"messages": _HIST, "part_chars": 300, "max_chars": 8000},
    ),
    "plan_compaction": (contextchef.plan_compaction, {"history": _HIST, "keep_recent_turns": 1}),
    "check_pairing": (contextchef.check_pairing, {"history": _HIST}),
    "normalize": (
        contextchef.normalize,
        {"history": _HIST, "profile": None, "keeps": None, "after": None},
    ),
    "canonical_dumps": (contextchef.canonical_dumps, {"value": {"a": [1, "b"]}}),
    "estimate_tokens": (contextchef.estimate_tokens, {"text": "hello"}),
    "offload_result": (
        contextchef.offload_result,
        {
            "result": _RESULT,
            "store": _STORE,
            "max_inline_chars": 100,
            "head_lines": 2,
            "tail_lines": 2,
        },
    ),
    "read_offloaded": (
        contextchef.read_offloaded,
        {"store": _STORE, "locator": "0" * 64 + ".txt", "offset": 0, "length": 10},
    ),
    "to_strict_schema": (contextchef.to_strict_schema, {"schema": READ["input_schema"]}),
    "tool_from_dict": (
        contextchef.tool_from_dict,
        {"data": READ, "server": None, "source": None, "repair_schemas": False},
    ),
    "tools_from_mcp": (contextchef.tools_from_mcp, {"result": {"tools": [READ]}, "server": "s"}),
    "wire_name": (
        contextchef.wire_name,
        {"origin": "s", "name": "read", "server": "s", "qualify": True},
    ),
    "load_catalog": (
        contextchef.load_catalog,
        {"path": "/nonexistent/catalog.json", "server": None, "repair_schemas": False},
    ),
    "prefix_break": (contextchef.prefix_break, {"before": None, "after": None}),
    "payload_break": (
        contextchef.payload_break,
        {"before": {"messages": []}, "after": {"messages": []}, "target": None},
    ),
    "user": (contextchef.user, {"text": "hi"}),
    "assistant": (contextchef.assistant, {"text": "hi", "tool_calls": ()}),
    "tool_results": (contextchef.tool_results, {"results": (_RESULT,), "text": ""}),
    "from_anthropic": (contextchef.from_anthropic, {"messages": [], "system": None}),
    "from_openai": (contextchef.from_openai, {"messages": []}),
    "from_responses": (contextchef.from_responses, {"input_items": [], "instructions": None}),
    "from_gemini": (
        contextchef.from_gemini,
        {"contents": [], "system_instruction": None, "id_offset": 0},
    ),
    "load_demo_catalog": (contextchef.load_demo_catalog, {}),
}
_REQUEST = ContextChef()
_REQUEST.set_history([user("hi")])
PUBLIC_CALLS["prefix_break"][1].update(
    before=_REQUEST.compile("anthropic"), after=_REQUEST.compile("anthropic")
)

# class -> fields that work; each example replaces one field (or adds an unknown one)
CONSTRUCTED: dict[str, dict[str, Any]] = {
    "ContextPolicy": {"budget_tokens": 90_000, "never_clear": ("grep",), "clear_at": 0.4},
    "TextPart": {"text": "a", "provider_data": None},
    "MediaPart": {"media_type": "image/png", "url": "https://example.com/a.png"},
    "ReasoningPart": {"provider": "anthropic", "text": "t", "provider_data": None},
    "ProviderPart": {"provider": "anthropic", "data": {"type": "x"}},
    "ToolCall": {"id": "c9", "name": "read_file", "arguments": "{}", "provider_data": None},
    "ToolResult": {"call_id": "c9", "name": "read_file", "content": "x", "is_error": False},
    "Message": {"role": "user", "parts": (TextPart(text="a"),)},
    "Tool": {"name": "t", "description": "d", "input_schema": {"type": "object"}},
    "ToolAnnotations": {"read_only": True, "title": "T"},
    "Toolkit": {"name": "k", "description": "d", "tools": ()},
    "Namespace": {"name": "ns", "description": "d", "tools": ()},
    "Skill": {"name": "s", "description": "d", "instructions": "i", "tools": ()},
    "DeferredConfig": {"default_results": 5, "max_results": 10},
    "HistoryRules": {"name": "h", "alternate_roles": False},
    "RankerConfig": {"kind": "bm25", "bm25_weight": 0.3, "rrf_k": 60, "threads": 0},
    "ExposurePolicy": {"default_defer": False, "defer": (), "pin": ()},
    "CacheCostModel": {"history_tokens": 80000, "price_per_mtok": 3.0},
    "Announcement": {"id": "a", "content": "c"},
    "OverflowHandoff": {"summarize": _SUMMARIZE, "max_history_tokens": 1000},
    "InMemoryStore": {"initial": {"k": "v"}},
    "FileMemoryStore": {"path": "/nonexistent-dir/memory.json"},
    "OffloadStore": {"root": pathlib.Path("/nonexistent-dir")},
    "Registry": {"qualify": True},
    "SQLiteSessionStore": {"path": ":memory:", "ttl": None, "timeout": 1.0},
    "SnapshotKeys": {"keys": {"k1": b"k" * 32}, "current": "k1"},
    "McpRules": {"trust_annotations": False, "max_tools": 10, "description_chars": 100},
    "ContextChef": {"default_defer": False, "defer": (), "pin": (), "qualify": True},
}
_PART_KINDS = ("TextPart", "MediaPart", "ReasoningPart", "ProviderPart", "ToolCall", "ToolResult")


def test_every_public_callable_is_fuzzed() -> None:
    """A new export is added here or to the other fuzz suites, not forgotten."""
    fuzzed_elsewhere = {
        "ContextChef",  # its methods: test_host_input_fuzz, this file
        "SessionSync",  # test_session_store_and_sync
        "Pruner",  # chef.pruner: test_the_pruner_then_any_reply
        "Exposure",  # a decorator-like factory for ExposurePolicy modes
    }
    plain_results = {  # value objects the library returns; built by hand only in tests
        "Allowed",
        "CacheAuditFinding",
        "CacheReport",
        "ContextBudget",
        "ContextUsage",
        "NativeContext",
        "Catalog",
        "Change",
        "CompileEvent",
        "CompiledGroups",
        "CompiledRequest",
        "CompiledTool",
        "Denied",
        "Execution",
        "Normalized",
        "ParsedHistory",
        "PlanReport",
        "PolicyDifference",
        "PrefixBreak",
        "PruneResult",
        "ResolvedAction",
        "StoredSession",
        "VolatileValue",
        "SchemaReport",
        "RedisSessionStore",  # needs a server: tests/session/test_store_redis*.py
        "SessionStore",  # a Protocol
        "MemoryStore",  # a Protocol
    }
    missing = []
    for name in contextchef.__all__:
        obj = getattr(contextchef, name)
        if not callable(obj) or (inspect.isclass(obj) and issubclass(obj, BaseException)):
            continue
        if name in PUBLIC_CALLS or name in CONSTRUCTED or name in fuzzed_elsewhere:
            continue
        if name in plain_results:
            continue
        missing.append(name)
    assert missing == []


_SCRATCH = tempfile.mkdtemp(prefix="contextchef-fuzz-cwd-")
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)


@contextlib.contextmanager
def _in_scratch_dir() -> Iterator[None]:
    here = os.getcwd()
    os.chdir(_SCRATCH)
    try:
        yield
    finally:
        os.chdir(here)


def _builds_and_compiles(made: Any) -> None:
    """A part or message that got built is accepted and compiled, or refused by name."""
    if isinstance(made, Message):
        messages = [user("start"), made]
    elif type(made).__name__ in _PART_KINDS:
        role = "assistant" if type(made).__name__ in ("ToolCall", "ReasoningPart") else "user"
        messages = [user("start"), Message(role=role, parts=(made,))]
    else:
        return
    chef = ContextChef()
    chef.register_tools([READ], handlers={"read_file": lambda path="": "ok"})
    try:
        chef.set_history(messages)
    except ContextChefError:
        return
    keeps_compiling(chef)


@FUZZ_CHEAP
@given(
    name=raw(st.sampled_from(sorted(PUBLIC_CALLS) + sorted(CONSTRUCTED))),
    slot=raw(st.integers(0, 10)),
    value=raw(HOSTILE),
)
def test_public_functions_and_constructors(name: Raw, slot: Raw, value: Raw) -> None:
    """One argument replaced by a hostile value: a result or a `ContextChefError`."""
    if name.value in PUBLIC_CALLS:
        function, good = PUBLIC_CALLS[name.value]
    else:
        function, good = getattr(contextchef, name.value), CONSTRUCTED[name.value]
    keys = sorted(good)
    kwargs = dict(good)
    if slot.value >= len(keys):
        kwargs["unexpected_argument"] = value.value
    else:
        kwargs[keys[slot.value]] = value.value
    try:
        kept = copy.deepcopy(value.value)
    except Exception:
        kept = value.value
    try:
        with _in_scratch_dir():  # a store given a junk path creates a file where it runs
            made = function(**kwargs)
    except ContextChefError:
        return
    except TypeError as exc:
        # Python's own signature check (an unknown keyword) is the only TypeError allowed
        assert "unexpected_argument" in kwargs and "unexpected" in str(exc), exc
        return
    finally:
        assert same(value.value, kept), "the caller's argument was mutated"
    if isinstance(made, SQLiteSessionStore):
        made.close()
    _builds_and_compiles(made)


# -- session stores ----------------------------------------------------------------------

STORE_CALLS: dict[str, Callable[[SQLiteSessionStore, Any], Any]] = {
    "load": lambda s, v: s.load(v),
    "append.id": lambda s, v: s.append(v, [], expected_version=1),
    "append.delta": lambda s, v: s.append("s1", v, expected_version=1),
    "append.version": lambda s, v: s.append("s1", [], expected_version=v),
    "snapshot.id": lambda s, v: s.snapshot(v, {"a": 1}, expected_version=0),
    "snapshot.value": lambda s, v: s.snapshot("s1", v, expected_version=1),
    "snapshot.version": lambda s, v: s.snapshot("s1", {"a": 1}, expected_version=v),
    "list_sessions": lambda s, v: s.list_sessions(v),
    "delete": lambda s, v: s.delete(v),
    "expire.id": lambda s, v: s.expire(v, 10.0),
    "expire.ttl": lambda s, v: s.expire("s1", v),
    "sync.id": lambda s, v: SessionSync(s, v),
    "sync.checkpoint": lambda s, v: SessionSync(s, "s1", checkpoint_every=v),
    "sync.load_into": lambda s, v: SessionSync(s, "s1").load_into(v),
    "sync.save": lambda s, v: SessionSync(s, "s1").save(v),
}
DELTAS = st.lists(
    st.one_of(
        JUNK,
        st.tuples(st.sampled_from(["set", "extend", "del", "nope"]), JUNK, JUNK).map(list),
        st.builds(lambda v: ["set", ["history"], v], JUNK),
        st.builds(lambda v: ["extend", ["history"], [v]], JUNK),
    ),
    max_size=3,
)


_RUNS = itertools.count()


def _store(kind: str, request: pytest.FixtureRequest) -> Any:
    """A fresh, empty store of `kind`: SQLite in memory, or the real Redis of
    ``redis_server_url`` under a prefix of its own."""
    if kind == "sqlite":
        return SQLiteSessionStore(":memory:")
    url = request.getfixturevalue("redis_server_url")
    return RedisSessionStore(url, prefix=f"fuzz{os.getpid()}-{next(_RUNS)}:")


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_session_store_and_sync(kind: str, request: pytest.FixtureRequest) -> None:
    """A hostile call on a store holding one session: a result or a `ContextChefError`;
    what the store holds afterwards either loads into a session that compiles, or is
    refused with a `ContextChefError`. On SQLite and on a real Redis server."""

    @FUZZ
    @given(
        method=raw(st.sampled_from(sorted(STORE_CALLS))),
        value=raw(st.one_of(HOSTILE, DELTAS)),
    )
    def run(method: Raw, value: Raw) -> None:
        _hostile_store_call(_store(kind, request), method, value)

    run()


def _hostile_store_call(store: Any, method: Raw, value: Raw) -> None:
    try:
        sync = SessionSync(store, "s1")
        sync.load_into(rich_session())
        sync.save(rich_session())
        try:
            kept = copy.deepcopy(value.value)
        except Exception:
            kept = value.value
        with contextlib.suppress(ContextChefError):
            STORE_CALLS[method.value](store, value.value)
        assert same(value.value, kept), "the caller's argument was mutated"
        chef = rich_session()
        try:
            SessionSync(store, "s1").load_into(chef)
        except ContextChefError:
            assert compiled(chef) == compiled(rich_session()), "a refused load changed the chef"
        keeps_compiling(chef)
    finally:
        if isinstance(store, SQLiteSessionStore):
            store.close()
        else:  # a Redis prefix per example: leave the server as it was
            with contextlib.suppress(ContextChefError):
                store.delete("s1")


# -- corrupted snapshots -----------------------------------------------------------------

MUTATIONS = st.lists(
    st.tuples(
        st.sampled_from(["replace", "delete", "retype", "duplicate", "truncate", "insert"]),
        st.lists(st.integers(0, 50), min_size=1, max_size=6),  # a path, as choices
        JUNK,
    ),
    min_size=1,
    max_size=4,
)


def _retyped(value: Any) -> Any:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)}
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) or (isinstance(value, int) and value.bit_length() < 10_000):
        return str(value)
    if isinstance(value, int):  # past what str() writes (4,300 digits): still a text
        return f"an integer of {value.bit_length()} bits"
    return {}


def repr_key(key: Any) -> str:
    return f"{type(key).__name__}:{key if isinstance(key, str) else id(key)}"


def mutate(snapshot: Any, mutations: list[tuple[str, list[int], Any]]) -> Any:
    """`snapshot` (plain JSON) changed at up to four places chosen by `mutations`."""
    for kind, choices, junk in mutations:
        parent: Any = None
        key: Any = None
        node = snapshot
        for choice in choices:  # walk down: each choice picks a child, modulo their number
            if isinstance(node, dict) and node:
                k = sorted(node, key=repr_key)[choice % len(node)]
            elif isinstance(node, list) and node:
                k = choice % len(node)
            else:
                break
            parent, key, node = node, k, node[k]
        if parent is None:
            continue
        if kind == "replace":
            parent[key] = junk
        elif kind == "delete":
            del parent[key]
        elif kind == "retype":
            parent[key] = _retyped(node)
        elif kind == "duplicate" and isinstance(parent, list):
            try:
                twin = copy.deepcopy(node)
            except RuntimeError:  # junk put there by an earlier mutation (`Hostile`)
                twin = node
            parent.insert(key, twin)
        elif kind == "truncate" and isinstance(node, (list, str)):
            parent[key] = node[: len(node) // 2]
        elif kind == "insert" and isinstance(node, dict):
            node[f"x{choices[-1]}"] = junk
        elif kind == "insert" and isinstance(node, list):
            node.append(junk)
    return snapshot


_SNAPSHOT = json.loads(json.dumps(rich_session().snapshot()))


@FUZZ
@given(mutations=raw(MUTATIONS), reply=raw(REPLY))
def test_restore_a_snapshot_mutated_in_several_places(mutations: Raw, reply: Raw) -> None:
    """A stored snapshot mutated anywhere: `restore` refuses it whole (nothing changes),
    or takes it and the session compiles for every target, then after any model output."""
    snapshot = mutate(copy.deepcopy(_SNAPSHOT), mutations.value)
    check_then_reply(lambda c: c.restore(snapshot, allow_unsigned=True), snapshot, reply.value)


@FUZZ
@given(mutations=raw(MUTATIONS), reply=raw(REPLY))
def test_restore_the_text_of_a_snapshot_mutated_in_several_places(
    mutations: Raw, reply: Raw
) -> None:
    """The same, given as the JSON text a store keeps (NaN written as ``json`` writes it):
    `restore` of text keeps what it read, and builds old messages when read (lazily)."""
    snapshot = mutate(copy.deepcopy(_SNAPSHOT), mutations.value)
    try:
        text = json.dumps(snapshot)
    except (TypeError, ValueError, RecursionError):  # junk no JSON text holds: not stored
        return
    check_then_reply(lambda c: c.restore(text, allow_unsigned=True), text, reply.value)


def test_mutate_changes_the_snapshot() -> None:
    """The mutation helper really mutates (else the test above would prove nothing)."""
    changed = mutate(copy.deepcopy(_SNAPSHOT), [("delete", [0], None)])
    assert changed != _SNAPSHOT
    assert len(changed) == len(_SNAPSHOT) - 1
    retyped = mutate(copy.deepcopy(_SNAPSHOT), [("retype", [0], None)])
    assert retyped != _SNAPSHOT
