"""Tool entries declared after a ``tools`` array was sent: appended after it, never among it.

The prompt cache reads a request in order, ``tools`` first (Anthropic: "The cache follows a
prefix hierarchy (tools → system → messages)", Tool use with prompt caching,
https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-use-with-prompt-caching),
so a tool added to a conversation keeps the entries sent where they were and goes after
them. Whether that addition still changes the prompt is the target's
`Profile.tools_at_start` (what the model sees of a ``tools`` array):

* Anthropic leaves ``defer_loading`` entries out of it: "Deferred tools are not included in
  the system-prompt prefix ... adding tools dynamically through tool search does not break
  your cache" (same page, "defer_loading and cache preservation"; research note
  provider-native-disclosure.md §1.8, R7). Declaring one at the end is no edit;
* Responses shows a deferred function's name and description, Gemini Interactions its
  name and ``short_description``, the other wires every entry: any addition there changes
  the prompt, and the session reports it.

Only an append at the end counts as unseen: the SDKs' ``CacheMissToolsChanged`` type
describes a ``tools_changed`` miss as tools "added, removed, or reordered"
(build-with-claude/cache-diagnostics), a measured miss after a deferred tool was revealed
is on record (research note §7, C11, and anthropics/claude-code#53132), and the
preserved-thinking check counts a referenced deferred tool as part of the prefix (R6,
R7), so a tool the model already found, or a resident tool, never moves. Among the tools
added together the order is the strategy's own (registry order, sorted by name), so the
same conversation gives the same bytes in any process and after a restore (the ledger
keeps the ``tools`` as sent).

`kept_tools` gives the array to send; `tools_edited` tells an edit of what was sent from
that append; `unseen_append` is the same test for two requests (`contextchef.prefix_break`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextchef._json import canonical_dumps
from contextchef._signing import as_decimal_store

__all__ = ["AtStart", "kept_tools", "tools_edited", "unseen_append"]

AtStart = Callable[[Sequence[Any]], list[Any]] | None
"""`Profile.tools_at_start`: what the model sees of tool entries (None: all of them)."""


def _unseen(entries: Sequence[Any], at_start: AtStart) -> bool:
    """Whether the model (and so the prompt cache) sees nothing of `entries` at the start."""
    return (
        at_start is not None
        and all(isinstance(e, Mapping) for e in entries)
        and not at_start(entries)
    )


def unseen_append(before: object, after: object, at_start: AtStart) -> bool:
    """Whether tool entries `after` are `before` followed by entries the model does not see.

    False when they are equal, and for anything but two lists.
    """
    if not isinstance(before, list) or not isinstance(after, list) or len(after) <= len(before):
        return False
    head = after[: len(before)]
    if head != before and as_decimal_store(head) != as_decimal_store(before):
        return False
    return _unseen(after[len(before) :], at_start)


def tools_edited(sent: list[Any] | None, now: list[Any], at_start: AtStart) -> bool:
    """Whether sending `now` after `sent` changes the ``tools`` prefix (an edit to report).

    Not when they are the same entries (a signed snapshot kept in a jsonb column holds
    ``1e20`` as an integer: `as_decimal_store`), nor when `now` only appends entries the
    model does not see (`unseen_append`). Anything else is: an entry changed, gone,
    moved, or added where the model sees it.
    """
    if sent is None or sent is now or sent == now:
        return False
    if as_decimal_store(sent) == as_decimal_store(now):
        return False
    return not unseen_append(sent, now, at_start)


def _key(entry: Any) -> str:
    return canonical_dumps(as_decimal_store(entry))


_KEPT = ("kept_tools",)
"""Key, in a ledger's cache, of the last `kept_tools` answer and the lists it was for."""


def kept_tools(
    sent: list[Any], fresh: list[Any], at_start: AtStart, memo: dict[Any, Any]
) -> list[Any] | None:
    """The ``tools`` to send after `sent`, when the strategy now renders `fresh`.

    `sent` itself when `fresh` holds the same entries in another order; `sent` followed
    by the entries `fresh` adds (in `fresh`'s order) when the model sees none of them;
    None otherwise (nothing to keep: `fresh` is sent, and an edit if it changes what was
    sent, `tools_edited`). The last answer is kept in `memo` (the ledger's cache) with
    the two lists, so the same list comes back while neither changes (one entry: older
    pairs are not kept alive).
    """
    if sent is fresh:
        return None
    hit = memo.get(_KEPT)
    if hit is None or hit[0] is not sent or hit[1] is not fresh:
        hit = memo[_KEPT] = (sent, fresh, _kept(sent, fresh, at_start))
    kept: list[Any] | None = hit[2]
    return kept


def _kept(sent: list[Any], fresh: list[Any], at_start: AtStart) -> list[Any] | None:
    if at_start is None or sent == fresh:  # the same entries in order (in C): send `fresh`
        return None
    was = {_key(e) for e in sent}
    keys = [_key(e) for e in fresh]
    if not was <= set(keys):  # an entry sent is gone or changed: not an addition
        return None
    new = [e for e, k in zip(fresh, keys, strict=True) if k not in was]
    if not new:
        return sent
    return [*sent, *new] if _unseen(new, at_start) else None
