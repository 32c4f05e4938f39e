"""A session's catalogs make one shared registry state per set (issue 27, item 3).

Each `register_catalog` of a catalog other sessions registered, after the same
catalogs, is one lookup; the registry state of the whole set is built (or adopted) at
the first read. What a session sends, and every error a call raises, is what
registering the same tools without any sharing gives.
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from contextchef import ContextChef, Tool, ToolNameConflictError, load_catalog, user
from contextchef._cache import clear_caches
from contextchef.testing import FakeAnthropic, httpx_for, text, tool_calls
from contextchef.tools import _registry
from contextchef.tools._catalogs import Catalog
from contextchef.tools._registry import Registry


def _catalogs(paths: list[Path]) -> list[Catalog]:
    return [load_catalog(p, server=p.stem) for p in paths]


def _chef(cats: list[Catalog], *, listed: bool = False) -> ContextChef:
    chef = ContextChef(default_defer=True)
    if listed:  # every tool in one list, and the server descriptions as one catalog would
        chef.register_tools([t for cat in cats for t in cat.tools])
        for cat in cats:
            for server, description in cat.server_descriptions.items():
                chef.registry.set_server_description(server, description)
    else:
        for cat in cats:
            chef.register_catalog(cat)
    chef.set_system_prompt("You are a careful engineering agent.")
    chef.append(user("Open an issue about the flaky test."))
    return chef


def _unshared() -> Registry:
    alone = Registry()
    alone._share_key = lambda batch: (None, None)  # type: ignore[method-assign]
    return alone


def _sent(chef: ContextChef) -> list[object]:
    """Three turns through the Anthropic SDK against the fake: the bodies it received."""
    fake = FakeAnthropic().script(
        tool_calls(("tool_search", {"queries": ["open an issue"]})),
        text("done"),
        text("ok"),
    )
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    for _ in range(3):
        request = chef.compile("anthropic", model="claude-opus-5-5")
        calls = chef.ingest(
            client.messages.create(**request.payload, extra_headers=request.headers)
        )
        chef.run_tools(calls) if calls else chef.append(user("next"))
    assert fake.violations == ()
    return [r.body for r in fake.requests]


def test_many_catalogs_send_what_one_list_of_the_same_tools_sends(
    catalog_paths: list[Path],
) -> None:
    clear_caches()
    cats = _catalogs(catalog_paths)
    many, again, one = _chef(cats), _chef(cats), _chef(cats, listed=True)
    assert [c.name for c in many.view.flat] == [c.name for c in one.view.flat]
    assert many.view.directory == one.view.directory and many.view.directory
    assert many.registry.fingerprint() == one.registry.fingerprint()
    expected = one.compile("anthropic", model="claude-opus-5-5").to_json()
    assert many.compile("anthropic", model="claude-opus-5-5").to_json() == expected
    assert again.compile("anthropic", model="claude-opus-5-5").to_json() == expected
    assert _sent(many) == _sent(_chef(cats, listed=True)) == _sent(again)


def test_a_fleet_over_the_same_catalogs_shares_one_state_not_one_per_catalog(
    catalog_paths: list[Path],
) -> None:
    clear_caches()
    cats = _catalogs(catalog_paths)
    sessions = [_chef(cats) for _ in range(4)]
    states = {id(s.registry.shared_state) for s in sessions}
    assert len(states) == 1 and sessions[0].registry.shared_state is not None
    # one state for the set, not one per catalog; the checked sets (no containers) are
    # the catalogs so far, one per catalog
    assert len(_registry._states) == 1
    assert len(_registry._sets) == len(cats)
    # the same catalogs in another order are another set: a state of their own
    other = _chef(cats[::-1])
    assert other.registry.shared_state is not sessions[0].registry.shared_state
    assert len(_registry._states) == 2
    assert [t.key for t in other.tools] == [t.key for t in sessions[0].tools]


def test_a_set_whose_state_was_forgotten_is_built_again_from_its_batches(
    catalog_paths: list[Path],
) -> None:
    cats = _catalogs(catalog_paths)
    first = _chef(cats)
    expected = first.compile("anthropic").to_json()
    _registry._states.clear()  # the checked sets stay; their states are gone
    later = _chef(cats)
    assert later.registry.shared_state is not first.registry.shared_state
    assert later.compile("anthropic").to_json() == expected
    assert _chef(cats).registry.shared_state is later.registry.shared_state


def test_reading_between_catalogs_gives_the_same_session(catalog_paths: list[Path]) -> None:
    cats = _catalogs(catalog_paths)
    expected = _chef(cats).compile("anthropic").to_json()
    chef = ContextChef(default_defer=True)
    own = len(chef.tools)  # contextchef's own tools
    for i, cat in enumerate(cats):
        chef.register_catalog(cat)
        if i % 4 == 1:  # a read settles the set so far; the next catalog goes on from it
            assert len(chef.tools) == own + sum(len(c.tools) for c in cats[: i + 1])
    chef.set_system_prompt("You are a careful engineering agent.")
    chef.append(user("Open an issue about the flaky test."))
    assert chef.compile("anthropic").to_json() == expected


@pytest.mark.parametrize("warm", [False, True])
def test_a_clash_raises_at_the_call_with_the_message_of_an_unshared_registry(
    catalog_paths: list[Path], warm: bool
) -> None:
    """A catalog registered twice, and a tool clashing with an earlier catalog's, raise
    at the call that causes it, whether the catalogs before it were checked in this
    session or found checked by an earlier one; nothing of the batch is registered."""
    clear_caches()
    cats = _catalogs(catalog_paths)
    if warm:
        _chef(cats)  # every catalog before the clash is a known set from here on
    clash = (
        Tool(
            name=cats[2].tools[0].name,
            description="Same name.",
            server=cats[2].tools[0].server,
            source="mcp",
        ),
    )
    chef = ContextChef(default_defer=True)
    for cat in cats[:5]:
        chef.register_catalog(cat)
    alone = _unshared()
    alone.add([t for cat in cats[:5] for t in cat.tools])
    for bad in (cats[3].tools, clash):
        with pytest.raises(ToolNameConflictError) as got:
            chef.register_tools(bad)
        with pytest.raises(ToolNameConflictError) as unshared:
            alone.add(bad)
        assert str(got.value) == str(unshared.value)
        assert got.value.conflicts == unshared.value.conflicts
    assert [t.key for t in chef.tools] == [t.key for t in _chef(cats[:5]).tools]
    for cat in cats[5:]:  # the session goes on after the refused batch
        chef.register_catalog(cat)
    chef.set_system_prompt("You are a careful engineering agent.")
    chef.append(user("Open an issue about the flaky test."))
    assert chef.compile("anthropic").to_json() == _chef(cats).compile("anthropic").to_json()


def test_a_catalog_clashing_with_a_namespace_still_raises_on_a_known_set(
    catalog_paths: list[Path],
) -> None:
    cats = _catalogs(catalog_paths)
    _chef(cats)
    wire = _chef(cats).registry.wire_name_for(cats[1].tools[0])
    chef = ContextChef(default_defer=True)
    chef.register_catalog(cats[0])
    chef.register_namespaces([{"name": wire, "description": "Taken.", "tools": [{"name": "n1"}]}])
    with pytest.raises(ToolNameConflictError, match=wire):
        chef.register_catalog(cats[1])
    assert not any(t.server == cats[1].tools[0].server for t in chef.tools)
