"""Volatile session state: announcements, dynamic state, implicit context, events (chef layer).

Everything here is *state*, re-rendered at every compile and never written into the
history, and it always renders after the cached prefix (system prompt, tools, older
messages), so changing it never breaks the provider's prompt cache:

* the **user tail** is one text part appended to the last user message of the compiled
  copy of the history: ``<dynamic_state>``, ``<implicit_context>``, the ``user_tail``
  announcements, then the anchor line (only when system state is present: dynamic
  state or announcements; implicit context alone does not trigger it);
* the **system channel** is one positional system message after the last history message
  and before any assistant prefill, holding the ``system`` channel announcements (the
  adapters decide its wire form; see `contextchef.providers.RequestOptions`).

Channel ``auto`` resolves by target, not by model: ``system`` on the Anthropic target,
``user_tail`` elsewhere. Mid-conversation system messages are native on some Anthropic
models and not others; contextchef never sees the model, so pass a channel explicitly
when it matters.

The cache audit (`audit_payload`) walks an Anthropic payload in cache order (tools,
system, messages) and flags every volatile block at or before the last ``cache_control``
breakpoint: such a block makes the cached prefix differ on every change.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel

from contextchef._errors import UsageError
from contextchef.history._messages import Message, TextPart
from contextchef.providers.anthropic._render import needs_hoist

if TYPE_CHECKING:
    from contextchef.session._chef import CompiledRequest

__all__ = [
    "DEFAULT_ANCHOR",
    "Announcement",
    "CacheAuditFinding",
    "Channel",
    "CompileEvent",
    "EventName",
    "VolatileState",
    "VolatileStateMixin",
    "VolatileTail",
    "audit_payload",
    "check_prefill",
    "render_announcements",
    "render_dynamic_state",
]

logger = logging.getLogger("contextchef")

Channel = Literal["auto", "user_tail", "system"]
"""Where an announcement renders (see the module docstring)."""

EventName = Literal["compile:start", "compile:done"]
"""Compile lifecycle events for `VolatileStateMixin.on`."""

DEFAULT_ANCHOR = "Above is the current system state, not part of the user's message."
"""The line closing a user tail that carries system state."""


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
    """``compile:start`` (before anything is rendered) or ``compile:done``."""
    target: str
    """The compile target."""
    request: CompiledRequest | None = None
    """The compiled request (``compile:done`` only)."""


EventHandler = Callable[[CompileEvent], object]


@dataclass(frozen=True, kw_only=True)
class CacheAuditFinding:
    """A volatile block at or before the last prompt-cache breakpoint."""

    block: str
    """What the volatile block holds, e.g. ``announcements`` or ``dynamic_state``."""
    position: int
    """Its index among the payload's cacheable blocks (tools, system, message blocks)."""
    breakpoint: int
    """Index of the last block carrying ``cache_control``."""

    @property
    def message(self) -> str:
        """A log line saying what is wrong and the fix."""
        return (
            f"cache audit: volatile block ({self.block}) at position {self.position} is at or "
            f"before the last cache_control breakpoint (position {self.breakpoint}); it changes "
            "the cached prefix on every update: move the breakpoint earlier"
        )


@dataclass(frozen=True, kw_only=True)
class VolatileTail:
    """The volatile part of one compile."""

    messages: tuple[Message, ...]
    """The normalized history with the user tail appended to its last user message."""
    user_tail: str = ""
    """Text appended to the last user message (``""``: none)."""
    user_tail_kinds: tuple[str, ...] = ()
    """Blocks in `user_tail`, e.g. ``("dynamic_state", "announcements")``."""
    system: str = ""
    """Text of the positional system message (``""``: none)."""


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


def dynamic_state_data(state: BaseModel | Mapping[str, Any]) -> Any:
    """The JSON data of a dynamic state (a pydantic model's ``model_dump(mode="json")``)."""
    return state.model_dump(mode="json") if isinstance(state, BaseModel) else dict(state)


def render_dynamic_state(state: BaseModel | Mapping[str, Any]) -> str:
    """``<dynamic_state>`` with the state as JSON (keys sorted, 2-space indent, UTF-8).

    Raises:
        UsageError: The state holds NaN or infinity.
    """
    try:
        text = json.dumps(
            dynamic_state_data(state), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False
        )
    except ValueError as exc:
        raise UsageError(f"dynamic state is not plain JSON: {exc}") from exc
    return f"<dynamic_state>\n{text}\n</dynamic_state>"


def check_prefill(prefill: str | None, messages: Sequence[Message]) -> str:
    """The prefill to send (``""`` for none).

    Raises:
        UsageError: Not a string, ending in whitespace (Anthropic rejects a final
            assistant turn that does), or the history does not end with a user turn.
    """
    if prefill is None or prefill == "":
        return ""
    if not isinstance(prefill, str):
        raise UsageError(f"prefill must be a string, got {type(prefill).__name__}")
    if prefill != prefill.rstrip():
        raise UsageError("prefill must not end with whitespace (Anthropic rejects it)")
    if messages and messages[-1].role != "user":
        raise UsageError(
            "prefill needs a history that ends with a user turn; it already ends with an "
            "assistant message"
        )
    return prefill


def _with_tail(messages: Sequence[Message], text: str) -> tuple[Message, ...]:
    """`messages` with `text` as a last part of the last user message (or a new one)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            msg = messages[i]
            grown = Message(role="user", parts=(*msg.parts, TextPart(text=text)))
            return (*messages[:i], grown, *messages[i + 1 :])
    return (*messages, Message(role="user", parts=(TextPart(text=text),)))


class VolatileState:
    """The announcements, dynamic state, hooks and settings of one session."""

    def __init__(self, *, anchor: str | None = DEFAULT_ANCHOR, cache_audit: bool = False) -> None:
        if anchor is not None and not isinstance(anchor, str):
            raise UsageError(f"anchor must be a string or None, got {type(anchor).__name__}")
        self.anchor = anchor or ""
        self.cache_audit = bool(cache_audit)
        self.announcements: dict[str, Announcement] = {}
        self.dynamic_state: BaseModel | Mapping[str, Any] | None = None
        self.implicit_context: Callable[[], str | None] | None = None
        self.system_breakpoint = False
        self.handlers: dict[str, list[EventHandler]] = {name: [] for name in get_args(EventName)}
        self.hoist_warned = False

    def channel_for(self, item: Announcement, target: str) -> str:
        if item.channel != "auto":
            return item.channel
        return "system" if target == "anthropic" else "user_tail"

    def tail(self, target: str, messages: Sequence[Message]) -> VolatileTail:
        """The volatile blocks for `target`, the user tail applied to `messages`."""
        by_channel: dict[str, list[Announcement]] = {"user_tail": [], "system": []}
        for item in self.announcements.values():
            by_channel[self.channel_for(item, target)].append(item)
        pieces: list[str] = []
        kinds: list[str] = []
        if self.dynamic_state is not None:
            pieces.append(render_dynamic_state(self.dynamic_state))
            kinds.append("dynamic_state")
        try:
            implicit = self.implicit_context() if self.implicit_context is not None else None
        except Exception as exc:
            raise UsageError(
                f"the implicit-context hook raised {type(exc).__name__}: {exc}; compile "
                "stopped (fix the hook or remove it with set_implicit_context(None))"
            ) from exc
        if implicit is not None and not isinstance(implicit, str):
            raise UsageError(
                f"the implicit-context hook must return a string or None, got "
                f"{type(implicit).__name__}"
            )
        if implicit and implicit.strip():
            pieces.append(f"<implicit_context>\n{implicit}\n</implicit_context>")
            kinds.append("implicit_context")
        if by_channel["user_tail"]:
            pieces.append(render_announcements(by_channel["user_tail"]))
            kinds.append("announcements")
        if self.anchor and ("dynamic_state" in kinds or "announcements" in kinds):
            pieces.append(self.anchor)
        text = "\n\n".join(pieces)
        return VolatileTail(
            messages=_with_tail(messages, text) if text else tuple(messages),
            user_tail=text,
            user_tail_kinds=tuple(kinds),
            system=render_announcements(by_channel["system"]),
        )

    def emit(self, event: CompileEvent) -> None:
        """Run the handlers of `event.name` in registration order."""
        for handler in tuple(self.handlers[event.name]):
            try:
                handler(event)
            except Exception as exc:
                raise UsageError(
                    f"a {event.name!r} handler ({getattr(handler, '__name__', handler)!r}) "
                    f"raised {type(exc).__name__}: {exc}; remove it with chef.off()"
                ) from exc

    def warn_hoist(self, target: str, payload: Mapping[str, Any], tail: VolatileTail) -> None:
        """Warn once per session when Anthropic had to hoist the positional system message."""
        if target != "anthropic" or not tail.system or self.hoist_warned:
            return
        messages = [m for m in payload.get("messages", []) if m.get("role") != "assistant"]
        if needs_hoist(messages):
            self.hoist_warned = True
            warnings.warn(
                "contextchef: the system-channel message would precede every user message, "
                "which Anthropic does not accept; it was added to the top-level system "
                "instead (after the cached block). Add a user message first.",
                UserWarning,
                stacklevel=4,
            )

    def audit(
        self, target: str, payload: Mapping[str, Any], tail: VolatileTail
    ) -> tuple[CacheAuditFinding, ...]:
        """Cache-audit findings for `payload` (``()`` when the audit is off); logged."""
        if not self.cache_audit:
            return ()
        found = audit_payload(target, payload, tail)
        for finding in found:
            logger.warning(finding.message)
        return found


def _cache_units(payload: Mapping[str, Any]) -> list[Any]:
    """Anthropic's cacheable blocks in cache order: tools, system blocks, message blocks."""
    units: list[Any] = list(payload.get("tools") or [])
    system = payload.get("system")
    units += [system] if isinstance(system, str) else list(system or [])
    for msg in payload.get("messages") or []:
        content = msg.get("content")
        units += [msg] if isinstance(content, str) else list(content or [])
    return units


def audit_payload(
    target: str, payload: Mapping[str, Any], tail: VolatileTail
) -> tuple[CacheAuditFinding, ...]:
    """Volatile blocks of `payload` at or before its last ``cache_control`` breakpoint.

    Only Anthropic payloads carry breakpoints; other targets give ``()``.
    """
    if target != "anthropic":
        return ()
    units = _cache_units(payload)
    marks = [i for i, u in enumerate(units) if isinstance(u, Mapping) and "cache_control" in u]
    if not marks:
        return ()
    volatile = {tail.user_tail: ", ".join(tail.user_tail_kinds), tail.system: "announcements"}
    found = []
    for i, unit in enumerate(units[: marks[-1] + 1]):
        text = unit.get("text") if isinstance(unit, Mapping) else None
        if text and text in volatile:
            found.append(CacheAuditFinding(block=volatile[text], position=i, breakpoint=marks[-1]))
    return tuple(found)


class VolatileStateMixin:
    """`ContextChef` methods for announcements, dynamic state, implicit context, events."""

    _volatile: VolatileState
    _history: tuple[Message, ...]

    # -- announcements ---------------------------------------------------------------------

    def announce(self, id: str, content: str, channel: Channel = "auto") -> Announcement:
        """State a capability change until it is retracted (upsert by `id`).

        Re-announcing an id replaces its content and channel and keeps its original
        position. Every standing announcement of a channel renders into one
        ``<announcements>`` block, in insertion order, at every compile; nothing is
        written into the history.

        Args:
            id: The announcement's key.
            content: The statement (e.g. ``"Tools newly available: read_file, grep"``).
            channel: ``user_tail``, ``system`` or ``auto`` (``system`` on Anthropic,
                ``user_tail`` elsewhere).

        Returns:
            The stored announcement.

        Raises:
            UsageError: An empty id, non-string content, or an unknown channel.
        """
        if not isinstance(id, str) or not id:
            raise UsageError(f"announcement id must be a non-empty string, got {id!r}")
        if not isinstance(content, str):
            raise UsageError(
                f"announcement {id!r}: content must be a string, got {type(content).__name__}"
            )
        if channel not in get_args(Channel):
            raise UsageError(
                f"announcement {id!r}: unknown channel {channel!r}; valid: "
                + ", ".join(get_args(Channel))
            )
        item = Announcement(id=id, content=content, channel=channel)
        self._volatile.announcements[id] = item  # an existing key keeps its position
        return item

    def retract_announcement(self, id: str) -> bool:
        """Remove an announcement; True if one was standing under `id`."""
        return self._volatile.announcements.pop(id, None) is not None

    def get_announcements(self) -> tuple[Announcement, ...]:
        """The standing announcements, in insertion order."""
        return tuple(self._volatile.announcements.values())

    # -- dynamic state and implicit context ------------------------------------------------

    def set_dynamic_state(self, state: BaseModel | None) -> None:
        """Set (None: clear) the dynamic state, rendered as ``<dynamic_state>`` JSON.

        The model is dumped at every compile (``model_dump(mode="json")``, keys sorted),
        so later changes to it show up in the next compile.

        Raises:
            UsageError: `state` is not a pydantic model.
        """
        if state is not None and not isinstance(state, BaseModel):
            raise UsageError(
                f"dynamic state must be a pydantic model or None, got {type(state).__name__}"
            )
        self._volatile.dynamic_state = state

    @property
    def dynamic_state(self) -> BaseModel | Mapping[str, Any] | None:
        """The dynamic state (a mapping after `restore`), or None."""
        return self._volatile.dynamic_state

    def set_implicit_context(self, hook: Callable[[], str | None] | None) -> None:
        """Set (None: remove) the hook whose text renders as ``<implicit_context>``.

        It is called once per compile; ``None`` or blank text adds nothing. Implicit
        context alone does not add the anchor line.
        """
        if hook is not None and not callable(hook):
            raise UsageError("the implicit-context hook must be callable or None")
        self._volatile.implicit_context = hook

    def set_system_channel_breakpoint(self, enabled: bool) -> None:
        """Anthropic: mark the system-channel message as a ``cache_control`` breakpoint.

        Its announcements are volatile, so ``cache_audit`` flags this.
        """
        self._volatile.system_breakpoint = bool(enabled)

    # -- lifecycle -------------------------------------------------------------------------

    def clear_history(self) -> None:
        """Start a fresh conversation: empty the history.

        Announcements, dynamic state, tools, modes and the blocklist stay: they describe
        the current session, which a fresh conversation still needs.
        """
        self._history = ()

    def on(self, event: EventName, handler: EventHandler) -> EventHandler:
        """Call `handler` with a `CompileEvent` on ``compile:start`` or ``compile:done``.

        ``compile:start`` runs before anything is rendered (an announcement made there
        lands in this compile); ``compile:done`` after (one made there lands in the next).

        Returns:
            `handler` (so ``on`` can be used as a decorator factory's body).

        Raises:
            UsageError: Unknown event or a handler that is not callable.
        """
        if event not in self._volatile.handlers:
            raise UsageError(
                f"unknown event {event!r}; valid: {', '.join(sorted(self._volatile.handlers))}"
            )
        if not callable(handler):
            raise UsageError(f"handler for {event!r} is not callable")
        self._volatile.handlers[event].append(handler)
        return handler

    def off(self, event: EventName, handler: EventHandler) -> bool:
        """Remove a handler; True if it was registered."""
        handlers = self._volatile.handlers.get(event, [])
        if handler in handlers:
            handlers.remove(handler)
            return True
        return False
