"""Library-owned tools: the memory store and the ``new_context`` handoff (facade layer).

Not every entry of a compiled ``tools`` array comes from the registry. A session with a
memory store gets its own tools, in one of two sets that never appear together:

* ``"legacy"`` (the default): ``create_memory`` and ``modify_memory``;
* ``"unified"``: one ``context`` tool (actions ``create`` / ``update`` / ``delete``), plus
  ``new_context`` when an overflow handoff is configured (``on_overflow=...``).

These tools live outside the registry and the exposure policy, so pruning, allowlists
and modes never see them: the facade appends them after the registry's tools at every
compile. Their schemas are static (the ``action`` enum lists fixed verbs, never live
keys), so creating or deleting memories leaves the ``tools`` bytes unchanged. The
memories themselves are state, not prefix: they render as one ``<memories>`` block
appended to the last user message of each compiled payload (the volatile tail), never
into the system prompt or a tool description, and never into the stored history.

Dispatch goes through `OwnedTools`: the facade asks `OwnedTools.owns` first and, for its
own names, validates the arguments against the static schema, applies the session's
blocklist and runs the action. Every outcome, bad arguments included, is result text for
the model (an error result names the offending field).

``new_context`` (or the host's ``request_new_context()``) only sets a flag; the next
compile then applies the overflow strategy whatever the budget says: the injected
summarizer (the library never calls a model) gets the transcript as text and its summary
replaces the history (see `handoff_keep_turns` for what stays verbatim).
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from contextchef._errors import UsageError
from contextchef._json import JsonValue, canonical_dumps
from contextchef._tokens import estimate_tokens
from contextchef.dispatch._gate import Allowed, CheckResult, Denied, Execution
from contextchef.exposure._policy import matches
from contextchef.history._messages import Message, TextPart, ToolCall, ToolResult
from contextchef.history._normalize import is_user_turn
from contextchef.tools._schema import validation_errors
from contextchef.tools._tool import CompiledTool, Tool

__all__ = [
    "CREATE_MEMORY",
    "MEMORY_KEY_PATTERN",
    "MODIFY_MEMORY",
    "NEW_CONTEXT",
    "UNIFIED_CONTEXT",
    "FileMemoryStore",
    "InMemoryStore",
    "MemoryStore",
    "MemoryTools",
    "OverflowHandoff",
    "OwnedTools",
    "Summarizer",
    "handoff_keep_turns",
    "history_tokens",
    "render_memories",
    "with_memories",
]

CREATE_MEMORY = "create_memory"
MODIFY_MEMORY = "modify_memory"
UNIFIED_CONTEXT = "context"
NEW_CONTEXT = "new_context"

MemoryTools = Literal["legacy", "unified"]
"""Which set of library-owned tools a session offers (see the module docstring)."""

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
        for key, value in (initial or {}).items():
            self.set(key, value)

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
        self._data[key] = value

    def delete(self, key: str) -> bool:
        """Remove `key`; returns whether it existed."""
        return self._data.pop(key, None) is not None


STORE_FORMAT_VERSION = 1
"""Version written into `FileMemoryStore` files."""


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
    """

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        super().__init__(self._read())

    @property
    def path(self) -> Path:
        """The JSON file."""
        return self._path

    def _read(self) -> dict[str, str]:
        if not self._path.exists():
            return {}
        try:
            doc = json.loads(self._path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(
                f"memory file {str(self._path)!r} is not readable JSON: {exc}"
            ) from exc
        memories: Any = doc.get("memories") if isinstance(doc, dict) else None
        valid = isinstance(memories, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in memories.items()
        )
        if not valid or doc.get("version") != STORE_FORMAT_VERSION:
            raise UsageError(
                f"memory file {str(self._path)!r} is not a contextchef memory file; expected "
                f'{{"memories": {{<key>: <text>}}, "version": {STORE_FORMAT_VERSION}}}'
            )
        return dict(memories)

    def set(self, key: str, value: str) -> None:
        """Store `value` under `key` and rewrite the file."""
        super().set(key, value)
        self._write()

    def delete(self, key: str) -> bool:
        """Remove `key` (rewriting the file if it existed); returns whether it existed."""
        existed = super().delete(key)
        if existed:
            self._write()
        return existed

    def _write(self) -> None:
        doc = {"memories": dict(self.items()), "version": STORE_FORMAT_VERSION}
        text = json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self._path.name}.", dir=self._path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


# -- static tool definitions -----------------------------------------------------------------

_KEY: dict[str, JsonValue] = {
    "type": "string",
    "pattern": MEMORY_KEY_PATTERN,
    "description": "Short identifier of the memory, e.g. user_timezone.",
}
_VALUE: dict[str, JsonValue] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_MEMORY_CHARS,
    "description": "The fact to remember, as plain text.",
}


def _tool(
    name: str, description: str, properties: dict[str, JsonValue], required: list[str]
) -> Tool:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }
    return Tool(name=name, description=description, input_schema=schema)


_SHOWN = (
    "Stored memories are shown to you in a <memories> block at the end of the latest user message."
)

_LEGACY = (
    _tool(
        CREATE_MEMORY,
        "Remember a fact for the rest of the session under a new key. " + _SHOWN,
        {"key": _KEY, "value": _VALUE},
        ["key", "value"],
    ),
    _tool(
        MODIFY_MEMORY,
        "Change (action 'update', with the new value) or forget (action 'delete') a stored "
        "memory. " + _SHOWN,
        {
            "key": _KEY,
            "action": {"type": "string", "enum": ["update", "delete"]},
            "value": {**_VALUE, "description": "The new text; required for 'update'."},
        },
        ["key", "action"],
    ),
)

_CONTEXT = _tool(
    UNIFIED_CONTEXT,
    "Manage your memories: 'create' a new one, 'update' one (with the new value) or "
    "'delete' one. " + _SHOWN,
    {
        "action": {"type": "string", "enum": ["create", "update", "delete"]},
        "key": _KEY,
        "value": {**_VALUE, "description": "The text; required for 'create' and 'update'."},
    },
    ["action", "key"],
)

_NEW_CONTEXT = _tool(
    NEW_CONTEXT,
    "Start a new phase of work with a fresh context: from the next turn the conversation so "
    "far is replaced by a summary of it. Use it when the task has changed and the earlier "
    "turns are no longer needed.",
    {
        "reason": {
            "type": "string",
            "maxLength": 500,
            "description": "Optional: what the next phase is about (kept in the summary).",
        }
    },
    [],
)

NEW_CONTEXT_ACCEPTED = (
    "New context requested: from the next turn, the conversation so far is replaced by a "
    "summary of it."
)
"""Result text of a successful ``new_context`` call."""


# -- the handoff ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class OverflowHandoff:
    """The overflow strategy: summarize the transcript and start over from the summary.

    Attributes:
        summarize: Your model call (the library never calls a model): gets the
            transcript as plain text (see `contextchef.compact`), returns the summary.
        max_history_tokens: When set, a compile whose history is estimated above this
            many tokens (`estimate_tokens` over each message's canonical JSON) applies
            the handoff by itself. None: only on request (``new_context`` or
            ``request_new_context()``).
    """

    summarize: Summarizer
    max_history_tokens: int | None = None

    def __post_init__(self) -> None:
        if not callable(self.summarize):
            raise UsageError(
                f"on_overflow needs a callable summarizer, got {type(self.summarize).__name__}"
            )
        limit = self.max_history_tokens
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise UsageError(
                f"max_history_tokens must be a positive integer or None, got {limit!r}"
            )


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


def with_memories(messages: Sequence[Message], block: str) -> tuple[Message, ...]:
    """`messages` with `block` appended as a text part of the last user message.

    The input is not mutated; without a user message or a block it is returned as is.
    """
    out = tuple(messages)
    if not block:
        return out
    for i in range(len(out) - 1, -1, -1):
        if out[i].role == "user":
            last = dataclasses.replace(out[i], parts=(*out[i].parts, TextPart(text=block)))
            return (*out[:i], last, *out[i + 1 :])
    return out


def history_tokens(messages: Sequence[Message]) -> int:
    """Estimated tokens of a history: `estimate_tokens` over each message's JSON form."""
    return sum(estimate_tokens(canonical_dumps(m.to_dict())) for m in messages)


# -- dispatch -----------------------------------------------------------------------------------


def _call_parts(call: ToolCall | Mapping[str, Any]) -> tuple[str, str, Any]:
    """(call id, name, raw arguments) of a `ToolCall` or a tool-call dict."""
    if isinstance(call, ToolCall):
        return call.id, call.name, call.arguments
    if isinstance(call, Mapping):
        inner = call.get("function")
        body: Mapping[str, Any] = inner if isinstance(inner, Mapping) else call
        name = body.get("name")
        if isinstance(name, str):
            raw: Any = next((body[k] for k in ("arguments", "input", "args") if k in body), {})
            return str(call.get("id", "")), name, raw
    raise UsageError(
        f"expected a ToolCall or a tool-call dict with a 'name', got {type(call).__name__}"
    )


def _parse(raw: Any) -> dict[str, JsonValue] | str:
    """Arguments as a dict, or the reason they cannot be one."""
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw.strip() or "{}")
        except json.JSONDecodeError as exc:
            return f"the arguments are not valid JSON ({exc.msg}); send one JSON object"
    if not isinstance(value, Mapping):
        return f"the arguments must be a JSON object, got {type(value).__name__}"
    return dict(value)


class OwnedTools:
    """The session's library-owned tools: definitions, ownership and execution.

    Args:
        store: The memory store (None: no memory tools).
        mode: ``"legacy"`` or ``"unified"``.
        handoff: The overflow handoff (None: no ``new_context``).
        on_new_context: Called when the model's ``new_context`` call is accepted.

    Raises:
        UsageError: Unknown mode, or `store` is not a `MemoryStore`.
    """

    def __init__(
        self,
        *,
        store: MemoryStore | None,
        mode: str,
        handoff: OverflowHandoff | None,
        on_new_context: Callable[[], None],
    ) -> None:
        if mode not in ("legacy", "unified"):
            raise UsageError(f"memory_tools must be 'legacy' or 'unified', got {mode!r}")
        if store is not None and not isinstance(store, MemoryStore):
            raise UsageError(
                f"memory must be a MemoryStore (InMemoryStore, FileMemoryStore or your own "
                f"with items/get/set/delete), got {type(store).__name__}"
            )
        self.store = store
        self.mode = mode
        self.handoff = handoff
        self._on_new_context = on_new_context
        tools: list[Tool] = []
        if store is not None:
            tools += _LEGACY if mode == "legacy" else (_CONTEXT,)
        if mode == "unified" and handoff is not None:
            tools.append(_NEW_CONTEXT)
        self.tools = tuple(tools)
        self._by_name = {t.name: t for t in tools}
        self.compiled = tuple(
            CompiledTool(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in tools
        )

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the tools offered, in payload order."""
        return tuple(self._by_name)

    def owns(self, name: object) -> bool:
        """Whether `name` is one of this session's library-owned tools."""
        return isinstance(name, str) and name in self._by_name

    def memory_block(self) -> str:
        """The ``<memories>`` block for the current store (``""`` without memories)."""
        return render_memories(self.store.items()) if self.store is not None else ""

    def check(self, name: str, raw: Any, blocked: Sequence[str]) -> CheckResult:
        """Blocklist, then static-schema validation; denials name the offending field."""
        tool = self._by_name[name]
        if matches(blocked, (name,)):
            return Denied(reason=f'Tool "{name}" is currently blocked.', code="blocked", tool=tool)
        arguments = _parse(raw)
        if isinstance(arguments, str):
            return Denied(
                reason=f'Invalid arguments for tool "{name}": {arguments}.',
                code="malformed_arguments",
                tool=tool,
            )
        problems = validation_errors(tool.input_schema, arguments)
        if problems:
            lines = "\n".join(f"- {p}" for p in problems)
            return Denied(
                reason=f'Invalid arguments for tool "{name}":\n{lines}',
                code="invalid_arguments",
                tool=tool,
            )
        return Allowed(tool=tool, wire_name=name, arguments=arguments)

    def execute(self, call: ToolCall, blocked: Sequence[str]) -> Execution:
        """Check and run one call to an owned tool; every outcome is a `ToolResult`."""
        return self.run(call, self.check(call.name, call.arguments, blocked))

    def run(self, call: ToolCall, check: CheckResult) -> Execution:
        """Run a call the gate has decided on (a denial becomes an error result)."""
        if isinstance(check, Denied):
            text, error = check.reason, True
        else:
            text, error = self._run(call.name, check.arguments)
        result = ToolResult(call_id=call.id, name=call.name, content=text, is_error=error)
        return Execution(result=result, check=check)

    def handle(self, call: ToolCall | Mapping[str, Any], blocked: Sequence[str]) -> str:
        """Run a call given as a `ToolCall` or a dict; returns the result text.

        Raises:
            UsageError: The call names a tool this session does not own.
        """
        call_id, name, raw = _call_parts(call)
        if not self.owns(name):
            raise UsageError(
                f"{name!r} is not a contextchef-owned tool in this session; owned tools: "
                f"{list(self.names)} (check with owns_tool before handle_tool)"
            )
        text = raw if isinstance(raw, str) else _safe_dumps(raw)
        return self.execute(
            ToolCall(id=call_id or "call", name=name, arguments=text), blocked
        ).result.content

    def _run(self, name: str, args: Mapping[str, JsonValue]) -> tuple[str, bool]:
        if name == NEW_CONTEXT:
            self._on_new_context()
            return NEW_CONTEXT_ACCEPTED, False
        if name == CREATE_MEMORY:
            return self._memory("create", args)
        return self._memory(str(args["action"]), args)  # modify_memory and context

    def _memory(self, action: str, args: Mapping[str, JsonValue]) -> tuple[str, bool]:
        store = self.store
        assert store is not None  # memory tools exist only with a store
        key = str(args["key"])
        value = args.get("value")
        exists = store.get(key) is not None
        if action == "create" and exists:
            fix = "modify_memory" if self.mode == "legacy" else "action 'update'"
            return f'Memory "{key}" already exists; use {fix} to change it.', True
        if action != "create" and not exists:
            keys = [k for k, _ in store.items()]
            return f'No memory "{key}". Stored keys: {", ".join(keys) or "(none)"}.', True
        if action == "delete":
            store.delete(key)
            return f'Memory "{key}" deleted.', False
        if not isinstance(value, str):
            tool = MODIFY_MEMORY if self.mode == "legacy" else UNIFIED_CONTEXT
            return (
                f'Invalid arguments for tool "{tool}":\n'
                f"- value: required for action '{action}' (the memory's new text)"
            ), True
        store.set(key, value)
        return f'Memory "{key}" {"created" if action == "create" else "updated"}.', False


def _safe_dumps(raw: Any) -> str:
    try:
        return canonical_dumps(raw)
    except (TypeError, ValueError):
        return json.dumps(str(raw))
