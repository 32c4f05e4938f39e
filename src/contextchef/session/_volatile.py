"""Volatile session state: announcements, dynamic state, implicit context, events (session layer).

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

Channel ``auto`` resolves by the target's profile (`Profile.announcement_channel`:
``system`` on Anthropic, ``user_tail`` elsewhere).

The cache audit asks the target's adapter (`Adapter.audit_cache`) for volatile blocks at
or before its last prompt-cache breakpoint, on targets whose profile has explicit
breakpoints: such a block makes the cached prefix differ on every change.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel

from contextchef._errors import UsageError
from contextchef._json import is_unicode
from contextchef.history._messages import Message, TextPart
from contextchef.providers._base import Adapter, CacheAuditFinding
from contextchef.session._request import CompiledRequest

__all__ = [
    "DEFAULT_ANCHOR",
    "Announcement",
    "Channel",
    "CompileEvent",
    "EventName",
    "VolatileState",
    "VolatileTail",
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
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"dynamic state is not plain JSON: {exc}") from exc
    if not is_unicode(text):
        raise UsageError("dynamic state holds text that is not valid Unicode (a lone surrogate)")
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
    """The code behind a session's volatile tail (its data is in `SessionState`).

    The implicit-context hook, compile-event handlers, the cache audit switch.
    """

    def __init__(self, *, cache_audit: bool = False) -> None:
        self.cache_audit = bool(cache_audit)
        self.implicit_context: Callable[[], str | None] | None = None
        self.handlers: dict[str, list[EventHandler]] = {name: [] for name in get_args(EventName)}
        self.hoist_warned = False

    def tail(
        self,
        messages: Sequence[Message],
        *,
        auto_channel: str,
        announcements: Mapping[str, Announcement],
        dynamic_state: BaseModel | Mapping[str, Any] | None,
        anchor: str,
    ) -> VolatileTail:
        """The volatile blocks, the user tail applied to `messages`.

        Args:
            messages: The normalized history.
            auto_channel: Where ``auto`` announcements go on this target
                (`Profile.announcement_channel`).
            announcements: The standing announcements, in insertion order.
            dynamic_state: The dynamic state, or None.
            anchor: The anchor line (``""``: none).
        """
        by_channel: dict[str, list[Announcement]] = {"user_tail": [], "system": []}
        for item in announcements.values():
            channel = auto_channel if item.channel == "auto" else item.channel
            by_channel[channel].append(item)
        pieces: list[str] = []
        kinds: list[str] = []
        if dynamic_state is not None:
            pieces.append(render_dynamic_state(dynamic_state))
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
        if implicit and not is_unicode(implicit):
            raise UsageError(
                "the implicit-context hook returned text that is not valid Unicode (a lone "
                "surrogate); compile stopped"
            )
        if implicit and implicit.strip():
            pieces.append(f"<implicit_context>\n{implicit}\n</implicit_context>")
            kinds.append("implicit_context")
        if by_channel["user_tail"]:
            pieces.append(render_announcements(by_channel["user_tail"]))
            kinds.append("announcements")
        if anchor and ("dynamic_state" in kinds or "announcements" in kinds):
            pieces.append(anchor)
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

    def warn_hoist(self, adapter: Adapter, payload: Mapping[str, Any], tail: VolatileTail) -> None:
        """Warn once per session when the positional system message had to be hoisted."""
        if not tail.system or self.hoist_warned or not adapter.positional_hoisted(payload):
            return
        self.hoist_warned = True
        warnings.warn(
            "contextchef: the system-channel message would precede every user message, "
            "which Anthropic does not accept; it was added to the top-level system "
            "instead (after the cached block). Add a user message first.",
            UserWarning,
            stacklevel=4,
        )

    def audit(
        self, adapter: Adapter, payload: Mapping[str, Any], tail: VolatileTail
    ) -> tuple[CacheAuditFinding, ...]:
        """Cache-audit findings for `payload` (``()`` when the audit is off); logged."""
        if not self.cache_audit or adapter.profile.cache_breakpoints == 0:
            return ()
        volatile = {tail.user_tail: ", ".join(tail.user_tail_kinds), tail.system: "announcements"}
        found = adapter.audit_cache(payload, {k: v for k, v in volatile.items() if k})
        for finding in found:
            logger.warning(finding.message)
        return found
