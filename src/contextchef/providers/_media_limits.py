"""The size and count limits an API sets on the media of one request, as data.

A wire's `MediaRules.limits` lists them, each citing the provider's docs: how large one
item's inline data may be, how many such items one request may carry, how much inline
data of them it may carry in all. `MediaBudget` applies them in the order the request
carries its media: first what the session already sent (replayed byte-identical, so it
counts as it is and cannot change), then the new media, each admitted while it fits and
otherwise sent as a text note saying which limit it is over (`providers._media.fit_media`).
Sizes are the length of the data as sent (base64), the stricter reading where a doc does
not say; a count takes an item by any source (data, URL, file id), as the docs count
images. Sent as blocks, such media would have the API refuse the request and, since what
was sent is replayed, every later request of the conversation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import is_
from typing import Any

from contextchef.history._messages import MediaPart, Message, ToolResult

__all__ = ["MediaBudget", "MediaLimit", "message_media"]


@dataclass(frozen=True, kw_only=True)
class MediaLimit:
    """One documented limit on the media of a request.

    Attributes:
        kinds: The media types or families (``image/*``) it applies to; ``*/*``: all.
        one: How a note names one item (``image``).
        many: How it names several (``images``).
        item_bytes: The most inline data one item may hold (None: no limit).
        count: The most items one request may carry (None: no limit).
        total_bytes: The most inline data of these items one request may carry.
    """

    kinds: frozenset[str]
    one: str
    many: str
    item_bytes: int | None = None
    count: int | None = None
    total_bytes: int | None = None

    def applies(self, part: MediaPart) -> bool:
        """Whether `part` is one of the items this limit counts."""
        kind = part.media_type.lower()
        return bool({kind, kind.partition("/")[0] + "/*", "*/*"} & self.kinds)


def _size(part: MediaPart) -> int:
    return len(part.data) if part.data is not None else 0


def message_media(message: Message) -> Iterator[MediaPart]:
    """The media `message` carries, in the order the request carries them."""
    for part in message.parts:
        if isinstance(part, MediaPart):
            yield part
        elif isinstance(part, ToolResult):
            yield from part.media


class MediaBudget:
    """What one request still has room for under `limits` (see the module doc)."""

    def __init__(self, limits: Sequence[MediaLimit], used: Sequence[tuple[int, int]]) -> None:
        self.limits = tuple(limits)
        self.used = [*used] if used else [(0, 0)] * len(self.limits)

    def over(self, part: MediaPart) -> str | None:
        """Why `part` does not fit (None: it does, and now counts as carried)."""
        size = _size(part)
        for limit, (count, total) in zip(self.limits, self.used, strict=True):
            if not limit.applies(part):
                continue
            if limit.item_bytes is not None and size > limit.item_bytes:
                return (
                    f"{size:,} bytes, over the API's limit of {limit.item_bytes:,} bytes "
                    f"for one {limit.one}"
                )
            if limit.count is not None and count >= limit.count:
                return f"over the API's limit of {limit.count:,} {limit.many} in one request"
            if limit.total_bytes is not None and total + size > limit.total_bytes:
                return (
                    f"{size:,} bytes, past the API's limit of {limit.total_bytes:,} bytes of "
                    f"{limit.many} in one request ({total:,} carried already)"
                )
        self.add(part)
        return None

    def add(self, part: MediaPart) -> None:
        """Count `part` as carried (media sent already, or the model's own)."""
        size = _size(part)
        self.used = [
            (count + 1, total + size) if limit.applies(part) else (count, total)
            for limit, (count, total) in zip(self.limits, self.used, strict=True)
        ]

    def add_all(self, message: Message) -> None:
        """Count every medium of `message` as carried."""
        for part in message_media(message):
            self.add(part)

    @classmethod
    def after(
        cls, limits: Sequence[MediaLimit], before: Sequence[Message], cache: dict[Any, Any] | None
    ) -> MediaBudget:
        """The budget left once `before`, the messages sent already, are carried.

        With the ledger's `cache`, the tally of the list the last compile passed is taken
        as read when `before` leads with it (the same objects), so a steady compile reads
        its new turn only (as `responses._item_ids._sent_ids`).
        """
        held = tuple(before)
        key = (_SENT, tuple(map(id, limits)))
        old, used = (cache or {}).get(key, ((), ()))
        n = len(old)
        budget = cls(limits, ())
        if n and n <= len(held) and old[-1] is held[n - 1] and all(map(is_, old, held)):
            budget.used, held_new = [*used], held[n:]
        else:
            held_new = held
        for message in held_new:
            budget.add_all(message)
        if cache is not None:
            cache[key] = (held, tuple(budget.used))
        return budget


_SENT = "media_limits.sent"
"""The ledger cache's key (with the limits') for the tally of the media sent."""
