"""Memory stores, the overflow handoff and the ``<memories>`` block (session layer).

A session with a memory store (`InMemoryStore`, `FileMemoryStore` or your own
`MemoryStore`) offers the library-owned memory tools (see `contextchef.session._library`).
The memories themselves are state, not prefix: they render as one ``<memories>`` block,
which reaches the model as the result of a ``read_memories`` call appended after the
user's message whenever it changed (`contextchef.session._volatile`), never in the
system prompt, a tool description, user text or the stored history.

The overflow handoff (`OverflowHandoff`): ``new_context`` (or the host's
``request_new_context()``) only sets a flag; the next compile then applies it whatever the
budget says: the injected summarizer (the library never calls a model) gets the transcript
as text and its summary replaces the history (see `handoff_keep_turns` for what stays).
"""

from __future__ import annotations

import contextlib
import html
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from contextchef._errors import (
    StorageError,
    UsageError,
    check_callable,
    check_int,
    check_str,
    json_reason,
    shown,
)
from contextchef._json import is_unicode
from contextchef.history._messages import Message
from contextchef.history._normalize import is_user_turn

__all__ = [
    "MEMORY_KEY_PATTERN",
    "FileMemoryStore",
    "InMemoryStore",
    "MemoryStore",
    "OverflowHandoff",
    "Summarizer",
    "handoff_keep_turns",
    "render_memories",
]

Summarizer = Callable[[str], str]
"""Your model call: gets a transcript as plain text, returns its summary."""

MEMORY_KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"
"""Memory keys: 1-64 characters, letters, digits and ``_ . : -``, starting alphanumeric."""

MAX_MEMORY_CHARS = 4_000
"""Longest memory value, in characters."""


# -- stores ----------------------------------------------------------------------------------


@runtime_checkable
class MemoryStore(Protocol):
    """Where a session's memories live: string keys to string values.

    Implementations keep keys unique; `items` returns them sorted by key so that what is
    rendered never depends on insertion order.
    """

    def items(self) -> tuple[tuple[str, str], ...]:
        """Every (key, value) pair, sorted by key."""
        ...

    def get(self, key: str) -> str | None:
        """The value stored under `key`, or None."""
        ...

    def set(self, key: str, value: str) -> None:
        """Store `value` under `key` (insert or replace)."""
        ...

    def delete(self, key: str) -> bool:
        """Remove `key`; returns whether it existed."""
        ...


class InMemoryStore:
    """A `MemoryStore` held in the process (lost when it ends).

    Args:
        initial: Memories to start with.
    """

    def __init__(self, initial: Mapping[str, str] | None = None) -> None:
        self._data: dict[str, str] = {}
        if initial is not None and not isinstance(initial, Mapping):
            raise UsageError(f"initial must be a mapping of str to str, got {shown(initial, 60)}")
        for key, value in (initial or {}).items():
            InMemoryStore.set(self, key, value)  # a subclass's store is written once, later

    def items(self) -> tuple[tuple[str, str], ...]:
        """Every (key, value) pair, sorted by key."""
        return tuple(sorted(self._data.items()))

    def get(self, key: str) -> str | None:
        """The value stored under `key`, or None."""
        return self._data.get(key)

    def set(self, key: str, value: str) -> None:
        """Store `value` under `key`.

        Raises:
            UsageError: `key` or `value` is not a string.
        """
        if not isinstance(key, str) or not isinstance(value, str):
            raise UsageError(
                f"memory keys and values must be strings, got {type(key).__name__} -> "
                f"{type(value).__name__}"
            )
        self._data[check_str("memory key", key)] = check_str("memory value", value)

    def delete(self, key: str) -> bool:
        """Remove `key`; returns whether it existed."""
        return self._data.pop(key, None) is not None


STORE_FORMAT_VERSION = 1
"""Version written into `FileMemoryStore` files."""

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest memory file read (bytes): memories reach every request, so a bigger file is
not one this store wrote."""


class FileMemoryStore(InMemoryStore):
    """A `MemoryStore` kept in one JSON file, rewritten atomically on every change.

    The file is ``{"memories": {key: value, ...}, "version": 1}`` with keys sorted,
    two-space indentation, UTF-8 and a final newline, so the same memories always give
    the same bytes. A write goes to a temporary file in the same directory, which then
    replaces the old one (`os.replace`), so a crash never leaves half a file.

    Args:
        path: The file; created on the first change if missing.

    Raises:
        UsageError: The file exists but is not a memory file (not JSON, wrong shape or
            version).
        StorageError: The path is not a regular file (a directory, a device), is over
            `MAX_FILE_BYTES`, or cannot be read.
    """

    def __init__(self, path: str | Path) -> None:
        if not isinstance(path, (str, Path)) or "\0" in str(path) or not is_unicode(str(path)):
            raise UsageError(f"path must be a file path, got {shown(path, 80)}")
        self._path = Path(path)
        super().__init__(self._read())

    @property
    def path(self) -> Path:
        """The JSON file."""
        return self._path

    def _read(self) -> dict[str, str]:
        where = shown(str(self._path), 120)
        try:
            if not self._path.exists():
                return {}
            if not self._path.is_file():  # a directory, a device (/dev/full reads forever)
                raise StorageError(
                    f"memory file {where} is not a regular file", path=str(self._path)
                )
            if self._path.stat().st_size > MAX_FILE_BYTES:
                raise StorageError(
                    f"memory file {where} is over {MAX_FILE_BYTES:,} bytes; not a memory file",
                    path=str(self._path),
                )
            text = self._path.read_text("utf-8")
        except OSError as exc:
            if isinstance(exc, StorageError):
                raise
            raise StorageError(
                f"memory file {where} cannot be read: {exc}", path=str(self._path)
            ) from exc
        except UnicodeDecodeError as exc:
            raise UsageError(f"memory file {where} is not UTF-8 text: {exc}") from exc
        try:
            doc = json.loads(text)
        except ValueError as exc:  # a JSONDecodeError, or an integer too long to read
            raise UsageError(f"memory file {where}: unreadable JSON ({json_reason(exc)})") from exc
        memories: Any = doc.get("memories") if isinstance(doc, dict) else None
        valid = isinstance(memories, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in memories.items()
        )
        if not valid or doc.get("version") != STORE_FORMAT_VERSION:
            raise UsageError(
                f"memory file {shown(str(self._path), 120)} is not a contextchef memory file; "
                "expected "
                f'{{"memories": {{<key>: <text>}}, "version": {STORE_FORMAT_VERSION}}}'
            )
        return dict(memories)

    def set(self, key: str, value: str) -> None:
        """Store `value` under `key` and rewrite the file.

        Raises:
            UsageError: `key` or `value` is not text.
            StorageError: The file cannot be written; the store keeps its old value, in
                memory as on disk.
        """
        before = self.get(key)
        super().set(key, value)
        try:
            self._write()
        except StorageError:
            self._restore(key, before)
            raise

    def delete(self, key: str) -> bool:
        """Remove `key` (rewriting the file if it existed); returns whether it existed.

        Raises:
            StorageError: The file cannot be written; the memory stays, in memory as on
                disk.
        """
        before = self.get(key)
        existed = super().delete(key)
        if existed:
            try:
                self._write()
            except StorageError:
                self._restore(key, before)
                raise
        return existed

    def _restore(self, key: str, value: str | None) -> None:
        if value is None:
            super().delete(key)
        else:
            super().set(key, value)

    def _write(self) -> None:
        doc = {"memories": dict(self.items()), "version": STORE_FORMAT_VERSION}
        text = json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
        import tempfile  # local: ``import contextchef`` does not pay for it

        tmp = ""
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self._path.name}.", dir=self._path.parent)
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self._path)
        except BaseException as exc:
            if tmp:
                with contextlib.suppress(OSError):
                    Path(tmp).unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise StorageError(
                    f"cannot write memory file {shown(str(self._path), 120)}: {exc}",
                    path=str(self._path),
                ) from exc
            raise


# -- the handoff ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class OverflowHandoff:
    """The overflow strategy: summarize the transcript and start over from the summary.

    Attributes:
        summarize: Your model call (the library never calls a model): gets the
            transcript as plain text (see `contextchef.compact`), returns the summary.
        max_history_tokens: When set, a compile whose history is estimated above this
            many tokens (`contextchef.providers.request_tokens` of the messages) applies
            the handoff by itself. None: only on request (``new_context`` or
            ``request_new_context()``).
    """

    summarize: Summarizer
    max_history_tokens: int | None = None

    def __post_init__(self) -> None:
        check_callable("on_overflow's summarizer", self.summarize)
        if self.max_history_tokens is not None:
            check_int("max_history_tokens", self.max_history_tokens, minimum=1)


def handoff_keep_turns(history: Sequence[Message]) -> int:
    """User turns a handoff keeps verbatim: 1 if the history ends with one, else 0.

    A host that appends the user's next request and then calls
    ``request_new_context()`` keeps that request as written (the summary comes first in
    the same user message); after the model's ``new_context`` call the history ends with
    its result, and everything is summarized.
    """
    return 1 if history and is_user_turn(history[-1]) else 0


# -- rendering ----------------------------------------------------------------------------------

MEMORIES_TAG = "memories"


def render_memories(items: Sequence[tuple[str, str]]) -> str:
    """The ``<memories>`` block for `items` (``""`` when there are none).

    One ``<memory key="...">`` element per memory, in the given (sorted) order.
    """
    if not items:
        return ""
    # values are the model's own text: escape them so they cannot close the block
    body = "\n".join(
        f'<memory key="{k}">\n{html.escape(v, quote=False)}\n</memory>' for k, v in items
    )
    return f"<{MEMORIES_TAG}>\n{body}\n</{MEMORIES_TAG}>"
