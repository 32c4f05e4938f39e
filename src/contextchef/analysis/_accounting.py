"""Per-turn cost accounting for a tool catalog (what ``contextchef plan`` prints).

Two models:

* **Space** (spec 003, chapter 8): characters of the serialized ``tools`` array in the
  target's own shape, flat (every schema resident) against resident (direct tools plus
  ``tool_search`` with its name directory and ``defer_execute``). The net saving per
  turn is what the deferred schemas cost minus what the meta-tools add. Schema-to-name
  ratios show how much text a name stands for.
* **Prompt cache** (spec 002): the input cost of the one request in which a tool is
  added mid-session, with ``H`` tokens of cached history, a base input price ``p`` per
  million tokens, cache reads at ``read`` x p and cache writes at ``write`` x p
  (Anthropic's standard multipliers are 0.1 and 1.25):

  - naive (rewrite the tools array): the whole prefix is written again,
    ``write * p * (T_full + H)``;
  - append-only (new definition after the cached prefix):
    ``read * p * (T_full + H) + write * p * dT``;
  - meta-tool deferral (tools constant; the schema arrives as a tool_search result):
    ``read * p * (T_resident + H) + write * p * R``;

  where ``T_full`` / ``T_resident`` are the flat / resident tools tokens, ``dT`` the
  added tool's definition tokens and ``R`` the tokens of the tool_search result that
  loads it. The added tool is the largest deferred one (a worst case); token figures are
  `contextchef.estimate_tokens` estimates.

The same figures per disclosure strategy, measured on real compiles for one target and
model, are in `contextchef.analysis._plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from contextchef._json import canonical_dumps
from contextchef._tokens import estimate_tokens
from contextchef.analysis._pricing import MAX_PRICED_TOKENS, SPEC_002, ReplayPricing, check_prices
from contextchef.deferred._meta import DeferredConfig, directory_overflow, run_tool_search
from contextchef.deferred._view import SessionView
from contextchef.providers import Adapter, get_adapter
from contextchef.session._chef import ContextChef
from contextchef.tools._tool import CompiledTool

__all__ = [
    "MAX_PRICED_TOKENS",
    "CacheCostModel",
    "PlanReport",
    "catalog_plan",
    "check_prices",
    "plan_report",
]


@dataclass(frozen=True, kw_only=True)
class CacheCostModel:
    """Prices for the prompt-cache cost model.

    Attributes:
        history_tokens: Cached conversation history ``H``, in tokens.
        price_per_mtok: Base input price ``p`` in USD per million tokens.
        cache_read: Cache-read price multiplier.
        cache_write: Cache-write price multiplier (of the lifetime `ttl`).
        ttl: The cache lifetime writes get (``""``: unnamed).
        min_cacheable_tokens: The shortest prompt the provider caches: a prefix below it
            is neither read nor written, every token at the base price (`rate`).
        source: Where the prices come from (``contextchef plan`` prints it).

    Raises:
        UsageError: A value that is not a finite number >= 0, or prices whose products
            overflow (see `check_prices`).
    """

    history_tokens: int = 80_000
    price_per_mtok: float = 3.0
    cache_read: float = 0.1
    cache_write: float = 1.25
    ttl: str = ""
    min_cacheable_tokens: int = 0
    source: str = SPEC_002

    def __post_init__(self) -> None:
        check_prices(self.price_per_mtok, self.cache_read, self.cache_write, self.history_tokens)

    @classmethod
    def for_model(
        cls,
        target: str,
        model: str,
        *,
        history_tokens: int = 80_000,
        price_per_mtok: float = 3.0,
        cache_read: float | None = None,
        cache_write: float | None = None,
        ttl: str | None = None,
    ) -> CacheCostModel:
        """`model`'s own cache prices on `target` (`ReplayPricing.for_model`), at `H` and `p`.

        Raises:
            UnknownTargetError: Unknown target.
            UsageError: A lifetime the model does not have, or bad prices.
        """
        prices = ReplayPricing.for_model(
            target,
            model,
            price_per_mtok=price_per_mtok,
            cache_read=cache_read,
            cache_write=cache_write,
            ttl=ttl,
        )
        return cls(
            history_tokens=history_tokens,
            price_per_mtok=price_per_mtok,
            cache_read=prices.cache_read,
            cache_write=prices.cache_write,
            ttl=prices.ttl,
            min_cacheable_tokens=prices.min_cacheable_tokens,
            source=prices.source,
        )

    def rate(self, multiplier: float, prefix_tokens: int) -> float:
        """`multiplier` for a prefix of `prefix_tokens`; 1.0 below `min_cacheable_tokens`.

        Below the minimum the provider caches nothing: every token is at the base price.
        """
        return multiplier if prefix_tokens >= self.min_cacheable_tokens else 1.0


@dataclass(frozen=True, kw_only=True)
class PlanReport:
    """What a catalog costs per turn for one target (see the module docstring).

    Character figures are of the serialized ``tools`` array in the target's shape;
    ``*_tokens_est`` are estimates; ``*_usd`` are per request.
    """

    target: str
    tools_total: int
    tools_direct: int
    tools_deferred: int
    full_chars: int
    full_tokens_est: int
    resident_chars: int
    resident_tokens_est: int
    deferred_schema_chars: int
    meta_tools_chars: int
    directory_chars: int
    directory_budget_chars: int
    directory_budget_used: float
    saved_chars_per_turn: int
    saved_tokens_est_per_turn: int
    saved_ratio: float
    schema_to_name_ratio_all: float
    schema_to_name_ratio_deferred: float
    schema_to_name_ratio_largest: float
    largest_tool: str
    cache_added_tool_tokens_est: int
    cache_naive_usd: float
    cache_append_only_usd: float
    cache_meta_tool_usd: float
    cache_steady_flat_usd: float
    cache_steady_deferred_usd: float
    cache_model: CacheCostModel = field(default_factory=CacheCostModel)
    servers: tuple[str, ...] = ()
    directory_warning: str = ""
    """Why the directory is past its budget (`directory_overflow`: deferred tools with
    no server are listed whole), or ``""``; ``contextchef plan`` prints it."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (``contextchef plan --json``)."""
        out = asdict(self)
        out["servers"] = list(self.servers)
        return out


def _text(adapter: Adapter, tools: Sequence[CompiledTool]) -> str:
    return canonical_dumps(adapter.render_tools(tools)) if tools else ""


def _size(adapter: Adapter, tools: Sequence[CompiledTool]) -> int:
    return len(_text(adapter, tools))


def _ratio(a: int, b: int) -> float:
    return round(a / b, 2) if b else 0.0


def _usd(tokens: float, multiplier: float, model: CacheCostModel) -> float:
    return tokens * multiplier * model.price_per_mtok / 1_000_000


def catalog_plan(
    chef: ContextChef, target: str = "anthropic", *, cache: CacheCostModel | None = None
) -> PlanReport:
    """What `chef`'s tool catalog costs per turn for `target` (``contextchef plan``).

    Sizes are characters of the ``tools`` array in `target`'s own shape (canonical JSON)
    and token estimates (`contextchef.estimate_tokens`); prices are USD under `cache`
    (default `CacheCostModel()`). The session is only read.

    Raises:
        UnknownTargetError: Unknown target (the error lists the valid ones).
    """
    view = chef.view
    return plan_report(
        view, get_adapter(target), view.config, servers=chef.registry.servers, cache=cache
    )


def plan_report(
    view: SessionView,
    adapter: Adapter,
    config: DeferredConfig,
    *,
    servers: tuple[str, ...] = (),
    cache: CacheCostModel | None = None,
) -> PlanReport:
    """Compute the space and cache figures of `view` for `adapter`'s target."""
    cache = cache or CacheCostModel()
    flat_by_name = {t.name: t for t in view.flat}
    full_text = _text(adapter, view.flat)
    resident_text = _text(adapter, view.resident)
    deferred_compiled = [flat_by_name[view.wire_names[t.key]] for t in view.deferred]
    tool_text = {t.name: _text(adapter, [t]) for t in deferred_compiled}
    per_tool = {name: len(text) for name, text in tool_text.items()}
    meta = [t for t in view.resident if t.name in view.meta_tools]
    largest = max(per_tool, key=lambda n: (per_tool[n], n), default="")
    full, resident = len(full_text), len(resident_text)
    full_tokens, resident_tokens = estimate_tokens(full_text), estimate_tokens(resident_text)
    saved = full - resident

    added_tokens = estimate_tokens(tool_text[largest]) if largest else 0
    loaded = run_tool_search({"tool_names": [largest]}, view.index, config).text if largest else ""
    history = cache.history_tokens

    def read(tools_tokens: int) -> float:  # a read of the prefix: tools + history
        return cache.rate(cache.cache_read, tools_tokens + history)

    def write(tools_tokens: int) -> float:
        return cache.rate(cache.cache_write, tools_tokens + history)

    return PlanReport(
        target=adapter.profile.target,
        tools_total=len(view.direct) + len(view.deferred),
        tools_direct=len(view.direct),
        tools_deferred=len(view.deferred),
        full_chars=full,
        full_tokens_est=full_tokens,
        resident_chars=resident,
        resident_tokens_est=resident_tokens,
        deferred_schema_chars=_size(adapter, deferred_compiled),
        meta_tools_chars=_size(adapter, meta),
        directory_chars=len(view.directory),
        directory_budget_chars=config.directory_chars,
        directory_budget_used=_ratio(len(view.directory), config.directory_chars),
        saved_chars_per_turn=saved,
        saved_tokens_est_per_turn=full_tokens - resident_tokens,
        saved_ratio=round(saved / full, 4) if full else 0.0,
        schema_to_name_ratio_all=_ratio(full, sum(len(t.name) for t in view.flat)),
        schema_to_name_ratio_deferred=_ratio(sum(per_tool.values()), sum(len(n) for n in per_tool)),
        schema_to_name_ratio_largest=_ratio(per_tool.get(largest, 0), len(largest)),
        largest_tool=largest,
        cache_added_tool_tokens_est=added_tokens,
        cache_naive_usd=round(_usd(full_tokens + history, write(full_tokens), cache), 5),
        cache_append_only_usd=round(
            _usd(full_tokens + history, read(full_tokens), cache)
            + _usd(added_tokens, write(full_tokens + added_tokens), cache),
            5,
        ),
        cache_meta_tool_usd=round(
            _usd(resident_tokens + history, read(resident_tokens), cache)
            + _usd(
                estimate_tokens(loaded), write(resident_tokens + estimate_tokens(loaded)), cache
            ),
            5,
        ),
        cache_steady_flat_usd=round(_usd(full_tokens + history, read(full_tokens), cache), 5),
        cache_steady_deferred_usd=round(
            _usd(resident_tokens + history, read(resident_tokens), cache), 5
        ),
        cache_model=cache,
        servers=servers,
        directory_warning=directory_overflow(view.directory, _loose(view), config),
    )


def _loose(view: SessionView) -> int:
    """Deferred tools the directory lists with no server (not runtime, not a skill's)."""
    return sum(
        t.server is None and t.source != "runtime" and view.wire_names[t.key] not in view.skill_of
        for t in view.deferred
    )
