"""`Overlay` behaves exactly like a dict copy with the same writes (issue 14 sharing)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from contextchef._overlay import Overlay, layered
from contextchef.tools._registry import Registry
from contextchef.tools._tool import Tool

_keys = st.integers(min_value=0, max_value=12)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("set"), _keys, st.integers()),
        st.tuples(st.just("del"), _keys, st.just(0)),
    ),
    max_size=30,
)


@settings(max_examples=examples(full=300, default=50), deadline=None)
@given(base=st.dictionaries(_keys, st.integers(), max_size=8), ops=_ops)
def test_an_overlay_reads_iterates_and_counts_like_a_dict_copy(
    base: dict[int, int], ops: list[tuple[str, int, int]]
) -> None:
    frozen = dict(base)
    expected = dict(base)
    overlay: Overlay[int, int] = Overlay(base)
    for op, key, value in ops:
        if op == "set":
            expected[key] = value
            overlay[key] = value
        elif key in expected:
            del expected[key]
            del overlay[key]
        else:
            assert key not in overlay
    assert list(overlay) == list(expected)  # dict order: kept keys in place, new at the end
    assert len(overlay) == len(expected)
    assert dict(overlay.items()) == expected
    assert all((k in overlay) == (k in expected) for k in range(13))
    assert base == frozen  # the shared base is never written


def test_layered_copies_only_the_top_and_leaves_the_original_alone() -> None:
    base = {"a": 1, "b": 2}
    first = layered(base, {"c": 3})
    second = layered(first, {"b": 20, "d": 4})
    assert dict(first) == {"a": 1, "b": 2, "c": 3}
    assert dict(second) == {"a": 1, "b": 20, "c": 3, "d": 4}
    assert second.base is base and base == {"a": 1, "b": 2}


def _tools(n: int, server: str) -> list[Tool]:
    return [
        Tool(name=f"t{i:03d}", description=f"tool {i}", source="mcp", server=server)
        for i in range(n)
    ]


def test_runtime_tools_over_a_shared_state_give_the_order_and_fingerprint_of_a_fresh_build() -> (
    None
):
    declared = _tools(80, "alpha") + _tools(5, "beta")
    library = [Tool(name="memory", description="m", source="library")]
    runtime = [Tool(name=n, description=n, source="runtime") for n in ("zeta", "eta", "aa")]

    def fresh() -> Registry:
        reg = Registry()
        reg.add(declared)
        reg.add(library)
        return reg

    shared, other = fresh(), fresh()
    assert shared.shared_state is not None and shared.shared_state is other.shared_state
    for tool in runtime:
        shared.add([tool])
        assert shared.shared_state is None  # holds private tools now: not shareable
    alone = Registry()
    alone._share_key = lambda batch: (None, None)  # type: ignore[method-assign]
    alone.add([*declared, *library, *runtime])
    assert [t.key for t in shared.tools] == [t.key for t in alone.tools]
    assert shared.tools[-1].name == "memory"  # library tools stay last
    assert shared.fingerprint() == alone.fingerprint()
    assert len(shared) == len(alone) and shared.by_wire_name("zeta") is runtime[0]
    # the other session sharing the state sees none of it
    assert len(other) == len(declared) + 1 and other.by_wire_name("zeta") is None
    # a declared batch after runtime tools materializes the registry: same result
    late = _tools(3, "gamma")
    shared.add(late)
    alone.add(late)
    assert [t.key for t in shared.tools] == [t.key for t in alone.tools]
    assert shared.fingerprint() == alone.fingerprint()
    assert len(other) == len(declared) + 1


def test_replacing_a_tool_in_one_registry_leaves_the_shared_state_alone() -> None:
    declared = _tools(70, "alpha")
    one, two = Registry(), Registry()
    one.add(declared)
    two.add(declared)
    assert one.shared_state is two.shared_state is not None
    before = two.fingerprint()
    new = Tool(name="t005", description="changed", source="mcp", server="alpha")
    assert one.replace(new) is declared[5]
    assert one.get(new.key) is new and two.get(new.key) is declared[5]
    assert two.fingerprint() == before != one.fingerprint()
    # and after runtime tools (an overlay over the shared state)
    one.add([Tool(name="rt", description="r", source="runtime")])
    three = Registry()
    three.add(declared)
    three.add([Tool(name="rt", description="r", source="runtime")])
    newer = Tool(name="rt", description="changed", source="runtime")
    three.replace(newer)
    assert three.get(newer.key) is newer and two.fingerprint() == before
    assert [t.key for t in three.tools][-1] == ("runtime", "rt")


def test_a_runtime_tool_of_a_server_takes_its_place_among_that_servers_tools() -> None:
    declared = _tools(70, "alpha") + _tools(3, "beta")
    shared, alone = Registry(), Registry()
    shared.add(declared)
    alone._share_key = lambda batch: (None, None)  # type: ignore[method-assign]
    alone.add(declared)
    late = [
        Tool(name="t500", description="late", source="runtime", server="alpha"),
        Tool(name="solo", description="plain runtime", source="runtime"),
    ]
    for tool in late:
        shared.add([tool])
        alone.add([tool])
    assert [t.key for t in shared.tools] == [t.key for t in alone.tools]
    assert shared.fingerprint() == alone.fingerprint()
