"""A restore by a release whose library texts changed sends the tools as they were sent.

The library renders texts of its own into ``tools``: ``tool_search``'s and
``defer_execute``'s descriptions, the memory tools'. A new release may word them
otherwise. A conversation restored by it (a worker upgraded mid-conversation) would send
those new texts: a tools edit, a prompt-cache miss and, on models with the prefix check,
every earlier thinking block dropped. Append-only says what was sent goes out again: the
restored session sends the tools it sent while only their wording differs
(`contextchef.providers._wording`), and a change the host makes after the restore, or a
restore into another policy, is still the edit it was. Simulated here by changing those
texts in `contextchef.deferred._meta` between the snapshot and the restore, over two real
catalogs, turn after turn through the official SDK clients against the fakes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import shared_data
from contextchef import ContextChef, ToolResult, load_catalog, tool_results, user
from contextchef._cache import clear_caches
from contextchef.deferred import _meta
from contextchef.providers._wording import wording_only
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import fake_for, text, tool_calls
from sdk_send import send

MODELS = {
    "anthropic": "claude-opus-5-5",
    "openai": "gpt-5.6",
    "responses": "gpt-5.6",
    "gemini": "gemini-3-pro",
}
THINK = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
READ = "filesystem__read_file"


def build() -> ContextChef:
    chef = ContextChef(defer=["github__*"], modes={"files": ["filesystem__*"]})
    for name in ("mcp-filesystem", "github"):
        chef.register_tools(load_catalog(shared_data() / "catalogs" / f"{name}.json").tools)
    chef.set_system_prompt("You are a careful coding agent.")
    return chef


def compiled(chef: ContextChef, target: str) -> Any:
    extra = THINK if target == "anthropic" else None
    return chef.compile(target, model=MODELS[target], max_tokens=4096, extra=extra)


def tools_of(payload: Any) -> str:
    tools = payload["config"]["tools"] if "config" in payload else payload["tools"]
    return json.dumps(tools)


def turn(chef: ContextChef, target: str, fake: Any, r: int) -> Any:
    """One request through the SDK, its answer ingested, the results appended."""
    request = compiled(chef, target)
    calls = chef.ingest(send(target, fake, request.payload))
    if calls:
        results = [ToolResult(call_id=c.id, name=c.name, content=f"text of {r}") for c in calls]
        chef.append(tool_results(results))
    else:
        chef.append(user(f"go on after {r}"))
    return request


def replies(n: int) -> list[Any]:
    out = []
    for r in range(n):
        if r % 2:
            out.append(text(f"Step {r} done.", reasoning=f"check {r}"))
        else:
            out.append(tool_calls((READ, {"path": f"f{r}.py"}), reasoning=f"plan {r}"))
    return out


@pytest.fixture
def upgrade(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Another release's library texts (or, `schema=True`, its tool_search schema)."""

    def apply(schema: bool = False) -> None:
        monkeypatch.setattr(_meta, "_SEARCH_INTRO", _meta._SEARCH_INTRO + " Search first.")
        monkeypatch.setattr(
            _meta, "_EXECUTE_DESCRIPTION", "Run a found tool. " + _meta._EXECUTE_DESCRIPTION
        )
        if schema:
            wider = json.loads(json.dumps(_meta._SEARCH_SCHEMA))
            wider["properties"]["most_hits"] = {"type": "integer", "description": "Most results."}
            monkeypatch.setattr(_meta, "_SEARCH_SCHEMA", wider)
        clear_caches()

    yield apply
    monkeypatch.undo()
    clear_caches()


def conversation(target: str, rounds: int = 4) -> tuple[ContextChef, Any, str]:
    """`rounds` answered turns; the fake, and the tools the last request sent."""
    fake = fake_for(target).script(*replies(rounds + 8))
    chef = build()
    chef.set_history([user("Read the files one by one.")])
    for r in range(rounds):
        sent = tools_of(turn(chef, target, fake, r).payload)
    assert fake.violations == ()
    return chef, fake, sent


def thinking_blocks(payload: Any) -> int:
    return sum(
        1
        for m in payload["messages"]
        if isinstance(m.get("content"), list)
        for block in m["content"]
        if block.get("type") == "thinking"
    )


@pytest.mark.parametrize("target", list(MODELS))
def test_a_restore_by_a_reworded_release_sends_the_tools_as_sent(
    target: str, upgrade: Callable[..., None], tmp_path: Path
) -> None:
    chef, fake, sent = conversation(target)
    stored = json.dumps(chef.snapshot())
    upgrade()
    new = build()
    new.append(user("A new conversation."))
    assert tools_of(compiled(new, target).payload) != sent  # the release words them otherwise
    worker = build()
    assert worker.restore(stored, allow_unsigned=True) == ()
    for r in range(4, 7):
        request = turn(worker, target, fake, r)
        assert request.edits == (), (r, request.edits)
        assert tools_of(request.payload) == sent, r
    assert fake.violations == ()
    if target == "anthropic":  # the thinking of all 7 model turns is still sent
        assert thinking_blocks(compiled(worker, target).payload) == 7
    # restored again (its snapshot, and through a store): still the tools as first sent
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    store.snapshot("s", worker.snapshot(), expected_version=0)
    for again in (json.dumps(worker.snapshot()), None):
        other = build()
        if again is None:
            SessionSync(store, "s").load_into(other)
        else:
            other.restore(again, allow_unsigned=True)
        request = compiled(other, target)
        assert (request.edits, tools_of(request.payload)) == ((), sent)


def test_a_change_the_host_makes_after_the_restore_is_an_edit(
    upgrade: Callable[..., None],
) -> None:
    chef, fake, sent = conversation("anthropic")
    stored = json.dumps(chef.snapshot())
    upgrade()
    worker = build()
    worker.restore(stored, allow_unsigned=True)
    assert turn(worker, "anthropic", fake, 4).edits == ()
    worker.set_mode("files")  # the host narrows the tools: the new release renders them
    request = turn(worker, "anthropic", fake, 5)
    assert [e.kind for e in request.edits] == ["tools"]
    files = build()
    files.set_mode("files")
    files.append(user("hi"))
    assert tools_of(request.payload) == tools_of(compiled(files, "anthropic").payload) != sent
    worker.set_mode(None)  # and back: the tools this release renders, not the old ones
    request = turn(worker, "anthropic", fake, 6)
    assert [e.kind for e in request.edits] == ["tools"]
    assert tools_of(request.payload) != sent
    assert fake.violations == ()


def test_a_restore_into_another_policy_renders_the_tools_again(
    upgrade: Callable[..., None],
) -> None:
    chef, _, sent = conversation("anthropic")
    stored = json.dumps(chef.snapshot())
    upgrade()
    worker = build()
    worker.set_mode("files")  # the host's policy differs from the snapshot's: reported
    assert [n.field for n in worker.restore(stored, allow_unsigned=True)] == ["mode"]
    worker.append(user("next"))
    request = compiled(worker, "anthropic")
    assert [e.kind for e in request.edits] == ["tools"]
    assert tools_of(request.payload) != sent


def test_a_release_that_changes_a_schema_sends_it_as_an_edit(
    upgrade: Callable[..., None],
) -> None:
    chef, _, sent = conversation("openai")
    stored = json.dumps(chef.snapshot())
    upgrade(schema=True)
    worker = build()
    worker.restore(stored, allow_unsigned=True)
    worker.append(user("next"))
    request = compiled(worker, "openai")
    assert [e.kind for e in request.edits] == ["tools"]
    assert "most_hits" in tools_of(request.payload) and "most_hits" not in sent


TOOL = {"name": "t", "description": "Old.", "input_schema": {"type": "object"}}


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        pytest.param({**TOOL, "description": "New."}, True, id="description"),
        pytest.param(
            {**TOOL, "input_schema": {"type": "object", "description": "x"}},
            False,
            id="a key added",
        ),
        pytest.param({**TOOL, "name": "u"}, False, id="a name"),
        pytest.param(dict(TOOL), False, id="equal"),
        pytest.param({**TOOL, "description": 5}, False, id="not text"),
    ],
)
def test_wording_only(now: dict[str, Any], expected: bool) -> None:
    assert wording_only([TOOL], [now]) is expected
    assert wording_only([TOOL], [now, TOOL]) is False  # an entry added


def test_a_parameter_named_description_is_a_schema_not_wording() -> None:
    def tool(kind: str, text: str) -> dict[str, Any]:
        param = {"description": {"type": kind, "description": text}}
        return {"name": "t", "parameters": {"type": "object", "properties": param}}

    assert wording_only([tool("string", "a")], [tool("string", "b")]) is True
    assert wording_only([tool("string", "a")], [tool("integer", "a")]) is False
