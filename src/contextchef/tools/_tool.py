"""`Tool`: one tool definition as pure data (tools layer)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from contextchef._errors import InvalidToolError, UsageError, check_json, check_str, shown
from contextchef._json import JsonValue, canonical_dumps, canonical_value, freeze, is_unicode
from contextchef.tools._names import server_name
from contextchef.tools._schema import check_input_schema

__all__ = ["CompiledTool", "Tool", "ToolAnnotations", "ToolSource", "described_server"]

ToolSource = Literal["builtin", "mcp", "runtime", "library"]
"""Where a tool comes from: shipped with the agent, an MCP server, made at run time, or
owned by contextchef itself (memory, ``new_context``: registered by the session)."""


@dataclass(frozen=True, kw_only=True)
class ToolAnnotations:
    """Behaviour hints, as in MCP's ``ToolAnnotations``.

    ``None`` means "not declared". Hints are hints: a server may be wrong about them, so
    modes that rely on them (e.g. read-only) trust the registering host, not the model.
    """

    read_only: bool | None = None
    """The tool does not modify its environment (MCP ``readOnlyHint``)."""
    destructive: bool | None = None
    """The tool may delete or overwrite (MCP ``destructiveHint``)."""
    idempotent: bool | None = None
    """Repeating a call with the same arguments has no further effect (``idempotentHint``)."""
    open_world: bool | None = None
    """The tool talks to an open world such as the web (``openWorldHint``)."""
    title: str | None = None
    """A human-readable title."""

    @classmethod
    def from_mcp(cls, data: Mapping[str, Any] | None) -> ToolAnnotations:
        """Build from an MCP ``annotations`` object (camelCase hint names)."""
        if not data:
            return cls()

        def flag(key: str) -> bool | None:
            value = data.get(key)
            return value if isinstance(value, bool) else None

        title = data.get("title")
        return cls(
            read_only=flag("readOnlyHint"),
            destructive=flag("destructiveHint"),
            idempotent=flag("idempotentHint"),
            open_world=flag("openWorldHint"),
            title=title if isinstance(title, str) else None,
        )


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A tool definition: pure, comparable data, no handler and no provider knowledge.

    Construction validates and normalizes: the input_schema is checked against its JSON
    Schema meta-schema and stored with canonical key order (``properties`` keep the
    author's order); tags are lower-cased, de-duplicated and sorted.

    Raises:
        InvalidToolError: Empty name, ``server`` given/missing inconsistently with
            ``source``, or a ``server`` that is not visible text on one line
            (`contextchef.tools._names.server_name`; it is kept NFKC-normalized).
        InvalidSchemaError: The input_schema is not a valid object JSON Schema.
    """

    name: str
    """The tool's own name as its author gave it (MCP names may contain dots)."""
    description: str = ""
    """Model-facing description, in characters as given."""
    input_schema: Mapping[str, JsonValue] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """JSON Schema of the arguments object."""
    tags: tuple[str, ...] = ()
    """Free labels used by search and pruning."""
    defer_loading: bool | None = None
    """Tri-state exposure declaration: True defer, False keep resident, None session default."""
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    """Behaviour hints (read-only, destructive, ...)."""
    source: ToolSource = "builtin"
    """Where the tool comes from."""
    server: str | None = None
    """The MCP server (or tool group) name; required when ``source == "mcp"``. Visible
    text on one line, kept NFKC-normalized (`contextchef.tools._names.server_name`)."""
    strict: bool | None = None
    """Whether the author asked for provider strict mode (OpenAI structured outputs)."""
    output_schema: Mapping[str, JsonValue] | None = None
    """Optional JSON Schema of the result (MCP ``outputSchema``); not sent to models."""
    meta: Mapping[str, JsonValue] = field(default_factory=dict)
    """Any other fields of the source definition, kept for round-tripping."""
    template: bool = False
    """The description is a template, rendered once per session through the pure
    channel (`contextchef.tools._template`); the definition itself stays plain data."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidToolError(
                f"tool name must be a non-empty string, got {shown(self.name)}",
                tool=shown(self.name),
            )
        self._check_server()
        if not isinstance(self.description, str):
            raise InvalidToolError(
                f"tool {shown(self.name)}: description must be a string, got "
                f"{type(self.description).__name__}",
                tool=self.name,
            )
        schema = check_input_schema(self.name, self.input_schema)
        texts = {"name": self.name, "description": self.description, "server": self.server or ""}
        texts["input_schema"] = canonical_dumps(schema)
        bad = sorted(field for field, text in texts.items() if not is_unicode(text))
        if bad:
            raise InvalidToolError(
                f"tool {shown(self.name, 80)}: {', '.join(bad)} hold text that is not valid "
                f"Unicode "
                "(a lone surrogate, as json.loads gives for '\\ud800'); fix the source data",
                tool=self.name,
            )
        object.__setattr__(self, "input_schema", freeze(schema))
        if isinstance(self.tags, (str, bytes, Mapping)) or not isinstance(self.tags, Iterable):
            raise InvalidToolError(
                f"tool {shown(self.name, 80)}: tags must be a list of strings, got "
                f"{shown(self.tags, 60)}",
                tool=self.name,
            )
        if not all(isinstance(t, str) for t in self.tags):
            raise InvalidToolError(
                f"tool {shown(self.name, 80)}: every tag must be a string", tool=self.name
            )
        tags = tuple(sorted({t.strip().lower() for t in self.tags if t.strip()}))
        if not all(is_unicode(tag) for tag in tags):
            raise InvalidToolError(
                f"tool {shown(self.name, 80)}: a tag holds text that is not valid Unicode",
                tool=self.name,
            )
        object.__setattr__(self, "tags", tags)
        for slot, value in (("meta", self.meta), ("output_schema", self.output_schema)):
            if slot == "meta" or value is not None:
                if not isinstance(value, Mapping):
                    raise InvalidToolError(
                        f"tool {shown(self.name, 80)}: {slot} must be a JSON object, got "
                        f"{shown(value, 60)}",
                        tool=self.name,
                    )
                try:
                    check_json(f"tool {shown(self.name, 80)}: {slot}", value)
                except UsageError as exc:
                    raise InvalidToolError(str(exc), tool=self.name) from None
        object.__setattr__(self, "meta", freeze(canonical_value(dict(self.meta))))
        if self.output_schema is not None:
            frozen = freeze(canonical_value(dict(self.output_schema)))
            object.__setattr__(self, "output_schema", frozen)

    def _check_server(self) -> None:
        """Check ``server`` against ``source`` and `server_name`; keep its NFKC form."""
        if self.source == "mcp" and not self.server:
            raise InvalidToolError(
                f"tool {shown(self.name)}: source 'mcp' needs the server name (server=...)",
                tool=self.name,
            )
        if self.server is not None:
            try:
                server = server_name(self.server, f"tool {shown(self.name)}: server")
            except UsageError as exc:
                raise InvalidToolError(f"{exc} (or None)", tool=self.name) from None
            object.__setattr__(self, "server", server)
        if self.server in ("builtin", "runtime"):
            raise InvalidToolError(
                f"tool {shown(self.name)}: server name {shown(self.server)} is reserved for tool "
                "origins; pick another server name",
                tool=self.name,
            )

    @functools.cached_property
    def origin(self) -> str:
        """``"builtin"``, ``"runtime"``, or the server name for grouped/MCP tools."""
        return self.server if self.server else self.source

    @functools.cached_property
    def key(self) -> tuple[str, str]:
        """Identity in a registry: (origin, name)."""
        return (self.origin, self.name)

    def _derive(self, kind: str, arg: object, make: Any) -> Any:
        """A value computed from this tool alone (and `arg`), made once and shared.

        Tools are immutable and shared by every session that registers them, so what a
        session derives from one (its registry digest, its compiled definition) is kept
        here for the next session (issue 14: shared catalog state). `make` is called on
        a miss; two threads may both call it, and either result is kept.
        """
        cache: dict[tuple[str, object], Any] = self.__dict__.setdefault("_derived", {})
        try:
            return cache[kind, arg]
        except KeyError:
            value = cache.setdefault((kind, arg), make())
            return value

    def replace(self, **changes: Any) -> Tool:
        """Return a copy with some fields changed (the original is untouched)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class CompiledTool:
    """A tool as the model sees it, ready for any adapter.

    Attributes:
        name: Provider-legal wire name.
        description: Model-facing description (origin shown for grouped tools).
        input_schema: Canonical JSON Schema of the arguments.
        strict: The author asked for strict mode (adapters send it only where the
            provider supports it and the schema can be made strict).
        defer_loading: The tool is deferred (only adapters with native tool search emit
            it; others never receive deferred tools).
        group: The group (MCP server) of a deferred tool, for providers that declare
            deferred tools in groups (Responses ``namespace`` entries); None otherwise.
    """

    name: str
    description: str
    input_schema: Mapping[str, JsonValue]
    strict: bool = False
    defer_loading: bool = False
    group: str | None = None


def described_server(
    server: str | None, description: str | None, tools: Iterable[Tool]
) -> list[tuple[str, str]]:
    """``[(server, description)]`` for a batch's ``server_description``; ``[]`` without one.

    The server is `server` when given, else the one server all `tools` share (their
    ``server``): a description meant for the batch's server is never silently dropped.

    Raises:
        UsageError: `description` is not a string, or no `server` was given and the tools
            are of no server or of several (the message lists them).
    """
    if description is None:
        return []
    check_str("server_description", description)
    if server is None:
        servers = sorted({t.server or "" for t in tools})
        if len(servers) != 1 or not servers[0]:
            raise UsageError(
                "server_description needs the server it describes: pass server=<name>, or "
                "register tools that all share one server; these tools are of "
                + (f"servers {servers[:5]}" if len(servers) > 1 else "no server")
            )
        server = servers[0]
    return [(server, description)]
