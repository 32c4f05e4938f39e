"""`HistoryRules.bound_reasoning`: a repair in front of thinking drops that thinking.

On a prefix-check model a thinking block is checked against everything before it, so
what the normalizer repairs before a block voids it (research anthropic-preserved-thinking.md
R8, R9); removing the later thinking, a trailing run, is allowed (R11). Reasoning before
the first repaired part is kept, and results in another order than their calls are not a
repair on Anthropic (`HistoryRules.results_any_order`).
"""

from __future__ import annotations

from dataclasses import replace

from contextchef.history._messages import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.history._normalize import PORTABLE, normalize
from contextchef.providers import PRESETS, get_adapter
from contextchef.providers._model_rules import ModelRules, history_rules

ANTHROPIC = PRESETS["anthropic"]
BOUND = history_rules(ANTHROPIC, ModelRules(model="m", prefix_check=True))
KEEPS = get_adapter("anthropic").keeps


def _thinking(n: int) -> ReasoningPart:
    block = {"type": "thinking", "thinking": f"t{n}", "signature": f"sig_{n}"}
    return ReasoningPart(
        provider="anthropic",
        text=f"t{n}",
        provider_data={"provider": "anthropic", "block": block},
    )


def _call(cid: str) -> ToolCall:
    return ToolCall(id=cid, name="grep", arguments="{}")


def _result(cid: str) -> ToolResult:
    return ToolResult(call_id=cid, name="grep", content="r")


def _turns(second_results: tuple[ToolResult, ...], first_ids: tuple[str, str] = ("a", "b")):
    return [
        Message(role="user", parts=(TextPart(text="go"),)),
        Message(role="assistant", parts=(_thinking(1), *map(_call, first_ids))),
        Message(role="user", parts=tuple(_result(c) for c in first_ids)),
        Message(role="assistant", parts=(_thinking(2), _call("c"))),
        Message(role="user", parts=second_results),
    ]


def _kinds(done: object) -> list[str]:
    return [c.kind for c in done.changes]  # type: ignore[attr-defined]


def test_results_in_another_order_are_kept_as_given_on_anthropic_only() -> None:
    history = _turns((_result("c"),))
    history[2] = Message(role="user", parts=(_result("b"), _result("a")))
    done = normalize(history, profile=BOUND, keeps=KEEPS)
    assert done.changes == () and done.messages == tuple(history)
    assert "moved_result" in _kinds(normalize(history, profile=PORTABLE))


def test_a_repair_before_thinking_drops_it_and_every_later_one() -> None:
    history = _turns((_result("c"),))
    history[2] = Message(role="user", parts=(_result("a"), _result("b"), TextPart(text=" ")))
    done = normalize(history, profile=BOUND, keeps=KEEPS)
    assert _kinds(done) == ["dropped_foreign_part", "dropped_thinking"]
    assert done.changes[-1].index == 3
    assert done.messages[1] == history[1]  # the thinking before the repair stays
    assert done.messages[3].parts == (_call("c"),)
    assert normalize(done.messages, profile=BOUND, keeps=KEEPS).changes == ()
    # a model without the prefix check keeps it (only readability is checked there)
    kept = normalize(history, profile=ANTHROPIC, keeps=KEEPS)
    assert _kinds(kept) == ["dropped_foreign_part"] and kept.messages[3] == history[3]


def test_thinking_before_the_repaired_part_of_its_own_message_stays() -> None:
    """A reused call id is renamed after the thinking of its message: that thinking stays."""
    history = _turns((_result("a"),))
    history[3] = Message(role="assistant", parts=(_thinking(2), _call("a")))
    history += [
        Message(role="assistant", parts=(_thinking(3), TextPart(text="done"))),
        Message(role="user", parts=(TextPart(text="next"),)),
    ]
    done = normalize(history, profile=BOUND, keeps=KEEPS)
    assert "renamed_duplicate_call" in _kinds(done)
    assert done.messages[3].parts[0] == _thinking(2)
    dropped = [c.index for c in done.changes if c.kind == "dropped_thinking"]
    assert dropped == [5]
    assert not any(isinstance(p, ReasoningPart) for m in done.messages[4:] for p in m.parts)


def test_another_providers_reasoning_left_out_is_no_repair() -> None:
    """Never sent to Anthropic, so no thinking after it was produced after it."""
    foreign = ReasoningPart(provider="gemini", text="g", provider_data={"provider": "gemini"})
    history = _turns((_result("c"),))
    history[1] = replace(history[1], parts=(foreign, *history[1].parts))
    done = normalize(history, profile=BOUND, keeps=KEEPS)
    assert _kinds(done) == ["dropped_foreign_part"]
    assert done.messages[3] == history[3]
