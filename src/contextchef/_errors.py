"""Exceptions raised by contextchef.

Every exception the library raises on purpose derives from `ContextChefError`. The tree
separates "the caller misused the library" (fix your code or data) from "the model or
provider sent something unusable" (usually handled by turning it into an error tool
result, not by crashing the agent loop)::

    ContextChefError
    ├── UsageError                      the caller's input is wrong
    │   ├── InvalidToolError            a tool definition cannot be used
    │   │   ├── InvalidSchemaError      its input_schema is not valid JSON Schema
    │   │   └── NestedNamespaceError    a namespace placed inside a namespace
    │   ├── ToolNameConflictError       two tools would share a name or wire name
    │   ├── UnknownToolError            a name that no registered tool has
    │   │   ├── UnknownActionError      a namespace call names an action it lacks
    │   │   └── UnknownToolkitError     a toolkit name that is not registered
    │   ├── CatalogFormatError          a catalog file or tool dict has an unknown shape
    │   ├── UnknownTargetError          a compile target that does not exist
    │   ├── VolatileValueError          a per-request value in the prompt prefix
    │   ├── SnapshotMismatchError       a snapshot does not fit this session (tools,
    │   │                               toolkits, skills, mode or version); a malformed
    │   │                               snapshot is a plain UsageError naming the field
    │   ├── SnapshotSignatureError      a snapshot's signature is missing, malformed, of
    │   │                               another algorithm, made with an unknown key, or
    │   │                               does not match (it was altered)
    │   ├── TemplateError               a description template cannot be rendered
    │   │   └── NondeterminismError     it used time, random, uuid, env, fs, exec or http
    │   ├── MissingExtraError           an optional extra (e.g. ``semantic``) is not installed
    │   ├── MissingThinkingError        thinking on, the last tool turn lost its thinking
    │   ├── EmbeddingModelError         an embedding model file is missing or not the pinned one
    │   ├── ReadOnlyPayloadError        an edit of a payload entry the session recorded
    │   │                               (also a TypeError)
    │   └── FrozenToolError             an edit of a registered tool's definition or
    │                                   of the arguments a hook sees (also a TypeError)
    ├── ModelOutputError                the model or provider produced bad data
    │   ├── MalformedArgumentsError     tool-call arguments are not a JSON object
    │   └── CorruptHistoryError         a history message cannot be sent as is
    ├── McpServerError                  an MCP server could not be started, reached or listed
    │   └── McpListingTooLarge          its tools/list holds more tools or bytes than allowed
    ├── SessionStoreError               a session store failed or holds a bad record
    │   └── StaleSessionError           a write lost the race: another writer was first
    └── StorageError                    a file we keep (offload, memory) cannot be written
                                        or read (also an OSError)

Messages say what is wrong, which item is concerned and what would be valid.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from contextchef._echo import echo
from contextchef._json import FROZEN_ERROR, is_unicode, json_problem

T = TypeVar("T")

__all__ = [
    "CatalogFormatError",
    "ContextChefError",
    "CorruptHistoryError",
    "EmbeddingModelError",
    "FrozenToolError",
    "InvalidSchemaError",
    "InvalidToolError",
    "MalformedArgumentsError",
    "McpListingTooLarge",
    "McpServerError",
    "MissingExtraError",
    "MissingThinkingError",
    "ModelOutputError",
    "NestedNamespaceError",
    "NondeterminismError",
    "ReadOnlyPayloadError",
    "SessionStoreError",
    "SnapshotMismatchError",
    "SnapshotSignatureError",
    "StaleSessionError",
    "StorageError",
    "TemplateError",
    "ToolNameConflictError",
    "UnknownActionError",
    "UnknownTargetError",
    "UnknownToolError",
    "UnknownToolkitError",
    "UsageError",
    "VolatileValueError",
    "check_callable",
    "check_flag",
    "check_instance",
    "check_int",
    "check_json",
    "check_number",
    "check_str",
    "check_strings",
    "json_reason",
    "shown",
    "shown_keys",
]


def json_reason(exc: BaseException) -> str:
    """Why a value could not be read or written as JSON (`exc`'s text), in our words.

    Python's recursion limit is said as how deep the value nests; its limit on integer
    digits (``sys.set_int_max_str_digits()``, a setting of this process) as what it holds.
    """
    if isinstance(exc, RecursionError):
        return "it is nested too deep to walk (JSON of at most a few hundred levels)"
    if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
        limit = sys.get_int_max_str_digits()
        return (
            f"it holds an integer of more than {limit:,} digits, longer than JSON is read or "
            f"written here (integers of at most {limit:,} digits; write a longer number as "
            "a string)"
        )
    return str(exc)


def shown(value: object, limit: int = 200) -> str:
    """`repr(value)` for an error message, bounded: never raises, never unbounded.

    Messages name the offending value, which may come from a model or a host: a string
    longer than `limit` characters is cut (its length said), an integer too long for
    ``repr`` (Python refuses past 4,300 digits) is described by its size, and a value
    whose ``repr`` fails is named by its type.
    """
    if isinstance(value, str):
        return repr(echo(value, limit))  # a long one cut, its length said
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"<an integer of about {int(value.bit_length() * 0.30103):,} digits>"
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__, an integer too long inside a container
        return f"<a {type(value).__name__}>"
    return text if len(text) <= limit else f"{text[:limit]}..."


def shown_keys(mapping: object, limit: int = 10) -> str:
    """The keys of `mapping` for an error message: each `shown`, sorted, at most `limit`."""
    try:
        keys = sorted(shown(k, 40) for k in list(mapping)[:200])  # type: ignore[call-overload]
    except Exception:  # not iterable, or iterating raises
        return f"<keys of a {type(mapping).__name__}>"
    more = f", and {len(keys) - limit} more" if len(keys) > limit else ""
    return f"[{', '.join(keys[:limit])}{more}]"


# -- argument checks shared by the public entry points ------------------------------------
# Each raises a UsageError naming the parameter and what would be valid, and shows the value
# with `shown` (bounded: a 5,000-digit integer or a hostile __repr__ never escapes).


def check_int(name: str, value: object, *, minimum: int = 0, maximum: int | None = None) -> int:
    """`value` if it is an ``int`` (not a bool) in ``[minimum, maximum]``.

    Raises:
        UsageError: Another type, or out of range.
    """
    wrong_type = isinstance(value, bool) or not isinstance(value, int)
    if wrong_type or value < minimum or (maximum is not None and value > maximum):  # type: ignore[operator]
        upper = f" and <= {maximum:,}" if maximum is not None else ""
        raise UsageError(f"{name} must be an integer >= {minimum}{upper}, got {shown(value, 60)}")
    return value  # type: ignore[return-value]


def check_number(
    name: str, value: object, *, minimum: float, maximum: float = math.inf, above: bool = False
) -> float:
    """`value` as a float if it is a finite int/float (not a bool) within the bounds.

    `above` makes `minimum` exclusive.

    Raises:
        UsageError: Another type, NaN, an infinity, a number too large for a float, or out
            of range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{name} must be a number, got {shown(value, 60)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    low = number > minimum if above else number >= minimum
    if not math.isfinite(number) or not low or number > maximum:
        if math.isfinite(maximum):
            bounds = f"in {'(' if above else '['}{minimum:g}, {maximum:g}]"
        else:
            bounds = f"a finite number {'>' if above else '>='} {minimum:g}"
        raise UsageError(f"{name} must be {bounds}, got {shown(value, 60)}")
    return number


def check_flag(name: str, value: object) -> bool:
    """`value` if it is a bool (a truthy string such as ``"no"`` is not).

    Raises:
        UsageError: Anything else, naming the parameter.
    """
    if not isinstance(value, bool):
        raise UsageError(f"{name} must be True or False, got {shown(value, 40)}")
    return value


def check_str(name: str, value: object, *, empty: bool = True, limit: int | None = None) -> str:
    """`value` if it is valid Unicode text (no lone surrogate), non-empty unless `empty`.

    Raises:
        UsageError: Another type, a lone surrogate, an empty text, or longer than `limit`.
    """
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a string, got {shown(value, 60)}")
    if not is_unicode(value):
        raise UsageError(f"{name} holds a lone surrogate (not valid Unicode): {shown(value, 60)}")
    if not empty and not value.strip():
        raise UsageError(f"{name} must be a non-empty string")
    if limit is not None and len(value) > limit:
        raise UsageError(f"{name} is {len(value):,} characters long; at most {limit:,} allowed")
    return value


def check_strings(name: str, value: object) -> tuple[str, ...]:
    """A string, or an iterable of strings, as a tuple (each checked by `check_str`).

    Raises:
        UsageError: Not a string nor an iterable, or an item that is not valid text.
    """
    if isinstance(value, str):
        return (check_str(name, value),)
    if isinstance(value, (bytes, dict)) or not isinstance(value, Iterable):
        raise UsageError(f"{name} must be a string or a list of strings, got {shown(value, 60)}")
    try:
        items = tuple(value)
    except Exception as exc:  # a hostile iterable
        raise UsageError(f"{name} could not be iterated: {type(exc).__name__}") from exc
    return tuple(check_str(f"{name}[{i}]", item) for i, item in enumerate(items))


def check_instance(name: str, value: object, kind: type[T], *, none: bool = False) -> T | None:
    """`value` if it is a `kind` (or None, when `none` allows it).

    Raises:
        UsageError: Anything else, naming the parameter and the type wanted.
    """
    if (value is None and none) or isinstance(value, kind):
        return value
    allowed = " or None" if none else ""
    raise UsageError(f"{name} must be a {kind.__name__}{allowed}, got {shown(value, 60)}")


def check_callable(name: str, value: object) -> Callable[..., Any]:
    """`value` if it is callable.

    Raises:
        UsageError: Anything else.
    """
    if not callable(value):
        raise UsageError(f"{name} must be callable, got {shown(value, 60)}")
    return value


def check_json(name: str, value: object, *, max_depth: int = 100) -> None:
    """Raise unless `value` is JSON data a provider accepts (see `json_problem`).

    Raises:
        UsageError: Non-finite numbers, integers past a double's range, lone surrogates,
            non-JSON types, or nesting deeper than `max_depth`.
    """
    try:
        problem = json_problem(value, max_depth=max_depth)
    except RecursionError:
        problem = f"are nested more than {max_depth} levels deep"
    if problem:
        raise UsageError(f"{name} is not JSON data: its values {problem}")


class ContextChefError(Exception):
    """Root of every exception contextchef raises on purpose."""


class UsageError(ContextChefError):
    """The caller passed something the library cannot use."""


class InvalidToolError(UsageError):
    """A tool definition cannot be used.

    Attributes:
        tool: The offending tool's name (as given by the caller).
    """

    def __init__(self, message: str, *, tool: str) -> None:
        super().__init__(message)
        self.tool = tool


class InvalidSchemaError(InvalidToolError):
    """A tool's input_schema is not a valid JSON Schema.

    Attributes:
        tool: The offending tool's name.
        schema_path: JSON-pointer-like path inside the input_schema, e.g.
            ``/properties/limit/type``; ``""`` for the root.
    """

    def __init__(self, message: str, *, tool: str, schema_path: str) -> None:
        super().__init__(message, tool=tool)
        self.schema_path = schema_path


class ToolNameConflictError(UsageError):
    """Registering would give two tools the same name or the same wire name.

    Attributes:
        conflicts: One entry per clashing name: the name and the origins involved
            (``"builtin"`` or the MCP server name), sorted.
    """

    def __init__(self, message: str, *, conflicts: Sequence[tuple[str, tuple[str, ...]]]) -> None:
        super().__init__(message)
        self.conflicts = tuple(conflicts)


class UnknownToolError(UsageError):
    """A tool name that no registered tool has.

    Attributes:
        name: The unknown name.
        available: A few valid names (sorted), to help the caller.
    """

    def __init__(self, message: str, *, name: str, available: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.available = tuple(available)


class NestedNamespaceError(InvalidToolError):
    """A namespace was given as a tool of another namespace (one level only).

    Attributes:
        tool: The nested entry's name.
        namespace: The namespace it was placed in.
    """

    def __init__(self, message: str, *, tool: str, namespace: str) -> None:
        super().__init__(message, tool=tool)
        self.namespace = namespace


class UnknownActionError(UnknownToolError):
    """A namespace call names an action the namespace does not have.

    Attributes:
        name: The unknown action.
        namespace: The namespace called.
        available: The namespace's actions, sorted.
    """

    def __init__(
        self, message: str, *, name: str, namespace: str, available: Sequence[str] = ()
    ) -> None:
        super().__init__(message, name=name, available=available)
        self.namespace = namespace


class UnknownToolkitError(UnknownToolError):
    """A toolkit name that is not registered.

    Attributes:
        name: The unknown toolkit name.
        available: Every registered toolkit name, sorted.
    """


class CatalogFormatError(UsageError):
    """A catalog file or a tool dict has a shape the loaders do not recognise."""


class UnknownTargetError(UsageError):
    """A compile target that contextchef does not know."""


class VolatileValueError(UsageError):
    """A value that looks per-request (a date, a timestamp, an id) in the prompt prefix.

    Raised with ``ContextChef(volatile_lint="raise")`` by `ContextChef.set_system_prompt`
    and every registration (tools, namespaces, toolkits, skills), before anything changes.

    Attributes:
        values: Every `contextchef.tools._lint.VolatileValue` found.
    """

    def __init__(self, message: str, *, values: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.values = values


class SnapshotMismatchError(UsageError):
    """A snapshot does not fit this session (tools, toolkits, mode or version differ).

    Attributes:
        missing: Tools (wire names), toolkits or modes the snapshot needs that this
            session lacks.
        unexpected: Registered tools the snapshot's session did not have.
    """

    def __init__(
        self, message: str, *, missing: Sequence[str] = (), unexpected: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.missing = tuple(missing)
        self.unexpected = tuple(unexpected)


class SnapshotSignatureError(UsageError):
    """A snapshot's signature does not vouch for it; restore refused it and changed nothing.

    Attributes:
        problem: What failed: ``"missing"`` (no signature where one is required),
            ``"malformed"`` (a ``signature`` field of another shape: not an object, a
            field missing, extra or of the wrong type, a mac that is not 64 lowercase
            hex digits), ``"unsupported_algorithm"`` (an algorithm other than
            HMAC-SHA256), ``"unknown_key"`` (signed with a key id the host did not
            give), ``"mismatch"`` (the content or the signature was altered),
            ``"session"`` (signed for another session id), or ``"no_keys"`` (no keys
            where a signature must be checked: restore got none and the host did not
            allow unsigned input, or a store built without keys holds a signed session).
        key_id: The key id the snapshot names, if any.
    """

    def __init__(self, message: str, *, problem: str, key_id: str | None = None) -> None:
        super().__init__(message)
        self.problem = problem
        self.key_id = key_id


class TemplateError(UsageError):
    """A tool-description template cannot be rendered.

    Attributes:
        tool: The tool whose description failed.
    """

    def __init__(self, message: str, *, tool: str) -> None:
        super().__init__(message)
        self.tool = tool


class NondeterminismError(TemplateError):
    """A description template touched a non-deterministic source.

    Time, random, uuid, environment, filesystem, exec and network values would make the
    cached prefix differ between sessions or renders, so their stubs raise this.

    Attributes:
        tool: The tool whose description failed.
        source: The stub that was touched, e.g. ``"time"``.
    """

    def __init__(self, message: str, *, tool: str, source: str) -> None:
        super().__init__(message, tool=tool)
        self.source = source


class MissingExtraError(UsageError):
    """A feature needs an optional extra that is not installed.

    Attributes:
        extra: The extra to install (``pip install "contextchef[<extra>]"``).
        missing: The import names that could not be found.
    """

    def __init__(self, message: str, *, extra: str, missing: Sequence[str]) -> None:
        super().__init__(message)
        self.extra = extra
        self.missing = tuple(missing)


class MissingThinkingError(UsageError):
    """A request enables thinking, but its final assistant tool turn has no thinking block.

    Raised by ``compile(..., missing_thinking="raise")`` before anything is sent, where
    Anthropic would answer 400 (``Expected `thinking` or `redacted_thinking`, but found
    `tool_use```). By default compile sends that request without ``thinking`` instead.

    Attributes:
        message_index: The ``messages`` entry (wire index) of that assistant turn.
    """

    def __init__(self, message: str, *, message_index: int) -> None:
        super().__init__(message)
        self.message_index = message_index


class EmbeddingModelError(UsageError):
    """An embedding model or tokenizer file is missing, unreadable or not the pinned one.

    Attributes:
        path: The file concerned.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class ReadOnlyPayloadError(UsageError, TypeError):
    """An edit of a compiled payload's entry that is the session's record of what was sent.

    Also a `TypeError` (what Python raises for an edit of an immutable object), so code
    that already guards edits with ``except TypeError`` keeps working.
    """


class FrozenToolError(UsageError, TypeError):
    """An edit of a frozen value: a tool's definition, or the arguments a hook sees.

    A registered tool's schema reaches the cached prefix, so it is read-only; build a new
    `Tool` with ``Tool.replace()`` or ``copy.deepcopy`` the value. Also a `TypeError`.
    """


FROZEN_ERROR[0] = FrozenToolError


class ModelOutputError(ContextChefError):
    """The model or the provider produced data that cannot be used as is."""


class MalformedArgumentsError(ModelOutputError):
    """Tool-call arguments are not a JSON object, or not values the tool's types take.

    The second: a function tool's parameter types refuse what its JSON Schema allows
    (``1e20`` for an ``int``).

    Attributes:
        raw: The argument string exactly as the model produced it.
    """

    def __init__(self, message: str, *, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


class CorruptHistoryError(ModelOutputError):
    """A history message cannot be sent as is.

    Attributes:
        index: Position of the offending message in the history.
    """

    def __init__(self, message: str, *, index: int) -> None:
        super().__init__(message)
        self.index = index


class McpServerError(ContextChefError):
    """An MCP server could not be started, connected to, or listed.

    Attributes:
        server: The server's name, or its command / URL when it never answered.
    """

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


class McpListingTooLarge(McpServerError):
    """A server's ``tools/list`` holds more tools or bytes than its `McpRules` allow."""


class SessionStoreError(ContextChefError):
    """A session store failed (backend unreachable, corrupt record) for one session.

    Attributes:
        session_id: The session concerned ("" for store-wide failures).
    """

    def __init__(self, message: str, *, session_id: str = "") -> None:
        super().__init__(message)
        self.session_id = session_id


class StaleSessionError(SessionStoreError):
    """A write expected another version of the session than the store holds.

    Another writer appended first, or the session expired or was deleted (and perhaps was
    made again: another lineage). Nothing was written; load it again, redo the turn, retry.

    Attributes:
        expected: The version the writer based its turn on.
        actual: The version the store holds (0: the session does not exist).
    """

    def __init__(self, message: str, *, session_id: str, expected: int, actual: int) -> None:
        super().__init__(message, session_id=session_id)
        self.expected = expected
        self.actual = actual


class StorageError(ContextChefError, OSError):
    """A file contextchef keeps for you could not be written or read.

    Disk full, no permission, a path whose parent is a file: the offload directory
    (`OffloadStore`) or a `FileMemoryStore`'s JSON file.

    Also an `OSError`, so code that caught the operating system's error before keeps
    working. Nothing is half-written: a failed write leaves the previous file as it was.

    Attributes:
        path: The file or directory concerned.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path
