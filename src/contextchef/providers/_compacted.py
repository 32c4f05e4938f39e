"""The base of a conversation the provider compacted: where requests start, what they leave.

When a provider compacts server-side, its reply carries a ``compaction`` entry that stands
for everything before it (research provider-context-management.md 2.1, 2.2, 2.5):

* Anthropic (``compaction-threshold.md``, beta ``compact-2026-01-12``): the API "drops all
  content blocks prior to the `compaction` block" on later requests, and the thinking
  prefix check starts there (preserved-thinking R6, R21);
* OpenAI Responses (compaction guide): with stateless chaining "you can drop items that
  came before the most recent compaction item"; with ``previous_response_id`` "do not
  manually prune".

So the *base* of a target's conversation is its newest own compaction entry
(`native_base`): requests send the recorded entries from there on, byte for byte (the
block or item is ingested and replayed exactly), and nothing before it reaches the
provider again. The session's record (the ledger) and the host's history keep every
message; `compacted_away` is the one place that says which history messages left the
request this way (what an archive of removed messages takes). The session's own thinking
binding check (`contextchef.session._binding`) still fingerprints the entries from the
first one: stricter than the provider's, which starts at the block, and the same answer
while the ledger only appends.

A compaction entry is readable only by the provider that made it (OpenRouter: translated
providers drop the field), so it is never replayed to another one: renderers keep only
their own provider parts. On a provider switch the content it stands for is replaced by a
local summary instead (`switch_summarizer`: the session's ``on_overflow``, else
`switch_summary`'s text; run by the session's handoff before the request); the new
provider sees a summary, then the turns after it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from contextchef.history._compaction import render_transcript
from contextchef.history._messages import Message, ProviderPart

__all__ = [
    "CLEAR_TOOL_USES",
    "COMPACTION",
    "compacted_away",
    "foreign_compaction",
    "native_base",
    "newly_compacted",
    "provider_cleared",
    "switch_summarizer",
    "switch_summary",
]

COMPACTION = "compaction"
"""The ``type`` of Anthropic's compaction block and of Responses' compaction item."""


def _holds_compaction(entry: object) -> bool:
    """Whether a wire entry is a compaction item or a message holding a compaction block."""
    if not isinstance(entry, Mapping):
        return False
    if entry.get("type") == COMPACTION:
        return True
    content = entry.get("content")
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == COMPACTION for b in content
    )


def native_base(entries: Sequence[Any], extra: Mapping[str, Any]) -> int:
    """Index of the entry a request starts from: the newest compaction entry, else 0.

    `entries` are one target's recorded wire entries (its own format only: renderers
    never emit another provider's compaction), `extra` the request's extra fields. A
    Responses request chained with ``previous_response_id`` is never pruned (the
    compaction guide: "do not manually prune").
    """
    if "previous_response_id" in extra:
        return 0
    for k in range(len(entries) - 1, -1, -1):
        if _holds_compaction(entries[k]):
            return k
    return 0


def _compaction_at(history: Sequence[Message]) -> tuple[int, ProviderPart] | None:
    """The newest history message holding a provider's compaction part, and that part."""
    for i in range(len(history) - 1, -1, -1):
        for part in reversed(history[i].parts):
            if isinstance(part, ProviderPart) and part.data.get("type") == COMPACTION:
                return i, part
    return None


def compacted_away(history: Sequence[Message], wire: str) -> tuple[Message, ...]:
    """The history messages requests to `wire` no longer send: those before its compaction.

    The messages before the newest message holding a compaction part of `wire` (a
    `Profile.wire`, e.g. ``"anthropic"``, ``"responses"``); empty when there is none, or
    when the newest compaction is another provider's (a switch summarizes it instead).
    `history` is not changed: the host keeps what it holds.
    """
    found = _compaction_at(history)
    if found is None or found[1].provider != wire:
        return ()
    return tuple(history[: found[0]])


def newly_compacted(
    history: Sequence[Message], turn: Sequence[Message]
) -> tuple[int, tuple[Message, ...]]:
    """What the provider compaction in `turn` (a reply just appended) removed from view.

    `history` ends with `turn`. When `turn` holds a provider's ``compaction`` part, the
    messages from the one before it of the same provider (or the start) up to that reply
    leave every later request to that provider (`compacted_away`): returned with the
    history index of the first, for an archive. Else ``(0, ())``.
    """
    compaction = next(
        (
            p
            for m in turn
            for p in m.parts
            if isinstance(p, ProviderPart) and p.data.get("type") == COMPACTION
        ),
        None,
    )
    if compaction is None:
        return 0, ()
    away = compacted_away(history, compaction.provider)
    before = _compaction_at(away)
    start = before[0] if before is not None and before[1].provider == compaction.provider else 0
    return start, tuple(away[start:])


CLEAR_TOOL_USES = "clear_tool_uses_20250919"
"""Anthropic's tool-result clearing edit (the `ResponseNotice.reason` of its notice)."""


def provider_cleared(
    history: Sequence[Message], count: int, exclude: Collection[str], done: Collection[str]
) -> tuple[list[int], tuple[Message, ...], set[str]]:
    """The history messages whose tool results Anthropic's ``clear_tool_uses`` cleared.

    The edit replaces the results of the oldest tool uses of the request but the latest
    ``keep``, skipping ``exclude_tools`` (context-editing.md; research
    provider-context-management.md 2.1), and reports how many (``cleared_tool_uses``):
    so the cleared ones are the first `count` tool uses of the request's view (from the
    newest Anthropic compaction on) whose tool is not in `exclude`. Returns the history
    indexes and messages of their results, leaving out calls in `done` (archived before:
    every later request clears them again), and the call ids, for an archive.
    """
    start = len(compacted_away(history, "anthropic"))
    view = history[start:]
    uses = [c.id for m in view for c in m.tool_calls if c.name not in exclude][:count]
    ids = set(uses) - set(done)
    at = [start + k for k, m in enumerate(view) if any(r.call_id in ids for r in m.tool_results)]
    return at, tuple(history[i] for i in at), ids


def foreign_compaction(history: Sequence[Message], wire: str) -> str | None:
    """The provider whose compaction `history` holds last, when it is not `wire`; else None.

    A request to `wire` cannot read that entry: the content it stands for must be
    summarized locally before the request (`switch_summary`).
    """
    found = _compaction_at(history)
    return found[1].provider if found is not None and found[1].provider != wire else None


def switch_summary(history: Sequence[Message], provider: str) -> Callable[[str], str]:
    """A deterministic summarizer for a switch away from `provider`'s compaction.

    Used when the session has no summarizer of its own (``on_overflow``): the text says
    that `provider` compacted the conversation, how many messages and which tool calls
    came before its compaction, quotes the compaction's readable summary (Anthropic's
    block ``content``; a Responses item is encrypted only), then the transcript from the
    compaction on (`render_transcript`: tool results cut to 500 characters). The same
    history gives the same text; the transcript `compact` passes is not read.
    """
    found = _compaction_at(history)
    at, part = found if found is not None else (0, None)
    before = history[:at]
    names = sorted({c.name for m in before for c in m.tool_calls})
    readable = part.data.get("content") if part is not None else None
    text = (
        f"[The earlier conversation ({len(before)} messages"
        + (f"; tools called: {', '.join(names)}" if names else "")
        + f") was compacted by the {provider} API, whose compaction cannot be sent to "
        "this provider.]"
        + (f"\n\nIts summary: {readable}" if isinstance(readable, str) and readable else "")
    )
    since = render_transcript(history[at:])
    text += f"\n\nSince then:\n{since}" if since else ""

    def summarize(transcript: str) -> str:
        return text

    return summarize


def switch_summarizer(
    history: Sequence[Message], wire: str, own: Callable[[str], str] | None
) -> Callable[[str], str] | None:
    """What `history` must be summarized with before a request to `wire`, or None.

    None unless its newest compaction is another provider's (`foreign_compaction`);
    then `own` (the session's summarizer), or `switch_summary`'s text without one.
    """
    foreign = foreign_compaction(history, wire)
    if foreign is None:
        return None
    return own if own is not None else switch_summary(history, foreign)
