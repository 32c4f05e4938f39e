"""Recorded conversations in, as requests in the IR (what ``contextchef replay`` feeds).

`load_recording` reads one JSON file in any of these shapes:

* a transcript of ``shared/data/transcripts`` (``format``: ``anthropic``,
  ``openai_chat``, ``responses``, ``gemini`` or ``swe_agent``; ``turns``: one
  conversation per request, or only the final one);
* a stored provider request: the keyword arguments of one SDK call (``messages`` /
  ``input`` / ``contents`` with ``system`` / ``instructions`` / ``systemInstruction``,
  ``tools``, ``model``), or a bare list of one provider's messages;
* a session snapshot (``ContextChef.snapshot()``, ``format: contextchef.snapshot``):
  its tools are its definitions (runtime tools) and the ``tools`` arrays its ledgers
  record as last sent; it records no model per request.

What a recording does not say and a replay assumes is in `Recording.assumed`.

A transcript's ``final_response`` (the provider's answer to its last request) gives that
request its reported cache usage (`RecordedRequest.usage`), read by the wire's reader
(`WireReader.read_cache`); a ``timestamp`` (epoch seconds) in a request's
``request_params`` entry says when it was sent (`RecordedRequest.at`).

A file that holds only the final conversation is cut before each assistant turn: the
requests it implies, exact only if the agent never rewrote its history. SWE-agent
messages are read as Chat messages (their own keys dropped); their tools are not
recorded, so every tool the model calls gets a stub definition (as does any called tool
a recording does not declare). Provider-hosted entries of a ``tools`` array (server
search, web search) are not function tools and are left out (`Recording.hosted`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from contextchef._errors import (
    CatalogFormatError,
    ContextChefError,
    UsageError,
    json_reason,
    shown_keys,
)
from contextchef._json import read_text_file
from contextchef.deferred._meta import DEFER_EXECUTE, TOOL_SEARCH
from contextchef.history._messages import Message, ToolCall, message_from_dict
from contextchef.providers import TARGETS, WIRES, CacheReport, ParsedHistory, WireReader, target_of
from contextchef.tools._catalogs import expand_tool_dicts, tool_from_dict
from contextchef.tools._tool import Tool

__all__ = ["RecordedRequest", "Recording", "load_recording", "read_json_file"]

_SWE_AGENT = "swe_agent"
"""SWE-agent trajectories: Chat Completions messages with keys of their own."""
_READERS: dict[str, WireReader] = {r.recording: r for r in WIRES}
_CHAT = WIRES[-1]
"""The reader of Chat Completions, the wire SWE-agent messages are read as (the last
reader takes any message list)."""
_FORMATS = (*_READERS, _SWE_AGENT)
_DEFAULT_TARGET = "anthropic"
"""A snapshot's target when it names none it could have been compiled for (the
session's default target)."""

_GEMINI_MODEL = re.compile(r"/models/([^/:?]+)")


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One request of a recording: the conversation it sent and the model it named."""

    messages: tuple[Message, ...]
    model: str | None = None
    usage: CacheReport | None = None
    """The cache outcome its recorded response reported (a transcript's
    ``final_response`` answers its last request), or None."""
    at: float | None = None
    """When it was sent, in seconds (a transcript's ``request_params[i].timestamp``,
    epoch seconds), or None."""


@dataclass(frozen=True, kw_only=True)
class Recording:
    """A recorded conversation, read by `load_recording`.

    Attributes:
        name: The file's name.
        format: ``anthropic``, ``openai_chat``, ``responses``, ``gemini``, ``swe_agent``,
            ``payload`` (a stored provider request or message list) or ``snapshot``.
        target: The target it was sent to (``openai`` for SWE-agent and Chat recordings,
            ``deepseek`` when the URL says so).
        system: The system prompt text (``""`` if none).
        tools: Function tools declared or called (stubs for called tools without a
            definition), in first-seen order, names unique.
        hosted: Provider-hosted ``tools`` entries left out (their ``type`` or name).
        requests: One entry per request, in order.
        cut: True when the requests were cut from a final conversation.
        assumed: What the recording does not say and replaying it assumes, one sentence
            each (a default target, stub definitions, tools named but not defined);
            `replay` adds the model it substitutes and reports them all (``assumed``).
    """

    name: str
    format: str
    target: str
    system: str
    tools: tuple[Tool, ...]
    hosted: tuple[str, ...]
    requests: tuple[RecordedRequest, ...]
    cut: bool = False
    assumed: tuple[str, ...] = ()


def _swe_agent_chat(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """SWE-agent message dicts as Chat messages (their own keys dropped).

    A replayed demonstration can reuse a call id for a later call; each reuse gets a
    suffix (``~2``, ``~3``...), and the tool messages after it answer the renamed call.
    """
    out: list[dict[str, Any]] = []
    uses: dict[str, int] = {}
    current: dict[str, str] = {}
    for msg in messages:
        item: dict[str, Any] = {"role": msg.get("role"), "content": msg.get("content")}
        if msg.get("tool_calls"):
            calls = []
            for call in msg["tool_calls"]:
                if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                    uses[call["id"]] = uses.get(call["id"], 0) + 1
                    n = uses[call["id"]]
                    current[call["id"]] = call["id"] if n == 1 else f"{call['id']}~{n}"
                    call = {**call, "id": current[call["id"]]}
                calls.append(call)
            item["tool_calls"] = calls
        if msg.get("role") == "tool":
            ids = msg.get("tool_call_ids") or [msg.get("tool_call_id")]
            item["tool_call_id"] = current.get(ids[0], ids[0])
        out.append(item)
    return out


def _reader(fmt: str) -> WireReader:
    """The wire a recorded format is read as (SWE-agent: Chat Completions)."""
    return _CHAT if fmt == _SWE_AGENT else _READERS[fmt]


def _parse(fmt: str, turn: Any, system: Any) -> ParsedHistory:
    """A recorded turn through its wire's history parser (`WireReader.parse_history`)."""
    if not isinstance(turn, list):
        raise UsageError(f"a recorded turn must be a list of messages, got {type(turn).__name__}")
    if fmt == _SWE_AGENT:
        turn = _swe_agent_chat(turn)
    return _reader(fmt).parse_history(turn, system)


def _tools(raw: Any) -> tuple[list[Tool], list[str]]:
    tools: list[Tool] = []
    hosted: list[str] = []
    for item in expand_tool_dicts(raw or []):
        try:
            tool = tool_from_dict(item)
        except CatalogFormatError:
            label = item.get("type") or item.get("name") if isinstance(item, Mapping) else None
            hosted.append(str(label or "?"))
            continue
        if tool.name in _RESERVED:
            hosted.append(tool.name)
        else:
            tools.append(tool)
    return tools, hosted


_RESERVED = frozenset({TOOL_SEARCH, DEFER_EXECUTE})
"""Our meta-tools' names: a recorded tool or call by that name was the provider's (or
another library's) search, which the replayed strategies bring themselves."""


def _stubbed(tools: list[Tool], requests: Sequence[RecordedRequest]) -> tuple[Tool, ...]:
    """`tools` (names unique, first wins) plus a stub for every called tool not in them."""
    out: dict[str, Tool] = {}
    for tool in tools:
        out.setdefault(tool.name, tool)
    for request in requests:
        for message in request.messages:
            for part in message.parts:
                if isinstance(part, ToolCall) and part.name not in {*out, *_RESERVED}:
                    out[part.name] = Tool(
                        name=part.name,
                        description=f"{part.name} (definition not recorded)",
                        input_schema={"type": "object"},
                    )
    return tuple(out.values())


def _stub_note(tools: Sequence[Tool]) -> tuple[str, ...]:
    """The sentence for the stub definitions among `tools` (`_stubbed`), if any."""
    stubs = [t.name for t in tools if t.description == f"{t.name} (definition not recorded)"]
    if not stubs:
        return ()
    return (
        f"{len(stubs)} called tool(s) have no recorded definition ({', '.join(stubs[:5])}"
        f"{', ...' if len(stubs) > 5 else ''}): replayed with stub definitions "
        "(pass their catalog with --catalog, replay(extra_tools=))",
    )


def _cut(messages: Sequence[Message], model: str | None) -> list[RecordedRequest]:
    """The requests a final conversation implies: everything before each assistant turn."""
    out = [
        RecordedRequest(messages=tuple(messages[:i]), model=model)
        for i, m in enumerate(messages)
        if m.role == "assistant" and i > 0 and messages[i - 1].role != "assistant"
    ]
    if not out or messages[-1].role != "assistant":
        out.append(RecordedRequest(messages=tuple(messages), model=model))
    return out


def _model(params: Any) -> str | None:
    if not isinstance(params, Mapping):
        return None
    model = params.get("model")
    if isinstance(model, str):
        return model
    found = _GEMINI_MODEL.search(str(params.get("url") or ""))
    return found.group(1) if found else None


def _transcript(name: str, data: Mapping[str, Any]) -> Recording:
    fmt = data["format"]
    if fmt not in _FORMATS:
        raise UsageError(f"{name}: unknown transcript format {fmt!r}; valid: {', '.join(_FORMATS)}")
    params = list(data.get("request_params") or [])
    urls = [str(p.get("url", "")) for p in params if isinstance(p, Mapping)]
    target = target_of(_reader(fmt).wire, urls)
    system_raw = data.get("system")
    requests: list[RecordedRequest] = []
    system = ""
    raw_tools: list[Any] = list(data.get("tools") or [])
    for i, turn in enumerate(data.get("turns") or []):
        param = params[i] if i < len(params) else {}
        if isinstance(param, Mapping) and isinstance(param.get("tools"), list):
            raw_tools += param["tools"]
        parsed = _parse(fmt, turn, param.get("system", system_raw) if param else system_raw)
        system = system or parsed.system
        at = param.get("timestamp") if isinstance(param, Mapping) else None
        at = float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else None
        requests.append(RecordedRequest(messages=parsed.messages, model=_model(param), at=at))
    cut = data.get("turns_kind") == "final_only"
    if cut and requests:
        requests = _cut(requests[-1].messages, requests[-1].model)
    final = data.get("final_response")
    if requests and fmt != _SWE_AGENT and isinstance(final, Mapping) and _reader(fmt).detect(final):
        requests[-1] = dataclasses.replace(requests[-1], usage=_reader(fmt).read_cache(final))
    tools, hosted = _tools(raw_tools)
    found = _stubbed(tools, requests)
    return Recording(
        name=name,
        format=fmt,
        target=target,
        system=system,
        tools=found,
        hosted=tuple(hosted),
        requests=tuple(requests),
        cut=cut,
        assumed=_stub_note(found),
    )


def _payload(name: str, data: Any) -> Recording:
    """A stored request payload or a bare message list: the first wire that takes it."""
    raw_tools: Any
    if isinstance(data, list):
        reader = next(r for r in WIRES if r.detect_history(data))
        conversation, system, raw_tools, model = data, None, [], None
    else:
        reader = next(r for r in WIRES if r.detect_request(data))
        conversation, system, raw_tools = reader.read_request(data)
        model = data.get("model") if isinstance(data.get("model"), str) else None
    parsed = _parse(reader.recording, conversation, system)
    requests = _cut(parsed.messages, model)
    tools, hosted = _tools(raw_tools)
    found = _stubbed(tools, requests)
    return Recording(
        name=name,
        format="payload",
        target=target_of(reader.wire),
        system=parsed.system,
        tools=found,
        hosted=tuple(hosted),
        requests=tuple(requests),
        cut=True,
        assumed=_stub_note(found),
    )


def _snapshot_target(form: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The target a snapshot was compiled for, and the sentence saying so if assumed."""
    target = form["compiled"] or form["target"]
    if target in TARGETS:
        return target, ()
    return _DEFAULT_TARGET, (
        f"the snapshot names no target it was compiled for: replayed on {_DEFAULT_TARGET!r} "
        "(the session's default; pass --target, replay(target=))",
    )


def _snapshot_tools(form: Mapping[str, Any], target: str) -> tuple[list[Tool], tuple[str, ...]]:
    """The snapshot's tool definitions, then those its ledgers record as sent.

    A session registers most tools from code or catalogs, which a snapshot names
    (``tools.names``) but does not define (``definitions`` holds runtime tools only); the
    ledgers hold the ``tools`` array each target was last sent (wire names, the target's
    shape; the compiled target's first). Names defined in neither are said, not guessed.
    """
    raw: list[Any] = list(form["tools"]["definitions"])
    ledgers = form.get("ledgers") or {}
    for name in sorted(ledgers, key=lambda n: (n != target, n)):
        ledger = ledgers[name]
        if isinstance(ledger, Mapping) and isinstance(ledger.get("tools"), list):
            raw += ledger["tools"]
    tools, _ = _tools(raw)
    defined = {t.name for t in tools} | _RESERVED
    missing = [n for n in form["tools"].get("names") or () if n not in defined]
    if not missing:
        return tools, ()
    return tools, (
        f"{len(missing)} tool(s) the snapshot names have no definition in it (never sent: "
        f"{', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}): left out (pass "
        "their catalog with --catalog, replay(extra_tools=))",
    )


def _snapshot(name: str, data: Mapping[str, Any]) -> Recording:
    from contextchef.session._snapshot import checked  # its form (imports pydantic)

    try:
        form = checked(data)
    except UsageError as exc:
        raise UsageError(f"{name}: {exc}") from exc
    messages = [message_from_dict(m, index=i) for i, m in enumerate(form["history"])]
    requests = _cut(messages, form["model"])
    target, assumed = _snapshot_target(form)
    tools, undefined = _snapshot_tools(form, target)
    found = _stubbed(tools, requests)
    return Recording(
        name=name,
        format="snapshot",
        target=target,
        system=form["system"],
        tools=found,
        hosted=(),
        requests=tuple(requests),
        cut=True,
        assumed=(*assumed, *undefined, *_stub_note(found)),
    )


def read_json_file(path: Path) -> Any:
    """The JSON value in the UTF-8 file at `path`.

    Raises:
        UsageError: The file cannot be read, is not JSON, or nests too deeply to parse.
    """
    try:
        return json.loads(read_text_file(path))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable JSON file ({json_reason(exc)})") from exc
    except RecursionError as exc:
        raise UsageError(f"{path}: the JSON is nested too deeply to read") from exc


def load_recording(path: str | PathLike[str]) -> Recording:
    """Read a recorded conversation (see the module docstring for the shapes).

    Raises:
        UsageError: Not a readable JSON file, or a shape none of the above.
        CorruptHistoryError: A recorded message the format's parser cannot read.
    """
    path = Path(path)
    data = read_json_file(path)
    try:
        if isinstance(data, Mapping) and "turns" in data and "format" in data:
            found = _transcript(path.name, data)
        elif isinstance(data, Mapping) and data.get("format") == "contextchef.snapshot":
            found = _snapshot(path.name, data)
        elif isinstance(data, list) or (
            isinstance(data, Mapping) and any(r.conversation in data for r in WIRES)
        ):
            found = _payload(path.name, data)
        else:
            keys = shown_keys(data) if isinstance(data, Mapping) else type(data).__name__
            raise UsageError(
                f"{path}: not a recorded conversation (keys: {keys}); expected a transcript "
                "(format, turns), a provider request (messages / input / contents), a message "
                "list or a session snapshot"
            )
    except ContextChefError:
        raise
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise UsageError(f"{path}: a recorded conversation of an unreadable shape ({exc})") from exc
    if not found.requests or not any(r.messages for r in found.requests):
        raise UsageError(f"{path}: the recording holds no request to replay")
    return found
