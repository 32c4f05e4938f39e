"""The archive: every message a compaction or clearing removes from view, kept and findable.

A compaction replaces old turns with a summary; a clearing blanks old tool results or drops
old thinking. The model then no longer sees what was there, and a summary may drop what
mattered (research provider-context-management.md, "What users ask for": a standing
approval lost in a compaction). So before anything leaves the model's view it is written
to the session's `Archive` (`Archive.add`), and what replaces it names the entry:

* the compaction summary gets a note listing what was dropped, derived from the removed
  messages themselves, not from the model's summary (`dropped_note`): the tools called
  with counts, the files touched (path-like arguments), the user's own words quoted
  verbatim (capped), the entry's locator and a hint to use the archive tool;
* a cleared tool result's placeholder names the entry and the byte offset of its text
  (`clear_tool_results_archived`); cleared thinking is archived too
  (`clear_thinking_archived`).

The archive reuses the offload machinery (`OffloadStore`): an entry is one content-addressed
file (locator ``<sha256 hex>.txt``) holding a header line (canonical JSON: the reason, the
history index of the first message, the byte offset of each message in the body) and the
removed messages as readable text, every part whole but inline media bytes, with lines
that could pass for the archive's own markers escaped (`archive_text`, `escape_body`). Everything is
deterministic: the same messages, reason and position give the same bytes and locator.

Where entries live: in the session's `OffloadStore` when it has one (``offload_dir``), so
they are read back as untrusted like offloaded results and follow the store's scope across
a restore; always also in memory, for sessions with no store (lost with the process). The
list of entries is never stored apart: `Archive.recover` finds them again from the locators
the history names (summaries and placeholders name theirs, and an entry names the entries
it archived), so a session restored from a snapshot reaches every entry its store still
holds. Searching the archive ranks with BM25 (`contextchef.search._archive.search_archive`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from contextchef._errors import ContextChefError, StorageError, UsageError, check_int, shown
from contextchef._tokens import estimate_tokens
from contextchef.history._compaction import (
    ARCHIVED_PLACEHOLDER,
    Cleared,
    ThinkingCleared,
    clear_thinking,
    clear_tool_results,
)
from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
    messages_arg,
)
from contextchef.history._normalize import HistoryRules
from contextchef.history._offload import OffloadStore
from contextchef.history._quotes import MORE, quote_lines

__all__ = [
    "ARCHIVE_TOOL",
    "Archive",
    "ArchiveEntry",
    "ArchiveReason",
    "archive_text",
    "clear_thinking_archived",
    "clear_tool_results_archived",
    "compaction_note",
    "dropped_note",
    "escape_body",
    "unescape_body",
]

logger = logging.getLogger("contextchef")

ARCHIVE_TOOL = "search_archive"
"""Name of the library-owned tool that searches and reads the archive."""
SHORT_HINT = f"Search and read it with {ARCHIVE_TOOL}."
"""A compaction note's last line when its room (`dropped_note`) holds no more."""
QUOTED = "The user's words, verbatim:"
"""The line before a compaction note's quotes."""

ArchiveReason = Literal["compaction", "clear_tool_results", "clear_thinking", "handoff"]
"""Why messages left the model's view."""
_REASONS: tuple[str, ...] = get_args(ArchiveReason)

_LOCATOR = re.compile(r"\b[0-9a-f]{64}\.txt\b")
FILES_LISTED = 40
"""Most paths a compaction note lists (the rest are counted)."""
PATH_KEYS = frozenset({"path", "paths", "file", "files", "filename", "file_path", "filepath"})
"""Argument names whose values a note lists as files touched."""


@dataclass(frozen=True, kw_only=True)
class ArchiveEntry:
    """One archived batch of messages.

    Attributes:
        locator: The entry's handle, ``<64 hex digits>.txt`` (the SHA-256 of its bytes).
        reason: Why the messages left the model's view.
        first: History index of the first archived message when it was archived.
        offsets: Byte offset in the entry's file of each message's text, in order.
        size: Bytes of the whole file.
    """

    locator: str
    reason: ArchiveReason
    first: int
    offsets: tuple[int, ...]
    size: int

    def message_text(self, data: bytes, k: int) -> str:
        """The text of message `k` of this entry, given the entry's bytes."""
        end = self.offsets[k + 1] if k + 1 < len(self.offsets) else len(data)
        return data[self.offsets[k] : end].decode("utf-8", errors="replace")


_MARKERS = ("## message ", "-> call ", "<- result of ", "(thinking", "[attached ")
"""How the lines the archive writes itself begin (`archive_text`)."""
_FORGED = re.compile(
    r"(?<![^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029])(?=\\*(?:"
    + "|".join(re.escape(m) for m in _MARKERS)
    + "))"
)
_ESCAPED = re.compile(
    r"(?<![^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029])\\(?=\\*(?:"
    + "|".join(re.escape(m) for m in _MARKERS)
    + "))"
)


def escape_body(text: str) -> str:
    """`text` with one backslash put before each line that could pass for the archive's own.

    A line (after any line break `str.splitlines` knows, or at the start) that begins with
    zero or more backslashes and then one of the archive's markers (``## message ``,
    ``-> call ``, ``<- result of ``, ``(thinking``, ``[attached ``) gets one more
    backslash, so archived content can never forge a message or part; every other
    character is kept. `unescape_body` gives the original back.
    """
    return _FORGED.sub(lambda _: "\\", text)


def unescape_body(text: str) -> str:
    """The original of an `escape_body` text: one backslash dropped from each such line."""
    return _ESCAPED.sub("", text)


def _media(part: MediaPart) -> str:
    if part.url is not None:
        return f"[attached {part.media_type} at {part.url}]"
    if part.file_id is not None:
        return f"[attached {part.media_type}, file id {part.file_id}]"
    size = len(part.data or "")
    return f"[attached {part.media_type}: {size} characters of base64 data, not archived]"


def _part_text(part: Part) -> str:
    if isinstance(part, TextPart):
        return escape_body(part.text)
    if isinstance(part, ToolCall):
        return f"-> call {part.name} (id {part.id}): {escape_body(part.arguments)}"
    if isinstance(part, ToolResult):
        flag = " (error)" if part.is_error else ""
        media = "".join(f"\n{_media(m)}" for m in part.media)
        head = f"<- result of {part.name} (id {part.call_id}){flag}:"
        return f"{head}\n{escape_body(part.content)}{media}"
    if isinstance(part, ReasoningPart):
        return f"(thinking) {escape_body(part.text)}" if part.text else "(thinking, not readable)"
    if isinstance(part, MediaPart):
        return _media(part)
    return f"[attached {part.provider} block, not readable]"


def _indexes(first: int | Sequence[int], count: int) -> tuple[int, ...]:
    if isinstance(first, int) and not isinstance(first, bool):
        check_int("first", first)
        return tuple(range(first, first + count))
    if not isinstance(first, Sequence) or isinstance(first, str):
        raise UsageError(f"first must be an index or a list of indexes, got {shown(first)}")
    indexes = tuple(check_int("first", x) for x in first)
    if len(indexes) != count or list(indexes) != sorted(set(indexes)):
        raise UsageError(
            f"first must give one increasing index per message ({count}), got {shown(first)}"
        )
    return indexes


def archive_text(
    messages: Sequence[Message], *, reason: ArchiveReason, first: int | Sequence[int] = 0
) -> bytes:
    """The bytes of the archive entry holding `messages` (UTF-8).

    `first` is the history index of the first message, or one index per message (for
    messages that were not next to each other). Line 1 is canonical JSON
    ``{"archive": 1, "first": F, "offsets": [...], "reason": R}``
    (``offsets``: the byte offset in the file of each message's text). Then each message
    as ``## message <history index> (<role>)`` and its parts, one per line: text,
    ``-> call <name> (id <id>): <arguments as produced>``, ``<- result of <name> (id
    <id>):`` and the result's text, ``(thinking) <text>``; media as ``[attached <media
    type> at <url>]``, ``[attached <media type>, file id <id>]`` or, for inline data,
    ``[attached <media type>: <n> characters of base64 data, not archived]`` (the bytes
    are not kept); a provider's opaque block as ``[attached <provider> block, not
    readable]``. Texts, results, arguments and thinking are kept whole, except that a
    line in them that could pass for one of these markers gets one backslash in front
    (`escape_body`; `unescape_body` undoes it), so only the archive writes them.

    Raises:
        UsageError: `messages` is not a sequence of messages, a bad reason or index.
    """
    messages = messages_arg(messages)
    indexes = _indexes(first, len(messages))
    if reason not in _REASONS:
        raise UsageError(
            f"archive reason must be one of {', '.join(_REASONS)}, got {shown(reason)}"
        )
    bodies = [
        (f"## message {i} ({m.role})\n" + "\n".join(map(_part_text, m.parts)) + "\n\n").encode()
        for i, m in zip(indexes, messages, strict=True)
    ]
    relative, at = [], 0
    for body in bodies:
        relative.append(at)
        at += len(body)
    # the header holds absolute offsets, which depend on the header's own length: its
    # length is found by trying (digits only grow, so this settles in a few rounds)
    width = 0
    while True:
        offsets = [width + r for r in relative]
        header = _header(reason, indexes[0] if indexes else 0, offsets)
        if len(header) == width:
            return header + b"".join(bodies)
        width = len(header)


def _header(reason: str, first: int, offsets: list[int]) -> bytes:
    head = {"archive": 1, "first": first, "offsets": offsets, "reason": reason}
    return (json.dumps(head, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def _parse(locator: str, data: bytes) -> ArchiveEntry | None:
    """The entry `data` holds, or None when it is not an archive entry (checked in full)."""
    line, sep, _ = data.partition(b"\n")
    if not sep or not line.startswith(b'{"archive":1,'):
        return None
    try:
        head = json.loads(line)
    except ValueError:
        return None
    first, offsets, reason = head.get("first"), head.get("offsets"), head.get("reason")
    ints = isinstance(offsets, list) and all(type(x) is int for x in offsets)
    if type(first) is not int or first < 0 or not ints or reason not in _REASONS:
        return None
    bounds = [len(line) + 1, *offsets, len(data)]
    if not offsets or any(a > b for a, b in itertools.pairwise(bounds)):
        return None
    return ArchiveEntry(
        locator=locator, reason=reason, first=first, offsets=tuple(offsets), size=len(data)
    )


class Archive:
    """A session's archive of messages removed from the model's view.

    Args:
        store: The session's `OffloadStore` (entries are written there too, and read back
            from it after a restore), or None: in memory only.
        history: Returns the session's history now: the entries it names are recovered
            (`recover`) before the entries are listed, so a restored or replaced history
            brings its own. None: only what `add` and `recover` were given.
        hidden: Given the history, the messages it still holds that are out of the
            model's view with no handle naming them (a provider's compaction), as
            ``(history index of the first, messages)`` spans: each is archived again
            (reason ``compaction``) when the history changes, giving the same bytes and
            handle as when it was first archived, so a restored session finds them too.

    Entries are kept in the order they were added (or recovered). Not thread-safe on its
    own: the session calls it under its lock.
    """

    def __init__(
        self,
        store: OffloadStore | None = None,
        *,
        history: Callable[[], Sequence[Message]] | None = None,
        hidden: Callable[[Sequence[Message]], Iterable[tuple[int, Sequence[Message]]]]
        | None = None,
    ) -> None:
        if store is not None and not isinstance(store, OffloadStore):
            raise UsageError(f"store must be an OffloadStore or None, got {shown(store, 60)}")
        self.store = store
        self._history = history
        self._hidden = hidden
        self._seen: object = None  # the last history recovered from
        self._data: dict[str, bytes] = {}
        self._entries: dict[str, ArchiveEntry] = {}
        self.search_index: object = None
        """The search layer's index of the entries (`contextchef.search._archive`)."""

    @property
    def entries(self) -> tuple[ArchiveEntry, ...]:
        """The entries, oldest first (those the history names recovered first)."""
        self._follow()
        return tuple(self._entries.values())

    def unreachable(self) -> tuple[str, ...]:
        """The locators the history names that are no entry of this archive, sorted.

        After a restore: entries the earlier session kept in memory only, or in an
        offload store of another scope (or removed, or tampered with). Offloaded results'
        locators are not listed when the store holds them.
        """
        self._follow()
        history = () if self._history is None else self._history()
        named = {x for m in history for p in m.parts for x in _LOCATOR.findall(_visible(p))}
        gone = []
        for locator in sorted(named - self._entries.keys()):
            if self.store is not None:
                try:
                    self.store.load(locator)
                    continue  # an offloaded result, not an archive entry
                except ContextChefError:
                    pass
            gone.append(locator)
        return tuple(gone)

    def _follow(self) -> None:
        history = None if self._history is None else self._history()
        if history is not None and history is not self._seen:
            self._seen = history
            self.recover(history)
            for first, messages in () if self._hidden is None else self._hidden(history):
                self.add(messages, reason="compaction", first=first)

    def add(
        self,
        messages: Sequence[Message],
        *,
        reason: ArchiveReason,
        first: int | Sequence[int] = 0,
    ) -> str | None:
        """Archive `messages`; returns the entry's locator (None when there is nothing).

        A store that cannot be written (see `OffloadStore.put`) is logged and the entry
        kept in memory: it stays readable in this process, not after a restore elsewhere.

        Args:
            messages: The messages leaving the model's view, as they were.
            reason: Why they leave it.
            first: History index of the first of them, or one index per message.

        Raises:
            UsageError: See `archive_text`.
        """
        if not messages_arg(messages):
            return None
        data = archive_text(messages, reason=reason, first=first)
        locator = hashlib.sha256(data).hexdigest() + ".txt"
        if self.store is not None and locator not in self._entries:
            try:
                self.store.put(data)
            except StorageError as exc:  # a compaction never fails on the archive's disk
                logger.warning(
                    "contextchef: archive entry %s kept in memory only: %s", locator, exc
                )
        self._keep(locator, data)
        return locator

    def _keep(self, locator: str, data: bytes) -> ArchiveEntry | None:
        entry = _parse(locator, data)
        if entry is not None:
            self._data[locator] = data
            self._entries.setdefault(locator, entry)
        return entry

    def entry(self, locator: str) -> ArchiveEntry:
        """The entry `locator` names.

        Raises:
            UsageError: No such entry in this session's archive.
        """
        self.load(locator)
        return self._entries[locator]

    def load(self, locator: str) -> bytes:
        """The bytes of entry `locator`.

        Entries are read from the store (and checked) once, by `recover`; then from memory.

        Raises:
            UsageError: No such entry in this session's archive.
        """
        if locator not in self._entries:
            self._follow()
        if locator in self._entries:
            return self._data[locator]
        raise UsageError(
            f"no archive entry {shown(locator, 80)} in this session; use a handle given in a "
            f"summary, a cleared result or a {ARCHIVE_TOOL} hit"
        )

    def recover(self, messages: Iterable[Message]) -> tuple[str, ...]:
        """Find the entries `messages` name (and those they name), e.g. after a restore.

        Each ``<64 hex>.txt`` in a text, a tool result or a call's arguments that is not a
        known entry is read from memory or the store; a file that is not an archive entry
        (an offloaded result) or cannot be read (another scope, tampered) is skipped.

        Returns:
            The locators of the entries found, in the order found.
        """
        texts = [_visible(p) for m in messages for p in m.parts]
        found: list[str] = []
        pending = [x for t in texts for x in _LOCATOR.findall(t)]
        while pending:
            locator = pending.pop(0)
            if locator in self._entries:
                continue
            data = self._data.get(locator)
            if data is None and self.store is not None:
                try:
                    data = self.store.load(locator)
                except ContextChefError as exc:
                    logger.debug("contextchef: archive entry %s not recovered: %s", locator, exc)
            if data is None or self._keep(locator, data) is None:
                continue
            found.append(locator)
            pending += _LOCATOR.findall(data.decode("utf-8", errors="replace"))
        return tuple(found)


def _visible(part: Part) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolResult):
        return part.content
    return part.arguments if isinstance(part, ToolCall) else ""


# -- what a compaction dropped ---------------------------------------------------------------


def _paths(value: Any, out: dict[str, None], depth: int = 0) -> None:
    """Path-like argument values (keys in `PATH_KEYS`), nested objects included."""
    if not isinstance(value, dict) or depth > 4:
        return
    for key, item in value.items():
        if key in PATH_KEYS:
            items = item if isinstance(item, list) else [item]
            out.update(dict.fromkeys(x for x in items if isinstance(x, str) and x))
        else:
            _paths(item, out, depth + 1)


def dropped_note(
    messages: Sequence[Message], locator: str, trigger: int | None = None, room: int | None = None
) -> str:
    """What a compaction dropped, from the removed `messages` themselves (plain text).

    Lines: ``Archived as <locator>: messages removed from view (N).``; ``Tools called:``
    wire names with their counts (``name (n)``, by name); ``Files touched:`` string values
    of path-like arguments (`PATH_KEYS`, nested objects too) in first-seen order, at most
    `FILES_LISTED`; ``The user's words, verbatim:`` then one ``> "…"`` line (JSON string)
    per user text turn, bounded by a share of `trigger` (the compaction trigger, tokens)
    as `contextchef.history._quotes.quote_lines` says (an older summary's quotes are
    carried once); and a line saying how to use the archive tool. With `room` (tokens,
    `contextchef.history._notes.notes_room`) the quotes take what the other lines leave of
    it, and when those lines alone are past it the note is its first line and `SHORT_HINT`.
    """
    calls = Counter(c.name for m in messages for c in m.tool_calls)
    files: dict[str, None] = {}
    for message in messages:
        for call in message.tool_calls:
            try:
                _paths(call.parsed_arguments(), files)
            except ContextChefError:
                continue  # malformed arguments name no file
    lines = [f"Archived as {locator}: messages removed from view ({len(messages)})."]
    if calls:
        lines.append("Tools called: " + ", ".join(f"{n} ({k})" for n, k in sorted(calls.items())))
    if files:
        shown_files = list(files)[:FILES_LISTED]
        more = len(files) - len(shown_files)
        lines.append(
            "Files touched: " + ", ".join(shown_files) + (f" (and {more} more)" if more else "")
        )
    hint = (
        f'Everything removed can be found with {ARCHIVE_TOOL}({{"query": "<keywords>"}}) '
        f'and read with {ARCHIVE_TOOL}({{"handle": "{locator}"}}).'
    )
    left = None if room is None else room - estimate_tokens("\n".join([*lines, hint, QUOTED, MORE]))
    if left is not None and left < 0:  # the archive line stays: restore finds the entry by it
        return f"{lines[0]}\n{SHORT_HINT}"
    if quotes := quote_lines(messages, trigger=trigger, room=left):
        lines += [QUOTED, *quotes]
    return "\n".join([*lines, hint])


def compaction_note(
    archive: Archive | None,
    removed: Sequence[Message],
    *,
    reason: ArchiveReason,
    trigger: int | None = None,
    room: int | None = None,
) -> str:
    """Archive the messages a compaction `removed`; returns the summary's note about them.

    ``""`` when there is no archive or nothing was removed (see `dropped_note`;
    `trigger`: the compaction trigger in tokens, which bounds the quotes, if known;
    `room`: the tokens the note may take, if bounded).
    """
    locator = None if archive is None else archive.add(removed, reason=reason)
    return "" if locator is None else dropped_note(removed, locator, trigger, room)


# -- clearing, archived ----------------------------------------------------------------------


def cleared_placeholder(locator: str, offset: int) -> str:
    """The text of a result cleared into entry `locator` at byte `offset`."""
    return (
        f"{ARCHIVED_PLACEHOLDER}{locator}: read it with "
        f'{ARCHIVE_TOOL}({{"handle": "{locator}", "offset": {offset}}})]'
    )


def clear_tool_results_archived(
    history: Sequence[Message],
    archive: Archive | None,
    *,
    keep_recent: int,
    exclude_tools: Collection[str] = (),
    clear_inputs: bool = False,
    clear_at_least: int = 0,
) -> Cleared:
    """`clear_tool_results`, with the cleared results archived first.

    The messages holding a cleared result (or a cleared call, with `clear_inputs`) go to
    `archive` as one entry (reason ``clear_tool_results``); each cleared result's text
    becomes `cleared_placeholder`: the entry's locator and the byte offset of that
    message's text in it. A result already cleared into the archive stays as it is.
    With no archive (None) this is `clear_tool_results` with its default placeholder.

    Raises:
        UsageError: See `clear_tool_results`.
    """
    done = clear_tool_results(
        history,
        keep_recent=keep_recent,
        exclude_tools=exclude_tools,
        clear_inputs=clear_inputs,
        clear_at_least=clear_at_least,
    )
    if archive is None or not done.cleared_call_ids:
        return done
    history = messages_arg(history)
    changed = [i for i, (a, b) in enumerate(zip(history, done.messages, strict=True)) if a != b]
    locator = archive.add([history[i] for i in changed], reason="clear_tool_results", first=changed)
    locator = locator or ""  # something changed, so something was archived
    entry = archive.entry(locator)
    where = {
        r.call_id: entry.offsets[k]
        for k, i in enumerate(changed)
        for r in history[i].tool_results
        if r.call_id in done.cleared_call_ids
    }
    messages = list(done.messages)
    for i in changed:
        parts = tuple(
            replace(p, content=cleared_placeholder(locator, where[p.call_id]))
            if isinstance(p, ToolResult) and p.call_id in where
            else p
            for p in messages[i].parts
        )
        messages[i] = replace(messages[i], parts=parts)
    return Cleared(messages=tuple(messages), cleared_call_ids=done.cleared_call_ids)


def clear_thinking_archived(
    history: Sequence[Message],
    archive: Archive,
    *,
    keep_recent_turns: int,
    profile: HistoryRules | None = None,
) -> ThinkingCleared:
    """`clear_thinking`, with the messages whose reasoning goes archived first.

    The messages at `ThinkingCleared.cleared_indexes` go to `archive` as one entry (reason
    ``clear_thinking``, their reasoning written as ``(thinking) …``).

    Raises:
        UsageError: See `clear_thinking`.
    """
    done = clear_thinking(history, keep_recent_turns=keep_recent_turns, profile=profile)
    if done.cleared_indexes:
        history = messages_arg(history)
        removed = [history[i] for i in done.cleared_indexes]
        archive.add(removed, reason="clear_thinking", first=done.cleared_indexes)
    return done
