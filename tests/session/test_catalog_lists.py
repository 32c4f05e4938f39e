"""`register_catalog` of a list of catalogs: one batch, checked once per process (issue 27).

A list of catalogs is registered as `register_tools` of all their tools in one list
would be (same view, bytes and errors) with every catalog's server descriptions; the
same catalog objects are joined once per process, so every later session over them pays
one batch lookup, not one per catalog (the lint, schema reports and registry checks ran
once).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from test_catalog_sets import _catalogs, _sent  # catalogs by path; three SDK turns

from contextchef import (
    ContextChef,
    Tool,
    ToolNameConflictError,
    UsageError,
    VolatileValueError,
    user,
)
from contextchef._cache import clear_caches
from contextchef.session import _linting
from contextchef.session._batches import tool_batch
from contextchef.tools import _registry
from contextchef.tools._catalogs import Catalog, join_catalogs


def _chef(cats: list[Catalog], how: str, **kwargs: object) -> ContextChef:
    chef = ContextChef(default_defer=True, **kwargs)  # type: ignore[arg-type]
    if how == "list of catalogs":
        chef.register_catalog(cats)
    elif how == "one call each":
        for cat in cats:
            chef.register_catalog(cat)
    else:  # every tool in one list, then the descriptions as the catalogs give them
        chef.register_tools([t for cat in cats for t in cat.tools])
        for cat in cats:
            for server, description in cat.server_descriptions.items():
                chef.registry.set_server_description(server, description)
    chef.set_system_prompt("You are a careful engineering agent.")
    chef.append(user("Open an issue about the flaky test."))
    return chef


def test_a_list_of_catalogs_sends_what_one_list_of_their_tools_sends(
    catalog_paths: list[Path],
) -> None:
    clear_caches()
    cats = _catalogs(catalog_paths)
    joined, again = _chef(cats, "list of catalogs"), _chef(cats, "list of catalogs")
    listed, each = _chef(cats, "one list"), _chef(cats, "one call each")
    for chef in (joined, again, each):
        assert [t.name for t in chef.view.flat] == [t.name for t in listed.view.flat]
        assert chef.view.directory == listed.view.directory and chef.view.directory
        assert chef.registry.server_descriptions == listed.registry.server_descriptions
        assert chef.registry.fingerprint() == listed.registry.fingerprint()
    expected = listed.compile("anthropic", model="claude-opus-5-5").to_json()
    for chef in (joined, again, each):
        assert chef.compile("anthropic", model="claude-opus-5-5").to_json() == expected
    assert _sent(joined) == _sent(_chef(cats, "one list")) == _sent(again) == _sent(each)


def test_a_list_of_catalog_paths_is_the_catalogs_registered_in_turn(
    catalog_paths: list[Path],
) -> None:
    chef, each = ContextChef(default_defer=True), ContextChef(default_defer=True)
    chef.register_catalog(catalog_paths[:4])
    for path in catalog_paths[:4]:
        each.register_catalog(path)
    assert [t.key for t in chef.tools] == [t.key for t in each.tools]
    assert chef.registry.server_descriptions == each.registry.server_descriptions
    for session in (chef, each):
        session.append(user("hi"))
    assert chef.compile("openai").to_json() == each.compile("openai").to_json()


def test_the_same_catalogs_are_joined_and_checked_once_per_process(
    catalog_paths: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    clear_caches()
    cats = _catalogs(catalog_paths)
    linted: list[str] = []
    real = _linting.tool_values
    monkeypatch.setattr(
        _linting, "tool_values", lambda tool, today: linted.append(tool.name) or real(tool, today)
    )
    first = _chef(cats, "list of catalogs")
    assert len(linted) == sum(len(c.tools) for c in cats)  # each tool once
    sessions = [_chef(cats, "list of catalogs") for _ in range(3)]
    assert len(linted) == sum(len(c.tools) for c in cats)  # not again, in any session
    assert {id(s.registry.shared_state) for s in sessions} == {id(first.registry.shared_state)}
    # one checked set and one state for the list, not one per catalog
    assert len(_registry._sets) == len(_registry._states) == 1
    joined = join_catalogs(cats)
    assert join_catalogs(list(cats)) is joined and tool_batch(joined.tools) is not None
    assert tool_batch(joined.tools) is tool_batch(join_catalogs(cats).tools)
    # the same catalogs in another order, or other catalog objects, are another join
    assert join_catalogs(cats[::-1]) is not joined
    assert join_catalogs(_catalogs(catalog_paths)) is not joined
    assert join_catalogs([cats[0]]) is cats[0]


@pytest.mark.parametrize("warm", [False, True])
def test_a_list_of_catalogs_raises_what_one_list_of_their_tools_raises(
    catalog_paths: list[Path], warm: bool
) -> None:
    """A catalog listed twice, or one whose tool clashes with a registered tool, raises
    the message one list of the same tools raises; nothing of the list is registered."""
    clear_caches()
    cats = _catalogs(catalog_paths)
    clash = Catalog(
        tools=(Tool(name=cats[1].tools[0].name, server=cats[1].tools[0].server, source="mcp"),)
    )
    for bad in ([cats[0], cats[1], cats[0]], [cats[2], clash], [cats[1], clash, cats[3]]):
        if warm:  # the joined list (and its batch) known from an earlier session
            with contextlib.suppress(ToolNameConflictError):
                ContextChef().register_catalog(bad)
        chef, alone = ContextChef(), ContextChef()
        chef.register_catalog(cats[1])
        alone.register_catalog(cats[1])
        before = chef.tools
        with pytest.raises(ToolNameConflictError) as got:
            chef.register_catalog(bad)
        with pytest.raises(ToolNameConflictError) as listed:
            alone.register_tools([t for cat in bad for t in cat.tools])
        assert str(got.value) == str(listed.value)
        assert got.value.conflicts == listed.value.conflicts
        assert chef.tools == before and chef.registry.server_descriptions == (
            alone.registry.server_descriptions
        )


def test_a_list_of_catalogs_is_still_checked_against_each_sessions_names(
    catalog_paths: list[Path],
) -> None:
    cats = _catalogs(catalog_paths)
    _chef(cats, "list of catalogs")  # the join and its batch are known from here on
    wire = ContextChef().registry.wire_name_for(cats[2].tools[0])
    chef = ContextChef(default_defer=True)
    chef.register_namespaces([{"name": wire, "description": "Taken.", "tools": [{"name": "n1"}]}])
    with pytest.raises(ToolNameConflictError, match="contextchef's own tools") as got:
        chef.register_catalog(cats)
    alone = ContextChef(default_defer=True)
    alone.register_namespaces([{"name": wire, "description": "Taken.", "tools": [{"name": "n1"}]}])
    with pytest.raises(ToolNameConflictError) as listed:
        alone.register_tools([t for cat in cats for t in cat.tools])
    assert str(got.value) == str(listed.value)
    assert [t.name for t in chef.tools if t.source != "library"] == ["n1"]


def test_a_volatile_value_in_a_listed_catalog_raises_at_every_session() -> None:
    stamped = Catalog(
        tools=(Tool(name="clock", description="Now is 2026-12-04T22:10:05Z.", server="s"),),
        server_descriptions={"s": "A server."},
    )
    plain = Catalog(tools=(Tool(name="read", description="Read a file.", server="t"),))
    for _ in range(2):  # the second session finds the batch linted: it still raises
        chef = ContextChef(volatile_lint="raise")
        with pytest.raises(VolatileValueError, match="clock"):
            chef.register_catalog([plain, stamped])
        assert not [t for t in chef.tools if t.source != "library"]
    warned = ContextChef(volatile_lint="warn")
    warned.register_catalog([plain, stamped])
    assert [v.location for v in warned.volatile_values] == ["tool 'clock' description"]


def test_a_list_holding_something_else_registers_nothing(catalog_paths: list[Path]) -> None:
    chef = ContextChef()
    with pytest.raises(UsageError, match="a catalog path is a str or Path, got int"):
        chef.register_catalog([catalog_paths[0], 3])  # type: ignore[list-item]
    assert not [t for t in chef.tools if t.source != "library"]
    assert chef.register_catalog([]) == ()
