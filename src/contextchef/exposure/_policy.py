"""Which tools are resident and which are deferred (exposure layer).

Precedence, highest first (documented in README "Exposure"):

0. a tool outside the session's mode is hidden;
1. runtime-created tools (``source == "runtime"``) are always deferred: their free-text
   descriptions must never enter the cached prefix;
2. a ``pin`` pattern keeps a tool resident; it beats a ``defer`` pattern (a veto beats a
   request, as deny beats allow in permission systems);
3. a ``defer`` pattern defers it;
4. the tool's own ``defer_loading`` (True / False);
5. the session default (``default_defer``).

Patterns: ``*`` matches any run of characters; without anchors a pattern matches
anywhere in the name; ``^`` and ``$`` anchor it at the start / end. A pattern is tried
against the tool's wire name (``github__create_issue``) and its own name
(``create_issue``). The meta-tools ``tool_search`` and ``defer_execute`` are added and
pinned by the deferred layer whenever anything is deferred.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from contextchef.tools._tool import Tool

__all__ = ["READ_ONLY", "Exposure", "ExposurePolicy", "Mode", "compile_pattern", "matches"]

Exposure = Literal["direct", "deferred", "hidden"]
"""direct: full schema resident in ``tools``; deferred: name only, schema on demand;
hidden: excluded by the session's mode (absent everywhere, rejected at dispatch)."""


@lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile an override pattern (``*`` wildcard, optional ``^``/``$`` anchors)."""
    start = pattern.startswith("^")
    end = pattern.endswith("$") and len(pattern) > int(start)
    body = pattern[int(start) : len(pattern) - int(end)]
    regex = ".*".join(re.escape(chunk) for chunk in body.split("*"))
    return re.compile(("^" if start else "") + regex + ("$" if end else ""))


def matches(patterns: Iterable[str], names: tuple[str, ...]) -> bool:
    """True if any pattern matches any of the names (see the module docstring)."""
    return any(compile_pattern(p).search(n) for p in patterns for n in names)


@dataclass(frozen=True, kw_only=True)
class Mode:
    """A named, structural tool whitelist (e.g. a read-only Q&A mode).

    A tool is in the mode if it matches one of ``include`` (patterns, as for pin/defer),
    or, with ``read_only``, if its annotations declare it read-only, or, with
    ``runtime``, if it was created at run time. Tools outside the
    mode are hidden: absent from the payload, the directory and search, and rejected by
    the gate. The meta-tools stay when anything in the mode is deferred; they then only
    reach tools of the mode.

    Attributes:
        name: The mode's name, shown in denial reasons.
        include: Patterns of tools to keep.
        read_only: Also keep tools annotated read-only (MCP ``readOnlyHint``).
        runtime: Also keep runtime tools (made during the session, e.g. from a loaded
            toolkit), which a whitelist built earlier cannot name.
    """

    name: str
    include: tuple[str, ...] = ()
    read_only: bool = False
    runtime: bool = False

    def allows(self, tool: Tool, wire_name: str) -> bool:
        """Whether `tool` is available in this mode."""
        if self.read_only and tool.annotations.read_only is True:
            return True
        if self.runtime and tool.source == "runtime":
            return True
        return matches(self.include, (wire_name, tool.name))


READ_ONLY = Mode(name="read_only", read_only=True)
"""Built-in mode: only tools whose annotations say read-only."""


@dataclass(frozen=True, kw_only=True)
class ExposurePolicy:
    """The session's exposure configuration.

    Attributes:
        default_defer: Exposure for tools that declare nothing and match no pattern.
        defer: Patterns of tools to defer.
        pin: Patterns of tools to keep resident (beats ``defer``).
        mode: The active mode; tools outside it are hidden (this comes first).
    """

    default_defer: bool = False
    defer: tuple[str, ...] = ()
    pin: tuple[str, ...] = ()
    mode: Mode | None = None

    def exposure_of(self, tool: Tool, wire_name: str) -> Exposure:
        """The exposure of one tool (see the module docstring for precedence)."""
        if self.mode is not None and not self.mode.allows(tool, wire_name):
            return "hidden"
        if tool.source == "runtime":
            return "deferred"
        names = (wire_name, tool.name)
        if matches(self.pin, names):
            return "direct"
        if matches(self.defer, names):
            return "deferred"
        if tool.defer_loading is not None:
            return "deferred" if tool.defer_loading else "direct"
        return "deferred" if self.default_defer else "direct"
