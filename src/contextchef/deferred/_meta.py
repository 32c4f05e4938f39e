"""The meta-tools `tool_search` / `defer_execute` and their model-facing text (deferred layer).

Deferred tools leave only their names in the prompt: a directory rendered into
``tool_search``'s description. The model fetches schemas with ``tool_search`` (exact
``tool_names`` or fuzzy ``queries``, exactly one) and calls a deferred tool through
``defer_execute(tool_name, params)``. Both meta-tools have static schemas and, for a given
set of deferred tools, a byte-stable description.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contextchef._echo import echo
from contextchef._errors import UsageError, shown
from contextchef._json import JsonValue, freeze
from contextchef.search._rankers import RankerConfig
from contextchef.tools._property_keys import wire_keys
from contextchef.tools._schema import summarize_parameters
from contextchef.tools._text import escape_tags
from contextchef.tools._tool import Tool, ToolAnnotations
from contextchef.tools._validate import plainly_valid, validation_errors

if TYPE_CHECKING:  # the index module loads with the first index (issue 27, fast start)
    from contextchef.search._index import ToolIndex

__all__ = [
    "DEFER_EXECUTE",
    "SEARCH_USAGE",
    "TOOL_SEARCH",
    "DeferredConfig",
    "DirectoryEntry",
    "SearchOutcome",
    "defer_execute_tool",
    "directory_overflow",
    "render_directory",
    "render_tool_entry",
    "run_tool_search",
    "tool_search_tool",
]

TOOL_SEARCH = "tool_search"
DEFER_EXECUTE = "defer_execute"
SEARCH_USAGE = (
    "tool_search takes exactly one of 'tool_names' (a list of exact names) or 'queries' "
    "(a list of keywords), and an optional integer 'limit' >= 1"
)
"""The shape of ``tool_search``'s arguments, said when a call's are wrong."""


@dataclass(frozen=True, kw_only=True)
class DeferredConfig:
    """Limits of deferred loading. All sizes are in characters.

    Attributes:
        default_results: Results a fuzzy search returns when the model gives no limit.
        max_results: Cap on fuzzy results (exact lookups return every name asked for).
        result_chars: Cap on the whole text a ``tool_search`` call returns.
        description_chars: Cap on each tool description shown in full results.
        directory_chars: Budget for the server groups of the directory (builtin names
            always stay); a group that does not fit is dropped whole.
        header_chars: Server descriptions in group headers are cut to this length with
            an ellipsis.
        overflow_results: Extra hits a fuzzy search lists beyond its limit (names only,
            the first `brief_results` of them with a one-line description).
        brief_results: How many overflow hits get a one-line description.
        require_search: ``defer_execute`` on a deferred tool whose schema the model has
            not loaded with ``tool_search`` is denied (the default allows it and relies
            on argument validation returning the schema).
        always_meta_tools: Keep ``tool_search`` / ``defer_execute`` in the tools array
            even when nothing is deferred yet, so a first runtime tool changes nothing.
        skill_directory_chars: Budget for the ``name: description`` lines of the skills
            listed in ``load_skill``'s description; a skill that does not fit is left out.
        ranker: How ``tool_search`` ranks ``queries``: ``"bm25"`` (default),
            ``"semantic"``, ``"hybrid"``, ``"hybrid-rrf"``, ``"two-level"``,
            ``"hybrid-two-level"`` (servers ranked too, by their description) or a
            `RankerConfig`; stored as a `RankerConfig`. The semantic ones need the
            ``semantic`` extra
            (`MissingExtraError` here otherwise). Exact names, caps and the directory
            do not depend on it.

    Raises:
        UsageError: A count or size that is not an integer, a negative one, fewer than
            one result, or a flag that is not a bool (naming the field).
    """

    default_results: int = 5
    max_results: int = 10
    result_chars: int = 12_000
    description_chars: int = 600
    directory_chars: int = 8_000
    header_chars: int = 80
    overflow_results: int = 10
    brief_results: int = 3
    require_search: bool = False
    always_meta_tools: bool = False
    skill_directory_chars: int = 4_000
    ranker: RankerConfig | str = "bm25"

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if name in ("require_search", "always_meta_tools"):
                if not isinstance(value, bool):
                    raise UsageError(
                        f"DeferredConfig.{name} must be True or False, got {shown(value)}"
                    )
            elif name != "ranker":
                least = 1 if name in ("default_results", "max_results") else 0
                if isinstance(value, bool) or not isinstance(value, int) or value < least:
                    raise UsageError(
                        f"DeferredConfig.{name} must be an integer >= {least}, got {shown(value)}"
                    )
        object.__setattr__(self, "ranker", RankerConfig.of(self.ranker))


@dataclass(frozen=True, kw_only=True)
class DirectoryEntry:
    """A deferred tool as listed in the directory.

    Attributes:
        wire_name: The name the model uses.
        server: Its group, or None for builtin/runtime tools (listed first, no header).
        name: The tool's own name where the wire name does not end with it (letters no
            provider takes became ``_``, a long name was cut), shown after it; else None.
    """

    wire_name: str
    server: str | None
    name: str | None = None

    @property
    def line(self) -> str:
        """The entry as listed: ``<wire name>``, or ``<wire name> (<own name>)``."""
        return self.wire_name if self.name is None else f"{self.wire_name} ({self.name})"


_SEARCH_INTRO = (
    "Fetch the full parameter schemas of deferred tools. Deferred tools are listed below "
    "by name only; you must load a tool's schema with this tool before calling it with "
    "defer_execute.\n"
    "Give exactly one of:\n"
    "- tool_names: exact tool names from the list (preferred when you know the name);\n"
    "- queries: keywords describing the capability you need, written in the language of "
    "the tools' descriptions; keywords in another language (such as the user's words: "
    '["create issue", "创建问题"] for English tools) count for less.\n'
    "Results show each tool's parameters; then call "
    'defer_execute({"tool_name": ..., "params": {...}}).'
)

_DIRECT_INTRO = (
    "Find deferred tools and make them callable. Deferred tools are listed below by name "
    "only; a tool this search returns becomes available to call directly by its name.\n"
    "Give exactly one of:\n"
    "- tool_names: exact tool names from the list (preferred when you know the name);\n"
    "- queries: keywords describing the capability you need, written in the language of "
    "the tools' descriptions; keywords in another language (such as the user's words: "
    '["create issue", "创建问题"] for English tools) count for less.'
)

_SEARCH_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "tool_names": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
            "description": "Exact names of deferred tools to load.",
        },
        "queries": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
            "description": "Search keywords, in the language of the tools' descriptions.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": "How many matches a keyword search returns.",
        },
    },
    "additionalProperties": False,
}
_SEARCH_FROZEN = freeze(_SEARCH_SCHEMA)
"""The same, read-only: its validator is made once (`tools._validate`)."""

_EXECUTE_DESCRIPTION = (
    "Call a deferred tool. First load its schema with tool_search, then pass its exact "
    "name as tool_name and its arguments as params (a JSON object that follows the loaded "
    "schema). Arguments are checked against that schema before the tool runs; an invalid "
    "call returns the problems and the expected schema."
)

_EXECUTE_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "tool_name": {"type": "string", "description": "Exact name of the deferred tool."},
        "params": {"type": "object", "description": "Arguments for that tool."},
    },
    "required": ["tool_name", "params"],
    "additionalProperties": False,
}


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


def render_directory(
    entries: Sequence[DirectoryEntry],
    server_descriptions: Mapping[str, str],
    config: DeferredConfig,
) -> str:
    """Render the deferred-name directory.

    Layout: ``<available_deferred_tools>``, then builtin/runtime names (sorted, one per
    line, no header), then one group per server (sorted by server name; header
    ``<server>: <description cut to header_chars>``, then its names indented by two
    spaces, sorted; a name whose wire name lost its own name's letters is followed by
    that own name in parentheses, ``ace______ca4e722c (办公工具)``; server names,
    descriptions and own names with our tags escaped, `escape_tags`).
    Servers listed in `server_descriptions` with no deferred tool still
    get a header. Groups are charged against ``config.directory_chars`` whole: a group
    that does not fit is left out and a last line counts what was left out. Names are
    never cut.
    """
    ordered = sorted(entries, key=lambda e: e.wire_name)
    loose = [escape_tags(e.line) for e in ordered if e.server is None]
    groups: dict[str, list[str]] = {s: [] for s in server_descriptions}
    for e in ordered:
        if e.server is not None:
            groups.setdefault(e.server, []).append(escape_tags(e.line))
    lines = ["<available_deferred_tools>", *loose]
    used = 0
    dropped_servers = dropped_tools = 0
    for server in sorted(groups):
        desc, name = server_descriptions.get(server, ""), escape_tags(server)
        header = f"{name}: {escape_tags(_cut(desc, config.header_chars))}" if desc.strip() else name
        block = [header, *(f"  {n}" for n in groups[server])]
        size = sum(len(x) + 1 for x in block)
        if used + size > config.directory_chars:
            dropped_servers += 1
            dropped_tools += len(groups[server])
            continue
        used += size
        lines += block
    if dropped_servers:
        lines += [
            "",
            f"[{dropped_servers} more server(s) with {dropped_tools} tool(s) are not listed; "
            "use tool_search with queries to find them.]",
        ]
    lines.append("</available_deferred_tools>")
    return "\n".join(lines)


def directory_overflow(directory: str, loose: int, config: DeferredConfig) -> str:
    """Why `directory` is past its budget, or ``""`` (within it, or no tool without a server).

    Only server groups share ``config.directory_chars`` (`render_directory`,
    docs/guides/tool-search.md): deferred tools with no server (`loose` of them) are
    listed whole and never cut, so they alone can take a directory past the budget, into
    every request's ``tool_search`` description. What is rendered is left as it is (the
    prefix stays byte-stable); this sentence names the cause and the remedies.
    """
    if len(directory) <= config.directory_chars or not loose:
        return ""
    return (
        f"the deferred-name directory in tool_search's description is {len(directory):,} "
        f"characters, over its budget of {config.directory_chars:,} "
        f"(DeferredConfig.directory_chars): {loose:,} deferred tools with no server are "
        "listed whole (only server groups share the budget and are left out when it is "
        "full); give those tools a server (register_catalog, tools_from_mcp(server=...), "
        "Tool.server), put them in namespaces or toolkits, or raise directory_chars"
    )


def tool_search_tool(directory: str, *, direct: bool = False) -> Tool:
    """The ``tool_search`` meta-tool, its description ending with `directory`.

    Args:
        directory: The deferred-name directory.
        direct: The tools found become callable by name (a provider-native strategy
            reveals them), so the text does not send the model to ``defer_execute``.
    """
    intro = _DIRECT_INTRO if direct else _SEARCH_INTRO
    return Tool(
        name=TOOL_SEARCH,
        description=f"{intro}\n\n{directory}",
        input_schema=_SEARCH_SCHEMA,
        annotations=ToolAnnotations(read_only=True),
    )


def defer_execute_tool() -> Tool:
    """The ``defer_execute`` meta-tool (static description and schema)."""
    return Tool(name=DEFER_EXECUTE, description=_EXECUTE_DESCRIPTION, input_schema=_EXECUTE_SCHEMA)


def render_tool_entry(tool: Tool, wire_name: str, config: DeferredConfig) -> str:
    """A tool as a full ``tool_search`` result shows it: name, description, parameters.

    The first line is the wire name, then ``[server: ...]`` for a grouped tool and
    ``[name: ...]`` when the wire name does not end with the tool's own name (CJK
    letters became ``_``, or a long name was cut: `deferred._view.model_description`).

    Made once per tool, wire name and description length and kept on the (immutable)
    tool, so a search shared by many sessions does not render its hits again (issue 27).
    """
    chars = config.description_chars

    def make() -> str:
        head = wire_name + (f"  [server: {escape_tags(tool.server)}]" if tool.server else "")
        if not wire_name.endswith(tool.name):  # letters no provider takes: its own name
            head += f"  [name: {escape_tags(tool.name)}]"
        lines = [head]
        if tool.description.strip():
            lines.append("  " + escape_tags(_cut(tool.description, chars)))
        lines.append("  Parameters:")
        lines += [f"    {escape_tags(p)}" for p in summarize_parameters(wire_keys(tool).schema)]
        return "\n".join(lines)

    entry: str = tool._derive("search entry", (wire_name, chars), make)
    return entry


@dataclass(frozen=True, kw_only=True)
class SearchOutcome:
    """What one ``tool_search`` call produced.

    Attributes:
        text: The model-facing result text (never empty).
        loaded: Wire names whose full parameters were shown (their schemas are now in
            the model's context).
        is_error: The arguments were unusable.
    """

    text: str
    loaded: tuple[str, ...] = ()
    is_error: bool = False


MAX_FALLBACK_NAMES = 5
"""Missing exact names that get a fuzzy fallback in one call (the rest are listed)."""


def run_tool_search(
    arguments: Mapping[str, Any],
    index: ToolIndex,
    config: DeferredConfig,
    *,
    explain_missing: Callable[[str], str | None] | None = None,
    direct: bool = False,
    exclude: Container[str] = frozenset(),
) -> SearchOutcome:
    """Answer a ``tool_search`` call.

    Arguments are checked against the tool's own schema first. Then three levels of
    degradation:

    1. an exact lookup that misses falls back to fuzzy matching on the missing names
       (near spellings first, then BM25; for at most `MAX_FALLBACK_NAMES` names);
    2. a search that still finds nothing returns a sentence asking to rephrase (never
       an empty result);
    3. more hits than fit: the first ``limit`` get their full parameters (while the text
       stays under ``result_chars``), the next ``brief_results`` a one-line description,
       the rest (up to ``overflow_results``) their names only, then a line saying how to
       load full schemas by name.

    The whole text never exceeds ``config.result_chars`` characters.

    Args:
        arguments: The model's arguments.
        index: The session's search index (visible tools only).
        config: Limits.
        explain_missing: Says why a name is not in the index (e.g. hidden by the mode),
            or None when it simply does not exist.
        direct: The tools found are called by their own names (a provider-native
            strategy reveals them), not through ``defer_execute``.
        exclude: Wire names never returned (the tools of skills not loaded yet, tools the
            gate refuses whatever the arguments); an exact name of one is a miss for
            `explain_missing` to explain. Only ``in`` is used, so it may be computed
            lazily per hit; the search widens until enough hits are not excluded.
    """
    valid = _usual(arguments) or plainly_valid(_SEARCH_FROZEN, arguments)
    problems = [] if valid else validation_errors(_SEARCH_FROZEN, arguments)
    given = [k for k in ("tool_names", "queries") if k in arguments]
    if problems or len(given) != 1:
        if problems:
            text = f"Invalid tool_search arguments: {'; '.join(problems)}. {SEARCH_USAGE}."
        else:
            text = f"{SEARCH_USAGE}; got {' and '.join(given) or 'neither'}."
        return SearchOutcome(text=_capped(text, config), is_error=True)
    names: list[str] | None = arguments.get("tool_names")
    queries: list[str] | None = arguments.get("queries")
    if queries is not None and not any(q.strip() for q in queries):
        return SearchOutcome(
            text="tool_search 'queries' must hold keywords; every query was blank.",
            is_error=True,
        )
    # valid: an integer >= 1 as JSON Schema counts them, so a limit of 2.0 counts as 2
    want = min(int(arguments.get("limit", config.default_results)), config.max_results)
    notes: list[str] = []
    overflow = config.overflow_results
    if names is not None:
        hits, missing = _exact(index, names, exclude)
        full = len(hits)  # the cap binds fuzzy search only
        if missing:
            notes += _missing_notes(missing, explain_missing)
            searchable = [m for m in missing if not (explain_missing and explain_missing(m))]
            fuzzy = _fallback(
                index, searchable[:MAX_FALLBACK_NAMES], hits, want + overflow, exclude
            )
            if fuzzy:
                notes.append("Closest matches follow.")
            hits = hits + fuzzy
            full += min(len(fuzzy), want)
    else:
        hits = _top(index, queries or [], want + overflow, exclude)
        full = want
    if not hits:
        asked = ", ".join(repr(echo(q)) for q in (names or queries or [])[:5])
        return SearchOutcome(
            text=_capped(
                "\n".join(notes[:1])
                + ("\n" if notes else "")
                + f"No tool matched {asked}. Try other keywords (synonyms, in the language "
                "of the tools' descriptions), or pick an exact name from the list in tool_search's "
                "description.",
                config,
            )
        )
    return _render_hits(index, hits, full, notes, config, direct=direct)


def _usual(arguments: Mapping[str, Any]) -> bool:
    """A fast yes for the usual call, which `_SEARCH_SCHEMA` accepts (issue 27).

    ``queries`` and/or ``tool_names`` as non-empty lists of non-empty ``str``, and at most
    an ``int`` ``limit`` >= 1 besides, exact types only. False means "ask the validators"
    (jsonschema-rs, then jsonschema, which words the errors), never "invalid".
    """
    if type(arguments) is not dict or not arguments:
        return False
    for key, value in arguments.items():
        if key == "limit":
            if type(value) is not int or value < 1:
                return False
        elif (key != "queries" and key != "tool_names") or type(value) is not list or not value:
            return False
        else:
            for item in value:
                if type(item) is not str or not item:
                    return False
    return True


def _missing_notes(missing: list[str], explain: Callable[[str], str | None] | None) -> list[str]:
    explained = [(m, explain(m)) for m in missing] if explain else [(m, None) for m in missing]
    notes = [reason for _, reason in explained if reason]
    unknown = [m for m, reason in explained if not reason]
    if unknown:
        shown = ", ".join(repr(echo(m)) for m in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        notes.append(f"No tool is named exactly {shown}{more}.")
    return notes


def _capped(text: str, config: DeferredConfig) -> str:
    """Cut `text` at a line boundary so it fits ``config.result_chars``."""
    limit = config.result_chars
    if len(text) <= limit:
        return text
    note = "\n[... output cut to {limit:,} characters; ask for fewer tools at a time]"
    head = text[: max(limit - len(note) - 10, 0)]
    cut = head.rfind("\n")
    head = head[:cut] if cut > limit // 2 else head
    return head + note.format(limit=limit)


Hit = tuple[Tool, str]
"""A hit as ``tool_search`` renders it: (tool, wire name), the index's own pair."""


def _top(
    index: ToolIndex, queries: Sequence[str], count: int, exclude: Container[str]
) -> list[Hit]:
    """The best `count` hits that are not excluded, widening the search as needed."""
    limit = count
    while True:
        found = index.top(queries, limit=limit)
        hits = [h for h in found if h[1] not in exclude] if exclude else found
        if len(hits) >= count or len(found) < limit:
            return hits[:count]
        limit *= 4


def _exact(
    index: ToolIndex, names: list[str], exclude: Container[str]
) -> tuple[list[Hit], list[str]]:
    """`ToolIndex.exact` without the `exclude` tools: a name meaning only those misses."""
    if exclude == frozenset():
        found, missing = index.exact(names)
        return [(h.tool, h.wire_name) for h in found], missing
    hits: list[Hit] = []
    missing = []
    for name in names:
        found = [h for h in index.exact([name])[0] if h.wire_name not in exclude]
        if not found:
            missing.append(name)
        hits += [(h.tool, h.wire_name) for h in found if all(h.wire_name != x[1] for x in hits)]
    return hits, missing


def _fallback(
    index: ToolIndex,
    missing: list[str],
    found: list[Hit],
    limit: int,
    exclude: Container[str] = frozenset(),
) -> list[Hit]:
    seen = {wire for _, wire in found}
    out: list[Hit] = []
    wide = limit + len(seen)
    near = [(h.tool, h.wire_name) for m in missing for h in index.near_names(m, limit=wide)]
    for hit in [*near, *_top(index, missing, wide, exclude)]:
        if hit[1] not in seen and hit[1] not in exclude and len(out) < limit:
            seen.add(hit[1])
            out.append(hit)
    return out


def _brief(tool: Tool) -> str:
    """A tool's description on one line of at most 100 characters, made once per tool."""
    line: str = tool._derive("search brief", 100, lambda: _cut(tool.description, 100))
    return line


Shown = tuple[dict[str, str], dict[str, str], dict[str, str]]
"""Per wire name: its full entry, its one-line ``- wire: brief``, its JSON string."""


def _shown(index: ToolIndex, config: DeferredConfig) -> Shown:
    """The rendered pieces of `index`'s hits, kept on the index (one per description cap).

    An index's entries never change (a changed tool makes a new index, an added one an
    `extended` index with an empty memo), so a wire name's pieces hold for its life, and
    a search reads its hits' text from three dicts instead of rendering it (issue 27).
    """
    key = ("tool_search", config.description_chars)
    shown: Shown | None = index.memo.get(key)
    return shown if shown is not None else index.memo.setdefault(key, ({}, {}, {}))


def _render_hits(
    index: ToolIndex,
    hits: list[Hit],
    full: int,
    notes: list[str],
    config: DeferredConfig,
    *,
    direct: bool,
) -> SearchOutcome:
    entries, briefs, quoted = _shown(index, config)
    parts = list(notes)
    used = sum(len(p) + 2 for p in parts)
    loaded: list[str] = []
    rest: list[Hit] = []
    for i, (tool, wire) in enumerate(hits):
        entry = "" if i >= full or rest else entries.get(wire)
        if entry is None:
            entry = entries.setdefault(wire, render_tool_entry(tool, wire, config))
        if not entry or (used + len(entry) + 2 > config.result_chars and loaded):
            rest.append((tool, wire))
            continue
        parts.append(entry)
        used += len(entry) + 2
        loaded.append(wire)
    if rest:
        lines = []
        for tool, wire in rest[: config.brief_results]:
            line = briefs.get(wire)
            lines.append(line or briefs.setdefault(wire, f"- {wire}: {_brief(tool)}"))
        lines += ["- " + wire for _, wire in rest[config.brief_results :]]
        # json.dumps({"tool_names": [...]}, ensure_ascii=False) from each name's JSON
        example = ", ".join(
            quoted.get(w) or quoted.setdefault(w, json.dumps(w, ensure_ascii=False))
            for _, w in rest[:2]
        )
        parts.append(
            "Other matches (parameters not shown):\n"
            + "\n".join(lines)
            + f'\nTo load their full schemas, call tool_search({{"tool_names": [{example}]}}).'
        )
    if direct:
        parts.append("The tools above are now available: call them directly by name.")
    else:
        parts.append(
            'Call a loaded tool with defer_execute({"tool_name": "<name>", "params": {...}}).'
        )
    text = "\n\n".join(parts)
    if len(text) > config.result_chars:
        text = _capped(text, config)
        loaded = [w for w in loaded if w in text]
    return SearchOutcome(text=text, loaded=tuple(loaded))
