"""`ContextChef`'s methods for announcements, dynamic state, implicit context and events.

They edit the session's data (`SessionState`) and the code hooks of `VolatileState`; see
`contextchef.session._volatile` for how the volatile tail renders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, get_args

from contextchef._errors import UsageError, shown
from contextchef._json import is_unicode
from contextchef.session._state import SessionState
from contextchef.session._volatile import (
    Announcement,
    Channel,
    EventHandler,
    EventName,
    VolatileState,
    is_pydantic_model,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["VolatileStateMixin"]


class VolatileStateMixin:
    """`ContextChef` methods for announcements, dynamic state, implicit context, events."""

    _state: SessionState
    _volatile: VolatileState

    # -- announcements ---------------------------------------------------------------------

    def announce(self, id: str, content: str, channel: Channel = "auto") -> Announcement:
        """State a capability change until it is retracted (upsert by `id`).

        Re-announcing an id replaces its content and channel and keeps its original
        position. Every standing announcement of a channel renders into one
        ``<announcements>`` block, in insertion order, stated again at the end of the
        next request whenever the set changed (a retraction included); nothing is
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
        item = Announcement(id=id, content=content, channel=channel)
        self._state.announcements[id] = item  # an existing key keeps its position
        return item

    def retract_announcement(self, id: str) -> bool:
        """Remove an announcement; True if one was standing under `id`."""
        return self._state.announcements.pop(id, None) is not None

    def get_announcements(self) -> tuple[Announcement, ...]:
        """The standing announcements, in insertion order."""
        return tuple(self._state.announcements.values())

    # -- dynamic state and implicit context ------------------------------------------------

    def set_dynamic_state(self, state: BaseModel | None) -> None:
        """Set (None: clear) the dynamic state, rendered as ``<dynamic_state>`` JSON.

        The model is dumped at every compile (``model_dump(mode="json")``, keys sorted);
        when the dump differs from what the target was last told, the next request
        states it again at its end (clearing it states ``null``).

        Raises:
            UsageError: `state` is not a pydantic model.
        """
        if state is not None and not is_pydantic_model(state):
            raise UsageError(
                f"dynamic state must be a pydantic model or None, got {type(state).__name__}"
            )
        self._state.dynamic_state = state

    @property
    def dynamic_state(self) -> BaseModel | Mapping[str, Any] | None:
        """The dynamic state (a mapping after `restore`), or None."""
        return self._state.dynamic_state

    def set_implicit_context(self, hook: Callable[[], str | None] | None) -> None:
        """Set (None: remove) the hook whose text renders as ``<implicit_context>``.

        It is called once per compile; its text is stated at the end of the request
        when it differs from what the target was last told (``None`` or blank after
        text states that there is none). Implicit context alone does not add the
        anchor line.
        """
        if hook is not None and not callable(hook):
            raise UsageError("the implicit-context hook must be callable or None")
        self._volatile.implicit_context = hook

    def set_system_channel_breakpoint(self, enabled: bool) -> None:
        """Kept for compatibility; it changes nothing now.

        Every Anthropic request marks its last block as a ``cache_control`` breakpoint
        (the system entry when it is last), and an update, once sent, never changes
        again, so no separate breakpoint for the system channel is needed. Nothing is
        recorded.
        """
        del enabled

    # -- lifecycle -------------------------------------------------------------------------

    def clear_history(self) -> None:
        """Start a fresh conversation: empty the history.

        Announcements, dynamic state, tools, modes and the blocklist stay: they describe
        the current session, which a fresh conversation still needs.
        """
        self._state.history = ()

    def on(self, event: EventName, handler: EventHandler) -> EventHandler:
        """Call `handler` with a `CompileEvent` on a session event (see `EventName`).

        ``compile:start`` runs before anything is rendered (an announcement made there
        lands in this compile); ``compile:done`` after (one made there lands in the next);
        ``response:notice`` once per notice an ingested response carries.

        Returns:
            `handler` (so ``on`` can be used as a decorator factory's body).

        Raises:
            UsageError: Unknown event or a handler that is not callable.
        """
        if not isinstance(event, str) or event not in self._volatile.handlers:
            raise UsageError(
                f"unknown event {shown(event)}; valid: {', '.join(sorted(self._volatile.handlers))}"
            )
        if not callable(handler):
            raise UsageError(f"handler for {shown(event)} is not callable")
        self._volatile.handlers[event].append(handler)
        return handler

    def off(self, event: EventName, handler: EventHandler) -> bool:
        """Remove a handler; True if it was registered."""
        handlers = self._volatile.handlers.get(event, []) if isinstance(event, str) else []
        if handler in handlers:
            handlers.remove(handler)
            return True
        return False
