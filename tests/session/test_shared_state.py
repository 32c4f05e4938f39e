"""Sessions over one catalog share what derives from the catalog alone (issue 14, item 1).

Shared: the compiled tool definitions, the registry digests and the search index. Not
shared: anything a session changes (exposure, runtime tools, templated descriptions).
Sharing must never change a request's bytes.
"""

from __future__ import annotations

import threading
from pathlib import Path

from contextchef import ContextChef, ToolCall, load_catalog, user
from contextchef.tools._catalogs import Catalog


def _catalogs(catalog_paths: list[Path]) -> list[Catalog]:
    return [load_catalog(p, server=p.stem) for p in catalog_paths]


def _session(cats: list[Catalog], **kwargs: object) -> ContextChef:
    chef = ContextChef(default_defer=True, **kwargs)  # type: ignore[arg-type]
    for cat in cats:
        chef.register_catalog(cat)
    chef.set_system_prompt("S")
    chef.append(user("hi"))
    return chef


def test_sessions_over_one_catalog_share_index_and_definitions(catalog_paths: list[Path]) -> None:
    cats = _catalogs(catalog_paths)
    a, b = _session(cats), _session(cats)
    assert a.view.index is b.view.index
    assert all(x is y for x, y in zip(a.view.flat, b.view.flat, strict=True))
    assert a.compile("anthropic").to_json() == b.compile("anthropic").to_json()
    # another exposure makes other searchable tools: its own index
    c = _session(cats, pin=["^github__*"], modes={"read": ["github__get_*"]})
    c.set_mode("read")
    assert c.view.index is not a.view.index
    # a runtime tool extends a session's index without touching the shared one
    a.register_runtime_tool({"name": "zorblax", "description": "Zorblax telemetry."})
    found = a.execute(ToolCall(id="1", name="tool_search", arguments={"queries": ["zorblax"]}))
    assert found.loaded == ("zorblax",)
    missed = b.execute(ToolCall(id="1", name="tool_search", arguments={"queries": ["zorblax"]}))
    assert "zorblax" not in missed.loaded
    assert a.view.index is not b.view.index and len(b.view.index) < len(a.view.index)


def test_a_shared_index_built_by_many_threads_at_once_ranks_the_same(
    catalog_paths: list[Path],
) -> None:
    cats = _catalogs(catalog_paths)
    fresh = [_session(cats) for _ in range(6)]
    index = fresh[0].view.index
    assert all(s.view.index is index for s in fresh)  # not searched yet: corpus unbuilt
    results: list[list[tuple[str, float]]] = []
    lock = threading.Lock()

    def search() -> None:
        hits = index.search(["create an issue on github"], limit=5)
        with lock:
            results.append([(h.wire_name, h.score) for h in hits])

    threads = [threading.Thread(target=search) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and all(r == results[0] for r in results) and results[0]


def test_sessions_share_the_registry_state_and_view_until_one_changes_its_tools(
    catalog_paths: list[Path],
) -> None:
    cats = _catalogs(catalog_paths)
    a, b = _session(cats), _session(cats)
    ra, rb = a._tools.registry, b._tools.registry
    assert ra.shared_state is not None and ra.shared_state is rb.shared_state
    assert a.view is b.view
    before = b.compile("anthropic").to_json()
    # a runtime tool: a's registry copies the shared containers, b's stay as they were
    a.register_runtime_tool({"name": "zorblax", "description": "Zorblax telemetry."})
    assert ra.shared_state is None and rb.shared_state is not None
    assert "zorblax" in a.view.by_wire_name and "zorblax" not in b.view.by_wire_name
    assert len(rb) == len(ra) - 1
    # a mode: same registry state, another view
    c = _session(cats, modes={"read": ["github__get_*"]})
    c.set_mode("read")
    assert c._tools.registry.shared_state is rb.shared_state
    assert c.view is not b.view
    assert b.compile("anthropic").to_json() == before
    # an equal but distinct tool object is never mistaken for a cached one
    other = [
        Catalog(
            tools=tuple(t.replace() for t in c.tools), server_descriptions=c.server_descriptions
        )
        for c in cats
    ]
    d = _session(other)
    assert d._tools.registry.shared_state is not rb.shared_state
    assert d.compile("anthropic").to_json() == before


def test_a_shared_state_gives_the_same_order_and_fingerprint_as_building_alone(
    catalog_paths: list[Path],
) -> None:
    from contextchef.tools._registry import Registry

    cats = _catalogs(catalog_paths)
    _session(cats)  # fills the shared cache
    shared = _session(cats)._tools.registry
    alone = Registry()
    for cat in reversed(cats):  # other batches, other order: never a cache hit
        alone.add(list(cat.tools)[::-1])
    assert [t.key for t in shared.tools] == [t.key for t in alone.tools]
    assert shared.fingerprint() == alone.fingerprint()


def test_sessions_built_in_many_threads_at_once_send_the_same_bytes(
    catalog_paths: list[Path],
) -> None:
    cats = _catalogs(catalog_paths)
    expected = _session(_catalogs(catalog_paths)).compile("anthropic").to_json()
    out: list[str] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                out.append(_session(cats).compile("anthropic").to_json())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert out == [expected] * 18


def test_a_remembered_catalog_batch_is_still_checked_against_each_sessions_names() -> None:
    from contextchef import Tool, ToolNameConflictError

    tools = (
        Tool(name="lookup", description="Look a thing up."),
        Tool(name="report", description="Write the report."),
    )
    first = ContextChef()
    first.register_tools(tools)  # remembered from here on
    second = ContextChef()
    second.register_namespaces(
        [{"name": "report", "description": "Reports.", "tools": [{"name": "r1"}]}]
    )
    try:
        second.register_tools(tools)
    except ToolNameConflictError as exc:
        assert "report" in str(exc)
    else:
        raise AssertionError("a namespace name taken by a remembered batch was accepted")
    assert [t.name for t in second.tools] == ["r1"]


def test_sessions_sharing_a_rendered_prefix_never_share_payload_lists(
    catalog_paths: list[Path],
) -> None:
    cats = _catalogs(catalog_paths)
    a, b = _session(cats), _session(cats)
    pa, pb = a.compile("anthropic"), b.compile("anthropic")
    assert pa.to_json() == pb.to_json()
    assert pa.payload["tools"] is not pb.payload["tools"]
    expected = pb.to_json()
    pa.payload["tools"].clear()  # a host edits the payload it was given
    pa.payload["tools"].append({"name": "oops"})
    assert b.compile("anthropic").to_json() == expected
    assert _session(cats).compile("anthropic").to_json() == expected
    assert a.compile("anthropic").to_json() == expected  # a's own prefix is restored too


def test_a_list_of_the_same_tools_shares_the_state_and_a_changed_list_does_not(
    catalog_paths: list[Path],
) -> None:
    """Issue 27: a host passing a fresh list of one catalog's tools each session adopts the
    state built for the first list (checked item by item), with the same bytes; a list
    that differs in one tool (same length, same first and last tool) gets its own."""
    tools = [t for cat in _catalogs(catalog_paths) for t in cat.tools]
    sessions = []
    for listed in (list(tools), list(tools)):
        chef = ContextChef(default_defer=True)
        chef.register_tools(listed)
        chef.set_system_prompt("S")
        chef.append(user("hi"))
        sessions.append(chef)
    a, b = sessions
    assert a.registry.shared_state is not None
    assert a.registry.shared_state is b.registry.shared_state
    assert a.compile("openai").to_json() == b.compile("openai").to_json()
    middle = len(tools) // 2
    changed = list(tools)
    changed[middle] = tools[middle].replace(description="Another description.")
    c = ContextChef(default_defer=True)
    c.register_tools(changed)
    assert c.registry.shared_state is not a.registry.shared_state
    got = c.registry.get(tools[middle].key)
    assert got.description == "Another description." and got is changed[middle]
    assert a.registry.get(tools[middle].key) is tools[middle]
    assert tools[middle].description != "Another description."  # the caller's tool untouched


def test_a_catalog_with_a_template_tool_is_never_given_a_shared_view() -> None:
    """The templated flag is kept per shared state (issue 27): no scan per session."""
    from contextchef import Tool

    plain = Tool(name="plain", description="Plain tool.")
    templated = Tool(name="templ", description="Region {{ region }}.", template=True)
    views = []
    for region in ("eu", "us"):
        chef = ContextChef(default_defer=False, template_vars={"region": region})
        chef.register_tools((plain, templated))
        chef.register_tools((Tool(name="z_last", description="Last."),))
        assert chef.registry.shared_state is not None
        views.append(chef.view)
    assert views[0] is not views[1]
    texts = [c.description for v in views for c in v.flat if c.name == "templ"]
    assert texts == ["Region eu.", "Region us."]
