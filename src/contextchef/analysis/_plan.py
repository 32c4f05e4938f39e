"""What each disclosure strategy costs for one target and model (``contextchef plan``).

Every figure is measured on real compiles, never re-derived from the catalog: for each
strategy in `STRATEGIES` that fits the target and model (`Strategy.fits`), a fresh
session compiles one user turn with that strategy, the model then reveals one deferred
tool the strategy's own way, and the session compiles again.

* **Resident** (``resident_chars``, ``resident_tokens_est``): what the model sees at the
  start of every request from the ``tools`` segment of the first compile, as canonical
  JSON. Anthropic strips ``defer_loading`` entries from the prompt (its tool search tool
  and prompt caching docs), so only the other entries count; on Responses a deferred
  function shows its name and description and a ``namespace`` its own name and
  description (OpenAI's tool search guide); ``client`` and ``flat`` declare nothing
  deferred, so their whole array counts.
* **Reveal** (``reveal_cost_usd``): the input cost of one deferred tool becoming
  callable, with the existing `CacheCostModel` (``H`` cached history tokens, price ``p``
  per million, ``read`` / ``write`` multipliers) and the strategy's resident tokens
  ``T``::

      (1 + round_trips) * read * p * (T + H) + write * p * (appended + expanded)

  ``appended`` is what the second compile added to the conversation for the reveal
  (the model's ``tool_search`` call and its result, a tool-change system message, or
  the provider's server search blocks: canonical JSON of the new wire entries, the
  host's next message left out); ``expanded`` is the revealed tool's definition where
  the provider expands a reference into the context at that point (``tool_reference``
  results, ``tool_addition`` by reference); ``round_trips`` is 1 where the model must
  call our ``tool_search`` and wait for its result (a request the provider's own search
  saves), else 0. Hosted search on Responses loads the tool's whole ``namespace``, so
  its definitions are appended, not expanded. ``flat`` has no reveal (every definition
  is resident).

The revealed tool is the largest deferred one (`PlanReport.largest_tool`), as in the
module `contextchef.analysis._accounting`. Token figures are `estimate_tokens` estimates.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from contextchef._json import canonical_dumps
from contextchef._tokens import estimate_tokens
from contextchef.analysis._accounting import CacheCostModel
from contextchef.deferred._meta import TOOL_SEARCH
from contextchef.history._messages import ToolCall, assistant, tool_results, user
from contextchef.providers import ModelRules, get_adapter
from contextchef.session._request import CompiledRequest
from contextchef.session._strategies import AUTO, STRATEGIES, Strategy, resolve

if TYPE_CHECKING:
    from contextchef.session._chef import ContextChef

__all__ = ["StrategyCost", "StrategyPlan", "strategy_plan"]

_NEXT_TURN = "(the host's next message)"
"""The user turn after a server-side search; not counted as part of the reveal."""


@dataclass(frozen=True, kw_only=True)
class StrategyCost:
    """One strategy's row (see the module docstring); None where it does not apply.

    Attributes:
        name: The strategy.
        fits: It serves this target and model (`Strategy.fits`).
        native: The provider deferral it uses (`Strategy.native`), or None.
        summary: `Strategy.summary`.
        note: How the reveal is made and counted, or why the strategy does not fit.
        resident_chars: Characters the model sees at the start of every request.
        resident_tokens_est: Their estimated tokens (``T``).
        steady_usd: A request with nothing revealed: ``read * p * (T + H)``.
        reveal_appended_tokens_est: What the reveal appended to the conversation.
        reveal_expanded_tokens_est: The definition the provider expands at the reveal.
        reveal_round_trips: Extra requests the reveal costs (the model's search call).
        reveal_cost_usd: Input cost of one reveal (module docstring).
    """

    name: str
    fits: bool
    native: str | None
    summary: str
    note: str
    resident_chars: int | None = None
    resident_tokens_est: int | None = None
    steady_usd: float | None = None
    reveal_appended_tokens_est: int | None = None
    reveal_expanded_tokens_est: int | None = None
    reveal_round_trips: int | None = None
    reveal_cost_usd: float | None = None


@dataclass(frozen=True, kw_only=True)
class StrategyPlan:
    """Every strategy's costs for one target and model, and what ``auto`` picks.

    Attributes:
        target: The target.
        model: The model name (its `ModelRules` decide which strategies fit).
        model_known: The target's model table knows the name (``auto`` goes native
            only for known models).
        auto: The strategy ``auto`` picks.
        strategies: One row per strategy in `STRATEGIES`, those that do not fit too.
    """

    target: str
    model: str
    model_known: bool
    auto: str
    strategies: tuple[StrategyCost, ...]

    @property
    def fitting(self) -> tuple[StrategyCost, ...]:
        """The rows of the strategies that fit."""
        return tuple(s for s in self.strategies if s.fits)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (``contextchef plan --json``: ``model``, ``auto``, ``strategies``)."""
        out = asdict(self)
        out["strategies"] = [asdict(s) for s in self.strategies]
        return out


def _anthropic_search(search: str, entries: Sequence[Any], tool: str, model: str) -> Any:
    """A reply where Anthropic's server search (BM25 or regex) found `tool`."""
    name, key = {
        "bm25": ("tool_search_tool_bm25", "query"),
        "regex": ("tool_search_tool_regex", "pattern"),
    }[search]
    result = {
        "type": "tool_search_tool_search_result",
        "tool_references": [{"type": "tool_reference", "tool_name": tool}],
    }
    return {
        "id": "msg_plan",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_plan", "name": name, "input": {key: tool}},
            {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_plan", "content": result},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def _hosted_search(search: str, entries: Sequence[Any], tool: str, model: str) -> Any:
    """A Responses reply where hosted ``tool_search`` loaded `tool` (tool search guide).

    It loads the entry declaring the tool: its namespace, or the function itself.
    """
    entry = next(
        e
        for e in entries
        if isinstance(e, Mapping)
        and (e.get("name") == tool or any(f.get("name") == tool for f in e.get("tools", ())))
    )
    server = {"call_id": None, "execution": "server", "status": "completed"}
    return {
        "id": "resp_plan",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": [
            {
                "type": "tool_search_call",
                "id": "tsc_plan",
                **server,
                "arguments": {"paths": [entry["name"]]},
            },
            {"type": "tool_search_output", "id": "tso_plan", **server, "tools": [entry]},
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


_SERVER_SEARCH: dict[str, tuple[Callable[[str, Sequence[Any], str, str], Any], bool, str]] = {
    "bm25": (_anthropic_search, True, "server search blocks appended; definition expanded"),
    "regex": (_anthropic_search, True, "server search blocks appended; definition expanded"),
    "hosted": (
        _hosted_search,
        False,
        "hosted tool_search call and output appended (the tool's namespace, definitions included)",
    ),
}
"""By `Strategy.search`: the provider's reply revealing a tool, whether the provider then
expands a reference, and the row's note."""


def _entries(request: CompiledRequest, segment: str) -> list[Any]:
    loaded = json.loads(request.segments[segment] or "[]")
    return loaded if isinstance(loaded, list) else [loaded]


def _usd(tokens: float, multiplier: float, cache: CacheCostModel) -> float:
    return tokens * multiplier * cache.price_per_mtok / 1_000_000


def _definition(entries: Sequence[Any], tool: str) -> str:
    """Canonical JSON of `tool`'s top-level ``tools`` entry, without ``defer_loading``."""
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("name") == tool:
            return canonical_dumps({k: v for k, v in entry.items() if k != "defer_loading"})
    return ""


def _reveal(
    chef: ContextChef, strategy: Strategy, first: CompiledRequest, tool: str, rules: ModelRules
) -> tuple[str, int, str, str]:
    """Reveal `tool` the strategy's way: (appended JSON, round trips, expanded, note)."""
    model = rules.model
    tools = _entries(first, "tools")
    expands = strategy.reveal_by_reference or strategy.reveal_by_addition
    if strategy.search in _SERVER_SEARCH:
        reply, expands, note = _SERVER_SEARCH[strategy.search]
        chef.ingest(reply(strategy.search, tools, tool, model))
        chef.append(user(_NEXT_TURN))
        trips = 0
    else:
        call = ToolCall(
            id="toolu_plan", name=TOOL_SEARCH, arguments=json.dumps({"tool_names": [tool]})
        )
        chef.append(assistant("", [call]))
        chef.append(tool_results([chef.execute(call).result]))
        trips = 1
        if strategy.reveal_by_addition:
            note = "tool_search call, result and tool_addition system message appended"
        elif strategy.search == "client":
            note = "client tool_search_call and its tool_search_output appended"
        elif strategy.reveal_by_reference:
            note = "tool_search call and tool_reference result appended"
        else:
            note = "tool_search call and result (the schema as text) appended"
        note += "; definition expanded" if expands else ""
        note += "; +1 round trip"
    second = chef.compile(first.target, model=model, strategy=strategy.name)
    new = _entries(second, "messages")[len(_entries(first, "messages")) :]
    kept = [e for e in new if _NEXT_TURN not in canonical_dumps(e)]
    appended = "".join(canonical_dumps(e) for e in kept)
    return appended, trips, _definition(tools, tool) if expands else "", note


def _row(
    make: Callable[[], ContextChef],
    strategy: Strategy,
    *,
    target: str,
    model: str,
    tool: str,
    cache: CacheCostModel,
    system: str,
    task: str,
) -> StrategyCost:
    chef = make()
    chef.set_system_prompt(system)
    chef.set_history([user(task)])
    first = chef.compile(target, model=model, strategy=strategy.name)
    seen = get_adapter(target).profile.tools_at_start or list
    at_start = seen(_entries(first, "tools"))
    text = canonical_dumps(at_start) if at_start else ""
    resident = estimate_tokens(text)
    prefix = resident + cache.history_tokens  # below the model's minimum nothing is cached
    read = _usd(prefix, cache.rate(cache.cache_read, prefix), cache)
    row = StrategyCost(
        name=strategy.name,
        fits=True,
        native=strategy.native,
        summary=strategy.summary,
        note="",
        resident_chars=len(text),
        resident_tokens_est=resident,
        steady_usd=round(read, 5),
    )
    if strategy.all_loaded:
        return dataclasses.replace(row, note="n/a: every definition is resident")
    if not tool:
        return dataclasses.replace(row, note="n/a: nothing is deferred")
    rules = get_adapter(target).model_rules(model)
    appended, trips, expanded, note = _reveal(chef, strategy, first, tool, rules)
    added, defined = estimate_tokens(appended), estimate_tokens(expanded)
    written = cache.rate(cache.cache_write, prefix + added + defined)
    cost = (1 + trips) * read + _usd(added + defined, written, cache)
    return dataclasses.replace(
        row,
        note=note,
        reveal_appended_tokens_est=added,
        reveal_expanded_tokens_est=defined,
        reveal_round_trips=trips,
        reveal_cost_usd=round(cost, 5),
    )


def strategy_plan(
    make: Callable[[], ContextChef],
    target: str,
    model: str,
    *,
    tool: str,
    cache: CacheCostModel | None = None,
    system: str = "You are a careful agent.",
    task: str = "Which tools can you use?",
) -> StrategyPlan:
    """Measure every strategy that fits `target` and `model` (see the module docstring).

    Args:
        make: A new session with the catalog registered (one per strategy: each compiles
            a fresh conversation).
        target: One of `contextchef.TARGETS`.
        model: The model name; its rules decide which strategies fit and what ``auto``
            picks.
        tool: Wire name of the deferred tool to reveal ("" when nothing is deferred).
        cache: Prices (default `CacheCostModel()`); a prefix shorter than its
            ``min_cacheable_tokens`` (`CacheCostModel.for_model`: the model's minimum) is
            priced at the base rate, read or written (`CacheCostModel.rate`), as
            `catalog_plan` does.
        system: The system prompt of the measured conversation.
        task: Its first user message.

    Raises:
        UnknownTargetError: Unknown target.
    """
    cache = cache or CacheCostModel()
    adapter = get_adapter(target)
    rules = adapter.model_rules(model)
    declared = len(make().view.flat)  # past the target's deferral limit, native won't fit
    rows = []
    for strategy in STRATEGIES.values():
        problem = strategy.fits(adapter.profile, rules, declared=declared)
        if problem is not None:
            rows.append(
                StrategyCost(
                    name=strategy.name,
                    fits=False,
                    native=strategy.native,
                    summary=strategy.summary,
                    note=problem,
                )
            )
            continue
        rows.append(
            _row(
                make,
                strategy,
                target=target,
                model=model,
                tool=tool,
                cache=cache,
                system=system,
                task=task,
            )
        )
    return StrategyPlan(
        target=target,
        model=model,
        model_known=rules.known,
        auto=resolve(AUTO, adapter.profile, rules, declared=declared).name,
        strategies=tuple(rows),
    )
