"""Offloading large tool results at write time, plus case history-18."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from test_normalize import render

from conftest import load_case
from contextchef._errors import ContextChefError, StorageError, UsageError
from contextchef._json import canonical_dumps
from contextchef._tokens import estimate_tokens
from contextchef.history._messages import MediaPart, Message, ToolCall, ToolResult, assistant, user
from contextchef.history._normalize import check_pairing, normalize
from contextchef.history._offload import (
    DEFAULT_READ_BYTES,
    OffloadStore,
    execute_offload_read,
    offload_read_tool,
    offload_result,
    read_offloaded,
)

OVERHEAD = 512  # chars the stub may add to the inline budget (marker + notice)

# -- history-18: a 4.4 MB log never reaches the context ---------------------------------------


def _log() -> str:
    lines = []
    for n in range(1, 60_001):
        body = "ERROR: linker exited with code 1" if n == 59_990 else f"step {n} compiled ok"
        lines.append(f"line {n}: {body.ljust(70, '.')}\n")
    return "".join(lines)


@pytest.fixture(scope="module")
def case18() -> dict[str, Any]:
    return load_case("history-18")


@pytest.fixture(scope="module")
def log() -> str:
    return _log()


def _image(size: int) -> MediaPart:
    return MediaPart(
        media_type="image/png", data=base64.b64encode(b"\x89PNG" * (size // 4)).decode()
    )


def _ingest(store: OffloadStore, log: str, case18: dict[str, Any]) -> list[Message]:
    history = case18["input"]["history"]
    call = history[1]["tool_calls"][0]
    raw = ToolResult(call_id=call["id"], name=call["name"], content=log, media=(_image(20480),))
    limit = case18["input"]["offload_config"]["max_inline_bytes"]
    stub = offload_result(raw, store, max_inline_chars=limit)
    return [
        user(history[0]["content"]),
        assistant(
            tool_calls=[ToolCall(id=call["id"], name=call["name"], arguments=call["arguments"])]
        ),
        Message(role="user", parts=(stub,)),
    ]


def test_history_18_stub_is_bounded_and_shows_head_tail_size_and_handle(
    tmp_path: Path, log: str, case18: dict[str, Any]
) -> None:
    store = OffloadStore(tmp_path)
    stub = _ingest(store, log, case18)[2].tool_results[0]
    limit = case18["input"]["offload_config"]["max_inline_bytes"]
    assert len(log.encode()) > 4_000_000
    assert len(stub.content.encode()) <= limit + OVERHEAD
    assert stub.content.startswith("line 1: step 1 compiled ok")
    assert "ERROR: linker exited with code 1" in stub.content
    assert "line 60000: " in stub.content
    total = len(log.encode())
    assert f"({total} bytes)" in stub.content
    locator = hashlib.sha256(log.encode()).hexdigest() + ".txt"
    assert locator in stub.content and "read_offloaded" in stub.content
    assert (store.directory / locator).read_bytes() == log.encode()
    assert store.directory.parent == tmp_path
    # whole lines only: every line of the preview is a complete log line or a notice
    for line in stub.content.splitlines():
        assert line.startswith(("line ", "[")), line
        assert not line.startswith("line ") or len(line) == len(line.split(":")[0]) + 72


def test_history_18_pairing_position_and_image_in_both_payloads(
    tmp_path: Path, log: str, case18: dict[str, Any]
) -> None:
    history = _ingest(OffloadStore(tmp_path), log, case18)
    stub = history[2].tool_results[0]
    assert (stub.call_id, stub.name, stub.is_error) == ("call_log", "remote_exec", False)
    assert stub.media == (_image(20480),)  # kept as media, not stringified
    assert "iVBO" not in stub.content and _image(20480).data not in stub.content  # type: ignore[operator]
    assert normalize(history).changes == () and check_pairing(history) == []
    anthropic = render("anthropic", history)["messages"]
    block = anthropic[2]["content"][0]
    assert anthropic[1]["content"][0]["id"] == "call_log"
    assert block["type"] == "tool_result" and block["tool_use_id"] == "call_log"
    items = render("responses", history)["input"]
    kinds = [(i.get("type"), i.get("call_id")) for i in items]
    assert kinds.index(("function_call", "call_log")) + 1 == kinds.index(
        ("function_call_output", "call_log")
    )
    for target in ("anthropic", "responses"):
        text = canonical_dumps(render(target, history))
        assert estimate_tokens(text) < case18["input"]["model_context_tokens"] // 4


def test_history_18_is_byte_identical_twice(
    tmp_path: Path, log: str, case18: dict[str, Any]
) -> None:
    a, b = OffloadStore(tmp_path / "a"), OffloadStore(tmp_path / "b")
    first = _ingest(a, log, case18)
    second = _ingest(b, log, case18)
    again = _ingest(a, log, case18)
    assert first == second == again  # the scope (random per store) never reaches the stub
    for target in ("anthropic", "responses"):
        assert canonical_dumps(render(target, first)) == canonical_dumps(render(target, second))
    assert sorted(p.name for p in a.directory.iterdir()) == sorted(
        p.name for p in b.directory.iterdir()
    )


def test_history_18_read_back_is_exact(tmp_path: Path, log: str, case18: dict[str, Any]) -> None:
    store = OffloadStore(tmp_path)
    _ingest(store, log, case18)
    op = case18["input"]["ops"][3]["call"]
    assert op["name"] == offload_read_tool()["name"]
    locator = hashlib.sha256(log.encode()).hexdigest() + ".txt"
    args = {**op["arguments"], "handle": locator}
    want = log.encode()[args["offset"] : args["offset"] + args["length"]].decode()
    assert read_offloaded(store, locator, args["offset"], args["length"]) == want
    assert execute_offload_read(store, args) == want
    assert read_offloaded(store, locator) == log


# -- the pieces -------------------------------------------------------------------------------


def test_small_results_are_left_alone(tmp_path: Path) -> None:
    res = ToolResult(call_id="a", name="f", content="short\n")
    assert offload_result(res, OffloadStore(tmp_path), max_inline_chars=100) is res
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_single_huge_line_is_cut_within_budget(tmp_path: Path) -> None:
    content = "x" * 10_000
    res = ToolResult(call_id="a", name="f", content=content, is_error=True)
    stub = offload_result(res, OffloadStore(tmp_path), max_inline_chars=1000)
    assert stub.is_error and stub.call_id == "a"
    assert stub.content.startswith("x" * 500 + "\n[... 9000 chars (9000 bytes")
    assert len(stub.content) <= 1000 + OVERHEAD


def test_head_and_tail_line_counts(tmp_path: Path) -> None:
    content = "".join(f"{i}\n" for i in range(1000))
    stub = offload_result(
        ToolResult(call_id="a", name="f", content=content),
        OffloadStore(tmp_path),
        max_inline_chars=100,
        head_lines=3,
        tail_lines=2,
    ).content
    lines = stub.splitlines()
    assert lines[:3] == ["0", "1", "2"] and lines[4:6] == ["998", "999"]
    assert lines[3].startswith("[... ") and "about 995 lines" in lines[3]


def test_non_ascii_sizes_and_byte_offsets(tmp_path: Path) -> None:
    content = "日志行\n" * 2000
    store = OffloadStore(tmp_path)
    stub = offload_result(
        ToolResult(call_id="a", name="f", content=content), store, max_inline_chars=200
    ).content
    assert f"{len(content)} chars ({len(content.encode())} bytes)" in stub
    locator = hashlib.sha256(content.encode()).hexdigest() + ".txt"
    assert read_offloaded(store, locator, 0, 10) == "日志行\n"
    assert read_offloaded(store, locator, 1, 3) == "日"  # both ends moved to a start
    assert read_offloaded(store, locator, 1, 1) == ""  # no character starts in it
    no_start = execute_offload_read(store, {"handle": locator, "offset": 1, "length": 1})
    assert no_start.startswith(f"No character starts in bytes 1-2 of {locator}: read from offset 0")
    assert store.read(locator, 1, 3) == content.encode()[1:4]


@pytest.mark.parametrize("length", [4, 5, 7, 20, 1000])
def test_pages_read_at_offset_plus_length_give_the_result_whole(
    tmp_path: Path, length: int
) -> None:
    """Break-it 37: pages of ``read_offloaded`` cut multi-byte characters (U+FFFD at both
    edges, characters lost when joined). The model pages by ``offset += length``, as the
    stub tells it; every page is whole characters and the pages join to the result."""
    content = "é 中文, 😀 ascii\n" * 300 + "尾"
    store = OffloadStore(tmp_path)
    offload_result(ToolResult(call_id="a", name="f", content=content), store, max_inline_chars=200)
    locator = hashlib.sha256(content.encode()).hexdigest() + ".txt"
    pages, offset = [], 0
    while offset < len(content.encode()):
        pages.append(
            execute_offload_read(store, {"handle": locator, "offset": offset, "length": length})
        )
        offset += length
    assert all("\ufffd" not in p for p in pages)
    assert "".join(pages) == content


def test_bad_locators_and_arguments(tmp_path: Path) -> None:
    store = OffloadStore(tmp_path)
    for bad in ("../etc/passwd", "abc.txt", "0" * 64 + ".txt"):
        with pytest.raises(UsageError):
            read_offloaded(store, bad)
    locator = store.put(b"hello")
    with pytest.raises(UsageError):
        read_offloaded(store, locator, -1)
    with pytest.raises(UsageError):
        execute_offload_read(store, {"handle": locator, "offset": "3"})
    with pytest.raises(UsageError):
        offload_result(ToolResult(call_id="a", name="f", content="x"), store, max_inline_chars=0)
    assert execute_offload_read(store, {"handle": locator, "offset": 99}).startswith("Nothing")
    assert execute_offload_read(store, {"handle": locator}) == "hello"


def test_read_tool_definition() -> None:
    tool = offload_read_tool()
    assert tool["name"] == "read_offloaded"
    assert tool["input_schema"]["required"] == ["handle"]
    assert str(DEFAULT_READ_BYTES) in tool["description"]
    from contextchef import Tool

    Tool(**tool)  # a valid contextchef tool definition


def test_a_store_that_cannot_be_written_raises_storage_error_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    store = OffloadStore(blocker / "offload")
    with pytest.raises(StorageError, match="cannot write an offloaded result to") as caught:
        store.put(b"y" * 10)
    assert isinstance(caught.value, OSError) and isinstance(caught.value, ContextChefError)
    assert caught.value.path == str(blocker / "offload")
    with pytest.raises(StorageError):
        offload_result(
            ToolResult(call_id="c", name="t", content="z" * 50), store, max_inline_chars=5
        )
    with pytest.raises(UsageError, match="takes bytes, got str"):
        OffloadStore(tmp_path).put("text")  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-dir"]


def test_a_stored_result_that_cannot_be_read_raises_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = OffloadStore(tmp_path)
    locator = store.put(b"abc")

    def refuse(*_: object, **__: object) -> None:
        raise PermissionError(13, "Permission denied", str(store.directory / locator))

    monkeypatch.setattr(os, "read", refuse)
    with pytest.raises(StorageError, match=f"cannot read offloaded result {locator}") as caught:
        read_offloaded(store, locator)
    assert str(tmp_path) not in str(caught.value)  # the model sees the handle, not the dir
    assert not list(tmp_path.glob(".tmp-*"))
