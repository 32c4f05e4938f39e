"""Restore refuses a session whose tools segment is made otherwise (breakit24 p12, p28, p29).

A snapshot records what besides the registered tools shapes the compiled ``tools``
segment: the registered toolkits (loaded or not), namespaces, library-owned tools, server
descriptions and the `DeferredConfig` limits the directory is rendered under
(`contextchef.deferred._shape`). Restored into a session that differs in one of them,
the next compile would rewrite the tools the conversation was sent (on Claude Opus with
thinking: the whole conversation sent uncached, its earlier thinking dropped); restore
refuses it as it refuses other tools, naming what differs, and changes nothing. A
snapshot written before the record is not checked. The record is checked like the
``tools`` record: by the snapshot's form and by its signature, and it survives a store.

Conversations run through the official Anthropic SDK client against `FakeAnthropic`.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import anthropic
import pytest

from conftest import shared_data
from contextchef import (
    ContextChef,
    DeferredConfig,
    InMemoryStore,
    SessionSync,
    Skill,
    SnapshotKeys,
    SnapshotMismatchError,
    SnapshotSignatureError,
    SQLiteSessionStore,
    Toolkit,
    UsageError,
    user,
)
from contextchef.testing import FakeAnthropic, httpx_for, text, tool_calls

MODEL = "claude-opus-5-5"
THINK = {"thinking": {"type": "adaptive"}}
FAKE = FakeAnthropic()
"""One fake for the module: the thinking signatures it issued stay valid."""


def grep(pattern: str) -> str:
    """Search the code base.

    Args:
        pattern: Regex.
    """
    return f"src/app.py:12: {pattern}"


def forecast(city: str) -> str:
    """Weather forecast.

    Args:
        city: City name.
    """
    return f"sunny in {city}"


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: File to read.
    """
    return path


def build(
    *,
    kit: str | None = "Weather tools.",
    namespace: str | None = "File tools.",
    memory: bool = False,
    skill: str | None = None,
    search: Any = grep,
    **options: Any,
) -> ContextChef:
    """A deferring session; `kit` / `namespace`: their descriptions (None: not registered)."""
    extra = {"memory": InMemoryStore()} if memory else {}
    chef = ContextChef(default_defer=True, pin=["^grep$"], **extra, **options)
    chef.register_tools([search])
    if namespace is not None:
        chef.register_namespaces(
            [{"name": "files", "description": namespace, "tools": [read_file]}]
        )
    if kit is not None:
        chef.register_toolkits(
            [Toolkit(name="Weather", description=kit, tools=(forecast,))],
            handlers={"forecast": forecast},
        )
    if skill is not None:
        chef.register_skills(
            [Skill(name="triage", description="Triage bugs.", instructions=skill, tools=("grep",))]
        )
    chef.set_system_prompt("You are careful.")
    return chef


def client(fake: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )


def talk(chef: ContextChef) -> None:
    """A thinking tool loop and a reply on Opus (the toolkit never loaded)."""
    chef.append(user("Find the TODOs."))
    fake = FAKE.script(
        tool_calls(("grep", {"pattern": "TODO"}), reasoning="look"), text("one", reasoning="ok")
    )
    for _ in range(2):
        request = chef.compile("anthropic", model=MODEL, extra=THINK)
        reply = client(fake).messages.create(**request.payload, extra_headers=request.headers)
        chef.run_tools(chef.ingest(reply))
    assert fake.violations == ()


def snapshot_of(**options: Any) -> dict[str, Any]:
    chef = build(**options)
    talk(chef)
    snap: dict[str, Any] = json.loads(json.dumps(chef.snapshot()))
    return snap


def continues(chef: ContextChef) -> None:
    """The next request keeps the sent prefix (no edit, thinking kept) and is accepted."""
    chef.append(user("And the FIXMEs?"))
    request = chef.compile("anthropic", model=MODEL, extra=THINK)
    assert request.edits == ()
    fake = FAKE.script(text("none", reasoning="ok"))
    client(fake).messages.create(**request.payload, extra_headers=request.headers)
    assert fake.violations == ()


def test_the_same_session_restores_and_continues_the_conversation() -> None:
    snap = snapshot_of()
    assert snap["tools"]["shape"]["toolkit:Weather"] != snap["tools"]["shape"]["namespace:files"]
    assert snap["tools"]["shape"]["DeferredConfig.directory_chars"] == "8000"
    chef = build()
    assert chef.restore(snap, allow_unsigned=True) == ()
    continues(chef)


OTHER = [
    pytest.param({}, {"kit": None}, r"missing \['toolkit:Weather'\]", id="toolkit missing"),
    pytest.param({"kit": None}, {}, r"unexpected \['toolkit:Weather'\]", id="toolkit unexpected"),
    pytest.param({}, {"kit": "Forecasts."}, r"other \['toolkit:Weather'\]", id="toolkit text"),
    pytest.param({}, {"namespace": "Files."}, r"other \['namespace:files'\]", id="namespace"),
    pytest.param({}, {"memory": True}, r"unexpected \['library:create_memory'", id="library tools"),
    pytest.param({"memory": True}, {}, r"missing \['library:create_memory'", id="library missing"),
]


@pytest.mark.parametrize(("source", "restorer", "said"), OTHER)
def test_another_shape_of_the_tools_segment_is_refused_and_changes_nothing(
    source: dict[str, Any], restorer: dict[str, Any], said: str
) -> None:
    """Fresh-user report (breakit24 p12, p29): these restored silently and the next compile
    rewrote the tools segment, dropping the conversation's thinking."""
    snap = snapshot_of(**source)
    chef = build(**restorer)
    talk(chef)  # a conversation of its own, which must survive the refused restore
    before = chef.snapshot()
    for given in (snap, json.dumps(snap)):  # the snapshot, or its JSON text as stored
        with pytest.raises(SnapshotMismatchError, match=said) as caught:
            chef.restore(given, allow_unsigned=True)
        assert "build the ContextChef with the same arguments" in str(caught.value)
        assert chef.snapshot() == before
    continues(chef)


def tools_of(config: dict[str, Any]) -> str:
    """The tools segment a fresh session built with `config` sends."""
    chef = build(deferred=DeferredConfig(**config))
    chef.append(user("Find the TODOs."))
    return json.dumps(chef.compile("anthropic", model=MODEL, extra=THINK).payload["tools"])


LIMITS = [
    pytest.param({}, {"directory_chars": 200}, "directory_chars", "8000", "200", id="smaller"),
    pytest.param({}, {"directory_chars": 9000}, "directory_chars", "8000", "9000", id="larger"),
    pytest.param(
        {"always_meta_tools": True}, {}, "always_meta_tools", "true", "false", id="meta tools"
    ),
]


@pytest.mark.parametrize(("source", "restorer", "field", "was", "now"), LIMITS)
def test_another_deferred_limit_is_reported_and_the_compile_says_what_it_changes(
    source: dict[str, Any], restorer: dict[str, Any], field: str, was: str, now: str
) -> None:
    """A limit bounds what is rendered (breakit26 p1g: a larger directory budget the
    directory fits under either way changes nothing): restored, reported as a
    `PolicyDifference`; where the tools segment does change, the compile reports it."""
    snap = snapshot_of(deferred=DeferredConfig(**source))
    for given in (snap, json.dumps(snap)):
        chef = build(deferred=DeferredConfig(**restorer))
        notes = chef.restore(given, allow_unsigned=True)
        assert [(n.field, n.snapshot, n.session, n.kept) for n in notes] == [
            (f"DeferredConfig.{field}", was, now, "session")
        ]
        chef.append(user("And the FIXMEs?"))
        request = chef.compile("anthropic", model=MODEL, extra=THINK)
        assert json.dumps(request.payload["tools"]) == tools_of(restorer)
        changed = tools_of(restorer) != tools_of(source)  # (not on this small directory)
        assert bool([e for e in request.edits if e.kind == "tools"]) == changed, request.edits
        fake = FAKE.script(text("none", reasoning="ok"))
        client(fake).messages.create(**request.payload, extra_headers=request.headers)
        assert fake.violations == ()


def test_a_limit_that_cuts_the_directory_is_reported_then_the_tools_edit() -> None:
    """Two real servers' catalogs (the directory lists them): a 200-character budget cuts
    it, so the restored session's next compile rewrites the tools segment and says so."""
    catalogs = [str(shared_data() / "catalogs" / f"mcp-{n}.json") for n in ("filesystem", "memory")]

    def made(config: DeferredConfig) -> ContextChef:
        chef = build(deferred=config)
        chef.register_catalog(catalogs)
        return chef

    source = made(DeferredConfig())
    talk(source)
    chef = made(DeferredConfig(directory_chars=200))
    notes = chef.restore(json.dumps(source.snapshot()), allow_unsigned=True)
    assert [(n.field, n.snapshot, n.session) for n in notes] == [
        ("DeferredConfig.directory_chars", "8000", "200")
    ]
    chef.append(user("And the FIXMEs?"))
    request = chef.compile("anthropic", model=MODEL, extra=THINK)
    assert [e.kind for e in request.edits] == ["tools"]
    fake = FAKE.script(text("none", reasoning="ok"))
    client(fake).messages.create(**request.payload, extra_headers=request.headers)
    assert fake.violations == ()


def test_the_error_lists_the_names_only_one_side_has() -> None:
    snap = snapshot_of(memory=True)
    with pytest.raises(SnapshotMismatchError) as caught:
        build(kit=None).restore(snap, allow_unsigned=True)
    assert "toolkit:Weather" in caught.value.missing
    assert {"library:create_memory", "library:read_memories"} <= set(caught.value.missing)
    assert caught.value.unexpected == ()


def test_library_tools_are_recorded_by_name_only() -> None:
    """Which library tools a session has is its constructor's arguments; their text is the
    library's, which an upgrade may change: a stored conversation must still restore."""
    shape = snapshot_of(memory=True)["tools"]["shape"]
    names = ["library:create_memory", "library:modify_memory", "library:read_memories"]
    assert {k: v for k, v in shape.items() if k.startswith("library:")} == dict.fromkeys(names, "")


def test_limits_that_do_not_shape_the_tools_segment_may_differ() -> None:
    """What only bounds a ``tool_search`` result (in the history, already sent) is free."""
    snap = snapshot_of()
    chef = build(deferred=DeferredConfig(result_chars=500, max_results=3, ranker="bm25"))
    assert chef.restore(snap, allow_unsigned=True) == ()
    continues(chef)


def test_a_snapshot_written_before_the_record_is_not_checked() -> None:
    snap = snapshot_of()
    del snap["tools"]["shape"]
    chef = build(kit=None)
    assert chef.restore(snap, allow_unsigned=True) == ()
    chef.append(user("next"))
    request = chef.compile("anthropic", model=MODEL, extra=THINK)
    assert [e.kind for e in request.edits] == ["tools"]  # what the record now prevents


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"toolkit:Weather": 5}, r"snapshot field 'tools' 'shape' 'toolkit:Weather' must be text"),
        ([], r"snapshot field 'tools' 'shape' must be an object"),
    ],
)
def test_a_malformed_record_is_refused_by_the_form(value: Any, said: str) -> None:
    snap = snapshot_of()
    snap["tools"]["shape"] = value
    chef = build()
    before = chef.snapshot()
    with pytest.raises(UsageError, match=said + r".*nothing was restored"):
        chef.restore(snap, allow_unsigned=True)
    assert chef.snapshot() == before


@pytest.mark.parametrize("field", ["shape", "fingerprint"])
def test_the_record_is_signed_like_the_tools_fingerprint(field: str) -> None:
    keys = SnapshotKeys({"k": secrets.token_bytes(32)})
    chef = build()
    talk(chef)
    signed: dict[str, Any] = json.loads(json.dumps(chef.snapshot(keys=keys)))
    assert build().restore(json.loads(json.dumps(signed)), keys=keys) == ()
    signed["tools"][field] = {} if field == "shape" else "0" * 64  # a record made to fit
    with pytest.raises(SnapshotSignatureError) as caught:
        build().restore(signed, keys=keys)
    assert caught.value.problem == "mismatch"


def test_a_stored_session_keeps_the_record_and_is_checked_on_load(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    chef = build()
    sync = SessionSync(store, "c1")
    talk(chef)
    sync.save(chef)
    chef.append(user("more"))
    sync.save(chef)  # a turn: the delta leaves the record as it was
    loaded = store.load("c1")
    assert (
        loaded is not None
        and loaded.snapshot["tools"]["shape"] == chef.snapshot()["tools"]["shape"]
    )
    other = build(kit=None)
    with pytest.raises(SnapshotMismatchError, match=r"missing \['toolkit:Weather'\]"):
        SessionSync(store, "c1").load_into(other)
    same = build()
    assert SessionSync(store, "c1").load_into(same)
    continues(same)


def test_a_skill_with_other_text_is_named() -> None:
    """Fresh-user report (breakit24 p28): the message said ``missing [], unexpected [], or
    other definitions`` and never named the skill."""
    snap = snapshot_of(skill="Label every issue.")
    with pytest.raises(SnapshotMismatchError, match=r"skills differ .*\(other \['triage'\]\)"):
        build(skill="Close every issue.").restore(snap, allow_unsigned=True)
    with pytest.raises(SnapshotMismatchError, match=r"\(unexpected \['triage'\]\)") as caught:
        build(skill="x").restore(snapshot_of(), allow_unsigned=True)
    assert caught.value.unexpected == ("triage",)


MADE = {
    "name": "made",
    "description": "Made.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
}


def test_a_runtime_tool_registered_with_another_definition_is_refused() -> None:
    """breakit26 p1c: the worker's own `register_runtime_tool` (to attach the handler) of
    another definition silently replaced the one the conversation was sent."""
    source = build()
    source.register_runtime_tool(MADE, handler=lambda q: "m")
    talk(source)
    stored = json.dumps(source.snapshot())
    same = build()
    same.register_runtime_tool(MADE, handler=lambda q: "m")  # as the docs say: accepted
    assert same.restore(stored, allow_unsigned=True) == ()
    continues(same)
    other = {**MADE, "description": "Made v2.", "input_schema": {"type": "object"}}
    chef = build()
    chef.register_runtime_tool(other, handler=lambda: "m")
    talk(chef)
    before = chef.snapshot()
    with pytest.raises(SnapshotMismatchError, match=r"runtime tools \['made'\] are registered"):
        chef.restore(stored, allow_unsigned=True)
    assert chef.snapshot() == before


def test_a_tool_defined_otherwise_is_named() -> None:
    """breakit26 p1f: "same names, other definitions" left the user to find which tool."""

    def grep2(pattern: str) -> str:
        """Search the code base, faster.

        Args:
            pattern: Regex.
        """
        return pattern

    grep2.__name__ = "grep"
    snap = snapshot_of()
    with pytest.raises(SnapshotMismatchError) as caught:
        build(search=grep2).restore(json.dumps(snap), allow_unsigned=True)
    assert "registered tools differ from the snapshot's (other ['grep'])" in str(caught.value)
    older = json.loads(json.dumps(snap))
    del older["tools"]["digests"]  # a snapshot written before the field: by name only
    with pytest.raises(SnapshotMismatchError, match="same names, other definitions"):
        build(search=grep2).restore(older, allow_unsigned=True)
