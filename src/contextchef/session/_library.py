"""Library-owned tools: memory and ``new_context``, registered like any other tool.

A session with a memory store gets its own tools, in one of two sets that never appear
together:

* ``"legacy"`` (the default): ``create_memory`` and ``modify_memory``;
* ``"unified"``: one ``context`` tool (actions ``create`` / ``update`` / ``delete``), plus
  ``new_context`` when an overflow handoff is configured (``on_overflow=...``).

They are registered in the session's registry with source ``library`` and a handler, so
the one gate applies to them as to every tool: modes (the write tools are not read-only,
so ``read_only`` hides them), the blocklist, schema validation and hooks. Exposure keeps
them direct and after every other tool in the payload; pruning never removes them. Their
schemas are static (the ``action`` enum lists fixed verbs, never live keys), so creating
or deleting memories leaves the ``tools`` bytes unchanged. Every outcome, a refused
action included, is result text for the model.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Literal

from contextchef._errors import UsageError
from contextchef._json import JsonValue
from contextchef.history._messages import ToolResult
from contextchef.session._memory import (
    MAX_MEMORY_CHARS,
    MEMORY_KEY_PATTERN,
    MemoryStore,
    OverflowHandoff,
    render_memories,
)
from contextchef.tools._registry import Handler
from contextchef.tools._tool import Tool, ToolAnnotations

__all__ = [
    "CREATE_MEMORY",
    "MODIFY_MEMORY",
    "NEW_CONTEXT",
    "NEW_CONTEXT_ACCEPTED",
    "READ_MEMORIES",
    "UNIFIED_CONTEXT",
    "MemoryTools",
    "library_tools",
]

CREATE_MEMORY = "create_memory"
READ_MEMORIES = "read_memories"
MODIFY_MEMORY = "modify_memory"
UNIFIED_CONTEXT = "context"
NEW_CONTEXT = "new_context"

MemoryTools = Literal["legacy", "unified"]
"""Which set of library-owned tools a session offers (see the module docstring)."""

_WRITES = ToolAnnotations(read_only=False, destructive=False, idempotent=False)
_DELETES = ToolAnnotations(read_only=False, destructive=True, idempotent=False)

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
    name: str,
    description: str,
    properties: dict[str, JsonValue],
    required: list[str],
    annotations: ToolAnnotations,
) -> Callable[[], Tool]:
    """The tool, built on first use (so ``import contextchef`` checks no schema)."""
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }
    return functools.cache(
        lambda: Tool(
            name=name,
            description=description,
            input_schema=schema,
            source="library",
            annotations=annotations,
        )
    )


_SHOWN = (
    "Stored memories are shown to you as the result of a read_memories call whenever they change."
)

NO_MEMORIES = "<memories>\n(no memories stored)\n</memories>"
"""What ``read_memories`` answers when nothing is stored."""

_READS = ToolAnnotations(read_only=True, destructive=False, idempotent=True)

_READ = _tool(
    READ_MEMORIES,
    "List every stored memory (key and text) in a <memories> block.",
    {},
    [],
    _READS,
)

_LEGACY = (
    _tool(
        CREATE_MEMORY,
        "Remember a fact for the rest of the session under a new key. " + _SHOWN,
        {"key": _KEY, "value": _VALUE},
        ["key", "value"],
        _WRITES,
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
        _DELETES,
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
    _DELETES,
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
    # it replaces the conversation with a summary: a change to the session, not a read
    ToolAnnotations(read_only=False, destructive=False, idempotent=True),
)

NEW_CONTEXT_ACCEPTED = (
    "New context requested: from the next turn, the conversation so far is replaced by a "
    "summary of it."
)
"""Result text of a successful ``new_context`` call."""


class _Memory:
    """The memory actions behind the memory tools, over one store."""

    def __init__(self, store: MemoryStore, mode: str) -> None:
        self.store = store
        self.mode = mode

    def create(self, **args: JsonValue) -> ToolResult:
        return self.run("create", args)

    def read(self, **_: JsonValue) -> str:
        return render_memories(self.store.items()) or NO_MEMORIES

    def modify(self, **args: JsonValue) -> ToolResult:
        return self.run(str(args["action"]), args)

    def run(self, action: str, args: Mapping[str, JsonValue]) -> ToolResult:
        text, error = self._run(action, args)
        return ToolResult(call_id="", name="", content=text, is_error=error)

    def _run(self, action: str, args: Mapping[str, JsonValue]) -> tuple[str, bool]:
        store = self.store
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


def library_tools(
    *,
    store: MemoryStore | None,
    mode: str,
    handoff: OverflowHandoff | None,
    on_new_context: Callable[[], None],
) -> tuple[tuple[Tool, ...], dict[str, Handler]]:
    """The library-owned tools a session registers, and their handlers by name.

    Args:
        store: The memory store (None: no memory tools).
        mode: ``"legacy"`` or ``"unified"``.
        handoff: The overflow handoff (None: no ``new_context``).
        on_new_context: Called when the model's ``new_context`` call runs.

    Raises:
        UsageError: Unknown mode, or `store` is not a `MemoryStore`.
    """
    if mode not in ("legacy", "unified"):
        raise UsageError(f"memory_tools must be 'legacy' or 'unified', got {mode!r}")
    if store is not None and not isinstance(store, MemoryStore):
        raise UsageError(
            f"memory must be a MemoryStore (InMemoryStore, FileMemoryStore or your own "
            f"with items/get/set/delete), got {type(store).__name__}"
        )
    tools: list[Tool] = []
    handlers: dict[str, Handler] = {}
    if store is not None:
        memory = _Memory(store, mode)
        if mode == "legacy":
            tools += [make() for make in _LEGACY]
            handlers |= {CREATE_MEMORY: memory.create, MODIFY_MEMORY: memory.modify}
        else:
            tools.append(_CONTEXT())
            handlers[UNIFIED_CONTEXT] = memory.modify
        tools.append(_READ())
        handlers[READ_MEMORIES] = memory.read
    if mode == "unified" and handoff is not None:
        tools.append(_NEW_CONTEXT())

        def new_context(**_: Any) -> str:
            on_new_context()
            return NEW_CONTEXT_ACCEPTED

        handlers[NEW_CONTEXT] = new_context
    return tuple(tools), handlers
