"""A ledger's thinking-fingerprint chain and binding check, carried by its snapshot.

On a model with the prefix check a compile checks every thinking block it sends against
the fingerprint of the prefix it was produced after (`contextchef.session._binding`,
https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks).
The session keeps two things in its ledger's ``binding_cache`` so that it pays for each
entry once: the `CHAIN` (per wire entry, the digest of the entries up to it and the tool
names referenced so far) and `CHECKED` (the leading entries already found bound, and a
digest of the ``system`` and tool set they were checked under). A snapshot records both in
the ledger's ``chain`` field, so the first compile after a restore does no more than a
steady one: it re-checks only the entries past ``checked``, or all of them when the
worker's ``system`` or tool set gives another ``under`` digest.

What the check guards, and why carrying it is no weaker: the bindings it checks against
are the snapshot's own (``bindings``), as are the chain digests; in an unsigned snapshot
the record digest over them is a checksum, not a MAC, so whoever rewrites ``checked`` can
as well rewrite a block's binding to the fingerprint it now has. What the check guards is
that the *worker* sends each block after the prefix it was produced after: the same
``system`` and tool set (`CHECKED`'s ``under``, compared with the worker's on every
compile) and the same earlier messages. For those, the chain and ``checked`` are tied to
the entries they were computed over (``wire``: a digest of their ``wire_digests``, which
the restore checks against the entries): an entry edited after the snapshot was taken
(its digest recomputed) leaves both behind, and the compile fingerprints and checks every
entry again. Signed snapshots (HMAC) cover all of it.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from contextchef._cache import LruMap
from contextchef._errors import UsageError
from contextchef._json import canonical_dumps
from contextchef.history._forms import ledger_where, text_digest
from contextchef.providers._thinking import THINKING
from contextchef.providers._wire_shape import check_wire_shape

__all__ = ["CHAIN", "CHECKED", "chain_form", "plain", "restore_chain", "tool_set"]

CHAIN = ("chain",)
"""``binding_cache`` key of the chain of thinking fingerprints: per wire entry, the entry,
the digest of the entries up to it (16 bytes) and the tool names referenced so far."""
CHECKED = ("checked",)
"""``binding_cache`` key of ``(under, entries)``: the entries found bound after the prefix
whose ``system`` and tool set digest to `under` (16 bytes; None: unknown, check all)."""


def _tie(digests: Sequence[str | None], size: int) -> str | None:
    """A digest of the first `size` ``wire_digests`` (None when one is not made)."""
    head = digests[:size]
    return text_digest(",".join(head)) if all(head) and len(head) == size else None  # type: ignore[arg-type]


def chain_form(
    cache: Mapping[Any, Any], wire: Sequence[Any], digests: Sequence[str | None], tools: Any
) -> dict[str, Any]:
    """``{"chain": ...}``, the `CHAIN` and `CHECKED` over the `wire` entries they match.

    `digests` are the entries' ``wire_digests`` (made by the same save). Empty when no
    chain was built. The form: ``digests`` (32 hex digits an entry), ``references`` (tool
    name -> the first entry naming it), ``wire`` (the tie, see the module docstring), and
    ``checked`` (a count of entries) with ``under`` (32 hex digits) when any were checked,
    ``tools``: the digest of the ledger's `tools` as a tool set (`tool_set`) if made.
    """
    old: list[tuple[Any, bytes, frozenset[str]]] = cache.get(CHAIN, [])
    pairs = zip(old, wire, strict=False)
    size = sum(1 for _ in itertools.takewhile(lambda p: p[0][0] is p[1], pairs))
    if not size:
        return {}
    references: dict[str, int] = {}
    for i, (_, _, names) in enumerate(old[:size]):
        if len(names) > len(references):  # the names only grow along the chain
            references.update((n, i) for n in names if n not in references)
    out: dict[str, Any] = {"digests": [o[1].hex() for o in old[:size]], "references": references}
    tie = _tie(digests, size)
    if tie is not None:
        out["wire"] = tie
        under, checked = cache.get(CHECKED, (None, ()))
        pairs = zip(checked, wire[:size], strict=False)
        count = sum(1 for _ in itertools.takewhile(lambda p: p[0] is p[1], pairs))
        if under is not None and count:
            out.update(checked=count, under=under.hex())
    made = cache.get(("tools", id(tools)))
    if made is not None and made[0] is tools:
        out["tools"] = made[2].hex()
    return {"chain": out}


def restore_chain(
    cache: dict[Any, Any],
    wire: Sequence[Any],
    digests: Sequence[str | None],
    form: Mapping[str, Any] | None,
    name: str,
    tools: Any = None,
) -> None:
    """Put a recorded ``chain`` (`chain_form`) back in `cache` over the restored `wire`.

    A chain tied to other ``wire_digests`` than the restored ones (``wire``) is left out:
    the next compile builds and checks it again. The ledger's restored `tools` take the
    tool set this process rendered with the recorded ``tools`` digest, if any.

    Raises:
        UsageError: Digests that are not 32 hex digits, or more of them than entries
            (``checked`` included); the message names the ledger (`name`).
        SnapshotMismatchError: An entry not in `name`'s wire form (`check_wire_shape`).
    """
    check_wire_shape(name, wire)  # a ledger copied from another target's key
    if not form:
        return
    hexes = [*form["digests"], form.get("under", "0" * 32), form.get("tools", "0" * 32)]
    try:  # one call for them all: 32 digits each, no space (`fromhex` would skip it)
        raw = bytes.fromhex("".join(hexes)) if set(map(len, hexes)) == {32} else b""
    except ValueError:
        raw = b""
    size, checked = len(hexes) - 2, form.get("checked", 0)
    if len(raw) != 16 * len(hexes) or size > len(wire) or checked > size:
        raise UsageError(
            f"{ledger_where(name)} 'chain' must hold a 32-digit hex digest per wire entry (at "
            f"most {len(wire)}) and check at most as many; nothing was restored"
        )
    if "wire" in form and form["wire"] != _tie(digests, size):
        return  # entries edited since (their digests recomputed): fingerprint them again
    digest = [raw[i : i + 16] for i in range(0, len(raw), 16)]
    under, made = digest[-2:]
    added: dict[int, set[str]] = {}
    for tool, at in form["references"].items():
        added.setdefault(at, set()).add(tool)
    names, chain, done = frozenset[str](), list[tuple[Any, bytes, frozenset[str]]](), 0
    for at in [*sorted(i for i in added if i < size), size]:  # the names grow at `at`
        chain.extend(zip(wire[done:at], digest[done:at], itertools.repeat(names)))
        names, done = names | added.get(at, set()), at
    cache[CHAIN] = chain
    if checked and "wire" in form:
        cache[CHECKED] = (under, list(wire[:checked]))
    rendered = _DIGESTS.get(made) if "tools" in form and tools is not None else None
    if rendered is not None:
        cache["tools", id(tools)] = (tools, *rendered[1:])


_UNCHAINED = {*THINKING, "compaction"}


def plain(value: Any) -> Any:
    """`value` without ``cache_control`` keys, thinking and compaction blocks."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [
            plain(v) for v in value if not (isinstance(v, dict) and v.get("type") in _UNCHAINED)
        ]
    return value


_SETS: LruMap[int, tuple[Any, list[Any], bytes]] = LruMap(8)
"""`tool_set` of the last tool lists, by identity: sessions over one view share its list."""
_DIGESTS: LruMap[bytes, tuple[Any, list[Any], bytes]] = LruMap(8)
"""The same by digest (`restore_chain`)."""


def tool_set(tools: Sequence[Any]) -> tuple[Any, list[Any], bytes]:
    """``(tools, set, digest)``: the tool set the prefix check compares, and its digest.

    The set is the entries' ``(name, deferred, canonical JSON)`` (of `plain` of each entry:
    ``cache_control`` left out), sorted by the JSON; the digest 16 bytes of BLAKE2b over
    them. Kept for the last lists rendered in this process, by identity (a tool list a
    request sent is never changed after: the session's rendered prefix is not).
    """
    hit = _SETS.get(id(tools))
    if hit is None or hit[0] is not tools:
        rendered = sorted(
            (
                (t.get("name"), t.get("defer_loading") is True, canonical_dumps(plain(t)))
                for t in tools
                if isinstance(t, Mapping)
            ),
            key=lambda u: u[2],
        )
        text = "".join(f"\x00{d:d}{t}" for _, d, t in rendered).encode("utf-8", "surrogatepass")
        hit = (tools, rendered, hashlib.blake2b(text, digest_size=16).digest())
        _SETS.put(id(tools), hit)
        _DIGESTS.put(hit[2], hit)
    return hit
