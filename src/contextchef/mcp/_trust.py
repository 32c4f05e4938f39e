"""What an MCP server sends is data: names checked, text escaped and capped, hints dropped.

A server's tool definition becomes a session tool only through `checked_tool`:

* its name is NFKC-normalized, and a name with invisible characters is refused
  (`contextchef.tools._names.outside_name`: `InvalidToolError` naming server and tool);
  names of contextchef's own tools are reserved by the registry and the view;
* its description, its ``title`` and every ``description`` / ``title`` inside its input
  schema are cut to ``McpServer.description_chars`` characters, and every string of it
  (schema keys and values included) has our tags escaped
  (`contextchef.deferred._text.escape_tags`), so no server text opens or closes a tag the
  library renders (``</available_deferred_tools>``, ``<announcements>``, ...);
* its ``annotations`` (``readOnlyHint`` and the others) are kept only for a server the host
  trusts (``McpServer(trust_annotations=True)``): a server cannot talk its way into the
  built-in ``read_only`` mode.

`checked_instructions` does the same for the server's ``instructions`` (cut to
``McpServer.instructions_chars``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextchef.deferred._text import escape_tags, server_text
from contextchef.mcp._client import McpServer
from contextchef.tools._names import outside_name

__all__ = ["checked_instructions", "checked_tool"]

_TEXT_KEYS = ("description", "title")


def checked_instructions(text: str, spec: McpServer) -> str:
    """A server's ``instructions`` as the session shows them (capped, tags escaped)."""
    return server_text(text, spec.instructions_chars)


def checked_tool(raw: Mapping[str, Any], spec: McpServer, server: str) -> dict[str, Any]:
    """A server's tool definition as the session takes it (see the module docstring).

    Values the registry checks anyway (a name that is not text, a missing schema) are
    left for it to refuse.

    Raises:
        InvalidToolError: The name holds invisible characters or is blank.
    """
    out = dict(raw)
    if isinstance(out.get("name"), str):
        out["name"] = outside_name(out["name"], server=server)
    for key in _TEXT_KEYS:
        if isinstance(out.get(key), str):
            out[key] = server_text(out[key], spec.description_chars)
    if "inputSchema" in out:
        out["inputSchema"] = _schema_text(out["inputSchema"], spec.description_chars)
    if not spec.trust_annotations:
        out.pop("annotations", None)
    elif isinstance(out.get("annotations"), Mapping) and "title" in out["annotations"]:
        out["annotations"] = _schema_text(out["annotations"], spec.description_chars)
    return out


def _schema_text(node: Any, limit: int) -> Any:
    """`node` with our tags escaped in every string and key, descriptions and titles capped.

    Caps are `limit` characters; escaping is `escape_tags`.

    Escaping an ``enum`` value or a property name changes what the tool takes, but only
    for a server that puts our tags there: the model reads a schema too.
    """
    if isinstance(node, str):
        return escape_tags(node)
    if isinstance(node, list):
        return [_schema_text(v, limit) for v in node]
    if not isinstance(node, Mapping):
        return node
    return {
        escape_tags(k) if isinstance(k, str) else k: server_text(v, limit)
        if k in _TEXT_KEYS and isinstance(v, str)
        else _schema_text(v, limit)
        for k, v in node.items()
    }
