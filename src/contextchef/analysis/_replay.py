"""Replay a recorded conversation through sessions: what each disclosure strategy costs.

`replay` feeds each request of a `Recording` (``contextchef.analysis._transcripts``) turn
by turn into one `ContextChef` per strategy and measures every compiled request in the
prompt cache's reading order (spec 002: system, then tools, then the conversation):

* ``input_chars``: characters of the request's canonical JSON in that order (the
  ``system`` segment, the ``tools`` segment, the conversation list; breakpoint markers
  left out); ``input_tokens_est``: `contextchef.estimate_tokens` of that text;
* ``shared_prefix_bytes``: UTF-8 bytes of that text the request shares with the
  previous request of the same strategy, measured by `prefix_break` (0 for the first);
* ``cache_read_tokens_est`` / ``cache_write_tokens_est``: the estimate of the shared
  text, and the rest (a request writes everything after the cached prefix, as with a
  breakpoint on its last block);
* ``uncached_tokens_est``: tokens neither read nor written (a prompt shorter than the
  model's minimum cacheable length);
* ``cost_usd``: `ReplayPricing.cost` of those, ``price * (cache_read * read +
  cache_write * write + uncached) / 1e6``, under the prices of the recording's target
  and model (`ReplayPricing.for_model`: write prices per lifetime, the minimum cacheable
  length, expiry over idle gaps where the recording has timestamps) unless `replay` is
  given others; `ReplayPricing()` is spec 002's (read 0.1x, write 1.25x, $3 per million).

Where a recording holds the provider's answer with its usage (``final_response``), the
request it answers carries that `CacheReport` (`ReplayTurn.actual`) and its cost under
the same prices, beside the estimate.

Strategies (`REPLAY_STRATEGIES`):

* ``flat``: every tool resident in every request;
* ``naive``: the tools array holds only the tools the recorded model has called so
  far; a call to a tool not in it adds the tool to the next request's array (so the
  ``tools`` segment, and everything after it, changes);
* ``client``: every tool deferred; before the recorded turn that first calls a tool,
  the session's own ``tool_search`` is called for it (by exact name) and its result
  appended, which reveals the tool;
* ``native``: the target's own deferral with our ``tool_search``
  (``anthropic-native-client``, ``openai-native-client``), revealed the same way; only
  where the target and model have it.

The recorded calls are kept as recorded (a client-deferral agent would call a found
tool through ``defer_execute``; the bytes differ by the wrapper only).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

from contextchef._errors import ContextChefError, UsageError
from contextchef._json import canonical_dumps
from contextchef.analysis._meter import CacheMeter, TurnFigures
from contextchef.analysis._pricing import ReplayPricing
from contextchef.analysis._transcripts import Recording, load_recording
from contextchef.deferred._meta import TOOL_SEARCH
from contextchef.history._messages import Message, TextPart, ToolCall, assistant, tool_results
from contextchef.providers import CacheReport, get_adapter
from contextchef.session._chef import ContextChef
from contextchef.session._request import CompiledRequest
from contextchef.session._strategies import STRATEGIES, Strategy
from contextchef.tools._tool import Tool

__all__ = [
    "REPLAY_STRATEGIES",
    "CacheMeter",
    "Prices",
    "ReplayPricing",
    "ReplayReport",
    "ReplayTurn",
    "TurnFigures",
    "replay",
]

Prices = ReplayPricing | Callable[[str, str], ReplayPricing]
"""What `replay` takes as ``pricing``: prices, or a function of ``(target, model)``."""

REPLAY_STRATEGIES = ("flat", "naive", "client", "native")
"""The strategies `replay` compares, in report order."""

_FIGURES = (
    "input_chars",
    "input_tokens_est",
    "shared_prefix_bytes",
    "cache_read_tokens_est",
    "cache_write_tokens_est",
    "uncached_tokens_est",
    "cost_usd",
)


@dataclass(frozen=True, kw_only=True)
class ReplayTurn:
    """One recorded request, measured under each strategy that ran."""

    transcript: str
    request: int
    """Index of the request in its recording."""
    messages: int
    """Messages of the recorded conversation in this request."""
    strategies: Mapping[str, TurnFigures]
    actual: CacheReport | None = None
    """What the provider reported for the recorded request (its usage), or None."""
    actual_cost_usd: float | None = None
    """`actual` priced like the estimates (`ReplayPricing.actual`), or None."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``actual``: the report's own, with ``cost_usd``; or null)."""
        actual = self.actual and {**self.actual.to_dict(), "cost_usd": self.actual_cost_usd}
        return {
            "transcript": self.transcript,
            "request": self.request,
            "messages": self.messages,
            "strategies": {k: v.to_dict() for k, v in self.strategies.items()},
            "actual": actual,
        }


@dataclass(frozen=True, kw_only=True)
class ReplayReport:
    """What `replay` measured: one `ReplayTurn` per request, the totals per strategy.

    Attributes:
        transcripts: Per recording: ``name``, ``format``, ``target``, ``model``,
            ``requests``, ``tools`` (the catalog size), ``hosted`` (provider-hosted tools
            left out), ``cut``, ``skipped`` (strategy -> why it did not run) and
            ``pricing`` (`ReplayPricing.to_dict` of its prices, ``source`` included),
            ``assumed`` (what the recording does not say and the replay assumed: a
            default model or target, stub definitions, tools named but not defined; each
            also logged as a warning on the ``contextchef`` logger).
        strategies: The strategies asked for, in order.
        pricing: The prices of the first recording (all of them, when `replay` was
            given one `ReplayPricing`).
        turns: Every request of every recording, in order.
    """

    transcripts: tuple[Mapping[str, Any], ...]
    strategies: tuple[str, ...]
    pricing: ReplayPricing
    turns: tuple[ReplayTurn, ...]
    totals: Mapping[str, Mapping[str, float]] = field(init=False)

    def __post_init__(self) -> None:
        totals: dict[str, dict[str, float]] = {}
        for name in self.strategies:
            rows = [t.strategies[name] for t in self.turns if name in t.strategies]
            if not rows:
                continue
            sums: dict[str, float] = {"requests": len(rows)}
            for key in _FIGURES:
                sums[key] = sum(getattr(r, key) for r in rows)
            read, total = sums["cache_read_tokens_est"], sums["input_tokens_est"]
            sums["cached_share"] = read / total if total else 0.0
            totals[name] = sums
        object.__setattr__(self, "totals", totals)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``transcripts``, ``strategies``, ``pricing``, ``turns``, ``totals``."""
        return {
            "transcripts": [dict(t) for t in self.transcripts],
            "strategies": list(self.strategies),
            "pricing": self.pricing.to_dict(),
            "turns": [t.to_dict() for t in self.turns],
            "totals": {k: dict(v) for k, v in self.totals.items()},
        }


def _native(recording: Recording, target: str, model: str) -> Strategy | str:
    """The provider-native strategy revealed through our tool_search, or why none fits."""
    adapter = get_adapter(target)
    rules = adapter.model_rules(model)
    if adapter.profile.native_tool_search is None:
        return f"target {target!r} has no tool deferral of its own"
    problems = []
    for strategy in STRATEGIES.values():
        if strategy.native != adapter.profile.native_tool_search:
            continue
        if not strategy.reveal_by_reference:
            continue
        problem = strategy.fits(adapter.profile, rules)
        if problem is None:
            return strategy
        problems.append(problem)
    if problems:
        return problems[0]
    return f"target {target!r} has no tool deferral that our tool_search reveals into"


class _Run:
    """One strategy over one recording: the session, what it revealed, the last request."""

    def __init__(
        self,
        name: str,
        strategy: str,
        tools: Sequence[Tool],
        system: str,
        *,
        grow: bool,
        pricing: ReplayPricing,
    ) -> None:
        self.name = name
        self.strategy = strategy
        self.grow = grow
        self.chef = ContextChef(default_defer=not grow and name != "flat", volatile_lint="off")
        self.by_name = {t.name: t for t in tools}
        if not grow:
            self.chef.register_tools(list(tools))
        if system:
            self.chef.set_system_prompt(system)
        self.revealed: set[str] = set()
        self.searches: dict[int, tuple[Message, ...]] = {}
        self.native = STRATEGIES[strategy].native
        self.meter = CacheMeter(pricing, native=self.native)

    def _called(self, message: Message) -> list[str]:
        names = [p.name for p in message.parts if isinstance(p, ToolCall)]
        return sorted({n for n in names if n in self.by_name and n not in self.revealed})

    def history(self, messages: Sequence[Message]) -> tuple[list[Message], list[str]]:
        """`messages` as this strategy sends them, and the tools revealed for it."""
        if self.name == "flat":
            return list(messages), []
        revealed: list[str] = []
        out: list[Message] = []
        for i, message in enumerate(messages):
            if message.role == "assistant" and i not in self.searches:
                found = self._called(message)
                if found:
                    revealed += found
                    self.revealed.update(found)
                    if self.grow:
                        self.chef.register_tools([self.by_name[n] for n in found])
                        self.searches[i] = ()
                    else:
                        self.searches[i] = self._search(i, found)
            out.extend(self.searches.get(i, ()))
            out.append(message)
        return out, sorted(revealed)

    def _search(self, index: int, names: Sequence[str]) -> tuple[Message, Message]:
        """A ``tool_search`` exchange that reveals `names`, answered by the session."""
        wires = [self.chef.wire_name(n) for n in names]
        call = ToolCall(
            id=f"replay_search_{index}",
            name=TOOL_SEARCH,
            arguments=canonical_dumps({"tool_names": wires}),
        )
        done = self.chef.execute(call)
        result = done.result
        if STRATEGIES.get(self.strategy, STRATEGIES["client"]).reveal_by_reference:
            result = dataclasses.replace(result, references=tuple(done.loaded or wires))
        return assistant(tool_calls=[call]), tool_results([result])

    def measure(
        self, request: CompiledRequest, revealed: Sequence[str], *, idle_seconds: float | None
    ) -> TurnFigures:
        expands = [self.chef.wire_name(n) for n in revealed] if self.native else []
        return self.meter.measure(
            request, revealed=revealed, expands=expands, idle_seconds=idle_seconds
        )


def _merged(recording: Recording, extra: Iterable[Tool]) -> list[Tool]:
    """The recording's tools, then `extra` tools whose names it does not use."""
    tools = list(recording.tools)
    names = {t.name for t in tools}
    for tool in extra:
        if tool.name not in names and (tool.server, tool.name) not in {
            (t.server, t.name) for t in tools
        }:
            tools.append(tool)
    return tools


def replay(
    recordings: Sequence[Recording | str | PathLike[str]],
    *,
    target: str | None = None,
    strategies: Sequence[str] = REPLAY_STRATEGIES,
    extra_tools: Sequence[Tool] = (),
    pricing: Prices | None = None,
    model: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> ReplayReport:
    """Replay `recordings` under each of `strategies` (see the module docstring).

    Args:
        recordings: Recorded conversations: `Recording` values (from `load_recording`)
            or paths of files `load_recording` reads.
        target: Compile for this target (default: each recording's own).
        strategies: Names from `REPLAY_STRATEGIES` (one named twice runs once, first
            place kept).
        extra_tools: Tools added to every recording's catalog (``--catalog`` files), so
            the catalog is realistic in size; a name the recording uses is not added.
        pricing: One `ReplayPricing` for every recording, or a function of ``(target,
            model)`` giving one per recording (default: `ReplayPricing.for_model` of
            each recording's target and first model, at $3 per million tokens; each
            recording's prices are in its ``transcripts`` entry, ``pricing``).
        model: Model for every request (default: the recorded one on the recording's
            own target, else the target's `Profile.default_model`).
        progress: Called with one line per recording and strategy.

    Returns:
        A `ReplayReport` (its `ReplayReport.to_dict` is what ``contextchef replay --json``
        prints for the same arguments); ``native`` is skipped, with the reason in ``transcripts``,
        where the target or model has no deferral of its own.

    Raises:
        UsageError: An unknown strategy, no recording, or a path that is not a readable
            recording.
        CorruptHistoryError: A recorded message the format's parser cannot read.
        UnknownTargetError: An unknown target.
        ContextChefError: A request the target cannot compile (the message names the
            recording and the request).
    """
    if isinstance(strategies, str):
        strategies = [strategies]
    strategies = list(dict.fromkeys(strategies))  # a strategy named twice runs once
    unknown = [s for s in strategies if s not in REPLAY_STRATEGIES]
    if unknown or not strategies:
        raise UsageError(
            f"unknown replay strategies {unknown}; valid: {', '.join(REPLAY_STRATEGIES)}"
        )
    if isinstance(recordings, (str, PathLike)):
        recordings = [recordings]
    if not recordings:
        raise UsageError("nothing to replay: pass at least one recording")
    loaded = [r if isinstance(r, Recording) else _load(r) for r in recordings]
    if pricing is not None and not isinstance(pricing, ReplayPricing) and not callable(pricing):
        raise UsageError(
            f"pricing must be a ReplayPricing or a function of (target, model), got "
            f"{type(pricing).__name__}"
        )
    quiet = logging.getLogger("contextchef")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # every break is in the figures, with its cause
    try:
        report = _replay_all(loaded, target, strategies, extra_tools, pricing, model, progress)
    finally:
        quiet.setLevel(level)
    for info in report.transcripts:  # never a silent default: what was assumed is said
        for note in info["assumed"]:
            quiet.warning("contextchef: replay %s: %s", info["name"], note)
    return report


def _load(path: object) -> Recording:
    """`load_recording(path)`, a `UsageError` for what is neither a path nor a `Recording`."""
    if not isinstance(path, (str, PathLike)):
        raise UsageError(
            f"expected a Recording or a path to a recorded conversation, got {type(path).__name__}"
        )
    try:
        return load_recording(path)
    except RecursionError as exc:
        raise UsageError(f"{path}: the recording is nested too deeply to read") from exc


def _replay_all(
    recordings: Sequence[Recording],
    target: str | None,
    strategies: Sequence[str],
    extra_tools: Sequence[Tool],
    pricing: Prices | None,
    model: str | None,
    progress: Callable[[str], None] | None,
) -> ReplayReport:
    infos: list[Mapping[str, Any]] = []
    turns: list[ReplayTurn] = []
    used: list[ReplayPricing] = []
    for recording in recordings:
        info, rows = _replay_one(
            recording,
            target=target or recording.target,
            strategies=strategies,
            extra_tools=extra_tools,
            pricing=pricing,
            model=model,
            progress=progress,
        )
        infos.append(info)
        turns.extend(rows)
        used.append(info["pricing"])
        info["pricing"] = info["pricing"].to_dict()
    return ReplayReport(
        transcripts=tuple(infos), strategies=tuple(strategies), pricing=used[0], turns=tuple(turns)
    )


def _prices(pricing: Prices | None, target: str, model: str) -> ReplayPricing:
    """The prices of one recording: `pricing` itself, its answer, or the model's own."""
    if pricing is None:
        return ReplayPricing.for_model(target, model)
    found = pricing if isinstance(pricing, ReplayPricing) else pricing(target, model)
    if not isinstance(found, ReplayPricing):
        raise UsageError(f"the pricing function returned {type(found).__name__}, not ReplayPricing")
    return found


def _replay_one(
    recording: Recording,
    *,
    target: str,
    strategies: Sequence[str],
    extra_tools: Sequence[Tool],
    pricing: Prices | None,
    model: str | None,
    progress: Callable[[str], None] | None,
) -> tuple[dict[str, Any], list[ReplayTurn]]:
    fallback = get_adapter(target).profile.default_model  # UnknownTargetError first
    own = target == recording.target
    first = model or (recording.requests[0].model if own else None) or fallback
    prices = _prices(pricing, target, first)
    assumed = [*recording.assumed, *_model_note(recording, target, model, fallback)]
    tools = _merged(recording, extra_tools)
    skipped: dict[str, str] = {}
    runs: list[_Run] = []
    for name in strategies:
        concrete = {"flat": "flat", "naive": "flat", "client": "client"}.get(name)
        if concrete is None:
            native = _native(recording, target, first)
            if isinstance(native, str):
                skipped[name] = native
                continue
            concrete = native.name
        runs.append(
            _Run(name, concrete, tools, recording.system, grow=name == "naive", pricing=prices)
        )
    per_request: list[dict[str, TurnFigures]] = [{} for _ in recording.requests]
    for run in runs:
        if progress is not None:
            progress(f"{recording.name}: {run.name} ({run.strategy}) on {target}")
        for i, recorded in enumerate(recording.requests):
            if not _sendable(recorded.messages):
                continue  # nothing sendable (an empty text): no request to measure
            use = model or (recorded.model if own else None) or fallback
            history, revealed = run.history(recorded.messages)
            try:
                run.chef.set_history(history)
                request = run.chef.compile(target, model=use, strategy=run.strategy)
            except ContextChefError as exc:
                if _plain_error(exc):
                    where = f"{recording.name}, request {i} ({run.name} on {target})"
                    raise type(exc)(f"{where}: {exc}") from exc
                raise
            idle = _idle(recording, i)
            per_request[i][run.name] = run.measure(request, revealed, idle_seconds=idle)
    info = {
        "name": recording.name,
        "format": recording.format,
        "target": target,
        "model": first,
        "requests": len(recording.requests),
        "tools": len(tools),
        "hosted": list(recording.hosted),
        "cut": recording.cut,
        "skipped": skipped,
        "empty_requests": [
            i for i, r in enumerate(recording.requests) if not _sendable(r.messages)
        ],
        "pricing": prices,
        "assumed": assumed,
    }
    rows = [
        ReplayTurn(
            transcript=recording.name,
            request=i,
            messages=len(recorded.messages),
            strategies=per_request[i],
            actual=recorded.usage,
            actual_cost_usd=None if recorded.usage is None else prices.actual(recorded.usage),
        )
        for i, recorded in enumerate(recording.requests)
    ]
    return info, rows


def _model_note(recording: Recording, target: str, model: str | None, fallback: str) -> list[str]:
    """The sentence for requests compiled and priced as `fallback`, the target's default."""
    if model is not None:
        return []
    own = target == recording.target
    unnamed = [i for i, r in enumerate(recording.requests) if not (own and r.model)]
    if not unnamed:
        return []
    why = "record no model" if own else f"name models of {recording.target!r}"
    some = "all" if len(unnamed) == len(recording.requests) else f"{len(unnamed)} of"
    return [
        f"{some} {len(recording.requests)} requests {why}: compiled and priced as "
        f"{fallback!r}, the default model of {target!r} (pass --model, replay(model=))"
    ]


def _idle(recording: Recording, index: int) -> float | None:
    """Seconds between request `index` and the one before, where both have a timestamp."""
    if index == 0:
        return None
    before, now = recording.requests[index - 1].at, recording.requests[index].at
    return None if before is None or now is None else max(0.0, now - before)


def _sendable(messages: Sequence[Message]) -> bool:
    """Some message has a part other than empty text."""
    return any(not (isinstance(p, TextPart) and not p.text) for m in messages for p in m.parts)


def _plain_error(exc: ContextChefError) -> bool:
    """The error class takes one message argument (so it can be re-raised with context)."""
    try:
        type(exc)("probe")
    except TypeError:
        return False
    return True
