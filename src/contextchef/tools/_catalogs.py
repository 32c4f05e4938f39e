"""Turn the tool shapes agents already have into `Tool` values (tools layer).

Accepted per-tool shapes (`tool_from_dict` detects which):

* Anthropic Messages: ``{"name", "description", "input_schema"}``
* OpenAI Chat Completions: ``{"type": "function", "function": {"name", "description",
  "parameters", "strict"?}}``
* OpenAI Responses: ``{"type": "function", "name", "description", "parameters",
  "strict"?}``
* MCP ``tools/list`` entries: ``{"name", "description", "inputSchema", "annotations"?,
  "title"?, "outputSchema"?}``
* Gemini function declarations: ``{"name", "description", "parameters" |
  "parametersJsonSchema"}``

Whole catalogs: a single-server
catalog file (``{"server", "description", "tools"}``, the format of the catalogs in
``shared/data``), and a bundle (``{"builtin_tools": [...], "servers": [{"server",
"description", "tools"}]}``, the format of the built-in demo catalog). An MCP
``tools/list`` result is server input, not a catalog: `contextchef.tools._mcp.tools_from_mcp`.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextchef._cache import LruMap
from contextchef._errors import (
    CatalogFormatError,
    ContextChefError,
    UsageError,
    json_reason,
    shown,
    shown_keys,
)
from contextchef._json import read_text_file, thaw
from contextchef.tools._names import server_name
from contextchef.tools._schema import repair_schema
from contextchef.tools._tool import Tool, ToolAnnotations, ToolSource

__all__ = [
    "Catalog",
    "expand_tool_dicts",
    "join_catalogs",
    "load_catalog",
    "load_demo_catalog",
    "tool_from_dict",
    "tool_to_dict",
]

_KNOWN_KEYS = frozenset(
    {
        "name",
        "description",
        "input_schema",
        "inputSchema",
        "parameters",
        "parametersJsonSchema",
        "parameters_json_schema",
        "annotations",
        "title",
        "outputSchema",
        "output_schema",
        "strict",
        "type",
        "tags",
        "defer_loading",
        "meta",
        "cache_control",
        "template",
    }
)


def _annotations(raw: Any, title: Any) -> ToolAnnotations:
    if isinstance(raw, ToolAnnotations):
        return raw
    if raw is not None and not isinstance(raw, Mapping):
        raise CatalogFormatError(f"annotations must be an object, got {type(raw).__name__}")
    data = dict(raw or {})
    if isinstance(title, str) and "title" not in data:
        data["title"] = title
    return ToolAnnotations.from_mcp(data)


def _flag(name: str, key: str, raw: Any) -> bool:
    if raw is None:
        return False
    if not isinstance(raw, bool):
        raise CatalogFormatError(
            f"tool {shown(name)}: {shown(key)} must be true or false, got {shown(raw)}"
        )
    return raw


_GEMINI_TYPES = frozenset({"OBJECT", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "NULL"})


def _gemini_types(node: Any) -> Any:
    """Lower-case Gemini ``Schema`` type names (``OBJECT`` -> ``object``).

    Gemini spells types as upper-case enum names; JSON Schema uses lower case
    (https://ai.google.dev/api/caching#Type).
    """
    if isinstance(node, list):
        return [_gemini_types(v) for v in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str) and value in _GEMINI_TYPES:
            out[key] = value.lower()
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {n: _gemini_types(v) for n, v in value.items()}
        else:
            out[key] = _gemini_types(value)
    return out


def _tags(name: str, raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, Sequence) and all(isinstance(t, str) for t in raw):
        return tuple(raw)
    raise CatalogFormatError(f"tool {shown(name)}: 'tags' must be a list of strings")


def tool_to_dict(tool: Tool) -> dict[str, Any]:
    """A tool's definition as plain JSON (`tool_from_dict` reads it back): a snapshot's."""
    out: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "input_schema": thaw(tool.input_schema),
    }
    if tool.output_schema is not None:
        out["output_schema"] = thaw(tool.output_schema)
    if tool.tags:
        out["tags"] = list(tool.tags)
    if tool.strict is not None:
        out["strict"] = tool.strict
    if tool.server is not None:  # an MCP server's tool added mid-session
        out["server"] = tool.server
    return out


def tool_from_dict(
    data: Mapping[str, Any],
    *,
    server: str | None = None,
    source: ToolSource | None = None,
    repair_schemas: bool = False,
    index: int | None = None,
) -> Tool:
    """Build a `Tool` from any supported provider or MCP tool dict.

    Args:
        data: One tool definition (see the module docstring for the shapes).
        server: Server/group name; with it the tool's source defaults to ``"mcp"``.
        source: Override the source (``"builtin"``, ``"mcp"``, ``"runtime"``).
        repair_schemas: Map non-standard schema dialects (``dict``, ``float``, Java type
            names, draft-04 boolean bounds) onto JSON Schema first (`repair_schema`).
        index: Where `data` is in the list it came from, named by an error about a
            definition that has no name to be named by (``tools[3]: ...``).

    Raises:
        CatalogFormatError: The dict matches none of the known shapes.
        InvalidToolError, InvalidSchemaError: The definition itself is invalid.
    """
    at = "" if index is None else f"tools[{index}]: "
    if not isinstance(data, Mapping):
        raise CatalogFormatError(
            f"{at}a tool must be a JSON object, got {type(data).__name__} {shown(data, 80)}"
        )
    body: Mapping[str, Any] = data
    if data.get("type") == "function" and isinstance(data.get("function"), Mapping):
        body = data["function"]  # Chat Completions wraps the definition
    elif "type" in data and data.get("type") not in ("function", "custom"):
        raise CatalogFormatError(
            f"{at}tool {shown(data.get('name', '?'))}: type {shown(data['type'])} is a "
            "provider-hosted tool, not a function definition; only function tools can be registered"
        )
    name = body.get("name")
    if not isinstance(name, str):
        got = f"is {type(name).__name__} {shown(name, 80)}" if "name" in body else "is missing"
        raise CatalogFormatError(
            f"{at}a tool definition needs a string 'name'; its 'name' {got} (keys: "
            f"{shown_keys(body)}); expected an Anthropic, OpenAI Chat/Responses, MCP or Gemini "
            "function definition"
        )
    if data.get("type") == "custom" and "input_schema" not in data:
        raise CatalogFormatError(
            f"{at}tool {shown(name)}: type 'custom' without an 'input_schema' is a Responses "
            "custom tool (free-form text input, no JSON arguments), not a function definition; "
            "register a function tool with a JSON Schema (Anthropic's type 'custom' tools carry "
            "an 'input_schema')"
        )
    schema = None
    for key in (
        "input_schema",
        "inputSchema",
        "parameters",
        "parametersJsonSchema",
        "parameters_json_schema",
    ):
        if key in body and body[key] is not None:
            schema = body[key]
            break
    if schema is not None and body.get("parameters") is schema:
        schema = _gemini_types(schema)
    if repair_schemas and schema is not None:
        schema = repair_schema(schema)
    description = body.get("description")
    if description is not None and not isinstance(description, str):
        raise CatalogFormatError(
            f"tool {shown(name)}: 'description' must be text, got {type(description).__name__} "
            f"{shown(description, 40)}"
        )
    raw_meta = body.get("meta") or {}
    if not isinstance(raw_meta, Mapping):
        raise CatalogFormatError(f"tool {shown(name)}: 'meta' must be an object")
    meta = dict(raw_meta)
    meta.update({k: v for k, v in body.items() if k not in _KNOWN_KEYS})
    strict = body.get("strict")
    defer = body.get("defer_loading")
    return Tool(
        name=name,
        description=description or "",
        input_schema=schema if schema is not None else {"type": "object", "properties": {}},
        tags=_tags(name, body.get("tags")),
        defer_loading=defer if isinstance(defer, bool) else None,
        annotations=_annotations(body.get("annotations"), body.get("title")),
        source=source or ("mcp" if server else "builtin"),
        server=server,
        strict=strict if isinstance(strict, bool) else None,
        output_schema=body.get("outputSchema") or body.get("output_schema"),
        meta=meta,
        template=_flag(name, "template", body.get("template")),
    )


_DECLARATION_KEYS = ("function_declarations", "functionDeclarations")


def expand_tool_dicts(items: Iterable[Any]) -> list[Any]:
    """Flatten Gemini ``Tool`` wrappers (``{"function_declarations": [...]}``) in a list.

    Raises:
        UsageError: `items` is not a list (or other iterable) of tools.
        CatalogFormatError: A wrapper's declarations are not a list.
    """
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise UsageError(
            f"expected a list of tools (Tool values, tool dicts or functions), got "
            f"{type(items).__name__}"
        )
    out: list[Any] = []
    for item in items:
        if not isinstance(item, Mapping):  # a Tool or a function: the common fast path
            out.append(item)
            continue
        key = next((k for k in _DECLARATION_KEYS if k in item), None)
        if key is None:
            out.append(item)
        elif isinstance(item[key], list):
            out.extend(item[key])
        else:
            raise CatalogFormatError(f"{shown(key)} must be a list of function declarations")
    return out


@dataclass(frozen=True, kw_only=True)
class Catalog:
    """Tools loaded from one catalog file, with their server descriptions.

    Attributes:
        tools: The tools, in file order (the registry sorts them).
        server_descriptions: Server name -> description, for every server in the file.
        source: Where the catalog came from (a path or ``"<demo>"``).
    """

    tools: tuple[Tool, ...]
    server_descriptions: Mapping[str, str] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        """Server names by `server_name`'s rule, so registering the catalog is all or nothing.

        Raises:
            CatalogFormatError: Not a mapping, or a server name that is not visible text
                on one line.
        """
        if not isinstance(self.server_descriptions, Mapping):
            raise CatalogFormatError(
                f"server_descriptions must map server names to descriptions, got "
                f"{shown(self.server_descriptions, 60)}"
            )
        names = {
            _group_name(k, self.source or "catalog"): v for k, v in self.server_descriptions.items()
        }
        object.__setattr__(self, "server_descriptions", names)


_JOINED: LruMap[tuple[int, ...], tuple[tuple[Catalog, ...], Catalog]] = LruMap(64)
"""Catalogs joined before: the ids of the parts -> (the parts, kept alive; their join)."""


_LOADED: LruMap[tuple[str, str | None, bool, bytes], tuple[tuple[Tool, ...], Any]] = LruMap(64)
"""Catalog files loaded before: (path, server, repair, SHA-256 of the text) -> (the tools,
the server descriptions as items)."""


def join_catalogs(catalogs: Sequence[Catalog]) -> Catalog:
    """One catalog of `catalogs`' tools in turn, with their server descriptions.

    A later catalog's description of a server wins, as when each is registered in turn.
    The same catalog objects in the same order are joined once per process (LRU, checked
    by identity), so every session registering them gets the same ``tools`` tuple: one
    batch checked once per process instead of one per catalog (issue 27, item 3). One
    catalog is returned as it is.
    """
    parts = tuple(catalogs)
    if len(parts) == 1:
        return parts[0]
    kept = _JOINED.get(key := tuple(map(id, parts)))
    if kept is not None and all(map(operator.is_, kept[0], parts)):
        return kept[1]
    joined = Catalog(
        tools=tuple(t for c in parts for t in c.tools),
        server_descriptions={k: v for c in parts for k, v in c.server_descriptions.items()},
        source=" + ".join(c.source for c in parts),
    )
    _JOINED.put(key, (parts, joined))
    return joined


def _tool_list(raw: Any, where: str) -> list[Any]:
    if not isinstance(raw, list):
        raise CatalogFormatError(
            f"{where} must be a list of tool objects, got {type(raw).__name__}"
        )
    return raw


def _build_all(
    items: list[tuple[Any, str | None]], *, origin: str, repair: bool
) -> tuple[Tool, ...]:
    """Build every tool; report all invalid ones at once, each with its index and name."""
    tools: list[Tool] = []
    problems: list[str] = []
    for i, (item, group) in enumerate(items):
        try:
            tools.append(tool_from_dict(item, server=group, repair_schemas=repair))
        except ContextChefError as exc:
            problems.append(f"[{i}] {exc}")
    if problems:
        shown = "\n  ".join(problems[:5])
        more = f"\n  ... and {len(problems) - 5} more" if len(problems) > 5 else ""
        hint = (
            "\n(load_catalog(..., repair_schemas=True) maps non-standard type names such as "
            "'dict' and 'float' onto JSON Schema)"
            if not repair and any("/type" in p for p in problems)
            else ""
        )
        raise CatalogFormatError(
            f"{origin}: {len(problems)} of {len(items)} tools are invalid:\n  {shown}{more}{hint}"
        )
    return tuple(tools)


def _group_name(name: str, origin: str) -> str:
    """A catalog's server name by `server_name`'s rule (visible text on one line, NFKC).

    Raises:
        CatalogFormatError: It holds control or invisible characters.
    """
    try:
        return server_name(name, f"{origin}: server")
    except UsageError as exc:
        raise CatalogFormatError(str(exc)) from None


def _catalog_from_data(
    data: Any, *, origin: str, server: str | None, repair: bool = False
) -> Catalog:
    if isinstance(data, list):
        data = expand_tool_dicts(data)
        tools = _build_all([(t, server) for t in data], origin=origin, repair=repair)
        return Catalog(tools=tools, source=origin)
    if not isinstance(data, Mapping):
        raise CatalogFormatError(f"{origin}: a catalog must be a JSON object or list")
    if "builtin_tools" in data or ("servers" in data and "tools" not in data):
        items: list[tuple[Any, str | None]] = [
            (t, None) for t in _tool_list(data.get("builtin_tools") or [], "'builtin_tools'")
        ]
        descriptions: dict[str, str] = {}
        groups = data.get("servers") or []
        if not isinstance(groups, list) or not all(isinstance(g, Mapping) for g in groups):
            raise CatalogFormatError(f"{origin}: 'servers' must be a list of objects")
        for group in groups:
            name = group.get("server") or group.get("name")
            if not isinstance(name, str) or not name:
                raise CatalogFormatError(f"{origin}: every entry of 'servers' needs a 'server'")
            name = _group_name(name, origin)
            descriptions[name] = str(group.get("description") or "")
            items += [
                (t, name) for t in _tool_list(group.get("tools") or [], f"{shown(name)} tools")
            ]
        tools = _build_all(items, origin=origin, repair=repair)
        return Catalog(tools=tools, server_descriptions=descriptions, source=origin)
    if "tools" in data:
        name = server or data.get("server")
        if name is not None and (not isinstance(name, str) or not name):
            raise CatalogFormatError(f"{origin}: 'server' must be a non-empty string")
        name = None if name is None else _group_name(name, origin)
        raw = _tool_list(data["tools"], f"{origin}: 'tools'")
        tools = _build_all([(t, name) for t in raw], origin=origin, repair=repair)
        descriptions = {name: str(data.get("description") or "")} if name else {}
        return Catalog(tools=tools, server_descriptions=descriptions, source=origin)
    raise CatalogFormatError(
        f"{origin}: not a catalog: expected a list of tools, {{'tools': [...]}} (MCP "
        "tools/list or a server catalog) or {'servers': [...], 'builtin_tools': [...]}"
    )


def load_catalog(
    path: str | Path, *, server: str | None = None, repair_schemas: bool = False
) -> Catalog:
    """Load a catalog JSON file.

    The file is read and hashed on every call; the same path string with the same text
    (and `server`, `repair_schemas`) loaded before in this process gives a new `Catalog` holding the
    same ``tools`` tuple (of immutable `Tool` values), so sessions that each load it
    share the registry state, view and rendered tools built for it once (issue 27, item
    3; an LRU of 64 files). A changed file is loaded and checked anew.

    Args:
        path: The file.
        server: Override the server name declared in the file (single-server catalogs).
        repair_schemas: Map non-standard schema dialects onto JSON Schema
            (`repair_schema`); needed for benchmark catalogs such as BFCL's.

    Raises:
        CatalogFormatError: The file is missing, larger than 256 MiB
            (`contextchef._json.MAX_FILE_BYTES`), not JSON, or not a known catalog shape.
    """
    if not isinstance(path, (str, Path)):
        raise UsageError(f"a catalog path is a str or Path, got {type(path).__name__}")
    p = Path(path)
    try:
        text = read_text_file(p)
        key = (str(p), server, bool(repair_schemas), hashlib.sha256(text.encode()).digest())
        kept = _LOADED.get(key) if server is None or type(server) is str else None
        if kept is not None:  # the same text: the same tools, checked once per process
            return Catalog(tools=kept[0], server_descriptions=dict(kept[1]), source=str(p))
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogFormatError(
            f"catalog {shown(str(p), 200)} is not valid JSON: {json_reason(exc)}"
        ) from exc
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, bad path text
        raise CatalogFormatError(f"cannot read catalog {shown(str(p), 200)}: {exc}") from exc
    except RecursionError as exc:
        raise CatalogFormatError(f"catalog {shown(str(p), 200)} is nested too deeply") from exc
    catalog = _catalog_from_data(data, origin=str(p), server=server, repair=repair_schemas)
    if server is None or type(server) is str:
        _LOADED.put(key, (catalog.tools, tuple(catalog.server_descriptions.items())))
    return catalog


def load_demo_catalog() -> Catalog:
    """The built-in demo catalog: a coding agent's builtins plus several MCP servers."""
    from importlib import resources  # local: it imports tempfile, zipfile

    text = resources.files("contextchef").joinpath("data/demo_catalog.json").read_text("utf-8")
    return _catalog_from_data(json.loads(text), origin="<demo>", server=None)
