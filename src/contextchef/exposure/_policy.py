"""Which tools are resident and which are deferred (exposure layer).

Precedence, highest first (documented in docs/guides/tools.md, "Exposure"):

0. a tool outside any of the session's modes is hidden (the session's own mode and a
   pruning whitelist both apply: the reachable set is their intersection, whatever order
   they were set in);
1. library-owned tools (``source == "library"``: memory, ``new_context``) are always
   direct: they are small, static and part of every payload their mode allows;
2. runtime-created tools (``source == "runtime"``) are always deferred: their free-text
   descriptions must never enter the cached prefix;
3. a ``pin`` pattern keeps a tool resident; it beats a ``defer`` pattern (a veto beats a
   request, as deny beats allow in permission systems);
4. a ``defer`` pattern defers it;
5. the tool's own ``defer_loading`` (True / False);
6. the session default (``default_defer``).

Patterns: ``*`` matches any run of characters; without anchors a pattern matches
anywhere in the name; ``^`` and ``$`` anchor it at the start / end. A pin or defer pattern
is tried against the tool's wire name (``github__create_issue``) and its own name
(``create_issue``). A mode's pattern, which decides what the model may reach, is tried
against the wire name only (and the own name of an ungrouped tool): ``^read_file$`` does
not admit ``evil__read_file``; say ``*read_file`` to mean every server's. The meta-tools
``tool_search`` and ``defer_execute`` are added and
pinned by the deferred layer whenever anything is deferred.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from contextchef._cache import lru_cache
from contextchef._errors import UsageError, shown
from contextchef.tools._tool import Tool

__all__ = [
    "READ_ONLY",
    "Exposure",
    "ExposurePolicy",
    "Mode",
    "as_patterns",
    "closest_names",
    "compile_pattern",
    "matches",
    "mode_names",
    "named_modes",
    "unmatched",
    "unmatched_message",
    "unmatched_messages",
]

Exposure = Literal["direct", "deferred", "hidden"]
"""direct: full schema resident in ``tools``; deferred: name only, schema on demand;
hidden: excluded by the session's mode (absent everywhere, rejected at dispatch)."""


@lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    r"""Compile an override pattern (``*`` wildcard, optional ``^``/``$`` anchors).

    ``$`` anchors at the very end of the name (``\Z``: Python's ``$`` would also match
    before a final newline, letting ``^read_file$`` admit ``"read_file\n"``), and ``*``
    matches any characters, newlines included.
    """
    start = pattern.startswith("^")
    end = pattern.endswith("$") and len(pattern) > int(start)
    body = pattern[int(start) : len(pattern) - int(end)]
    regex = ".*".join(re.escape(chunk) for chunk in body.split("*"))
    return re.compile(("^" if start else "") + regex + ("\\Z" if end else ""), re.DOTALL)


def matches(patterns: Iterable[str], names: tuple[str, ...]) -> bool:
    """True if any pattern matches any of the names (see the module docstring)."""
    return any(compile_pattern(p).search(n) for p in patterns for n in names)


def mode_names(tool: Tool, wire_name: str) -> tuple[str, ...]:
    """The names a mode pattern is tried against.

    The wire name, and the own name of a tool outside any group (a grouped tool's own name
    would let ``^x$`` admit ``evil__x``).
    """
    return (wire_name,) if tool.server else (wire_name, tool.name)


@dataclass(frozen=True, kw_only=True)
class Mode:
    """A named, structural tool whitelist (e.g. a read-only Q&A mode).

    A tool is in the mode if it matches one of ``include`` (patterns, as for pin/defer),
    or, with ``read_only``, if its annotations declare it read-only, or, with
    ``runtime``, if it was created at run time, or, with ``library``, if it is one of the
    library-owned tools. Tools outside the
    mode are hidden: absent from the payload, the directory and search, and rejected by
    the gate. The meta-tools stay when anything in the mode is deferred; they then only
    reach tools of the mode.

    Attributes:
        name: The mode's name, shown in denial reasons.
        include: Patterns of tools to keep.
        read_only: Also keep tools annotated read-only (MCP ``readOnlyHint``).
        runtime: Also keep runtime tools (made during the session, e.g. from a loaded
            toolkit), which a whitelist built earlier cannot name.
        library: Also keep the library-owned tools (memory, ``new_context``), which
            pruning never removes.
    """

    name: str
    include: tuple[str, ...] = ()
    read_only: bool = False
    runtime: bool = False
    library: bool = False

    def allows(self, tool: Tool, wire_name: str) -> bool:
        """Whether `tool` is available in this mode."""
        if self.read_only and tool.annotations.read_only is True:
            return True
        if self.runtime and tool.source == "runtime":
            return True
        if self.library and tool.source == "library":
            return True
        return matches(self.include, mode_names(tool, wire_name))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Mode:
        """A mode from `to_dict` output whose shape was checked (a snapshot's whitelist)."""
        return cls(
            name=raw["name"],
            include=tuple(raw["include"]),
            read_only=raw["read_only"],
            runtime=raw["runtime"],
            library=raw["library"],
        )

    def to_dict(self) -> dict[str, object]:
        """``{"name", "include", "read_only", "runtime", "library"}`` (JSON-ready)."""
        return {
            "name": self.name,
            "include": list(self.include),
            "read_only": self.read_only,
            "runtime": self.runtime,
            "library": self.library,
        }


READ_ONLY = Mode(name="read_only", read_only=True)
"""Built-in mode: only tools whose annotations say read-only."""


def as_patterns(field: str, value: str | Sequence[str]) -> tuple[str, ...]:
    """One pattern or a sequence of them, as a tuple (a bare string is one pattern).

    Raises:
        UsageError: Not a string or a sequence of non-empty strings, or a pattern written
            as a regular expression (``github__delete_.*`` would match nothing: patterns
            take ``*`` wildcards); `field` and the pattern are named.
    """
    if value is None or not isinstance(value, (str, Sequence)):
        raise UsageError(
            f"{field} must be a pattern string or a list of them, got {shown(value, 80)}"
        )
    items = (value,) if isinstance(value, str) else tuple(value)
    bad = [p for p in items if not isinstance(p, str) or not p]
    if bad:
        raise UsageError(f"{field} patterns must be non-empty strings, got {shown(bad, 200)}")
    for pattern in items:
        if _REGEX.search(pattern):
            hint = _REGEX_WILDCARD.sub("*", pattern)
            raise UsageError(
                f"{field} pattern {shown(pattern, 80)} looks like a regular expression; patterns "
                f"take * wildcards and ^/$ anchors only (did you mean {shown(hint, 80)}?)"
            )
    return items


_REGEX = re.compile(r"\.[*+?]|[\\\[\](){}|+?]")
"""Regular-expression syntax that cannot be meant literally in a tool name."""
_REGEX_WILDCARD = re.compile(r"\.[*+]")


def unmatched(patterns: Iterable[str], names: Iterable[str]) -> tuple[str, ...]:
    """The patterns that match none of `names` (see `matches`)."""
    known = tuple(names)
    return tuple(p for p in patterns if not matches((p,), known))


def unmatched_message(field: str, patterns: Iterable[str], names: Iterable[str]) -> str:
    """A sentence naming the first of `patterns` that matches none of `names`, or ``""``.

    The sentence names the pattern, the option it was given to (`field`) and the closest
    names, so a typo (``github_*`` for ``github__*``) shows at once.
    """
    given = tuple(names)
    missing = unmatched(patterns, given)
    if not missing:
        return ""  # the common case: nothing sorted (every new session checks its patterns)
    return (
        f"{field} pattern {shown(missing[0], 80)} matches no registered tool; "
        f"{closest_names(missing[0], given)} (patterns take * wildcards and ^/$ anchors)"
    )


def closest_names(pattern: str, names: Iterable[str]) -> str:
    """``closest names: [...]`` of `pattern` among `names` (difflib), or that none is close.

    Sorted first, so the answer does not depend on the order `names` come in.
    """
    known = sorted(names)
    close = difflib.get_close_matches(pattern.strip("^$*"), known, n=3, cutoff=0.5)
    if close:
        return f"closest names: {close}"
    return f"no name is close to it ({len(known)} registered, e.g. {known[:3]})"


def unmatched_messages(defer: Iterable[str], pin: Iterable[str], names: Iterable[str]) -> list[str]:
    """`unmatched_message` of the ``defer`` patterns, then of the ``pin`` ones; none empty."""
    known = tuple(names)
    found = (unmatched_message("defer", defer, known), unmatched_message("pin", pin, known))
    return [message for message in found if message]


def named_modes(modes: Mapping[str, Mode | Sequence[str]] | None) -> dict[str, Mode]:
    """The session's modes by name: the built-in ``read_only``, then `modes`.

    Args:
        modes: A `Mode`, or a list of patterns of the tools to keep, by mode name.

    Raises:
        UsageError: A mode's patterns are malformed.
    """
    if modes is not None and not isinstance(modes, Mapping):
        raise UsageError(
            f"modes must map a mode name to a Mode or a list of patterns, got "
            f"{type(modes).__name__}"
        )
    out = {READ_ONLY.name: READ_ONLY}
    for name, spec in (modes or {}).items():
        out[name] = (
            spec if isinstance(spec, Mode) else Mode(name=name, include=as_patterns(name, spec))
        )
    return out


@dataclass(frozen=True, kw_only=True)
class ExposurePolicy:
    """The session's exposure configuration.

    Attributes:
        default_defer: Exposure for tools that declare nothing and match no pattern.
        defer: Patterns of tools to defer.
        pin: Patterns of tools to keep resident (beats ``defer``).
        modes: The active modes (the session's own, then a pruning whitelist); a tool
            outside any of them is hidden (this comes first).
    """

    default_defer: bool = False
    defer: tuple[str, ...] = ()
    pin: tuple[str, ...] = ()
    modes: tuple[Mode, ...] = ()

    def excluded_by(self, tool: Tool, wire_name: str) -> Mode | None:
        """The first active mode that does not allow `tool`, or None."""
        return next((m for m in self.modes if not m.allows(tool, wire_name)), None)

    def exposure_of(self, tool: Tool, wire_name: str) -> Exposure:
        """The exposure of one tool (see the module docstring for precedence)."""
        if self.excluded_by(tool, wire_name) is not None:
            return "hidden"
        if tool.source == "library":
            return "direct"
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
