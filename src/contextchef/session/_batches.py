"""Tool inputs to `Tool` values, and registration batches checked once per process.

`build_tools` turns what a host passes to ``register_tools`` (tools, tool dicts in any
provider's shape, functions) into `Tool` values. `tool_batch` remembers a tuple of
`Tool` values, such as a loaded `Catalog`'s ``tools``: every session that registers the
same tuple again skips the per-tool work that depends on the tools alone (their wire
names, whether any is templated, the volatile-value lint of the day), which is most of
starting a session over a shared catalog (issue 14: fast start). `Tool` values are
immutable, so what was derived from them stays true.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextchef._cache import LruMap
from contextchef._errors import UsageError, shown
from contextchef.tools._callable import schema_from_callable
from contextchef.tools._catalogs import expand_tool_dicts, tool_from_dict
from contextchef.tools._names import wire_name
from contextchef.tools._registry import Handler
from contextchef.tools._tool import Tool

__all__ = ["Check", "ToolBatch", "build_tools", "tool_batch"]

BATCHES = 256
"""How many registered tuples of tools are remembered (LRU)."""


def build_tools(
    tools: Iterable[Any], *, server: str | None = None
) -> tuple[list[Tool], dict[str, Handler]]:
    """Tool inputs -> tools, and the handlers of those given as functions.

    Raises:
        UsageError: An input that is none of a `Tool`, a tool dict or a function, or a
            `Tool` claiming the reserved ``"library"`` source.
        InvalidToolError, InvalidSchemaError, CatalogFormatError: A bad tool dict.
    """
    built: list[Tool] = []
    funcs: dict[str, Handler] = {}
    for i, item in enumerate(expand_tool_dicts(tools)):
        if isinstance(item, Tool):
            if item.source == "library":
                raise UsageError(
                    f"tool {shown(item.name)}: source 'library' is reserved for contextchef's "
                    "own tools; use 'builtin', 'mcp' or 'runtime'"
                )
            built.append(item)
        elif isinstance(item, Mapping):
            built.append(tool_from_dict(item, server=server, index=i))
        elif callable(item):
            name, description, schema, runner = schema_from_callable(item)
            built.append(
                Tool(
                    name=name,
                    description=description,
                    input_schema=schema,
                    source="mcp" if server else "builtin",
                    server=server,
                )
            )
            funcs.setdefault(name, runner)
        else:
            raise UsageError(
                f"tools[{i}]: cannot register {type(item).__name__} {shown(item, 80)}: expected a "
                "Tool, a tool dict or a function"
            )
    return built, funcs


@dataclass(frozen=True, eq=False)
class ToolBatch:
    """A tuple of `Tool` values already turned into a batch (see the module docstring)."""

    tools: tuple[Tool, ...]
    templated: bool
    _lint: dict[Any, Any] = field(default_factory=dict)
    _derived: dict[object, Any] = field(default_factory=dict)  # by name; wires by `qualify`
    listed: list[Tool] = field(default_factory=list)  # `tools`, compared with lists in C

    def wires(self, qualify: bool) -> frozenset[str]:
        """The batch's wire names under a registry's naming rule (`qualify`)."""
        found: frozenset[str] | None = self._derived.get(qualify)
        if found is None:
            found = self._derived[qualify] = frozenset(
                wire_name(t.origin, t.name, server=t.server, qualify=qualify) for t in self.tools
            )
        return found

    def derived(self, name: str, make: Callable[[], Any]) -> Any:
        """`make()` once per `name` (values that depend on the tools alone)."""
        if (found := self._derived.get(name)) is None:
            found = self._derived[name] = make()
        return found

    def linted(self, key: Any, make: Callable[[], Any]) -> Any:
        """`make()` once per `key` (the lint keys by day)."""
        if key not in self._lint:
            self._lint.clear()  # only today's is ever asked for again
            self._lint[key] = make()
        return self._lint[key]


Check = Callable[[Sequence[Tool], "ToolBatch | None"], None]
"""A registration check (the lint): the tools about to be registered, their batch if any."""

_batches: LruMap[tuple[int, int, int], ToolBatch] = LruMap(BATCHES)


def tool_batch(tools: object) -> ToolBatch | None:
    """The remembered batch for a non-empty tuple or list of `Tool` values, else None.

    Keyed by length and first and last tool ids (kept alive by the batch), checked by
    identity (a catalog's tuple) or item by item (a list of the same tools; issue 27).
    Anything else (dicts, functions, library tools) goes through `build_tools` every time.
    """
    if not isinstance(tools, (tuple, list)) or not tools:
        return None
    hit = _batches.get(key := (len(tools), id(tools[0]), id(tools[-1])))
    if hit is not None and (hit.tools is tools or hit.listed == tools):
        return hit
    if not all(isinstance(t, Tool) and t.source != "library" for t in tools):
        return None
    batch = ToolBatch(tuple(tools), any(t.template for t in tools), listed=list(tools))
    _batches.put(key, batch)
    return batch
