"""OpenAI prompt caching on ``gpt-5.6`` and later: breakpoints, options and key (both wires).

Responses and Chat Completions share these rules; the Chat adapter imports them from here.
Sources: openai-python 3.60 types (``PromptCacheOptions`` in
``responses/response_create_params.py`` and ``chat/completion_create_params.py``,
``PromptCacheBreakpoint`` on the content-part params), research note
provider-context-management §2.2:

* ``prompt_cache_options`` and ``prompt_cache_breakpoint`` are "supported for gpt-5.6 and
  later models"; other and unknown models get none of this (the safe way: the fields are
  not sent).
* ``mode: explicit`` creates no implicit breakpoint and writes "up to the latest four
  explicit breakpoints"; with none, "the request does not use prompt caching". ``implicit``
  (the default) anchors one breakpoint at the latest message, which in an agent loop is
  new every turn: the whole growing prompt is written and little is read back (bifrost
  PR #6699), so we send ``explicit``.
* Matching "considers up to the latest 80 breakpoints in the conversation, without a
  content-block lookback limit".
* A breakpoint "marks the exact end of a reusable prompt prefix"; without ``ttl`` it
  inherits ``prompt_cache_options.ttl``. Our markers are ``{"mode": "explicit"}`` only, so
  the TTL chosen per request never changes a byte already sent.
* Breakpoints sit on input content parts: Responses ``input_text`` / ``input_image`` /
  ``input_file`` (message content and ``function_call_output`` lists); Chat ``text`` /
  ``image_url`` / ``input_audio``. Output parts (assistant text) take none.
* TTL: Responses ``30m`` or ``12h``; Chat ``30m`` only (its ``PromptCacheOptions.ttl``
  type). CONFLICT (research §2.2): several third-party docs say ``30m`` is the only value
  on Responses too; we follow the SDK types and ask for ``12h`` only when the host
  expects turns further apart than 30 minutes.

Whether a marker is part of the cached prefix is not documented. The types' wording (a
breakpoint marks the end of a prefix; matching considers the latest 80 breakpoints *in
the conversation*) says markers stay where they were sent and later requests match
against them. So a marker is treated as bytes sent: it is placed when its entry is first
rendered (the end of each request's new entries, which from the next turn on is the end
of the last answered request) and recorded with the entry, so every later request sends
it again unchanged. No marker is ever moved (nor removed, but for the model switch
below), and whichever way the API hashes markers, the prefix before each one is
byte-identical to what was sent. A request adds one marker (Chat: plus the system
message's, the same on every request), far under the four written. A model that takes
none (an older one the session switched to) gets the entries again without them:
`first_marked` finds the first, and the session replays from before it (OpenAI caches
per model, so a switch restarts the cache anyway). Responses' ``instructions`` is a
string, which cannot carry a marker: there the first breakpoint ends the first request
(tools, instructions and the first turn).
A request's end may be a volatile update (state, announcements): the ledger sends it
again unchanged like any entry, so it is as stable as what came before it; a prefill
(turn-scoped, added by ``assemble`` and never recorded) is never marked.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._json import canonical_dumps
from contextchef.providers._base import RequestOptions
from contextchef.providers._scan import first_found

__all__ = [
    "MARKER",
    "cache_fields",
    "first_marked",
    "gpt_version",
    "marked_entries",
    "marked_system",
    "refused_mark",
    "takes_breakpoints",
    "ttl_for",
]

MARKER: Mapping[str, str] = {"mode": "explicit"}
"""The ``prompt_cache_breakpoint`` value we send (its TTL is the request's)."""
_GPT = re.compile(r"(?:^|[/:])gpt-(\d+)(?:\.(\d+))?(?![0-9])")
_TWELVE_HOURS_FROM = 30 * 60.0
"""A turn gap (seconds) past the 30-minute TTL asks for ``12h`` where the API has it."""
RESPONSES_PARTS = frozenset({"input_text", "input_image", "input_file"})
CHAT_PARTS = frozenset({"text", "image_url", "input_audio"})
_ASKING_ROLES = frozenset({"user", "developer", "system", "tool"})


def gpt_version(model: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a ``gpt-N[.M]`` model name (a ``provider/`` prefix allowed)."""
    found = _GPT.search(model.lower())
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2) or 0)


def takes_breakpoints(model: str) -> bool:
    """``gpt-5.6`` and later: explicit breakpoints and ``prompt_cache_options``."""
    version = gpt_version(model)
    return version is not None and version >= (5, 6)


def ttl_for(turn_gap: float | None, *, twelve_hours: bool) -> str:
    """The TTL for an expected `turn_gap` in seconds (None: ``30m``, the default)."""
    long_gap = turn_gap is not None and turn_gap > _TWELVE_HOURS_FROM
    return "12h" if long_gap and twelve_hours else "30m"


def _marked_content(content: object, kinds: frozenset[str], text_kind: str) -> object | None:
    """`content` with its last markable part marked; None: nothing to mark (or marked)."""
    if isinstance(content, str):
        return [{"type": text_kind, "text": content, "prompt_cache_breakpoint": dict(MARKER)}]
    if not isinstance(content, list):
        return None
    for i in range(len(content) - 1, -1, -1):
        part = content[i]
        if isinstance(part, Mapping) and "prompt_cache_breakpoint" in part:
            return None
        if isinstance(part, Mapping) and part.get("type") in kinds:
            marked = {**part, "prompt_cache_breakpoint": dict(MARKER)}
            return [*content[:i], marked, *content[i + 1 :]]
    return None


def _input_key(entry: Mapping[str, Any]) -> str | None:
    """Where an input entry holds its parts; None: model output, calls, tool additions."""
    if entry.get("type") == "function_call_output":
        return "output"
    if entry.get("type", "message") == "message" and entry.get("role") in _ASKING_ROLES:
        return "content"
    return None


def _marked(entry: Mapping[str, Any], key: str, *, chat: bool) -> dict[str, Any] | None:
    kinds, text_kind = (CHAT_PARTS, "text") if chat else (RESPONSES_PARTS, "input_text")
    value = entry.get(key)
    if value == "" or value == []:
        return None
    content = _marked_content(value, kinds, text_kind)
    return None if content is None else {**entry, key: content}


def marked_entries(entries: list[dict[str, Any]], *, chat: bool) -> list[dict[str, Any]]:
    """`entries` (one request's new entries) with a breakpoint at their last input part.

    The last entry that has an input content part gets a copy with a marker there (a
    string content or tool output becomes one text part carrying it); an entry already
    marked, or new entries with no input part, leave `entries` as they are.
    """
    for i in range(len(entries) - 1, -1, -1):
        key = _input_key(entries[i])
        if key is None:
            continue
        marked = _marked(entries[i], key, chat=chat)
        # an input entry that cannot carry one (already marked, empty) ends the search
        return entries if marked is None else [*entries[:i], marked, *entries[i + 1 :]]
    return entries


_SCANNED = "contextchef prompt_cache_breakpoint scan"
"""`first_marked`'s key in a ledger's memo: (entries read, the last of them, first marked)."""


def _carries_marker(entry: Mapping[str, Any]) -> bool:
    key = _input_key(entry)
    parts = entry.get(key) if key is not None else None
    return isinstance(parts, list) and any(
        isinstance(p, Mapping) and "prompt_cache_breakpoint" in p for p in parts
    )


def first_marked(entries: Sequence[Mapping[str, Any]], memo: dict[Any, Any]) -> int | None:
    """The index of the first of `entries` carrying a breakpoint (None: none).

    `entries` is a ledger's wire: recorded entries, appended or cut back and rendered
    again (new objects), never changed in place. `memo` keeps how many were read and the
    last of them; while that one is still in its place, only entries after it are read.
    """
    return first_found(entries, memo, _SCANNED, _carries_marker)


def refused_mark(
    entries: Sequence[Mapping[str, Any]], memo: dict[Any, Any]
) -> tuple[int, str] | None:
    """`first_marked`, as what a model taking no breakpoints refuses (`Adapter.refused_at`)."""
    found = first_marked(entries, memo)
    return None if found is None else (found, "prompt-cache breakpoints")


def marked_system(text: str) -> dict[str, Any]:
    """Chat's system message with a breakpoint: tools and instructions cached together."""
    part = {"type": "text", "text": text, "prompt_cache_breakpoint": dict(MARKER)}
    return {"role": "system", "content": [part]}


def cache_fields(
    payload: dict[str, Any],
    options: RequestOptions,
    seed: Sequence[Any],
    *,
    responses: bool,
) -> None:
    """Add ``prompt_cache_key`` and ``prompt_cache_options`` to `payload` (host's win).

    The key is ``contextchef-`` and 32 hex digits of the sha256 of `seed` (the system
    text and the conversation's first entry as sent): the same on every request of one
    conversation, and from the session's own content, never a clock or random number.
    ``prompt_cache_options`` is ``explicit`` with `ttl_for` the host's expected turn gap
    and, on Responses when diagnostics are asked for, ``comparison_response_id``: the
    last response ingested for this target (OpenAI then reports
    ``prompt_cache_diagnostics``). Chat Completions has no such field.
    """
    digest = hashlib.sha256(canonical_dumps(list(seed)).encode("utf-8")).hexdigest()
    payload.setdefault("prompt_cache_key", f"contextchef-{digest[:32]}")
    asked: dict[str, Any] = {
        "mode": "explicit",
        "ttl": ttl_for(options.turn_gap, twelve_hours=responses),
    }
    if responses and options.diagnose and options.previous_response is not None:
        asked["comparison_response_id"] = options.previous_response
    payload.setdefault("prompt_cache_options", asked)
