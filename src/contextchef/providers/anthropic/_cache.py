"""Anthropic prompt-cache audit: volatile blocks before the last ``cache_control`` mark.

Anthropic caches the request prefix in the order tools, system, messages, up to each
``cache_control`` breakpoint
(https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching). A block that changes
between requests at or before the last breakpoint makes the cached prefix differ every time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextchef.providers._base import CacheAuditFinding

__all__ = ["audit_breakpoints", "cache_units"]


def cache_units(payload: Mapping[str, Any]) -> list[Any]:
    """The cacheable blocks of a payload in cache order: tools, system blocks, message blocks."""
    units: list[Any] = list(payload.get("tools") or [])
    system = payload.get("system")
    units += [system] if isinstance(system, str) else list(system or [])
    for msg in payload.get("messages") or []:
        content = msg.get("content")
        units += [msg] if isinstance(content, str) else list(content or [])
    return units


def audit_breakpoints(
    payload: Mapping[str, Any], volatile: Mapping[str, str]
) -> tuple[CacheAuditFinding, ...]:
    """Blocks whose text is a key of `volatile`, at or before the last breakpoint.

    Args:
        payload: An Anthropic payload.
        volatile: Text of each volatile block -> what it holds (e.g. ``announcements``).

    Returns:
        One finding per volatile block found, in cache order (``()`` without breakpoints).
    """
    units = cache_units(payload)
    marks = [i for i, u in enumerate(units) if isinstance(u, Mapping) and "cache_control" in u]
    if not marks:
        return ()
    found = []
    for i, unit in enumerate(units[: marks[-1] + 1]):
        text = unit.get("text") if isinstance(unit, Mapping) else None
        if text and text in volatile:
            found.append(CacheAuditFinding(block=volatile[text], position=i, breakpoint=marks[-1]))
    return tuple(found)
