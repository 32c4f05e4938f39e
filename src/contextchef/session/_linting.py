"""The session's volatile-value lint (`contextchef.tools._lint`): off, warn or raise."""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Sequence
from typing import Literal

from contextchef._errors import UsageError, VolatileValueError
from contextchef.session._batches import tool_batch
from contextchef.tools._lint import VolatileValue, find_volatile, lint_system, lint_tool
from contextchef.tools._tool import Tool

__all__ = ["LintMode", "VolatileLint"]

LintMode = Literal["off", "warn", "raise"]
_LOG = logging.getLogger("contextchef")


def _linted(tool: Tool, today: _dt.date) -> tuple[VolatileValue, ...]:
    """`lint_tool` of `tool`, made once per day and shared (tools are immutable)."""

    def make() -> tuple[VolatileValue, ...]:
        # a template's source is not what the model reads (its variables are fixed per
        # session and its helpers cannot read a clock): its schema is linted, not it
        description = "" if tool.template else tool.description
        return tuple(lint_tool(tool.name, description, tool.input_schema, today=today))

    found: tuple[VolatileValue, ...] = tool._derive("volatile", today, make)
    return found


class VolatileLint:
    """Lints the system prompt and each registered tool; keeps what it found.

    ``"warn"`` logs each value on the ``contextchef`` logger (WARNING) and keeps it in
    `values`; ``"raise"`` raises `VolatileValueError` before the prompt or the tools are
    taken; ``"off"`` does nothing.
    """

    def __init__(self, mode: LintMode) -> None:
        if mode not in ("off", "warn", "raise"):
            raise UsageError(f"volatile_lint must be 'off', 'warn' or 'raise', got {mode!r:.40}")
        self.mode = mode
        self._system: tuple[VolatileValue, ...] = ()
        self._tools: dict[str, tuple[VolatileValue, ...]] = {}

    @property
    def values(self) -> tuple[VolatileValue, ...]:
        """What was found in the current system prompt, then in the tools by name."""
        return self._system + tuple(v for name in sorted(self._tools) for v in self._tools[name])

    def system(self, text: str) -> None:
        """Lint a system prompt about to be set.

        Raises:
            VolatileValueError: In ``"raise"`` mode, when something was found.
        """
        if self.mode != "off":
            self._system = self._handle(lint_system(text))

    def text(self, location: str, text: str | None) -> None:
        """Lint another prefix text (a server description) about to be taken.

        Raises:
            VolatileValueError: In ``"raise"`` mode, when something was found.
        """
        if self.mode == "off" or not isinstance(text, str) or not text:
            return
        found = [
            VolatileValue(location=location, kind=k, text=v, offset=o)
            for k, o, v in find_volatile(text)
        ]
        self._tools[f"\x00{location}"] = self._handle(found)

    def tools(self, tools: Sequence[Tool]) -> None:
        """Lint tools about to be registered (raising in ``"raise"`` mode).

        Raises:
            VolatileValueError: In ``"raise"`` mode, when something was found.
        """
        if self.mode == "off":
            return
        today = _dt.datetime.now(_dt.timezone.utc).date()

        def lint() -> dict[str, tuple[VolatileValue, ...]]:
            return {t.name: found for t in tools if (found := _linted(t, today))}

        batch = tool_batch(tools)  # a shared catalog's tuple: linted once a day per process
        found: dict[str, tuple[VolatileValue, ...]] = batch.linted(today, lint) if batch else lint()
        self._handle([v for values in found.values() for v in values])
        self._tools.update(found)

    def _handle(self, found: list[VolatileValue]) -> tuple[VolatileValue, ...]:
        if found and self.mode == "raise":
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            raise VolatileValueError(found[0].message + more, values=tuple(found))
        for value in found:
            _LOG.warning("contextchef: %s", value.message)
        return tuple(found)
