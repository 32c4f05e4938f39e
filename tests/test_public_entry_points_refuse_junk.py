"""Regression tests for what the public-API fuzz (tests/fuzz/test_public_api_fuzz.py) found.

Each class below was one finding, fixed as a class (issue 12):

* public helpers that did no argument checks and raised `TypeError`, `AttributeError`,
  `KeyError`, `OverflowError` or an `AssertionError` on wrong types;
* error messages that formatted an unbounded value (``{value!r:.40}`` still calls
  ``repr``, which refuses a 5,000-digit integer with `ValueError`);
* constructors that took values which then broke every later compile (a media URL that
  is a number, provider data holding NaN or nested 1,200 levels, a tool's ``meta``);
* session-store writes that stored a record no later load could read (a malformed delta,
  a lone surrogate), or crashed on a bad prefix.
"""

from __future__ import annotations

import math
import pathlib
import re
from collections.abc import Callable
from typing import Any

import pytest

import contextchef as cc
from contextchef import (
    ContextChef,
    ContextChefError,
    InvalidToolError,
    SessionStoreError,
    ToolCall,
    ToolResult,
    UsageError,
    assistant,
    tool_results,
    user,
)

HUGE = 10**5000
DEEP: Any = 1
for _ in range(1200):
    DEEP = [DEEP]
HISTORY = (
    user("q"),
    assistant(tool_calls=[ToolCall(id="c1", name="t", arguments="{}")]),
    tool_results([ToolResult(call_id="c1", name="t", content="x" * 50)]),
    user("again"),
)
STORE = cc.OffloadStore(pathlib.Path("/nonexistent-contextchef-dir"))


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.set_history(list(HISTORY))
    return chef


# (case id, call, a fragment the message must hold)
UNCHECKED_ARGUMENTS: list[tuple[str, Callable[[], object], str]] = [
    ("compact-history", lambda: cc.compact([None], lambda t: "s"), r"history\[0\] must be"),
    ("compact-summarize", lambda: cc.compact(HISTORY, None), "summarize must be callable"),  # type: ignore[arg-type]
    ("compact-render", lambda: cc.compact(HISTORY, str, render=5), "render must be callable"),  # type: ignore[arg-type]
    (
        "compact-huge-keep",
        lambda: cc.compact(HISTORY, str, keep_recent_turns=-HUGE),
        "keep_recent_turns must be an integer >= 0, got <an integer of about 5,000 digits>",
    ),
    ("plan-keep-none", lambda: cc.plan_compaction(HISTORY, keep_recent_turns=None), "keep_recent"),  # type: ignore[arg-type]
    ("plan-history", lambda: cc.plan_compaction(None, keep_recent_turns=1), "history must be"),  # type: ignore[arg-type]
    ("clear-history", lambda: cc.clear_tool_results(["x"], keep_recent=0), r"history\[0\]"),  # type: ignore[list-item]
    (
        "clear-exclude-none",
        lambda: cc.clear_tool_results(HISTORY, keep_recent=0, exclude_tools=None),  # type: ignore[arg-type]
        "exclude_tools must be a string or a list of strings",
    ),
    (
        "clear-inputs",
        lambda: cc.clear_tool_results(HISTORY, keep_recent=0, clear_inputs="yes"),  # type: ignore[arg-type]
        "clear_inputs must be a bool",
    ),
    (
        "chef-clear-exclude",
        lambda: _chef().clear_tool_results(keep_recent=0, exclude_tools=[1]),  # type: ignore[list-item]
        r"exclude_tools\[0\] must be a string",
    ),
    ("chef-compact-summarize", lambda: _chef().compact(None), "summarize must be callable"),  # type: ignore[arg-type]
    ("thinking-history", lambda: cc.clear_thinking("ab", keep_recent_turns=1), "history must"),  # type: ignore[arg-type]
    (
        "thinking-profile",
        lambda: cc.clear_thinking(HISTORY, keep_recent_turns=1, profile=3),  # type: ignore[arg-type]
        "profile must be a HistoryRules",
    ),
    ("normalize-profile", lambda: cc.normalize(HISTORY, profile=3), "profile must be"),  # type: ignore[arg-type]
    ("normalize-keeps", lambda: cc.normalize(HISTORY, keeps=3), "keeps must be callable"),  # type: ignore[arg-type]
    ("normalize-after", lambda: cc.normalize(HISTORY, after=3), "after must be"),  # type: ignore[arg-type]
    (
        "offload-result",
        lambda: cc.offload_result(None, STORE, max_inline_chars=10),  # type: ignore[arg-type]
        "takes a ToolResult",
    ),
    (
        "offload-huge-chars",
        lambda: cc.offload_result(HISTORY[2].tool_results[0], STORE, max_inline_chars=-HUGE),
        "max_inline_chars must be an integer >= 1",
    ),
    ("offload-store-root", lambda: cc.OffloadStore(5), "root must be a directory path"),  # type: ignore[arg-type]
    ("read-offset", lambda: cc.read_offloaded(STORE, "x", None), "offset must be"),  # type: ignore[arg-type]
    ("read-length", lambda: cc.read_offloaded(STORE, "x", 0, HUGE), "length must be"),
    ("dumps-nan", lambda: cc.canonical_dumps({"a": math.nan}), "NaN"),
    ("dumps-object", lambda: cc.canonical_dumps([object()]), "not JSON data"),
    ("dumps-deep", lambda: cc.canonical_dumps(DEEP), "nested more than"),
    ("wire-name-dict", lambda: cc.wire_name({}, "x", server=None), "origin must be a string"),  # type: ignore[arg-type]
    ("wire-name-server", lambda: cc.wire_name("s", "x", server=5), "server must be a string"),  # type: ignore[arg-type]
    ("wire-name-qualify", lambda: cc.wire_name("s", "x", server="s", qualify={}), "qualify"),  # type: ignore[arg-type]
    ("prefix-break", lambda: cc.prefix_break(None, None), "before must be a CompiledRequest"),  # type: ignore[arg-type]
    (
        "payload-break-target",
        lambda: cc.payload_break({"messages": []}, {"messages": []}, target={}),  # type: ignore[arg-type]
        "target must be a string",
    ),
    ("memory-initial", lambda: cc.InMemoryStore(5), "initial must be a mapping"),  # type: ignore[arg-type]
    ("memory-surrogate", lambda: cc.InMemoryStore({"k": "\ud800"}), "lone surrogate"),
    ("memory-file-path", lambda: cc.FileMemoryStore(None), "path must be a file path"),  # type: ignore[arg-type]
    ("memory-file-long", lambda: cc.FileMemoryStore("x" * 100_000), "memory file"),
    ("sqlite-path", lambda: cc.SQLiteSessionStore(5), "path must be"),  # type: ignore[arg-type]
    ("sqlite-surrogate", lambda: cc.SQLiteSessionStore("\ud800"), "path must be"),
    ("sqlite-huge-ttl", lambda: cc.SQLiteSessionStore(":memory:", ttl=HUGE), "ttl must be"),
    ("sqlite-timeout", lambda: cc.SQLiteSessionStore(":memory:", timeout=math.inf), "timeout"),
    ("sqlite-clock", lambda: cc.SQLiteSessionStore(":memory:", clock=5), "clock must be"),  # type: ignore[arg-type]
    ("ranker-weight", lambda: cc.RankerConfig(bm25_weight=None), "bm25_weight must be a number"),  # type: ignore[arg-type]
    ("ranker-huge-k", lambda: cc.RankerConfig(rrf_k=-HUGE), "rrf_k must be an integer >= 1"),
    ("ranker-fusion", lambda: cc.RankerConfig(fusion=HUGE), "unknown fusion <an integer"),  # type: ignore[arg-type]
    (
        "handoff-huge",
        lambda: ContextChef(
            on_overflow=cc.OverflowHandoff(summarize=str, max_history_tokens=-HUGE)
        ),
        "max_history_tokens must be",
    ),
    ("pruner-allow", lambda: _chef().pruner.allow_only([{}]), r"names\[0\] must be a string"),  # type: ignore[list-item]
]


@pytest.mark.parametrize(
    ("case", "call", "fragment"), UNCHECKED_ARGUMENTS, ids=[c[0] for c in UNCHECKED_ARGUMENTS]
)
def test_a_public_helper_refuses_a_wrong_argument_by_name(
    case: str, call: Callable[[], object], fragment: str
) -> None:
    with pytest.raises(ContextChefError) as caught:
        call()
    assert re.search(fragment, str(caught.value)), str(caught.value)


def test_off_with_an_unhashable_event_is_false_not_a_crash() -> None:
    assert ContextChef().off({}, print) is False  # type: ignore[arg-type]


def test_to_strict_schema_of_a_non_object_is_none() -> None:
    assert cc.to_strict_schema([1]) is None  # type: ignore[arg-type]
    assert cc.to_strict_schema({"type": "object"}) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {},
        "required": [],
    }


def test_wire_name_of_a_lone_surrogate_is_a_legal_name() -> None:
    name = cc.wire_name("s", "a\ud800b", server=None)
    assert cc.WIRE_NAME_RE.fullmatch(name)
    assert name.startswith("a_b_")


BROKEN_PARTS: list[tuple[str, Callable[[], object], str]] = [
    ("media-url-int", lambda: cc.MediaPart(media_type="image/png", url=5), "MediaPart.url"),  # type: ignore[arg-type]
    (
        "media-data-surrogate",
        lambda: cc.MediaPart(media_type="image/png", data="\ud800"),
        "MediaPart.data holds text that is not valid Unicode",
    ),
    ("provider-none", lambda: cc.ProviderPart(provider="p", data=None), "must be a mapping"),  # type: ignore[arg-type]
    (
        "provider-data-nan",
        lambda: cc.TextPart(text="a", provider_data={"x": math.nan}),
        "TextPart.provider_data is not JSON data",
    ),
    (
        "provider-data-deep",
        lambda: cc.ToolCall(id="c", name="n", provider_data={"x": DEEP}),
        "nested more than 200 levels",
    ),
    ("message-parts-none", lambda: cc.Message(role="user", parts=None), "Message.parts must be"),  # type: ignore[arg-type]
    (
        "message-parts-junk",
        lambda: cc.Message(role="user", parts=("text",)),  # type: ignore[arg-type]
        r"Message.parts\[0\] is not a part",
    ),
    (
        "result-media-none",
        lambda: cc.ToolResult(call_id="c", name="n", content="x", media=None),  # type: ignore[arg-type]
        "ToolResult.media must be",
    ),
]


@pytest.mark.parametrize(
    ("case", "build", "fragment"), BROKEN_PARTS, ids=[c[0] for c in BROKEN_PARTS]
)
def test_a_part_that_could_not_be_sent_is_refused_when_built(
    case: str, build: Callable[[], object], fragment: str
) -> None:
    with pytest.raises(UsageError, match=fragment):
        build()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("meta", None),
        ("meta", {"x": math.inf}),
        ("meta", {"x": DEEP}),
        ("output_schema", 5),
        ("output_schema", {"x": HUGE}),
        ("tags", None),
        ("tags", [1]),
    ],
)
def test_a_tool_field_that_is_not_json_is_refused(field: str, value: object) -> None:
    with pytest.raises(InvalidToolError, match=f"tool 't': {field}|tool 't': every tag"):
        cc.Tool(name="t", **{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("data", [{}, {"a": 1}, {"type": 5}])
def test_a_provider_part_without_its_formats_shape_is_dropped_not_sent(
    data: dict[str, Any],
) -> None:
    """An empty or untyped Anthropic block is left out (and reported), never sent."""
    chef = ContextChef()
    part = cc.ProviderPart(provider="anthropic", data=data)
    chef.set_history([user("a"), cc.Message(role="assistant", parts=(part,)), user("b")])
    request = chef.compile("anthropic")
    assert [m["role"] for m in request.payload["messages"]] == ["user"]
    assert any(c.kind == "dropped_foreign_part" for c in request.changes)
    typed = cc.ProviderPart(provider="anthropic", data={**data, "type": "x"})
    chef.set_history([user("a"), cc.Message(role="assistant", parts=(typed,)), user("b")])
    assert chef.compile("anthropic").payload["messages"][1]["content"][0]["type"] == "x"


@pytest.mark.parametrize(
    "delta",
    [
        "x",
        [["set"]],
        [["nope", ["a"], 1]],
        [["extend", ["history"], 5]],
        [["set", [], 5]],
        [["del", ["a"], 1]],
        [["set", [True], 1]],
    ],
)
def test_a_malformed_delta_is_refused_before_it_is_stored(delta: object) -> None:
    store = cc.SQLiteSessionStore(":memory:")
    store.snapshot("s", {"a": 1}, expected_version=0)
    with pytest.raises(UsageError, match="a delta is a list of"):
        store.append("s", delta, expected_version=1)  # type: ignore[arg-type]
    loaded = store.load("s")
    assert loaded is not None and loaded.snapshot == {"a": 1} and loaded.version == 1


def test_a_lone_surrogate_is_not_stored() -> None:
    store = cc.SQLiteSessionStore(":memory:")
    store.snapshot("s", {"a": 1}, expected_version=0)
    with pytest.raises(SessionStoreError, match="lone surrogate"):
        store.append("s", [["set", ["a"], "\ud800"]], expected_version=1)
    with pytest.raises(UsageError, match="a snapshot is a mapping"):
        store.snapshot("s", None, expected_version=1)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="prefix must be a string"):
        store.list_sessions(None)  # type: ignore[arg-type]
    loaded = store.load("s")
    assert loaded is not None and loaded.snapshot == {"a": 1}


@pytest.mark.parametrize("version", [-HUGE, HUGE, 2**63], ids=["-huge", "huge", "2**63"])
def test_a_version_no_store_can_hold_is_a_usage_error(version: int) -> None:
    store = cc.SQLiteSessionStore(":memory:")
    with pytest.raises(UsageError, match="expected_version must be an integer >= 0"):
        store.append("s", [], expected_version=version)
    with pytest.raises(UsageError, match="expected_version must be an integer >= 0"):
        store.snapshot("s", {"a": 1}, expected_version=version)


def test_a_snapshot_whose_patterns_match_nothing_leaves_the_hosts_patterns() -> None:
    """A stored snapshot with a defer pattern no tool matches used to restore, then make
    every compile raise; patterns are the host's configuration, so restore keeps the
    session's, reports the snapshot's, and the next compile is the same as before."""
    chef = ContextChef()
    chef.register_tools([cc.Tool(name="read_file", description="Read.")])
    chef.set_history([user("hi")])
    snapshot = chef.snapshot()
    before = chef.compile("anthropic").to_json()
    exposure = {**snapshot["exposure"], "defer": ["nothing_like_this"]}
    broken = {**snapshot, "exposure": exposure}
    notes = chef.restore(broken, allow_unsigned=True)
    assert [(n.field, n.snapshot, n.session, n.kept) for n in notes] == [
        ("exposure.defer", ["nothing_like_this"], [], "session")
    ]
    assert chef.compile("anthropic").to_json() == before
    relaxed = ContextChef(unmatched_patterns="warn")
    relaxed.register_tools([cc.Tool(name="read_file", description="Read.")])
    relaxed.restore(broken, allow_unsigned=True, narrow=True)  # patterns never narrow in
    assert relaxed.compile("anthropic").to_json() == before


@pytest.mark.parametrize(
    "kwargs",
    [
        {"history_tokens": 10**5000},
        {"price_per_mtok": 10**5000},
        {"cache_read": 10**400},
        {"cache_write": -(10**5000)},
    ],
    ids=["tokens", "price", "read", "write"],
)
def test_cache_cost_model_names_a_huge_int_without_printing_it(kwargs: dict[str, int]) -> None:
    # found by the public-API fuzz in CI: the message called str() on a 5,000-digit int
    from contextchef import CacheCostModel

    with pytest.raises(UsageError, match="integer of about"):
        CacheCostModel(**kwargs)  # type: ignore[arg-type]


def test_a_stored_count_of_five_thousand_digits_is_a_store_error() -> None:
    from contextchef import SessionStoreError
    from contextchef.stores._stored import stored_count

    for value in ("9" * 5000, -(10**5000)):
        with pytest.raises(SessionStoreError, match="whole number from 0 to 2\\*\\*62 - 1"):
            stored_count("s", value, "version")


def test_session_sync_refuses_an_object_whose_attributes_raise() -> None:
    """Found by the store fuzz: ``getattr(chef, "restore", None)`` let a hostile object's
    ``RuntimeError`` escape ``SessionSync.load_into`` / ``save``."""

    class Hostile:
        def __getattr__(self, name: str) -> object:
            raise RuntimeError("boom")

    sync = cc.SessionSync(cc.SQLiteSessionStore(":memory:"), "s1")
    for method in (sync.load_into, sync.save):
        with pytest.raises(cc.UsageError, match=r"expected a ContextChef .*got Hostile"):
            method(Hostile())  # type: ignore[arg-type]
