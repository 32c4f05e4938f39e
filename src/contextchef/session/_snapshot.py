"""Session snapshots: `take_snapshot` / `read_snapshot` (session layer).

A snapshot is a plain JSON dict (``json.dumps`` works on it) of everything that
determines the next compile and is *data*: `SessionState.to_dict`, plus a header, a
record of the registered tools, and the skills (data too: a session restored without
registering skills gets the snapshot's; one that registered skills must have the same).

Code is not in a snapshot: tools and their handlers, namespaces, toolkits, runtime tools,
hooks, event handlers and the implicit-context hook. Restore into a `ContextChef` built
with the same constructor arguments, after registering the same tools, namespaces and
toolkits (and any runtime tools that were not loaded from a toolkit); loaded toolkits are
loaded again on restore. The snapshot records a fingerprint of the registered tools and
what else shapes the tools segment (``tools.shape``, `contextchef.deferred._shape`: the
toolkits, namespaces, library tools, server descriptions, `DeferredConfig` limits): on a
mismatch, restore raises `SnapshotMismatchError` naming what is missing, unexpected or
defined otherwise, and changes nothing (a snapshot without ``shape`` is not checked).

The form is declared once, in `contextchef.session._snapshot_form` (`SnapshotForm`), and
every reader here checks a snapshot against it first; a snapshot missing a field it
requires (its digests included) is refused. A snapshot without an ``announcements`` field
restores to no announcements (spec 001). Policy (blocklist, mode, whitelist, patterns,
strategy) is recorded, but restored from the host's session (`contextchef.exposure._restore`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from contextchef._errors import SnapshotMismatchError, UsageError, json_reason, shown
from contextchef._json_read import strict_loads
from contextchef.deferred._shape import check_tools_shape, refuse_other, tools_shape
from contextchef.deferred._skills import Skill, parse_skill
from contextchef.history._cause import restore_errors
from contextchef.session._skills import resolve_skills
from contextchef.session._state import SessionState, check_shape
from contextchef.session._toolset import SessionTools
from contextchef.tools._catalogs import tool_to_dict
from contextchef.tools._recorded import (
    RecordedRuntime,
    RecordedWithdrawn,
    definition_digest,
    recorded_runtime,
)
from contextchef.tools._registry import tool_digest
from contextchef.tools._tool import Tool

if TYPE_CHECKING:
    from contextchef.session._snapshot_form import SnapshotForm

__all__ = [
    "SNAPSHOT_FORMAT",
    "SNAPSHOT_VERSION",
    "checked",
    "read_skills",
    "read_snapshot",
    "runtime_tools",
    "take_snapshot",
]

SNAPSHOT_FORMAT = "contextchef.snapshot"
SNAPSHOT_VERSION = 6  # 2: the conversation once, the thinking chain; 3: sent texts once; 4:
READ_VERSIONS = (1, 2, 3, 4, 5, 6)  # wire digests of stored entries; 5: by block; 6: CRC-32
_NONE = RecordedWithdrawn()  # no withdrawn tool to bring back


def _tool_sets(
    tools: SessionTools,
    coming: Sequence[Tool] = (),
    named: bool = True,
    gone: RecordedWithdrawn = _NONE,
) -> tuple[dict[str, str], str, list[Tool]]:
    """(wire name -> definition digest (`named`), their fingerprint, runtime non-kit tools).

    The names are the registered tools', sorted ({} unless `named`). Library-owned tools
    follow from the constructor arguments and are not recorded; `coming` (a restore's
    runtime tools, `RecordedRuntime.tools`) count as runtime tools; `gone`'s new tools
    (`RecordedWithdrawn`) as registered.
    """
    registry, keys = tools.registry, {t.key for t in coming}
    static = [t for t in registry.tools if t.source not in ("runtime", "library")]
    static = gone.among(t for t in static if t.key not in keys)  # and withdrawn tools back
    runtime = [t for t in registry.tools if t.source == "runtime" and not tools.is_kit_tool(t)]
    wired = ((registry.wire_name_for(t), t) for t in static) if named else ()
    return (
        {w: tool_digest(t, w).hex()[:16] for w, t in sorted(wired, key=lambda p: p[0])},
        registry.fingerprint(static),
        [*runtime, *coming],
    )


def take_snapshot(state: SessionState, tools: SessionTools, base: Any = None) -> dict[str, Any]:
    """A versioned, JSON-serializable dict of the session's data (see the module doc).

    Runtime tools (made during the session, e.g. by the model) are recorded with their
    definitions, so a fresh session can restore them (`runtime_tools`); their handlers
    are code, and stay the host's to attach.
    """
    names, fingerprint, made = _tool_sets(tools)
    return {
        "format": SNAPSHOT_FORMAT,
        "version": SNAPSHOT_VERSION,
        **state.to_dict(base),
        "tools": {
            "fingerprint": fingerprint,
            "names": list(names),
            "digests": list(names.values()),  # each tool's, so a mismatch names it
            "runtime": sorted(tools.registry.wire_name_for(t) for t in made),
            "definitions": (defs := [tool_to_dict(t) for t in made]),
            "definition_digests": [definition_digest(d) for d in defs],  # each, as sent
            "shape": tools_shape(tools),
            "withdrawn": RecordedWithdrawn.record(tools.registry, state.withdrawn),
        },
        "skills": [skill.to_dict() for skill in tools.skills],
    }


class _Checked(dict):  # type: ignore[type-arg]
    """A snapshot `checked` made (passed to the readers, it is not checked again)."""


def checked(data: object) -> SnapshotForm:
    """`data` checked as a snapshot of this version, against `SnapshotForm`.

    `restore` checks a snapshot once and gives the result to `runtime_tools`,
    `read_snapshot` and `read_skills`, which take it as it is.

    Raises:
        UsageError: Not a snapshot, or a malformed field (named, with what is valid), a
            ``version`` that is not an integer from 1 included.
        SnapshotMismatchError: Another snapshot version.
    """
    if isinstance(data, _Checked):
        return cast("SnapshotForm", data)
    if not isinstance(data, Mapping) or data.get("format") != SNAPSHOT_FORMAT:
        raise UsageError(
            f"not a contextchef snapshot (expected a dict with format {shown(SNAPSHOT_FORMAT)}, "
            "as returned by ContextChef.snapshot(), or its JSON text as str or bytes; got "
            f"{type(data).__name__})"
        )
    version = data.get("version")
    if type(version) is not int or version < 1:  # malformed, not another release's
        raise UsageError(
            f"snapshot field 'version' is {shown(version, 40)} (a {type(version).__name__}), "
            f"not a version (an integer from 1); this contextchef reads versions "
            f"{list(READ_VERSIONS)}; nothing was restored"
        )
    if version not in READ_VERSIONS:
        raise SnapshotMismatchError(
            f"snapshot version {shown(version, 40)} is not supported (written by another "
            f"release); this contextchef reads versions {list(READ_VERSIONS)}"
        )
    return cast("SnapshotForm", _Checked(check_shape(data)))


def runtime_tools(data: object, tools: SessionTools) -> RecordedRuntime:
    """The snapshot's runtime tools against `tools` (`contextchef.tools._recorded`).

    Checked, nothing registered: to register (`RecordedRuntime.new`), or registered here
    under the same key by another kind of tool (an MCP server's: `RecordedRuntime.taken`).

    Raises:
        UsageError: Not a snapshot, a malformed field or definition (nothing is restored).
        SnapshotMismatchError: Another snapshot version, or a recorded runtime tool's name
            is taken by a tool of another origin.
    """
    record = checked(data)["tools"]
    return recorded_runtime(record["definitions"], tools.registry, record.get("definition_digests"))


def _check_tools(
    tools: SessionTools, data: SnapshotForm, coming: Sequence[Tool], gone: RecordedWithdrawn
) -> None:
    _, fingerprint, made = _tool_sets(tools, coming, False, gone)  # names: to say what differs
    recorded = data["tools"]
    if recorded["fingerprint"] != fingerprint:
        names, digests = recorded["names"], recorded.get("digests")
        now = _tool_sets(tools, coming, gone=gone)[0]
        digests = digests if digests and len(digests) == len(names) else None  # older: none
        had = dict(zip(names, digests, strict=True)) if digests else dict.fromkeys(names)
        here = now if digests else dict.fromkeys(now)  # (then by name only)
        fix = "register the same tools (with the same definitions) before restore()"
        refuse_other("registered tools", had, here, fix, alike="same names, other definitions")
    known = {t.name for t in tools.toolkits}
    kits = [k for k in data["loaded_toolkits"] if k not in known]
    if kits:
        raise SnapshotMismatchError(
            f"the snapshot loaded toolkits {kits} that are not registered; register_toolkits() "
            "them before restore()",
            missing=tuple(kits),
        )
    check_tools_shape(recorded.get("shape"), tools)
    absent = sorted(set(recorded["runtime"]) - {tools.registry.wire_name_for(t) for t in made})
    if absent:
        raise SnapshotMismatchError(
            f"runtime tools {absent} are not registered; register_runtime_tool() them before "
            "restore()",
            missing=tuple(absent),
        )


def snapshot_of_text(text: str | bytes | bytearray, floats: list[str] | None = None) -> Any:
    """A snapshot's JSON text read as JSON (NaN and the infinities refused).

    `floats`, when given, gets the text of each float read (`strict_loads`).

    Raises:
        UsageError: Not JSON text (``json``'s reason); nothing is restored.
    """
    try:  # a str led by a byte-order mark: read as bytes with one are
        body = text[1:] if isinstance(text, str) and text[:1] == "\ufeff" else text
        return strict_loads(body, floats)
    except (ValueError, RecursionError) as exc:
        reason = json_reason(exc)
        raise UsageError(f"snapshot text is not JSON: {reason}; nothing was restored") from None


def read_snapshot(
    data: object,
    *,
    tools: SessionTools,
    coming: Sequence[Tool] = (),
    gone: RecordedWithdrawn = _NONE,
    signed: bool = False,
    owned: bool = False,
) -> SessionState:
    """The `SessionState` of a snapshot's data, after checking it against the session.

    Everything is checked before the caller changes anything; the policy fields are left
    to the caller (the host's, `contextchef.exposure._restore`).

    Raises:
        SnapshotMismatchError: Unsupported version, different tools, unknown toolkits or
            runtime tools.
        UsageError: Not a snapshot, or a malformed field (named, with what is valid).
        CorruptHistoryError: The recorded history is malformed.
    """
    snapshot = checked(data)
    _check_tools(tools, snapshot, coming, gone)
    with restore_errors(snapshot):  # a digest mismatch's cause named, deep nesting refused
        return SessionState.from_dict(snapshot, signed=signed, owned=owned)


def read_skills(data: object, *, tools: SessionTools) -> tuple[Skill, ...]:
    """The skills the session has once `data` (a snapshot) is restored.

    The snapshot's skills, checked against the session: they must equal the skills
    registered, if any, and their tools must be registered. Changes nothing.

    Raises:
        SnapshotMismatchError: Other skills are registered, a skill's tool or a loaded
            skill is missing.
        UsageError: Not a snapshot, a malformed skill, or one whose name is taken here.
    """
    snapshot = checked(data)
    current = tools.skills
    try:
        recorded = tuple(
            sorted((parse_skill(item) for item in snapshot["skills"]), key=lambda s: s.name)
        )
    except UsageError as exc:
        raise UsageError(f"snapshot field 'skills': {exc}; nothing was restored") from exc
    fix = "register the same skills, or none (the snapshot brings its own), before restore()"
    named = {s.name: s for s in recorded}, {s.name: s for s in current}
    if current:  # the skills whose names or definitions differ, named
        refuse_other("registered skills", *named, fix)
    absent = sorted(
        {w for s in recorded for w in s.tools if tools.registry.by_wire_name(w) is None}
    )
    if absent:
        raise SnapshotMismatchError(
            f"the snapshot's skills hold tools {absent} that are not registered; register "
            "them before restore()",
            missing=tuple(absent),
        )
    skills = recorded if current else resolve_skills(recorded, tools)
    unknown = sorted(set(snapshot["loaded_skills"]) - {s.name for s in skills})
    if unknown:
        raise SnapshotMismatchError(
            f"the snapshot loaded skills {unknown} that this session does not have; register "
            "them before restore()",
            missing=tuple(unknown),
        )
    return skills
