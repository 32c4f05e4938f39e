"""A listing the host fetched itself is as untrusted as one `McpHub` fetched (issue 23, item 6).

The host talks to ``hostile_server.py`` (this folder, the official SDK) with the SDK's
own ``mcp.Client`` and hands the ``tools/list`` result to ``chef.register_mcp_tools``
(or `tools_from_mcp`): the same rules apply as on the hub's path (one function,
`contextchef.tools._mcp.checked_listing`), with the same per-server trust switch. Also:
the hub's stdio transport drops an oversized listing while reading it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import mcp
import pytest
from test_mcp_trust import HOSTILE, call, hostile, strings, tags_a_reader_sees

from contextchef import (
    ContextChef,
    McpListingTooLarge,
    McpRules,
    Tool,
    ToolNameConflictError,
    UsageError,
    tools_from_mcp,
    user,
)
from contextchef._errors import InvalidToolError
from contextchef.mcp import McpHub
from contextchef.mcp._stdio import LineSplitter, Refusal


def fetched(mode: str, env: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """``tools/list`` and ``instructions`` of a hostile server, read by the host's own client."""

    async def run() -> tuple[dict[str, Any], str]:
        params = mcp.StdioServerParameters(
            command=sys.executable, args=[str(HOSTILE), mode], env=env
        )
        async with mcp.Client(params) as client:
            result = await client.list_tools()
            listing: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True)
            return listing, client.instructions or ""

    return asyncio.run(run())


@pytest.fixture(scope="module")
def inject() -> tuple[dict[str, Any], str]:
    return fetched("inject")


def by_hand(
    inject: tuple[dict[str, Any], str], rules: McpRules | None = None, **chef: Any
) -> ContextChef:
    session = ContextChef(**chef)
    listing, instructions = inject
    session.register_mcp_tools(listing, server="inject", description=instructions, rules=rules)
    return session


def definitions(chef: ContextChef) -> list[Tool]:
    return [t for t in chef.tools if t.server == "inject"]


@pytest.mark.parametrize("trust", [False, True])
def test_by_hand_and_through_the_hub_the_session_takes_the_same_tools(
    inject: tuple[dict[str, Any], str], trust: bool
) -> None:
    hub_chef = ContextChef()
    with McpHub(hub_chef, [hostile("inject", trust_annotations=trust, description_chars=30)]):
        rules = McpRules(trust_annotations=trust, description_chars=30)
        chef = by_hand(inject, rules)
        assert definitions(chef) == definitions(hub_chef) != []
        assert chef.registry.server_description("inject") == hub_chef.registry.server_description(
            "inject"
        )
    assert any(t.annotations.read_only for t in chef.tools) is trust


@pytest.mark.parametrize("defer", [True, False])
def test_text_registered_by_hand_cannot_open_or_close_our_tags(
    inject: tuple[dict[str, Any], str], defer: bool
) -> None:
    chef = by_hand(inject, default_defer=defer)
    chef.append(user("weather?"))
    payload = chef.compile("anthropic", model="claude-opus-5-5").payload
    found = [t for text in strings(payload) for t in tags_a_reader_sees(text)]
    assert found == (["<available_deferred_tools", "</available_deferred_tools"] if defer else [])
    forecast = chef.registry.by_wire_name("inject__forecast")
    assert forecast is not None
    assert forecast.input_schema["properties"]["city"]["enum"] == ["&lt;memories>", "Paris"]
    assert tags_a_reader_sees(forecast.description) == []


def test_annotations_by_hand_are_trusted_only_when_the_host_says_so(
    inject: tuple[dict[str, Any], str],
) -> None:
    def kept(chef: ContextChef) -> list[str]:
        chef.set_history([user("go")])
        tools = chef.compile("anthropic", model="claude-opus-5-5").payload.get("tools", [])
        return sorted(t["name"] for t in tools if t["name"].startswith("inject__"))

    assert kept(by_hand(inject, mode="read_only")) == []  # the server's readOnlyHint: dropped
    trusted = by_hand(inject, McpRules(trust_annotations=True), mode="read_only")
    assert kept(trusted) == ["inject__forecast", "inject__wipe_disk"]


def test_names_by_hand_are_reserved_normalized_and_checked(
    inject: tuple[dict[str, Any], str],
) -> None:
    chef = by_hand(inject)
    for name in ("load_toolkit", "tool_search", "read_offloaded", "load_skill"):
        is_error, _ = call(chef, name)  # a bare library name: never the server's tool
        assert is_error and chef.view.lookup(name) is None
        assert chef.registry.by_wire_name(f"inject__{name}") is not None
    assert chef.registry.by_wire_name("inject__load_skill") is not None  # fullwidth, NFKC
    with pytest.raises(ToolNameConflictError, match="reserved"):
        by_hand(inject, qualify=False)
    listing, _ = fetched("invisible")
    with pytest.raises(InvalidToolError, match=r"'invisible'.*U\+200B") as caught:
        ContextChef().register_mcp_tools(listing, server="invisible")
    assert caught.value.tool == "load\u200b_skill"


def test_listing_caps_by_hand_name_the_server(inject: tuple[dict[str, Any], str]) -> None:
    chef = ContextChef()
    listing, _ = inject
    with pytest.raises(McpListingTooLarge, match=r"'inject'.* more than 2 tools") as caught:
        chef.register_mcp_tools(listing, server="inject", rules=McpRules(max_tools=2))
    assert caught.value.server == "inject" and chef.tools == ()
    big, _ = fetched("huge", {"HUGE_MB": "1.5"})
    with pytest.raises(McpListingTooLarge, match="more than 1000000 bytes"):
        tools_from_mcp(big, server="huge", rules=McpRules(max_listing_bytes=1_000_000))
    assert len(tools_from_mcp(big, server="huge", rules=McpRules(description_chars=10))) == 16


def test_instructions_by_hand_are_capped() -> None:
    chef = ContextChef()
    rules = McpRules(instructions_chars=20)
    chef.register_mcp_tools([], server="s", description="<memories>" * 10, rules=rules)
    description = chef.registry.server_description("s")
    assert description.startswith("&lt;memories>") and description.endswith("…")
    assert len(description) <= 20 and tags_a_reader_sees(description) == []
    with pytest.raises(UsageError, match="rules must be an McpRules"):
        chef.register_mcp_tools([], server="s", rules={"trust_annotations": True})  # type: ignore[arg-type]


# -- the stdio transport ------------------------------------------------------------------------


def test_a_fifty_megabyte_stdio_listing_is_dropped_while_read() -> None:
    """Before: the SDK's reader took minutes over one 50 MB line (a timeout, not the cap)."""
    start = time.monotonic()
    with McpHub(ContextChef()) as hub:
        conn = hub._connect(hostile("huge", env={"HUGE_MB": "50"}))
        with pytest.raises(McpListingTooLarge, match="dropped unread") as caught:
            hub._run(conn.list_tools())
        assert caught.value.server == "huge" and "more than 5000000 bytes" in str(caught.value)
        with pytest.raises(McpListingTooLarge, match="dropped unread"):
            hub._run(conn.list_tools())  # the connection stays up: refused again, at once
        assert conn.alive
    assert time.monotonic() - start < 60


def test_the_line_splitter_gives_up_only_a_listing_answer() -> None:
    listing: set[object] = {7}
    lines = LineSplitter(10, listing)
    big = b'{"jsonrpc":"2.0","id":7,"result":{"tools":[' + b"x" * 50
    other = b'{"jsonrpc":"2.0","id":8,"result":{"tools":[' + b"y" * 50
    out = lines.feed(b'{"a":1}\n' + big[:30]) + lines.feed(big[30:] + b"]}}\n" + other)
    assert out == [b'{"a":1}', Refusal(7, 30)]  # given up once past 10 bytes
    assert lines.feed(b"\n{}\n") == [other, b"{}"]  # id 8 is not a listing of ours: kept
    late = LineSplitter(10, {9})
    last = b'{"result":{"tools":[' + b"z" * 40 + b']},"id":9}'
    assert late.feed(last + b"\n") == [last]  # an id after the result: read whole
    assert Path(HOSTILE).is_file()
