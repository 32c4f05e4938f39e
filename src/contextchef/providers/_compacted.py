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

On-demand compaction (Anthropic, beta ``compact-2026-09-04``; research 2.1 and
anthropic-preserved-thinking.md R22) is a request like any other with a top-level
``compaction: {"type": "summarize"}`` (`on_demand_fields`): it samples nothing, so its
messages may end with the model's closed turn, never with a tool call that has no result
yet (compaction-keep-recent-turns.md: "the API rejects"; `check_closed`). Its reply, one
``compaction`` block with ``stop_reason: "compaction"``, is ingested like any reply; the
next request starts at that block (`from_base`), which is the keep-tail pattern with the
cut at the end of what was sent: nothing before the block is sent again, so the block is
first (R22: "leftovers before it" are a 400 ``compaction_block_misplaced``) even where the
block's assistant message follows (and is sent merged with) the model's last answer.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Collection, Mapping, MutableMapping, Sequence
from typing import Any

from contextchef._errors import UsageError
from contextchef.history._archive import Archive
from contextchef.history._compaction import render_transcript
from contextchef.history._lazy import is_lazy
from contextchef.history._messages import Message, ProviderPart, ToolCall
from contextchef.history._offload import OffloadStore

__all__ = [
    "COMPACTION",
    "ON_DEMAND_BETA",
    "check_closed",
    "compacted_away",
    "compacted_spans",
    "compaction_archive",
    "foreign_compaction",
    "from_base",
    "native_base",
    "newly_compacted",
    "on_demand_fields",
    "provider_cleared",
    "swap_in",
    "swapped_in",
    "switch_summarizer",
    "switch_summary",
    "without_compaction",
]

COMPACTION = "compaction"
"""The ``type`` of Anthropic's compaction block and of Responses' compaction item."""
ON_DEMAND_BETA = "compact-2026-09-04"
"""The ``anthropic-beta`` value for on-demand compaction (top-level ``compaction``)."""


def _holds_compaction(entry: object) -> bool:
    """Whether a wire entry is a compaction item or a message holding a compaction block."""
    if not isinstance(entry, (dict, Mapping)):  # dict first: no ABC check for records
        return False
    if entry.get("type") == COMPACTION:
        return True
    content = entry.get("content")
    if not isinstance(content, list):
        return False
    for block in content:
        if isinstance(block, (dict, Mapping)) and block.get("type") == COMPACTION:
            return True
    return False


def _none_held(entries: Sequence[Any]) -> bool:
    """True: no entry is or holds a compaction block (read in C); False says nothing.

    For a ledger's records (dicts, their ``content`` text or a list of dicts); anything
    else makes ``dict.get`` raise, and `native_base` reads the entries one by one.
    """
    get, key = dict.get, itertools.repeat
    try:
        if COMPACTION in map(get, entries, key("type")):
            return False
        lists = [
            c for c in map(get, entries, key("content")) if c is not None and type(c) is not str
        ]
        return COMPACTION not in map(get, itertools.chain.from_iterable(lists), key("type"))
    except TypeError:
        return False


def native_base(entries: Sequence[Any], extra: Mapping[str, Any]) -> int:
    """Index of the entry a request starts from: the newest compaction entry, else 0.

    `entries` are one target's recorded wire entries (its own format only: renderers
    never emit another provider's compaction), `extra` the request's extra fields. A
    Responses request chained with ``previous_response_id`` is never pruned (the
    compaction guide: "do not manually prune"). A ``POST /responses/compact`` window is
    "a list of all user messages, followed by a single compaction item" (SDK
    ``compacted_response.py``), all of it the next request's input: the base is then its
    first user message, told apart from the host's own (rendered without one) by the
    ``id`` every returned item carries (the SDK's output item types require it).
    """
    if "previous_response_id" in extra or _none_held(entries):
        return 0
    for k in range(len(entries) - 1, -1, -1):
        if _holds_compaction(entries[k]):
            item = entries[k].get("type") == COMPACTION  # a Responses item, not a message
            while item and k and _kept_user_item(entries[k - 1]):
                k -= 1  # a /responses/compact window: its user messages, then the item
            return k
    return 0


def _kept_user_item(entry: object) -> bool:
    """A user message item the API returned (it has an ``id``): a compacted window's."""
    return (
        isinstance(entry, Mapping)
        and entry.get("type") == "message"
        and entry.get("role") == "user"
        and isinstance(entry.get("id"), str)
    )


def from_base(entries: Sequence[Any], extra: Mapping[str, Any]) -> list[Any]:
    """The entries a request sends: from `native_base` on, the first from its block on.

    A message holding a compaction block after other blocks (the model's last answer
    merged with an on-demand compaction's reply) is sent from its newest block on: the API
    drops what precedes the block anyway (compaction-threshold.md) and refuses it on an
    on-demand block (R22 ``compaction_block_misplaced``). Entries are not copied; a cut
    message is a new dict sharing its blocks.
    """
    kept = list(entries[native_base(entries, extra) :])
    first = kept[0] if kept else None
    content = first.get("content") if isinstance(first, Mapping) else None
    if isinstance(first, Mapping) and isinstance(content, list):
        at = [j for j, b in enumerate(content) if _holds_compaction(b)]
        if at and at[-1]:
            kept[0] = {**first, "content": content[at[-1] :]}
    return kept


def on_demand_fields(instructions: str = "") -> dict[str, Any]:
    """The request field asking Anthropic for an on-demand compaction (research 2.1).

    ``{"compaction": {"type": "summarize"}}``, with ``instructions`` when given; it needs
    the ``compact-2026-09-04`` beta (`ON_DEMAND_BETA`, added by compile for this field) and
    cannot be combined with ``context_management``.
    """
    config: dict[str, Any] = {"type": "summarize"}
    if instructions:
        config["instructions"] = instructions
    return {COMPACTION: config}


def check_closed(history: Sequence[Message], extra: Mapping[str, Any]) -> bool:
    """Whether `extra` asks for an on-demand compaction of a closed `history`.

    Such a request samples nothing, so compile skips its prefill check (`check_turn`)
    for it: it may end with the model's turn, unless that turn
    holds a tool call with no result yet, which the API rejects
    (compaction-keep-recent-turns.md); the call is not given the interrupted result an
    ordinary compile adds either, since the host is about to run it.

    Raises:
        UsageError: The history ends with such a call (named): run it (append its result)
            before compacting, or compact after the model's answer.
    """
    if COMPACTION not in extra:
        return False
    last = history[-1] if history else None
    calls = [p.name for p in last.parts if isinstance(p, ToolCall)] if last else []
    if last is not None and last.role == "assistant" and calls:
        raise UsageError(
            f"an on-demand compaction cannot end with tool calls that have no result yet "
            f"({', '.join(calls)}): the API rejects it; append their results first, or "
            "compact after the model's answer"
        )
    return True


def _block_only(messages: Sequence[Message], wire: str | None = None) -> bool:
    """Whether `messages` hold compaction parts only (of `wire`, when given)."""
    parts = [p for m in messages for p in m.parts]
    return bool(parts) and all(
        isinstance(p, ProviderPart)
        and p.data.get("type") == COMPACTION
        and wire in (None, p.provider)
        for p in parts
    )


def swap_in(
    history: Sequence[Message],
    turn: Sequence[Message],
    outstanding: MutableMapping[str, int],
) -> tuple[Message, ...]:
    """`history` with the reply `turn` added: appended, or swapped in (background swap).

    `outstanding` maps a wire (`Profile.wire`) to how many history messages its last
    on-demand compaction request sent (the session's record; the entry of the block's
    own wire is taken by the block, whatever target was compiled last: turns on another
    provider may have run while the request was in flight). When `turn` is a compaction
    block alone and the history went on since that request, the block goes right after
    those messages: requests then send it, then every message after it
    (compaction-background.md: "replace exactly those n messages"). Else `turn` is
    appended (the cut at the end of what was sent).
    """
    wires = [p.provider for m in turn for p in m.parts if isinstance(p, ProviderPart)]
    summarized = outstanding.pop(wires[0], None) if wires and _block_only(turn) else None
    if summarized is None or summarized >= len(history):
        return (*history, *turn)
    return (*history[:summarized], *turn, *history[summarized:])


def swapped_in(history: Sequence[Message], consumed: Sequence[Message], wire: str) -> bool:
    """Whether `history` is `consumed` with `wire`'s compaction blocks swapped in (`swap_in`).

    True when `history` holds more messages of that provider's compaction parts alone
    than `consumed` (what the ledger sent before) and, those left out, starts with every
    other message of `consumed`, unchanged and in order. The thinking of the turns after
    such a block stays valid (R22), so the edit keeps it; anything else is an ordinary edit.
    """
    rest = [m for m in history if not _block_only((m,), wire)]
    before = [m for m in consumed if not _block_only((m,), wire)]
    return (
        len(history) - len(rest) > len(consumed) - len(before)
        and all(a == b for a, b in zip(rest, before, strict=False))
        and len(rest) >= len(before)
    )


def _compaction_at(history: Sequence[Message]) -> tuple[int, ProviderPart] | None:
    """The newest history message holding a provider's compaction part, and that part."""
    for i in range(len(history) - 1, -1, -1):
        if is_lazy(history[i]):  # a restored message not read yet: it holds no provider part
            continue
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


def compacted_spans(history: Sequence[Message]) -> list[tuple[int, tuple[Message, ...]]]:
    """What each provider compaction in `history` took out of view, oldest first.

    For each message holding a compaction part, `newly_compacted` as when that message
    was ingested: ``(history index of the first, messages)``, the same span (so the same
    archive entry) `Maintenance.ingest` archived then. Deterministic; `history` unchanged.
    """
    spans = []
    for j, message in enumerate(history):
        if any(
            isinstance(p, ProviderPart) and p.data.get("type") == COMPACTION for p in message.parts
        ):
            first, away = newly_compacted(history[: j + 1], (message,))
            if away:
                spans.append((first, away))
    return spans


def compaction_archive(
    store: OffloadStore | None, history: Callable[[], Sequence[Message]]
) -> Archive:
    """A session's `Archive` that also finds what provider compactions took out of view.

    After a restore (or `set_history`), the messages a provider's compaction stands for
    are still in the history but no handle names their entry: the archive re-archives
    them (`compacted_spans`), so ``search_archive`` finds them in the restored session.
    """
    return Archive(store, history=history, hidden=compacted_spans)


def provider_cleared(
    history: Sequence[Message],
    wire: str,
    count: int,
    exclude: Collection[str],
    done: Collection[str],
) -> tuple[list[int], tuple[Message, ...], set[str]]:
    """The history messages whose tool results the provider's clearing edit cleared.

    The edit replaces the results of the oldest tool uses of the request but the latest
    ``keep``, skipping ``exclude_tools`` (context-editing.md; research
    provider-context-management.md 2.1), and reports how many (``cleared_tool_uses``):
    so the cleared ones are the first `count` tool uses of the request's view (from the
    newest compaction of `wire` on, a `Profile.wire`) whose tool is not in `exclude`.
    Returns the history indexes and messages of their results, leaving out calls in
    `done` (archived before: every later request clears them again), and the call ids,
    for an archive.
    """
    start = len(compacted_away(history, wire))
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


def without_compaction(history: Sequence[Message], provider: str | None) -> tuple[Message, ...]:
    """`history` without `provider`'s compaction parts (a message left empty goes too).

    `provider` None (no foreign compaction): `history` as it is.

    After a switch summarized a foreign compaction (`switch_summarizer`), a pending turn
    the summary kept verbatim may still hold the part: the summary stands for it, and
    left there it would be found again at the next compile and summarize the new
    provider's own turns away.
    """
    if provider is None:
        return tuple(history)
    kept = []
    for m in history:
        parts = tuple(
            p
            for p in m.parts
            if not (
                isinstance(p, ProviderPart)
                and p.provider == provider
                and p.data.get("type") == COMPACTION
            )
        )
        if parts:
            kept.append(m if len(parts) == len(m.parts) else dataclasses.replace(m, parts=parts))
    return tuple(kept)


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
