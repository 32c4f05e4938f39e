"""The target table: every compile target's adapter, and the order wires are detected in.

Adding a target on an existing wire is its adapter (a `Profile` with its history rules,
default model and API host, in ``providers/<wire>/``) plus one line in `_ADAPTERS`
below; a new wire adds its package and its reader to `_WIRES`. Everything else
(`TARGETS`, `PRESETS`, `WIRES`, the recordings' targets) is derived from this table.

The table names modules rather than importing them (issue 27, fast start): a target's
wire package is imported when the target is first used (`get_adapter`), so a session
that compiles for Anthropic never loads the Gemini renderer. `TARGETS` is the table's
keys; `WIRES`, `PRESETS` and `WRITTEN_FIELDS` import every wire when first read.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, cast

from contextchef._errors import UnknownTargetError, shown
from contextchef.history._as_is import keeps_plain_parts
from contextchef.history._normalize import PORTABLE, HistoryRules
from contextchef.providers._base import Adapter
from contextchef.providers._reading import ReadResponse, ResponseNotice, WireReader
from contextchef.providers._reading import wire_reader as _registered_reader

__all__ = [
    "PRESETS",
    "TARGETS",
    "WIRES",
    "WRITTEN_FIELDS",
    "adapters",
    "get_adapter",
    "reply_target",
    "target_of",
    "wire_reader",
]

_PACKAGE = "contextchef.providers"

_ADAPTERS: dict[str, tuple[str, str]] = {
    "anthropic": ("anthropic", "AnthropicAdapter"),
    "openai": ("openai_chat", "OpenAIChatAdapter"),
    "deepseek": ("openai_chat", "DeepSeekAdapter"),
    "responses": ("responses", "ResponsesAdapter"),
    "gemini": ("gemini", "GeminiAdapter"),
    "gemini-interactions": ("gemini_interactions", "GeminiInteractionsAdapter"),
}
"""Target name -> (wire package, adapter class in its ``_render``). On a shared wire the
first target is the wire's default (a Chat Completions recording is ``openai`` unless its
URL names DeepSeek's host)."""

_WIRES = ("gemini_interactions", "gemini", "responses", "anthropic", "openai_chat")
"""The wire packages whose ``_parse.READER`` make `WIRES`, in detection order: Interactions
before Responses (its payloads also carry ``input``); Chat Completions last (it takes any
``messages`` payload or message list the others leave)."""

TARGETS: tuple[str, ...] = tuple(sorted(_ADAPTERS))
"""Every compile target's name, sorted."""

if TYPE_CHECKING:
    WIRES: tuple[WireReader, ...]
    PRESETS: Mapping[str, HistoryRules]
    WRITTEN_FIELDS: frozenset[str]

_made: dict[str, Adapter] = {}
_lock = threading.RLock()


def _package(name: str) -> Any:
    """A wire package's ``_parse`` module (its reader registered, its renderer imported)."""
    return importlib.import_module(f"{_PACKAGE}.{name}._parse")


def get_adapter(target: str) -> Adapter:
    """The adapter for `target` (its wire package is imported on first use).

    Raises:
        UnknownTargetError: `target` is not one of `TARGETS`.
    """
    adapter = _made.get(target) if isinstance(target, str) else None
    if adapter is not None:
        return adapter
    where = _ADAPTERS.get(target) if isinstance(target, str) else None
    if where is None:
        raise UnknownTargetError(
            f"unknown target {shown(target, 80)}; valid targets: {', '.join(TARGETS)}"
        )
    with _lock:
        if target not in _made:
            _package(where[0])
            render = importlib.import_module(f"{_PACKAGE}.{where[0]}._render")
            made = cast(Adapter, getattr(render, where[1])())
            keeps_plain_parts(type(made).keeps)  # the table's adapters all do (tested)
            _made[target] = made
        return _made[target]


def adapters() -> Mapping[str, Adapter]:
    """Target name -> adapter, in the table's order (a new dict)."""
    return {target: get_adapter(target) for target in _ADAPTERS}


def wire_reader(wire: str) -> WireReader:
    """The `WireReader` of `wire` (a `Profile.wire`); KeyError if none.

    Every wire's reader is loaded first, so this answers before any adapter was used.
    """
    _derived("WIRES")
    return _registered_reader(wire)


def _derived(name: str) -> Any:
    """`WIRES`, `PRESETS` or `WRITTEN_FIELDS`, made from the whole table on first read."""
    with _lock:
        if name in globals():
            return globals()[name]
        table = adapters()
        globals().update(
            WIRES=tuple(_package(p).READER for p in _WIRES),
            PRESETS={
                PORTABLE.name: PORTABLE,
                **{a.profile.history.name: a.profile.history for a in table.values()},
            },
            WRITTEN_FIELDS=frozenset().union(*(a.profile.written for a in table.values())),
        )
        return globals()[name]


def __getattr__(name: str) -> Any:
    """The names derived from every wire, made on first read.

    `WIRES`: each wire format's reader, in the order a response, payload or message list
    is matched against them (`WireReader.detect`, `detect_request`, `detect_history`).
    `PRESETS`: history rules by name (``portable``, valid everywhere, and each target's
    own). `WRITTEN_FIELDS`: request fields some adapter writes itself (`Profile.written`),
    refused in ``extra`` on every target, so one ``extra`` means the same wherever it goes.
    """
    if name in ("WIRES", "PRESETS", "WRITTEN_FIELDS"):
        return _derived(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def target_of(wire: str, urls: Iterable[str] = ()) -> str:
    """The target a request in `wire`'s format was sent to.

    Args:
        wire: A `Profile.wire`.
        urls: Endpoints the request was sent to, if recorded: a target of that wire whose
            `Profile.api_host` one of them names wins.

    Returns:
        That target, else the wire's default (its first target in the table).

    Raises:
        KeyError: No target speaks `wire`.
    """
    table = adapters()
    names = [n for n, a in table.items() if a.profile.wire == wire]
    if not names:
        raise KeyError(wire)
    urls = list(urls)
    for name in names:
        host = table[name].profile.api_host
        if host and any(host in url for url in urls):
            return name
    return names[0]


class _Sent(Protocol):
    @property
    def model(self) -> str: ...  # the model the request was compiled for


class _Answerable(Protocol):
    @property
    def answered(self) -> bool: ...  # a reply was ingested after the last compile for it

    @property
    def sent(self) -> _Sent: ...  # the last request compiled for the target


def _answers(reply: str, asked: str) -> bool:
    """Whether a response naming model `reply` can answer a request for model `asked`.

    The same name, or a dated form of it (OpenAI answers ``gpt-4o`` as
    ``gpt-4o-2024-08-06``, Anthropic aliases name ``claude-...-20250929``; Gemini's
    ``modelVersion`` may carry ``models/``). ``gpt-5.5-mini`` is another model than
    ``gpt-5.5``.
    """
    reply, asked = reply.removeprefix("models/"), asked.removeprefix("models/")
    dated = reply.startswith(f"{asked}-") and _DATE.fullmatch(reply, len(asked)) is not None
    return bool(asked) and (reply == asked or dated)


_DATE = re.compile(r"-\d[\d-]*")


def reply_target(
    read: ReadResponse, last: str | None, compiled: Mapping[str, _Answerable]
) -> tuple[str, ReadResponse]:
    """The target whose request a reply answers, and `read` with a notice if unsure.

    Args:
        read: The reply as read (`ReadResponse.wire`: ``""``, unknown, takes `last`;
            `ReadResponse.model`: the model it names).
        last: The target compiled last, or None.
        compiled: Each target compiled for, in first-compile order, with whether its
            last request was answered and the model it was compiled for (the ledgers).

    Returns:
        Among the targets on the reply's wire (`Profile.wire`; ``openai`` and
        ``deepseek`` share Chat Completions): the one awaiting a reply whose request's
        model the reply names (`ReadResponse.model`); else `last` if it awaits a reply,
        else the last one that does, else `last`, else the last one; ``""`` when no
        request on that wire was compiled. So a reply is joined with the prefill and
        continuation of the request it answers (`SentRequest.join`), never with another
        wire's request compiled after it (a fallback to another provider). When several
        targets await a reply and the model does not single one out, the choice is a
        guess: `read` gets a ``reply_target_ambiguous`` notice naming them and the one
        taken (`reason`).
    """
    if not read.wire:
        return last or "", read
    wire = read.wire
    mine = [t for t in compiled if t in _ADAPTERS and get_adapter(t).profile.wire == wire]
    waiting = [t for t in mine if not compiled[t].answered]
    named = [t for t in waiting if _answers(read.model, compiled[t].sent.model)]
    if len(named) == 1:
        return named[0], read
    chosen = ""
    for group in (waiting, mine):
        if group:
            chosen = last if last is not None and last in group else group[-1]
            break
    if len(waiting) < 2:
        return chosen, read
    said = f"naming model {read.model!r}" if read.model else "naming no model"
    notice = ResponseNotice(
        kind="reply_target_ambiguous",
        reason=chosen,
        detail=f"a reply {said} could answer the requests compiled for "
        f"{', '.join(map(repr, waiting))}, each awaiting a reply on {wire_reader(wire).label}; "
        f"it was taken as {chosen!r}'s (the last compiled of them) and joined with that "
        "request; ingest each reply before compiling for another target on the same API",
    )
    return chosen, replace(read, notices=(*read.notices, notice))
