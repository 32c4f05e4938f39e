"""Policy on restore: the host's code decides it, a snapshot only reports (exposure layer).

A snapshot is data: the history, what was sent, what the model loaded. What the model may
call is configuration the host's code sets: the blocklist, the mode and a pruning
whitelist, the ``defer`` / ``pin`` patterns and ``default_defer``, and the strategy the gate
judges reachability by (the host passes it to every compile). `restore_policy` keeps the
session's values of those fields and lists every field where the snapshot said otherwise
(`PolicyDifference`), so a snapshot someone edited cannot widen what the model may call.

With ``narrow=True`` the host asks the snapshot to narrow the policy, never to widen it:
its blocklist patterns are added to the session's, and its mode and whitelist are taken
where the session has none (a mode or whitelist only ever hides tools). ``defer``, ``pin``,
``default_defer`` and the strategy stay the session's either way.

The system prompt is the one exception: it opens the conversation's cached prefix, so the
snapshot's is kept (changing it under the history would break the prefix unannounced),
and a session that had set another one gets a ``system`` difference saying so. To change
it on purpose, call ``set_system_prompt`` after the restore: the next compile reports that
edit.

`allowed_loads` does the same for what a snapshot says was loaded: a tool the session's
policy hides or blocks is not restored as loaded, and from an unsigned snapshot, under
``require_search``, neither is a deferred tool the restored history does not show found
(a forged load). The history of an unsigned snapshot is data too: one forged together
with a search result naming the tool passes; only a signature rules that out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from contextchef._errors import check_flag
from contextchef.exposure._policy import Mode, matches
from contextchef.tools._tool import Tool

__all__ = [
    "PolicyDifference",
    "PolicyValues",
    "allowed_loads",
    "loadable_toolkits",
    "restore_policy",
]


@dataclass(frozen=True, kw_only=True)
class PolicyValues:
    """The policy fields of a session (as `contextchef.session._state.SessionState` holds them).

    ``system`` (the system prompt) is read like them, but restore keeps the snapshot's.
    """

    default_defer: bool = False
    defer: tuple[str, ...] = ()
    pin: tuple[str, ...] = ()
    mode: Mode | None = None
    whitelist: Mode | None = None
    blocked: tuple[str, ...] = ()
    strategy: str = "client"
    system: str = ""

    @classmethod
    def of(cls, holder: object) -> PolicyValues:
        """The policy fields read from `holder`'s attributes of the same names."""
        return cls(**{f.name: getattr(holder, f.name) for f in fields(cls)})

    def apply_to(self, holder: object) -> None:
        """Set these values on `holder`'s attributes of the same names."""
        for f in fields(self):
            setattr(holder, f.name, getattr(self, f.name))


@dataclass(frozen=True, kw_only=True)
class PolicyDifference:
    """A policy field where a restored snapshot differed from the session.

    Attributes:
        field: The snapshot field (``blocked``, ``mode``, ``whitelist``, ``exposure.defer``,
            ``exposure.pin``, ``exposure.default_defer``, ``strategy``, ``loaded_tools``,
            ``loaded_toolkits``, ``system``: the session had set another system prompt;
            ``DeferredConfig.<limit>``: built with another limit the tools segment is
            rendered under, `contextchef.deferred._shape.limit_differences`).
        session: The session's value (JSON form; for loads, what was restored).
        snapshot: The snapshot's value (JSON form).
        kept: ``"session"`` (the snapshot's value was not taken) or ``"snapshot"`` (taken
            because it narrows and the host passed ``narrow=True``, or the system prompt).
    """

    field: str
    session: Any
    snapshot: Any
    kept: Literal["session", "snapshot"]

    def __str__(self) -> str:
        how = _SYSTEM_HINT if self.field == "system" else ""
        return (
            f"{self.field}: snapshot {self.snapshot!r:.200}, session {self.session!r:.200} "
            f"(kept the {self.kept}'s{how})"
        )


_SYSTEM_HINT = (
    ": the conversation's prompt opens its cached prefix; to change it, call "
    "set_system_prompt after loading, an edit the next compile reports"
)


def _mode_json(mode: Mode | None) -> Any:
    return None if mode is None else mode.to_dict()


def _session_json(values: PolicyValues) -> dict[str, Any]:
    return {
        "exposure.default_defer": values.default_defer,
        "exposure.defer": list(values.defer),
        "exposure.pin": list(values.pin),
        "mode": values.mode.name if values.mode else None,
        "whitelist": _mode_json(values.whitelist),
        "blocked": list(values.blocked),
        "strategy": values.strategy,
        "system": values.system,
    }


def _snapshot_json(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    exposure = snapshot["exposure"]
    return {
        "exposure.default_defer": exposure["default_defer"],
        "exposure.defer": list(exposure["defer"]),
        "exposure.pin": list(exposure["pin"]),
        "mode": snapshot["mode"],
        "whitelist": snapshot["whitelist"],
        "blocked": list(snapshot["blocked"]),
        "strategy": snapshot["strategy"],
        "system": snapshot["system"],
    }


def _narrowed(
    session: PolicyValues, snapshot: Mapping[str, Any], modes: Mapping[str, Mode]
) -> PolicyValues:
    """`session` narrowed by the snapshot's blocklist, mode and whitelist (never widened)."""
    blocked = (*session.blocked, *(p for p in snapshot["blocked"] if p not in session.blocked))
    name, raw = snapshot["mode"], snapshot["whitelist"]
    mode = session.mode if session.mode is not None or name is None else modes.get(name)
    whitelist = session.whitelist
    if whitelist is None and raw is not None:
        whitelist = Mode.from_dict(raw)
    return replace(session, blocked=blocked, mode=mode, whitelist=whitelist)


def restore_policy(
    session: PolicyValues,
    snapshot: Mapping[str, Any],
    *,
    modes: Mapping[str, Mode],
    narrow: bool = False,
) -> tuple[PolicyValues, tuple[PolicyDifference, ...]]:
    """The policy a restored session has, and where the snapshot differed.

    Args:
        session: The session's policy before the restore (what the host's code set).
        snapshot: A snapshot checked against its form (``exposure``, ``mode``,
            ``whitelist``, ``blocked``, ``strategy``).
        modes: The session's modes by name (a narrowing snapshot's mode must be one).
        narrow: Let the snapshot narrow the policy (see the module docstring).

    Raises:
        UsageError: `narrow` is not a bool.

    Returns:
        The policy to restore, and one `PolicyDifference` per field the snapshot differed
        in, in a fixed order (``system`` only when the session had set a prompt).
    """
    kept = _narrowed(session, snapshot, modes) if check_flag("narrow", narrow) else session
    kept = replace(kept, system=snapshot["system"])  # the conversation's (module docstring)
    before, recorded, after = _session_json(session), _snapshot_json(snapshot), _session_json(kept)
    differences = tuple(
        PolicyDifference(
            field=name,
            session=before[name],
            snapshot=recorded[name],
            kept="session" if after[name] == before[name] else "snapshot",
        )
        for name in before
        if recorded[name] != before[name] and (name != "system" or before[name])
    )
    return kept, differences


def loadable_toolkits(
    kits: Sequence[str], blocked: Sequence[str], loader: str
) -> tuple[tuple[str, ...], tuple[PolicyDifference, ...]]:
    """(kept, differences): a snapshot's loaded toolkits, if the model could load them now.

    It could unless the `loader` tool is blocked; their tools then pass `allowed_loads`.
    """
    if not kits or not matches(blocked, (loader,)):
        return tuple(kits), ()
    note = PolicyDifference(
        field="loaded_toolkits", session=[], snapshot=list(kits), kept="session"
    )
    return (), (note,)


def allowed_loads(
    names: Iterable[str],
    find: Callable[[str], Tool | None],
    exposure: Mapping[Any, str],
    blocked: Sequence[str],
    found: Collection[str] | None = None,
) -> tuple[set[str], tuple[PolicyDifference, ...]]:
    """(kept, differences): a snapshot's loaded wire names, less those the policy closes.

    Args:
        names: The loaded wire names.
        find: The registered tool of a wire name, or None.
        exposure: The session's exposure by tool key (``hidden``: the mode or whitelist
            hides it; ``deferred``: ``require_search`` governs its load).
        blocked: The blocklist, tried on the wire name and the tool's own name.
        found: Under ``require_search``, the wire names the restored history shows were
            found (a ``tool_search`` result, a loaded skill or toolkit): a deferred
            tool's load is kept only if it is among them. None: loads are not checked
            against the history (a signed snapshot, or no ``require_search``).
    """
    recorded = sorted(names)
    kept = set()
    for name in recorded:
        tool = find(name)
        own = (name,) if tool is None else (name, tool.name)
        shown = None if tool is None else exposure.get(tool.key)
        unfound = shown == "deferred" and found is not None and name not in found
        if shown != "hidden" and not unfound and not matches(blocked, own):
            kept.add(name)
    if len(kept) == len(recorded):
        return kept, ()
    note = PolicyDifference(
        field="loaded_tools", session=sorted(kept), snapshot=recorded, kept="session"
    )
    return kept, (note,)
