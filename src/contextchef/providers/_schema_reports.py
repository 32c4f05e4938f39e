"""What each target's narrower schema dialect changes in a tool (Gemini's subset).

Computed once per tool when it is registered (`ContextChef.schema_reports`, logged by
the session at INFO) and kept on the (immutable) tool.
"""

from __future__ import annotations

import functools

from contextchef.providers._base import Adapter, AdapterDefaults, SchemaReport
from contextchef.providers._targets import TARGETS, get_adapter
from contextchef.tools._tool import Tool

__all__ = ["schema_reports"]


@functools.cache
def _dialects() -> tuple[tuple[str, Adapter], ...]:
    """The targets whose adapter translates schemas (the others send them as they are)."""
    found = ((t, get_adapter(t)) for t in TARGETS)
    return tuple((t, a) for t, a in found if getattr(type(a), "schema_changes", None) is not _SAME)


_SAME: object = AdapterDefaults.schema_changes


def schema_reports(tool: Tool) -> tuple[SchemaReport, ...]:
    """What each target's schema dialect changes in `tool`; unchanged targets left out.

    Made once per tool and shared, like the lint (tools are immutable).
    """

    def make() -> tuple[SchemaReport, ...]:
        out = []
        for target, adapter in _dialects():
            changes, refs = adapter.schema_changes(tool.input_schema)
            if changes or refs:
                out.append(
                    SchemaReport(
                        tool=tool.name,
                        server=tool.server,
                        target=target,
                        changes=changes,
                        refs_resolved=refs,
                    )
                )
        return tuple(out)

    found: tuple[SchemaReport, ...] = tool._derive("schema_reports", None, make)
    return found
