"""plan figures: space accounting and the spec-002 prompt-cache cost model."""

from __future__ import annotations

import json

import pytest

from contextchef import CacheCostModel, ContextChef, estimate_tokens, load_demo_catalog, user
from contextchef.analysis import catalog_plan


@pytest.fixture
def chef() -> ContextChef:
    chef = ContextChef(default_defer=True)
    chef.set_history([user("hi")])  # compile needs a message
    chef.register_catalog(load_demo_catalog())
    return chef


def test_space_figures_add_up(chef: ContextChef) -> None:
    r = catalog_plan(chef, "anthropic")
    tools = chef.compile("anthropic").payload["tools"]
    resident = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
    assert r.resident_chars == len(resident)
    # net saving = deferred schemas removed - meta-tools added (array brackets/commas aside)
    assert abs(r.saved_chars_per_turn - (r.deferred_schema_chars - r.meta_tools_chars)) < 100
    assert r.directory_chars == len(chef.view.directory) <= r.directory_budget_chars
    assert r.directory_budget_used == round(r.directory_chars / r.directory_budget_chars, 2)
    names = sum(len(t.name) for t in chef.view.flat)
    assert r.schema_to_name_ratio_all == round(r.full_chars / names, 2)
    assert r.largest_tool == "issue-tracker__create_issue"
    assert r.schema_to_name_ratio_largest > r.schema_to_name_ratio_deferred > 1


def test_cache_cost_model_formulas(chef: ContextChef) -> None:
    model = CacheCostModel(
        history_tokens=50_000, price_per_mtok=2.0, cache_read=0.1, cache_write=1.25
    )
    r = catalog_plan(chef, "openai", cache=model)
    p = 2.0 / 1_000_000
    assert r.cache_naive_usd == round(1.25 * p * (r.full_tokens_est + 50_000), 5)
    assert r.cache_append_only_usd == round(
        0.1 * p * (r.full_tokens_est + 50_000) + 1.25 * p * r.cache_added_tool_tokens_est, 5
    )
    assert r.cache_steady_deferred_usd == round(0.1 * p * (r.resident_tokens_est + 50_000), 5)
    # the deferral path pays only the tool_search result at write price
    assert r.cache_steady_deferred_usd < r.cache_meta_tool_usd < r.cache_append_only_usd
    assert r.cache_append_only_usd < r.cache_naive_usd


def test_estimate_tokens_rule() -> None:
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("图片生成") == 4
    assert estimate_tokens("ab图") == 2  # ceil(2/4 + 1)
