"""Offload large tool results at write time (messages layer).

A tool result over a size threshold is stored whole in an `OffloadStore` and the model
gets a bounded stub instead: the first and last lines, the omitted size, a locator, and a
hint to page through the rest with the ``read_offloaded`` tool (after DeepSeek Harness'
``spill`` and Codex's write-time truncation). The result keeps its call id, name and
position, so pairing is untouched, and the full text stays retrievable.

Everything is deterministic: the file name is the SHA-256 of the UTF-8 bytes, so the same
output always gives the same locator, file bytes and stub, and no time or random value
reaches the prefix. Offsets and lengths of reads count **bytes** of that UTF-8 file;
sizes in stubs give both characters and bytes.

The read tool is returned as a plain dict (this layer does not know `Tool`); the
``ContextChef`` facade registers it and routes its calls to `execute_offload_read`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from contextchef._errors import StorageError, UsageError, check_int, shown
from contextchef._json import is_unicode
from contextchef.history._messages import ToolResult

__all__ = [
    "DEFAULT_READ_BYTES",
    "MAX_READ_BYTES",
    "OFFLOAD_READ_TOOL",
    "OffloadStore",
    "as_offload_store",
    "byte_range_properties",
    "char_span",
    "execute_offload_read",
    "int_argument",
    "offload_read_tool",
    "offload_result",
    "read_offloaded",
]

OFFLOAD_READ_TOOL = "read_offloaded"
"""Name of the library-owned read tool."""
DEFAULT_READ_BYTES = 20_000
"""Bytes the read tool returns when the model gives no length (also its cap, x5)."""
MAX_READ_BYTES = 5 * DEFAULT_READ_BYTES
_LOCATOR = re.compile(r"[0-9a-f]{64}\.txt")


_MAX_OFFSET = 2**62
"""Largest byte offset or length a file read takes (a C ``off_t``)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_LINK_ERRNOS = frozenset(
    getattr(errno, name) for name in ("ELOOP", "EMLINK", "EFTYPE") if hasattr(errno, name)
)
"""What ``open(O_NOFOLLOW)`` of a symbolic link fails with (Linux, FreeBSD, NetBSD)."""


class _Refused(Exception):
    """An entry that is there but is not what this store wrote (a link, changed bytes)."""


@dataclass(frozen=True)
class OffloadStore:
    """A content-addressed directory of offloaded results, read as untrusted.

    Files are named ``<sha256 hex of the bytes>.txt`` and written once (atomically);
    the locator (the model's "handle") is that file name. Each store keeps its files in
    a directory of its own scope under `root`, so a session reads only what it wrote:

    * ``scope=None`` (the default): a fresh scope per store, so per session; a session
      restored in another process (or a new `ContextChef`) cannot read what the old one
      stored.
    * ``scope="..."`` (for example your conversation id): every store with that scope
      shares its entries; pass the same scope to a session you restore, or to sessions
      that are meant to share results.

    Nothing in the directory is trusted (others may write it): the scope directory and
    the files are opened without following symbolic links (``O_NOFOLLOW``, relative to
    the directory), a file that is not a regular file or has more than one hard link is
    refused (checked with ``fstat`` on the opened file), and a file whose bytes no
    longer hash to its name is refused. Errors of reads, which the model sees, name the
    handle, never the directory. `root` itself is the host's: it may be a link. POSIX
    only (``O_NOFOLLOW`` and ``dir_fd``).

    Attributes:
        root: The directory (created on first write).
        scope: Who may read the entries (see above); None: this store only.
    """

    root: Path
    scope: str | None = field(default=None, kw_only=True)
    _dir: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        root: object = self.root
        if isinstance(root, str) and root and is_unicode(root) and "\0" not in root:
            root = Path(root)
        if not isinstance(root, Path) or "\0" in str(root) or not is_unicode(str(root)):
            raise UsageError(f"OffloadStore root must be a directory path, got {shown(root, 80)}")
        object.__setattr__(self, "root", root)
        scope = self.scope
        if scope is None:
            name = "session-" + os.urandom(16).hex()
        elif isinstance(scope, str) and scope and is_unicode(scope):
            name = "scope-" + hashlib.sha256(scope.encode("utf-8")).hexdigest()[:32]
        else:
            raise UsageError(
                f"OffloadStore scope must be non-empty text or None, got {shown(scope)}"
            )
        object.__setattr__(self, "_dir", name)

    @property
    def directory(self) -> Path:
        """Where this store's entries are: a directory of `root` named after the scope."""
        return self.root / self._dir

    def _open_dir(self, *, create: bool) -> int:
        """A descriptor of the scope directory, never through a link (caller closes it)."""
        if create:
            self.root.mkdir(parents=True, exist_ok=True)
        root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(self._dir, 0o700, dir_fd=root_fd)
            return os.open(self._dir, _DIR_FLAGS, dir_fd=root_fd)
        finally:
            os.close(root_fd)

    def put(self, data: bytes) -> str:
        """Store `data`; returns its locator. Storing the same bytes again is a no-op.

        The file is written whole under a temporary name, then renamed into place; an
        entry already there is kept only if it is this store's own (a regular file, one
        link, the same bytes), otherwise it is replaced.

        Raises:
            UsageError: `data` is not bytes.
            StorageError: The directory cannot be created or written (nothing is left
                behind). Its message names the directory: it is for the host, the model
                never sees it.
        """
        if not isinstance(data, bytes):
            raise UsageError(f"OffloadStore.put takes bytes, got {type(data).__name__}")
        locator = hashlib.sha256(data).hexdigest() + ".txt"
        tmp = ".tmp-" + os.urandom(8).hex()
        dir_fd = -1
        try:
            dir_fd = self._open_dir(create=True)
            with contextlib.suppress(OSError, _Refused):
                if _load(dir_fd, locator) == data:
                    return locator
            fd = os.open(tmp, _WRITE_FLAGS, 0o600, dir_fd=dir_fd)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, locator, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError as exc:
            if dir_fd >= 0:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
            raise StorageError(
                f"cannot write an offloaded result to {shown(str(self.root), 200)}: {exc}",
                path=str(self.root),
            ) from exc
        finally:
            if dir_fd >= 0:
                os.close(dir_fd)
        return locator

    def path(self, locator: str) -> Path:
        """The file of `locator` (for the host; reads never go through this path).

        Raises:
            UsageError: `locator` is not a locator, or this store has no such entry.
        """
        _check_locator(locator)
        path = self.directory / locator
        if not path.is_file():
            raise UsageError(f"no offloaded result {locator} in this session")
        return path

    def load(self, locator: str) -> bytes:
        """Every byte of a stored result, checked (see the class docstring).

        Raises:
            UsageError: `locator` is not a locator, or this store has no such entry.
            StorageError: The entry is a link, a hard-linked or non-regular file, its
                bytes no longer match its name, or it cannot be read. The message names
                the handle only; ``path`` is the file, for the host.
        """
        _check_locator(locator)
        dir_fd = -1
        try:
            dir_fd = self._open_dir(create=False)
            return _load(dir_fd, locator)
        except FileNotFoundError:
            raise UsageError(f"no offloaded result {locator} in this session") from None
        except (OSError, _Refused) as exc:
            why = _why(exc) if isinstance(exc, OSError) else str(exc)
            raise StorageError(
                f"cannot read offloaded result {locator}: {why}",
                path=str(self.directory / locator),
            ) from None
        finally:
            if dir_fd >= 0:
                os.close(dir_fd)

    def read(self, locator: str, offset: int = 0, length: int | None = None) -> bytes:
        """Bytes ``[offset, offset + length)`` of a stored result (to the end if None).

        The whole file is read and checked against its name first (`load`).

        Raises:
            UsageError: Unknown locator, or a negative offset or length.
            StorageError: See `load`.
        """
        check_int("offset", offset, maximum=_MAX_OFFSET)
        if length is not None:
            check_int("length", length, maximum=_MAX_OFFSET)
        data = self.load(locator)
        return data[offset:] if length is None else data[offset : offset + length]


def _check_locator(locator: object) -> None:
    if not isinstance(locator, str) or not _LOCATOR.fullmatch(locator):
        raise UsageError(
            f"{shown(locator)} is not an offload locator; expected '<64 hex digits>.txt' as "
            "given in the stub of the offloaded result"
        )


def _load(dir_fd: int, locator: str) -> bytes:
    """The checked bytes of `locator` in the directory `dir_fd`.

    Raises:
        FileNotFoundError: No such entry.
        _Refused: A link, a hard-linked or non-regular file, or bytes that changed.
        OSError: It cannot be read.
    """
    try:
        fd = os.open(locator, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS:
            raise _Refused("it is a symbolic link, not the file this session stored") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Refused("it is not a regular file")
        if info.st_nlink != 1:
            raise _Refused(f"it has {info.st_nlink} hard links; a stored result has one")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if hashlib.sha256(data).hexdigest() + ".txt" != locator:
        raise _Refused("its bytes changed since it was stored (they no longer match the handle)")
    return data


def _why(exc: OSError) -> str:
    """An OS error without the file name it carries (that would show the directory)."""
    if exc.errno in _LINK_ERRNOS or exc.errno == errno.ENOTDIR:
        return "the session's offload directory was replaced by a link or a file"
    return os.strerror(exc.errno) if exc.errno else type(exc).__name__


def as_offload_store(where: str | Path | OffloadStore | None) -> OffloadStore | None:
    """A session's store from its ``offload_dir`` option; None stays None.

    A directory gives a store of its own scope; an `OffloadStore` keeps its scope.

    Raises:
        UsageError: Anything else.
    """
    if where is None or isinstance(where, OffloadStore):
        return where
    return OffloadStore(Path(where) if isinstance(where, str) else where)


def char_span(data: bytes, offset: int, length: int | None) -> tuple[int, int]:
    """The bytes ``[start, end)`` of UTF-8 `data` a read at `offset` of `length` returns.

    Both ends are moved back to the first byte of the character they fall in (`offset`
    and ``offset + length``, to the end if `length` is None), so no read splits a
    character and reads at ``offset``, ``offset + length``, ... put together give `data`
    byte for byte. A span in which no character starts is empty (``start == end``).
    """
    size = len(data)
    start = _char_start(data, min(offset, size))
    end = size if length is None else _char_start(data, min(offset + length, size))
    return start, max(start, end)


def _char_start(data: bytes, at: int) -> int:
    """`at`, moved back to the first byte of the UTF-8 character it falls in."""
    while 0 < at < len(data) and data[at] & 0xC0 == 0x80:  # a continuation byte
        at -= 1
    return at


def read_offloaded(
    store: OffloadStore, locator: str, offset: int = 0, length: int | None = None
) -> str:
    """The stored bytes ``[offset, offset + length)`` as text, cut on characters.

    Offsets count bytes; both ends are moved back to a character's start (`char_span`),
    so consecutive reads put together give the text whole (read `OffloadStore.read` for
    raw bytes).

    Raises:
        UsageError: See `OffloadStore.read`.
    """
    if not isinstance(store, OffloadStore):
        raise UsageError(f"store must be an OffloadStore, got {shown(store, 60)}")
    check_int("offset", offset, maximum=_MAX_OFFSET)
    if length is not None:
        check_int("length", length, maximum=_MAX_OFFSET)
    data = store.load(locator)
    start, end = char_span(data, offset, length)
    return data[start:end].decode("utf-8", errors="replace")


def _take_lines(lines: list[str], count: int, budget: int) -> int:
    """How many of `lines` fit in `count` lines and `budget` characters."""
    used = taken = 0
    for line in lines[:count]:
        if used + len(line) > budget:
            break
        used += len(line)
        taken += 1
    return taken


def _head_tail(content: str, max_chars: int, head_lines: int, tail_lines: int) -> tuple[str, str]:
    """Head and tail of `content`, whole lines within ``max_chars // 2`` each.

    When not even one line fits, the first (last) line is cut at the character budget.
    """
    lines = content.splitlines(keepends=True)
    budget = max_chars // 2
    n_head = _take_lines(lines, head_lines, budget)
    head = "".join(lines[:n_head])
    if not n_head and head_lines:  # the first line alone is over budget
        head, n_head = content[:budget], 1
    rest = lines[n_head:]
    n_tail = _take_lines(rest[::-1], min(tail_lines, len(rest)), max_chars - budget)
    tail = "".join(rest[len(rest) - n_tail :]) if n_tail else ""
    if not n_tail and tail_lines and len(head) < len(content):
        tail = content[len(head) :][-(max_chars - budget) :]
    return head, tail


def _stub(content: str, head: str, tail: str, locator: str) -> str:
    omitted = content[len(head) : len(content) - len(tail)]
    head_bytes = len(head.encode("utf-8"))
    total_bytes = len(content.encode("utf-8"))
    lines_omitted = omitted.count("\n")
    marker = (
        f"[... {len(omitted)} chars ({len(omitted.encode('utf-8'))} bytes, about "
        f"{lines_omitted} lines) omitted ...]"
    )
    notice = (
        f"[Full result: {len(content)} chars ({total_bytes} bytes) stored as {locator}. "
        f'Read more with {OFFLOAD_READ_TOOL}({{"handle": "{locator}", "offset": '
        f'{head_bytes}, "length": {DEFAULT_READ_BYTES}}}); offset and length count bytes.]'
    )
    sep = "" if not head or head.endswith("\n") else "\n"
    end = "" if not tail or tail.endswith("\n") else "\n"
    return f"{head}{sep}{marker}\n{tail}{end}{notice}"


def offload_result(
    result: ToolResult,
    store: OffloadStore,
    *,
    max_inline_chars: int,
    head_lines: int = 50,
    tail_lines: int = 50,
) -> ToolResult:
    """Store a large result whole and return a stub in its place.

    A result whose text is at most `max_inline_chars` characters is returned as is. A
    larger one is written to `store` (UTF-8) and its text becomes: up to `head_lines`
    first lines and `tail_lines` last lines, each side within ``max_inline_chars // 2``
    characters and snapped to line boundaries; a line with the omitted size in chars and
    bytes; then the total size, the locator and how to read it back with
    ``read_offloaded``. The stub is at most `max_inline_chars` plus about 400 characters.
    Call id, name, error flag and media parts are kept (media are never counted as text);
    ``provider_data`` is dropped, since it may hold the original content.

    Args:
        result: The tool result as produced; not mutated.
        store: Where the full text goes.
        max_inline_chars: Threshold and preview budget, in characters (>= 1).
        head_lines: Lines kept from the start (>= 0).
        tail_lines: Lines kept from the end (>= 0).

    Raises:
        UsageError: A non-positive threshold or negative line count.
        StorageError: The store cannot be written (see `OffloadStore.put`).
    """
    if not isinstance(result, ToolResult):
        raise UsageError(f"offload_result takes a ToolResult, got {shown(result, 60)}")
    if not isinstance(store, OffloadStore):
        raise UsageError(f"store must be an OffloadStore, got {shown(store, 60)}")
    check_int("max_inline_chars", max_inline_chars, minimum=1)
    check_int("head_lines", head_lines)
    check_int("tail_lines", tail_lines)
    content = result.content
    if len(content) <= max_inline_chars:
        return result
    locator = store.put(content.encode("utf-8"))
    head, tail = _head_tail(content, max_inline_chars, head_lines, tail_lines)
    return replace(result, content=_stub(content, head, tail, locator), provider_data=None)


def truncate_result(
    result: ToolResult, *, max_inline_chars: int, head_lines: int = 50, tail_lines: int = 50
) -> ToolResult:
    """A large result cut to its head and tail, for sessions that store nothing.

    Like `offload_result` without a store: the text keeps up to `head_lines` first and
    `tail_lines` last lines (each side within ``max_inline_chars // 2`` characters), and
    a line says how much was left out and that it was not kept. Smaller results are
    returned as they are.
    """
    content = result.content
    if len(content) <= max_inline_chars:
        return result
    head, tail = _head_tail(content, max_inline_chars, head_lines, tail_lines)
    omitted = len(content) - len(head) - len(tail)
    marker = (
        f"[... {omitted} of {len(content)} chars omitted and not kept (no offload_dir is set) ...]"
    )
    sep = "" if not head or head.endswith("\n") else "\n"
    return replace(result, content=f"{head}{sep}{marker}\n{tail}", provider_data=None)


def offload_read_tool() -> dict[str, Any]:
    """The ``read_offloaded`` tool as ``{"name", "description", "input_schema"}``.

    The facade registers it and answers its calls with `execute_offload_read`.
    """
    return {
        "name": OFFLOAD_READ_TOOL,
        "description": (
            "Read part of a large tool result that was stored outside the conversation. "
            "Pass the handle from the result's notice; offset and length count bytes "
            f"(default length {DEFAULT_READ_BYTES}, at most {MAX_READ_BYTES})."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "handle": {"type": "string", "description": "The stored result's handle."},
                **byte_range_properties(),
            },
            "required": ["handle"],
            "additionalProperties": False,
        },
        # it only reads what a tool already returned: read-only modes keep it reachable
        "annotations": {"readOnlyHint": True, "idempotentHint": True},
    }


def byte_range_properties() -> dict[str, Any]:
    """The ``offset`` and ``length`` properties (bytes) of a library tool that reads pages.

    Shared by ``read_offloaded`` and ``search_archive``: the same bounds (`MAX_READ_BYTES`)
    that `execute_offload_read` and the archive reader apply.
    """
    return {
        "offset": {"type": "integer", "minimum": 0, "description": "Start byte."},
        "length": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_READ_BYTES,
            "description": "Bytes to read.",
        },
    }


def int_argument(tool: str, arguments: Mapping[str, Any], key: str, default: int) -> int:
    """A library tool's integer argument `key` (`default` when absent).

    Raises:
        UsageError: Not an ``int`` (a bool included), named with `tool` and `key`.
    """
    value = arguments.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise UsageError(f"{tool}: {key} must be an integer, got {shown(value)}")
    return value


def execute_offload_read(store: OffloadStore, arguments: Mapping[str, Any]) -> str:
    """Answer one ``read_offloaded`` call (arguments as in `offload_read_tool`'s schema).

    Returns:
        The requested slice; past the end, a sentence giving the stored size.

    Raises:
        UsageError: Bad arguments or an unknown handle (turn it into an error result).
    """
    locator = arguments.get("handle")
    if not isinstance(locator, str):
        raise UsageError(f"{OFFLOAD_READ_TOOL}: 'handle' must be a string, got {shown(locator)}")
    offset = int_argument(OFFLOAD_READ_TOOL, arguments, "offset", 0)
    length = min(
        int_argument(OFFLOAD_READ_TOOL, arguments, "length", DEFAULT_READ_BYTES), MAX_READ_BYTES
    )
    check_int("offset", offset, maximum=_MAX_OFFSET)
    check_int("length", length, maximum=_MAX_OFFSET)
    data = store.load(locator)
    start, end = char_span(data, offset, length)
    if start == end < len(data):
        return (
            f"No character starts in bytes {offset}-{offset + length} of {locator}: read from "
            f"offset {start} with a length of 4 or more (a UTF-8 character is 1 to 4 bytes)."
        )
    text = data[start:end].decode("utf-8", errors="replace")
    return text or f"Nothing at offset {offset}: {locator} holds {len(data)} bytes."
