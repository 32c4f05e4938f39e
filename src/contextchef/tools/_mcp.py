"""An MCP server's ``tools/list`` as a session takes it: what a server sends is data (tools layer).

Every listing goes through `checked_listing`, whoever fetched it: `contextchef.mcp.McpHub`
(with the `McpRules` of its `McpServer`), `ContextChef.register_mcp_tools` and
`tools_from_mcp` (with the `McpRules` the host passes, by default the strict ones).
Listings follow MCP specification revision 2025-11-25 (``Tool``: ``name``, ``title``,
``description``, ``inputSchema``, ``outputSchema``, ``annotations``, ``_meta``).

* The listing is capped: at most `McpRules.max_tools` tools and
  `McpRules.max_listing_bytes` bytes (each tool as compact UTF-8 JSON), else
  `McpListingTooLarge` naming the server.
* Each tool must be a JSON object (`check_json`) with a string ``name`` and no ``type``
  (that key marks a provider's shape, whose nested definition would escape the checks).
* Its name is NFKC-normalized, and a name with invisible characters is refused
  (`contextchef.tools._names.outside_name`); two names that are one after normalization
  are refused. Names of contextchef's own tools are reserved by the registry and the view.
  The server's own name (the group header the directory shows) follows the same rule
  (`contextchef.tools._names.server_name`: visible text on one line, NFKC).
* Every ``description`` and ``title`` in it, at any depth, is cut to
  `McpRules.description_chars` characters, and every string (keys included) has our tags
  escaped (`contextchef.tools._text.escape_tags`), so no server text opens or closes a tag
  the library renders (``</available_deferred_tools>``, ``<announcements>``, ...).
  Escaping an ``enum`` value or a property name changes what the tool takes, but only for
  a server that puts our tags there: the model reads a schema too.
* Its ``annotations`` (``readOnlyHint`` and the others) are kept only when the host trusts
  the server (``McpRules(trust_annotations=True)``): a server cannot talk its way into the
  built-in ``read_only`` mode.

`checked_instructions` caps and escapes the server's ``instructions`` (the group
description) the same way, to `McpRules.instructions_chars`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from contextchef._errors import (
    CatalogFormatError,
    InvalidToolError,
    McpListingTooLarge,
    UsageError,
    check_int,
    check_json,
    shown,
    shown_keys,
)
from contextchef._json import is_unicode
from contextchef.tools._catalogs import tool_from_dict
from contextchef.tools._names import outside_name, server_name
from contextchef.tools._text import escape_tags, server_text
from contextchef.tools._tool import Tool

__all__ = [
    "Listed",
    "McpRules",
    "check_listing_size",
    "checked_instructions",
    "checked_listing",
    "checked_tool",
    "tools_from_mcp",
]

_TEXT_KEYS = ("description", "title")


@dataclass(frozen=True, kw_only=True)
class McpRules:
    """What a session takes from one MCP server (the same for every way a listing comes in).

    Attributes:
        trust_annotations: Take the server's tool annotations (``readOnlyHint``, ...) as
            true. Off by default: they are dropped, so the built-in ``read_only`` mode
            keeps none of the server's tools unless your own mode lists them.
        max_tools: Most tools one ``tools/list`` may hold (all pages).
        max_listing_bytes: Most bytes one listing may hold (its tools as compact UTF-8
            JSON; on a stdio connection, also the most one message line may hold).
        instructions_chars: The server's ``instructions`` (or the description a host
            gives it) are cut to this many characters.
        description_chars: Each tool, parameter or schema description or title is cut
            to this many characters.

    Raises:
        UsageError: A flag that is not a bool, a limit that is not an integer >= 1.
    """

    trust_annotations: bool = False
    max_tools: int = 1_000
    max_listing_bytes: int = 5_000_000
    instructions_chars: int = 2_000
    description_chars: int = 2_000

    def __post_init__(self) -> None:
        if not isinstance(self.trust_annotations, bool):
            raise UsageError(
                f"trust_annotations must be True or False, got {shown(self.trust_annotations)}"
            )
        for label in ("max_tools", "max_listing_bytes", "instructions_chars", "description_chars"):
            check_int(label, getattr(self, label), minimum=1)


class Listed(NamedTuple):
    """One listed tool: as the session takes it (`checked_tool`) and as the server sent it."""

    tool: dict[str, Any]
    raw: Mapping[str, Any]


def as_rules(rules: object) -> McpRules:
    """`rules`, or the default `McpRules` for None.

    Raises:
        UsageError: Anything else.
    """
    if rules is None:
        return McpRules()
    if not isinstance(rules, McpRules):
        raise UsageError(f"rules must be an McpRules, got {shown(rules, 80)}")
    return rules


def check_listing_size(count: int, size: int, *, server: str, rules: McpRules) -> None:
    """Refuse a listing of `count` tools and `size` bytes that `rules` do not allow.

    Raises:
        McpListingTooLarge: Naming the server and the limit passed.
    """
    if count <= rules.max_tools and size <= rules.max_listing_bytes:
        return
    over = (
        f"more than {rules.max_tools} tools (max_tools)"
        if count > rules.max_tools
        else f"more than {rules.max_listing_bytes} bytes of tools (max_listing_bytes)"
    )
    raise McpListingTooLarge(
        f"MCP server {shown(server)}: tools/list holds {over}; the listing is refused. "
        "Raise the limit (McpServer(..., max_tools=..., max_listing_bytes=...) or "
        "McpRules(...)) if you trust this server.",
        server=server,
    )


def checked_instructions(text: object, rules: McpRules) -> str:
    """A server's ``instructions`` as the session shows them (capped, tags escaped).

    Raises:
        UsageError: `text` is not a string of valid Unicode.
    """
    if not isinstance(text, str) or not is_unicode(text):
        raise UsageError(f"an MCP server's description must be a string, got {shown(text, 80)}")
    return server_text(text, rules.instructions_chars)


def checked_tool(raw: object, rules: McpRules, server: str) -> dict[str, Any]:
    """A server's tool definition as the session takes it (see the module docstring).

    Values the registry checks anyway (a missing or invalid schema) are left for it.

    Raises:
        CatalogFormatError: `raw` is not an object with a string ``name``, or has ``type``.
        UsageError: `raw` is not JSON data.
        InvalidToolError: The name holds invisible characters or is blank.
    """
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        what = f"keys: {shown_keys(raw)}" if isinstance(raw, Mapping) else type(raw).__name__
        raise CatalogFormatError(
            f"MCP server {shown(server)}: a listed tool is not an object with a string "
            f"'name' ({what})"
        )
    name = outside_name(raw["name"], server=server)
    if "type" in raw:
        raise CatalogFormatError(
            f"MCP server {shown(server)}: tool {name!r} has a 'type' key; an MCP tool is "
            "{name, title?, description?, inputSchema, outputSchema?, annotations?}"
        )
    check_json(f"MCP server {shown(server)}: tool {name!r}", raw)
    kept = {k: v for k, v in raw.items() if k != "annotations" or rules.trust_annotations}
    out: dict[str, Any] = _outside_text(kept, rules.description_chars)
    out["name"] = name
    return out


def checked_listing(
    result: Mapping[str, Any] | Sequence[Any], *, server: str, rules: McpRules
) -> dict[str, Listed]:
    """A ``tools/list`` result (or its ``tools`` list) by the names the session keeps.

    Raises:
        UsageError: `server` is not visible text on one line (`server_name`: no control,
            format or other invisible character; the listing is taken under its NFKC form).
        CatalogFormatError: The result has no ``tools`` list, or a tool is not an object
            with a string ``name`` (or has ``type``).
        McpListingTooLarge: More tools or bytes than `rules` allow.
        InvalidToolError: A name with invisible characters, or two names that are one
            after NFKC normalization.
    """
    server = server_name(server)
    items = result.get("tools") if isinstance(result, Mapping) else result
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise CatalogFormatError(f"MCP tools/list result for {shown(server)} has no 'tools' list")
    check_listing_size(len(items), 0, server=server, rules=rules)
    out: dict[str, Listed] = {}
    size = 0
    for raw in items:
        checked = checked_tool(raw, rules, server)
        text = json.dumps(raw, ensure_ascii=False, separators=(",", ":"), default=dict)
        size += len(text.encode())
        check_listing_size(len(items), size, server=server, rules=rules)
        name = checked["name"]
        if name in out:
            raise InvalidToolError(
                f"MCP server {shown(server)} lists two tools named {name!r} (after NFKC "
                "normalization); the second is refused",
                tool=str(raw["name"]),
            )
        out[name] = Listed(checked, raw)
    return out


def tools_from_mcp(
    result: Mapping[str, Any] | Sequence[Any], *, server: str, rules: McpRules | None = None
) -> list[Tool]:
    """Convert an MCP ``tools/list`` result (or its ``tools`` list) for `server`.

    Applies `rules` (default: `McpRules()`, annotations dropped) as the module docstring
    says; the tools keep the server's order.

    Raises:
        UsageError: `rules` is not an `McpRules`, or as for `checked_listing`.
        CatalogFormatError, McpListingTooLarge, InvalidToolError: As for `checked_listing`.
        InvalidSchemaError: A tool's schema is not valid JSON Schema.
    """
    server = server_name(server)
    listed = checked_listing(result, server=server, rules=as_rules(rules))
    return [tool_from_dict(c.tool, server=server, source="mcp") for c in listed.values()]


def _outside_text(node: Any, limit: int) -> Any:
    """`node` with our tags escaped in every string and key, descriptions and titles capped.

    Caps are `limit` characters; escaping is `escape_tags`.
    """
    if isinstance(node, str):
        return escape_tags(node)
    if isinstance(node, list):
        return [_outside_text(v, limit) for v in node]
    if not isinstance(node, Mapping):
        return node
    return {
        escape_tags(k) if isinstance(k, str) else k: server_text(v, limit)
        if k in _TEXT_KEYS and isinstance(v, str)
        else _outside_text(v, limit)
        for k, v in node.items()
    }
