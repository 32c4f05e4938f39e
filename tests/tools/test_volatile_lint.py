"""The volatile-value lint (issue 13, item 3): per-request values in the prompt prefix."""

from __future__ import annotations

import datetime
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import shared_data
from contextchef import ContextChef, Tool, VolatileValueError
from contextchef.deferred._prefix_lint import prefix_values
from contextchef.tools._catalogs import load_catalog
from contextchef.tools._lint import (
    _EXAMPLE,
    _EXAMPLE_WINDOW,
    _Examples,
    find_volatile,
    lint_tool,
)

TODAY = datetime.date(2026, 12, 1)


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("You are helpful.\nDate: 2026-12-01\nBe brief.", "date_line", "Date: 2026-12-01"),
        ("Current time: 14:05 UTC", "date_line", "Current time: 14:05 UTC"),
        ("Today is Tuesday, December 1.", "date_line", "Today is Tuesday, December 1."),
        ("Session started at 2026-11-30T10:00:00Z.", "datetime", "2026-11-30T10:00:00Z"),
        ("Data as of 2026-12-03.", "date", "2026-12-03"),
        ("Request ts 1764547200 (server).", "epoch", "1764547200"),
        ("Request ts 1764547200123 (server).", "epoch", "1764547200123"),
        (
            "Session 7e07485f-12f9-416b-8b14-26260799b51f.",
            "uuid",
            "7e07485f-12f9-416b-8b14-26260799b51f",
        ),
        (
            "Build 4384b8a298c9db9a4651f2e6b34048ae9bc7d0f9.",
            "hex_id",
            "4384b8a298c9db9a4651f2e6b34048ae9bc7d0f9",
        ),
        ("今天是2026年12月1日。", "date", "2026年12月1日"),
        ("Generated at 21:40:53 by the scheduler.", "time", "21:40:53"),
        ("Heartbeat 09:00:00.250 received.", "time", "09:00:00.250"),
        ("生成于 21:40:53。", "time", "21:40:53"),
        (
            "<examples>x</examples>\nSession 7e07485f-12f9-416b-8b14-26260799b51f.",
            "uuid",
            "7e07485f-12f9-416b-8b14-26260799b51f",
        ),
        (
            "Use ids, e.g. abc.\n\nSession 7e07485f-12f9-416b-8b14-26260799b51f.",
            "uuid",
            "7e07485f-12f9-416b-8b14-26260799b51f",
        ),
    ],
)
def test_each_kind_is_flagged(text: str, kind: str, value: str) -> None:
    assert [(k, v) for k, _, v in find_volatile(text, today=TODAY)] == [(kind, value)]
    ((_, offset, _),) = find_volatile(text, today=TODAY)
    assert text[offset:].startswith(value)


@pytest.mark.parametrize(
    "text",
    [
        "Released on 2023-04-01; use ISO dates.",  # long ago: a fixed fact
        "Start date in ISO 8601 format (e.g., 2023-04-01T00:00:00Z).",  # an old example
        "The replay ID. e.g. `7e07485f-12f9-416b-8b14-26260799b51f`",
        "<examples>\nget(id='c49541c747cb4d8aa3efb70ca5aba243')\n</examples>",
        "```\nget(id='c49541c747cb4d8aa3efb70ca5aba243')\n```",
        "Page size 1000000000 items max.",  # a number, not a time near now
        "Hex colours like ffffff are fine; deadbeef too.",
        "Today is a good day to ship. Always check the current date with the tool.",
        "Date: see the tool.",
        "Range 2023-04-01T00:00:00Z to 2023-04-30T23:59:59Z.",  # old, times included
        # break-it round 19 (p32): a round clock time is a schedule, not a reading
        "Opening hours: 09:00:00 to 17:30:00.",
        "Lunar time, e.g. `2000-5-5 12:00:00`.",
        "Time in HH:MM:SS, like 12:34:56.",
        # Chinese and Japanese example markers count like "e.g."
        "农历时间。例如农历2000年5月初五中午12点整表示为：`2000-5-5 12:34:56`。",  # noqa: RUF001
        "会话ID，比如 7e07485f-12f9-416b-8b14-26260799b51f",  # noqa: RUF001
        "例：c49541c747cb4d8aa3efb70ca5aba243",  # noqa: RUF001
        "如：`21:40:53`",  # noqa: RUF001
        "セッションID。例えば 7e07485f-12f9-416b-8b14-26260799b51f",
        "格式为 HH:MM:SS，21:40:53",  # noqa: RUF001
    ],
)
def test_fixed_values_and_examples_are_not_flagged(text: str) -> None:
    assert find_volatile(text, today=TODAY) == []


@pytest.mark.parametrize(
    "today", [TODAY, datetime.datetime.now(datetime.timezone.utc).date()], ids=["fixed", "now"]
)
def test_the_real_catalogs_have_no_volatile_values(
    catalog_paths: list[Path], today: datetime.date
) -> None:
    """Every catalog in ../shared/data (servers and benchmark tool pools), every text."""
    paths = [*catalog_paths, *sorted((shared_data() / "retrieval").glob("*.catalog.json"))]
    assert len(paths) >= 19
    found = []
    for path in paths:
        catalog = load_catalog(path, repair_schemas=True)
        for t in catalog.tools:
            found += lint_tool(t.name, t.description, t.input_schema, today=today)
        servers = prefix_values(catalog.server_descriptions.items(), today=today)
        found += [v for values in servers.values() for v in values]
    assert [v.message for v in found] == []


def test_schema_strings_are_linted_with_their_path() -> None:
    schema = {
        "type": "object",
        "properties": {"since": {"type": "string", "description": "Date: 2026-12-01"}},
    }
    (value,) = lint_tool("fetch", "Fetch things.", schema, today=TODAY)
    assert value.location == "tool 'fetch' input_schema at properties.since.description"
    assert value.kind == "date_line"


def _stamp() -> str:
    return (
        f"You are a helpful agent.\nDate: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}"
    )


def test_warn_logs_and_lists_the_value(caplog: pytest.LogCaptureFixture) -> None:
    chef = ContextChef()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        chef.set_system_prompt(_stamp())
    (value,) = chef.volatile_values
    assert value.location == "system prompt" and value.kind == "date_line"
    assert any("system prompt, character 25" in r.getMessage() for r in caplog.records)
    assert "set_dynamic_state" in value.message
    chef.set_system_prompt("You are a helpful agent.")
    assert chef.volatile_values == ()


def test_a_shared_catalog_is_logged_once_not_per_session(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every session over one catalog keeps its values; the warning is logged once."""
    session = "0b3c8c55-2f6f-4b1e-9d83-1f2f6f0d6a11"
    catalog = (
        Tool(name="lookup", description=f"Look up session {session}.", input_schema={}),
        Tool(name="steady", description="Nothing volatile here.", input_schema={}),
    )
    chefs = [ContextChef(), ContextChef(), ContextChef()]
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        for chef in chefs:
            chef.register_tools(catalog)
    assert [len(chef.volatile_values) for chef in chefs] == [1, 1, 1]
    logged = [r for r in caplog.records if "tool 'lookup' description" in r.getMessage()]
    assert len(logged) == 1
    strict = ContextChef(volatile_lint="raise")  # refused every time, not only the first
    with pytest.raises(VolatileValueError, match="tool 'lookup' description"):
        strict.register_tools(catalog)


def test_raise_refuses_before_anything_changes() -> None:
    chef = ContextChef(volatile_lint="raise")
    chef.set_system_prompt("Stable.")
    with pytest.raises(VolatileValueError, match="system prompt, character 25: a line with"):
        chef.set_system_prompt(_stamp())
    assert chef.snapshot()["system"] == "Stable."
    session = "7e07485f-12f9-416b-8b14-26260799b51f"
    tool = Tool(
        name="lookup",
        description=f"Look up records of session {session}.",
        input_schema={"type": "object"},
    )
    with pytest.raises(VolatileValueError, match="tool 'lookup' description") as info:
        chef.register_tools([tool])
    assert chef.tools == ()
    assert len(info.value.values) == 1


def test_off_checks_nothing() -> None:
    chef = ContextChef(volatile_lint="off")
    chef.set_system_prompt(_stamp())
    assert chef.volatile_values == ()


def test_a_bad_mode_is_a_usage_error() -> None:
    from contextchef import UsageError

    with pytest.raises(UsageError, match="volatile_lint must be 'off', 'warn' or 'raise'"):
        ContextChef(volatile_lint="loud")  # type: ignore[arg-type]


def test_a_template_source_and_a_server_description_are_handled() -> None:
    chef = ContextChef(volatile_lint="raise", template_vars={"build_day": "Monday"})
    templated = Tool(
        name="deploy",
        description="Deploys. Today is {{ build_day }}.",
        input_schema={"type": "object"},
        template=True,
    )
    chef.register_tools([templated])  # the source is not what the model reads
    with pytest.raises(VolatileValueError, match="server 'ops' description"):
        chef.register_tools(
            [Tool(name="status", description="Status.", input_schema={"type": "object"})],
            server="ops",
            server_description="Server started 2026-12-01T09:00:00Z.",
        )
    assert [t.name for t in chef.tools] == ["deploy"]


@settings(deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["<example>", "</example>", "<EXAMPLE a>", "```", "``", "\n\n", "e.g. ", "x", " ", "a1"]
        ),
        max_size=40,
    ),
    st.data(),
)
def test_example_marks_read_once_agree_with_reading_the_head(parts: list[str], data: Any) -> None:
    """`_Examples` (marks found once, then looked up) says what reading ``text[:start]``
    for every value said (the old check, quadratic over many values)."""
    text = "".join(parts)
    start = data.draw(st.integers(0, len(text)))
    paragraph = text.rfind("\n\n", 0, start) + 1
    head = text[:start].lower()
    naive = (
        _EXAMPLE.search(text, max(paragraph, start - _EXAMPLE_WINDOW), start) is not None
        or head.rfind("<example") > head.rfind("</example")
        or head.count("```") % 2 == 1
    )
    assert _Examples(text).holds(start) == naive
