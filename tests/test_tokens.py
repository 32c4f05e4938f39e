"""`estimate_tokens` (break-it round 19, p7): emoji, flags, ZWJ sequences, marks.

The rule reads each character's UTF-8 length (`contextchef._tokens`); these tests pin it
against a per-character reference and the probe's figures. Its error against real BPE
vocabularies is measured in benchmarks/token_estimate.py, not here (no vocabulary is a
dependency).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextchef import ContextChef, UsageError, estimate_tokens, user


def reference(text: str) -> int:
    """The documented rule, one character at a time."""
    ascii_ = two = marks = three = astral = 0
    for ch in text:
        code = ord(ch)
        if code < 0x80:
            ascii_ += 1
        elif 0x300 <= code <= 0x37F:
            marks += 1
        elif code < 0x800:
            two += 1
        elif code < 0x10000:
            three += 1
        else:
            astral += 1
    return -(-ascii_ // 4) + -(-two // 2) + marks + three + 2 * astral


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("😀" * 4000, 8000),  # o200k 4,000, cl100k 8,000 (was 1,000)
        ("🇯🇵" * 2000, 8000),  # o200k 8,000, cl100k 12,000 (was 1,000)
        ("👨\u200d👩\u200d👧\u200d👦" * 1000, 11000),  # o200k 11,000, cl100k 18,000 (was 1,750)
        ("e\u0301" * 1000, 1250),  # both 2,000 (was 500)
        ("❤\ufe0f", 2),  # o200k 1, cl100k 3
        ("x" * 4001, 1001),  # ASCII: unchanged, a quarter token, rounded up
        ("你好世界", 4),  # CJK: unchanged, one each
        ("Привет", 3),  # two-byte scripts: half a token
        ("", 0),
        ("\ud800", 1),  # a lone surrogate is counted, not an error
    ],
)
def test_the_probe_figures(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_matches_the_per_character_rule(text: str) -> None:
    assert estimate_tokens(text) == reference(text)


@given(st.text(), st.text())
def test_never_less_than_a_token_per_emoji_and_monotone(a: str, b: str) -> None:
    assert estimate_tokens(a + b) >= max(estimate_tokens(a), estimate_tokens(b))
    emoji = sum(1 for ch in a if ord(ch) > 0xFFFF)
    assert estimate_tokens(a) >= 2 * emoji


def test_not_text_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="estimate_tokens takes text"):
        estimate_tokens(b"bytes")  # type: ignore[arg-type]


def test_context_usage_counts_emoji_before_the_provider_reports() -> None:
    """The estimate drives context_usage (and the compaction triggers) until usage comes."""
    plain, emoji = ContextChef(), ContextChef()
    plain.set_history([user("x" * 4000)])
    emoji.set_history([user("😀" * 4000)])
    a, b = plain.context_usage("anthropic"), emoji.context_usage("anthropic")
    assert a.source == b.source == "estimate"
    assert b.used - a.used == 8000 - 1000
