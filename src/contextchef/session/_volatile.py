"""Volatile session state: announcements, dynamic state, implicit context, memories (session layer).

Everything here is *state*, never written into the user's history. Since what was sent is
never re-rendered (the ledger, `contextchef.session._ledger`), a change is stated as an
**update appended at the end** of the request, and the update stays where it was sent:

* the **user text** update is one text part after everything else in the user message
  being sent (after its tool results): the changed ``<dynamic_state>``,
  ``<implicit_context>`` and ``user_tail`` announcements blocks, then the anchor line
  (only when dynamic state or announcements are in it);
* the **system** update holds the ``system``-channel announcements, as a
  mid-conversation system entry after that user message where the target model takes
  one (`ModelRules.system_messages`), otherwise inside the user text update;
* **memories** (text the model, or someone else, can edit) come in as the result of a
  ``read_memories`` call appended after the user message: text others can edit belongs
  in a tool result, not in system or user text
  (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/change-tools-or-instructions).

Each kind is compared with what this target's ledger last stated (`Stated`): unchanged
kinds are not repeated; a kind that went away is stated as gone (a retracted
announcement set, cleared dynamic state), so the model is told the current state from
then on ("state, not event"). Channel ``auto`` resolves by the target's profile
(`Profile.announcement_channel`: ``system`` on Anthropic, ``user_tail`` elsewhere).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from contextchef._echo import printed
from contextchef._errors import UsageError, json_reason, shown
from contextchef._json import is_unicode
from contextchef.providers import CacheReport, ResponseNotice
from contextchef.session._request import CompiledRequest

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "GONE",
    "Announcement",
    "Channel",
    "CompileEvent",
    "EventName",
    "Stated",
    "Update",
    "VolatileState",
    "check_dynamic_state",
    "new_announcement",
    "plan_update",
    "render_announcements",
    "render_dynamic_state",
]

Channel = Literal["auto", "user_tail", "system"]
"""Where an announcement renders (see the module docstring)."""

EventName = Literal["compile:start", "compile:done", "response:notice", "response:cache"]
"""Session events for `ContextChef.on`: the compile lifecycle, each notice an ingested
response carries (Anthropic's dropped thinking, cache-miss reasons), its `CacheReport`."""


@dataclass(frozen=True, kw_only=True)
class Announcement:
    """A standing statement of the current capability set (see `ContextChef.announce`)."""

    id: str
    """Key for upserts and retraction."""
    content: str
    """The statement, shown verbatim. State facts; do not command."""
    channel: Channel = "auto"
    """``auto``, ``user_tail`` or ``system``."""

    def to_dict(self) -> dict[str, str]:
        """``{"id", "content", "channel"}``."""
        return {"id": self.id, "content": self.content, "channel": self.channel}


@dataclass(frozen=True, kw_only=True)
class CompileEvent:
    """What a compile event handler receives."""

    name: EventName
    """``compile:start`` (before anything is rendered), ``compile:done``, or
    ``response:notice`` / ``response:cache`` (from `ContextChef.ingest`)."""
    target: str
    """The compile target (for a notice: the target of the last compile, or ``""``)."""
    request: CompiledRequest | None = None
    """The compiled request (``compile:done`` only)."""
    notice: ResponseNotice | None = None
    """What the response reported (``response:notice`` only)."""
    cache: CacheReport | None = None
    """The prompt cache's outcome for the request (``response:cache`` only)."""


EventHandler = Callable[[CompileEvent], object]


@dataclass(frozen=True, kw_only=True)
class Stated:
    """The volatile blocks as last stated to the model in one ledger (``""``: nothing)."""

    dynamic_state: str = ""
    implicit_context: str = ""
    announcements: str = ""
    """The ``user_tail`` channel's ``<announcements>`` block."""
    system: str = ""
    """The ``system`` channel's ``<announcements>`` block."""
    memories: str = ""

    def to_dict(self) -> dict[str, str]:
        """The non-empty fields."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Stated:
        """From `to_dict` output.

        Raises:
            UsageError: An unknown key or a value that is not text.
        """
        fields = {f.name for f in dataclasses.fields(cls)}
        for key, value in data.items():
            if key not in fields or not isinstance(value, str) or not is_unicode(value):
                raise UsageError(f"snapshot ledger: bad stated block {shown(key, 40)}")
        return cls(**data)


GONE: Mapping[str, str] = {
    "dynamic_state": "<dynamic_state>\nnull\n</dynamic_state>",
    "implicit_context": "<implicit_context>\n(none)\n</implicit_context>",
    "announcements": "<announcements>\n(none: earlier announcements no longer apply)\n"
    "</announcements>",
    "system": "<announcements>\n(none: earlier announcements no longer apply)\n</announcements>",
    "memories": "<memories>\n(no memories stored)\n</memories>",
}
"""How a kind that went away is stated (its earlier statement no longer applies)."""


@dataclass(frozen=True, kw_only=True)
class Update:
    """What one compile must state, relative to what its ledger stated before."""

    user_text: str = ""
    """One text part for the end of the user message being sent (``""``: none)."""
    user_kinds: tuple[str, ...] = ()
    """Blocks in `user_text`, e.g. ``("dynamic_state", "announcements")``."""
    system_text: str = ""
    """Text of a mid-conversation system entry (``""``: none)."""
    memories: str = ""
    """The ``<memories>`` block for a ``read_memories`` result (``""``: no change)."""
    stated: Stated = dataclasses.field(default_factory=Stated)
    """What will have been stated once this update is sent."""

    @property
    def empty(self) -> bool:
        """Nothing to state."""
        return not (self.user_text or self.system_text or self.memories)


def plan_update(
    before: Stated,
    now: Stated,
    *,
    system_entries: bool,
    memory_results: bool,
    anchor: str,
) -> Update:
    """The update that brings the model from `before` to `now`.

    Args:
        before: What the ledger stated last.
        now: The current blocks (see `VolatileState.current`).
        system_entries: The target model takes a mid-conversation system entry; if
            not, the ``system`` channel joins the user text.
        memory_results: Memories can come in as a ``read_memories`` result; if not,
            they join the user text.
        anchor: The anchor line (``""``: none).
    """

    def changed(kind: str) -> str:
        old, new = getattr(before, kind), getattr(now, kind)
        return "" if new == old else new or GONE[kind]  # "": unchanged

    pieces: list[str] = []
    kinds: list[str] = []
    for kind in ("dynamic_state", "implicit_context", "announcements"):
        text = changed(kind)
        if text:
            pieces.append(text)
            kinds.append(kind)
    system = changed("system")
    if system and not system_entries:
        pieces.append(system)
        kinds.append("announcements")
        system = ""
    memories = changed("memories")
    if memories and not memory_results:
        pieces.append(memories)
        kinds.append("memories")
        memories = ""
    if anchor and ("dynamic_state" in kinds or "announcements" in kinds):
        pieces.append(anchor)
    return Update(
        user_text="\n\n".join(pieces),
        user_kinds=tuple(dict.fromkeys(kinds)),
        system_text=system,
        memories=memories,
        stated=now,
    )


def _escape_attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def render_announcements(items: Sequence[Announcement]) -> str:
    """One ``<announcements>`` block, in the given order (``""`` for none)."""
    if not items:
        return ""
    body = "\n\n".join(
        f'<announcement id="{_escape_attr(a.id)}">\n{a.content}\n</announcement>' for a in items
    )
    return f"<announcements>\n{body}\n</announcements>"


def is_pydantic_model(value: object) -> bool:
    """Whether `value` is a pydantic model instance, without importing pydantic.

    A model instance exists only once pydantic has been imported, so a process that
    never imported it holds none (keeps pydantic out of ``import contextchef``).
    """
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def dynamic_state_data(state: BaseModel | Mapping[str, Any]) -> Any:
    """The JSON data of a dynamic state (a pydantic model's ``model_dump(mode="json")``).

    Raises:
        UsageError: The model cannot be dumped as JSON (a value of an arbitrary type,
            nesting past pydantic's depth); snapshots and compiles would all fail on it.
    """
    if not is_pydantic_model(state):
        return dict(cast("Mapping[str, Any]", state))
    try:
        return cast("BaseModel", state).model_dump(mode="json")
    except (TypeError, ValueError, RecursionError) as exc:  # pydantic's errors are these
        raise UsageError(f"dynamic state is not plain JSON: {json_reason(exc)}") from None


def render_dynamic_state(state: BaseModel | Mapping[str, Any]) -> str:
    """``<dynamic_state>`` with the state as JSON (keys sorted, 2-space indent, UTF-8).

    Raises:
        UsageError: The state holds NaN or infinity.
    """
    try:
        text = json.dumps(
            dynamic_state_data(state), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"dynamic state is not plain JSON: {json_reason(exc)}") from exc
    if not is_unicode(text):
        raise UsageError("dynamic state holds text that is not valid Unicode (a lone surrogate)")
    return f"<dynamic_state>\n{text}\n</dynamic_state>"


def new_announcement(id: str, content: str, channel: Channel) -> Announcement:
    """A checked `Announcement` (see `ContextChef.announce`).

    Raises:
        UsageError: An empty id, non-string content, or an unknown channel.
    """
    if not isinstance(id, str) or not id:
        raise UsageError(f"announcement id must be a non-empty string, got {shown(id)}")
    if not isinstance(content, str):
        raise UsageError(
            f"announcement {shown(id)}: content must be a string, got {type(content).__name__}"
        )
    if not is_unicode(id) or not is_unicode(content):
        raise UsageError(f"announcement {shown(id, 80)}: id and content must be valid Unicode")
    if not isinstance(channel, str) or channel not in get_args(Channel):
        raise UsageError(
            f"announcement {shown(id)}: unknown channel {shown(channel)}; valid: "
            + ", ".join(get_args(Channel))
        )
    return Announcement(id=id, content=content, channel=channel)


def check_dynamic_state(state: object) -> None:
    """Dynamic state is a pydantic model or None.

    Raises:
        UsageError: `state` is anything else.
    """
    if state is not None and not is_pydantic_model(state):
        raise UsageError(
            f"dynamic state must be a pydantic model or None, got {type(state).__name__}"
        )
    if state is not None:  # every compile and snapshot writes it: refused now, not later
        render_dynamic_state(cast("BaseModel", state))


class VolatileState:
    """The code behind a session's volatile tail (its data is in `SessionState`).

    The implicit-context hook, compile-event handlers, the cache audit switch.
    """

    def __init__(self, *, cache_audit: bool = False) -> None:
        self.cache_audit = bool(cache_audit)
        self.implicit_context: Callable[[], str | None] | None = None
        self.handlers: dict[str, list[EventHandler]] = {name: [] for name in get_args(EventName)}

    def current(
        self,
        *,
        auto_channel: str,
        announcements: Mapping[str, Announcement],
        dynamic_state: BaseModel | Mapping[str, Any] | None,
        memories: str,
    ) -> Stated:
        """Every volatile block as it renders now (the implicit-context hook runs once).

        Args:
            auto_channel: Where ``auto`` announcements go on this target
                (`Profile.announcement_channel`).
            announcements: The standing announcements, in insertion order.
            dynamic_state: The dynamic state, or None.
            memories: The ``<memories>`` block (``""``: none).

        Raises:
            UsageError: The hook failed or returned something that is not text.
        """
        by_channel: dict[str, list[Announcement]] = {"user_tail": [], "system": []}
        for item in announcements.values():
            channel = auto_channel if item.channel == "auto" else item.channel
            by_channel[channel].append(item)
        return Stated(
            dynamic_state=render_dynamic_state(dynamic_state) if dynamic_state is not None else "",
            implicit_context=self._implicit(),
            announcements=render_announcements(by_channel["user_tail"]),
            system=render_announcements(by_channel["system"]),
            memories=memories,
        )

    def _implicit(self) -> str:
        try:
            implicit = self.implicit_context() if self.implicit_context is not None else None
        except Exception as exc:
            raise UsageError(
                f"the implicit-context hook raised {type(exc).__name__}: {printed(exc)}; compile "
                "stopped (fix the hook or remove it with set_implicit_context(None))"
            ) from exc
        if implicit is not None and not isinstance(implicit, str):
            raise UsageError(
                f"the implicit-context hook must return a string or None, got "
                f"{type(implicit).__name__}"
            )
        if implicit and not is_unicode(implicit):
            raise UsageError(
                "the implicit-context hook returned text that is not valid Unicode (a lone "
                "surrogate); compile stopped"
            )
        if not implicit or not implicit.strip():
            return ""
        return f"<implicit_context>\n{implicit}\n</implicit_context>"

    def set_implicit(self, hook: Callable[[], str | None] | None) -> None:
        """Set (None: remove) the implicit-context hook; see `ContextChef.set_implicit_context`."""
        if hook is not None and not callable(hook):
            raise UsageError("the implicit-context hook must be callable or None")
        self.implicit_context = hook

    def subscribe(self, event: EventName, handler: EventHandler) -> EventHandler:
        """Add an event handler; see `ContextChef.on`.

        Raises:
            UsageError: Unknown event or a handler that is not callable.
        """
        if not isinstance(event, str) or event not in self.handlers:
            raise UsageError(
                f"unknown event {shown(event)}; valid: {', '.join(sorted(self.handlers))}"
            )
        if not callable(handler):
            raise UsageError(f"handler for {shown(event)} is not callable")
        self.handlers[event].append(handler)
        return handler

    def unsubscribe(self, event: EventName, handler: EventHandler) -> bool:
        """Remove an event handler; True if it was registered."""
        handlers = self.handlers.get(event, []) if isinstance(event, str) else []
        if handler in handlers:
            handlers.remove(handler)
            return True
        return False

    def emit(self, event: CompileEvent) -> None:
        """Run the handlers of `event.name` in registration order."""
        for handler in tuple(self.handlers[event.name]):
            try:
                handler(event)
            except Exception as exc:
                raise UsageError(
                    f"a {shown(event.name)} handler "
                    f"({shown(getattr(handler, '__name__', handler))}) "
                    f"raised {type(exc).__name__}: {printed(exc)}; remove it with chef.off()"
                ) from exc
