"""Offline analysis of sessions and recorded conversations (analysis layer).

Above the session (it builds sessions; the session never imports it):

* `replay`: feed recorded conversations (`load_recording`: the shared transcript
  formats, stored provider requests or message lists, snapshots) through one session per
  disclosure strategy and measure every request in the prompt cache's order; the
  returned `ReplayReport`'s ``to_dict()`` is what ``contextchef replay --json`` prints.
  `plot_cumulative_cost` draws it (the ``plot`` extra); `CacheMeter` measures any
  sequence of compiled requests the same way.
* `prefix_break` / `payload_break`: where two requests stop sharing bytes, and why.
* `strategy_plan`: what each disclosure strategy costs per turn for one target and model
  (``contextchef plan --model``); `catalog_plan` (a `PlanReport` under a
  `CacheCostModel`): what a session's tool catalog costs per turn (``contextchef plan``).
"""

from contextchef.analysis._accounting import CacheCostModel, PlanReport, catalog_plan
from contextchef.analysis._diagnose import PrefixBreak, payload_break, prefix_break
from contextchef.analysis._plan import StrategyCost, StrategyPlan, strategy_plan
from contextchef.analysis._plot import plot_cumulative_cost
from contextchef.analysis._replay import (
    REPLAY_STRATEGIES,
    CacheMeter,
    ReplayPricing,
    ReplayReport,
    ReplayTurn,
    TurnFigures,
    replay,
)
from contextchef.analysis._transcripts import RecordedRequest, Recording, load_recording

__all__ = [
    "REPLAY_STRATEGIES",
    "CacheCostModel",
    "CacheMeter",
    "PlanReport",
    "PrefixBreak",
    "RecordedRequest",
    "Recording",
    "ReplayPricing",
    "ReplayReport",
    "ReplayTurn",
    "StrategyCost",
    "StrategyPlan",
    "TurnFigures",
    "catalog_plan",
    "load_recording",
    "payload_break",
    "plot_cumulative_cost",
    "prefix_break",
    "replay",
    "strategy_plan",
]
