"""A snapshot's runtime tools against the tools a restoring session registered (tools layer).

A snapshot records the definitions of the runtime tools its session made
(`contextchef.tools._catalogs.tool_to_dict`), and restore registers them again. A tool
an MCP server added mid-conversation is one of them, and the next worker's server lists
it from the start: ``McpHub`` registers it with the server's other tools, under the same
key (server, name). Such a registered tool *is* the conversation's runtime tool: it is
taken as that, re-sourced ``runtime`` (deferred and searchable, as the conversation had
it), so the registered set and its fingerprint are the snapshot's and the next compile
declares what the conversation declared. Its handler and annotations stay the host's.

If the server now lists another definition, the registered one is taken all the same
(the session calls the server as it is now) and the change is logged: as after
``replace_tool`` mid-session, the search index has the new definition and a ``tools``
entry that changes is an edit the compile reports (``CompiledRequest.edits``).

A recorded name taken by a tool of another key (a tool registered under another origin,
or a library tool) is refused: nothing is restored. So is a runtime tool the host
registered beforehand (`register_runtime_tool`, to attach its handler) with another
definition than the snapshot's: the conversation was sent the recorded one, and the
host's would silently take its place (the gate would check calls against it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from contextchef._errors import (
    ContextChefError,
    SnapshotMismatchError,
    UnknownToolError,
    UsageError,
    shown,
)
from contextchef._signing import as_decimal_store
from contextchef.tools._catalogs import tool_from_dict, tool_to_dict
from contextchef.tools._registry import Registry
from contextchef.tools._tool import Tool

__all__ = ["RecordedRuntime", "recorded_runtime"]

logger = logging.getLogger("contextchef")


@dataclass(frozen=True)
class RecordedRuntime:
    """A snapshot's runtime tools, sorted by what the registry has (`recorded_runtime`).

    Attributes:
        new: Tools to register (runtime, no handler: the host attaches handlers).
        taken: Registered tools the snapshot has as runtime tools, re-sourced
            ``runtime`` (same keys: `adopt` puts them in the registry).
        changed: Wire names of the taken tools whose definition differs from the
            snapshot's (sorted).
    """

    new: tuple[Tool, ...] = ()
    taken: tuple[Tool, ...] = ()
    changed: tuple[str, ...] = ()

    @property
    def tools(self) -> tuple[Tool, ...]:
        """Every runtime tool the restored session has from the snapshot (new, taken)."""
        return self.new + self.taken

    def adopt(self, registry: Registry) -> None:
        """Replace the taken tools in `registry` by their runtime form (after the checks)."""
        for tool in self.taken:
            registry.replace(tool)
        if self.changed:
            logger.warning(
                "contextchef: restore: runtime tools %s are registered here with another "
                "definition than the snapshot's; the session takes the registered one from "
                "now on (as replace_tool would)",
                list(self.changed),
            )


def recorded_runtime(
    definitions: Iterable[Mapping[str, Any]], registry: Registry
) -> RecordedRuntime:
    """Sort a snapshot's runtime tool definitions by what `registry` holds (module doc).

    Checked, nothing changed: a definition already registered as a runtime tool is
    skipped, one registered under the same key as another kind of tool is taken, one
    absent is new.

    Args:
        definitions: The snapshot's ``tools.definitions`` (`tool_to_dict` dicts, with
            ``server`` for an MCP server's tool).
        registry: The restoring session's registry.

    Raises:
        UsageError: A definition that cannot be built (nothing is restored).
        SnapshotMismatchError: A recorded tool's name is taken by a tool of another
            origin, or by a library tool, or registered here as a runtime tool with
            another definition (its ``unexpected`` names them).
    """
    new: list[Tool] = []
    taken: list[Tool] = []
    changed: list[str] = []
    other: list[str] = []  # registered here as runtime tools, defined otherwise
    for item in definitions:
        try:
            server = item.get("server")
            body = {k: v for k, v in item.items() if k != "server"} if server else item
            tool = tool_from_dict(body, source="runtime", server=server)
        except ContextChefError as exc:
            raise UsageError(
                f"snapshot runtime tool definition: {exc}; nothing was restored"
            ) from exc
        try:
            here: Tool | None = registry.get(tool.key)
        except UnknownToolError:
            here = None
        if here is not None and here.source == "runtime":
            if not _same(here, tool):
                other.append(registry.wire_name_for(here))
            continue
        if here is not None and here.source != "library":
            taken.append(here.replace(source="runtime"))
            if not _same(here, tool):
                changed.append(registry.wire_name_for(here))
            continue
        if any(t.name == tool.name for t in registry.tools):
            raise SnapshotMismatchError(
                f"the snapshot's runtime tool {shown(tool.name)} "
                f"(server {shown(tool.server)}) is registered here as another kind of tool, "
                "under another origin; register it under the same server, or not at all "
                "(restore() registers it from the snapshot: attach a handler with "
                "register_runtime_tool() beforehand); nothing was restored",
                unexpected=(tool.name,),
            )
        new.append(tool)
    if other:
        raise SnapshotMismatchError(
            f"runtime tools {sorted(other)} are registered here with other definitions than "
            "the snapshot's (its 'tools.definitions'): the conversation was sent those; "
            "register_runtime_tool() them as the snapshot defines them (or not at all: "
            "restore() registers them from it) before restore(); nothing was restored",
            unexpected=tuple(sorted(other)),
        )
    return RecordedRuntime(tuple(new), tuple(taken), tuple(sorted(changed)))


def _same(here: Tool, recorded: Tool) -> bool:
    """Whether `here` is the `recorded` definition, numbers as a decimal store keeps them.

    A signed snapshot kept in ``jsonb`` holds a float from 1e16 on as an integer
    (`contextchef._signing.as_decimal_store`): the same definition when it was signed.
    """
    mine, theirs = tool_to_dict(here), tool_to_dict(recorded)
    return mine == theirs or as_decimal_store(mine) == as_decimal_store(theirs)
