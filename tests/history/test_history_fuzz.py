"""Property tests: normalize repairs any history, idempotently, for every target.

Histories come from two strategies: valid conversations (user turns, parallel batches,
tool loops, reasoning, media) and free-form corrupt ones (orphan results, missing results,
duplicate ids, results in the wrong place, interleaved text, blank text, empty messages,
reasoning in odd places, huge results). Examples per test: 200 under
``CONTEXTCHEF_FULL_TESTS=1``, 30 by default (tests/conftest.py); the benchmark runs 10,000
per target.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from contextchef._json import canonical_dumps
from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.history._normalize import PORTABLE, HistoryRules, check_pairing, normalize
from contextchef.providers import PRESETS, TARGETS, RequestOptions, get_adapter
from sdk_check import REQUEST_TYPES, sdk_problems

# failure reports of histories holding HUGE are long; that is fine
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

EXAMPLES = examples(full=200, default=30)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- parts ----------------------------------------------------------------------------------

TEXTS = st.sampled_from(["hi", "ok then", "", "  ", "\n\t", "日本語のテキスト", "see below:"])


HUGE = "0123456789abcdef\n" * 6000  # a huge result (~100k chars)
CONTENT = st.sampled_from(["ok", "", "line 1\nline 2\n", "error: not found", "done", HUGE])
NAMES = st.sampled_from(["read_file", "grep", "tool_search", "shell"])
ARGS = st.sampled_from(["{}", '{"path": "a"}', '{"q": ["x", "y"], "n": 2}'])
IMAGE = MediaPart(media_type="image/png", data="iVBORw0KGgo=")
MEDIA = st.sampled_from([(), (IMAGE,)])
SIGNED_BLANK = TextPart(text="", provider_data={"provider": "gemini", "thoughtSignature": "c2ln"})


def _reasoning(provider: str, text: str) -> ReasoningPart:
    shapes: dict[str, dict[str, Any] | None] = {
        "anthropic": {
            "provider": "anthropic",
            "block": {"type": "thinking", "thinking": text, "signature": "c2lnbmF0dXJl"},
        },
        "openai": {
            "provider": "responses",
            "item": {"type": "reasoning", "id": "rs_1", "summary": []},
        },
        "gemini": {"provider": "gemini", "part": {"text": text, "thought": True}},
        "deepseek": None,
    }
    data = shapes[provider]
    return ReasoningPart(provider=provider, text=text, provider_data=data)


REASONING = st.builds(
    _reasoning, st.sampled_from(["anthropic", "openai", "gemini", "deepseek"]), TEXTS
)
TEXT_PART = st.one_of(st.builds(TextPart, text=TEXTS), st.just(SIGNED_BLANK))


def _calls(ids: st.SearchStrategy[str]) -> st.SearchStrategy[ToolCall]:
    return st.builds(ToolCall, id=ids, name=NAMES, arguments=ARGS)


def _results(ids: st.SearchStrategy[str]) -> st.SearchStrategy[ToolResult]:
    return st.builds(
        ToolResult,
        call_id=ids,
        name=NAMES,
        content=CONTENT,
        is_error=st.booleans(),
        media=MEDIA,
    )


# -- corrupt histories: any parts in any order ----------------------------------------------

POOL = st.sampled_from([f"call_{i}" for i in range(6)])  # small: duplicates and orphans
ASSISTANT = st.builds(
    lambda parts: Message(role="assistant", parts=tuple(parts)),
    st.lists(st.one_of(TEXT_PART, REASONING, _calls(POOL)), max_size=5),
)
USER = st.builds(
    lambda parts: Message(role="user", parts=tuple(parts)),
    st.lists(st.one_of(TEXT_PART, st.just(IMAGE), _results(POOL)), max_size=4),
)
CORRUPT = st.lists(st.one_of(ASSISTANT, USER), max_size=12)


# -- valid histories: turns and tool loops --------------------------------------------------


@st.composite
def valid_history(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    n = 0
    for _ in range(draw(st.integers(1, 4))):
        out.append(Message(role="user", parts=(TextPart(text="question"),)))
        for _ in range(draw(st.integers(0, 3))):  # tool rounds of this turn's loop
            head = [draw(REASONING)] if draw(st.booleans()) else []
            ids = [f"v{n + i}" for i in range(draw(st.integers(1, 3)))]
            n += len(ids)
            calls = [ToolCall(id=i, name=draw(NAMES), arguments=draw(ARGS)) for i in ids]
            out.append(Message(role="assistant", parts=(*head, *calls)))
            results = [
                ToolResult(call_id=c.id, name=c.name, content=draw(CONTENT), media=draw(MEDIA))
                for c in calls
            ]
            out.append(Message(role="user", parts=tuple(results)))
        out.append(Message(role="assistant", parts=(TextPart(text="answer"),)))
    return out


HISTORIES = st.one_of(valid_history(), CORRUPT)

PAIRING_REPAIRS = {
    "synthesized_result",
    "dropped_orphan_result",
    "dropped_duplicate_result",
    "moved_result",
    "renamed_duplicate_call",
}

# -- properties -----------------------------------------------------------------------------


def _parts(history: Sequence[Message]) -> list[Part]:
    return [p for m in history for p in m.parts]


def _ends_turn_with_reasoning(history: Sequence[Message]) -> bool:
    """A run of assistant messages (one model turn on the Responses wire) ends in reasoning."""
    runs = itertools.groupby(history, key=lambda m: m.role)
    return any(r == "assistant" and isinstance([*m][-1].parts[-1], ReasoningPart) for r, m in runs)


def _assert_preserves_reasoning_and_provider_data(
    before: Sequence[Message], after: Sequence[Message], lone: bool = False
) -> None:
    """Reasoning is kept, in order; with `lone` (`HistoryRules.reasoning_needs_output`)
    reasoning no other part of its turn follows is left out (and no other)."""
    reasoning_in = [p for p in _parts(before) if isinstance(p, ReasoningPart)]
    reasoning_out = [p for p in _parts(after) if isinstance(p, ReasoningPart)]
    if lone:
        assert not _ends_turn_with_reasoning(after)
        kept = {id(p) for p in reasoning_out}
        reasoning_in = [p for p in reasoning_in if id(p) in kept]
    assert len(reasoning_in) == len(reasoning_out)
    assert all(
        a is b for a, b in zip(reasoning_in, reasoning_out, strict=True)
    )  # same values, same order
    originals = {id(p) for p in _parts(before)}
    for part in _parts(after):
        data = part.data if isinstance(part, ProviderPart) else part.provider_data
        assert data is None or id(part) in originals  # never rebuilt
    signed_in = [id(p) for p in _parts(before) if isinstance(p, TextPart) and p.provider_data]
    assert signed_in == [
        id(p) for p in _parts(after) if isinstance(p, TextPart) and p.provider_data
    ]


def _assert_shape(history: Sequence[Message], rules: HistoryRules, notes: int) -> None:
    assert all(m.parts for m in history)
    for part in _parts(history):
        assert not isinstance(part, TextPart) or part.text.strip() or part.provider_data
    if rules.alternate_roles:
        repeats = sum(a.role == b.role for a, b in itertools.pairwise(history))
        assert repeats == notes  # only where reasoning had to open its own message


@pytest.mark.parametrize("preset", sorted(PRESETS))
@FUZZ
@given(history=HISTORIES)
def test_normalize_repairs_idempotently_and_keeps_reasoning(
    preset: str, history: list[Message]
) -> None:
    rules = PRESETS[preset]
    out = normalize(history, profile=rules)
    assert check_pairing(out.messages) == []
    again = normalize(out.messages, profile=rules)
    assert again.changes == () and again.messages == out.messages
    lone = rules.reasoning_needs_output
    _assert_preserves_reasoning_and_provider_data(history, out.messages, lone)
    dropped = {c.index for c in out.changes if c.kind == "dropped_thinking"}
    if not lone or not dropped:
        _assert_preserves_reasoning_and_provider_data(history, out.messages)
    _assert_shape(out.messages, rules, len(out.notes))
    if check_pairing(history) == [] and all(m.parts for m in history):
        assert not [c for c in out.changes if c.kind in PAIRING_REPAIRS]


@pytest.mark.parametrize("target", TARGETS)
@FUZZ
@given(history=HISTORIES)
def test_normalized_history_compiles_for_every_target(target: str, history: list[Message]) -> None:
    messages = normalize(history, profile=PRESETS.get(target, PORTABLE)).messages
    payload = get_adapter(target).render_request(
        system="sys", tools=[], messages=messages, options=RequestOptions(model="m")
    )
    canonical_dumps(payload)  # plain JSON, no NaN
    if target in REQUEST_TYPES or target == "gemini":
        assert sdk_problems(target, payload) == []
