"""What shapes a session's tools segment besides its tools, as a snapshot records it.

The compiled ``tools`` segment is made from the registered tools (a snapshot records
their fingerprint) and from code and configuration a snapshot cannot carry: the
registered toolkits (``load_toolkit`` and the meta-tools appear with the first one; a
loaded toolkit's tools are its definitions), the namespaces (one tool each), the
library's own tools the constructor's arguments add (memory, ``new_context``, the
archive readers), the servers' descriptions (the deferred directory's headers) and the
`DeferredConfig` limits the directory and the meta-tools are rendered under. A session
that differs in any of them sends another ``tools`` segment to the conversation the
snapshot recorded: the next compile rewrites what was sent (an edit it reports: the
prompt cache is missed and, where the provider binds thinking to its prefix, the
earlier thinking is dropped).

`tools_shape` records them as labelled items (``toolkit:Weather``, ``namespace:files``,
``server:github``: a digest of the definition; ``library:read_memories``: its name;
``DeferredConfig.directory_chars``: the value, as JSON text), and `check_tools_shape`
refuses a restore where a registration differs, as other tools are refused: the session
must register the same toolkits, namespaces and servers, built with the same arguments.
A `SHAPING_LIMITS` value that differs is reported instead (`limit_differences`, a
`PolicyDifference` restore returns and logs): a limit bounds what is rendered, and most
changes of one (a larger directory budget the directory fits under either way) leave the
segment as it was, while refusing them would keep a fleet that rolls out new limits from
resuming any stored conversation; where the segment does change, the next compile reports
the tools edit. A snapshot without the record (written before it) is not checked.
`refuse_other` is the one message for a set of named definitions that differs from a
snapshot's (the tools and the skills use it too).

Policy (``defer`` / ``pin``, modes, blocklist) shapes the segment as well, but is the
host's to change on purpose: a restore keeps the host's and reports where the snapshot
differed (`contextchef.exposure._restore`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from contextchef._cache import LruMap, lru_cache
from contextchef._errors import SnapshotMismatchError
from contextchef._json import canonical_dumps
from contextchef._records import text_digest
from contextchef.deferred._groups import Namespace, Toolkit
from contextchef.deferred._meta import DeferredConfig
from contextchef.exposure._restore import PolicyDifference
from contextchef.tools._registry import Registry, tool_digest

__all__ = [
    "SHAPING_LIMITS",
    "ShapedTools",
    "check_tools_shape",
    "limit_differences",
    "refuse_other",
    "tools_shape",
]

SHAPING_LIMITS = ("always_meta_tools", "directory_chars", "header_chars", "skill_directory_chars")
"""The `DeferredConfig` fields the tools segment is rendered under (the others bound
what ``tool_search`` returns, in the history, and may differ)."""


class ShapedTools(Protocol):
    """A session's tools as `check_tools_shape` reads them (`session._toolset.SessionTools`)."""

    @property
    def registry(self) -> Registry: ...
    @property
    def toolkits(self) -> Sequence[Toolkit]: ...
    @property
    def namespaces(self) -> Sequence[Namespace]: ...
    @property
    def config(self) -> DeferredConfig: ...


_CONFIG = "DeferredConfig."
_GROUPS: LruMap[int, tuple[Toolkit | Namespace, str]] = LruMap(512)
"""id(group) -> (the group, its digest): made once per registered group object."""


def _group_digest(group: Toolkit | Namespace) -> str:
    """Of a toolkit's or namespace's description and its tools' `tool_digest`s."""
    hit = _GROUPS.get(id(group))
    if hit is not None and hit[0] is group:
        return hit[1]
    tools = sorted(tool_digest(t, t.name).hex() for t in group.tools)  # as registered
    made = text_digest(canonical_dumps([group.description, tools]))
    _GROUPS.put(id(group), (group, made))
    return made


@lru_cache(maxsize=64)
def _limits(config: DeferredConfig) -> tuple[tuple[str, str], ...]:
    return tuple((f"{_CONFIG}{f}", canonical_dumps(getattr(config, f))) for f in SHAPING_LIMITS)


def tools_shape(tools: ShapedTools) -> dict[str, str]:
    """Label -> digest or value of each thing besides the tools that shapes the segment.

    A library tool is recorded by name only: which ones a session has is its
    constructor's arguments, but their text is the library's, which a release may
    change, and a stored conversation must still restore after an upgrade (the next
    compile then reports the tools edit).

    Returns:
        ``{"toolkit:<name>": digest, "namespace:<name>": digest, "library:<wire name>":
        "", "server:<name>": digest, "DeferredConfig.<field>": value}`` (digests: 16 hex
        digits of SHA-256, of a group's description and its tools' `tool_digest`, or of
        a server's description; values as JSON text).
    """
    registry, shape = tools.registry, dict(_limits(tools.config))
    for kit in tools.toolkits:
        shape[f"toolkit:{kit.name}"] = _group_digest(kit)
    for ns in tools.namespaces:
        shape[f"namespace:{ns.name}"] = _group_digest(ns)
    for tool in reversed(registry.tools):  # library-owned tools come last (`Registry`)
        if tool.source != "library":
            break
        shape[f"library:{registry.wire_name_for(tool)}"] = ""  # by name: see the docstring
    for server, description in registry.server_descriptions:
        shape[f"server:{server}"] = text_digest(description)
    return shape


def refuse_other(
    what: str,
    recorded: Mapping[str, object],
    now: Mapping[str, object],
    fix: str,
    *,
    alike: str | None = None,
) -> None:
    """Refuse a restore whose `now` (name -> definition) is not `recorded` (a snapshot's).

    The message names the missing, the unexpected and the other definitions (the values
    of ``DeferredConfig.`` entries shown: the snapshot's, then this session's), then `fix`.

    Args:
        what: What differs, as the message's subject (``"registered skills"``).
        recorded: The snapshot's names and definitions (digests, values).
        now: This session's.
        fix: What to do instead.
        alike: What to say when every name and definition is alike though the caller
            knows they differ (a fingerprint told it); None: alike passes.

    Raises:
        SnapshotMismatchError: They differ; ``missing`` / ``unexpected`` hold the names
            only the snapshot / only this session has.
    """
    missing = tuple(sorted(recorded.keys() - now.keys()))
    unexpected = tuple(sorted(now.keys() - recorded.keys()))
    other = sorted(k for k in recorded.keys() & now.keys() if recorded[k] != now[k])
    shown = [
        f"{k} ({recorded[k]} in the snapshot, {now[k]} here)" if k.startswith(_CONFIG) else k
        for k in other
    ]
    said = (("missing", list(missing)), ("unexpected", list(unexpected)), ("other", shown))
    detail = ", ".join(f"{word} {items}" for word, items in said if items) or alike
    if detail is not None:
        raise SnapshotMismatchError(
            f"the {what} differ from the snapshot's ({detail}); {fix}",
            missing=missing,
            unexpected=unexpected,
        )


def check_tools_shape(recorded: Mapping[str, str] | None, tools: ShapedTools) -> None:
    """Refuse a restore whose `tools` are shaped otherwise than a snapshot's record said.

    `recorded` is the snapshot's `tools_shape`; None (a snapshot written before it was
    recorded) is not checked.

    Raises:
        SnapshotMismatchError: A toolkit, namespace, library tool or server description
            differs (named). A `SHAPING_LIMITS` value is `limit_differences`'.
    """
    if recorded is not None:
        now = tools_shape(tools)
        refuse_other(
            "toolkits, namespaces, library tools or server descriptions of this session",
            {k: v for k, v in recorded.items() if not k.startswith(_CONFIG)},
            {k: v for k, v in now.items() if not k.startswith(_CONFIG)},
            "the next compile would rewrite the tools segment the conversation was sent (its "
            "prompt cache missed, earlier thinking dropped): build the ContextChef with the "
            "same arguments and register the same toolkits and namespaces before restore()",
        )


def limit_differences(
    recorded: Mapping[str, str] | None, tools: ShapedTools
) -> tuple[PolicyDifference, ...]:
    """The `SHAPING_LIMITS` values this session has otherwise than the snapshot's record.

    One `PolicyDifference` each (``field`` ``DeferredConfig.<name>``, values as JSON
    text, ``kept`` ``"session"``); none for a snapshot without the record.
    """
    if recorded is None:
        return ()
    now = dict(_limits(tools.config))
    names = sorted(k for k in recorded.keys() | now.keys() if k.startswith(_CONFIG))
    return tuple(
        PolicyDifference(field=k, session=now.get(k), snapshot=recorded.get(k), kept="session")
        for k in names
        if recorded.get(k) != now.get(k)
    )
