"""Volatile-value lint: text in the cached prefix that looks different on every request.

A value that changes per request (today's date, a timestamp, a request or session id)
written into the system prompt or a tool's description changes the prefix each time, so
the provider's prompt cache never hits (spec 002: the prefix must stay byte-identical).
The lint reads the prefix text a session is given and names each such value, where it
is, and what to do instead: keep the value out of the prefix and state it in an appended
update (`ContextChef.set_dynamic_state`, announcements).

What counts (`find_volatile`):

* ``date_line``: a line that labels the current date or time (``Date: ...``,
  ``Current time: ...``, ``Today is ...``) with a value on it (a digit, a month or a
  weekday name: "Today is a good day" is not one);
* ``datetime`` / ``date``: an ISO 8601 date or date-time (or ``2026年12月1日``) within
  `RECENT_DAYS` days of the lint's clock (a release date from years ago in a description
  is not volatile; the clock is read here only, never in anything that reaches a
  request);
* ``time``: a time of day read from a clock: to the second with seconds other than
  ``00``, or to a fraction of a second (``21:40:53``, ``09:00:00.250``), outside an
  example; a round time (``09:00:00``, ``17:30:00``) is a schedule, not a reading;
* ``epoch``: a 10-digit (seconds) or 13-digit (milliseconds) Unix time within a year of
  the clock;
* ``uuid`` and ``hex_id`` (16+ hex characters with letters and digits): unless they sit
  in an example, where real tool descriptions put sample ids.

A value "sits in an example" when an example marker comes before it in its paragraph,
within 120 characters (``e.g.``, ``example``, ``such as``, ``like``, ``format``...; in
Chinese and Japanese ``例如``, ``比如``, ``例:``, ``如:`` (either colon), ``例えば``,
``格式``...), or it is inside an ``<examples>`` section or a code fence.

Only text the model reads is linted: the system prompt, each tool's name, description
and the string values of its input schema (descriptions, defaults, enums, examples), a
templated description as rendered with the session's ``template_vars``
(`rendered_values`), and what `contextchef.deferred._prefix_lint` names (namespaces,
skills, toolkits, servers).
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as _dt
import itertools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from contextchef.tools._tool import Tool

__all__ = [
    "RECENT_DAYS",
    "VolatileValue",
    "find_volatile",
    "lint_system",
    "lint_texts",
    "lint_tool",
    "rendered_values",
    "tool_values",
]

RECENT_DAYS = 45
"""A date this close to the clock (days, either side) looks like the current date."""

VolatileKind = Literal["date_line", "datetime", "date", "time", "epoch", "uuid", "hex_id"]

_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun"
_DATE_LINE = re.compile(
    r"(?im)^[ \t>*#-]*(?:date|today(?:'s date)?|current (?:date|time|datetime)|"
    r"timestamp|time now|now)\s*(?::|=|is\b)[ \t]*"
    rf"(?=[^\n]*(?:\d|\b(?:{_MONTHS})))\S[^\n]*"
)
"""A label, then a value with a digit or a month or weekday name on the same line."""
_DATETIME = re.compile(
    r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?"
    r"(?:Z|[+-]\d{2}:?\d{2})?)?(?![\d])"
)
_EPOCH = re.compile(r"(?<![\d.])(\d{10}|\d{13})(?![\d.])")
_CJK_DATE = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日")
_CLOCK = re.compile(r"(?<![\d:])(?:[01]?\d|2[0-3]):[0-5]\d:([0-5]\d)(\.\d+)?(?![\d:])")
"""A time of day to the second; a clock reading when its seconds are not ``00``."""
_AFTER_DATE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]$")
_UUID = re.compile(
    r"(?i)(?<![0-9a-f])(?<![0-9a-f]-)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-f-])"
)
_HEX = re.compile(r"(?i)(?<![0-9a-z])[0-9a-f]{16,}(?![0-9a-z])")
_EXAMPLE = re.compile(
    r"(?i)(?:e\.g\b|\beg\b|(?<![</])example|for instance|such as|sample|\blike\b|format|"
    r"placeholder|pattern|"
    # Chinese and Japanese: 例如 / 比如 / 譬如 / 例えば (for example), 示例 / 样例 / 范例 /
    # 範例 / 举例 (example), 格式 / 形式 (format), and 如 or 例 before a colon or a quote
    r"例如|比如|譬如|例えば|[示样范範举]例|格式|形式|[如例][:\uff1a`\"'\u201c\u300c])"
)
_CANDIDATE = re.compile(
    r"\d{4}-\d{2}-\d{2}|\d{4}年|\d:\d\d:\d|\d{10}|[0-9a-fA-F]{16}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-"
)
"""What any value kind needs somewhere in the text (one cheap pass before the others)."""
_LABEL = re.compile(r"(?i)date|today|time|now")
_EXAMPLE_WINDOW = 120
"""Characters before a value searched for an example marker."""

_ADVICE: dict[str, str] = {
    "date_line": "a line with the current date or time",
    "datetime": "a date and time close to now",
    "date": "a date close to today",
    "time": "a time of day read from a clock",
    "epoch": "a Unix timestamp close to now",
    "uuid": "a UUID (a request or session id?)",
    "hex_id": "a long hex id (a request, build or commit id?)",
}


@dataclass(frozen=True, kw_only=True)
class VolatileValue:
    """One value in the prefix that looks per-request.

    Attributes:
        location: Where it is: ``"system prompt"``, ``"tool 'x' description"``, or
            ``"tool 'x' input_schema at properties.since.description"``.
        kind: What it looks like (see the module docstring).
        text: The value as found (at most 80 characters).
        offset: Its position in that text, in characters.
    """

    location: str
    kind: VolatileKind
    text: str
    offset: int

    @property
    def message(self) -> str:
        """One line: where, what, and the fix."""
        return (
            f"{self.location}, character {self.offset}: {_ADVICE[self.kind]} "
            f"({self.text!r}) changes the cached prefix on every request; keep it out of "
            "the prefix and state it in an appended update (set_dynamic_state or an "
            "announcement) instead"
        )


def _near(year: int, month: int, day: int, today: _dt.date, days: int) -> bool:
    try:
        when = _dt.date(year, month, day)
    except ValueError:
        return False
    return abs((when - today).days) <= days


class _Examples:
    """Where `text` shows examples, read once (each value's check is then a lookup).

    A value sits in an example when the words just before it mark one (``e.g.``, ``for
    example``...), inside an open ``<example...>`` section, or inside a code fence (real
    descriptions show sample calls with sample ids there).
    """

    def __init__(self, text: str) -> None:
        lower = text.lower()
        self._text = text
        self._opens = [m.start() for m in re.finditer("<example", lower)]
        self._closes = [m.start() for m in re.finditer("</example", lower)]
        self._fences = [m.start() for m in re.finditer("```", text)]

    def holds(self, start: int) -> bool:
        """Whether the value at `start` sits in an example."""
        text = self._text
        paragraph = text.rfind("\n\n", max(0, start - _EXAMPLE_WINDOW), start) + 1
        window = max(paragraph, start - _EXAMPLE_WINDOW)
        if _EXAMPLE.search(text, window, start) is not None:
            return True
        opened = self._last_before(self._opens, start, len("<example"))
        closed = self._last_before(self._closes, start, len("</example"))
        if opened > closed:
            return True
        return bisect.bisect_right(self._fences, start - 3) % 2 == 1  # a whole ``` before

    @staticmethod
    def _last_before(marks: list[int], start: int, size: int) -> int:
        """The last mark (`size` chars) that ends by `start` (``text[:start]`` holds it)."""
        i = bisect.bisect_right(marks, start - size)
        return marks[i - 1] if i else -1


def find_volatile(
    text: str, *, today: _dt.date | None = None
) -> list[tuple[VolatileKind, int, str]]:
    """``(kind, offset, value)`` for each per-request-looking value in `text`, in order.

    Args:
        text: Prefix text (a system prompt, a description).
        today: The lint's clock (default: today, UTC); only dates near it count.
    """
    values = _CANDIDATE.search(text) is not None
    labels = _LABEL.search(text) is not None
    if not (values or labels):
        return []  # one pass finds nothing any kind could match (most text)
    now = today or _dt.datetime.now(_dt.timezone.utc).date()
    found: list[tuple[VolatileKind, int, str]] = []
    taken: list[tuple[int, int]] = []
    spans = _date_lines(text) if labels else iter(())
    if values:  # in this order: a value found first keeps its span
        examples = _Examples(text)
        spans = itertools.chain(
            spans,
            _dates(text, now),
            _clock_times(text, examples),
            _epochs(text, now),
            _ids(text, examples),
        )
    for kind, start, end in spans:
        i = bisect.bisect_left(taken, (end, -1))  # the values starting before `end`
        if i and taken[i - 1][1] > start:
            continue  # inside a value already named (a date on a Date: line)
        taken.insert(i, (start, end))  # named values never overlap: sorted by both ends
        found.append((kind, start, text[start:end][:80]))
    found.sort(key=lambda f: f[1])
    return found


_Span = tuple[VolatileKind, int, int]
"""``(kind, start, end)`` of one value found."""


def _date_lines(text: str) -> Iterator[_Span]:
    for m in _DATE_LINE.finditer(text):
        yield "date_line", m.start(), m.end()


def _dates(text: str, now: _dt.date) -> Iterator[_Span]:
    """Dates (and date-times) near `now`, then CJK dates."""
    for m in _DATETIME.finditer(text):
        if _near(int(m.group(1)), int(m.group(2)), int(m.group(3)), now, RECENT_DAYS):
            yield "datetime" if m.group(4) else "date", m.start(), m.end()
    for m in _CJK_DATE.finditer(text):
        if _near(int(m.group(1)), int(m.group(2)), int(m.group(3)), now, RECENT_DAYS):
            yield "date", m.start(), m.end()


def _clock_times(text: str, examples: _Examples) -> Iterator[_Span]:
    for m in _CLOCK.finditer(text):
        if m.group(1) == "00" and not m.group(2):
            continue  # a round time (09:00:00, 17:30:00) is a schedule, not a clock reading
        # the time of a date-time belongs to that date (judged with the dates)
        after_date = _AFTER_DATE.search(text, max(0, m.start() - 11), m.start())
        if not after_date and not examples.holds(m.start()):
            yield "time", m.start(), m.end()


def _epochs(text: str, now: _dt.date) -> Iterator[_Span]:
    """Unix timestamps (seconds or milliseconds) within a year of `now`."""
    epoch_now = (now - _dt.date(1970, 1, 1)).days * 86400
    for m in _EPOCH.finditer(text):
        seconds = int(m.group(1)) // (1000 if len(m.group(1)) == 13 else 1)
        if abs(seconds - epoch_now) <= 366 * 86400:
            yield "epoch", m.start(), m.end()


def _ids(text: str, examples: _Examples) -> Iterator[_Span]:
    """UUIDs, then hex ids, mixing digits and letters, outside examples."""
    kinds: tuple[tuple[VolatileKind, re.Pattern[str]], ...] = (("uuid", _UUID), ("hex_id", _HEX))
    for kind, pattern in kinds:
        for m in pattern.finditer(text):
            value = m.group(0)
            mixed = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            if mixed and not examples.holds(m.start()):
                yield kind, m.start(), m.end()


def lint_system(text: str, *, today: _dt.date | None = None) -> list[VolatileValue]:
    """The volatile values of a system prompt."""
    return lint_texts([("system prompt", text)], today)


def _strings(value: Any) -> list[tuple[tuple[Any, ...], str]]:
    """Every string in a JSON value with its path (keys and indexes), depth first."""
    out: list[tuple[tuple[Any, ...], str]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            out.append((path, item))
        elif isinstance(item, Mapping):
            stack.extend(((*path, k), v) for k, v in reversed(list(item.items())))
        elif isinstance(item, Sequence):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(item))))
    return out


def tool_values(tool: Tool, today: _dt.date) -> tuple[VolatileValue, ...]:
    """`lint_tool` of a registered `tool`, made once per day and shared (tools are immutable)."""

    def make() -> tuple[VolatileValue, ...]:
        # a template's source is not what the model reads: its rendering is linted
        # per session (`rendered_values`, with the session's template_vars)
        description = "" if tool.template else tool.description
        return tuple(lint_tool(tool.name, description, tool.input_schema, today=today))

    found: tuple[VolatileValue, ...] = tool._derive("volatile", today, make)
    return found


def lint_texts(
    texts: Iterable[tuple[str, str]], today: _dt.date | None = None
) -> list[VolatileValue]:
    """The volatile values of ``(location, text)`` pairs, in order (`find_volatile`)."""
    return [
        VolatileValue(location=where, kind=k, text=v, offset=o)
        for where, text in texts
        for k, o, v in find_volatile(text, today=today)
    ]


def rendered_values(
    tool: str, text: str, sources: Mapping[str, object], today: _dt.date | None = None
) -> list[VolatileValue]:
    """The volatile values of `tool`'s templated description as rendered (`text`).

    Each is located as ``"tool 'x' description (rendered from template_vars['build'])"``:
    `sources` maps a label (``"template_vars['build']"``) to what the template could
    read under it, and the value is put on the first label (sorted) whose text holds it
    or is held in it (``"tool 'x' description (rendered)"`` when none does).
    """
    where = f"tool {tool!r} description (rendered"
    out: list[VolatileValue] = []
    for value in lint_texts([(where + ")", text)], today):
        by = next((k for k, v in sorted(sources.items()) if _carries(v, value.text)), None)
        location = f"{where} from {by})" if by else f"{where})"
        out.append(dataclasses.replace(value, location=location))
    return out


def _carries(source: object, found: str) -> bool:
    """Whether `source` (a JSON-like template value) holds `found`, or holds it in part."""
    texts = [str(source), *(t for _, t in _strings(source))]
    return any(found in t or (len(t) >= 8 and t in found) for t in texts)


def lint_tool(
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    *,
    today: _dt.date | None = None,
) -> list[VolatileValue]:
    """The volatile values of one tool: its name, its description, then its schema's strings."""
    where = f"tool {name!r}"
    out = lint_texts([(f"{where} name", name), (f"{where} description", description)], today)
    strings = _strings(input_schema)
    if not find_volatile("\n".join(t for _, t in strings), today=today):
        return out  # the common case: one scan of the schema's text, not one per string
    at = ((f"{where} input_schema at {'.'.join(map(str, p)) or '(root)'}", t) for p, t in strings)
    return out + lint_texts(at, today)
