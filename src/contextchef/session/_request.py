"""`CompiledRequest`: what one compile returns, and the prefix fingerprint (session layer)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextchef._json import canonical_dumps
from contextchef.history._normalize import Change
from contextchef.providers import CacheAuditFinding

__all__ = ["CompiledRequest", "prefix_fingerprint"]


@dataclass(frozen=True, kw_only=True)
class CompiledRequest:
    """One compiled request.

    Attributes:
        target: The adapter used.
        payload: Keyword arguments for the SDK call (a fresh dict; safe to mutate).
        segments: Canonical JSON text of the ``system``, ``tools`` and ``messages``
            segments, for cache-stability checks.
        changes: What the history normalizer repaired for this target (synthesized
            results, dropped orphans, moved results, merged roles...); ``()`` when the
            stored history was already valid. The stored history itself is unchanged.
        prefix_fingerprint: SHA-256 (hex) of the cached prefix: the system segment and
            every ``tools`` entry except those marked ``defer_loading: true`` (the
            provider strips deferred definitions before computing its cache key, so
            adding one never changes this value).
        audit: With ``ContextChef(cache_audit=True)``: volatile blocks (announcements,
            dynamic state...) found at or before the last prompt-cache breakpoint on
            targets with explicit breakpoints; also logged.
    """

    target: str
    payload: dict[str, Any]
    segments: Mapping[str, str]
    changes: tuple[Change, ...] = ()
    prefix_fingerprint: str = ""
    audit: tuple[CacheAuditFinding, ...] = ()

    def to_json(self) -> str:
        """The whole payload as canonical JSON."""
        return canonical_dumps(self.payload)


def prefix_fingerprint(system_segment: str, tools: object) -> str:
    """SHA-256 (hex) of the system segment and the non-deferred ``tools`` entries."""
    kept = [
        t
        for t in (tools if isinstance(tools, list) else [])
        if not (isinstance(t, Mapping) and t.get("defer_loading") is True)
    ]
    text = canonical_dumps({"system": system_segment, "tools": kept})
    return hashlib.sha256(text.encode()).hexdigest()
