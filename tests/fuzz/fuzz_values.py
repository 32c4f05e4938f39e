"""Hypothesis strategies for hostile input: what hosts, models and stored histories send.

Values mix plain JSON with what JSON cannot carry (NaN, infinities, integers too long to
print, lone surrogates, runaway nesting, bytes, objects) and wrong Python types.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

HUGE_INT = 10**5000
SURROGATE = "\ud800"


def deep(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(levels):
        value = {"a": value} if i % 2 else [value]
    return value


class Opaque:
    """A value of no JSON type whose repr is fine."""

    def __repr__(self) -> str:
        return "Opaque()"


class Hostile:
    """A value whose every probe raises."""

    def __repr__(self) -> str:
        raise RuntimeError("repr")

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(name)


# built, not sampled: hypothesis prints the values it samples from, and these cannot be
UNPRINTABLE = st.one_of(
    st.builds(lambda: HUGE_INT),
    st.builds(lambda: -HUGE_INT),
    st.builds(lambda: deep(300)),
    st.builds(lambda: deep(1200)),
    st.builds(Hostile),
    st.builds(lambda: "x" * 100_000),
)
ODD_SCALARS = st.sampled_from(
    [
        math.nan,
        math.inf,
        -math.inf,
        2**63,
        1e308,
        SURROGATE,
        f"x{SURROGATE}y",
        "",
        " ",
        b"\xff\xfe",
        Opaque(),
        True,
        0,
        -1,
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    ODD_SCALARS,
)
JUNK = st.recursive(
    st.one_of(SCALARS, UNPRINTABLE),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(
            st.one_of(st.text(max_size=8), st.integers(), ODD_SCALARS, st.builds(lambda: HUGE_INT)),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
"""Anything at all."""

TEXTS = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["read_file", "tool_search", "defer_execute", "^read_*", "*", SURROGATE]),
)
ARGUMENT_TEXTS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            '{"path": NaN}',
            '{"path": Infinity}',
            '{"path": -Infinity}',
            '{"path": 1e999}',
            '{"path": ' + "9" * 5000 + "}",  # text: printable
            '{"path": "\\ud800"}',
            '{"\\udc00": 1}',
            "[" * 5000 + "]" * 5000,
            '{"a":' * 3000 + "1" + "}" * 3000,
            '{"path": "a"}',
            '{"path": "a"} trailing',
            "null",
            "[]",
            "",
        ]
    ),
)
ARGUMENTS = st.one_of(ARGUMENT_TEXTS, st.dictionaries(st.text(max_size=8), JUNK, max_size=3), JUNK)
"""Tool-call arguments as a model or an SDK might hand them over."""


class Raw:
    """A generated value behind a repr that never fails.

    Hypothesis prints every example it runs; a 5,000-digit integer, a 1,200-level nesting
    or a raising ``__repr__`` would break the printer, not the code under test. Tests take
    ``.value``.
    """

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        try:
            text = repr(self.value)
        except Exception:
            return f"Raw(<{type(self.value).__name__}>)"
        return f"Raw({text[:300]})"


def raw(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Raw]:
    """`strategy`'s values wrapped in `Raw`."""
    return strategy.map(Raw)
