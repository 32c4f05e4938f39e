"""What each thinking block is bound to, and which blocks a compile may still send.

On models with the prefix check (`ModelRules.prefix_check`) a ``thinking`` or
``redacted_thinking`` block sent back must come after the same ``system``, the same set of
``tools`` (deferred tools nothing referenced left out) and the same earlier messages (their
thinking blocks compared on their own) as the request whose reply carried it
(https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks).
The ledger replays what it sent, but a model or strategy switch within a target re-renders
entries one model cannot take (system messages, tool changes, inline definitions) and the
next model may get them back differently; so the ledger no longer *assumes* the blocks it
replays are still bound. It records, per block (by signature, or ``data`` for a redacted
block), a fingerprint of the request its reply answered (`reply_bindings`), and a compile
for a prefix-check model checks every block it would send against the prefix it now sends
(`first_unbound`); the compile strips the failing block and every later one and reports the
edit.

The fingerprint is a digest of: the system text, the tool entries as a sorted set
(``defer_loading`` entries only when a ``tool_reference`` before names them), and the
messages before the block in canonical JSON without their thinking blocks and
``cache_control`` markers (which the check ignores).
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._json import canonical_dumps
from contextchef.history._messages import Message, ReasoningPart
from contextchef.providers._chain import CHAIN as _CHAIN
from contextchef.providers._chain import CHECKED as _CHECKED
from contextchef.providers._chain import plain as _plain
from contextchef.providers._chain import tool_set
from contextchef.providers._thinking import block_key, repeat_cause, thinking_keys
from contextchef.session._ledger import Ledger, Mark

__all__ = ["answer_bindings", "first_unbound", "reply_bindings", "strip_from", "unbound_cause"]

_WHY = ("why",)
_UNDER = ("under",)


def _under(cache: dict[Any, Any], system: str | None, tools: bytes) -> bytes:
    """A digest of the system prompt and tool set (`tools`), kept while they are the same."""
    hit = cache.get(_UNDER)
    if hit is None or hit[0] is not system or hit[1] != tools:  # a prompt is hashed once
        text = canonical_dumps(system).encode("utf-8", "surrogatepass")
        hit = cache[_UNDER] = (
            system,
            tools,
            hashlib.blake2b(text + tools, digest_size=16).digest(),
        )
    out: bytes = hit[2]
    return out


def _reply_keys(message: Message, wire: str) -> list[str]:
    """Keys of the reply's own thinking blocks (recorded from `wire`, the target's format)."""
    keys = (
        block_key(p.provider_data.get("block"))
        for p in message.parts
        if isinstance(p, ReasoningPart) and p.provider == wire and p.provider_data is not None
    )
    return [key for key in keys if key is not None]


def _references(value: Any, names: set[str]) -> None:
    if isinstance(value, dict):
        if value.get("type") == "tool_reference":
            name = value.get("name", value.get("tool_name"))
            if isinstance(name, str):
                names.add(name)
        for item in value.values():
            _references(item, names)
    elif isinstance(value, list):
        for item in value:
            _references(item, names)


def _same_run(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items `a` and `b` share (the same objects)."""
    n = min(len(a), len(b))
    if n and a[n - 1] is b[n - 1] and all(map(operator.is_, a[:n], b[:n])):
        return n
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x is not y), n)


def _chain(
    cache: dict[Any, Any], entries: Sequence[Any]
) -> list[tuple[Any, bytes, frozenset[str]]]:
    """Per entry: itself, the digest of the entries up to it, the names referenced so far.

    Kept in the ledger's `cache` and extended from the longest run of the same objects,
    so a session pays for each entry once.
    """
    old: list[tuple[Any, bytes, frozenset[str]]] = cache.get(_CHAIN, [])
    same = _same_run([o[0] for o in old], entries) if old else 0
    out = old[:same]
    digest, names = (out[-1][1], out[-1][2]) if out else (b"", frozenset[str]())
    for entry in entries[same:]:
        text = canonical_dumps(_plain(entry)).encode("utf-8", "surrogatepass")
        digest = hashlib.blake2b(digest + text, digest_size=16).digest()
        found: set[str] = set()
        _references(entry, found)
        if found - names:
            names = names | found
        out.append((entry, digest, names))
    cache[_CHAIN] = out
    return out


def _tool_set(cache: dict[Any, Any], tools: Sequence[Any]) -> tuple[Any, list[Any], bytes]:
    """`tool_set` of `tools`, kept in the ledger's `cache` (the last two lists: sent, now)."""
    key = ("tools", id(tools))
    hit = cache.get(key)
    if hit is None or hit[0] is not tools:
        for old in [k for k in cache if k[0] == "tools" and k != key][:-1]:
            del cache[old]
        hit = cache[key] = tool_set(tools)
    return hit


def _fingerprint(
    cache: dict[Any, Any],
    system: str | None,
    tools: list[tuple[object, bool, str]],
    before: bytes,
    names: frozenset[str],
) -> str:
    key = ("head", system, id(tools), names)
    hit = cache.get(key)
    if hit is None or hit[0] is not tools:
        h = hashlib.blake2b(digest_size=16)
        h.update(canonical_dumps(system).encode("utf-8", "surrogatepass"))
        for name, deferred, text in tools:
            if not deferred or name in names:
                h.update(b"\x00" + text.encode("utf-8", "surrogatepass"))
        if len(cache) > 16:  # (system, tools, names) seen lately; the chain is kept
            for old in [k for k in cache if k[0] == "head"]:
                del cache[old]
        hit = cache[key] = (tools, h.digest())
    return hashlib.blake2b(hit[1] + before, digest_size=16).hexdigest()


def reply_bindings(
    cache: dict[Any, Any],
    reply: Message,
    *,
    system: str | None,
    tools: Sequence[Any] | None,
    entries: Sequence[Any],
    upto: int,
    known: Mapping[str, str],
    wire: str,
) -> dict[str, str]:
    """New bindings of `reply`'s thinking blocks: the request's fingerprint.

    A binding holds every fingerprint a block was produced after, space-separated (one
    unless a signature was reused). `system`, `tools` and ``entries[:upto]`` are what
    the request answered by `reply` sent; `wire` is the target's wire format (another
    provider's reasoning is never sent to it, so it binds nothing here).
    """
    keys = _reply_keys(reply, wire)
    if not keys:
        return {}
    chain = _chain(cache, entries[:upto])
    before, names = (chain[-1][1], chain[-1][2]) if chain else (b"", frozenset[str]())
    fp = _fingerprint(cache, system, _tool_set(cache, tools or [])[1], before, names)
    # a signature seen in two replies (hand-made histories reuse them) may take either
    out = {k: f"{known[k]} {fp}" for k in keys if k in known and fp not in known[k].split()}
    out.update({k: fp for k in keys if k not in known})
    return out


def first_unbound(
    cache: dict[Any, Any],
    bindings: Mapping[str, str],
    *,
    system: str | None,
    tools: Sequence[Any],
    entries: Sequence[Any],
) -> int | None:
    """Index in `entries` of the first message sending a block after another prefix.

    Only blocks with a recorded binding are checked (their origin is known); None when
    every one of them comes after the prefix it was produced after.
    """
    if not bindings:
        return None
    _, tool_set, digest = _tool_set(cache, tools)
    # entries already found bound after this same system and tool set are not read again
    # (`_CHECKED`, carried by snapshots)
    under = _under(cache, system, digest)
    done: tuple[bytes | None, list[Any]] = cache.get(_CHECKED, (None, []))
    start = _same_run(done[1], entries) if done[0] == under else 0
    chain: list[tuple[Any, bytes, frozenset[str]]] | None = None
    for j in range(start, len(entries)):
        keys = [k for k in thinking_keys(entries[j]) if k in bindings]
        if not keys:
            continue
        if chain is None:
            chain = _chain(cache, entries)
        before, names = (chain[j - 1][1], chain[j - 1][2]) if j else (b"", frozenset[str]())
        fp = _fingerprint(cache, system, tool_set, before, names)
        if any(fp not in bindings[k].split() for k in keys):
            cache[_WHY] = repeat_cause(entries, j, keys)  # `unbound_cause`
            return j
    cache[_CHECKED] = (under, list(entries))
    return None


def unbound_cause(cache: Mapping[Any, Any]) -> str:
    """Why the last `first_unbound` over this cache found a block unbound, if not the usual."""
    return str(cache.get(_WHY, ""))


def answer_bindings(
    ledger: Ledger, history: Sequence[Message], answered: bool, wire: str
) -> dict[str, str]:
    """`reply_bindings` of the answer to the ledger's last compile (`answered`: it was).

    `wire` is the target's wire format (`Profile.wire`): only its own thinking binds.
    """
    pending = ledger.pending
    if pending is None or len(history) <= pending.history or not answered:
        return {}
    reply = history[pending.history]
    if reply.role != "assistant":
        return {}
    return reply_bindings(
        ledger.binding_cache,
        reply,
        system=ledger.system,
        tools=ledger.tools,
        entries=ledger.wire,
        upto=pending.wire,
        known=ledger.bindings,
        wire=wire,
    )


def strip_from(ledger: Ledger, base: Mark, wire: int) -> int:
    """The history index to strip thinking from so that wire entry `wire` loses it.

    `base` is the mark the compile that sent `wire` continued from.
    """
    if wire >= base.wire:
        return base.history
    return next(m for m in reversed(ledger.marks) if m.wire <= wire).history
