"""Session snapshots: `take_snapshot` / `restore_snapshot` (chef layer).

A snapshot is a plain JSON dict (``json.dumps`` works on it) of everything that
determines the next compile and is *data*: system prompt, history (`Message.to_dict`),
exposure patterns, mode and pruning whitelist, blocklist, loaded tools and toolkits,
announcements, dynamic state, anchor line, and the system-channel breakpoint.

Code is not in a snapshot: tools and their handlers, namespaces, toolkits, runtime tools,
hooks, event handlers and the implicit-context hook. Restore into a `ContextChef` built
with the same constructor arguments, after registering the same tools, namespaces and
toolkits (and any runtime tools that were not loaded from a toolkit); loaded toolkits are
loaded again by `restore_snapshot`. The snapshot records a fingerprint of the registered
tools: on a mismatch, restore raises `SnapshotMismatchError` naming the missing and
unexpected tools, and changes nothing.

A snapshot without an ``announcements`` field (taken before announcements existed)
restores to no announcements; a missing ``dynamic_state`` to none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, get_args

from contextchef._errors import SnapshotMismatchError, UsageError
from contextchef.exposure._policy import Mode
from contextchef.session._volatile import Announcement, Channel, dynamic_state_data
from contextchef.tools._tool import Tool

if TYPE_CHECKING:
    from contextchef.session._chef import ContextChef

__all__ = [
    "SNAPSHOT_FORMAT",
    "SNAPSHOT_VERSION",
    "restore_snapshot",
    "take_snapshot",
]

SNAPSHOT_FORMAT = "contextchef.snapshot"
SNAPSHOT_VERSION = 1


def _mode_dict(mode: Mode | None) -> dict[str, Any] | None:
    if mode is None:
        return None
    return {
        "name": mode.name,
        "include": list(mode.include),
        "read_only": mode.read_only,
        "runtime": mode.runtime,
    }


def _mode_from(raw: Any) -> Mode | None:
    if raw is None:
        return None
    return Mode(
        name=raw["name"],
        include=tuple(raw.get("include", ())),
        read_only=bool(raw.get("read_only", False)),
        runtime=bool(raw.get("runtime", False)),
    )


def _is_kit_tool(chef: ContextChef, tool: Tool) -> bool:
    return any(tool in tools for tools in chef._kits_loaded.values())


def _tool_sets(chef: ContextChef) -> tuple[list[str], str, list[str]]:
    """(registered wire names, their fingerprint, runtime wire names not from toolkits)."""
    registry = chef.registry
    static = [t for t in registry.tools if t.source != "runtime"]
    runtime = [t for t in registry.tools if t.source == "runtime" and not _is_kit_tool(chef, t)]
    return (
        sorted(registry.wire_name_for(t) for t in static),
        registry.fingerprint(static),
        sorted(registry.wire_name_for(t) for t in runtime),
    )


def take_snapshot(chef: ContextChef) -> dict[str, Any]:
    """A versioned, JSON-serializable dict of the session's data (see the module doc)."""
    names, fingerprint, runtime = _tool_sets(chef)
    policy = chef._policy
    state = chef._volatile
    whitelist = policy.mode if policy.mode is not chef.base_mode else None
    return {
        "format": SNAPSHOT_FORMAT,
        "version": SNAPSHOT_VERSION,
        "system": chef._system,
        "history": [m.to_dict() for m in chef.history],
        "exposure": {
            "default_defer": policy.default_defer,
            "defer": list(policy.defer),
            "pin": list(policy.pin),
        },
        "mode": chef.base_mode.name if chef.base_mode else None,
        "whitelist": _mode_dict(whitelist),
        "blocked": list(chef.blocked_tools),
        "loaded_tools": list(chef.loaded_tools),
        "loaded_toolkits": list(chef.loaded_toolkits),
        "native_search": chef._native,
        "announcements": [a.to_dict() for a in chef.get_announcements()],
        "dynamic_state": (
            None if state.dynamic_state is None else dynamic_state_data(state.dynamic_state)
        ),
        "anchor": state.anchor,
        "system_channel_breakpoint": state.system_breakpoint,
        "new_context_pending": chef.new_context_pending,
        "tools": {"fingerprint": fingerprint, "names": names, "runtime": runtime},
    }


def _check_header(data: Mapping[str, Any]) -> None:
    if not isinstance(data, Mapping) or data.get("format") != SNAPSHOT_FORMAT:
        raise UsageError(
            f"not a contextchef snapshot (expected a dict with format {SNAPSHOT_FORMAT!r}, "
            "as returned by ContextChef.snapshot())"
        )
    if data.get("version") != SNAPSHOT_VERSION:
        raise SnapshotMismatchError(
            f"snapshot version {data.get('version')!r} is not supported; this contextchef "
            f"reads version {SNAPSHOT_VERSION}"
        )


def _check_tools(chef: ContextChef, data: Mapping[str, Any]) -> None:
    names, fingerprint, runtime = _tool_sets(chef)
    recorded = data.get("tools") or {}
    if recorded.get("fingerprint") != fingerprint:
        want = set(recorded.get("names") or ())
        missing, extra = tuple(sorted(want - set(names))), tuple(sorted(set(names) - want))
        detail = (
            f"missing {list(missing)}, unexpected {list(extra)}"
            if want != set(names)
            else ("same names, different definitions")
        )
        raise SnapshotMismatchError(
            f"the registered tools differ from the snapshot's ({detail}); register the same "
            "tools (with the same definitions) before restore()",
            missing=missing,
            unexpected=extra,
        )
    known = {t.name for t in chef.toolkits}
    kits = [k for k in data.get("loaded_toolkits") or () if k not in known]
    if kits:
        raise SnapshotMismatchError(
            f"the snapshot loaded toolkits {kits} that are not registered; register_toolkits() "
            "them before restore()",
            missing=tuple(kits),
        )
    absent = sorted(set(recorded.get("runtime") or ()) - set(runtime))
    if absent:
        raise SnapshotMismatchError(
            f"runtime tools {absent} are not registered; register_runtime_tool() them before "
            "restore()",
            missing=tuple(absent),
        )
    for key in ("mode",):
        name = data.get(key)
        if name is not None and name not in chef._modes:
            raise SnapshotMismatchError(
                f"the snapshot's mode {name!r} is not defined in this session; pass it in "
                f"ContextChef(modes=...) (defined: {sorted(chef._modes)})",
                missing=(name,),
            )


def _announcements(raw: Any) -> dict[str, Announcement]:
    out: dict[str, Announcement] = {}
    for item in raw or ():
        channel = item.get("channel", "auto")
        if channel not in get_args(Channel):
            raise UsageError(f"snapshot announcement {item.get('id')!r}: bad channel {channel!r}")
        out[item["id"]] = Announcement(id=item["id"], content=item["content"], channel=channel)
    return out


_SHAPE: dict[str, tuple[type, ...]] = {
    "system": (str,),
    "history": (list,),
    "exposure": (dict,),
    "mode": (str, type(None)),
    "whitelist": (dict, type(None)),
    "blocked": (list,),
    "loaded_tools": (list,),
    "loaded_toolkits": (list,),
    "native_search": (bool,),
    "announcements": (list,),
    "dynamic_state": (dict, type(None)),
    "anchor": (str, type(None)),
    "system_channel_breakpoint": (bool,),
    "new_context_pending": (bool,),
    "tools": (dict,),
}


def _check_shape(data: Mapping[str, Any]) -> None:
    """Every field has the type `take_snapshot` writes, before anything is changed."""
    for key, types in _SHAPE.items():
        if key in data and not isinstance(data[key], types):
            wanted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise UsageError(
                f"snapshot field {key!r} must be {wanted}, got {type(data[key]).__name__}; "
                "nothing was restored"
            )
    for key in ("blocked", "loaded_tools", "loaded_toolkits"):
        if not all(isinstance(x, str) for x in data.get(key) or ()):
            raise UsageError(f"snapshot field {key!r} must hold strings; nothing was restored")
    exposure = data.get("exposure") or {}
    if not isinstance(exposure.get("default_defer", False), bool) or not all(
        isinstance(p, str) for k in ("defer", "pin") for p in exposure.get(k) or ()
    ):
        raise UsageError("snapshot field 'exposure' is malformed; nothing was restored")
    whitelist = data.get("whitelist")
    if whitelist is not None and not isinstance(whitelist.get("name"), str):
        raise UsageError("snapshot field 'whitelist' needs a 'name'; nothing was restored")
    for item in data.get("announcements") or ():
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("id"), str)
            or not isinstance(item.get("content"), str)
        ):
            raise UsageError(
                "snapshot announcements need string 'id' and 'content'; nothing was restored"
            )


def restore_snapshot(chef: ContextChef, data: Mapping[str, Any]) -> None:
    """Make `chef`'s data what `data` (from `take_snapshot`) recorded.

    Everything is checked before anything changes.

    Raises:
        SnapshotMismatchError: Unsupported version, different tools, unknown toolkits,
            runtime tools or mode.
        UsageError: Not a snapshot.
        CorruptHistoryError: The recorded history is malformed.
    """
    _check_header(data)
    _check_shape(data)
    _check_tools(chef, data)
    announcements = _announcements(data.get("announcements"))
    exposure = data.get("exposure") or {}
    mode = data.get("mode")
    base = chef._modes[mode] if mode is not None else None
    whitelist = _mode_from(data.get("whitelist"))
    history = list(data.get("history") or ())
    chef.set_history(history)  # validates; raises before other state changes
    chef.set_system_prompt(data.get("system", ""))
    pending = len(chef._additions)
    for kit in data.get("loaded_toolkits") or ():
        chef.load_toolkit(kit)
    del chef._additions[pending:]  # toolkit loads made by restore are not news to announce
    chef._base_mode = base
    chef._policy = dataclasses.replace(
        chef._policy,
        default_defer=bool(exposure.get("default_defer", False)),
        defer=tuple(exposure.get("defer", ())),
        pin=tuple(exposure.get("pin", ())),
        mode=whitelist or base,
    )
    chef._invalidate()
    chef.set_blocked_tools(list(data.get("blocked") or ()))
    chef._loaded = set(data.get("loaded_tools") or ())
    chef._native = bool(data.get("native_search", False))
    state = chef._volatile
    state.announcements = announcements
    state.dynamic_state = data.get("dynamic_state")
    state.anchor = data.get("anchor", state.anchor) or ""
    state.system_breakpoint = bool(data.get("system_channel_breakpoint", False))
    chef._new_context_pending = bool(data.get("new_context_pending", False)) and (
        chef._owned.handoff is not None
    )
