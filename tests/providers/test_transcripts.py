"""Real recorded traffic (shared/data/transcripts): parse every request, compile it back.

Each recorded request (``turns[i]`` with the file's top-level ``system``) is parsed into
the IR with the parser for its format and rendered back with the same provider's
adapter. The messages segment must come out identical to the recording, compared under
exactly one named normalization per file (`NORMALIZATION`):

* ``raw-bytes``: none. The README says these cassettes stored the raw request body and
  that ``json.dumps`` with the named settings re-serializes it byte for byte; we dump
  ours with the same settings, so key order and spelling count.
* ``sorted-keys``: pydantic-ai cassettes keep ``parsed_body``, a YAML re-dump with sorted
  keys (README, "Byte exactness"): the wire key order is lost, the values are exact.
  Both sides are compared with sorted keys, values byte for byte.
* ``gemini-sdk-wire``: our Gemini payload is google-genai ``generate_content`` keyword
  arguments (snake_case); the SDK re-serializes every Content through its pydantic
  model, which fixes key spelling (camelCase) and key order on the wire. Ours is put
  through that model and must then equal the recorded bytes exactly (crewAI's Gemini
  client sends through the SDK, with Python's default separators).
* ``gemini-sdk-spelling``: as above, but the recording was written by hand
  (simonw/llm-gemini posts snake_case ``function_call`` next to camelCase
  ``thoughtSignature``), so the recording is put through the same SDK model too.
* ``gemini-sdk-sorted``: ``gemini-sdk-wire`` for a pydantic-ai (sorted-keys) recording.

SWE-agent trajectories have no provider wire format; they are read through a small
adapter onto Chat messages and only the IR pairing is checked.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from google.genai import types as genai_types

from conftest import shared_data
from contextchef import Message, ToolCall, ToolResult
from contextchef.providers import (
    TARGETS,
    ParsedHistory,
    RequestOptions,
    from_anthropic,
    from_gemini,
    from_openai,
    from_responses,
    get_adapter,
)
from sdk_check import sdk_problems

TRANSCRIPTS = shared_data() / "transcripts"
FILES = sorted(p.name for p in TRANSCRIPTS.glob("*.json"))

NORMALIZATION = {
    "crewai-anthropic-parallel.json": "raw-bytes",
    "crewai-anthropic-research.json": "raw-bytes",
    "crewai-gemini-parallel.json": "gemini-sdk-wire",
    "crewai-gemini-research.json": "gemini-sdk-wire",
    "crewai-openai-chat-cache-disabled.json": "raw-bytes",
    "crewai-openai-chat-max-usage.json": "raw-bytes",
    "llm-anthropic-thinking-tool-chain.json": "raw-bytes",
    "llm-gemini-tools.json": "gemini-sdk-spelling",
    "llm-openai-chat-tool-chain.json": "raw-bytes",
    "llm-responses-encrypted-reasoning.json": "raw-bytes",
    "llm-responses-interleaved-reasoning.json": "raw-bytes",
    "pai-anthropic-from-gemini-history.json": "sorted-keys",
    "pai-anthropic-images-in-tool-result.json": "sorted-keys",
    "pai-anthropic-pause-turn-web-search.json": "sorted-keys",
    "pai-anthropic-thinking-tool.json": "sorted-keys",
    "pai-anthropic-tool-search-handoff.json": "sorted-keys",
    "pai-anthropic-web-fetch.json": "sorted-keys",
    "pai-deepseek-reasoner-tools.json": "sorted-keys",
    "pai-gemini-from-anthropic-history.json": "gemini-sdk-sorted",
    "pai-gemini-parallel-thought-signatures.json": "gemini-sdk-sorted",
    "pai-groq-tool-use-failed.json": "sorted-keys",
    "pai-responses-from-anthropic-history.json": "sorted-keys",
    "pai-responses-native-tool-search.json": "sorted-keys",
    "pai-responses-tool-search-handoff.json": "sorted-keys",
}
SWE_AGENT = [f for f in FILES if f.startswith("swe-agent-")]
RECORDED = [f for f in FILES if f not in SWE_AGENT]


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((TRANSCRIPTS / name).read_text("utf-8"))
    return data


def target_of(data: dict[str, Any]) -> str:
    """The contextchef target a recording was sent to."""
    if data["format"] == "openai_chat":
        urls = [p.get("url", "") for p in data["request_params"]]
        return "deepseek" if any("api.deepseek.com" in u for u in urls) else "openai"
    return {"anthropic": "anthropic", "responses": "responses", "gemini": "gemini"}[data["format"]]


def parse(data: dict[str, Any], turn: list[dict[str, Any]]) -> ParsedHistory:
    fmt, system = data["format"], data["system"]
    if fmt == "anthropic":
        return from_anthropic(turn, system=system)
    if fmt == "openai_chat":
        return from_openai(turn)
    if fmt == "responses":
        return from_responses(turn, instructions=system)
    return from_gemini(turn, system_instruction=system)


def render_messages(target: str, parsed: ParsedHistory) -> list[dict[str, Any]]:
    """The messages segment as the target's adapter renders it (Chat: with system)."""
    adapter: Any = get_adapter(target)
    if target == "anthropic":
        out: list[dict[str, Any]] = adapter.render_messages(parsed.messages)
    elif target in ("openai", "deepseek"):
        head = [{"role": "system", "content": parsed.system}] if parsed.system else []
        out = head + adapter.render_messages(parsed.messages)
    elif target == "responses":
        out = adapter.render_input(parsed.messages)
    else:
        out = adapter.render_contents(parsed.messages)
    return out


def dump_settings(data: dict[str, Any]) -> dict[str, Any]:
    """The json.dumps settings the file's notes name for re-serializing the raw body."""
    if "default separators" in data["notes"]:
        return {"ensure_ascii": False}
    return {"ensure_ascii": False, "separators": (",", ":")}


def sdk_wire(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Gemini contents as google-genai puts them on the wire (camelCase, SDK key order)."""
    return [
        genai_types.Content.model_validate(c).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        for c in contents
    ]


def _sorted(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


COMPARE: dict[str, Callable[[dict[str, Any], list[Any], list[Any]], tuple[str, str]]] = {
    "raw-bytes": lambda d, ours, rec: (
        json.dumps(ours, **dump_settings(d)),
        json.dumps(rec, **dump_settings(d)),
    ),
    "sorted-keys": lambda d, ours, rec: (_sorted(ours), _sorted(rec)),
    "gemini-sdk-wire": lambda d, ours, rec: (
        json.dumps(sdk_wire(ours), **dump_settings(d)),
        json.dumps(rec, **dump_settings(d)),
    ),
    "gemini-sdk-spelling": lambda d, ours, rec: (
        json.dumps(sdk_wire(ours), **dump_settings(d)),
        json.dumps(sdk_wire(rec), **dump_settings(d)),
    ),
    "gemini-sdk-sorted": lambda d, ours, rec: (_sorted(sdk_wire(ours)), _sorted(rec)),
}


def test_every_file_is_classified() -> None:
    assert set(RECORDED) == set(NORMALIZATION), "classify new transcript files"
    assert len(SWE_AGENT) == 4
    raw = {f for f, n in NORMALIZATION.items() if n in ("raw-bytes", "gemini-sdk-wire")}
    assert all(f.startswith(("crewai-", "llm-")) for f in raw)
    assert all("parsed_body" in load(f)["notes"] for f in NORMALIZATION if f.startswith("pai-"))


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_requests_compile_back_identically(name: str) -> None:
    data = load(name)
    target = target_of(data)
    compare = COMPARE[NORMALIZATION[name]]
    for i, turn in enumerate(data["turns"]):
        parsed = parse(data, turn)
        assert not [n for n in parsed.notes if "does not render back" in n], (i, parsed.notes)
        ours, recorded = compare(data, render_messages(target, parsed), turn)
        assert ours == recorded, f"turn {i} of {name}"


@pytest.mark.parametrize("name", RECORDED)
def test_system_text_is_found(name: str) -> None:
    data = load(name)
    parsed = parse(data, data["turns"][-1])
    system = data["system"]
    if data["format"] == "openai_chat":
        first = data["turns"][-1][0]
        assert parsed.system == (first["content"] if first["role"] == "system" else "")
    elif isinstance(system, str) or system is None:
        assert parsed.system == (system or "")
    else:
        blocks = system if isinstance(system, list) else system["parts"]
        assert parsed.system == "\n\n".join(b["text"] for b in blocks)


def check_pairing(messages: tuple[Message, ...]) -> tuple[int, int]:
    """Every result answers an open earlier call, once. Returns (calls, results).

    An id may come back after its call was answered: pydantic-ai's Gemini-made ids
    repeat in ``pai-anthropic-from-gemini-history`` (``0usajhl5`` twice), and the
    provider accepted it.
    """
    open_calls: dict[str, ToolCall] = {}
    calls = results = 0
    for msg in messages:
        for part in msg.parts:
            if isinstance(part, ToolCall):
                assert part.id not in open_calls, part.id
                open_calls[part.id] = part
                calls += 1
            elif isinstance(part, ToolResult):
                assert part.call_id in open_calls, part.call_id
                assert part.name == open_calls.pop(part.call_id).name
                results += 1
    return calls, results


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_history_pairs_calls_and_results(name: str) -> None:
    data = load(name)
    parsed = parse(data, data["turns"][-1])
    calls, results = check_pairing(parsed.messages)
    last = parsed.messages[-1]
    pending = len(last.tool_calls) if last.role == "assistant" else 0
    assert results == calls - pending
    # Server-side tool blocks (web search, web fetch) stay provider parts, not calls.
    wire_calls = data["stats"]["calls"]
    assert calls <= wire_calls


CROSS_PROVIDER = [f for f in RECORDED if "-from-" in f or "handoff" in f]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", RECORDED)
def test_recorded_history_compiles_for_every_target(name: str, target: str) -> None:
    """Any recorded history, continued on any target, meets that target's SDK types."""
    data = load(name)
    parsed = parse(data, data["turns"][-1])
    payload = get_adapter(target).render_request(
        system=parsed.system,
        tools=[],
        messages=parsed.messages,
        options=RequestOptions(model="test-model"),
    )
    assert sdk_problems(target, payload) == []


def test_cross_provider_files_are_covered() -> None:
    assert {
        "pai-anthropic-from-gemini-history.json",
        "pai-gemini-from-anthropic-history.json",
        "pai-responses-from-anthropic-history.json",
    } <= set(CROSS_PROVIDER)


def test_raw_recordings_are_byte_exact() -> None:
    """The README's raw group really is compared byte for byte (no normalization)."""
    data = load("llm-openai-chat-tool-chain.json")
    turn = data["turns"][-1]
    ours = render_messages("openai", parse(data, turn))
    text = json.dumps(ours, ensure_ascii=False, separators=(",", ":"))
    # simonw/llm writes tool calls type-first and leaves out an empty assistant content.
    assert '{"role":"assistant","tool_calls":[{"type":"function","id":' in text
    assert text == json.dumps(turn, ensure_ascii=False, separators=(",", ":"))


# -- SWE-agent trajectories ------------------------------------------------------------


def swe_agent_to_chat(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SWE-agent message dicts onto Chat messages: drop SWE-agent's own keys.

    ``tool_call_ids`` (a list of one id) becomes ``tool_call_id``; ``thought``,
    ``action``, ``agent``, ``message_type`` and ``is_demo`` are bookkeeping (the
    thought is already the content, the action is already the tool call or the text).
    """
    out = []
    for msg in messages:
        item: dict[str, Any] = {"role": msg["role"], "content": msg["content"]}
        if msg.get("tool_calls"):
            item["tool_calls"] = msg["tool_calls"]
        if msg["role"] == "tool":
            (item["tool_call_id"],) = msg["tool_call_ids"]
        out.append(item)
    return out


@pytest.mark.parametrize("name", SWE_AGENT)
def test_swe_agent_history_pairs_sanely(name: str) -> None:
    data = load(name)
    assert data["format"] == "swe_agent"
    for turn in data["turns"]:
        parsed = from_openai(swe_agent_to_chat(turn))
        assert parsed.system == turn[0]["content"]
        calls, results = check_pairing(parsed.messages)
        native = sum(len(m.get("tool_calls") or []) for m in turn)
        assert calls == native and results == sum(m["role"] == "tool" for m in turn)
        roles = [m.role for m in parsed.messages]
        assert roles.count("assistant") == sum(m["role"] == "assistant" for m in turn)
        # Text-action runs alternate assistant action / user observation.
        assert all(a != b or a == "user" for a, b in itertools.pairwise(roles))
