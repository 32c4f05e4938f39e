"""``compile(betas=...)``: each beta is one token of the ``anthropic-beta`` header.

Regression (breakit1): values with whitespace, control characters or commas were passed
into the header, splitting one beta into several or breaking the header line.
"""

from __future__ import annotations

import pytest

from contextchef import ContextChef, UsageError, user


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.set_history([user("hi")])
    return chef


@pytest.mark.parametrize(
    "beta", ["a b", "a,b", "a\nb", "a\r\nX-Evil: 1", "tab\there", " lead", "café"]
)
def test_betas_with_whitespace_commas_or_control_chars_are_refused(beta: str) -> None:
    with pytest.raises(UsageError, match=r"is not a beta name: use printable ASCII") as raised:
        _chef().compile("anthropic", model="claude-sonnet-4-6", betas=[beta])
    assert repr(beta)[1:-1][:20] in str(raised.value)


def test_valid_betas_are_sent_sorted_in_one_header() -> None:
    request = _chef().compile(
        "anthropic", model="claude-sonnet-4-6", betas=["b-2025-02-02", "a-2025-01-01"]
    )
    assert request.headers == {"anthropic-beta": "a-2025-01-01,b-2025-02-02"}
