"""Media a target does not take, as text notes (providers layer).

Each wire package says, as data (`MediaRules`), which media types its API takes in a
user message and in a tool result, and by which source (inline ``data``, a ``url``, a
``file_id``); the tables cite the provider's docs and SDK types. `fit_media` (called by
each adapter's ``fit_references``, on the messages not sent yet) replaces every
`MediaPart` outside its table by a short text note naming what was left out, reported
as ``media_as_text``: sent as a block, the API would refuse the request, and, since what
was sent is replayed byte-identical, every later request of the conversation. A tool
result keeps the media its target takes and gets the notes after its text. So does a
medium over one of the table's size or count limits (`MediaRules.limits`,
`providers._media_limits`): counted after what the request already carries, its note
says which limit.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from operator import attrgetter
from types import MappingProxyType
from typing import Any, Literal

from contextchef._errors import shown
from contextchef.history._messages import MediaPart, Message, Part, TextPart, ToolResult
from contextchef.history._normalize import Change
from contextchef.providers._media_limits import MediaBudget, MediaLimit

__all__ = [
    "ALL_SOURCES",
    "MediaLimit",
    "MediaRules",
    "Source",
    "file_name",
    "fit_media",
    "media_note",
    "source_of",
]

Source = Literal["data", "url", "file_id"]
ALL_SOURCES: frozenset[Source] = frozenset({"data", "url", "file_id"})


@dataclass(frozen=True, kw_only=True)
class MediaRules:
    """Which media one API takes: media type -> the sources it takes it by.

    A key is a media type (``image/png``) or a family (``audio/*``); an exact key wins
    over its family.

    Attributes:
        message: What a user message takes.
        result: What a tool result takes, where the API puts media in the result itself;
            None: as `message` (Chat Completions carries a result's media in a user
            message after the tool messages).
        source: The provider docs the table follows (for the reader; not sent).
        as_text: Media types whose inline data is sent decoded, as text (Anthropic's
            ``text/plain`` document source): data that is not UTF-8 is not taken.
        limits: The API's size and count limits on the media of one request.
    """

    message: Mapping[str, frozenset[Source]] = field(default_factory=lambda: MappingProxyType({}))
    result: Mapping[str, frozenset[Source]] | None = None
    source: str = ""
    as_text: frozenset[str] = frozenset()
    limits: tuple[MediaLimit, ...] = ()

    def takes(self, part: MediaPart, *, in_result: bool) -> bool:
        """Whether `part` may be sent as media (in a tool result when `in_result`)."""
        table = self.result if in_result and self.result is not None else self.message
        kind = part.media_type.lower()
        sources = table.get(kind, table.get(kind.partition("/")[0] + "/*"))
        if sources is None or source_of(part) not in sources:
            return False
        return part.data is None or kind not in self.as_text or _utf8(part.data)


def _utf8(data: str) -> bool:
    """Whether base64 `data` (checked by `MediaPart`) holds UTF-8 text."""
    try:
        base64.b64decode(data).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


_HOLDERS = (MediaPart, ToolResult)
_PARTS = attrgetter("parts")
"""The part types that may hold media."""


def source_of(part: MediaPart) -> Source:
    """How `part` carries its bytes: ``data``, ``url`` or ``file_id``."""
    return "data" if part.data is not None else "url" if part.url is not None else "file_id"


_OFFICE = "application/vnd.openxmlformats-officedocument."
_EXTENSIONS = MappingProxyType(
    {
        "application/pdf": "pdf",
        "application/json": "json",
        "application/xml": "xml",
        "application/vnd.ms-excel": "xls",
        _OFFICE + "wordprocessingml.document": "docx",
        _OFFICE + "presentationml.presentation": "pptx",
        _OFFICE + "spreadsheetml.sheet": "xlsx",
        "text/plain": "txt",
        "text/markdown": "md",
        "text/html": "html",
        "text/xml": "xml",
        "text/csv": "csv",
        "text/tab-separated-values": "tsv",
        "text/css": "css",
        "text/javascript": "js",
        "text/x-python": "py",
        "text/x-script.python": "py",
        "text/x-c": "c",
        "text/x-c++": "cpp",
        "text/x-java": "java",
        "text/x-sh": "sh",
    }
)
"""Media type -> the extension of the name an inline file of that type is sent with."""


def file_name(part: MediaPart) -> str:
    """The ``filename`` inline file data (`part`) is sent with on the OpenAI wires.

    OpenAI's file inputs guide (https://developers.openai.com/api/docs/guides/file-inputs,
    "Base64-encoded files") sends every ``file_data`` with a ``filename``, and the API
    refuses one without it with a 400 that does not name it ("Missing required
    parameter: 'input[1].content[1]'" on Responses, "...'messages[1].content[1].file.file_id'"
    on Chat Completions; laravel/ai#321, openai/openai-agents-python#1513), though the
    SDK types (``ResponseInputFileParam``, ``File``) mark it optional. The name is the
    part's own where it has one (``provider_data["filename"]``, or the one recorded from
    a Chat ``file`` part or a Responses ``input_file``), else ``attachment.<extension>``
    from its media type (the API reads the type from the extension): the same for every
    part of a type, with no clock or random value, so the bytes are stable.
    """
    data = part.provider_data or {}
    for holder in (data, data.get("file_extra"), data.get("extra")):
        name = holder.get("filename") if isinstance(holder, Mapping) else None
        if isinstance(name, str) and name:
            return name
    kind = part.media_type.partition(";")[0].strip()
    subtype = kind.partition("/")[2].removeprefix("x-")
    extension = _EXTENSIONS.get(kind) or "".join(c for c in subtype if c.isalnum())[:16]
    return f"attachment.{extension or 'bin'}"


def media_note(part: MediaPart, why: str = "a type the API does not take") -> str:
    """The text a media part the target does not take (for the reason `why`) is sent as."""
    url, file_id = part.url or "", part.file_id or ""
    where = {
        "data": "inline data",
        "url": url if len(url) <= 200 and not url.startswith("data:") else "a URL",
        "file_id": f"file {file_id}" if len(file_id) <= 200 else "a file",
    }
    shown_as = where[source_of(part)]
    return f"[{part.media_type} attachment not shown ({shown_as}): {why}]"


def fit_media(
    messages: Sequence[Message],
    rules: MediaRules,
    *,
    offset: int = 0,
    before: Sequence[Message] = (),
    cache: dict[Any, Any] | None = None,
) -> tuple[tuple[Message, ...], tuple[Change, ...]]:
    """`messages` with each media part `rules` does not take as a text note (reported).

    A user message's part becomes a `TextPart` in its place; a tool result keeps the
    media `rules` takes, its text followed by a note for each other one. Assistant
    media are the normalizer's (``HistoryRules.assistant_media``). A part of a type taken
    but over one of `rules.limits` is a note too, counted in request order after the
    media of `before` (the messages sent already, replayed as they are; `cache` is the
    ledger's, `MediaBudget.after`). Indices in the changes count from `offset`. Messages
    without such media are returned as they are.
    """
    parts = [*chain.from_iterable(map(_PARTS, messages))]  # gathered in C
    kinds = set(map(type, parts))
    if MediaPart not in kinds and not (
        ToolResult in kinds and any(p.media for p in parts if type(p) is ToolResult)
    ):
        return tuple(messages), ()  # no media at all: most turns (a cold compile's too)
    budget = MediaBudget.after(rules.limits, before, cache) if rules.limits else None
    out: list[Message] = []
    changes: list[Change] = []
    for i, message in enumerate(messages, start=offset):
        if message.role == "assistant" or not any(isinstance(p, _HOLDERS) for p in message.parts):
            if budget is not None:
                budget.add_all(message)  # the model's own, sent as they are
            out.append(message)  # no media; the model's own: `HistoryRules.assistant_media`
            continue
        parts = [_fitted(p, i, rules, budget, changes) for p in message.parts]
        same = all(a is b for a, b in zip(parts, message.parts, strict=True))
        out.append(message if same else replace(message, parts=tuple(parts)))
    return tuple(out), tuple(changes)


def _why(part: MediaPart, rules: MediaRules, budget: MediaBudget | None, in_result: bool) -> str:
    """Why `part` is sent as a note ("": it is sent as a block, and counted)."""
    if not rules.takes(part, in_result=in_result):
        return _NOT_TAKEN
    return (budget.over(part) if budget is not None else None) or ""


_NOT_TAKEN = "a type the API does not take"


def _fitted(
    part: Part, index: int, rules: MediaRules, budget: MediaBudget | None, changes: list[Change]
) -> Part:
    if isinstance(part, MediaPart):
        why = _why(part, rules, budget, in_result=False)
        if not why:
            return part
        changes.append(_change(index, part, None, why))
        return TextPart(text=media_note(part, why))
    if not isinstance(part, ToolResult) or not part.media:
        return part
    whys = [_why(m, rules, budget, in_result=True) for m in part.media]  # in order: counted
    refused = [(m, why) for m, why in zip(part.media, whys, strict=True) if why]
    if not refused:
        return part
    changes.extend(_change(index, m, part.call_id, why) for m, why in refused)
    notes = "\n".join(media_note(m, why) for m, why in refused)
    kept = tuple(m for m, why in zip(part.media, whys, strict=True) if not why)
    content = f"{part.content}\n\n{notes}" if part.content else notes
    return replace(part, content=content, media=kept)


def _change(index: int, part: MediaPart, call_id: str | None, why: str) -> Change:
    whose = f"the result of call {shown(call_id)}" if call_id is not None else "a user message"
    reason = (
        "which the target does not take there"
        if why == _NOT_TAKEN
        else f"{why}, which the API would refuse"
    )
    return Change(
        kind="media_as_text",
        index=index,
        call_id=call_id,
        detail=f"message {index}: {whose} held {part.media_type} ({source_of(part)}), "
        f"{reason}; sent as a text note",
    )
