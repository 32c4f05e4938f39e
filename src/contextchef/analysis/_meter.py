"""`CacheMeter`: consecutive requests of one session measured as the prompt cache sees them.

What `replay` measures per request and strategy (`TurnFigures`; the figures are described
in `contextchef.analysis._replay`): the request in the cache's order, the bytes it shares
with the previous one (`prefix_break`), the tokens read, written and left uncached under a
`ReplayPricing`, and their cost.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextchef._json import canonical_dumps
from contextchef._tokens import estimate_tokens
from contextchef.analysis._diagnose import _entries, conversation_key, prefix_break
from contextchef.analysis._pricing import ReplayPricing
from contextchef.providers import get_adapter
from contextchef.session._request import CompiledRequest

__all__ = ["CacheMeter", "TurnFigures"]


@dataclass(frozen=True, kw_only=True)
class TurnFigures:
    """One request under one strategy (see the module docstring for each figure).

    Attributes:
        tools: Entries of the request's ``tools`` array.
        revealed: Tools revealed before this request (``naive``: added to the array;
            ``client`` / ``native``: searched for), sorted.
        cause: Why the prefix broke against the previous request, or None when the
            request extends it (and for the first request).
        not_read: Why shared tokens were not read though the prefix held (the cache
            expired over an idle gap, or the prefix is below the model's minimum
            cacheable length), else None.
    """

    input_chars: int
    input_tokens_est: int
    shared_prefix_bytes: int
    cache_read_tokens_est: int
    cache_write_tokens_est: int
    cost_usd: float
    tools: int
    revealed: tuple[str, ...] = ()
    cause: str | None = None
    uncached_tokens_est: int = 0
    not_read: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``revealed`` as a list)."""
        return {**dataclasses.asdict(self), "revealed": list(self.revealed)}


def _cache_text(request: CompiledRequest, native: str | None) -> str:
    """The request in the cache's order, without the conversation's closing bracket.

    Under a provider-native strategy the ``tools`` segment is what the model sees of it
    (Anthropic strips deferred definitions; Responses shows their names and
    descriptions), as `contextchef plan` counts it.
    """
    entries = _entries(request.payload.get(conversation_key(request.target)))
    tools = request.segments["tools"]
    seen = get_adapter(request.target).profile.tools_at_start if native is not None else None
    if seen is not None and tools:
        loaded = json.loads(tools)
        tools = canonical_dumps(seen(loaded if isinstance(loaded, list) else [loaded]))
    return request.segments["system"] + tools + "[" + ",".join(entries)


def _definitions(request: CompiledRequest, names: Iterable[str]) -> str:
    """Canonical JSON of the ``tools`` entries named `names` (what a reference expands to)."""
    wanted = set(names)
    found: list[Any] = []
    for entry in json.loads(request.segments["tools"] or "[]"):
        if isinstance(entry, Mapping) and isinstance(entry.get("tools"), list):
            found += [
                t for t in entry["tools"] if isinstance(t, Mapping) and t.get("name") in wanted
            ]
        elif isinstance(entry, Mapping) and entry.get("name") in wanted:
            found.append(entry)
    return canonical_dumps(found) if found else ""


class CacheMeter:
    """Measures consecutive requests of one session and target as the prompt cache sees them.

    Args:
        pricing: Prices for ``cost_usd``.
        native: `Profile.native_tool_search` of the strategy's deferral, or None: with it
            the ``tools`` segment counts only what the model sees, and tools revealed by
            reference count their definitions (the provider expands them) from then on.
    """

    def __init__(self, pricing: ReplayPricing | None = None, *, native: str | None = None) -> None:
        self.pricing = pricing or ReplayPricing()
        self.native = native
        self.previous: CompiledRequest | None = None
        self.previous_text = ""
        self.expanded = (0, 0)  # chars, tokens of definitions the provider expanded so far

    def measure(
        self,
        request: CompiledRequest,
        *,
        revealed: Sequence[str] = (),
        expands: Sequence[str] = (),
        idle_seconds: float | None = None,
    ) -> TurnFigures:
        """The figures of `request` against the request measured before it.

        Args:
            request: The next compiled request (same target as the previous one).
            revealed: Names to report in `TurnFigures.revealed`.
            expands: Wire names this request reveals by reference (native only).
            idle_seconds: Seconds since the previous request, where known: past the
                pricing's cache lifetime nothing is read (`ReplayPricing.split`).
        """
        text = _cache_text(request, self.native)
        full = text + "]"
        data = text.encode()
        cause: str | None = None
        shared = 0
        if self.previous is not None:
            found = prefix_break(self.previous, request)
            if found is None:
                shared = len(self.previous_text.encode())
            else:
                shared, cause = found.shared_bytes, found.cause
        shared = min(shared, len(data))
        tokens = estimate_tokens(full)
        read = min(tokens, estimate_tokens(data[:shared].decode("utf-8", "ignore")))
        self.previous, self.previous_text = request, text
        chars = len(full)
        if self.native is not None:  # references the provider expands into definitions
            chars, tokens = chars + self.expanded[0], tokens + self.expanded[1]
            read += self.expanded[1] if cause is None else 0
            new = _definitions(request, expands)
            self.expanded = (self.expanded[0] + len(new), self.expanded[1] + estimate_tokens(new))
            chars, tokens = chars + len(new), tokens + estimate_tokens(new)
        read, write, uncached, why = self.pricing.split(tokens, read, idle_seconds=idle_seconds)
        return TurnFigures(
            input_chars=chars,
            input_tokens_est=tokens,
            shared_prefix_bytes=shared,
            cache_read_tokens_est=read,
            cache_write_tokens_est=write,
            uncached_tokens_est=uncached,
            cost_usd=self.pricing.cost(read, write, uncached=uncached),
            tools=_count_tools(json.loads(request.segments["tools"] or "[]")),
            revealed=tuple(revealed),
            cause=cause,
            not_read=why,
        )


def _count_tools(tools: Any) -> int:
    """Function entries of a ``tools`` segment (Gemini wrappers, Responses namespaces opened)."""
    if not isinstance(tools, list):
        return 0
    count = 0
    for entry in tools:
        if isinstance(entry, Mapping):
            inner = entry.get("function_declarations", entry.get("functionDeclarations"))
            nested = entry.get("tools") if entry.get("type") == "namespace" else None
            if isinstance(inner, list):
                count += len(inner)
            elif isinstance(nested, list):
                count += len(nested)
            else:
                count += 1
    return count
