"""A `ContextPolicy` compiled into each provider's context management, end to end.

`native_context` turns the policy into Anthropic ``context_management.edits`` and Responses
``context_management`` (research provider-context-management.md 2.1, 2.2, 2.5); the host
passes it to compile (``extra``, ``betas``). Sessions run through the official SDK clients
against the fakes, which apply the edits, compact and refuse what the APIs refuse: the
compaction block or item comes back exactly, is replayed byte-identical to its provider,
and is dropped (reported) for any other.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types.beta import BetaContextManagementConfigParam
from context_tools import OPUS, read_log
from openai.types.responses.response_create_params import ContextManagement

from contextchef import (
    ContextChef,
    ContextPolicy,
    UnknownTargetError,
    UsageError,
    native_context,
    user,
)
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeResponses,
    httpx_for,
    text,
    tool_calls,
)
from sdk_check import key_problems


def grep(pattern: str) -> str:
    """Search the code.

    Args:
        pattern: What to find.
    """
    return f"{pattern}: src/a.py:1"


def _chef() -> ContextChef:
    chef = ContextChef(max_inline_chars=None)  # results of realistic size, kept whole
    chef.register_tools([read_log, grep])
    chef.set_history([user("Find why the build fails.")])
    return chef


# -- the policy and its figures --------------------------------------------------------------


def test_policy_is_validated_and_normalized() -> None:
    policy = ContextPolicy(never_clear=["grep", "memory", "grep"])
    assert policy.never_clear == ("grep", "memory")
    with pytest.raises(UsageError, match="compact_at"):
        ContextPolicy(clear_at=0.9, compact_at=0.5)
    with pytest.raises(UsageError, match="budget_tokens"):
        ContextPolicy(budget_tokens=0)
    with pytest.raises(UsageError, match="clear_at"):
        ContextPolicy(clear_at=float("nan"))
    with pytest.raises(UsageError, match="policy must be a ContextPolicy"):
        native_context("anthropic", model=OPUS, policy={"budget_tokens": 1})  # type: ignore[arg-type]
    with pytest.raises(UnknownTargetError):
        native_context("nowhere", model=OPUS, policy=policy)


def test_anthropic_figures_come_from_the_model_window_and_cache_prices() -> None:
    native = native_context(
        "anthropic", model=OPUS, policy=ContextPolicy(never_clear=["grep"], keep_thinking_turns=2)
    )
    budget = native.budget
    assert (budget.window, budget.window_known, budget.output_reserve) == (200_000, True, 16_384)
    assert budget.budget == 183_616
    assert (budget.clear_trigger, budget.compact_trigger) == (91_808, 146_893)
    # C >= (1.25 - 0.1) * 91,808 / (0.1 * 10 + 1.15): a clearing pays back in 10 requests
    assert budget.clear_at_least == 49_107
    edits = native.extra["context_management"]["edits"]
    assert [e["type"] for e in edits] == [
        "clear_thinking_20251015",
        "clear_tool_uses_20250919",
        "compact_20260112",
    ]
    assert edits[1]["exclude_tools"] == ["grep"]
    assert edits[1]["clear_at_least"] == {"type": "input_tokens", "value": 49_107}
    assert native.betas == ("compact-2026-01-12", "context-management-2025-06-27")
    assert native.local == ()
    plain = json.loads(json.dumps(native.extra))
    assert key_problems(plain["context_management"], BetaContextManagementConfigParam) == []


def test_a_budget_past_the_window_is_lowered_and_an_absurd_one_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Break-it round 6: ``budget_tokens=300_000`` on a 200,000-token model sent a
    compaction trigger of 240,000, past the window, so nothing compacted before the
    provider refused the prompt; ``10**30`` went through float arithmetic into the wire.
    The budget is lowered to the window less the answer's reserve (with a warning), as
    the default would be; a budget past 10**9 tokens is refused by name."""
    wide = ContextPolicy(budget_tokens=300_000)
    with caplog.at_level("WARNING", logger="contextchef"):
        native = native_context("anthropic", model=OPUS, policy=wide)
    default = native_context("anthropic", model=OPUS, policy=ContextPolicy()).budget.budget
    assert native.budget.budget == 183_616 == default
    edits = native.extra["context_management"]["edits"]
    assert edits[-1]["trigger"] == {"type": "input_tokens", "value": 146_893}
    assert "300,000 is past the model's window of 200,000" in caplog.text
    unknown = native_context("anthropic", model="claude-new", policy=wide).budget
    assert unknown.budget == 300_000  # an unknown window is not held against the host
    for field in ("budget_tokens", "output_reserve"):
        with pytest.raises(UsageError, match=f"ContextPolicy.{field} must be .*<= 1,000,000,000"):
            ContextPolicy(**{field: 10**30})


@pytest.mark.parametrize(
    ("target", "model", "policy", "local", "window"),
    [
        ("anthropic", "claude-haiku-4-5", ContextPolicy(), ("compact",), 200_000),  # no threshold
        ("anthropic", OPUS, ContextPolicy(budget_tokens=40_000), ("compact",), 200_000),  # < 50k
        ("anthropic", "m", ContextPolicy(), ("clear", "compact"), 128_000),  # unknown model
        ("anthropic", OPUS, ContextPolicy(native=False), ("clear", "compact"), 200_000),
        ("responses", "gpt-5.6", ContextPolicy(), ("clear",), 400_000),
        ("responses", "o-mystery", ContextPolicy(), ("clear", "compact"), 128_000),
        ("openai", "gpt-5.6", ContextPolicy(), ("clear", "compact"), 400_000),
        ("gemini", "gemini-3-pro", ContextPolicy(), ("clear", "compact"), 128_000),
    ],
)
def test_what_the_model_lacks_is_left_to_the_local_path(
    target: str, model: str, policy: ContextPolicy, local: tuple[str, ...], window: int
) -> None:
    native = native_context(target, model=model, policy=policy)
    assert native.local == local
    assert native.budget.window == window
    if local == ("clear", "compact"):
        assert dict(native.extra) == {} and native.betas == ()


def test_responses_threshold_is_the_policy_compaction_point() -> None:
    native = native_context("responses", model="gpt-5.6", policy=ContextPolicy())
    (entry,) = native.extra["context_management"]
    assert entry == {"type": "compaction", "compact_threshold": 217_600}  # 0.8 x (400k - 128k)
    assert key_problems(dict(entry), ContextManagement) == []


# -- Anthropic, end to end -------------------------------------------------------------------


def _claude_session(policy: ContextPolicy, turns: int) -> tuple[ContextChef, FakeAnthropic, Any]:
    """`turns` requests of a read_log loop on Opus 5.5 under `policy`; the block returned."""
    native = native_context("anthropic", model=OPUS, policy=policy)
    assert native.local == ()
    fake = FakeAnthropic().script(
        *[tool_calls(("read_log", {"path": f"log{k}"}), reasoning="") for k in range(6)],
        *[text(f"answer {k}", reasoning="") for k in range(3)],
    )
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    chef = _chef()
    block: dict[str, Any] | None = None
    for k in range(turns):
        request = chef.compile("anthropic", model=OPUS, extra=native.extra, betas=native.betas)
        reply = client.beta.messages.create(**request.payload, extra_headers=request.headers)
        calls = chef.ingest(reply)
        if block is not None:  # sent again exactly as returned, first in its message
            sent = [b for m in request.payload["messages"] for b in m["content"]]
            assert sum(b.get("type") == "compaction" for b in sent if isinstance(b, dict)) == 1
            assert block in sent
        if reply.content[0].type == "compaction":
            block = reply.to_dict()["content"][0]
        if calls:
            chef.run_tools(calls)
        else:
            chef.append(user(f"and then {k}?"))
    client.close()
    assert fake.violations == ()
    assert max(v.input_tokens for v in fake.model_views) < native.budget.budget
    return chef, fake, block


def test_anthropic_session_clears_old_results_under_the_policy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    policy = ContextPolicy(budget_tokens=70_000, keep_tool_uses=1, payback_turns=20)
    with caplog.at_level("INFO", logger="contextchef"):
        chef, _, block = _claude_session(policy, turns=8)
    assert block is None  # clearing kept the view under the compaction trigger
    # what the policy asked the provider to do is logged, and not as a warning
    edits = [r for r in caplog.records if "cleared" in r.getMessage()]
    assert edits and {r.levelname for r in edits} == {"INFO"}
    cleared = [n for n in chef.notices if n.kind == "context_edit"]
    assert cleared and all(n.reason == "clear_tool_uses_20250919" for n in cleared)
    assert all(n.cleared_tokens and n.cleared_tokens >= 10_000 for n in cleared)
    # the host's history is whole: the edits are the provider's, on what the model sees
    assert sum(len(r.content) > 50_000 for r in _results(chef)) == 6


def _results(chef: ContextChef) -> list[Any]:
    return [r for m in chef.history for r in m.tool_results]


def test_anthropic_session_compacts_and_replays_the_block_exactly() -> None:
    policy = ContextPolicy(budget_tokens=70_000, never_clear=["read_log"])
    chef, fake, block = _claude_session(policy, turns=8)
    assert block is not None and block["signature"]
    assert [n.kind for n in chef.notices].count("compaction") == 1
    assert "context_edit" not in {n.kind for n in chef.notices}
    # the model saw the conversation from the block on (the prefix check too)
    assert fake.model_views[-1].messages[0]["content"][0] == block


# -- Responses, end to end, then another provider ------------------------------------------


def test_responses_compaction_item_survives_then_never_reaches_another_provider() -> None:
    policy = ContextPolicy(budget_tokens=20_000)
    native = native_context("responses", model="gpt-5.6", policy=policy)
    fake = FakeResponses().script(
        *[tool_calls(("read_log", {"path": f"log{k}"})) for k in range(3)],
        *[text(f"answer {k}") for k in range(3)],
    )
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    chef = _chef()
    item: dict[str, Any] | None = None
    for k in range(5):
        request = chef.compile("responses", model="gpt-5.6", extra=native.extra)
        if item is not None:
            assert item in request.payload["input"]  # replayed exactly
        reply = client.responses.create(**request.payload)
        calls = chef.ingest(reply)
        found = [o.to_dict() for o in reply.output if o.type == "compaction"]
        item = found[0] if found else item
        if calls:
            chef.run_tools(calls)
        else:
            chef.append(user(f"and then {k}?"))
    assert fake.violations == ()
    assert item is not None and [n.kind for n in chef.notices].count("compaction") >= 1
    # another provider: the item is never replayed there; a local summary stands for it
    gemini = FakeGemini().script(text("From Gemini."))
    request = chef.compile("gemini", model="gemini-3-pro")
    assert '"type": "compaction"' not in json.dumps(request.payload)
    assert "compacted by the responses API" in json.dumps(request.payload)
    from google import genai
    from google.genai import types

    http = types.HttpOptions(httpx_client=gemini.http_client(httpx_for(genai)))
    genai.Client(api_key="x", http_options=http).models.generate_content(**request.payload)
    assert gemini.violations == ()
    claude = native_context("anthropic", model=OPUS, policy=policy)
    request = chef.compile("anthropic", model=OPUS, extra=claude.extra, betas=claude.betas)
    assert "cmpenc_" not in json.dumps(request.payload)
    client.close()
