"""Bad host input gets a ContextChefError naming what is wrong, and changes nothing."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextchef import (
    ContextChef,
    ContextChefError,
    CorruptHistoryError,
    InvalidToolError,
    UsageError,
    user,
)

READ = {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}


def session() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([READ])
    chef.set_history([user("hello")])
    return chef


def edited(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    snapshot = copy.deepcopy(session().snapshot())
    change(snapshot)
    return snapshot


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(snapshot: dict[str, Any]) -> None:
        node = snapshot
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


CORRUPT = [
    ("mode-list", _set(("mode",), [])),
    ("history-int", _set(("history",), [{"role": "user", "parts": []}, 5])),
    (
        "history-nan-args",
        _set(
            ("history",),
            [
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "kind": "tool_call",
                            "id": "c",
                            "name": "read_file",
                            "arguments": {"x": float("nan")},
                        }
                    ],
                }
            ],
        ),
    ),
    ("loaded-toolkits-int", _set(("loaded_toolkits",), 3)),
    ("tools-float", _set(("tools",), 1.5)),
    ("tools-names-int", _set(("tools", "names"), 7)),
    ("whitelist-include-int", _set(("whitelist",), {"name": "w", "include": 3})),
    ("dynamic-state-nan", _set(("dynamic_state",), {"x": float("nan")})),
    ("exposure-pin-int", _set(("exposure", "pin"), 4)),
]


@pytest.mark.parametrize(("label", "change"), CORRUPT, ids=[c[0] for c in CORRUPT])
def test_a_corrupt_snapshot_is_refused_and_changes_nothing(
    label: str, change: Callable[[dict[str, Any]], None]
) -> None:
    chef = session()
    chef.set_system_prompt("before")
    before = chef.compile("anthropic").to_json()
    with pytest.raises(ContextChefError):
        chef.restore(edited(change), allow_unsigned=True)
    assert chef.compile("anthropic").to_json() == before


def test_text_that_is_not_unicode_is_refused_where_it_enters() -> None:
    lone = json.loads('"\\ud800"')
    chef = session()
    with pytest.raises(UsageError, match="lone surrogate"):
        chef.set_system_prompt(f"hi {lone}")
    with pytest.raises(InvalidToolError, match="description hold text that is not valid Unicode"):
        chef.register_tools([{**READ, "name": "other", "description": f"bad {lone}"}])
    with pytest.raises(InvalidToolError, match="input_schema"):
        chef.register_tools(
            [{"name": "x", "description": "d", "input_schema": {"type": "object", "title": lone}}]
        )


def broken_history() -> Iterator[Any]:
    yield user("a")
    raise ZeroDivisionError("the host's generator failed")


@pytest.mark.parametrize(
    ("label", "call"),
    [
        ("set_history-int", lambda c: c.set_history(5)),
        ("set_history-generator-raises", lambda c: c.set_history(broken_history())),
        ("register_tools-none", lambda c: c.register_tools(None)),
        ("register_tools-a-class", lambda c: c.register_tools([int])),
        ("allow_only-none", lambda c: c.pruner.allow_only(None)),
        ("compile-list-target", lambda c: c.compile([])),
        ("load_toolkit-list", lambda c: c.load_toolkit([])),
        ("on-list-event", lambda c: c.on([], print)),
        ("register_toolkits-none", lambda c: c.register_toolkits(None)),
        ("register_namespaces-none", lambda c: c.register_namespaces(None)),
        ("register_catalog-none", lambda c: c.register_catalog(None)),
        ("handlers-list", lambda c: c.register_tools([READ], handlers=[print])),
        ("announce-surrogate", lambda c: c.announce("a", "x\ud800")),
        (
            "restore-surrogate-system",
            lambda c: c.restore(edited(_set(("system",), "\ud800")), allow_unsigned=True),
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_wrong_python_types_are_usage_errors(
    label: str, call: Callable[[ContextChef], Any]
) -> None:
    chef = session()
    with pytest.raises(ContextChefError):
        call(chef)
    assert [m.parts[0].text for m in chef.history] == ["hello"]  # type: ignore[union-attr]


@pytest.mark.parametrize("kwargs", [{"modes": 5}, {"template_vars": 5}, {"template_fragments": 3}])
def test_wrong_constructor_types_are_usage_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        ContextChef(**kwargs)


def test_a_corrupt_stored_tool_call_is_corrupt_history() -> None:
    with pytest.raises(CorruptHistoryError, match="plain JSON data"):
        session().set_history(
            [
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "kind": "tool_call",
                            "id": "c",
                            "name": "f",
                            "arguments": {"x": float("inf")},
                        }
                    ],
                }
            ]
        )


def test_an_unwritable_offload_dir_cuts_the_result_like_no_offload_dir(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Fresh-user report: with an unwritable ``offload_dir`` a 1,000,000-character result
    stayed whole in the history (without ``offload_dir`` it is cut); both are cut now."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    chef = ContextChef(offload_dir=blocker / "sub", max_inline_chars=100)
    chef.register_tools([READ], handlers={"read_file": lambda **_: "x" * 5_000})
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        done = chef.execute({"id": "c", "name": "read_file", "arguments": {}})
    assert not done.result.is_error and len(done.result.content) < 1_000
    assert done.result.content.startswith("x") and "cut to head and tail instead" in caplog.text
    plain = ContextChef(max_inline_chars=100)
    plain.register_tools([READ], handlers={"read_file": lambda **_: "x" * 5_000})
    same = plain.execute({"id": "c", "name": "read_file", "arguments": {}}).result.content
    assert done.result.content == same


def test_read_offloaded_stays_reachable_in_read_only_mode(tmp_path: Path) -> None:
    chef = ContextChef(offload_dir=tmp_path, max_inline_chars=100, mode="read_only")
    chef.set_history([user("hello")])
    names = [t["name"] for t in chef.compile("anthropic").payload.get("tools", [])]
    assert "read_offloaded" in names


def test_a_failing_compile_leaves_the_session_as_it_was() -> None:
    summaries: list[str] = []

    def summarize(transcript: str) -> str:
        summaries.append(transcript)
        return "summary"

    chef = ContextChef(memory=None, on_overflow=summarize)
    chef.set_history([user("a"), user("b")])
    chef.request_new_context()
    with pytest.raises(UsageError, match="prefill"):
        chef.compile("anthropic", prefill="ends in space ")
    assert chef.new_context_pending and len(chef.history) == 2


TARGET_LIST = r"\['anthropic', 'deepseek', 'gemini', 'gemini-interactions', 'openai', 'responses'\]"


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (
            "strategy",
            r"snapshot field 'strategy' must be one of \['anthropic-inline', 'anthropic-native', "
            r"'anthropic-native-client', 'anthropic-native-regex', 'client', 'flat', "
            r"'gemini-interactions-native', 'openai-native', 'openai-native-client'\]; "
            "nothing was restored",
        ),
        # the target of the last native compile, and that of the last compile
        ("target", rf"snapshot field 'target' must be one of {TARGET_LIST} or null; nothing"),
        ("compiled", rf"snapshot field 'compiled' must be one of {TARGET_LIST} or null; nothing"),
    ],
)
def test_a_snapshot_with_an_unknown_strategy_or_target_is_refused(field: str, message: str) -> None:
    chef = session()
    before = chef.snapshot()
    with pytest.raises(UsageError, match=f"^{message}"):
        chef.restore(edited(_set((field,), "nonsense")), allow_unsigned=True)
    assert chef.snapshot() == before


def test_a_snapshot_with_a_ledger_for_an_unknown_target_is_refused() -> None:
    chef = session()
    chef.compile("openai")
    snap = chef.snapshot()
    snap["ledgers"]["nonsense"] = snap["ledgers"]["openai"]
    other = session()
    before = other.snapshot()
    with pytest.raises(
        UsageError,
        match=rf"^snapshot field 'ledgers' has a ledger for 'nonsense'; targets are {TARGET_LIST}",
    ):
        other.restore(snap, allow_unsigned=True)
    assert other.snapshot() == before


def test_offloaded_output_stays_readable_whatever_the_exposure(tmp_path: Path) -> None:
    from contextchef import DeferredConfig, ToolCall

    chef = ContextChef(
        offload_dir=tmp_path,
        max_inline_chars=200,
        default_defer=True,
        deferred=DeferredConfig(require_search=True),
    )
    chef.register_tools([READ], handlers={"read_file": lambda **_: "y" * 5_000})
    chef.pruner.apply(chef.pruner.allow_only(["read_file"]))
    chef.set_history([user("hello")])
    names = [t["name"] for t in chef.compile("anthropic").payload["tools"]]
    assert "read_offloaded" in names  # neither deferred nor pruned
    wrapped = '{"tool_name": "read_file", "params": {}}'
    chef.execute(ToolCall(id="s", name="tool_search", arguments='{"tool_names": ["read_file"]}'))
    stub = chef.execute(ToolCall(id="c", name="defer_execute", arguments=wrapped)).result.content
    handle = stub.split('"handle": "')[1].split('"')[0]
    read = chef.execute(
        ToolCall(id="r", name="read_offloaded", arguments=json.dumps({"handle": handle}))
    )
    assert not read.result.is_error and read.result.content.startswith("y" * 100)
    assert "stored as" not in read.result.content  # a read is never offloaded again


def test_a_huge_result_without_an_offload_dir_is_cut_to_head_and_tail(
    caplog: pytest.LogCaptureFixture,
) -> None:
    big = "\n".join(f"line {i}" for i in range(20_000))
    chef = ContextChef(max_inline_chars=1_000)
    chef.register_tools([READ], handlers={"read_file": lambda **_: big})
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        done = chef.execute({"id": "c", "name": "read_file", "arguments": {}})
    text = done.result.content
    assert text.startswith("line 0\n") and text.endswith("line 19999")
    assert "chars omitted and not kept (no offload_dir is set)" in text
    assert len(text) < 1_200 and "cut to head and tail" in caplog.text
    whole = ContextChef(max_inline_chars=None)
    whole.register_tools([READ], handlers={"read_file": lambda **_: big})
    assert whole.execute({"id": "c", "name": "read_file", "arguments": {}}).result.content == big


HUGE = 10**5000
LONG = "x" * 1_000_000


@pytest.mark.parametrize(
    ("label", "call"),
    [
        ("betas-int", lambda c: c.compile("anthropic", betas=5)),
        ("set_mode-huge-int", lambda c: c.set_mode(HUGE)),
        ("load_toolkit-huge-int", lambda c: c.load_toolkit(HUGE)),
        ("load_toolkit-long", lambda c: c.load_toolkit(LONG)),
        ("wire_name-long", lambda c: c.wire_name(LONG)),
        ("set_mode-long", lambda c: c.set_mode(LONG)),
        ("compile-long-target", lambda c: c.compile(LONG)),
        ("compile-long-strategy", lambda c: c.compile("anthropic", strategy=LONG)),
        ("max_tokens-huge", lambda c: c.compile("anthropic", max_tokens=-HUGE)),
        (
            "schema-huge-int",
            lambda c: c.register_tools(
                [
                    {
                        "name": "x",
                        "description": "d",
                        "input_schema": {"type": "object", "maximum": HUGE},
                    }
                ]
            ),
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_error_messages_stay_bounded_whatever_the_value(
    label: str, call: Callable[[ContextChef], Any]
) -> None:
    """A huge integer cannot be repr()'d (Python refuses past 4,300 digits) and a long
    string would be copied whole: messages show a bounded form of the value."""
    chef = session()
    with pytest.raises(ContextChefError) as caught:
        call(chef)
    assert len(str(caught.value)) < 1_000
    assert chef.compile("anthropic").payload["messages"]


@pytest.mark.parametrize(("field", "pattern"), [("defer", "github_*"), ("pin", "^raed_file$")])
def test_a_defer_or_pin_pattern_matching_no_tool_is_named_at_compile(
    field: str, pattern: str
) -> None:
    chef = ContextChef(**{field: [pattern]})  # type: ignore[arg-type]
    chef.register_tools([READ])
    chef.set_history([user("hello")])
    with pytest.raises(UsageError, match=f"{field} pattern '.{{0,1}}{pattern[1:4]}") as caught:
        chef.compile("anthropic")
    assert "read_file" in str(caught.value)  # the closest name
    warned = ContextChef(unmatched_patterns="warn", **{field: [pattern]})  # type: ignore[arg-type]
    warned.register_tools([READ])
    warned.set_history([user("hello")])
    with pytest.warns(UserWarning, match="matches no registered tool"):
        warned.compile("anthropic")
    warned.compile("anthropic")  # once per pattern: no second warning (warnings are errors)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"default_defer": "yes"},
        {"qualify": 1},
        {"cache_audit": None},
        {"unmatched_patterns": "ignore"},
    ],
)
def test_flags_of_the_wrong_type_are_usage_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        ContextChef(**kwargs)
