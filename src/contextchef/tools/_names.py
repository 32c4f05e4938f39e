r"""Provider-legal wire names for tools (tools layer).

Provider rules differ (Anthropic and OpenAI: ``^[a-zA-Z0-9_-]{1,64}$``; Gemini: must
start with a letter or underscore, dots and colons allowed, at most 64 characters; each
cited in `contextchef.history._call_names`), so one mapping satisfies the strictest
common rule, `WIRE_NAME_RE`: ``^[A-Za-z_][A-Za-z0-9_-]{0,63}$``. The same name
is then used for every provider, which keeps cached prefixes interchangeable.

The mapping is a pure function of (origin, name, qualify): registering another server
never changes an existing tool's wire name.

* builtin and runtime tools keep their own name; MCP / grouped tools are qualified as
  ``<server>__<name>`` (``qualify=False`` drops the prefix);
* if any character had to be replaced, the name started with a digit, the server part
  holds the ``__`` separator or ends in ``_``, or the result was longer than 64
  characters, the base is cut to 55 characters and ``_`` plus an 8-hex-digit SHA-256
  of ``origin\0name`` is appended, so ``a.b`` and ``a_b`` stay distinct and the
  suffix is stable across runs.

The few clashes left (e.g. a builtin literally named ``github__search`` beside server
``github``'s ``search``) are detected by the registry, which raises instead of guessing.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from contextchef._cache import LruMap, lru_cache
from contextchef._errors import InvalidToolError, UsageError, check_str, shown
from contextchef._json import is_unicode

__all__ = [
    "MAX_WIRE_NAME",
    "RESERVED_NAMES",
    "WIRE_NAME_RE",
    "is_wire_legal",
    "outside_name",
    "server_name",
    "wire_name",
]

MAX_WIRE_NAME = 64
WIRE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
SEPARATOR = "__"
_HASH_LEN = 8
_ILLEGAL = re.compile(r"[^A-Za-z0-9_-]")


RESERVED_NAMES = frozenset(
    {
        "context",
        "create_memory",
        "defer_execute",
        "load_skill",
        "load_toolkit",
        "malformed_tool_call",
        "modify_memory",
        "new_context",
        "read_memories",
        "read_offloaded",
        "search_archive",
        "tool_search",
    }
)
"""The names of contextchef's own tools (and ``malformed_tool_call``, the name a call no
tool can answer is recorded under: `contextchef.history._call_names`), reserved whether or
not a session has them: a
server's tool never gets one as its wire name (the registry refuses it), and a bare name
the model writes never resolves to anyone else's tool (`SessionView.lookup`). The tests
check that every library tool is listed."""


def outside_name(name: str, *, server: str) -> str:
    """A tool name from outside (an MCP server) as the session keeps it: NFKC-normalized.

    Raises:
        InvalidToolError: The name is empty or holds an invisible character (a format
            or control character such as a zero-width space, or a bidirectional
            override), which would show the model one name and mean another; the
            message names the server and the tool.
    """
    hidden = _invisible(name)
    if hidden or not name.strip():
        what = f"invisible characters ({', '.join(hidden)})" if hidden else "no visible name"
        raise InvalidToolError(
            f"MCP server {shown(server)}: tool {name!r} has {what}; a tool name must be "
            "visible text (ask the server's author to rename it)",
            tool=name,
        )
    return unicodedata.normalize("NFKC", name)


_HIDDEN = frozenset({"Cf", "Cc", "Zl", "Zp", "Co", "Cn", "Cs"})
"""Unicode categories of characters nobody sees: format, control, separators of lines
and paragraphs, private use, unassigned, surrogates."""


def _invisible(text: str) -> list[str]:
    """The invisible characters of `text` (`_HIDDEN`), as sorted ``U+XXXX`` codes."""
    return sorted({f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in _HIDDEN})


_SERVER_NAMES: LruMap[str, str] = LruMap(4096)
"""Server names already checked -> their kept form (a session registers the same ones)."""


def server_name(name: object, what: str = "an MCP server's name") -> str:
    """A server (tool group) name as the session keeps it: visible text, NFKC-normalized.

    The rule of `outside_name` for tool names, for every way a group name comes in (an MCP
    server's ``serverInfo.name``, ``McpServer(name=...)``, ``register_mcp_tools(server=
    ...)``, a `Tool`'s ``server``, a catalog's server): the name is written into the
    deferred directory as a group header, so an invisible character (a zero-width space,
    a bidirectional override) would show the model one group and mean another, and a
    newline or other control character would let it write lines of its own (a forged
    group or tool) into the directory.

    Raises:
        UsageError: Not a string of valid Unicode, blank, or holding invisible characters
            (format, control (newline, tab), line or paragraph separators, private use,
            unassigned); the message names `what`, the name and the characters.
    """
    if type(name) is str and (known := _SERVER_NAMES.get(name)) is not None:
        return known
    if isinstance(name, str) and not is_unicode(name):
        raise UsageError(
            f"{what} {shown(name)} holds a lone surrogate (not valid Unicode text); a server "
            "name must be visible text on one line"
        )
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"{what} must be a non-empty string of visible text, got {shown(name)}")
    folded = unicodedata.normalize("NFKC", name)
    hidden = _invisible(name) or _invisible(folded)
    if hidden:
        raise UsageError(
            f"{what} {shown(name)} has control or invisible characters "
            f"({', '.join(hidden)}); a server name must be visible text on one line (no "
            "control, format or line-separator characters)"
        )
    if type(name) is str:
        _SERVER_NAMES.put(name, folded)
    return folded


def is_wire_legal(name: str) -> bool:
    """True if `name` is accepted as a tool name by every supported provider."""
    return WIRE_NAME_RE.fullmatch(name) is not None


def _digest(origin: str, name: str) -> str:
    key = f"{origin}\0{name}".encode("utf-8", "surrogatepass")  # lone surrogates: still a name
    return hashlib.sha256(key).hexdigest()[:_HASH_LEN]


def wire_name(origin: str, name: str, *, server: str | None, qualify: bool = True) -> str:
    """Return the provider-legal name the model sees for a tool.

    Args:
        origin: The tool's origin (``"builtin"``, ``"runtime"`` or the server name); it
            seeds the disambiguating hash.
        name: The tool's own name.
        server: The server/group to qualify with, or None for unqualified tools.
        qualify: Prefix grouped tools with their server name.

    Returns:
        A string matching `WIRE_NAME_RE`.

    Raises:
        UsageError: `origin`, `name` or `server` is not valid text, `qualify` not a bool.
    """
    if not (isinstance(origin, str) and isinstance(name, str) and type(qualify) is bool) or not (
        server is None or isinstance(server, str)
    ):
        check_str("origin", origin)
        check_str("name", name)
        if server is not None:
            check_str("server", server)
        raise UsageError(f"qualify must be a bool, got {shown(qualify, 40)}")
    return _wire_name(origin, name, server, qualify)


@lru_cache(maxsize=1 << 16)
def _wire_name(origin: str, name: str, server: str | None, qualify: bool) -> str:
    parts = [server, name] if (qualify and server) else [name]
    # A server part holding the separator (or ending in "_") would make the split point
    # ambiguous: "a__b"+"c" and "a"+"b__c" would meet.
    lossy = len(parts) > 1 and (SEPARATOR in parts[0] or parts[0].endswith("_"))
    clean = []
    for part in parts:
        fixed = _ILLEGAL.sub("_", part)
        lossy = lossy or fixed != part
        clean.append(fixed)
    base = SEPARATOR.join(clean)
    if not re.match(r"[A-Za-z_]", base):
        base = "_" + base
        lossy = True
    if lossy or len(base) > MAX_WIRE_NAME:
        base = base[: MAX_WIRE_NAME - _HASH_LEN - 1] + "_" + _digest(origin, name)
    return base
