"""contextchef.mcp against real server processes: ingest, dispatch, content, failures."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixture_server import PNG
from mcp_fixtures import fixture_stdio, http_server, time_server

from contextchef import ContextChef, ToolAnnotations, user
from contextchef.history._messages import ToolCall, ToolResult
from contextchef.mcp import McpHub, McpServer, McpServerError, list_servers

FIXTURE_TOOLS = ["admin", "big", "echo", "fail", "kinds", "pid", "sleep", "structured"]


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The fixture server over streamable HTTP, shared by this module's tests."""
    with http_server() as (_, url):
        yield url


def call(chef: ContextChef, name: str, args: dict[str, object] | None = None) -> ToolResult:
    result = chef.execute(ToolCall(id=f"c_{name}", name=name, arguments=args or {})).result
    assert result.call_id == f"c_{name}" and result.name == name
    return result


def test_stdio_ingest_reads_every_page_with_annotations_and_group() -> None:
    (listing,) = list_servers([fixture_stdio(page_size=3)])
    assert listing.pages == 3  # 8 tools, 3 a page: the cursor was followed to the end
    assert sorted(t["name"] for t in listing.tools) == FIXTURE_TOOLS

    untrusted = ContextChef()
    with McpHub(untrusted, [fixture_stdio(page_size=3)]):
        assert {t.annotations for t in untrusted.tools} == {ToolAnnotations()}
    chef = ContextChef()
    with McpHub(chef, [fixture_stdio(page_size=3, trust_annotations=True)]) as hub:
        assert hub.servers == ("fixture",)
        tools = {t.name: t for t in chef.tools}
        assert sorted(tools) == FIXTURE_TOOLS
        assert {t.source for t in tools.values()} == {"mcp"}
        assert {t.server for t in tools.values()} == {"fixture"}
        assert tools["echo"].annotations == ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, open_world=False
        )
        assert tools["admin"].annotations.destructive is True
        assert chef.registry.server_description("fixture") == (
            "Test fixture tools: echo, content kinds, failures."
        )
        assert chef.wire_name("echo", server="fixture") == "fixture__echo"
        raw = hub.definition("fixture__echo")
        assert raw is not None and raw["name"] == "echo"  # the original name, for dispatch
        assert raw["annotations"]["readOnlyHint"] is True
        assert call(chef, "fixture__echo", {"text": "hello"}).content == "hello"


def test_http_transport_ingests_pages_and_dispatches(http_url: str) -> None:
    (listing,) = list_servers([http_url])
    assert listing.pages == 3 and listing.server == "fixture"
    chef = ContextChef()
    with McpHub(chef, [McpServer(url=http_url, name="web")]) as hub:
        assert hub.servers == ("web",)
        assert sorted(t.name for t in chef.tools) == FIXTURE_TOOLS
        assert call(chef, "web__echo", {"text": "over http"}).content == "over http"
        assert call(chef, "web__fail").is_error


def test_every_content_kind_maps_to_result_parts() -> None:
    chef = ContextChef()
    with McpHub(chef, [fixture_stdio()]):
        kinds = call(chef, "fixture__kinds")
        structured = call(chef, "fixture__structured")
    assert not kinds.is_error
    assert kinds.content == "\n\n".join(
        [
            "plain text",
            "[audio: audio/wav, 16 bytes]",
            "[resource file:///notes.txt (text/plain)]\nembedded notes",
            "[resource link: big.csv file:///big.csv (text/csv)]",
            '{"count":6}',
        ]
    )
    # the image block and the embedded image blob arrive as media, bytes untouched
    assert [(m.media_type, m.data) for m in kinds.media] == [("image/png", PNG)] * 2
    assert json.loads(structured.content) == {"temperature": 21.5}


def test_is_error_becomes_an_error_result_with_the_servers_text() -> None:
    chef = ContextChef()
    with McpHub(chef, [fixture_stdio()]):
        result = call(chef, "fixture__fail")
    assert result.is_error and result.content == "the disk is full"


def test_a_timeout_is_an_error_result_naming_the_server_and_the_next_call_works() -> None:
    chef = ContextChef()
    with McpHub(chef, [fixture_stdio(timeout=1.0)]):
        slow = call(chef, "fixture__sleep", {"seconds": 5})
        assert slow.is_error
        assert slow.content == "MCP server 'fixture' did not answer 'sleep' within 1 s"
        assert call(chef, "fixture__echo", {"text": "still here"}).content == "still here"


def test_a_server_killed_mid_session_gives_error_results_naming_it() -> None:
    chef = ContextChef()
    chef.append(user("go"))
    with McpHub(chef, [fixture_stdio()]):
        pid = int(call(chef, "fixture__pid").content)
        os.kill(pid, signal.SIGKILL)
        lost = call(chef, "fixture__echo", {"text": "anyone?"})
        assert lost.is_error and "MCP server 'fixture'" in lost.content
        chef.compile("anthropic")  # the disconnection is applied: the gate refuses its tools
        refused = call(chef, "fixture__echo", {"text": "anyone?"})
        assert refused.is_error and refused.content == (
            'Tool "fixture__echo" is unavailable: disconnected MCP server "fixture".'
        )


def test_an_http_server_killed_mid_session_gives_error_results_naming_it() -> None:
    chef = ContextChef()
    chef.append(user("go"))
    with http_server() as (proc, url), McpHub(chef, [url]):
        assert call(chef, "fixture__echo", {"text": "hi"}).content == "hi"
        proc.kill()
        proc.wait()
        lost = call(chef, "fixture__echo", {"text": "anyone?"})
        assert lost.is_error and "MCP server 'fixture'" in lost.content
        chef.compile("responses")
        assert call(chef, "fixture__echo", {"text": "anyone?"}).content == (
            'Tool "fixture__echo" is unavailable: disconnected MCP server "fixture".'
        )


def test_a_large_result_goes_through_the_offload_path(tmp_path: Path) -> None:
    chef = ContextChef(offload_dir=tmp_path, max_inline_chars=2_000)
    with McpHub(chef, [fixture_stdio()]):
        result = call(chef, "fixture__big", {"size": 100})  # 100 lines of 91 characters
    assert len(result.content) < 2_500 and "read_offloaded" in result.content
    (stored,) = tmp_path.glob("*/*.txt")  # in the session's scope directory
    assert stored.read_text("utf-8") == ("0123456789" * 9 + "\n") * 100


def test_a_server_that_does_not_start_is_a_contextchef_error() -> None:
    chef = ContextChef()
    hub = McpHub(chef, [McpServer(command="/nonexistent/mcp-server", timeout=5)])
    with pytest.raises(McpServerError, match="could not be connected"):
        hub.start()
    assert chef.tools == ()


def test_reference_time_server_from_pypi_sync_host() -> None:
    chef = ContextChef()
    with McpHub(chef, [time_server(trust_annotations=True)]) as hub:
        assert hub.servers == ("mcp-time",)
        tools = {t.name: t for t in chef.tools}
        assert sorted(tools) == ["convert_time", "get_current_time"]
        assert tools["get_current_time"].annotations.read_only is True
        result = call(
            chef,
            "mcp-time__convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )
    assert not result.is_error
    answer = json.loads(result.content)
    assert answer["source"]["timezone"] == "UTC"
    assert answer["target"]["timezone"] == "Asia/Tokyo"
    assert answer["time_difference"] == "+9.0h"


def test_reference_time_server_async_host_runs_parallel_calls() -> None:
    async def main() -> list[ToolResult]:
        chef = ContextChef()
        async with McpHub(chef, [time_server()]):
            calls = [
                ToolCall(
                    id=f"c{i}",
                    name="mcp-time__convert_time",
                    arguments={
                        "source_timezone": "UTC",
                        "time": f"1{i}:00",
                        "target_timezone": "UTC",
                    },
                )
                for i in range(3)
            ]
            done = await asyncio.gather(*(chef.aexecute(c) for c in calls))
        return [d.result for d in done]

    results = asyncio.run(main())
    assert [r.call_id for r in results] == ["c0", "c1", "c2"]
    assert [json.loads(r.content)["source"]["datetime"][11:16] for r in results] == [
        "10:00",
        "11:00",
        "12:00",
    ]
