"""`SessionState`: the data of one session, whose JSON form is the snapshot (session layer).

Everything that decides the next compile and is *data* lives here: system prompt, history,
exposure patterns, the mode and pruning whitelist, blocklist, loaded tools, toolkits and skills,
the last strategy, announcements, dynamic state, the anchor line and breakpoint flag, a
pending handoff. `SessionState.to_dict` is the snapshot body and `SessionState.from_dict`
checks every field before building a new state, so a corrupt snapshot changes nothing.

Code is not state: tools and handlers, hooks, event handlers and the implicit-context
hook stay with the objects that own them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args

from contextchef._errors import UsageError, shown
from contextchef._json import is_unicode
from contextchef.exposure._policy import ExposurePolicy, Mode
from contextchef.history._messages import Message, check_message, message_from_dict
from contextchef.providers import TARGETS
from contextchef.session._ledger import Ledger
from contextchef.session._strategies import STRATEGIES
from contextchef.session._volatile import (
    Announcement,
    Channel,
    dynamic_state_data,
    render_dynamic_state,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["SessionState", "check_shape", "checked_history", "mode_from_dict"]

_LEGACY_STRATEGY = {True: "anthropic-native", False: "client"}


@dataclass(kw_only=True)
class SessionState:
    """The session's data (see the module docstring). Mutated only by the session."""

    system: str = ""
    history: tuple[Message, ...] = ()
    default_defer: bool = False
    defer: tuple[str, ...] = ()
    pin: tuple[str, ...] = ()
    mode: Mode | None = None
    """The mode chosen with ``set_mode`` (None: every tool)."""
    whitelist: Mode | None = None
    """An applied pruning result; it narrows `mode`, never replaces it."""
    blocked: tuple[str, ...] = ()
    loaded: set[str] = field(default_factory=set)
    """Wire names whose schemas the model loaded with ``tool_search`` or a toolkit load."""
    loaded_toolkits: tuple[str, ...] = ()
    loaded_skills: tuple[str, ...] = ()
    """Names of the skills loaded (by the model or the host), sorted."""
    strategy: str = "client"
    """The strategy of the last compile (the gate allows what it sent)."""
    target: str | None = None
    """The target of the last compile (whose provider-side search results count)."""
    model: str | None = None
    """The model of the last native compile (whose rules say how loads are revealed)."""
    announcements: dict[str, Announcement] = field(default_factory=dict)
    dynamic_state: BaseModel | Mapping[str, Any] | None = None
    anchor: str = ""
    system_breakpoint: bool = False
    new_context_pending: bool = False
    ledgers: dict[str, Ledger] = field(default_factory=dict)
    """What each target was sent (see `contextchef.session._ledger`)."""
    compiled: str | None = None
    """The target of the last compile (its ledger gets the next response's id)."""
    withdrawn: dict[str, str] = field(default_factory=dict)
    """Wire name -> why: tools their source took back (an MCP server removed them or
    disconnected). Not in snapshots: the source says it again when it reconnects."""

    def policy(self) -> ExposurePolicy:
        """The exposure policy: patterns, then the mode and whitelist (intersected)."""
        modes = tuple(m for m in (self.mode, self.whitelist) if m is not None)
        return ExposurePolicy(
            default_defer=self.default_defer, defer=self.defer, pin=self.pin, modes=modes
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``json.dumps`` works on it)."""
        data = self.dynamic_state
        return {
            "system": self.system,
            "history": [m.to_dict() for m in self.history],
            "exposure": {
                "default_defer": self.default_defer,
                "defer": list(self.defer),
                "pin": list(self.pin),
            },
            "mode": self.mode.name if self.mode else None,
            "whitelist": self.whitelist.to_dict() if self.whitelist else None,
            "blocked": list(self.blocked),
            "loaded_tools": sorted(self.loaded),
            "loaded_toolkits": list(self.loaded_toolkits),
            "loaded_skills": list(self.loaded_skills),
            "strategy": self.strategy,
            "target": self.target,
            "model": self.model,
            "announcements": [a.to_dict() for a in self.announcements.values()],
            "dynamic_state": None if data is None else dynamic_state_data(data),
            "anchor": self.anchor,
            "system_channel_breakpoint": self.system_breakpoint,
            "new_context_pending": self.new_context_pending,
            "ledgers": {t: ledger.to_dict() for t, ledger in sorted(self.ledgers.items())},
            "compiled": self.compiled,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, modes: Mapping[str, Mode]) -> SessionState:
        """Build a state from `to_dict` output, checking every field first.

        Args:
            data: The snapshot body.
            modes: The modes defined in the session, by name.

        Raises:
            UsageError: A field has the wrong type or shape (named in the message).
            SnapshotMismatchError: Raised by the caller for unknown modes.
            CorruptHistoryError: The history is malformed.
        """
        check_shape(data)
        exposure = data.get("exposure") or {}
        # snapshots written before strategies were recorded have a native_search flag
        strategy = data.get("strategy") or _LEGACY_STRATEGY[bool(data.get("native_search"))]
        name = data.get("mode")
        history = checked_history(data.get("history") or ())
        ledgers = {
            target: Ledger.from_dict(raw, history, name=target)
            for target, raw in (data.get("ledgers") or {}).items()
        }
        return cls(
            system=data.get("system", ""),
            history=history,
            default_defer=bool(exposure.get("default_defer", False)),
            defer=tuple(exposure.get("defer") or ()),
            pin=tuple(exposure.get("pin") or ()),
            mode=modes[name] if name is not None else None,
            whitelist=mode_from_dict(data.get("whitelist")),
            blocked=tuple(data.get("blocked") or ()),
            loaded=set(data.get("loaded_tools") or ()),
            loaded_toolkits=tuple(data.get("loaded_toolkits") or ()),
            loaded_skills=tuple(sorted(set(data.get("loaded_skills") or ()))),
            strategy=strategy,
            target=data.get("target"),
            model=data.get("model") if data.get("target") is not None else None,
            announcements=_announcements(data.get("announcements")),
            dynamic_state=data.get("dynamic_state"),
            anchor=data.get("anchor") or "",
            system_breakpoint=bool(data.get("system_channel_breakpoint", False)),
            new_context_pending=bool(data.get("new_context_pending", False)),
            ledgers=ledgers,
            compiled=data.get("compiled"),
        )

    def copy(self) -> SessionState:
        """A copy whose containers are not shared with this state."""
        return dataclasses.replace(
            self,
            loaded=set(self.loaded),
            announcements=dict(self.announcements),
            ledgers=dict(self.ledgers),
        )

    def adopt(self, other: SessionState) -> None:
        """Take every field of `other` in place (a restore or a rollback).

        The session's parts hold this one object, so it is changed, never replaced.
        """
        for item in dataclasses.fields(self):
            setattr(self, item.name, getattr(other, item.name))


def mode_from_dict(raw: Any) -> Mode | None:
    """A `Mode` from `Mode.to_dict` output (None stays None)."""
    if raw is None:
        return None
    return Mode(
        name=raw["name"],
        include=tuple(raw.get("include", ())),
        read_only=bool(raw.get("read_only", False)),
        runtime=bool(raw.get("runtime", False)),
        library=bool(raw.get("library", raw.get("runtime", False))),
    )


def _strings(value: object) -> bool:
    """None, or a list of strings."""
    return value is None or (isinstance(value, list) and all(isinstance(x, str) for x in value))


def checked_history(messages: object) -> tuple[Message, ...]:
    """A history given as `Message` values or their `Message.to_dict` form, checked.

    Raises:
        UsageError: `messages` is not a list (or other iterable), or iterating it raised.
        CorruptHistoryError: An entry is malformed (its index is named).
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        hint = ""
        if type(messages).__name__ == "ParsedHistory":  # from_anthropic(...) and the like
            hint = (
                ": pass its .messages (and its .system, if any, to set_system_prompt), e.g. "
                "set_history(from_anthropic(stored).messages)"
            )
        raise UsageError(
            f"a history is a list of Message values, got {type(messages).__name__}{hint}"
        )
    try:
        given = list(messages)
    except Exception as exc:  # the caller's iterable raised: nothing is replaced
        raise UsageError(f"reading the history raised {type(exc).__name__}: {exc}") from exc
    out = []
    for i, item in enumerate(given):
        msg = message_from_dict(item, index=i) if isinstance(item, Mapping) else item
        check_message(msg, i)
        out.append(msg)
    return tuple(out)


def _announcements(raw: Any) -> dict[str, Announcement]:
    out: dict[str, Announcement] = {}
    for item in raw or ():
        channel = item.get("channel", "auto")
        if channel not in get_args(Channel):
            raise UsageError(
                f"snapshot announcement {shown(item.get('id'))}: bad channel {shown(channel)}"
            )
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
    "loaded_skills": (list,),
    "skills": (list,),
    "strategy": (str,),
    "target": (str, type(None)),
    "model": (str, type(None)),
    "native_search": (bool,),
    "announcements": (list,),
    "dynamic_state": (dict, type(None)),
    "anchor": (str, type(None)),
    "system_channel_breakpoint": (bool,),
    "new_context_pending": (bool,),
    "tools": (dict,),
    "ledgers": (dict,),
    "compiled": (str, type(None)),
}


def check_shape(data: Mapping[str, Any]) -> None:
    """Every field has the type `SessionState.to_dict` writes, before anything is built.

    Raises:
        UsageError: The first malformed field, named, with what it must be.
    """
    for key, types in _SHAPE.items():
        if key in data and not isinstance(data[key], types):
            wanted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise UsageError(
                f"snapshot field {shown(key)} must be {wanted}, got {type(data[key]).__name__}; "
                "nothing was restored"
            )
    for key in ("blocked", "loaded_tools", "loaded_toolkits", "loaded_skills"):
        if not all(isinstance(x, str) for x in data.get(key) or ()):
            raise UsageError(f"snapshot field {shown(key)} must hold strings; nothing was restored")
    exposure = data.get("exposure") or {}
    if not isinstance(exposure.get("default_defer", False), bool) or not all(
        _strings(exposure.get(k)) for k in ("defer", "pin")
    ):
        raise UsageError("snapshot field 'exposure' is malformed; nothing was restored")
    whitelist = data.get("whitelist")
    if whitelist is not None and (
        not isinstance(whitelist.get("name"), str) or not _strings(whitelist.get("include"))
    ):
        raise UsageError(
            "snapshot field 'whitelist' needs a 'name' and string 'include' patterns; "
            "nothing was restored"
        )
    texts = [data.get("system") or "", data.get("anchor") or ""]
    texts += [t for a in data.get("announcements") or () if isinstance(a, dict) for t in a.values()]
    if not all(is_unicode(t) for t in texts if isinstance(t, str)):
        raise UsageError(
            "snapshot text (system, anchor or announcements) is not valid Unicode; nothing "
            "was restored"
        )
    if data.get("strategy", "client") not in STRATEGIES:
        raise UsageError(
            f"snapshot field 'strategy' must be one of {sorted(STRATEGIES)}; nothing was restored"
        )
    for name in data.get("ledgers") or {}:
        if name not in TARGETS:
            raise UsageError(
                f"snapshot field 'ledgers' has a ledger for {shown(name, 40)}; targets are "
                f"{list(TARGETS)}; nothing was restored"
            )
    if data.get("compiled") is not None and data["compiled"] not in TARGETS:
        raise UsageError(
            f"snapshot field 'compiled' must be one of {list(TARGETS)} or null; nothing was "
            "restored"
        )
    if data.get("target") is not None and data["target"] not in TARGETS:
        raise UsageError(
            f"snapshot field 'target' must be one of {list(TARGETS)} or null; nothing was restored"
        )
    tools = data.get("tools") or {}
    if not all(_strings(tools.get(k)) for k in ("names", "runtime")) or not isinstance(
        tools.get("fingerprint", ""), str
    ):
        raise UsageError("snapshot field 'tools' is malformed; nothing was restored")
    state = data.get("dynamic_state")
    if state is not None:
        render_dynamic_state(state)  # NaN or Infinity would break every later compile
    for item in data.get("announcements") or ():
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("id"), str)
            or not isinstance(item.get("content"), str)
        ):
            raise UsageError(
                "snapshot announcements need string 'id' and 'content'; nothing was restored"
            )
