"""What a request's input costs under a provider's cache prices (``replay`` and ``plan``).

`ReplayPricing` holds a base input price (USD per million tokens) and the cache's
multipliers: a read, a write per lifetime (TTL), the shortest cacheable prompt and the
lifetime in seconds. `ReplayPricing()` is spec 002's model (read 0.1x, write 1.25x, no
minimum, no expiry); `ReplayPricing.for_model` takes the target model's own rules
(`Adapter.cache_rules`: Anthropic 5m writes 1.25x and 1h writes 2x, OpenAI writes 1.25x
from GPT-5.6, minimum lengths per model) and names their source in `source`, which
``contextchef plan`` and ``replay`` print.

What the model charges (`ReplayPricing.cost`): reads at ``cache_read`` x the base price,
writes at the multiplier of their lifetime, the rest at the base price. What it
estimates (`ReplayPricing.split`): a prompt shorter than ``min_cacheable_tokens`` is
neither read nor written (every token at the base price), a shared prefix shorter than
that was never cached, and after an idle gap longer than the lifetime nothing is read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contextchef._errors import UsageError, shown
from contextchef.providers import CacheReport, get_adapter

__all__ = ["MAX_PRICED_TOKENS", "SPEC_002", "ReplayPricing", "check_prices"]

MAX_PRICED_TOKENS = 10**15
"""The most tokens a price must be able to multiply without overflowing a float."""


def check_prices(
    price_per_mtok: object, cache_read: object, cache_write: object, tokens: object = 0
) -> None:
    """Check cost-model inputs: finite numbers >= 0 whose products stay finite.

    Each price must be able to price `MAX_PRICED_TOKENS` tokens at either multiplier
    without overflowing (so ``inf``, ``nan`` and ``1e308`` are refused; figures never
    come out as Infinity or NaN).

    Raises:
        UsageError: Naming the offending value.
    """
    named = {
        "price_per_mtok": price_per_mtok,
        "cache_read": cache_read,
        "cache_write": cache_write,
        "history_tokens": tokens,
    }
    numbers: dict[str, float] = {}
    for name, value in named.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"{name} must be a number, got {type(value).__name__}")
        if name == "history_tokens" and not 0 <= value <= MAX_PRICED_TOKENS:
            raise UsageError(
                f"history_tokens must be 0..{MAX_PRICED_TOKENS:.0e}, got {shown(value, 40)}"
            )
        try:
            number = float(value)
        except OverflowError:  # an int too large for a float
            number = math.inf
        if not math.isfinite(number) or number < 0:
            raise UsageError(f"{name} must be a finite number >= 0, got {shown(value, 40)}")
        numbers[name] = number
    multiplier = max(numbers["cache_read"], numbers["cache_write"], 1.0)
    if numbers["price_per_mtok"] * multiplier * MAX_PRICED_TOKENS > 1e300:
        raise UsageError(
            f"price_per_mtok x cache multiplier ({shown(price_per_mtok, 40)} x {multiplier!r}) "
            "is too large to price tokens without overflowing; give realistic USD per million "
            "tokens and multipliers"
        )


SPEC_002 = "spec 002 multipliers: read 0.1x, write 1.25x; no minimum length, no expiry"
"""`ReplayPricing.source` of the default prices."""


@dataclass(frozen=True, kw_only=True)
class ReplayPricing:
    """Input prices: a base USD per million tokens and the prompt cache's multipliers.

    Attributes:
        price_per_mtok: Base input price, USD per million tokens.
        cache_read: Multiplier of a cache read.
        cache_write: Multiplier of a cache write under `ttl` (what estimates write with).
        cache_write_by_ttl: Multiplier per lifetime name, for reported writes
            (`CacheReport.written_by_ttl`); a lifetime not named costs `cache_write`.
        ttl: The lifetime estimated writes get (``""``: unnamed).
        ttl_seconds: That lifetime in seconds, or None (never expires).
        min_cacheable_tokens: The shortest prompt the provider caches, in tokens.
        source: Where these prices come from (printed with the figures).

    Raises:
        UsageError: A value that is not a finite number >= 0, or prices whose products
            overflow (see `contextchef.analysis._accounting.check_prices`).
    """

    price_per_mtok: float = 3.0
    cache_read: float = 0.1
    cache_write: float = 1.25
    cache_write_by_ttl: Mapping[str, float] = field(default_factory=dict)
    ttl: str = ""
    ttl_seconds: int | None = None
    min_cacheable_tokens: int = 0
    source: str = SPEC_002

    def __post_init__(self) -> None:
        check_prices(self.price_per_mtok, self.cache_read, self.cache_write)
        for name, value in self.cache_write_by_ttl.items():
            check_prices(self.price_per_mtok, self.cache_read, value)
            if not isinstance(name, str):
                raise UsageError(f"cache_write_by_ttl keys are lifetime names, got {shown(name)}")
        numbers = (
            ("ttl_seconds", self.ttl_seconds or 0),
            ("min_cacheable_tokens", self.min_cacheable_tokens),
        )
        for name, number in numbers:
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                raise UsageError(f"{name} must be a whole number >= 0, got {shown(number, 40)}")

    @classmethod
    def for_model(
        cls,
        target: str,
        model: str,
        *,
        price_per_mtok: float = 3.0,
        cache_read: float | None = None,
        cache_write: float | None = None,
        ttl: str | None = None,
    ) -> ReplayPricing:
        """The prices of `model` on `target` (`Adapter.cache_rules`), at `price_per_mtok`.

        Args:
            target: One of `contextchef.TARGETS`.
            model: The model name (its rules decide the write price and minimum length).
            price_per_mtok: Base input price, USD per million tokens.
            cache_read: Override the read multiplier.
            cache_write: Override the write multiplier (of every lifetime).
            ttl: The lifetime estimated writes get (default: the model's default).

        Raises:
            UnknownTargetError: Unknown target.
            UsageError: A lifetime the model does not have, or bad prices.
        """
        rules = get_adapter(target).cache_rules(model)
        ttl = rules.ttl if ttl is None else ttl
        if ttl not in rules.write:
            raise UsageError(
                f"model {shown(model)} on {target} has no cache lifetime {shown(ttl)}; "
                f"valid: {', '.join(rules.write)}"
            )
        by_ttl = (
            dict(rules.write) if cache_write is None else dict.fromkeys(rules.write, cache_write)
        )
        overridden = [n for n, v in (("read", cache_read), ("write", cache_write)) if v is not None]
        return cls(
            price_per_mtok=price_per_mtok,
            cache_read=rules.read if cache_read is None else cache_read,
            cache_write=by_ttl[ttl],
            cache_write_by_ttl=by_ttl,
            ttl=ttl,
            ttl_seconds=rules.ttl_seconds.get(ttl),
            min_cacheable_tokens=rules.min_tokens,
            source=rules.source + (f" ({' and '.join(overridden)} given)" if overridden else ""),
        )

    def cost(
        self,
        read: int,
        write: int,
        *,
        uncached: int = 0,
        by_ttl: Mapping[str, int] | None = None,
    ) -> float:
        """USD for `read` cached, `write` newly written and `uncached` input tokens.

        `by_ttl` splits `write` by lifetime (a reported `CacheReport.written_by_ttl`); the
        rest of `write` costs `cache_write`.
        """
        by_ttl = by_ttl or {}
        rest = max(0, write - sum(by_ttl.values()))
        writes = self.cache_write * rest + sum(
            self.cache_write_by_ttl.get(name, self.cache_write) * n for name, n in by_ttl.items()
        )
        return self.price_per_mtok * (self.cache_read * read + writes + uncached) / 1e6

    def actual(self, report: CacheReport) -> float:
        """USD of a request as its response reported it (`CacheReport`)."""
        return self.cost(
            report.read, report.written, uncached=report.uncached, by_ttl=report.written_by_ttl
        )

    def split(
        self, tokens: int, shared: int, *, idle_seconds: float | None = None
    ) -> tuple[int, int, int, str | None]:
        """``(read, write, uncached, why)`` of a request of `tokens` sharing `shared` tokens.

        A request writes everything after what it reads (a breakpoint on its last block).
        `why` says why a shared prefix was not read (too short to cache, expired), else
        None.
        """
        why: str | None = None
        lifetime = self.ttl_seconds
        if shared and idle_seconds is not None and lifetime is not None and idle_seconds > lifetime:
            why, shared = f"the cache expired ({idle_seconds:,.0f} s idle, lifetime {self.ttl})", 0
        if shared and shared < self.min_cacheable_tokens:
            why, shared = f"{shared:,} shared tokens are below the minimum cacheable length", 0
        if tokens < self.min_cacheable_tokens:
            return shared, 0, tokens - shared, why
        return shared, tokens - shared, 0, why

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``cache_write_by_ttl`` as a plain dict)."""
        return {
            "price_per_mtok": self.price_per_mtok,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "cache_write_by_ttl": dict(self.cache_write_by_ttl),
            "ttl": self.ttl,
            "ttl_seconds": self.ttl_seconds,
            "min_cacheable_tokens": self.min_cacheable_tokens,
            "source": self.source,
        }
