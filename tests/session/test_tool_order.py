"""Tools declared after a request was sent go after every tool sent (breakit37 finding 5).

The ``tools`` array is the first thing the prompt cache reads ("tools → system →
messages", https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-use-with-prompt-caching),
so a tool added mid-conversation never moves one already sent: not a tool the model found
through ``tool_search`` (a ``tool_reference`` names it), not the resident ``read_offloaded``
/ ``search_archive`` / server search tool. Where the provider leaves the new entry out of
the prompt (Anthropic's ``defer_loading``: "Deferred tools are not included in the
system-prompt prefix", same page) the append is no edit and `prefix_break` sees no break;
where the model sees it (Responses, Gemini Interactions, every ``flat`` array) the session
reports a ``tools`` edit and `prefix_break` names it. Requests go through the official SDK
clients against the `contextchef.testing` fakes; the Anthropic fake's cache diagnostics
observe the prefix (``tools_changed``) independently of the library.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from contextchef import ContextChef, Skill, prefix_break, user
from contextchef._cache import clear_caches
from contextchef.analysis import payload_break
from contextchef.deferred import _meta
from contextchef.session._request import CompiledRequest
from contextchef.testing import FakeAnthropic, fake_for, httpx_for, text, tool_calls
from contextchef.tools._catalogs import tool_from_dict
from sdk_send import send as sdk_send

HX = httpx_for(anthropic)
SONNET = "claude-sonnet-4-5"  # tool search, no mid-conversation tool changes
OPUS = "claude-opus-5-5"  # tool search and tool changes (the planner keeps `tools`)
WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def grep(pattern: str) -> str:
    """Search the code base."""
    return "hit " + pattern


def _made(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"Write the {name.split('_')[0]} report.",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }


def _chef(**kwargs: Any) -> ContextChef:
    chef = ContextChef(default_defer=True, pin=["^grep$"], **kwargs)
    chef.register_tools([grep, WEATHER])
    chef.set_history([user("hi")])
    return chef


def _anthropic(*script: Any) -> tuple[FakeAnthropic, Any]:
    fake = FakeAnthropic().script(*script)
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))

    def send(request: CompiledRequest) -> Any:
        return client.messages.create(**request.payload, extra_headers=dict(request.headers))

    return fake, send


def _names(request: CompiledRequest) -> list[str]:
    return [t["name"] for t in request.payload["tools"]]


def _extends(before: CompiledRequest, after: CompiledRequest) -> None:
    """`after` sends every tool `before` sent, byte for byte and in place, then its own."""
    sent = json.loads(before.segments["tools"])
    now = json.loads(after.segments["tools"])
    assert now[: len(sent)] == sent
    assert after.segments["tools"].startswith(before.segments["tools"][:-1])  # "]" closes it
    assert all(t.get("defer_loading") is True for t in now[len(sent) :])


def test_a_runtime_tool_goes_after_the_tool_the_model_found() -> None:
    chef = _chef()
    fake, send = _anthropic(
        tool_calls(("tool_search", {"queries": ["zeta report"]})), text("found it"), text("ok")
    )
    strategy = "anthropic-native-client"
    chef.register_runtime_tool(_made("zeta_report"), handler=lambda q="": "zeta")
    r1 = chef.compile("anthropic", model=SONNET, strategy=strategy)
    chef.run_tools(chef.ingest(send(r1)))  # our tool_search answers with a tool_reference
    r2 = chef.compile("anthropic", model=SONNET, strategy=strategy, diagnostics=True)
    chef.ingest(send(r2))
    assert '"tool_name":"zeta_report"' in json.dumps(r2.payload["messages"], separators=(",", ":"))
    assert _names(r2) == ["grep", "tool_search", "get_weather", "zeta_report"]

    chef.register_runtime_tool(_made("alpha_report"), handler=lambda q="": "alpha")
    chef.append(user("and now?"))
    r3 = chef.compile("anthropic", model=SONNET, strategy=strategy, diagnostics=True)
    reply = send(r3)
    assert _names(r3) == ["grep", "tool_search", "get_weather", "zeta_report", "alpha_report"]
    _extends(r2, r3)
    assert r3.edits == ()
    assert reply.diagnostics is None  # the fake saw no tools change
    assert prefix_break(r2, r3) is None
    assert prefix_break(r2, r3, response=reply) is None
    assert payload_break(r2.payload, r3.payload) is None  # contextchef diff agrees
    assert fake.violations == ()


def test_runtime_tools_go_after_the_resident_library_and_search_tools(tmp_path: Path) -> None:
    chef = _chef(offload_dir=tmp_path)
    fake, send = _anthropic(text("hello"), text("ok"), text("done"))
    strategy = "anthropic-native"
    r1 = chef.compile("anthropic", model=SONNET, strategy=strategy, diagnostics=True)
    chef.ingest(send(r1))
    resident = ["grep", "get_weather", "read_offloaded", "search_archive", "tool_search_tool_bm25"]
    assert _names(r1) == resident
    # two in one turn, registered out of order: appended in sorted (registry) order
    chef.register_runtime_tool(_made("yankee_tool"), handler=lambda q="": "y")
    chef.register_runtime_tool(_made("made_up"), handler=lambda q="": "m")
    chef.append(user("again"))
    r2 = chef.compile("anthropic", model=SONNET, strategy=strategy, diagnostics=True)
    reply = send(r2)
    chef.ingest(reply)
    assert _names(r2) == [*resident, "made_up", "yankee_tool"]
    _extends(r1, r2)
    assert r2.edits == () and reply.diagnostics is None
    assert prefix_break(r1, r2, response=reply) is None
    # a later one after those, and the next request keeps them all where they were
    chef.register_runtime_tool(_made("bravo_tool"), handler=lambda q="": "b")
    chef.append(user("once more"))
    r3 = chef.compile("anthropic", model=SONNET, strategy=strategy, diagnostics=True)
    reply = send(r3)
    assert _names(r3) == [*resident, "made_up", "yankee_tool", "bravo_tool"]
    _extends(r2, r3)
    assert r3.edits == () and reply.diagnostics is None
    assert prefix_break(r2, r3, response=reply) is None
    assert fake.violations == ()


def test_a_tool_change_model_appends_after_everything_sent_too(tmp_path: Path) -> None:
    chef = _chef(offload_dir=tmp_path)
    fake, send = _anthropic(text("hello"), text("ok"))
    r1 = chef.compile("anthropic", model=OPUS, strategy="anthropic-native", diagnostics=True)
    chef.ingest(send(r1))
    chef.register_runtime_tool(_made("made_up"), handler=lambda q="": "m")
    chef.append(user("again"))
    r2 = chef.compile("anthropic", model=OPUS, strategy="anthropic-native", diagnostics=True)
    reply = send(r2)
    assert _names(r2) == [*_names(r1), "made_up"]
    _extends(r1, r2)
    assert r2.edits == () and reply.diagnostics is None
    assert prefix_break(r1, r2, response=reply) is None
    assert fake.violations == ()


def test_the_order_sent_survives_a_snapshot_and_restore() -> None:
    strategy = "anthropic-native-client"
    chef = _chef()
    fake, send = _anthropic(text("hello"), text("ok"), text("ok"), text("ok"))
    chef.register_runtime_tool(_made("zeta_report"), handler=lambda q="": "zeta")
    r1 = chef.compile("anthropic", model=SONNET, strategy=strategy)
    chef.ingest(send(r1))
    chef.register_runtime_tool(_made("alpha_report"), handler=lambda q="": "alpha")
    chef.append(user("next"))
    r2 = chef.compile("anthropic", model=SONNET, strategy=strategy)
    chef.ingest(send(r2))
    assert _names(r2)[-2:] == ["zeta_report", "alpha_report"]  # not the registry's order

    snapshot = json.loads(json.dumps(chef.snapshot()))
    fresh = ContextChef(default_defer=True, pin=["^grep$"])
    fresh.register_tools([grep, WEATHER])
    fresh.restore(snapshot, allow_unsigned=True)  # the runtime tools come back, and `tools`
    for session in (chef, fresh):
        session.register_runtime_tool(_made("mike_report"), handler=lambda q="": "mike")
        session.append(user("and one more"))
    live = chef.compile("anthropic", model=SONNET, strategy=strategy, diagnostics=True)
    again = fresh.compile("anthropic", model=SONNET, strategy=strategy, diagnostics=True)
    assert again.payload == live.payload  # the same bytes with or without the restore
    assert _names(again)[-3:] == ["zeta_report", "alpha_report", "mike_report"]
    _extends(r2, again)
    assert again.edits == ()
    reply = send(again)
    assert reply.diagnostics is None and prefix_break(r2, again, response=reply) is None
    assert fake.violations == ()


def test_a_skills_tools_are_declared_after_the_tools_sent() -> None:
    strategy = "anthropic-native-client"
    chef = ContextChef(default_defer=True, pin=["^grep$"])
    chef.register_tools([grep, WEATHER, _made("alpha_report"), _made("kilo"), _made("zulu_report")])
    chef.register_skills(
        [Skill(name="reports", description="Reports.", instructions="Be short.", tools=("kilo",))]
    )
    chef.set_history([user("hi")])
    fake, send = _anthropic(text("hello"), text("ok"))
    r1 = chef.compile("anthropic", model=SONNET, strategy=strategy, diagnostics=True)
    chef.ingest(send(r1))
    assert "kilo" not in _names(r1)  # locked until its skill loads
    chef.append(user("Load the reports skill."))
    chef.load_skill("reports")
    r2 = chef.compile("anthropic", model=SONNET, strategy=strategy, diagnostics=True)
    reply = send(r2)
    assert _names(r2) == [*_names(r1), "kilo"]
    _extends(r1, r2)
    assert r2.edits == () and reply.diagnostics is None
    assert prefix_break(r1, r2, response=reply) is None
    assert fake.violations == ()


CASES = [
    ("anthropic", SONNET, "anthropic-native-client", False),
    ("anthropic", SONNET, "anthropic-native-regex", False),
    ("anthropic", OPUS, "anthropic-native-client", False),
    ("anthropic", OPUS, "anthropic-inline", False),
    ("anthropic", SONNET, "client", False),
    ("anthropic", SONNET, "flat", True),
    ("responses", "gpt-5.6", "openai-native", False),  # additional_tools, `tools` as sent
    ("responses", "gpt-5.6", "openai-native-client", False),
    ("responses", "compat-model", "openai-native", True),  # a deferred function's name shows
    ("responses", "compat-model", "openai-native-client", True),
    ("openai", "gpt-5.6", "flat", True),
    ("gemini", "gemini-2.5-pro", "client", False),
    ("gemini", "gemini-2.5-pro", "flat", True),
    ("gemini-interactions", "gemini-3-pro", "gemini-interactions-native", True),
]


@pytest.mark.parametrize(("target", "model", "strategy", "edited"), CASES)
def test_prefix_break_agrees_with_the_session_on_every_target(
    target: str, model: str, strategy: str, edited: bool
) -> None:
    chef = _chef()
    fake = fake_for(target).script(text("hello"), text("ok"))
    r1 = chef.compile(target, model=model, strategy=strategy)
    chef.ingest(sdk_send(target, fake, r1.payload))
    chef.register_runtime_tool(_made("yankee"), handler=lambda q="": "y")
    chef.register_runtime_tool(_made("bravo"), handler=lambda q="": "b")
    chef.append(user("again"))
    r2 = chef.compile(target, model=model, strategy=strategy)
    sdk_send(target, fake, r2.payload)
    assert fake.violations == ()
    found = prefix_break(r1, r2)
    if edited:  # the model sees the new tools: reported, and named by prefix_break
        assert [e.kind for e in r2.edits] == ["tools"]
        assert found is not None and found.segment == "tools"
        assert found.cause.startswith("the session reported a tools edit")
    else:  # nothing the prompt cache reads changed before the new messages
        assert r2.edits == () and found is None
        sent = json.loads(r1.segments["tools"])
        assert json.loads(r2.segments["tools"])[: len(sent)] == sent


@pytest.mark.parametrize(
    ("target", "model", "strategy", "after"),
    [
        ("anthropic", SONNET, "anthropic-native-client", ["odd__mike", "odd__tango", "odd__alpha"]),
        ("responses", "gpt-5.6", "openai-native", None),  # additional_tools: `tools` as sent
        ("responses", "compat-model", "openai-native", "edit"),  # the namespace grows
    ],
)
def test_a_servers_new_tool_joins_the_end_or_its_namespace_as_an_edit(
    target: str, model: str, strategy: str, after: list[str] | str | None
) -> None:
    """An MCP server's tool added mid-conversation (a runtime tool with a server)."""
    chef = ContextChef(default_defer=True, pin=["^grep$"])
    chef.register_tools([grep])
    handlers = {"mike": lambda q="": "m", "tango": lambda q="": "t"}
    chef.register_tools([_made("mike"), _made("tango")], server="odd", handlers=handlers)
    chef.set_history([user("hi")])
    fake = fake_for(target).script(text("hello"), text("ok"))
    r1 = chef.compile(target, model=model, strategy=strategy)
    chef.ingest(sdk_send(target, fake, r1.payload))
    added = tool_from_dict(_made("alpha"), server="odd", source="runtime")
    chef.register_runtime_tool(added, handler=lambda q="": "a")
    chef.append(user("again"))
    r2 = chef.compile(target, model=model, strategy=strategy)
    sdk_send(target, fake, r2.payload)
    assert fake.violations == ()
    found = prefix_break(r1, r2)
    if after == "edit":
        assert [e.kind for e in r2.edits] == ["tools"]
        assert found is not None and found.cause.startswith("the session reported a tools edit")
        return
    assert r2.edits == () and found is None
    if after is None:
        assert r2.segments["tools"] == r1.segments["tools"]
    else:
        assert _names(r2) == ["grep", "tool_search", *after]
        _extends(r1, r2)


def _entry(name: str, *, deferred: bool = True) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "input_schema": {"type": "object"}}
    return {**entry, "defer_loading": True} if deferred else entry


@pytest.mark.parametrize(
    ("after", "broken"),
    [
        ([_entry("grep", deferred=False), _entry("b"), _entry("d"), _entry("c")], False),
        ([_entry("grep", deferred=False), _entry("b"), _entry("c"), _entry("d")], True),
        ([_entry("grep", deferred=False), _entry("d"), _entry("b")], True),  # reordered
        (
            [_entry("grep", deferred=False), _entry("b"), _entry("d"), _entry("x", deferred=False)],
            True,
        ),
        ([_entry("grep", deferred=False), _entry("d")], True),  # one is gone
    ],
)
def test_payload_break_tells_an_unseen_append_from_a_reorder(
    after: list[dict[str, Any]], broken: bool
) -> None:
    """Appended ``defer_loading`` declarations extend; anything else in ``tools`` breaks."""
    messages = [{"role": "user", "content": "hi"}]
    before = {"model": SONNET, "max_tokens": 100, "messages": messages}
    before["tools"] = [_entry("grep", deferred=False), _entry("b"), _entry("d")]
    later = {**before, "tools": after}
    found = payload_break(before, later)
    assert (found is not None and found.segment == "tools") is broken
    assert (found is None) is not broken
    # on Responses a deferred function shows its name: every addition is a change
    functions = [{"type": "function", "name": "grep", "parameters": {"type": "object"}}]
    deferred = {"type": "function", "name": "z", "parameters": {}, "defer_loading": True}
    base = {"model": "gpt-5.6", "input": [{"role": "user", "content": "hi"}], "tools": functions}
    grown = {**base, "tools": [*functions, deferred]}
    assert payload_break(base, grown, target="responses") is not None


def test_the_fakes_cache_diagnostics_see_an_insertion_not_an_append() -> None:
    """FakeAnthropic: appended ``defer_loading`` declarations are outside the prefix."""
    fake, _ = _anthropic(text("one"), text("two"), text("three"), text("four"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    grep_entry = _entry("grep", deferred=False)
    first: list[dict[str, Any]] = [grep_entry, _entry("b")]
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    reply = client.messages.create(
        model=SONNET,
        max_tokens=100,
        messages=messages,
        tools=first,
        diagnostics={"previous_message_id": None},
    )
    for tools, reason in (
        ([*first, _entry("c")], None),  # appended: not in the cache's prefix
        ([grep_entry, _entry("a"), _entry("b"), _entry("c")], "tools_changed"),  # inserted
        ([grep_entry, _entry("c"), _entry("b")], "tools_changed"),  # reordered
    ):
        messages = [*messages, {"role": "assistant", "content": reply.content[0].text}]
        messages.append({"role": "user", "content": "more"})
        reply = client.messages.create(
            model=SONNET,
            max_tokens=100,
            messages=messages,
            tools=tools,
            diagnostics={"previous_message_id": reply.id},
        )
        found = reply.diagnostics
        assert (found.cache_miss_reason.type if found is not None else None) == reason
        first = tools
    assert fake.violations == ()


def test_a_restore_by_a_release_with_other_library_texts_keeps_the_order_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tools sent go out again when only their wording differs, in the order sent."""
    strategy = "anthropic-native-client"
    chef = _chef()
    fake, send = _anthropic(text("hello"), text("ok"), text("ok"))
    chef.register_runtime_tool(_made("zeta_report"), handler=lambda q="": "zeta")
    r1 = chef.compile("anthropic", model=SONNET, strategy=strategy)
    chef.ingest(send(r1))
    chef.register_runtime_tool(_made("alpha_report"), handler=lambda q="": "alpha")
    chef.append(user("next"))
    r2 = chef.compile("anthropic", model=SONNET, strategy=strategy)
    chef.ingest(send(r2))
    snapshot = json.loads(json.dumps(chef.snapshot()))
    monkeypatch.setattr(_meta, "_DIRECT_INTRO", _meta._DIRECT_INTRO + " Search first.")
    clear_caches()
    try:
        fresh = ContextChef(default_defer=True, pin=["^grep$"])
        fresh.register_tools([grep, WEATHER])
        fresh.restore(snapshot, allow_unsigned=True)
        fresh.append(user("and on"))
        r3 = fresh.compile("anthropic", model=SONNET, strategy=strategy, diagnostics=True)
        own = ContextChef(default_defer=True, pin=["^grep$"])
        own.register_tools([grep, WEATHER])
        own.set_history([user("hi")])
        words = own.compile("anthropic", model=SONNET, strategy=strategy).segments["tools"]
    finally:
        monkeypatch.undo()
        clear_caches()
    assert "Search first." in words  # this release words tool_search otherwise
    assert r3.segments["tools"] == r2.segments["tools"] and r3.edits == ()
    reply = send(r3)
    assert reply.diagnostics is None and prefix_break(r2, r3, response=reply) is None
    assert fake.violations == ()
