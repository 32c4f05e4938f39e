"""tool_search's rendered entries kept on the shared index (issue 27, item 5).

`_render_hits` reads each hit's full entry, one-line brief and JSON name from a memo on
the `ToolIndex` (`ToolIndex.memo`, one per description cap). The answers must be those
rendered afresh, and a changed description, a mode that hides a tool, another
description cap and a tool added at run time must each show in the next answer. The
fast yes for the usual arguments (`_usual`) must never accept what the schema refuses.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextchef import ContextChef, DeferredConfig, Tool, ToolCall
from contextchef.deferred._meta import _SEARCH_SCHEMA, _usual
from contextchef.tools._validate import validation_errors

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def _tool(name: str, description: str) -> Tool:
    return Tool(name=name, description=description, input_schema=SCHEMA)


TOOLS = [
    _tool("get_forecast", "Weather forecast for a city, old wording. " + "Detail. " * 40),
    _tool("get_alerts", "Severe weather alerts for a city."),
    _tool("get_tides", "Tide tables for a harbour city."),
    *[_tool(f"weather_tool_{i}", f"Weather station {i} readings for a city.") for i in range(20)],
]


def _chef(**config: Any) -> ContextChef:
    chef = ContextChef(
        default_defer=True,
        deferred=DeferredConfig(always_meta_tools=True, **config),
        modes={"no_forecast": ["^get_alerts$", "^get_tides$", "^weather_tool_*$"]},
    )
    chef.register_tools(list(TOOLS))
    return chef


def _search(chef: ContextChef, **arguments: Any) -> str:
    return chef.execute(ToolCall(id="s", name="tool_search", arguments=arguments)).result.content


def test_answers_equal_those_rendered_afresh() -> None:
    chef = _chef()
    asks = [
        {"queries": ["weather forecast city"]},
        {"queries": ["city"], "limit": 2},
        {"queries": ["tide harbour"]},
        {"tool_names": ["get_alerts", "get_forecst"]},
    ]
    warm = [_search(chef, **a) for a in asks]  # the memo filled by the first answers
    again = [_search(chef, **a) for a in asks]
    chef.view.index.memo.clear()
    fresh = [_search(chef, **a) for a in asks]
    assert warm == again == fresh
    assert "weather_tool_" in fresh[0] and "Other matches" in fresh[0]


def test_a_changed_description_shows_in_the_next_answer() -> None:
    chef = _chef()
    assert "old wording" in _search(chef, queries=["weather forecast"])
    chef.replace_tool(TOOLS[0].replace(description="Weather forecast for a city, new wording."))
    after = _search(chef, queries=["weather forecast"])
    assert "new wording" in after and "old wording" not in after
    assert "new wording" in _search(chef, tool_names=["get_forecast"])


def test_a_hidden_tool_leaves_the_answers_and_comes_back() -> None:
    chef = _chef()
    assert "get_forecast" in _search(chef, queries=["weather forecast"])
    chef.set_mode("no_forecast")
    assert "get_forecast" not in _search(chef, queries=["weather forecast"])
    chef.set_mode(None)
    assert "get_forecast  " not in _search(chef, queries=["tide"])  # not a hit here
    assert "old wording" in _search(chef, queries=["weather forecast"])


def test_each_description_cap_gets_its_own_entries() -> None:
    long, short = _chef(), _chef(description_chars=60)
    assert long.view.index is short.view.index  # one shared index, two caps
    for _ in range(2):  # either order, memo filled or not
        wide = _search(long, tool_names=["get_forecast"])
        cut = _search(short, tool_names=["get_forecast"])
        assert "Detail. Detail. Detail. Detail." in wide
        assert "Detail. Detail. Detail. Detail." not in cut and "old wording" in cut


def test_a_tool_added_at_run_time_is_rendered() -> None:
    chef = _chef()
    _search(chef, queries=["weather"])
    added = Tool(
        name="zz_snow", description="Snow depth for a city.", input_schema=SCHEMA, source="runtime"
    )
    chef.register_tools([added])
    text = _search(chef, queries=["snow depth"])
    assert "zz_snow" in text and "Snow depth for a city." in text


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3),
    st.lists(st.one_of(st.text(max_size=3), st.integers(), st.none()), max_size=3),
    st.lists(st.text(max_size=3), min_size=1, max_size=3),
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["queries", "tool_names", "limit", "other"]), _VALUES))
def test_the_fast_yes_never_accepts_what_the_schema_refuses(arguments: dict[str, Any]) -> None:
    if _usual(arguments):
        assert validation_errors(_SEARCH_SCHEMA, arguments) == []


def test_the_fast_yes_takes_the_usual_calls() -> None:
    assert _usual({"queries": ["weather"]})
    assert _usual({"tool_names": ["a", "b"], "limit": 3})
    assert not _usual({"queries": [""]})  # left to the validators, which refuse it
    assert not _usual({"queries": ["x"], "limit": True})
    assert not _usual({"queries": ["x"], "limit": 2.0})  # valid, but not the usual shape
    assert not _usual({})
