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

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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
from contextchef.tools._registry import Registry, _sort_key
from contextchef.tools._tool import Tool

__all__ = [
    "RecordedRuntime",
    "RecordedWithdrawn",
    "definition_digest",
    "recorded_runtime",
    "recorded_withdrawn",
    "withdrawn_record",
]

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


def definition_digest(definition: Mapping[str, Any]) -> str:
    """A recorded definition's digest: SHA-256 (16 hex) of its JSON, keys sorted.

    Its numbers are taken as a decimal store keeps them (`as_decimal_store`: a ``jsonb``
    column's ``1e20``, ``-0.0``), and a whole float as the integer it equals (``0.0`` read
    back as ``0``), so a store's rewrite of a number is not an edit.
    """
    text = json.dumps(
        _whole(as_decimal_store(definition)),
        sort_keys=True,  # a store may reorder keys (jsonb: shorter first), properties too
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _whole(value: Any) -> Any:
    """`value` with each float that is a whole number as that integer."""
    if type(value) is float:
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def _check_digests(definitions: Sequence[Mapping[str, Any]], digests: object) -> None:
    """Refuse definitions that are not those `digests` (``tools.definition_digests``) cover.

    An unsigned snapshot's runtime tool definition is what the gate checks calls by, and
    the model was sent the one written: an edited one would refuse the calls the model
    makes from what it saw (break-it 38). None (older snapshots): not checked.
    """
    if digests is None:
        return
    if not isinstance(digests, list) or len(digests) != len(definitions):
        raise UsageError(
            "snapshot tools.definition_digests must hold one digest per runtime tool "
            f"definition ({len(definitions)}); nothing was restored"
        )
    for i, definition in enumerate(definitions):
        try:
            same = digests[i] == definition_digest(definition)
        except (TypeError, ValueError, RecursionError):
            same = False
        if not same:
            raise UsageError(
                f"snapshot runtime tool {shown(definition.get('name'), 80)}: its definition "
                "differs from the one recorded (tools.definition_digests); the snapshot was "
                "changed after it was taken; nothing was restored"
            )


def recorded_runtime(
    definitions: Sequence[Mapping[str, Any]], registry: Registry, digests: object = None
) -> RecordedRuntime:
    """Sort a snapshot's runtime tool definitions by what `registry` holds (module doc).

    Checked, nothing changed: a definition already registered as a runtime tool is
    skipped, one registered under the same key as another kind of tool is taken, one
    absent is new.

    Args:
        definitions: The snapshot's ``tools.definitions`` (`tool_to_dict` dicts, with
            ``server`` for an MCP server's tool).
        registry: The restoring session's registry.
        digests: The snapshot's ``tools.definition_digests`` (None: an older one).

    Raises:
        UsageError: A definition that cannot be built, or that its digest does not cover
            (nothing is restored).
        SnapshotMismatchError: A recorded tool's name is taken by a tool of another
            origin, or by a library tool, or registered here as a runtime tool with
            another definition (its ``unexpected`` names them).
    """
    _check_digests(definitions, digests)
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


# -- withdrawn tools -----------------------------------------------------------------------
#
# A tool its source took back mid-conversation (an MCP server removed it, or the server
# disconnected: ``McpHub``) stays registered and declared, and the gate refuses it with a
# reason. The next worker's server may no longer list it, so the snapshot records each
# withdrawn tool with that reason, and the definition of a declared (non-runtime) one:
# restore registers what the registry lacks, without a handler, and withdrawn with the
# same reason, so the conversation resumes with the bytes it was sent (the definition
# stays declared while the history uses it: DESIGN.md "Structural, not advisory"; a
# replayed ``tool_removal`` names it, and Anthropic answers a reference to an undeclared
# tool with a 400, ``tool_reference_unresolved``: "Mid-conversation system messages and
# tool changes", https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages)
# and calls to it are refused as before. A tool listed here again is the server's: it is not
# withdrawn (as when the server lists it again mid-session). The registered tools are
# still checked against the snapshot's fingerprint, these included: a record can only
# bring back a tool the conversation had, and never a callable one.


def withdrawn_record(registry: Registry, withdrawn: Mapping[str, str]) -> list[dict[str, Any]]:
    """The snapshot's ``tools.withdrawn`` (`RecordedWithdrawn.record`), sorted.

    Per withdrawn tool: its wire name, the reason the gate gives and, for a declared
    (non-runtime) tool, its definition.
    """
    out: list[dict[str, Any]] = []
    for wire, reason in sorted(withdrawn.items()):
        tool = registry.by_wire_name(wire)
        if tool is None or tool.server is None:
            continue  # not a source's tool: nothing to bring back
        item: dict[str, Any] = {"name": wire, "reason": reason}
        if tool.source != "runtime":  # a runtime tool's definition is in 'definitions'
            item["definition"] = tool_to_dict(tool)
        out.append(item)
    return out


@dataclass(frozen=True)
class RecordedWithdrawn:
    """A snapshot's withdrawn tools against a restoring registry (`recorded_withdrawn`).

    Attributes:
        new: Declared tools the registry lacks, to register (no handler) and withdraw.
        reasons: Wire name -> the gate's reason, for every recorded tool this session
            gets from the snapshot (``new``, and runtime tools `RecordedRuntime.new`).
    """

    new: tuple[Tool, ...] = ()
    reasons: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def record(registry: Registry, withdrawn: Mapping[str, str]) -> list[dict[str, Any]]:
        """A snapshot's ``tools.withdrawn`` of a session's (`withdrawn_record`)."""
        return withdrawn_record(registry, withdrawn)

    def among(self, declared: Iterable[Tool]) -> list[Tool]:
        """`declared` (registered tools, in registry order) with `new` in their places."""
        return sorted([*declared, *self.new], key=_sort_key) if self.new else list(declared)


def recorded_withdrawn(
    items: Iterable[object], registry: Registry, runtime: RecordedRuntime
) -> RecordedWithdrawn:
    """Sort a snapshot's ``tools.withdrawn`` by what `registry` holds (see above).

    Checked, nothing changed. A tool registered here (its server lists it) is left as
    it is; the others are withdrawn again with their recorded reason.

    Raises:
        UsageError: A malformed entry (nothing is restored).
        SnapshotMismatchError: A recorded tool's wire name is taken here by another tool.
    """
    new: list[Tool] = []
    reasons: dict[str, str] = {}
    fresh = {registry.wire_name_for(t) for t in runtime.new}
    for at, item in enumerate(items):
        wire, reason = _entry(item, at)
        if wire in reasons or any(registry.wire_name_for(t) == wire for t in new):
            raise UsageError(
                f"snapshot field 'tools' 'withdrawn' [{at}] records {shown(wire)} again (once "
                "per tool); nothing was restored"
            )
        body = item.get("definition") if isinstance(item, Mapping) else None
        if body is None:  # a runtime tool: restored from the snapshot's definitions
            if wire in fresh:
                reasons[wire] = reason
            continue
        tool = _declared(body, wire, at, registry)
        here = registry.by_wire_name(wire)
        if here is not None and here.key == tool.key:
            continue  # listed here again: the server's tool, callable as it is now
        if here is not None:
            raise SnapshotMismatchError(
                f"the snapshot's withdrawn tool {shown(wire)} (server {shown(tool.server)}) "
                f"is registered here under another origin ({shown(here.origin)}); register "
                "it under the same server, or not at all; nothing was restored",
                unexpected=(wire,),
            )
        new.append(tool)
        reasons[wire] = reason
    return RecordedWithdrawn(tuple(new), reasons)


def _entry(item: object, at: int) -> tuple[str, str]:
    where = f"snapshot field 'tools' 'withdrawn' [{at}]"
    if not isinstance(item, Mapping) or set(item) - {"name", "reason", "definition"}:
        raise UsageError(
            f"{where} must be an object with 'name', 'reason' and optionally 'definition'; "
            "nothing was restored"
        )
    wire, reason = item.get("name"), item.get("reason")
    if not (isinstance(wire, str) and isinstance(reason, str) and reason.isprintable() and reason):
        raise UsageError(  # the reason is the gate's answer to the model: one printable line
            f"{where} must have a wire name and a reason (non-empty printable text), got "
            f"{shown(wire, 40)} and {shown(reason, 40)}; nothing was restored"
        )
    return wire, reason


def _declared(body: object, wire: str, at: int, registry: Registry) -> Tool:
    """A recorded withdrawn tool's definition: an MCP server's tool named `wire`."""
    where = f"snapshot field 'tools' 'withdrawn' [{at}] 'definition'"
    server = body.get("server") if isinstance(body, Mapping) else None
    if not isinstance(body, Mapping) or not isinstance(server, str):
        raise UsageError(f"{where} must be a tool definition with a 'server'; nothing was restored")
    try:
        data = {k: v for k, v in body.items() if k != "server"}
        tool = tool_from_dict(data, server=server, source="mcp")
    except ContextChefError as exc:
        raise UsageError(f"{where}: {exc}; nothing was restored") from exc
    if registry.wire_name_for(tool) != wire:
        raise UsageError(
            f"{where} defines {shown(tool.name)} of server {shown(server)}, not the tool "
            f"{shown(wire)} it is recorded for; nothing was restored"
        )
    return tool
