"""Registration-time checks of a session's tools.

The volatile-value lint (`contextchef.tools._lint`, `contextchef.deferred._prefix_lint`:
off, warn or raise), and the schema reports (`contextchef.providers._schema_reports`)
logged once per tool when it is registered (`watch_schemas`).
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Sequence
from typing import Literal

from contextchef._errors import UsageError, VolatileValueError, shown
from contextchef.deferred._prefix_lint import PrefixItem, prefix_values
from contextchef.providers._base import SchemaReport
from contextchef.providers._schema_reports import schema_reports
from contextchef.session._batches import Check, ToolBatch
from contextchef.tools._lint import VolatileValue, lint_system, tool_values
from contextchef.tools._tool import Tool

__all__ = ["LintMode", "VolatileLint", "watch_schemas"]

LintMode = Literal["off", "warn", "raise"]
_LOG = logging.getLogger("contextchef")


class VolatileLint:
    """Lints the system prompt and everything registered into the prefix; keeps what it found.

    ``"warn"`` logs each value on the ``contextchef`` logger (WARNING) when it is found
    (a shared catalog's tools once a day per process, not once per session) and keeps it
    in `values`; ``"raise"`` raises `VolatileValueError` before the prompt or the tools are
    taken; ``"off"`` does nothing.
    """

    def __init__(self, mode: LintMode) -> None:
        if mode not in ("off", "warn", "raise"):
            raise UsageError(
                f"volatile_lint must be 'off', 'warn' or 'raise', got {shown(mode, 40)}"
            )
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

    def prefix(self, items: Sequence[PrefixItem]) -> None:
        """Lint namespaces, toolkits, skills or ``(server, description)`` about to be taken.

        Raises:
            VolatileValueError: In ``"raise"`` mode, when something was found.
        """
        if self.mode != "off":
            self._keep({f"\x00{k}": v for k, v in prefix_values(items).items()})

    def tools(self, tools: Sequence[Tool], batch: ToolBatch | None = None) -> None:
        """Lint tools about to be registered (`batch`: their `tool_batch`, if any).

        Raises:
            VolatileValueError: In ``"raise"`` mode, when something was found.
        """
        if self.mode == "off":
            return
        today = _dt.datetime.now(_dt.timezone.utc).date()

        ran: list[bool] = []

        def lint() -> dict[str, tuple[VolatileValue, ...]]:
            ran.append(True)
            return {t.name: found for t in tools if (found := tool_values(t, today))}

        # a shared catalog's batch: linted once a day per process
        found: dict[str, tuple[VolatileValue, ...]] = batch.linted(today, lint) if batch else lint()
        self._keep(found, log=bool(ran))  # logged when linted, not by every session
        servers = batch.derived("servers", lambda: _servers(tools)) if batch else _servers(tools)
        self.prefix([(s, None) for s in servers])  # a shared batch's read once (23k tools)

    def _keep(self, found: dict[str, tuple[VolatileValue, ...]], *, log: bool = True) -> None:
        """Keep `found` by key; log what was not known under its key (a loaded toolkit)."""
        known = {v for key in found for v in self._tools.get(key, ())}
        self._handle([v for vs in found.values() for v in vs if v not in known], log=log)
        self._tools.update(found)

    def _handle(self, found: list[VolatileValue], *, log: bool = True) -> tuple[VolatileValue, ...]:
        if found and self.mode == "raise":
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            raise VolatileValueError(found[0].message + more, values=tuple(found))
        for value in found if log else ():
            _LOG.warning("contextchef: %s", value.message)
        return tuple(found)


def _servers(tools: Sequence[Tool]) -> list[str]:
    return sorted({t.server for t in tools if t.server})


def watch_schemas(lint: Check) -> Check:
    """`lint`, then the schema reports of the tools about to be registered.

    Each tool's changes are logged once on the ``contextchef`` logger (INFO).
    """

    def check(tools: Sequence[Tool], batch: ToolBatch | None) -> None:
        lint(tools, batch)

        def changed() -> tuple[tuple[Tool, tuple[SchemaReport, ...]], ...]:
            return tuple((t, found) for t in tools if (found := schema_reports(t)))

        # a shared catalog's batch: its reports are known
        found = batch.derived("schema_reports", changed) if batch else changed()
        for tool, reports in found if _LOG.isEnabledFor(logging.INFO) else ():
            for report in reports:
                _LOG.info(
                    "contextchef: %s: tool %r: %s",
                    report.target,
                    tool.name,
                    "; ".join(report.changes + tuple(f"inlined {r}" for r in report.refs_resolved)),
                )

    return check
